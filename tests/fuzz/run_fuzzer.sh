#!/bin/sh
# Run one libFuzzer harness for a fixed time without touching the source tree.
# Usage: run_fuzzer.sh FUZZER WORK_DIR SEED_DIR SECONDS
# New inputs go to WORK_DIR/corpus (the first corpus dir is the one libFuzzer
# writes to); the seed dir is only read.  Crash inputs land in WORK_DIR too.
set -eu
fuzzer=$1
work=$2
seeds=$3
seconds=$4
mkdir -p "$work/corpus"
exec "$fuzzer" \
	-max_total_time="$seconds" \
	-rss_limit_mb=2048 \
	-timeout=10 \
	-print_final_stats=1 \
	-artifact_prefix="$work/" \
	"$work/corpus" "$seeds"
