"""The namespace test bed itself: names, addresses, offloads, impairments,
and that down() removes everything, also after a partial or failed up()."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from harness import CLI, PYTHON, PeerAgent, cli_run, ping
from harness import testbed as tbmod

FEATURES_OFF = ("tx-checksumming", "tcp-segmentation-offload",
                "generic-segmentation-offload", "generic-receive-offload")


def ours(prefix):
    """(namespaces, root-namespace links) named after prefix."""
    ns = sorted(n for n in tbmod.netns_list() if n.startswith(prefix + "-"))
    links = sorted(l for l in tbmod.links_list(None) if l.startswith(prefix + "-"))
    return ns, links


def links_in(ns):
    return sorted(tbmod.links_list(ns))


def link_detail(ns, iface):
    res = tbmod.run(["ip", "-j", "-d", "-n", ns, "link", "show", "dev", iface])
    return json.loads(res.stdout)[0]


def sysctl(tb, ns, key):
    return tb.ns_exec(ns, ["sysctl", "-n", key], check=True).stdout.strip()


def nft_ruleset(tb, ns):
    return tb.ns_exec(ns, ["nft", "list", "ruleset"], check=True).stdout


def assert_clean(prefix):
    ns, links = ours(prefix)
    assert ns == [] and links == [], "left behind: %s %s" % (ns, links)


# ---- names and topology -------------------------------------------------

def test_up_one_peer_creates_exactly_the_named_objects(prefix_factory):
    p = prefix_factory()
    tb = tbmod.Testbed(p).up()
    try:
        ns, root_links = ours(p)
        assert ns == sorted([p + "-svc", p + "-peer1"])
        assert root_links == []
        assert links_in(p + "-svc") == sorted(["lo", p + "-sv0"])
        assert links_in(p + "-peer1") == sorted(["lo", p + "-p1"])

        # Single-queue veth, both ends; the service side has no kernel address.
        for ns_, ifc in ((p + "-svc", p + "-sv0"), (p + "-peer1", p + "-p1")):
            d = link_detail(ns_, ifc)
            assert d["num_tx_queues"] == 1 and d["num_rx_queues"] == 1, d
            assert d["operstate"] in ("UP", "UNKNOWN"), d
            assert "xdp" not in d, d
        addrs = json.loads(tbmod.run(["ip", "-j", "-n", p + "-svc", "addr", "show",
                                      "dev", p + "-sv0"]).stdout)[0]["addr_info"]
        assert addrs == []
        assert tbmod.link_ipv4(p + "-peer1", p + "-p1") == "198.18.0.2/24"
        assert link_detail(p + "-svc", "lo")["operstate"] in ("UNKNOWN", "UP")

        for ns_ in (p + "-svc", p + "-peer1"):
            assert sysctl(tb, ns_, "net.ipv6.conf.all.disable_ipv6") == "1"
            assert sysctl(tb, ns_, "net.ipv6.conf.default.disable_ipv6") == "1"

        peer = tb.peer(1)
        assert (peer.ns, peer.iface, peer.ip) == (p + "-peer1", p + "-p1", "198.18.0.2")
        assert peer.mac == tbmod.link_mac(p + "-peer1", p + "-p1")
        assert tb.gateway == "198.18.0.2" and tb.service_cidr == "198.18.0.1/24"
    finally:
        tb.down()
    assert_clean(p)


def test_up_switch_three_peers(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, peers=3) as tb:
        assert tb.switch, "more than one peer forces the switch"
        ns, root_links = ours(p)
        assert ns == sorted([p + "-svc", p + "-sw"] + ["%s-peer%d" % (p, i) for i in (1, 2, 3)])
        assert root_links == []
        assert links_in(p + "-sw") == sorted(["lo", p + "-br"] + ["%s-s%d" % (p, i)
                                                                  for i in range(4)])
        for i in range(4):
            d = link_detail(p + "-sw", "%s-s%d" % (p, i))
            assert d.get("master") == p + "-br", d
        for i in (1, 2, 3):
            assert tbmod.link_ipv4("%s-peer%d" % (p, i), "%s-p%d" % (p, i)) == \
                "198.18.0.%d/24" % (1 + i)
        assert sysctl(tb, p + "-sw", "net.ipv6.conf.all.disable_ipv6") == "1"
        # The bridge forwards between peers.
        tx, rx, out = ping(tb, p + "-peer1", "198.18.0.4", 3, interval=0.1)
        assert (tx, rx) == (3, 3), out
    assert_clean(p)


def test_offloads_off_on_kernel_side_veths(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2):
        facing = [(p + "-sw", "%s-s%d" % (p, i)) for i in range(3)]
        facing += [("%s-peer%d" % (p, i), "%s-p%d" % (p, i)) for i in (1, 2)]
        for ns, ifc in facing:
            feats = tbmod.ethtool_features(ns, ifc)
            for f in FEATURES_OFF:
                assert f in feats, "%s/%s: ethtool -k has no %s" % (ns, ifc, f)
                assert feats[f][0] is False, "%s/%s: %s is on" % (ns, ifc, f)


def test_offloads_off_on_peer_without_switch(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p):
        feats = tbmod.ethtool_features(p + "-peer1", p + "-p1")
        assert all(feats[f][0] is False for f in FEATURES_OFF), feats


def test_no_kernel_noise_reaches_the_service_side(prefix_factory):
    """IPv6 is off everywhere before links come up: no ND/MLD/DAD frames (or
    anything else) arrive on the service's veth while nothing talks."""
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2) as tb:
        svc_side = tbmod.Peer(0, p + "-svc", p + "-sv0", "", "", tb.svc_mac)
        agent = PeerAgent(tb, svc_side)
        try:
            frames = agent.xchg([], match={}, timeout=2.5)
        finally:
            agent.close()
        assert frames == [], ["%s" % f[:14].hex() for f in frames]


