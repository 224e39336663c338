"""The set-ups, for each stack: where the client and the server run, on
which CPUs, and what the kernel is told so that each side's work stays on
its side.

Every set-up is one test bed of two namespaces joined by one veth pair,
no switch (tools/slipstream_tools/testbed.py, one peer):

    [P-svc]  P-sv0 <==veth==> P-p1  [P-peer1]
    server side, 198.18.0.1       client side, 198.18.0.2

The test bed turns checksum offload, TSO, GSO and GRO off on both veth
ends, for Linux as for Slipstream.

server-side  ("server"): the client is Linux, in P-peer1, pinned to CPU 0.
    The whole server side is pinned to CPU 1:
    Linux       the server program in P-svc (198.18.0.1 on P-sv0, the
                kernel's), taskset -c 1; RPS on P-sv0 sends the kernel's
                receive work for it to CPU 1.
    Slipstream  slipstreamd in P-svc on P-sv0 (AF_XDP), taskset -c 1 and
                EAL -l 1 (fast path, control thread and EAL threads all on
                CPU 1); the same server program under `slipstream run`,
                taskset -c 1; the veth's NAPI (where the kernel runs the XDP
                program and copies received frames to the AF_XDP socket) in
                a thread of its own (threaded NAPI), pinned to CPU 1.
    Both: RPS on P-p1 sends the client's kernel receive work to CPU 0.
    What is left on the wrong side: a sender's veth transmit runs on the
    sender's CPU (that is where the kernel does it, as a NIC's DMA would).

both ends  ("both"): client and server both on the stack under test.
    Linux       client in P-peer1, server in P-svc, two kernels' worth of
                namespaces over the veth; nothing pinned, no RPS: the
                scheduler places everything.
    Slipstream  two service instances, one per namespace: the server's
                service (198.18.0.1) in P-svc pinned to CPU 1, the client's
                (198.18.0.2) in P-peer1 pinned to CPU 0; the server program
                under `slipstream run` of the first, pinned to CPU 1, the
                client under `slipstream run` of the second, pinned to
                CPU 0.  Segments cross a wire between the two services, as
                between two machines, not the service's loopback path.
                The wire (--both-link):
        memif   (default) DPDK's memif PMD on both services, joined by
                shared-memory rings (copy mode, rsize=MEMIF_RSIZE: 16384
                slots each way) through a path socket in /run/slipstream
                (abstract sockets are per network namespace); the server's
                service is the memif server.  No kernel on the data path:
                each service's fast path copies its frames in and out, on
                its own CPU, and rings the other's eventfd after a burst.
        veth    the test bed's veth, AF_XDP on both ends (P-p1 has no kernel
                address), each end's NAPI thread on its service's CPU.  The
                receiving veth's 256-slot ring toward the XDP socket
                overflows when its NAPI thread waits for the CPU (~5 % of
                frames at 1024 connections).
"""

import json
import os
import re
import sys
import time
from pathlib import Path

from . import bulk
from . import procs as procmod

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from slipstream_tools import ctl, testbed  # noqa: E402

PYTHON = "/usr/bin/python3"
CLI = REPO / "tools" / "slipstream"
SERVER_IP = testbed.SERVICE_IP           # 198.18.0.1
CLIENT_IP = testbed.peer_ip(1)           # 198.18.0.2
SETUPS = ("server", "both")
STACKS = ("slipstream", "linux")
SETUP_TITLES = {"server": "server-side", "both": "both ends"}
# The wire between the two services of a Slipstream both-ends bed.
BOTH_LINKS = ("memif", "veth")
# memif rings: 2^14 slots of 2048 bytes each way (32 MiB; the PMD's default is
# 2^10, its maximum 2^14): one request or response of each of 16384
# connections fits while the receiving service is off its CPU.
MEMIF_RSIZE = 14

