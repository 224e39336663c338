#!/usr/bin/env bash
# demo.sh - the main job for now: slipstreamd on the test bed answering a Linux
# peer, compared with a Linux kernel answering the same peer in the same run.
# Later issues replace ICMP echo with redis under `slipstream run`.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
scripts/setup.sh
exec /usr/bin/python3 bench/ping_compare.py "$@"
