"""Network-namespace test bed: the service's veth, Linux peers, an optional switch.

Topology for prefix P (every name derives from P, so `down` can find it all):

  without a switch (one peer):

      [P-svc]  P-sv0 <==veth==> P-p1  [P-peer1] 198.18.0.2/24

  with a switch (forced when there is more than one peer):

      [P-svc]  P-sv0 <==veth==> P-s0 \\
                                      P-br (bridge) [P-sw]
      [P-peerI] P-pI <==veth==> P-sI /              I = 1..N, 198.18.0.(1+I)/24

The service owns 198.18.0.1/24 through DPDK (AF_XDP or AF_PACKET PMD on P-sv0);
the kernel has no address on P-sv0.  Every veth is single-queue because an
AF_XDP socket bound to queue 0 never sees packets steered to another queue.
IPv6 is disabled in every namespace before any link exists, so no ND/MLD frame
reaches the service.

Impairments (all optional):
  loss     nftables `numgen random mod 1000 < N drop` on IPv4, in the switch's
           bridge forward chain, else in peer1's input and output chains.
  ecn_all  nftables `ip ecn set ce` on every ECT packet, same places.
  rate     TBF with a pfifo child (limit in packets) on the switch port toward
           the service, else on peer1's veth: shapes peers -> service.
  reorder  PCT: in the switch (forced), nftables `numgen random mod 1000 < N`
           sets skb->priority 1:2 on that share of IPv4 packets; every switch
           port has an HTB root qdisc (default 0: unclassified packets take
           the direct queue, which is always served first) whose one class
           1:2 is slow (REORDER_RATE, pfifo of REORDER_QUEUE packets).  A
           picked packet waits there while later ones pass through the direct
           queue, so it arrives late: reordering in both directions (data and
           ACKs).  The kernel here has neither netem nor prio; HTB picks the
           class straight from skb->priority.  When the slow class overflows
           it drops, so heavy reordering also means some loss.  Exclusive
           with `rate` (both want the root qdisc of the port toward the service).
  ecn_mark_above
           needs `rate`: marks ECT packets toward the service once a virtual
           queue, served at the link rate, holds more than BYTES.  nftables
           cannot read the real qdisc backlog, so this is the stand-in: an nft
           `limit` token bucket at the link rate whose depth is BYTES, counted
           in MTU-sized (1514-byte) frames: the packet mode is the one whose
           depth nftables honours exactly (in byte mode the kernel adds one
           second of traffic to the burst).  Exact for full-size data
           segments; small packets are marked early.  Marked packets take no
           tokens, so the virtual queue drains a little faster than the real.
"""

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

SUBNET = "198.18.0."
PREFIX_LEN = 24
SERVICE_IP = SUBNET + "1"
MAX_PREFIX_LEN = 10          # "<prefix>-sNN" must fit IFNAMSIZ-1 = 15
MAX_PEERS = 64
CMD_TIMEOUT = 30             # seconds for one ip/nft/tc/ethtool call
KILL_GRACE = 5.0             # seconds between SIGTERM and SIGKILL in down()
PMDS = ("af_xdp", "af_packet")
MTU_FRAME = 1514             # bytes of a full-size Ethernet frame (no FCS)
REORDER_RATE = "20mbit"      # the slow class for `reorder`: 0.6 ms per full frame
REORDER_QUEUE = 32           # its pfifo limit in packets (at most ~20 ms late)
REORDER_CLASS = "1:2"        # HTB class picked through skb->priority

_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,%d}$" % (MAX_PREFIX_LEN - 1))


class TestbedError(Exception):
    """A test-bed command failed; str(err) says which and why."""


@dataclass(frozen=True)
class Peer:
    """One Linux peer: its namespace, veth, address and MAC."""
    index: int
    ns: str
    iface: str
    ip: str
    cidr: str
    mac: str

    def as_dict(self):
        return {"index": self.index, "ns": self.ns, "iface": self.iface,
                "ip": self.ip, "cidr": self.cidr, "mac": self.mac}