# Service options for the benchmarks (beyond the defaults of slipstreamd --help):
#   --max-app-conns  room for 16384 connections plus listeners in one program
#   --local-ports    1024-65535, the range Linux's client namespace gets
#                    (CLIENT_SYSCTLS): over memif the 1-RPC short-lived point
#                    opened more than the default 28,232 ports per second
#   --max-flows      131072: the short-lived points keep a 60 s TIME_WAIT on
#                    up to every one of those 64,512 ports (the default
#                    --tw-reuse takes a port back once its TIME_WAIT is 1 s
#                    old, as Linux's client with net.ipv4.tcp_tw_reuse = 1),
#                    beside 16384 open connections
# TIME_WAIT is the default 60 s, as Linux's.
SERVICE_ARGS = ["--max-app-conns", "32768", "--max-flows", "131072",
                "--local-ports", "1024-65535"]
# Connection slots and per-connection ring size of a program under
# `slipstream run` (SLIPSTREAM_CONNS, SLIPSTREAM_BUF).
APP_CONNS = 17408
APP_BUF = 65536
# Client namespace, both stacks: every port, and TIME_WAIT ports reused for
# new connections (timestamps make that safe), so short-lived connections
# do not run out.  Server namespace: room in the accept queue.
CLIENT_SYSCTLS = {"net.ipv4.ip_local_port_range": "1024 65535", "net.ipv4.tcp_tw_reuse": "1"}
SERVER_SYSCTLS = {"net.core.somaxconn": "65535", "net.ipv4.tcp_max_syn_backlog": "65535"}


# Where the kernel receives for a service's veth end (XDP program, copy into
# the AF_XDP socket): "thread" = threaded NAPI, its thread pinned to the
# service's CPU; "softirq" = the default, NAPI in softirq on whichever CPU
# sent the frame into the veth (the peer's).
# "thread-fifo" = "thread" with the NAPI thread at SCHED_FIFO priority
# NAPI_FIFO_PRIO: it preempts the programs on its CPU as soon as it is woken,
# as the receive softirq does for Linux's own server (and a NIC interrupt's
# NAPI for a service on real hardware); at normal priority it waits behind
# the fast path and the program for up to a scheduler slice.
NAPI_MODES = ("thread", "thread-fifo", "softirq")
NAPI_FIFO_PRIO = 50

# Server-side set-ups: the root qdisc of the CLIENT's veth end, both stacks.
# A veth has no qdisc (noqueue), and toward a peer with an XDP program it
# hands frames over through a 256-slot ring that only the peer's NAPI
# drains: full, it drops (the client veth's tx_dropped) and the lost
# request waits for a retransmission timer.  With a qdisc (kernel >= 6.16)
# the veth stops its queue instead (NETDEV_TX_BUSY, counted as requeues)
# and the packets wait in the qdisc, as on a NIC whose transmit ring is
# full.  The limit is above the largest number of requests in flight.
# Both-ends set-ups keep noqueue: both ends transmit through AF_XDP, which
# bypasses the qdisc, and a busy veth would make the PMD retry its send()
# in a loop.
CLIENT_QDISC = "pfifo limit 32768"
SETTLE_TIMEOUT = 5.0        # seconds to wait for a point's connections to go


class BedError(Exception):
    pass


def _sysctls(ns, values):
    for k, v in values.items():
        testbed.run(testbed.ns_cmd(ns, ["sysctl", "-q", "-w", "%s=%s" % (k, v)]))


