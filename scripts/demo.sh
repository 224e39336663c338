#!/usr/bin/env bash
# demo.sh - the main job: unmodified programs (redis, memcached, nginx,
# iperf3, sockperf, a mixed-size request/response server) under
# `slipstream run` against the same programs on the Linux stack, driven by
# the same standard clients from a Linux peer on one plain bed in one run,
# the service with its defaults and Linux in its better layout (unpinned or
# pinned), with the ratios and CPU per request (bench/workloads.py).
#   scripts/demo.sh            quick run (~3 min)
#   scripts/demo.sh --full     full run (~15 min)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
scripts/setup.sh
mode=--quick
if [ "${1:-}" = "--full" ]; then
	mode=
	shift
fi
exec /usr/bin/python3 bench/workloads.py $mode "$@"