def prefix_check(prefix):
    """Raise TestbedError unless prefix is [a-z][a-z0-9]* of at most 10 chars."""
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix):
        raise TestbedError(
            "bad prefix %r: want a lowercase letter then letters/digits, at "
            "most %d characters (interface names are limited to 15)"
            % (prefix, MAX_PREFIX_LEN))
    return prefix


# ---- names --------------------------------------------------------------

def svc_ns_name(prefix):
    return prefix + "-svc"


def sw_ns_name(prefix):
    return prefix + "-sw"


def peer_ns_name(prefix, i):
    return "%s-peer%d" % (prefix, i)


def svc_iface_name(prefix):
    return prefix + "-sv0"


def peer_iface_name(prefix, i):
    return "%s-p%d" % (prefix, i)


def sw_port_name(prefix, i):
    """Switch port toward the service (i = 0) or toward peer i."""
    return "%s-s%d" % (prefix, i)


def bridge_name(prefix):
    return prefix + "-br"


def nft_table_name(prefix):
    return prefix + "_testbed"


def peer_ip(i):
    return "%s%d" % (SUBNET, 1 + i)


def _ns_re(prefix):
    return re.compile(r"^%s-(svc|sw|peer[0-9]+)$" % re.escape(prefix))


def _link_re(prefix):
    return re.compile(r"^%s-(sv0|br|p[0-9]+|s[0-9]+)$" % re.escape(prefix))


def dpdk_args(prefix, pmd="af_xdp"):
    """EAL arguments that attach the service to <prefix>-sv0 (no -l/-c).

    --no-shconf, not --in-memory: DPDK 22.11 takes --no-huge as legacy memory
    mode and refuses it together with --in-memory ("Option --legacy-mem is not
    compatible with --in-memory").  --no-shconf gives what matters here: no
    shared config files, so several services can run side by side.
    """
    iface = svc_iface_name(prefix)
    common = ["--no-huge", "--no-pci", "--no-shconf"]
    if pmd == "af_xdp":
        return common + ["--vdev=net_af_xdp0,iface=%s,start_queue=0,"
                         "queue_count=1" % iface]
    if pmd == "af_packet":
        return common + ["--vdev=net_af_packet0,iface=%s,qpairs=1" % iface]
    raise TestbedError("unknown PMD %r (want one of %s)" % (pmd, ", ".join(PMDS)))


# ---- running commands ---------------------------------------------------

