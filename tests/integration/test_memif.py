"""Two services joined by memif: Slipstream to Slipstream without a kernel
between them (the both-ends benchmark's link, bench/benchsuite/beds.py).

The test bed's two namespaces hold one service each (its veth is left
unused): the server's service (198.18.0.1, memif server, CPU 1) in the
service namespace, the client's (198.18.0.2, memif client, CPU 0) in the
peer namespace, joined by DPDK's memif PMD in copy mode through a path
socket (abstract sockets are per network namespace).

Checked:
  * before the peer connects, the link is down and the service neither
    crashes nor spins: it naps (fp_link_naps), and what it would send is
    dropped and counted (drop_tx_link_down), not kept;
  * once connected: both links up, both services wait by the memif eventfd,
    ARP resolves over memif both ways;
  * 200 concurrent connections from tcp_peer.py echo-client (under
    `slipstream run` on the client's service) to ss-echo (on the server's):
    every byte of every echo compared;
  * 32 MiB one way with ss-bulk (sender on the client's service, receiver
    on the server's), SHA-256 at both ends and against the generator;
  * no drop counter moved on either service during the transfers, and
    frames a full memif ring refused were kept, never dropped;
  * both services stop cleanly (exit 0 on SIGTERM), the memif socket and
    the control sockets are gone.
Every process is bounded by a timeout.
"""

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness import BUILD, PYTHON, Service, ServiceError, counters_delta
from harness import testbed as tbmod
from test_loopback import Proc, accel, app, procs, wait_bulk, wait_gauges  # noqa: F401

SS_BULK = BUILD / "tools" / "apps" / "ss-bulk"
SS_ECHO = BUILD / "tools" / "apps" / "ss-echo"
PEER_PY = Path(__file__).resolve().parent / "tcp_peer.py"
MiB = 1 << 20
TIME_WAIT_MS = 1000
SERVER_IP, CLIENT_IP = tbmod.SERVICE_IP, tbmod.peer_ip(1)

# Counters that must not move while data flows (frames lost anywhere in
# the service or between the two).
DROPS_MUST_BE_ZERO = ("drop_tx_full", "drop_tx_link_down", "drop_no_mbuf", "drop_rx_chained",
                      "drop_app_event_ring_full", "drop_loopback_full", "tcp_lost_rexmits")


def memif_eal(role, sock, cpu):
    return ["--no-huge", "--no-pci", "--no-shconf", "-l", str(cpu),
            "--vdev=net_memif0,role=%s,id=0,socket=%s,socket-abstract=no" % (role, sock)]


class Pair:
    """The two services and their memif socket."""

    def __init__(self, tb):
        self.tb = tb
        self.dir = Path(tempfile.mkdtemp(prefix="sst-memif-"))
        self.sock = str(self.dir / "memif.sock")
        args = ["--time-wait-ms", str(TIME_WAIT_MS)]
        self.server = Service(tb, extra_args=args, eal=memif_eal("server", self.sock, 1))
        self.client = Service(tb, extra_args=args, ns=tbmod.peer_ns_name(tb.prefix, 1),
                              cidr="%s/%d" % (CLIENT_IP, tbmod.PREFIX_LEN), gateway=SERVER_IP,
                              eal=memif_eal("client", self.sock, 0))
        self.stopped = False

    def services(self):
        return (self.client, self.server)   # the order they stop in


def port_info(svc):
    return svc.query("stats")["service"]["port"]


