#!/usr/bin/env bash
# setup.sh - install every dependency from Debian 12 (apt-get) and build Slipstream.
# Idempotent: packages already present are not reinstalled, build dirs are reused.
#   build/      release-ish build (gcc, -O2 -g): slipstreamd (its fast path linked with
#               LTO, meson option fastpath_lto), unit tests
#   build-san/  clang + ASan + UBSan: unit tests and the libFuzzer harnesses
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: run as root (it installs packages and the test bed needs CAP_NET_ADMIN)" >&2
	exit 1
fi

PKGS=(
	# build
	build-essential meson ninja-build pkg-config clang libclang-rt-14-dev
	# DPDK 22.11 LTS and the AF_XDP / AF_PACKET PMDs' needs
	libdpdk-dev dpdk libbpf-dev libxdp-dev xdp-tools libnuma-dev
	# test bed and integration tests
	python3 python3-pytest python3-scapy iproute2 nftables ethtool iputils-ping
	tcpdump procps
	# bench/suite.py's figures (the suite writes JSON and markdown without it)
	python3-matplotlib
	# bench/insn_per_req.py: instructions per request (callgrind)
	valgrind
	# real programs run under `slipstream run` and their Linux clients
	redis-server redis-tools
	# tests/integration/test_posix_apps.py and bench/apps_compare.py
	memcached nginx-light haproxy iperf3 sockperf wrk apache2-utils curl
	# bench/workloads.py's HTTP/2 client (h2load)
	nghttp2-client
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# The tests start their own servers; the distribution's services are not needed.
for svc in redis-server memcached nginx haproxy; do
	if command -v systemctl >/dev/null && systemctl is-enabled --quiet "$svc" 2>/dev/null; then
		systemctl disable --now "$svc" >/dev/null 2>&1 ||
			systemctl disable "$svc" >/dev/null 2>&1 || true
	fi
	# Without systemd as init, the package scripts start them through init.d.
	if [ ! -d /run/systemd/system ] && [ -x "/etc/init.d/$svc" ]; then
		"/etc/init.d/$svc" stop >/dev/null 2>&1 || true
	fi
done

configure() { # dir, then meson options; reconfigure if the dir exists
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@"
	fi
}

configure build
ninja -C build

CC=clang configure build-san -Db_sanitize=address,undefined -Db_lundef=false \
	-Dfuzzing=true -Dservice=disabled
ninja -C build-san

ln -sf "$PWD/tools/slipstream" /usr/local/bin/slipstream
echo "setup.sh: built build/src/service/slipstreamd; 'slipstream' is on PATH"
