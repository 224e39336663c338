#!/usr/bin/env bash
# demo.sh - the main job: redis-server unmodified under `slipstream run`
# against the same redis on the Linux stack, driven by the same
# redis-benchmark from a Linux peer in one run, with the ratios; then the
# TCP servers on the low-level API against Linux sockets (quick mode).
#   scripts/demo.sh            redis comparison + quick TCP comparison (~2 min)
#   scripts/demo.sh --full     redis comparison + the full TCP benchmark (~6 min)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
scripts/setup.sh
mode=--quick
if [ "${1:-}" = "--full" ]; then
	mode=
	shift
fi
/usr/bin/python3 bench/redis_compare.py
exec /usr/bin/python3 bench/tcp_compare.py $mode
