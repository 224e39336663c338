#!/usr/bin/env bash
# demo.sh - the main job for now: servers on slipstreamd (TCP echo and bulk
# on the low-level API, then ICMP echo) against the same service from a Linux
# kernel, driven by the same Linux client in the same run, with the ratios.
# The POSIX issue replaces this with redis under `slipstream run`.
#   scripts/demo.sh            quick TCP comparison (~30 s) + ICMP comparison
#   scripts/demo.sh --full     the full TCP benchmark (~5 min, median of 3)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
scripts/setup.sh
mode=--quick
if [ "${1:-}" = "--full" ]; then
	mode=
	shift
fi
/usr/bin/python3 bench/tcp_compare.py $mode
exec /usr/bin/python3 bench/ping_compare.py --count 200 --flood 10000