def read_sysctl(key):
    """A sysctl of the root namespace (as text), or None."""
    try:
        return Path("/proc/sys/" + key.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def write_sysctl(key, value):
    testbed.run(["sysctl", "-q", "-w", "%s=%s" % (key, value)])


def _sh(ns, script):
    """A shell line inside ns (sysfs writes: `ip netns exec` mounts the
    namespace's own /sys)."""
    testbed.run(testbed.ns_cmd(ns, ["sh", "-c", script]))


def rps(ns, iface, cpu):
    """Receive packet steering: the kernel's receive work for iface on cpu."""
    _sh(ns, "echo %x > /sys/class/net/%s/queues/rx-0/rps_cpus" % (1 << cpu, iface))


def napi_thread_pin(ns, iface, cpu, fifo_prio=None):
    """Threaded NAPI on iface, its kernel thread(s) pinned to cpu (and with
    fifo_prio, at that SCHED_FIFO priority).  veth has NAPI only while an
    XDP program is attached, so call this once the service is up.  Returns
    the pinned threads' pids (empty: not possible)."""
    try:
        _sh(ns, "echo 1 > /sys/class/net/%s/threaded" % iface)
    except testbed.TestbedError:
        return []
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            comm = (d / "comm").read_text().strip()
        except OSError:
            continue
        # Named napi/<iface>-<napi id>, cut at 15 characters.
        if comm.startswith(("napi/%s-" % iface)[:15]):
            testbed.run(["taskset", "-p", "-c", str(cpu), d.name], check=False)
            if fifo_prio:
                testbed.run(["chrt", "-f", "-p", str(fifo_prio), d.name], check=False)
            pids.append(int(d.name))
    return pids


def sysfs_set(ns, iface, settings):
    """Writes /sys/class/net/IFACE/KEY = VALUE in ns for each of settings
    ({key: value}, e.g. napi_defer_hard_irqs, gro_flush_timeout)."""
    for k, v in settings.items():
        _sh(ns, "echo %s > /sys/class/net/%s/%s" % (v, iface, k))


def sched_policy(pid):
    """"SCHED_FIFO 50", "SCHED_OTHER 0", ... of pid, or None."""
    try:
        pol = os.sched_getscheduler(pid)
        prio = os.sched_getparam(pid).sched_priority
    except OSError:
        return None
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR",
             os.SCHED_BATCH: "SCHED_BATCH", os.SCHED_IDLE: "SCHED_IDLE"}
    return "%s %d" % (names.get(pol, str(pol)), prio)


def affinity(pid):
    """{"name[tid]": "allowed CPUs"} of every thread of pid."""
    out = {}
    try:
        tasks = sorted(Path("/proc/%d/task" % pid).iterdir(), key=lambda p: int(p.name))
    except OSError:
        return out
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    out["%s[%s]" % (name, task.name)] = line.split(":", 1)[1].strip()
        except OSError:
            pass
    return out


def memif_vdev(role, sock):
    """The EAL argument of a memif port: copy mode (zero-copy needs
    hugepages), a path socket (an abstract one is per network namespace)."""
    return ("--vdev=net_memif0,role=%s,id=0,socket=%s,socket-abstract=no,rsize=%d"
            % (role, sock, MEMIF_RSIZE))


def link_up(stats):
    """The port's link state in a `stats` reply (memif: the peer connected)."""
    return bool(stats.get("service", {}).get("port", {}).get("link_up"))


class Service:
    """One slipstreamd on one veth end of a test bed, or on a memif port."""

    def __init__(self, build, ns, iface, cidr, gateway, cpu, ctl_path, name, napi_thread=True,
                 extra_args=(), napi_fifo_prio=None, vdev_args="", memif=None):
        """memif: None (AF_XDP on iface) or (role, socket path): a memif port
        instead, which waits for its peer (start() waits for the link)."""
        self.build, self.ns, self.iface, self.cpu = Path(build), ns, iface, cpu
        self.memif = memif
        self.napi_thread = napi_thread and not memif
        self.napi_fifo_prio = napi_fifo_prio
        self.ctl_path, self.name = ctl_path, name
        eal = ["--no-huge", "--no-pci", "--no-shconf", "-l", str(cpu), memif_vdev(*memif)
               if memif else "--vdev=net_af_xdp0,iface=%s,start_queue=0,queue_count=1%s"
               % (iface, "," + vdev_args if vdev_args else "")]
        self.argv = [self.build / "src/service/slipstreamd", "--ip", cidr, "--gateway", gateway,
                     "--ctl", ctl_path] + SERVICE_ARGS + list(extra_args) + ["--"] + eal
        self.proc = None
        self.napi = []

    def start(self, procs, timeout=30.0):
        self.proc = procs.start(self.name, self.ns, self.argv, cpus=self.cpu)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise BedError("slipstreamd %s exited: %s" % (self.name, self.proc.log_tail()))
            try:
                ctl.ctl_query("stats", self.ctl_path, timeout=2.0)
                break
            except ctl.CtlError:
                time.sleep(0.2)
        else:
            raise BedError("slipstreamd %s not answering after %.0f s: %s"
                           % (self.name, timeout, self.proc.log_tail()))
        if self.napi_thread:
            self.napi = napi_thread_pin(self.ns, self.iface, self.cpu, self.napi_fifo_prio)
        return self

    def wait_link(self, timeout=10.0):
        """Until the port's link is up (memif: the peer connected)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if link_up(self.stats()):
                return
            if not self.proc.alive():
                raise BedError("slipstreamd %s exited: %s" % (self.name, self.proc.log_tail()))
            time.sleep(0.1)
        raise BedError("slipstreamd %s: link not up after %.0f s: %s"
                       % (self.name, timeout, self.proc.log_tail()))

    def stats(self):
        try:
            return ctl.ctl_query("stats", self.ctl_path, timeout=5.0)
        except ctl.CtlError as e:
            return {"error": str(e)}

    def counters(self):
        """The counters, with the port's own ("nic") as nic_*."""
        st = self.stats()
        c = dict(st.get("counters", {}))
        c.update({"nic_" + k: v for k, v in st.get("nic", {}).items()})
        return c