XDP_OBJ = "/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o"   # from xdp-tools


def test_stale_xdp_program_is_detached(prefix_factory):
    """xdp_detach() (run by up() and before every service start) removes a
    program in either mode, as a SIGKILLed AF_XDP service would leave one."""
    if not os.path.exists(XDP_OBJ):
        pytest.skip("no XDP object to attach (%s)" % XDP_OBJ)
    p = prefix_factory()
    with tbmod.Testbed(p) as tb:
        assert tbmod.link_xdp(tb.svc_ns, tb.svc_iface) is None
        for mode in ("xdpgeneric", "xdp"):
            tbmod.run(["ip", "-n", tb.svc_ns, "link", "set", "dev", tb.svc_iface,
                       mode, "obj", XDP_OBJ, "sec", "xdp"])
            assert tbmod.link_xdp(tb.svc_ns, tb.svc_iface) is not None
            assert tb.xdp_detach() is None


# ---- down ---------------------------------------------------------------

def test_down_removes_everything_and_is_idempotent(prefix_factory):
    p = prefix_factory()
    tb = tbmod.Testbed(p, peers=2, loss=1, rate=100).up()
    assert ours(p)[0]
    removed = tb.down()
    assert any(r.startswith("netns") for r in removed)
    assert_clean(p)
    assert tb.down() == []                  # again: nothing to do, no error
    assert tbmod.down(prefix_factory()) == []   # never created
    assert tbmod.status(p)["state"] == "down"


