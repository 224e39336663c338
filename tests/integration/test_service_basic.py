"""slipstreamd against a Linux peer: ARP both ways, ICMP echo (counted and
byte-exact), the control socket through the real CLI, clean stop on signals."""

import json
import os
import random
import re
import signal
import time

import pytest

import frames as fr
from harness import COUNTERS, cli_run, counters_wait, ping
from harness import testbed as tbmod


def peer_neigh(tb, peer, ip):
    """(lladdr, state) of ip in the peer's neighbour table, or (None, None)."""
    res = tb.ns_exec(peer.ns, ["ip", "-j", "neigh", "show", "dev", peer.iface, "to", ip])
    for e in json.loads(res.stdout or "[]"):
        if e.get("dst") == ip:
            return e.get("lladdr"), ",".join(e.get("state", []))
    return None, None


def arp_entry_wait(service, ip, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        entries = service.arp()
        for e in entries:
            if e.get("ip") == ip:
                return e, entries
        if time.monotonic() >= deadline:
            return None, entries
        time.sleep(0.2)


def test_stats_reports_every_counter(service):
    counters = service.stats()
    missing = [c for c in COUNTERS if c not in counters]
    assert not missing, "counters missing from stats: %s" % missing
    bad = {k: v for k, v in counters.items() if not isinstance(v, int) or v < 0}
    assert not bad, "non-uint64 counters: %s" % bad


def test_service_info(service, testbed):
    info = service.info()
    assert info["pid"] == service.pid
    assert info["ip"] == testbed.service_cidr and info["gateway"] == testbed.gateway
    assert re.match(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$", info["mac"]), info
    port = info["port"]
    expect_driver = {"af_xdp": "net_af_xdp", "af_packet": "net_af_packet"}[service.pmd]
    assert port["driver"] == expect_driver, port
    assert port["rx_queues"] == 1 and port["tx_queues"] == 1, port
    assert port["kind"] == service.pmd and port["link_up"] is True, port
    assert info["idle_wait"] == "socket-poll", info
    # --shm-huge auto (the default): the host's shmem THP mode, reported as
    # found and left as it is; the regions on huge pages exactly where it
    # allows them (test_shm_huge.py).
    knob = open("/sys/kernel/mm/transparent_hugepage/shmem_enabled").read()
    mode = re.search(r"\[(\w+)\]", knob).group(1)
    assert info["shmem_thp"] == mode, (info, knob)
    assert info["shm_huge"] is (mode in ("always", "within_size", "advise", "force")), info
    assert info["shm_populate_errors"] == 0, info
    for key in ("id", "name", "mtu", "rss", "reta_size", "rx_csum_offload",
                "tx_csum_offload", "tso", "max_rx_queues"):
        assert key in port, key


def test_af_xdp_fill_ring(service):
    """AF_XDP: the kernel is lent the whole 4096-slot fill ring (the PMD
    alone puts 2048 there, and 2048 frames of backlog overflowed under 100
    bulk flows: xsk_fill_ring_empty), every mbuf inside the UMEM."""
    if service.pmd != "af_xdp":
        pytest.skip("AF_XDP only")
    nic = service.query("stats")["nic"]
    assert nic["xsk_fill_buffers"] == 4096, nic
    assert nic["xsk_umem_outside_mbufs"] == 0, nic
    assert nic["xsk_fill_ring_empty"] == 0 and nic["xsk_rx_ring_full"] == 0, nic


def test_gateway_resolved_at_start(service, testbed):
    """At start the service ARPs for its gateway (peer1) and caches the reply."""
    entry, entries = arp_entry_wait(service, testbed.gateway)
    assert entry is not None, "gateway not in ARP cache: %s" % entries
    assert entry["mac"].lower() == testbed.peer(1).mac.lower(), entries
    assert entry.get("state"), entry
    c = service.stats()
    assert c["tx_arp_request"] >= 1 and c["rx_arp_reply"] >= 1, c


def test_peer_resolves_service_mac(service, testbed):
    peer = testbed.peer(1)
    testbed.ns_exec(peer.ns, ["ip", "neigh", "flush", "dev", peer.iface])
    before = service.stats()
    tx, rx, out = ping(testbed, peer.ns, testbed.service_ip, 1, wait=2)
    assert rx == 1, out
    mac, state = peer_neigh(testbed, peer, testbed.service_ip)
    assert mac is not None and mac.lower() == service.info()["mac"].lower(), (mac, state)
    assert state in ("REACHABLE", "STALE", "DELAY", "PROBE"), state
    delta = counters_wait(service, before, {"rx_arp_request": 1, "tx_arp_reply": 1})
    assert delta.get("rx_arp_request", 0) >= 1 and delta.get("tx_arp_reply", 0) >= 1, delta


def test_ping_20(service, testbed):
    peer = testbed.peer(1)
    ping(testbed, peer.ns, testbed.service_ip, 1, wait=2)      # ARP out of the way
    before = service.stats()
    res = testbed.ns_exec(peer.ns, ["ping", "-n", "-c", "20", "-i", "0.05", "-W", "1",
                                    testbed.service_ip], timeout=60)
    assert "20 packets transmitted, 20 received" in res.stdout, res.stdout + res.stderr
    delta = counters_wait(service, before, {"rx_icmp_echo_request": 20,
                                            "tx_icmp_echo_reply": 20})
    assert delta.get("rx_icmp_echo_request") == 20, delta
    assert delta.get("tx_icmp_echo_reply") == 20, delta
    drops = {k: v for k, v in delta.items() if k.startswith("drop_")}
    assert not drops, drops


def test_echo_reply_byte_exact(service, testbed, agent):
    peer = testbed.peer(1)
    svc_mac = service.info()["mac"]
    rnd = random.Random(os.getpid())
    ident, seq = rnd.randrange(1, 0xFFFF), rnd.randrange(0, 0xFFFF)
    payload = bytes(rnd.randrange(256) for _ in range(200))
    req = fr.eth(svc_mac, peer.mac, fr.ETH_IPV4,
                 fr.ipv4(peer.ip, testbed.service_ip, fr.PROTO_ICMP,
                         fr.icmp(8, 0, ident, seq, payload), ident=rnd.randrange(65536)))
    # scapy agrees that the request is well formed
    parsed = fr.frame_parse(req)
    assert parsed["ICMP"].type == 8 and bytes(parsed["Raw"].load) == payload
    before = service.stats()
    replies = agent.xchg(req, {"ip_src": testbed.service_ip, "ip_proto": fr.PROTO_ICMP},
                         timeout=1.5)
    assert len(replies) == 1, "expected one echo reply, got %d" % len(replies)
    raw = replies[0]
    p = fr.frame_parse(raw)
    assert p.dst.lower() == peer.mac.lower() and p.src.lower() == svc_mac.lower()
    ip, icmp = p["IP"], p["ICMP"]
    assert (ip.src, ip.dst) == (testbed.service_ip, peer.ip)
    assert ip.ttl > 0 and ip.ihl == 5 and ip.len == 20 + 8 + 200
    assert (icmp.type, icmp.code, icmp.id, icmp.seq) == (0, 0, ident, seq)
    assert bytes(icmp.payload) == payload
    assert len(raw) - 14 >= ip.len
    ip_ok, icmp_ok = fr.checksums_valid(raw)
    assert ip_ok and icmp_ok, "bad checksum in reply: %s" % raw.hex()
    delta = counters_wait(service, before, {"tx_icmp_echo_reply": 1})
    assert delta.get("rx_icmp_echo_request") == 1 and delta.get("tx_icmp_echo_reply") == 1


def test_arp_request_from_scapy_gets_reply(service, testbed, agent):
    """A broadcast ARP request for the service's IP is answered (and counted)."""
    peer = testbed.peer(1)
    svc_mac = service.info()["mac"]
    req = fr.eth(fr.BROADCAST, peer.mac, fr.ETH_ARP,
                 fr.arp(1, peer.mac, peer.ip, "00:00:00:00:00:00", testbed.service_ip))
    before = service.stats()
    replies = agent.xchg(req, {"ethertype": fr.ETH_ARP}, timeout=1.5)
    assert len(replies) == 1, replies
    a = fr.frame_parse(replies[0])["ARP"]
    assert a.op == 2 and a.psrc == testbed.service_ip and a.hwsrc.lower() == svc_mac.lower()
    assert a.pdst == peer.ip and a.hwdst.lower() == peer.mac.lower()
    delta = counters_wait(service, before, {"tx_arp_reply": 1})
    assert delta.get("rx_arp_request") == 1 and delta.get("tx_arp_reply") == 1, delta


def test_cli_stats_and_json(service):
    res = cli_run("stats", "--ctl", service.ctl_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("slipstreamd "), res.stdout[:200]
    assert "pid %d" % service.pid in res.stdout.splitlines()[0]
    for name in COUNTERS:
        assert re.search(r"^  %s +\d+$" % name, res.stdout, re.M), name
    res = cli_run("stats", "--json", "--ctl", service.ctl_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(COUNTERS) <= set(doc["counters"]) and doc["service"]["pid"] == service.pid


def test_cli_arp(service, testbed):
    res = cli_run("arp", "--ctl", service.ctl_path)
    assert res.returncode == 0, res.stderr
    assert testbed.gateway in res.stdout and testbed.peer(1).mac.lower() in res.stdout.lower()
    res = cli_run("arp", "--json", "--ctl", service.ctl_path)
    assert any(e["ip"] == testbed.gateway for e in json.loads(res.stdout)["entries"])


def test_unknown_command(service):
    from harness import ctl
    with pytest.raises(ctl.ServiceError, match="unknown command: bogus"):
        ctl.ctl_query("bogus", service.ctl_path)


def test_service_still_alive(service):
    assert service.alive()


# ---- stopping (fresh services in their own test bed) --------------------

@pytest.fixture(scope="module")
def stop_testbed(prefix_new_fn):
    tb = tbmod.Testbed(prefix_new_fn()).up()
    yield tb
    tb.down()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly(stop_testbed, service_factory, sig):
    svc = service_factory.start(stop_testbed)
    assert os.path.exists(svc.ctl_path)
    rc, secs = svc.stop(sig, timeout=10)
    assert rc == 0, "exit status %s after %s\n%s" % (rc, sig.name, svc.logs())
    assert secs < 10
    assert not os.path.exists(svc.ctl_path), "control socket left behind"
    if svc.pmd == "af_xdp":
        assert tbmod.link_xdp(stop_testbed.svc_ns, stop_testbed.svc_iface) is None, \
            "XDP program left attached to %s after %s" % (stop_testbed.svc_iface, sig.name)
    res = cli_run("stats", "--ctl", svc.ctl_path)
    assert res.returncode == 1 and "not running" in res.stderr


def test_restart_after_sigkill(stop_testbed, service_factory):
    """A SIGKILLed service leaves its socket file and maybe its XDP program;
    the next one in the same test bed still starts and answers ping."""
    svc = service_factory.start(stop_testbed)
    svc.proc.kill()
    svc.proc.wait(10)
    svc2 = service_factory.start(stop_testbed)
    tx, rx, out = ping(stop_testbed, stop_testbed.peer(1).ns, stop_testbed.service_ip, 3,
                       interval=0.1, wait=2)
    assert rx == 3, out
    assert svc2.alive()


def pings_20ms_apart(testbed, service_factory, args):
    """A service started with args answers 30 pings 20 ms apart (after one
    for ARP); its counters after them."""
    svc = service_factory.start(testbed, extra_args=args)
    ns, ip = testbed.peer(1).ns, testbed.service_ip
    tx, rx, out = ping(testbed, ns, ip, 1, wait=2)       # ARP out of the way
    assert rx == 1, out
    tx, rx, out = ping(testbed, ns, ip, 30, interval=0.02, wait=2)
    assert (tx, rx) == (30, 30), out
    return svc.stats()


@pytest.mark.parametrize("args,yields", [(None, False), (["--busy-yield", "1"], True),
                                          (["--busy-yield", "1", "--idle-yield", "off"], False)],
                         ids=["default", "busy-yield-1", "idle-yield-off"])
def test_busy_yield(stop_testbed, service_factory, args, yields):
    """--busy-yield 1 gives the CPU away after every round with a frame:
    30 pings, each its own busy round, make at least 30 yields, and every
    ping is answered.  By default (256: no spell here has that many
    frames), or with --idle-yield off, never."""
    c = pings_20ms_apart(stop_testbed, service_factory, args)
    if yields:
        assert c["fp_busy_yields"] >= 30, c
    else:
        assert c["fp_busy_yields"] == 0, c


@pytest.mark.parametrize("adapt", [False, True], ids=["default", "idle-adapt"])
def test_idle_polls_adapt(stop_testbed, service_factory, adapt):
    """Pings 20 ms apart are idle spells far longer than 64 empty polls
    last.  With --idle-adapt on, the polls end at the floor (each rise
    after a drop: shrunk == grown + 1) and every ping is still answered;
    by default (off) the number of polls never moves."""
    c = pings_20ms_apart(stop_testbed, service_factory,
                         ["--idle-adapt", "on"] if adapt else None)
    if adapt:
        assert c["fp_idle_polls_shrunk"] >= 1, c
        assert c["fp_idle_polls_shrunk"] == c["fp_idle_polls_grown"] + 1, c
    else:
        assert c["fp_idle_polls_shrunk"] == 0 and c["fp_idle_polls_grown"] == 0, c