class Bed:
    """One stack in one set-up: a test bed, the service(s) if Slipstream,
    and how to start the server and the client."""

    def __init__(self, stack, setup, prefix, build, ctl_dir="/run/slipstream", napi="thread",
                 service_args=(), veth_sysfs=None, client_qdisc=CLIENT_QDISC, vdev_args="",
                 both_link="memif"):
        assert stack in STACKS and setup in SETUPS and napi in NAPI_MODES
        assert both_link in BOTH_LINKS
        self.stack, self.setup, self.build = stack, setup, Path(build)
        self.napi = napi
        self.service_args = list(service_args)   # --service-args: beyond SERVICE_ARGS
        self.veth_sysfs = dict(veth_sysfs or {})  # --veth-sysfs: a service's veth end
        # --client-qdisc: root qdisc of the client's veth end (server-side only)
        self.qdisc = client_qdisc if setup == "server" and client_qdisc else None
        self.vdev_args = vdev_args                # --vdev-args: the AF_XDP PMD's devargs
        self.tb = testbed.Testbed(prefix=prefix, peers=1)
        # --both-link: what joins the two services of Slipstream both ends
        # (None elsewhere: the veth, with the kernel or AF_XDP on it).
        self.link = both_link if stack == "slipstream" and setup == "both" else None
        self.memif_sock = ("%s/%s-memif.sock" % (ctl_dir, prefix)
                           if self.link == "memif" else None)
        self.server_ns, self.client_ns = self.tb.svc_ns, testbed.peer_ns_name(prefix, 1)
        self.server_iface, self.client_iface = self.tb.svc_iface, testbed.peer_iface_name(prefix, 1)
        self.services = []          # [server's, client's (both ends only)]
        self.echo = None            # the echo server's Proc, once started
        self.ctl_dir = ctl_dir
        self.pinned = setup == "server" or stack == "slipstream"
        # CPUs: server side on 1, client on 0, where pinned; None floats.
        self.server_cpu = 1 if self.pinned else None
        self.client_cpu = 0 if self.pinned else None

    @property
    def name(self):
        return "%s/%s" % (self.stack, self.setup)

    @property
    def server_ip(self):
        return SERVER_IP

    # -- life cycle

    def up(self, procs):
        self.tb.up()
        if self.qdisc:
            testbed.run(["tc", "-n", self.client_ns, "qdisc", "replace", "dev", self.client_iface,
                         "root"] + self.qdisc.split())
        _sysctls(self.client_ns, CLIENT_SYSCTLS)
        _sysctls(self.server_ns, SERVER_SYSCTLS)
        if self.stack == "linux":
            testbed.run(["ip", "-n", self.server_ns, "addr", "add",
                         "%s/%d" % (SERVER_IP, testbed.PREFIX_LEN), "dev", self.server_iface])
            if self.setup == "server":
                rps(self.server_ns, self.server_iface, self.server_cpu)
                rps(self.client_ns, self.client_iface, self.client_cpu)
            return self
        os.makedirs(self.ctl_dir, exist_ok=True)
        self._remove_memif_sock()
        svc = Service(self.build, self.server_ns, self.server_iface, self.tb.service_cidr,
                      CLIENT_IP, self.server_cpu, "%s/%s-a.sock" % (self.ctl_dir, self.tb.prefix),
                      "%s-slipstreamd-server" % self.setup, self.napi != "softirq",
                      self.service_args, self._napi_fifo_prio(), self.vdev_args,
                      memif=("server", self.memif_sock) if self.memif_sock else None)
        self.services.append(svc.start(procs))
        if not svc.memif:
            sysfs_set(self.server_ns, self.server_iface, self.veth_sysfs)
        if self.setup == "server":
            rps(self.client_ns, self.client_iface, self.client_cpu)
            return self
        # Both ends: the client's own service on the other veth end, which
        # the kernel must leave alone (no address).
        testbed.run(["ip", "-n", self.client_ns, "addr", "flush", "dev", self.client_iface])
        cli = Service(self.build, self.client_ns, self.client_iface,
                      "%s/%d" % (CLIENT_IP, testbed.PREFIX_LEN), SERVER_IP, self.client_cpu,
                      "%s/%s-b.sock" % (self.ctl_dir, self.tb.prefix),
                      "%s-slipstreamd-client" % self.setup, self.napi != "softirq",
                      self.service_args, self._napi_fifo_prio(), self.vdev_args,
                      memif=("client", self.memif_sock) if self.memif_sock else None)
        self.services.append(cli.start(procs))
        if cli.memif:
            svc.wait_link()
            cli.wait_link()
        else:
            sysfs_set(self.client_ns, self.client_iface, self.veth_sysfs)
        return self

    def down(self):
        self.tb.down()
        self._remove_memif_sock()

    def _remove_memif_sock(self):
        """The memif socket, by name (its server removes it when it exits
        cleanly; a killed one leaves it)."""
        if self.memif_sock:
            try:
                os.unlink(self.memif_sock)
            except FileNotFoundError:
                pass

    # -- programs

    def _under_slipstream(self, svc, argv):
        return [PYTHON, CLI, "run", "--strict", "--sock", svc.ctl_path, "--conns", APP_CONNS,
                "--buf", APP_BUF, "--"] + list(argv)

    def env(self):
        return dict(os.environ, SLIPSTREAM_BUILD=str(self.build))

    def start_server(self, procs, name, argv):
        """A server program on the server side of this bed."""
        if self.stack == "slipstream":
            argv = self._under_slipstream(self.services[0], argv)
        return procs.start(name, self.server_ns, argv, cpus=self.server_cpu, env=self.env())

    def client_argv(self, argv):
        """(namespace, argv, cpus, env) for a client program."""
        if self.stack == "slipstream" and self.setup == "both":
            argv = self._under_slipstream(self.services[1], argv)
        return self.client_ns, argv, self.client_cpu, self.env()

    def counters(self):
        """{service name: counters} (Slipstream), for deltas around a run."""
        return {s.name: s.counters() for s in self.services}

    def listeners(self):
        """Listening ports of the server side's service (Slipstream), else 0."""
        if self.stack != "slipstream":
            return 0
        return self.services[0].stats().get("gauges", {}).get("listeners", 0)

    def wait_listening(self, port, proc, listeners, timeout=15.0):
        """Until the server side listens on port (False: proc died or time
        ran out).  Asked of the server namespace's kernel (Linux) or of the
        service (Slipstream: until it has `listeners` listening ports; it
        names no ports), not by connecting: a connection would be one more
        for the first point, and the both-ends client namespace has no
        kernel stack."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not proc.alive():
                return False
            if self.stack == "slipstream":
                if self.listeners() >= listeners:
                    return True
            else:
                r = testbed.run(testbed.ns_cmd(self.server_ns, [
                    "ss", "-Htln", "sport = :%d" % port]), check=False)
                if r.stdout.strip():
                    return True
            time.sleep(0.1)
        return False

    # -- between points

    def busy_conns(self):
        """Connections still open on the server side (listeners and
        TIME_WAIT left out): what a finished point leaves to drain."""
        if self.stack == "slipstream":
            st = self.services[0].stats()
            return st.get("gauges", {}).get("app_conns", 0)
        r = testbed.run(testbed.ns_cmd(self.server_ns, ["ss", "-Htan"]), check=False)
        return sum(1 for line in r.stdout.splitlines()
                   if line.split() and line.split()[0] not in ("LISTEN", "TIME-WAIT"))

    def settle(self, timeout=SETTLE_TIMEOUT, stall=1.0):
        """Wait until the last point's connections are gone, so the next
        point starts from an idle server: until none is left, none has gone
        for `stall` s (an idle connection whose peer's reset was lost stays
        open for good), or timeout s.  Returns how many are still open."""
        t0 = time.monotonic()
        last, since = None, t0
        while True:
            left = self.busy_conns()
            now = time.monotonic()
            if left != last:
                last, since = left, now
            if not left or now - since >= stall or now - t0 >= timeout:
                return left
            time.sleep(0.1)

    def link_stats(self):
        """{"server veth": {rx_dropped, tx_dropped, rx_packets, tx_packets},
        "client veth": {...}}: where the kernel dropped frames (a full veth
        ring toward an XDP program, a full backlog) shows here."""
        out = {}
        for side, ns, iface in (("server veth", self.server_ns, self.server_iface),
                                ("client veth", self.client_ns, self.client_iface)):
            r = testbed.run(["ip", "-s", "-j", "-n", ns, "link", "show", "dev", iface],
                            check=False)
            try:
                st = json.loads(r.stdout)[0]["stats64"]
            except (ValueError, IndexError, KeyError):
                continue
            out[side] = {"%s_%s" % (d, k): st[d][k] for d in ("rx", "tx")
                         for k in ("packets", "dropped")}
            if self.qdisc:
                # Its drops, and requeues: packets the veth handed back
                # (NETDEV_TX_BUSY) because its peer's ring was full.
                try:
                    q = testbed.qdisc_root_stats(ns, iface)
                    out[side].update({"qdisc_drops": q["drops"], "qdisc_requeues": q["requeues"]})
                except testbed.TestbedError:
                    pass
        return out

    # -- bulk flows: kernel TCP counters, loss

    def kernel_tcp(self):
        """{"server": {(section, name): n}, "client": {...}}: the Linux TCP
        counters of each namespace (/proc/net/snmp and /proc/net/netstat
        read inside it; a namespace whose TCP runs on a service has ~0)."""
        out = {}
        for side, ns in (("server", self.server_ns), ("client", self.client_ns)):
            r = testbed.run(testbed.ns_cmd(ns, ["cat", "/proc/net/snmp", "/proc/net/netstat"]),
                            check=False)
            out[side] = bulk.parse_snmp(r.stdout)
        return out

    def loss_on(self, sport, loss_pct):
        """Random loss of the data segments the server side sends from
        port sport, in the client's namespace (bulk.loss_script).  The
        table is named after the bed's prefix; loss_off() removes it."""
        self.loss_off()
        testbed.run(testbed.ns_cmd(self.client_ns, ["nft", "-f", "-"]),
                    input=bulk.loss_script(self.tb.prefix, SERVER_IP, sport, loss_pct))

    def loss_counters(self):
        r = testbed.run(testbed.ns_cmd(self.client_ns, [
            "nft", "-j", "list", "table", "ip", bulk.loss_table(self.tb.prefix)]), check=False)
        return bulk.parse_loss_counters(r.stdout) if r.returncode == 0 else None

    def loss_off(self):
        testbed.run(testbed.ns_cmd(self.client_ns, [
            "nft", "delete", "table", "ip", bulk.loss_table(self.tb.prefix)]), check=False)

    # -- the record

    def layout(self):
        """The thread/core layout of this stack in this set-up, in words."""
        if self.setup == "server":
            client = "client: Linux (linux_rpc, pipe_client or kv_load: one thread) in the client " \
                     "namespace, pinned to CPU 0, its kernel receive work on CPU 0 (RPS)"
            if self.qdisc:
                client += ", its veth end with a %s qdisc" % self.qdisc
            if self.stack == "linux":
                return ("%s; server: the program (one thread; memcached -t 1: one worker "
                        "thread and its mostly idle helper threads) pinned to CPU 1 and its "
                        "kernel receive work on CPU 1 (RPS on the server veth)" % client)
            return ("%s; server: slipstreamd pinned to CPU 1 (taskset -c 1, EAL -l 1: fast "
                    "path = main lcore, control thread and EAL threads on CPU 1), %s, the "
                    "program under `slipstream run` (one thread; memcached -t 1: one worker "
                    "thread and its mostly idle helper threads) pinned to CPU 1"
                    % (client, self._napi_words("CPU 1")))
        if self.stack == "linux":
            return ("client and server programs (one thread each) in two namespaces over the "
                    "veth, nothing pinned, no RPS: the scheduler places programs and softirq")
        if self.link == "memif":
            return ("two slipstreamd instances in the two namespaces, joined by memif (DPDK's "
                    "memif PMD on both, copy mode, %d-slot rings each way, path socket %s; the "
                    "server's service is the memif server; the veth is unused): the server's "
                    "pinned to CPU 1 (taskset -c 1, EAL -l 1) with the server program under "
                    "`slipstream run` on CPU 1, the client's pinned to CPU 0 (EAL -l 0) with "
                    "the client under `slipstream run` on CPU 0; no kernel on the data path "
                    "(each fast path copies its frames through the shared rings and rings "
                    "the other's eventfd)" % (1 << MEMIF_RSIZE, self.memif_sock))
        return ("two slipstreamd instances, one per veth end (AF_XDP): the server's pinned to "
                "CPU 1 (taskset -c 1, EAL -l 1) with the server program under `slipstream run` "
                "on CPU 1, the client's pinned to CPU 0 (EAL -l 0) with the client under "
                "`slipstream run` on CPU 0; for each veth end, %s"
                % self._napi_words("its service's CPU"))

    def link_name(self):
        """What joins client and server: "memif" or "veth"."""
        return self.link or "veth"

    def _napi_fifo_prio(self):
        return NAPI_FIFO_PRIO if self.napi == "thread-fifo" else None

    def _napi_words(self, where):
        if self.napi == "thread":
            return ("the veth's NAPI (XDP program + AF_XDP receive copy) as a thread pinned "
                    "to %s (threaded NAPI)" % where)
        if self.napi == "thread-fifo":
            return ("the veth's NAPI (XDP program + AF_XDP receive copy) as a thread pinned "
                    "to %s at SCHED_FIFO %d (threaded NAPI that preempts the programs on its "
                    "CPU, as a receive softirq does)" % (where, NAPI_FIFO_PRIO))
        return ("the veth's NAPI (XDP program + AF_XDP receive copy) in softirq on the CPU "
                "that sent the frame (the peer's)")

    def record(self, servers=()):
        """Facts for the JSON: layout, settings, every thread's CPUs."""
        threads = {}
        for s in self.services:
            if s.proc:
                threads[s.name] = affinity(s.proc.pid)
                threads[s.name + " napi threads"] = {
                    str(p): dict(affinity(p), sched=sched_policy(p)) for p in s.napi}
        for p in servers:
            threads[p.name] = affinity(p.pid)
        return {"layout": self.layout(), "prefix": self.tb.prefix, "link": self.link_name(),
                "server_cpu": self.server_cpu, "client_cpu": self.client_cpu,
                "napi": self.napi if self.stack == "slipstream" and self.link != "memif" else None,
                "service_args": SERVICE_ARGS + self.service_args
                if self.stack == "slipstream" else None,
                "service_argv": [" ".join(str(a) for a in s.argv) for s in self.services],
                "veth_sysfs": self.veth_sysfs if self.stack == "slipstream" else None,
                "client_qdisc": self.qdisc,
                "app_conns": APP_CONNS if self.stack == "slipstream" else None,
                "app_buf": APP_BUF if self.stack == "slipstream" else None,
                "client_sysctls": CLIENT_SYSCTLS, "server_sysctls": SERVER_SYSCTLS,
                "threads": threads}