def test_down_after_partial_up_by_hand(prefix_factory):
    """Only some of the objects exist (one namespace, a stray root veth, a
    namespace with a process in it): down removes all of them."""
    p = prefix_factory()
    tbmod.run(["ip", "netns", "add", p + "-svc"])
    tbmod.run(["ip", "netns", "add", p + "-peer7"])
    tbmod.run(["ip", "link", "add", p + "-p1", "type", "veth", "peer", "name", p + "-s1"])
    tbmod.run(["ip", "link", "add", p + "-br", "type", "bridge"])
    # A process holding the namespace: down ends it (by pid) and still deletes.
    sleeper = subprocess.Popen(["ip", "netns", "exec", p + "-peer7", "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while not tbmod._ns_pids(p + "-peer7") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tbmod.status(p)["state"] == "partial"
        removed = tbmod.down(p)
        assert_clean(p)
        assert any("process %d" % sleeper.pid in r for r in removed), removed
        assert sleeper.wait(5) is not None
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait(5)


def test_down_after_interrupted_cli_up(prefix_factory):
    """Kill `slipstream testbed up` at several points mid-way; down cleans up."""
    for delay in (0.02, 0.08, 0.15, 0.3):
        p = prefix_factory()
        proc = subprocess.Popen([str(CLI), "testbed", "up", "--prefix", p, "--peers", "3",
                                 "--loss", "1", "--rate", "50"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.kill()
        proc.wait(10)
        res = cli_run("testbed", "down", "--prefix", p)
        assert res.returncode == 0, res.stderr
        assert_clean(p)


def test_failed_up_cleans_up(prefix_factory, monkeypatch):
    p = prefix_factory()

    def boom(self):
        raise tbmod.TestbedError("injected failure")
    monkeypatch.setattr(tbmod.Testbed, "_impair", boom)
    with pytest.raises(tbmod.TestbedError, match="injected"):
        tbmod.Testbed(p, peers=2).up()
    assert_clean(p)


def test_up_twice_replaces(prefix_factory):
    p = prefix_factory()
    tbmod.Testbed(p, peers=2).up()
    try:
        tb2 = tbmod.Testbed(p).up()            # smaller: the switch must go away
        ns, _ = ours(p)
        assert ns == sorted([p + "-svc", p + "-peer1"])
        assert not tb2.switch
    finally:
        tbmod.down(p)
    assert_clean(p)


# ---- impairments --------------------------------------------------------

def test_loss_rule_in_peer_without_switch(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, loss=2.5) as tb:
        rules = nft_ruleset(tb, p + "-peer1")
        assert "table inet %s_testbed" % p in rules
        for chain in ("input", "output"):
            body = re.search(r"chain %s \{(.*?)\n\t\}" % chain, rules, re.S)
            assert body, rules
            assert "numgen random mod 1000 < 25 drop" in body.group(1), rules
        assert tb.ns_exec(p + "-svc", ["nft", "list", "ruleset"]).stdout.strip() == ""


def test_loss_rule_in_switch(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, switch=True, loss=10) as tb:
        rules = nft_ruleset(tb, p + "-sw")
        assert "table bridge %s_testbed" % p in rules
        assert "hook forward" in rules
        assert "numgen random mod 1000 < 100 drop" in rules
        assert nft_ruleset(tb, p + "-peer1").strip() == ""


def test_loss_drops_traffic(prefix_factory):
    """50% per traversal on the bridge: some, not all, of 40 pings come back
    (P(none) = 0.75^40 ~ 1e-5, P(all) ~ 0.25^40)."""
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2, loss=50) as tb:
        # Resolve ARP first: loss applies to IPv4 only, so ARP gets through.
        tx, rx, out = ping(tb, p + "-peer1", "198.18.0.3", 40, interval=0.02, wait=1)
        assert tx == 40 and 0 < rx < 40, out


def test_ecn_all_rule(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, ecn_all=True) as tb:
        rules = nft_ruleset(tb, p + "-peer1")
        assert rules.count("ip ecn set ce") == 2, rules
        assert "ip ecn { ect1, ect0 }" in rules or "ip ecn { ect0, ect1 }" in rules
    with tbmod.Testbed(p, ecn_all=True, switch=True) as tb:
        assert "ip ecn set ce" in nft_ruleset(tb, p + "-sw")


@pytest.mark.parametrize("tos,marked", [(0x02, True), (0x01, True), (0x00, False)],
                         ids=["ect0", "ect1", "not-ect"])
def test_ecn_all_marks_ect_packets_across_the_switch(prefix_factory, tos, marked):
    """peer1 pings peer2 through the bridge with the given ECN bits; peer2
    sees CE on ECT packets only, with a valid IP header checksum."""
    from frames import csum
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2, ecn_all=True) as tb:
        agent = PeerAgent(tb, tb.peer(2))
        pinger = None
        try:
            pinger = tb.ns_popen(tb.peer(1).ns, ["ping", "-n", "-c", "6", "-i", "0.2",
                                                 "-Q", str(tos), tb.peer(2).ip],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            got = agent.xchg([], {"ip_src": tb.peer(1).ip, "ip_proto": 1}, timeout=3.0,
                             max_frames=2)
        finally:
            if pinger is not None:
                pinger.kill()
                pinger.wait(5)
            agent.close()
        assert got, "no echo request reached peer2"
        for f in got:
            ecn = f[15] & 0x3
            assert ecn == (0x3 if marked else tos), "ECN bits %d, sent %d" % (ecn, tos)
            assert csum(f[14:34]) == 0, "IP checksum not fixed up after marking"


def test_ecn_mark_above_and_rate(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, switch=True, ecn_mark_above=30000, rate=100, queue=50) as tb:
        rules = nft_ruleset(tb, p + "-sw")
        assert 'oifname "%s-s0"' % p in rules
        # 100 Mbit/s = 8256 frames of 1514 bytes a second; 30000 bytes = 20 frames
        assert "limit rate over 8256/second burst 20 packets" in rules, rules
        qd = json.loads(tbmod.run(["tc", "-j", "-n", p + "-sw", "qdisc", "show", "dev",
                                   p + "-s0"]).stdout)
        kinds = {q["kind"]: q for q in qd}
        assert "tbf" in kinds and kinds["tbf"]["options"]["rate"] == 12500000
        assert kinds["pfifo"]["options"]["limit"] == 50
    with pytest.raises(tbmod.TestbedError, match="needs rate"):
        tbmod.Testbed(p, ecn_mark_above=1000)
    with pytest.raises(tbmod.TestbedError, match="exclusive"):
        tbmod.Testbed(p, ecn_all=True, ecn_mark_above=1000, rate=10)


def test_reorder_setup_and_teardown(prefix_factory):
    """reorder forces the switch; every switch port gets an HTB root (default
    0: direct queue) with the slow class 1:2 and its pfifo; the nft rule picks
    the class through skb->priority; the CLI flag does the same; down()
    removes it all.  (test_tcp.py checks that Linux really sees reordering.)"""
    p = prefix_factory()
    with pytest.raises(tbmod.TestbedError, match="exclusive"):
        tbmod.Testbed(p, reorder=1, rate=10)
    for bad in (0, 0.01, 101, "x"):
        with pytest.raises(tbmod.TestbedError):
            tbmod.Testbed(p, reorder=bad)
    tb = tbmod.Testbed(p, reorder=2.5)
    assert tb.switch and tb.reorder_permille == 25
    with tb:
        rules = nft_ruleset(tb, p + "-sw")
        assert "numgen random mod 1000 < 25 meta priority set %s" % tbmod.REORDER_CLASS \
            in rules, rules
        for port in (p + "-s0", p + "-s1"):
            qd = json.loads(tbmod.run(["tc", "-j", "-n", p + "-sw", "qdisc", "show", "dev",
                                       port]).stdout)
            kinds = {q["kind"]: q for q in qd}
            assert kinds["htb"]["root"] and kinds["htb"]["options"]["default"] in (0, "0"), qd
            assert kinds["pfifo"]["parent"] == tbmod.REORDER_CLASS, qd
            assert kinds["pfifo"]["options"]["limit"] == tbmod.REORDER_QUEUE, qd
            cls = tbmod.run(["tc", "-n", p + "-sw", "class", "show", "dev", port]).stdout
            assert re.findall(r"^class htb (\S+) .*rate 20Mbit", cls, re.M) == \
                [tbmod.REORDER_CLASS], cls
        st = tb.status()
        assert sorted(st["qdiscs"]) == ["%s-sw/%s-s0" % (p, p), "%s-sw/%s-s1" % (p, p)], st
    assert_clean(p)
    res = cli_run("testbed", "up", "--prefix", p, "--reorder", "1", "--json")
    try:
        assert res.returncode == 0, res.stderr
        st = json.loads(res.stdout)
        assert st["switch"]["bridge"] == p + "-br" and len(st["qdiscs"]) == 2, st
        assert "< 10 meta priority set" in nft_ruleset(tb, p + "-sw")
    finally:
        res = cli_run("testbed", "down", "--prefix", p)
    assert res.returncode == 0, res.stderr
    assert_clean(p)
    res = cli_run("testbed", "up", "--prefix", p, "--reorder", "1", "--rate", "10")
    assert res.returncode != 0 and "exclusive" in res.stderr, res.stderr
    assert_clean(p)


def test_ecn_mark_above_marks_once_the_virtual_queue_builds(prefix_factory):
    """A 100-frame burst of 1014-byte ECT frames toward the service at far
    above 10 Mbit/s: the first ones (5000 bytes of depth = 4 MTU frames) pass
    unmarked, most later ones get CE; non-ECT packets are never marked."""
    import threading
    import frames as fr
    p = prefix_factory()
    with tbmod.Testbed(p, peers=1, switch=True, rate=10, queue=200,
                       ecn_mark_above=5000) as tb:
        peer = tb.peer(1)
        svc_side = tbmod.Peer(0, tb.svc_ns, tb.svc_iface, "", "", tb.svc_mac)
        cap, inj = PeerAgent(tb, svc_side), PeerAgent(tb, peer)
        try:
            def burst(tos):
                return [fr.eth(tb.svc_mac, peer.mac, fr.ETH_IPV4, fr.ipv4(
                    peer.ip, tb.service_ip, fr.PROTO_UDP,
                    fr.udp(peer.ip, tb.service_ip, 9999, 9, bytes(972)), tos=tos,
                    ident=i)) for i in range(100)]
            for tos, want_marks in ((0x02, True), (0x00, False)):
                got = []
                t = threading.Thread(target=lambda: got.extend(cap.xchg(
                    [], {"ip_src": peer.ip, "ip_proto": fr.PROTO_UDP}, timeout=2.0,
                    max_frames=100)))
                t.start()
                time.sleep(0.3)
                inj.send(burst(tos))
                t.join(15)
                assert len(got) >= 50, "only %d of 100 frames arrived" % len(got)
                ecn = [f[15] & 3 for f in got]
                if want_marks:
                    assert ecn[:3] == [2, 2, 2], ecn
                    assert ecn.count(3) >= len(got) // 2, ecn
                else:
                    assert set(ecn) == {0}, ecn
                time.sleep(0.6)     # let the token bucket refill before the next round
        finally:
            cap.close()
            inj.close()


def test_rate_without_switch_shapes_peer_egress(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p, rate=20, queue=10):
        qd = json.loads(tbmod.run(["tc", "-j", "-n", p + "-peer1", "qdisc", "show",
                                   "dev", p + "-p1"]).stdout)
        assert [q["kind"] for q in qd] == ["tbf", "pfifo"]
        assert qd[1]["options"]["limit"] == 10


# ---- status, CLI, API ---------------------------------------------------

def test_cli_up_status_down(prefix_factory):
    p = prefix_factory()
    res = cli_run("testbed", "up", "--prefix", p, "--peers", "2", "--json")
    assert res.returncode == 0, res.stderr
    st = json.loads(res.stdout)
    try:
        assert st["state"] == "up"
        res = cli_run("testbed", "status", "--prefix", p, "--json", "--pmd", "af_xdp")
        assert res.returncode == 0, res.stderr
        st = json.loads(res.stdout)
        assert st["namespaces"] == sorted([p + "-svc", p + "-sw", p + "-peer1", p + "-peer2"])
        svc = st["service"]
        assert svc["ns"] == p + "-svc" and svc["iface"] == p + "-sv0"
        assert svc["cidr"] == "198.18.0.1/24" and svc["gateway"] == "198.18.0.2"
        assert svc["mac"] == tbmod.link_mac(p + "-svc", p + "-sv0")
        assert svc["dpdk_args"] == [
            "--no-huge", "--no-pci", "--no-shconf",
            "--vdev=net_af_xdp0,iface=%s-sv0,start_queue=0,queue_count=1" % p]
        assert [(x["index"], x["ns"], x["iface"], x["ip"]) for x in st["peers"]] == [
            (1, p + "-peer1", p + "-p1", "198.18.0.2"),
            (2, p + "-peer2", p + "-p2", "198.18.0.3")]
        for x in st["peers"]:
            assert x["mac"] == tbmod.link_mac(x["ns"], x["iface"])
        assert st["switch"]["bridge"] == p + "-br"
        res = cli_run("testbed", "status", "--prefix", p, "--json", "--pmd", "af_packet")
        assert json.loads(res.stdout)["service"]["dpdk_args"][-1] == \
            "--vdev=net_af_packet0,iface=%s-sv0,qpairs=1" % p
        res = cli_run("testbed", "status", "--prefix", p)
        assert res.returncode == 0 and "testbed %s: up" % p in res.stdout
    finally:
        res = cli_run("testbed", "down", "--prefix", p)
    assert res.returncode == 0, res.stderr
    assert_clean(p)
    res = cli_run("testbed", "status", "--prefix", p, "--json")
    assert json.loads(res.stdout)["state"] == "down"


def test_cli_rejects_bad_options(prefix_factory):
    p = prefix_factory()
    for args in (["--prefix", "Bad-Name"], ["--prefix", "waytoolongprefix"],
                 ["--prefix", p, "--ecn-mark-above", "100"],
                 ["--prefix", p, "--loss", "0"], ["--prefix", p, "--peers", "0"]):
        res = cli_run("testbed", "up", *args)
        assert res.returncode != 0, args
        assert "Traceback" not in res.stderr, res.stderr
    res = cli_run("testbed", "up", "--prefix", p, "--ecn-all", "--ecn-mark-above", "9")
    assert res.returncode == 2     # argparse: mutually exclusive
    assert_clean(p)


def test_ns_exec_and_popen(prefix_factory):
    p = prefix_factory()
    with tbmod.Testbed(p) as tb:
        res = tb.ns_exec(tb.peer(1).ns, ["ip", "-o", "-4", "addr", "show"])
        assert "198.18.0.2/24" in res.stdout
        proc = tb.ns_popen(tb.svc_ns, [PYTHON, "-c", "import os; print(os.getpid())"],
                           stdout=subprocess.PIPE, text=True)
        out, _ = proc.communicate(timeout=20)
        assert int(out) == proc.pid, "ip netns exec must exec in place"


@pytest.mark.no_root
def test_dpdk_args_and_names():
    tb = tbmod.Testbed("ss")
    assert tb.dpdk_args() == ["--no-huge", "--no-pci", "--no-shconf",
                              "--vdev=net_af_xdp0,iface=ss-sv0,start_queue=0,queue_count=1"]
    assert tb.dpdk_args("af_packet") == ["--no-huge", "--no-pci", "--no-shconf",
                                         "--vdev=net_af_packet0,iface=ss-sv0,qpairs=1"]
    with pytest.raises(tbmod.TestbedError):
        tb.dpdk_args("memif")
    assert tb.namespaces == ["ss-svc", "ss-peer1"]
    tb = tbmod.Testbed("abcdefghij", peers=64)
    assert len(tbmod.sw_port_name(tb.prefix, 64)) <= 15
    assert tb.sw_ns == "abcdefghij-sw"
    for bad in ("", "1ss", "ss-x", "SS", "abcdefghijk"):
        with pytest.raises(tbmod.TestbedError):
            tbmod.Testbed(bad)
    with pytest.raises(tbmod.TestbedError):
        tbmod.Testbed("ss", loss=0.01)


@pytest.mark.no_root
def test_cli_works_through_a_symlink(tmp_path):
    link = tmp_path / "slipstream"
    link.symlink_to(CLI)
    res = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=20)
    assert res.returncode == 0 and "slipstream" in res.stdout, res.stderr
    assert sys.executable  # the CLI's shebang picks /usr/bin/python3 itself


# ---- rate_dir "to-peer", ecn_marker "bpf", the bottleneck's statistics ----

def _qdiscs(ns, dev):
    return json.loads(tbmod.run(["tc", "-j", "-n", ns, "qdisc", "show", "dev", dev]).stdout)


def test_rate_to_peer_setup_and_teardown(prefix_factory):
    """rate_dir "to-peer": TBF + pfifo on the switch port toward peer 1 (and
    nowhere else), the mark rule on that port; forces the switch; down()
    removes it all."""
    p = prefix_factory()
    with pytest.raises(tbmod.TestbedError, match="rate_dir"):
        tbmod.Testbed(p, rate=10, rate_dir="sideways")
    tb = tbmod.Testbed(p, rate=100, queue=50, rate_dir="to-peer", ecn_mark_above=30000)
    assert tb.switch, "to-peer forces the switch"
    assert tb.bottleneck == (p + "-sw", p + "-s1") == tb.shaped_port
    with tb:
        kinds = {q["kind"]: q for q in _qdiscs(p + "-sw", p + "-s1")}
        assert kinds["tbf"]["root"] and kinds["tbf"]["options"]["rate"] == 12500000, kinds
        assert kinds["pfifo"]["options"]["limit"] == 50, kinds
        assert kinds["pfifo"]["parent"] == "1:1", kinds
        for dev in (p + "-s0",):
            assert not {"tbf", "pfifo"} & {q["kind"] for q in _qdiscs(p + "-sw", dev)}
        assert [q["kind"] for q in _qdiscs(p + "-peer1", p + "-p1")] != ["tbf", "pfifo"]
        rules = nft_ruleset(tb, p + "-sw")
        assert 'oifname "%s-s1"' % p in rules and 'oifname "%s-s0"' % p not in rules, rules
        assert "limit rate over 8256/second burst 20 packets" in rules, rules
        st = tb.status()
        assert list(st["qdiscs"]) == ["%s-sw/%s-s1" % (p, p)], st
        stats = tb.bottleneck_stats()
        assert stats["kind"] == "tbf" and stats["parent"] == "root", stats
        assert set(tbmod._QDISC_FIELDS) <= set(stats), stats
        assert stats["drops"] == 0 and stats["backlog"] == 0, stats
    assert_clean(p)
    # Without rate there is no bottleneck to read.
    tb = tbmod.Testbed(p, rate_dir="to-peer")
    assert tb.bottleneck is None and tb.shaped_port == (p + "-sw", p + "-s1")
    with pytest.raises(tbmod.TestbedError, match="no bottleneck"):
        tb.bottleneck_stats()


def test_ecn_all_to_peer_only_toward_peer1(prefix_factory):
    """ecn_all with rate_dir "to-peer" marks only what leaves toward peer 1:
    peer2 -> peer1 pings arrive CE, peer1 -> peer2 pings do not."""
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2, ecn_all=True, rate_dir="to-peer") as tb:
        rules = nft_ruleset(tb, p + "-sw")
        assert rules.count("ip ecn set ce") == 1, rules
        assert 'oifname "%s-s1"' % p in rules, rules
        for src, dst, marked in ((2, 1, True), (1, 2, False)):
            agent = PeerAgent(tb, tb.peer(dst))
            pinger = None
            try:
                pinger = tb.ns_popen(tb.peer(src).ns, [
                    "ping", "-n", "-c", "6", "-i", "0.2", "-Q", "2", tb.peer(dst).ip],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                got = agent.xchg([], {"ip_src": tb.peer(src).ip, "ip_proto": 1},
                                 timeout=3.0, max_frames=2)
            finally:
                if pinger is not None:
                    pinger.kill()
                    pinger.wait(5)
                agent.close()
            assert got, "no echo request reached peer%d" % dst
            assert all((f[15] & 3) == (3 if marked else 2) for f in got), \
                [f[15] & 3 for f in got]
    assert_clean(p)


def _need_clang():
    if not shutil.which("clang"):
        pytest.skip("ecn_marker bpf needs clang")


def test_bpf_marker_setup_and_teardown(prefix_factory):
    """ecn_marker "bpf": a clsact qdisc with a direct-action BPF filter on the
    shaped port's egress, no nftables mark rule; down() removes it."""
    _need_clang()
    p = prefix_factory()
    with pytest.raises(tbmod.TestbedError, match="ecn_marker"):
        tbmod.Testbed(p, ecn_marker="red")
    for kw, ns, dev in (({"rate_dir": "to-peer"}, p + "-sw", p + "-s1"),
                        ({"switch": True}, p + "-sw", p + "-s0")):
        with tbmod.Testbed(p, rate=50, ecn_mark_above=20000, ecn_marker="bpf", **kw) as tb:
            assert {"clsact", "tbf", "pfifo"} <= {q["kind"] for q in _qdiscs(ns, dev)}
            flt = tbmod.run(["tc", "-n", ns, "filter", "show", "dev", dev, "egress"]).stdout
            assert "bpf" in flt and "direct-action" in flt and "vq_mark" in flt, flt
            assert "ecn set ce" not in tb.ns_exec(ns, ["nft", "list", "ruleset"]).stdout
        assert_clean(p)


def test_bpf_marker_marks_on_the_real_queue(prefix_factory):
    """A burst of 100 ECT frames (1014 bytes) from peer2 toward peer1 through
    a 10 Mbit/s to-peer bottleneck marked above 5000 bytes: the first ones
    find an empty queue and pass unmarked, the later ones find a queue above
    5000 bytes and arrive CE with a valid IP checksum; non-ECT frames are
    never marked; the qdisc statistics count what queued."""
    _need_clang()
    import threading
    import frames as fr
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2, rate=10, queue=200, ecn_mark_above=5000,
                       ecn_marker="bpf", rate_dir="to-peer") as tb:
        src, dst = tb.peer(2), tb.peer(1)
        cap, inj = PeerAgent(tb, dst), PeerAgent(tb, src)
        try:
            def burst(tos):
                return [fr.eth(dst.mac, src.mac, fr.ETH_IPV4, fr.ipv4(
                    src.ip, dst.ip, fr.PROTO_UDP,
                    fr.udp(src.ip, dst.ip, 9999, 9, bytes(972)), tos=tos,
                    ident=i)) for i in range(100)]
            for tos, want_marks in ((0x02, True), (0x01, True), (0x00, False)):
                got = []
                t = threading.Thread(target=lambda: got.extend(cap.xchg(
                    [], {"ip_src": src.ip, "ip_proto": fr.PROTO_UDP}, timeout=2.0,
                    max_frames=100)))
                t.start()
                time.sleep(0.3)
                inj.send(burst(tos))
                t.join(15)
                assert len(got) >= 90, "only %d of 100 frames arrived" % len(got)
                ecn = [f[15] & 3 for f in got]
                if want_marks:
                    # 5000 bytes = 4.9 frames of 1014 bytes, after the 3 the
                    # TBF's burst (3028 bytes) lets through without queueing:
                    # about 8 frames find the queue at or below the threshold,
                    # every later one above it (the burst arrives far faster
                    # than 10 Mbit/s).
                    first = ecn.index(3) if 3 in ecn else len(ecn)
                    assert 5 <= first <= 10, ecn
                    assert ecn[:first] == [tos] * first, ecn
                    assert ecn[first:] == [3] * (len(ecn) - first), ecn
                else:
                    assert set(ecn) == {0}, ecn
                for f in got:
                    assert fr.csum(f[14:34]) == 0, "IP checksum wrong after marking"
                time.sleep(0.3)     # the queue drains (100 kB at 10 Mbit/s: 80 ms)
        finally:
            cap.close()
            inj.close()
        st = tb.bottleneck_stats()
        assert st["packets"] >= 300 and st["drops"] == 0 and st["backlog"] == 0, st
    assert_clean(p)


def test_bottleneck_sampler(prefix_factory, tmp_path):
    """QdiscSampler: about one sample per 10 ms from one process in the switch
    namespace; cumulative counters never go back; it sees the queue build
    and drop under a UDP burst at 5x the rate, and its last sample agrees
    with `tc -s` (bottleneck_stats)."""
    import frames as fr
    p = prefix_factory()
    with tbmod.Testbed(p, peers=2, rate=10, queue=20, rate_dir="to-peer") as tb:
        src, dst = tb.peer(2), tb.peer(1)
        inj = PeerAgent(tb, src)
        smp = tb.bottleneck_sampler(tmp_path / "samples.jsonl", interval=0.01)
        try:
            smp.start()
            t0 = time.monotonic_ns()
            frames_ = [fr.eth(dst.mac, src.mac, fr.ETH_IPV4, fr.ipv4(
                src.ip, dst.ip, fr.PROTO_UDP, fr.udp(src.ip, dst.ip, 9999, 9, bytes(1472)),
                ident=i)) for i in range(50)]
            for _ in range(4):          # 4 bursts of 50 into a 20-packet queue
                inj.send(frames_)
                time.sleep(0.08)
            time.sleep(0.3)
            samples = smp.stop()
        finally:
            smp.stop()
            inj.close()
        final = tb.bottleneck_stats()
        assert samples and samples[0]["t_ns"] <= t0 + 50e6, samples[:2]
        span = (samples[-1]["t_ns"] - samples[0]["t_ns"]) / 1e9
        assert 0.5 * span / 0.01 <= len(samples) <= span / 0.01 + 2, (len(samples), span)
        for a, b in zip(samples, samples[1:]):
            assert b["t_ns"] > a["t_ns"]
            for k in ("bytes", "packets", "drops", "tx_bytes", "tx_packets"):
                assert b[k] >= a[k], (k, a, b)
        assert max(s["backlog"] for s in samples) > 10 * 1514, "never saw a queue"
        assert max(s["backlog"] for s in samples) <= 20 * 1514
        assert max(s["qlen"] for s in samples) <= 20
        last = samples[-1]
        assert last["drops"] > 0 and last["drops"] == final["drops"], (last, final)
        assert last["packets"] == final["packets"] and last["bytes"] == final["bytes"]
        assert last["packets"] + last["drops"] >= 200
        # What the qdisc sent left through the port.
        assert last["tx_packets"] >= last["packets"], last
    assert_clean(p)



def test_cli_rate_dir_to_peer(prefix_factory):
    """`slipstream testbed up --rate-dir to-peer --ecn-marker bpf` (once the
    CLI has the options) builds the same as the API; down removes it."""
    res = cli_run("testbed", "--help")
    if "--rate-dir" not in res.stdout:
        pytest.skip("slipstream testbed has no --rate-dir yet (tools/slipstream_tools/cli.py)")
    _need_clang()
    p = prefix_factory()
    res = cli_run("testbed", "up", "--prefix", p, "--peers", "2", "--rate", "100",
                  "--queue", "64", "--ecn-mark-above", "30000", "--rate-dir", "to-peer",
                  "--ecn-marker", "bpf", "--json")
    try:
        assert res.returncode == 0, res.stderr
        st = json.loads(res.stdout)
        assert list(st["qdiscs"]) == ["%s-sw/%s-s1" % (p, p)], st
        assert {"clsact", "tbf", "pfifo"} <= set(st["qdiscs"]["%s-sw/%s-s1" % (p, p)])
    finally:
        res = cli_run("testbed", "down", "--prefix", p)
    assert res.returncode == 0, res.stderr
    assert_clean(p)
    res = cli_run("testbed", "up", "--prefix", p, "--rate-dir", "sideways")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert_clean(p)