def wait_link(svc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_info(svc)["link_up"]:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def pair(prefix_new_fn):
    for b in (SS_BULK, SS_ECHO):
        if not b.exists():
            pytest.skip("%s not built" % b)
    tb = tbmod.Testbed(prefix_new_fn(), peers=1)
    tb.up()
    p = Pair(tb)
    try:
        # The client's namespace keeps no kernel address: its TCP is the service's.
        tbmod.run(["ip", "-n", tbmod.peer_ns_name(tb.prefix, 1), "addr", "flush", "dev",
                   tbmod.peer_iface_name(tb.prefix, 1)])
        try:
            p.server.start()
        except ServiceError as e:
            pytest.fail(str(e), pytrace=False)
        yield p
    finally:
        problems = []
        if not p.stopped:
            for svc in p.services():
                if svc.proc is not None:
                    died = None if svc.alive() else svc.proc.returncode
                    try:
                        rc, _ = svc.stop()
                    except ServiceError as e:
                        rc = str(e)
                    if died is not None or rc != 0:
                        problems.append("%s: died %s, exit %s\n%s"
                                        % (svc.ns, died, rc, svc.logs()))
        for svc in p.services():
            svc.kill()
            svc.cleanup()
        shutil.rmtree(p.dir, ignore_errors=True)
        tb.down()
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)


def test_memif_link_down_naps(pair):
    """The server's service alone: link down, no crash, no spinning; its
    gateway ARP requests are dropped as link-down, not kept."""
    svc = pair.server
    info = port_info(svc)
    assert info["driver"] == "net_memif" and info["kind"] == "memif", info
    assert info["link_up"] is False, info
    before = svc.stats()
    time.sleep(1.5)
    assert svc.alive(), svc.logs()
    d = counters_delta(before, svc.stats())
    # Naps of up to 20 ms while nobody is connected: about 75 in 1.5 s.
    assert d.get("fp_sleeps", 0) <= 150, d
    assert d.get("fp_link_naps", 0) >= 10, d
    st = svc.stats()
    assert st.get("tx_kept", 0) == 0, st
    assert st.get("tx_arp_request", 0) == st.get("drop_tx_link_down", 0), st
    assert "memif server, link down" in svc.stdout_path.read_text() + \
        svc.stderr_path.read_text(), svc.logs()


def test_memif_connect_arp(pair):
    """The client's service connects: both links up, both wait on the
    memif eventfd, and ARP resolves over memif both ways."""
    try:
        pair.client.start()
    except ServiceError as e:
        pytest.fail(str(e), pytrace=False)
    for svc in pair.services():
        assert wait_link(svc), svc.logs()
        assert svc.info()["idle_wait"] == "memif-eventfd", svc.info()
        log = svc.stdout_path.read_text() + svc.stderr_path.read_text()
        assert "kind memif; idle fast-path threads wait by memif-eventfd" in log, log
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        cli = {e["ip"]: e for e in pair.client.arp()}
        srv = {e["ip"]: e for e in pair.server.arp()}
        if SERVER_IP in cli and CLIENT_IP in srv:
            break
        time.sleep(0.2)
    assert SERVER_IP in cli and CLIENT_IP in srv, (cli, srv)
    assert cli[SERVER_IP]["mac"] == pair.server.info()["mac"], (cli, pair.server.info())
    assert srv[CLIENT_IP]["mac"] == pair.client.info()["mac"], (srv, pair.client.info())
    # Idle once resolved: both sleep on the eventfd, not on a timer.
    before = [s.stats() for s in pair.services()]
    time.sleep(1.0)
    for svc, b in zip(pair.services(), before):
        d = counters_delta(b, svc.stats())
        assert d.get("fp_sleeps", 0) <= 50, d
        assert d.get("fp_link_naps", 0) == 0, d


def assert_no_drops(before, after, name):
    d = counters_delta(before, after)
    moved = {k: d[k] for k in DROPS_MUST_BE_ZERO if d.get(k)}
    assert not moved, "%s: %s (all: %s)" % (name, moved, d)
    return d


