#!/usr/bin/env bash
# test.sh - all tests: unit tests (plain and under ASan+UBSan), the libFuzzer
# harnesses (bounded time, ASan), and the integration tests on the test bed
# (as root, with both the AF_XDP and the AF_PACKET PMD).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

echo "== tree checks (committed results, references) =="
scripts/check_tree.sh

scripts/setup.sh

echo "== unit tests and fuzzers (clang, ASan + UBSan) =="
meson test -C build-san --suite unit --suite fuzz --print-errorlogs

echo "== unit tests (gcc) =="
meson test -C build --suite unit --print-errorlogs

echo "== integration tests (AF_XDP PMD) =="
SLIPSTREAM_BUILD="$PWD/build" SLIPSTREAM_PMD=af_xdp \
	/usr/bin/python3 -m pytest -v tests/integration

echo "== integration tests of the service (AF_PACKET PMD) =="
SLIPSTREAM_BUILD="$PWD/build" SLIPSTREAM_PMD=af_packet \
	/usr/bin/python3 -m pytest -v tests/integration -k "service_basic or malformed"

echo "test.sh: all tests passed"
