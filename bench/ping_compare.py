#!/usr/bin/python3
"""ping_compare.py - the service answering a Linux peer, against Linux itself, in one run.

Test bed: a switch namespace joins the service (198.18.0.1, DPDK PMD on its
veth), peer1 (198.18.0.2, the Linux client) and peer2 (198.18.0.3, a Linux
kernel answering for comparison). From peer1, for each target:
  * latency: N echo requests at a fixed interval (ping -i), RTT min/avg/max/mdev;
  * ping-pong rate: a flood ping (ping -f, one request in flight), requests/s;
  * CPU busy (all CPUs, from /proc/stat) during the flood.
Prints a table with Slipstream/Linux ratios; --json FILE writes the numbers.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from slipstream_tools import ctl, testbed  # noqa: E402

SERVICE_BIN = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build") / "src/service/slipstreamd"
LINUX_IP = "198.18.0.3"


def cpu_busy():
    """(busy, total) jiffies over all CPUs."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def ping(tb, ns, target, args, timeout):
    r = tb.ns_exec(ns, ["ping", "-q", "-W", "1"] + args + [target], timeout=timeout)
    out = r.stdout
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    if not m:
        raise RuntimeError("ping %s failed: %s %s" % (target, out, r.stderr))
    res = {"sent": int(m.group(1)), "received": int(m.group(2))}
    m = re.search(r"time (\d+)ms", out)
    res["time_ms"] = int(m.group(1)) if m else None
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", out)
    if m:
        res.update(rtt_min_us=float(m.group(1)) * 1000, rtt_avg_us=float(m.group(2)) * 1000,
                   rtt_max_us=float(m.group(3)) * 1000, rtt_mdev_us=float(m.group(4)) * 1000)
    return res


def measure(tb, ns, target, count, flood):
    ping(tb, ns, target, ["-c", "3", "-i", "0.05"], 30)  # ARP + warm-up
    lat = ping(tb, ns, target, ["-c", str(count), "-i", "0.002"], 120)
    b0, t0 = cpu_busy()
    w0 = time.monotonic()
    fl = ping(tb, ns, target, ["-f", "-c", str(flood)], 120)
    wall = time.monotonic() - w0
    b1, t1 = cpu_busy()
    ncpu = os.cpu_count() or 1
    return {
        "latency": lat,
        "flood": fl,
        "flood_rate_per_s": fl["received"] / wall,
        "flood_cpu_busy_cores": (b1 - b0) / max(1, t1 - t0) * ncpu,
    }


def start_service(tb, pmd, ctl_path):
    log = open("/tmp/slipstream-demo-%s.log" % tb.prefix, "w")
    argv = [str(SERVICE_BIN), "--ip", tb.service_cidr, "--gateway", tb.gateway,
            "--ctl", ctl_path, "--"] + tb.dpdk_args(pmd) + ["-l", "0"]
    p = tb.ns_popen(tb.svc_ns, argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError("slipstreamd exited (%s); see %s" % (p.returncode, log.name))
        try:
            ctl.ctl_query("stats", ctl_path)
            return p
        except Exception:
            time.sleep(0.2)
    p.kill()
    raise RuntimeError("slipstreamd not ready after 30 s; see %s" % log.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pmd", default="af_xdp", choices=["af_xdp", "af_packet"])
    ap.add_argument("--count", type=int, default=500, help="latency pings per target")
    ap.add_argument("--flood", type=int, default=20000, help="flood pings per target")
    ap.add_argument("--prefix", default="ssdemo")
    ap.add_argument("--json", help="write results to this file")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ping_compare.py: run as root (namespaces)")
    if not SERVICE_BIN.exists():
        sys.exit("ping_compare.py: %s missing; run scripts/setup.sh" % SERVICE_BIN)

    tb = testbed.Testbed(prefix=a.prefix, peers=2, switch=True)
    ctl_path = "/run/slipstream/%s.sock" % a.prefix
    svc = None
    try:
        tb.up()
        p2 = tb.peer(2)
        assert p2.ip == LINUX_IP, p2
        client = tb.peer(1).ns
        svc = start_service(tb, a.pmd, ctl_path)
        res = {
            "pmd": a.pmd,
            "slipstream": measure(tb, client, tb.service_ip, a.count, a.flood),
            "linux": measure(tb, client, LINUX_IP, a.count, a.flood),
        }
        stats = ctl.ctl_query("stats", ctl_path)
        res["service_counters"] = {k: v for k, v in stats["counters"].items() if v}
    finally:
        if svc is not None:
            svc.terminate()
            try:
                svc.wait(10)
            except subprocess.TimeoutExpired:
                svc.kill()
                svc.wait()
        tb.down()

    s, l = res["slipstream"], res["linux"]
    rows = [
        ("ping RTT avg (us)", s["latency"]["rtt_avg_us"], l["latency"]["rtt_avg_us"]),
        ("ping RTT max (us)", s["latency"]["rtt_max_us"], l["latency"]["rtt_max_us"]),
        ("ping-pong rate (req/s)", s["flood_rate_per_s"], l["flood_rate_per_s"]),
        ("CPU busy during flood (cores)", s["flood_cpu_busy_cores"], l["flood_cpu_busy_cores"]),
    ]
    print("\nSlipstream (%s PMD) vs Linux, answering ICMP echo from a Linux peer"
          % a.pmd)
    print("%-32s %12s %12s %8s" % ("", "Slipstream", "Linux", "ratio"))
    for name, sv, lv in rows:
        print("%-32s %12.1f %12.1f %8.2f" % (name, sv, lv, sv / lv if lv else float("nan")))
    lost = (s["latency"]["sent"] - s["latency"]["received"]) + \
           (s["flood"]["sent"] - s["flood"]["received"])
    print("replies lost by Slipstream: %d; service counters: %s"
          % (lost, json.dumps(res["service_counters"])))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