def test_memif_echo_many(pair, procs):
    """200 connections through memif, every echoed byte compared."""
    port, conns, nbytes = 7007, 200, 20000
    before = [s.stats() for s in pair.services()]
    echo = app(procs, pair.server, [SS_ECHO, "--port", port])
    assert wait_gauges(pair.server, {"listeners": 1}, 10).get("listeners") == 1, \
        echo.describe()
    client = accel(procs, pair.client, [PYTHON, PEER_PY, "echo-client", "--dst",
                                        "%s:%d" % (SERVER_IP, port), "--conns", conns,
                                        "--bytes", nbytes, "--seed", 9, "--timeout", 60])
    rc, doc = client.wait_json(90)
    assert rc == 0 and doc["n_errors"] == 0, client.describe()
    assert doc["done"] == conns and doc["bytes"] == nbytes, doc
    echo.kill()
    dc = assert_no_drops(before[0], pair.client.stats(), "client's service")
    ds = assert_no_drops(before[1], pair.server.stats(), "server's service")
    assert dc.get("tcp_active_open") == conns and ds.get("tcp_passive_open") == conns, (dc, ds)
    # Every segment crossed memif (none looped back inside one service).
    assert ds.get("rx_tcp", 0) > 0 and ds.get("rx_loopback", 0) == 0, ds
    # Each side found the other asleep and rang it: the PMD's own ring
    # (fp_peer_pmd_rang, the usual case) or the fast path's after a burst
    # during which the peer went to sleep (fp_peer_kicks, a race that 200
    # connections may never hit).
    woke = lambda d: d.get("fp_peer_pmd_rang", 0) + d.get("fp_peer_kicks", 0)
    assert woke(ds) > 0 and woke(dc) > 0, (dc, ds)
    print("\nmemif echo: %d conns x %d bytes in %.2f s; tx_kept client %d server %d"
          % (conns, nbytes, doc["seconds"], dc.get("tx_kept", 0), ds.get("tx_kept", 0)))


def test_memif_bulk(pair, procs):
    """32 MiB one way, client's service to server's: SHA-256 both ends."""
    port, nbytes, seed = 7008, 32 * MiB, 21
    before = [s.stats() for s in pair.services()]
    common = ["--bytes", nbytes, "--seed", seed, "--timeout", 60]
    server = app(procs, pair.server, [SS_BULK, "recv", "--listen", port] + common)
    assert wait_gauges(pair.server, {"listeners": 1}, 10).get("listeners") == 1, \
        server.describe()
    client = app(procs, pair.client, [SS_BULK, "send", "--connect",
                                      "%s:%d" % (SERVER_IP, port)] + common)
    secs = wait_bulk(client, server, nbytes, seed)
    dc = assert_no_drops(before[0], pair.client.stats(), "client's service")
    ds = assert_no_drops(before[1], pair.server.stats(), "server's service")
    assert ds.get("rx_tcp", 0) >= nbytes // 1448, ds
    print("\nmemif bulk: %d MiB in %.2f s (%.2f Gbit/s); tx_kept client %d; sender's bursts: "
          "%d rang the peer, %d left it to the PMD's ring, %d found it polling; receiver "
          "slept %d times" % (nbytes // MiB, secs, nbytes * 8 / secs / 1e9, dc.get("tx_kept", 0),
                              dc.get("fp_peer_kicks", 0), dc.get("fp_peer_pmd_rang", 0),
                              dc.get("fp_peer_polling", 0), ds.get("fp_sleeps", 0)))
    # The memif protocol: a sleeping receiver (its ring's MASK_INT flag
    # clear) is rung, by the PMD's burst or by the fast path, at most a few
    # times per sleep (bursts sent before it woke); a polling one is not
    # (fp_peer_polling counts those bursts).
    assert dc.get("fp_peer_polling", 0) > 0, dc
    assert dc.get("fp_peer_kicks", 0) + dc.get("fp_peer_pmd_rang", 0) <= \
        4 * ds.get("fp_sleeps", 0) + 4, (dc, ds)


def test_memif_stop_clean(pair):
    """SIGTERM: both exit 0; the memif socket and control sockets go."""
    for svc in pair.services():
        rc, secs = svc.stop()
        assert rc == 0, svc.logs()
        assert not os.path.exists(svc.ctl_path), svc.ctl_path
    pair.stopped = True
    assert not os.path.exists(pair.sock), "memif socket left: %s" % pair.sock