def run(argv, check=True, timeout=CMD_TIMEOUT, input=None):
    """Run a command, capture its output; TestbedError on failure or timeout."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True,
                             timeout=timeout, input=input)
    except subprocess.TimeoutExpired:
        raise TestbedError("timed out after %ss: %s" % (timeout, " ".join(argv))) from None
    except FileNotFoundError:
        raise TestbedError("command not found: %s" % argv[0]) from None
    if check and res.returncode != 0:
        raise TestbedError("command failed (exit %d): %s\n%s" % (
            res.returncode, " ".join(argv), (res.stderr or res.stdout).strip()))
    return res


def ns_cmd(ns, argv):
    """argv wrapped to run inside namespace ns."""
    return ["ip", "netns", "exec", ns] + list(argv)


def netns_list():
    """Names of all named network namespaces."""
    res = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def links_list(ns=None):
    """Interface names in ns (None: the root namespace)."""
    argv = ["ip", "-o", "link", "show"] if ns is None else \
        ["ip", "-n", ns, "-o", "link", "show"]
    res = run(argv, check=False)
    names = []
    for line in res.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@")[0])
    return names


def link_info(ns, iface):
    """`ip -j link show` of one interface as a dict, or None if it does not exist."""
    argv = ["ip", "-j"] + (["-n", ns] if ns else []) + ["link", "show", "dev", iface]
    res = run(argv, check=False)
    if res.returncode != 0:
        return None
    try:
        info = json.loads(res.stdout)
    except ValueError:
        return None
    return info[0] if info else None


def link_xdp(ns, iface):
    """The `xdp` object of `ip -d link` (attached program), or None."""
    res = run(["ip", "-j", "-d", "-n", ns, "link", "show", "dev", iface], check=False)
    try:
        return json.loads(res.stdout)[0].get("xdp")
    except (ValueError, IndexError):
        return None


def link_mac(ns, iface):
    info = link_info(ns, iface)
    return info.get("address") if info else None


def link_ipv4(ns, iface):
    """First IPv4 address of an interface as 'a.b.c.d/len', or None."""
    res = run(["ip", "-j", "-n", ns, "-4", "addr", "show", "dev", iface], check=False)
    try:
        for entry in json.loads(res.stdout or "[]"):
            for a in entry.get("addr_info", []):
                if a.get("family") == "inet":
                    return "%s/%s" % (a["local"], a["prefixlen"])
    except ValueError:
        pass
    return None


def nft_tables(ns=None):
    """[(family, name)] of the nftables tables in ns."""
    argv = ["nft", "-j", "list", "tables"]
    res = run(argv if ns is None else ns_cmd(ns, argv), check=False)
    try:
        doc = json.loads(res.stdout or "{}")
    except ValueError:
        return []
    return [(t["table"]["family"], t["table"]["name"])
            for t in doc.get("nftables", []) if "table" in t]


def ethtool_features(ns, iface):
    """`ethtool -k` as {feature: (on: bool, fixed: bool)}."""
    res = run(ns_cmd(ns, ["ethtool", "-k", iface]))
    feats = {}
    for line in res.stdout.splitlines()[1:]:
        m = re.match(r"^\s*([\w-]+):\s+(on|off)(\s+\[fixed\])?", line)
        if m:
            feats[m.group(1)] = (m.group(2) == "on", bool(m.group(3)))
    return feats


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone (its parent reaps it).
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _ns_pids(ns):
    res = run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in res.stdout.split() if p.isdigit()]


# ---- down / status (work from names alone) ------------------------------

def down(prefix, kill=True, grace=KILL_GRACE):
    """Remove everything named after prefix: namespaces (after deleting their
    links and, with kill, ending the processes inside them), leftover links in
    the root namespace, and a root-namespace nft table of our name.

    Idempotent; works after a partial or failed up().  Returns a list of what
    it removed.  Raises TestbedError if something with our names survives.
    """
    prefix_check(prefix)
    removed = []
    ns_re, link_re = _ns_re(prefix), _link_re(prefix)
    namespaces = sorted(n for n in netns_list() if ns_re.match(n))

    # Links first: deleting one veth end deletes the other, so even a
    # namespace kept alive by a lingering process holds nothing of ours.
    for ns in namespaces:
        for link in links_list(ns):
            if link_re.match(link) and \
                    run(["ip", "-n", ns, "link", "del", "dev", link],
                        check=False).returncode == 0:
                removed.append("link %s/%s" % (ns, link))

    if kill:
        pids = {p for ns in namespaces for p in _ns_pids(ns)} - {os.getpid()}
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
            live = [p for p in pids if _pid_alive(p)]
            if not live:
                break
            for p in live:
                try:
                    os.kill(p, sig)
                    removed.append("process %d (%s)" % (p, sig.name))
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(_pid_alive(p) for p in live):
                time.sleep(0.05)

    for ns in namespaces:
        if run(["ip", "netns", "del", ns], check=False).returncode == 0:
            removed.append("netns %s" % ns)

    for link in links_list(None):
        if link_re.match(link) and \
                run(["ip", "link", "del", "dev", link], check=False).returncode == 0:
            removed.append("link %s (root namespace)" % link)

    for family, name in nft_tables(None):
        if name == nft_table_name(prefix) and \
                run(["nft", "delete", "table", family, name], check=False).returncode == 0:
            removed.append("nft table %s %s (root namespace)" % (family, name))

    left = leftovers(prefix)
    if left:
        raise TestbedError("testbed down %s: still present: %s" % (prefix, ", ".join(left)))
    return removed


def leftovers(prefix):
    """Everything named after prefix that still exists (namespaces, root links)."""
    ns_re, link_re = _ns_re(prefix), _link_re(prefix)
    left = ["netns " + n for n in netns_list() if ns_re.match(n)]
    left += ["link " + l for l in links_list(None) if link_re.match(l)]
    left += ["nft table %s %s" % t for t in nft_tables(None)
             if t[1] == nft_table_name(prefix)]
    return left


def status(prefix, pmd="af_xdp"):
    """Discover the test bed named prefix; returns a JSON-able dict.

    "state" is "up" (service namespace, its veth and peer1 present), "down"
    (nothing of ours) or "partial".
    """
    prefix_check(prefix)
    ns_re, link_re = _ns_re(prefix), _link_re(prefix)
    namespaces = sorted(n for n in netns_list() if ns_re.match(n))
    svc_ns, sw_ns = svc_ns_name(prefix), sw_ns_name(prefix)
    out = {"prefix": prefix, "namespaces": namespaces,
           "root_links": [l for l in links_list(None) if link_re.match(l)],
           "service": None, "switch": None, "peers": [], "nft_tables": {},
           "qdiscs": {}}

    if svc_ns in namespaces:
        iface = svc_iface_name(prefix)
        mac = link_mac(svc_ns, iface)
        out["service"] = {
            "ns": svc_ns, "iface": iface if mac else None,
            "ip": SERVICE_IP, "cidr": "%s/%d" % (SERVICE_IP, PREFIX_LEN),
            "gateway": peer_ip(1), "mac": mac,
            "pmd": pmd, "dpdk_args": dpdk_args(prefix, pmd)}

    peer_re = re.compile(r"^%s-peer([0-9]+)$" % re.escape(prefix))
    for ns in namespaces:
        m = peer_re.match(ns)
        if not m:
            continue
        i = int(m.group(1))
        iface = peer_iface_name(prefix, i)
        cidr = link_ipv4(ns, iface)
        out["peers"].append({
            "index": i, "ns": ns, "iface": iface if link_info(ns, iface) else None,
            "ip": cidr.split("/")[0] if cidr else None, "cidr": cidr,
            "mac": link_mac(ns, iface)})
    out["peers"].sort(key=lambda p: p["index"])

    if sw_ns in namespaces:
        links = links_list(sw_ns)
        out["switch"] = {"ns": sw_ns,
                         "bridge": bridge_name(prefix) if bridge_name(prefix) in links else None,
                         "ports": sorted((l for l in links if re.match(
                             r"^%s-s[0-9]+$" % re.escape(prefix), l)),
                             key=lambda l: int(l.rsplit("-s", 1)[1]))}

    for ns in namespaces:
        tables = ["%s %s" % t for t in nft_tables(ns)]
        if tables:
            out["nft_tables"][ns] = tables
        for link in links_list(ns):
            if not link_re.match(link):
                continue
            res = run(["tc", "-j", "-n", ns, "qdisc", "show", "dev", link], check=False)
            try:
                kinds = [q["kind"] for q in json.loads(res.stdout or "[]")]
            except ValueError:
                kinds = []
            if any(k in ("tbf", "htb") for k in kinds):
                out["qdiscs"]["%s/%s" % (ns, link)] = kinds

    svc_ok = out["service"] is not None and out["service"]["iface"] is not None
    peer1 = [p for p in out["peers"] if p["index"] == 1 and p["iface"]]
    if svc_ok and peer1:
        out["state"] = "up"
    elif not namespaces and not out["root_links"]:
        out["state"] = "down"
    else:
        out["state"] = "partial"
    return out


# ---- the test bed -------------------------------------------------------

def _permille(what, pct):
    """Percent (0.1 granularity) as an integer per mille, or None."""
    if pct is None:
        return None
    try:
        pct = float(pct)
    except (TypeError, ValueError):
        raise TestbedError("%s must be a percentage, not %r" % (what, pct)) from None
    permille = int(round(pct * 10))
    if not 0 < pct <= 100 or permille == 0:
        raise TestbedError("%s must be in (0, 100] percent with 0.1 "
                           "granularity, not %r" % (what, pct))
    return permille


class Testbed:
    """A test bed for one prefix.  up() builds it (after a down() of the same
    prefix), down() removes it; as a context manager it does both.

    Parameters: peers (1..64), switch (forced when peers > 1), loss (percent,
    0.1 granularity, IPv4 only), ecn_all, ecn_mark_above (bytes, needs rate),
    rate (Mbit/s), queue (pfifo limit in packets for rate), reorder
    (percent of IPv4 packets delayed in the switch, 0.1 granularity; forces
    switch, exclusive with rate).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, prefix="ss", peers=1, switch=False, loss=None,
                 ecn_all=False, ecn_mark_above=None, rate=None, queue=100,
                 reorder=None):
        self.prefix = prefix_check(prefix)
        if not isinstance(peers, int) or not 1 <= peers <= MAX_PEERS:
            raise TestbedError("peers must be 1..%d, not %r" % (MAX_PEERS, peers))
        self.npeers = peers
        self.loss_permille = _permille("loss", loss)
        self.reorder_permille = _permille("reorder", reorder)
        if self.reorder_permille and rate is not None:
            raise TestbedError("reorder and rate are exclusive (both shape the "
                               "switch port toward the service)")
        self.switch = bool(switch) or peers > 1 or bool(self.reorder_permille)
        if ecn_all and ecn_mark_above is not None:
            raise TestbedError("ecn_all and ecn_mark_above are exclusive")
        if ecn_mark_above is not None:
            ecn_mark_above = int(ecn_mark_above)
            if ecn_mark_above < 1:
                raise TestbedError("ecn_mark_above must be a positive byte count")
            if rate is None:
                raise TestbedError("ecn_mark_above needs rate: the mark threshold is "
                                   "a virtual queue served at the link rate")
        if rate is not None:
            rate = float(rate)
            if not 0 < rate <= 100000:
                raise TestbedError("rate must be in (0, 100000] Mbit/s, not %r" % rate)
        if not isinstance(queue, int) or not 1 <= queue <= 100000:
            raise TestbedError("queue must be 1..100000 packets, not %r" % queue)
        self.ecn_all = bool(ecn_all)
        self.ecn_mark_above = ecn_mark_above
        self.rate = rate
        self.queue = queue
        self._macs = {}

    # -- names and addresses

    @property
    def svc_ns(self):
        return svc_ns_name(self.prefix)

    @property
    def svc_iface(self):
        return svc_iface_name(self.prefix)

    @property
    def sw_ns(self):
        return sw_ns_name(self.prefix) if self.switch else None

    @property
    def service_ip(self):
        return SERVICE_IP

    @property
    def service_cidr(self):
        return "%s/%d" % (SERVICE_IP, PREFIX_LEN)

    @property
    def gateway(self):
        return peer_ip(1)

    @property
    def svc_mac(self):
        """MAC of the service's veth (the kernel's view; DPDK normally uses it)."""
        return link_mac(self.svc_ns, self.svc_iface)

    @property
    def namespaces(self):
        names = [self.svc_ns] + [peer_ns_name(self.prefix, i)
                                 for i in range(1, self.npeers + 1)]
        return names + ([self.sw_ns] if self.switch else [])

    def peer(self, i=1):
        """Peer i (1-based) with its namespace, interface, IP and MAC."""
        if not 1 <= i <= self.npeers:
            raise IndexError("peer %d out of 1..%d" % (i, self.npeers))
        ns, iface = peer_ns_name(self.prefix, i), peer_iface_name(self.prefix, i)
        mac = self._macs.get(i) or link_mac(ns, iface)
        if mac:
            self._macs[i] = mac
        return Peer(i, ns, iface, peer_ip(i), "%s/%d" % (peer_ip(i), PREFIX_LEN), mac)

    def peers(self):
        return [self.peer(i) for i in range(1, self.npeers + 1)]

    def dpdk_args(self, pmd="af_xdp"):
        return dpdk_args(self.prefix, pmd)

    # -- running things in namespaces

    def ns_exec(self, ns, argv, **kw):
        """subprocess.run(argv) inside ns; defaults: capture_output, text,
        timeout 60 s, no check (pass check=True for CalledProcessError)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 60)
        return subprocess.run(ns_cmd(ns, argv), **kw)

    def ns_popen(self, ns, argv, **kw):
        """subprocess.Popen(argv) inside ns.  `ip netns exec` execs the
        command in place, so the Popen's pid is the command's pid."""
        return subprocess.Popen(ns_cmd(ns, argv), **kw)

    def xdp_detach(self):
        """Detach any XDP program (native or generic) from the service's veth.
        A stale one (e.g. left by a service that was SIGKILLed with the AF_XDP
        PMD) would steal or drop the next service's packets."""
        for mode in ("xdp", "xdpgeneric"):
            run(["ip", "-n", self.svc_ns, "link", "set", "dev", self.svc_iface,
                 mode, "off"], check=False)
        return link_xdp(self.svc_ns, self.svc_iface)

    # -- building and tearing down

    def up(self):
        """Build the test bed (after removing any of the same prefix).  On
        failure everything is removed again and TestbedError is raised."""
        down(self.prefix)
        self._macs = {}
        try:
            self._build()
        except BaseException:
            try:
                down(self.prefix)
            except TestbedError:
                pass
            raise
        return self

    def down(self):
        return down(self.prefix)

    def status(self, pmd="af_xdp"):
        return status(self.prefix, pmd)

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()
        return False

    def _ns_add(self, ns):
        run(["ip", "netns", "add", ns])
        # Before any link exists, so no interface ever gets an IPv6 address.
        run(ns_cmd(ns, ["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"]))
        run(["ip", "-n", ns, "link", "set", "dev", "lo", "up"])

    @staticmethod
    def _veth_add(ns_a, name_a, ns_b, name_b):
        run(["ip", "link", "add", name_a, "netns", ns_a,
             "numtxqueues", "1", "numrxqueues", "1", "type", "veth",
             "peer", "name", name_b, "netns", ns_b,
             "numtxqueues", "1", "numrxqueues", "1"])

    @staticmethod
    def _offloads_off(ns, iface):
        run(ns_cmd(ns, ["ethtool", "-K", iface, "tx", "off", "tso", "off",
                        "gso", "off", "gro", "off"]))

    def _build(self):
        p = self.prefix
        for ns in self.namespaces:
            self._ns_add(ns)
        svc, sv0 = self.svc_ns, self.svc_iface
        kernel_side = []          # (ns, iface) facing the service: offloads off
        if self.switch:
            sw, br = self.sw_ns, bridge_name(p)
            run(["ip", "-n", sw, "link", "add", br, "type", "bridge",
                 "stp_state", "0", "mcast_snooping", "0"])
            self._veth_add(svc, sv0, sw, sw_port_name(p, 0))
            ports = [sw_port_name(p, 0)]
            for i in range(1, self.npeers + 1):
                self._veth_add(peer_ns_name(p, i), peer_iface_name(p, i),
                               sw, sw_port_name(p, i))
                ports.append(sw_port_name(p, i))
            for port in ports:
                run(["ip", "-n", sw, "link", "set", "dev", port, "master", br])
                kernel_side.append((sw, port))
        else:
            self._veth_add(svc, sv0, peer_ns_name(p, 1), peer_iface_name(p, 1))
        for i in range(1, self.npeers + 1):
            ns, iface = peer_ns_name(p, i), peer_iface_name(p, i)
            run(["ip", "-n", ns, "addr", "add", "%s/%d" % (peer_ip(i), PREFIX_LEN),
                 "dev", iface])
            kernel_side.append((ns, iface))
        for ns, iface in kernel_side + [(svc, sv0)]:
            self._offloads_off(ns, iface)
        self.xdp_detach()
        run(["ip", "-n", svc, "link", "set", "dev", sv0, "up"])
        for ns, iface in kernel_side:
            run(["ip", "-n", ns, "link", "set", "dev", iface, "up"])
        if self.switch:
            run(["ip", "-n", self.sw_ns, "link", "set", "dev", bridge_name(p), "up"])
        self._impair()
        for i in range(1, self.npeers + 1):
            self.peer(i)  # cache the MACs

    def _impair(self):
        p = self.prefix
        if self.switch:
            ns, toward_svc = self.sw_ns, sw_port_name(p, 0)
        else:
            ns, toward_svc = peer_ns_name(p, 1), peer_iface_name(p, 1)
        rules = []
        if self.loss_permille:
            rules.append("meta protocol ip numgen random mod 1000 < %d drop"
                         % self.loss_permille)
        if self.reorder_permille:
            # Switch only (forced in __init__): picks the HTB class below.
            rules.append("meta protocol ip numgen random mod 1000 < %d "
                         "meta priority set %s" % (self.reorder_permille, REORDER_CLASS))
        if self.ecn_all:
            rules.append("meta protocol ip ip ecn { ect0, ect1 } ip ecn set ce")
        mark_above = None
        if self.ecn_mark_above is not None:
            # See the module docstring: a bucket of MTU-sized frames.
            pps = max(1, int(round(self.rate * 1e6 / 8 / MTU_FRAME)))
            depth = max(1, -(-self.ecn_mark_above // MTU_FRAME))
            mark_above = ("ip ecn { ect0, ect1 } limit rate over %d/second "
                          "burst %d packets ip ecn set ce" % (pps, depth))
        table = nft_table_name(p)
        if rules or mark_above:
            if self.switch:
                body = "\n".join(rules + ([
                    'oifname "%s" meta protocol ip %s' % (toward_svc, mark_above)]
                    if mark_above else []))
                script = ("table bridge %s {\n chain forward {\n"
                          "  type filter hook forward priority 0; policy accept;\n"
                          "%s\n }\n}\n" % (table, body))
            else:
                out_rules = rules + ([mark_above] if mark_above else [])
                script = ("table inet %s {\n"
                          " chain input {\n  type filter hook input priority 0; "
                          "policy accept;\n%s\n }\n"
                          " chain output {\n  type filter hook output priority 0; "
                          "policy accept;\n%s\n }\n}\n"
                          % (table, "\n".join(rules), "\n".join(out_rules)))
            run(ns_cmd(ns, ["nft", "-f", "-"]), input=script)
        if self.rate is not None:
            bytes_per_s = self.rate * 1e6 / 8
            burst = max(2 * MTU_FRAME, int(bytes_per_s / 1000))     # about 1 ms
            run(["tc", "-n", ns, "qdisc", "add", "dev", toward_svc, "root",
                 "handle", "1:", "tbf", "rate", "%gmbit" % self.rate,
                 "burst", str(burst), "limit", str(self.queue * MTU_FRAME)])
            run(["tc", "-n", ns, "qdisc", "add", "dev", toward_svc, "parent", "1:1",
                 "handle", "10:", "pfifo", "limit", str(self.queue)])
        if self.reorder_permille:
            for i in range(0, self.npeers + 1):
                port = sw_port_name(p, i)
                run(["tc", "-n", ns, "qdisc", "add", "dev", port, "root", "handle", "1:",
                     "htb", "default", "0"])
                run(["tc", "-n", ns, "class", "add", "dev", port, "parent", "1:",
                     "classid", REORDER_CLASS, "htb", "rate", REORDER_RATE,
                     "ceil", REORDER_RATE, "burst", str(2 * MTU_FRAME),
                     "cburst", str(2 * MTU_FRAME), "quantum", str(MTU_FRAME)])
                run(["tc", "-n", ns, "qdisc", "add", "dev", port, "parent", REORDER_CLASS,
                     "handle", "20:", "pfifo", "limit", str(REORDER_QUEUE)])
