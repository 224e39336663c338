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
  ecn_all  nftables `ip ecn set ce` on every ECT packet, same places (with
           rate_dir "to-peer": only packets toward peer 1, see below).
  rate     TBF with a pfifo child (limit in packets) on the switch port toward
           the service, else on peer1's veth: shapes peers -> service.
  rate_dir "to-service" (the default): as above.  "to-peer" (forces the
           switch): the bottleneck goes on the switch port toward peer 1,
           <prefix>-s1, instead, for the service as a *sender*: everything
           toward peer 1 crosses it (service -> peer1 and peer2..N -> peer1
           alike; ACKs coming back are not shaped).  `ecn_mark_above` and
           `ecn_all` then apply only to packets leaving through that port
           (toward peer 1), and `loss` stays as it is (every forwarded
           packet).  Testbed.bottleneck names the shaped (namespace,
           device); bottleneck_stats() reads its root qdisc once (sent
           bytes and packets, drops, overlimits, backlog bytes and packets,
           from `tc -s -j qdisc show`) and bottleneck_sampler() samples the
           same plus the port's link counters every ~10 ms from a small
           netlink reader inside the switch namespace (see QdiscSampler).
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
           needs `rate`: marks ECT packets toward the service (toward peer 1
           with rate_dir "to-peer": at the shaped port) once a virtual
           queue, served at the link rate, holds more than BYTES.  nftables
           cannot read the real qdisc backlog, so this is the stand-in: an nft
           `limit` token bucket at the link rate whose depth is BYTES, counted
           in MTU-sized (1514-byte) frames: the packet mode is the one whose
           depth nftables honours exactly (in byte mode the kernel adds one
           second of traffic to the burst).  Exact for full-size data
           segments; small packets are marked early.  Marked packets take no
           tokens, so the virtual queue drains a little faster than the real.
           That is ecn_marker "nft" (the default).  Under sustained load it
           marks only what arrives *faster* than the link (once the bucket is
           empty), not what sits in the queue, so the real queue can stay far
           above BYTES: 8 Linux CUBIC+ECN flows at 100 Mbit/s with BYTES =
           30000 kept a mean backlog of 109-128 KB (of 151 KB) and dropped.
           ecn_marker "bpf" marks on the real queue instead, as a DCTCP
           switch does: an eBPF program (cls_bpf, direct action) on the
           clsact egress hook of the shaped port, which runs just before the
           packet is enqueued, reads the root qdisc's backlog (through
           bpf_cast_to_kern_ctx and CO-RE reads of skb->dev->qdisc) and sets
           CE on an ECT packet when the queue it joins holds more than BYTES
           (any packet size).  It needs clang, the libbpf headers and a
           kernel with BTF (the object is compiled at up()).  Measured with
           the same 8 Linux flows: mean backlog 23 KB, p99 47 KB, no drops
           after the first second.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
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
RATE_DIRS = ("to-service", "to-peer")   # where `rate` puts the bottleneck
ECN_MARKERS = ("nft", "bpf")  # how ecn_mark_above decides (module docstring)
SAMPLE_INTERVAL = 0.01       # seconds between QdiscSampler samples
SAMPLE_LIMIT = 600.0         # a QdiscSampler ends by itself after this long

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


# ---- qdisc statistics (the bottleneck's queue) -------------------------

_QDISC_FIELDS = ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")


def qdisc_stats(ns, dev):
    """`tc -s -j qdisc show dev` in ns: one dict per qdisc with kind, handle,
    parent ("root" for the root qdisc) and the counters of _QDISC_FIELDS
    (backlog in bytes, qlen in packets)."""
    res = run(["tc", "-s", "-j", "-n", ns, "qdisc", "show", "dev", dev])
    try:
        doc = json.loads(res.stdout or "[]")
    except ValueError:
        raise TestbedError("tc -s -j qdisc show dev %s: no JSON: %r"
                           % (dev, res.stdout[:200])) from None
    out = []
    for q in doc:
        d = {"kind": q.get("kind"), "handle": q.get("handle"),
             "parent": "root" if q.get("root") else q.get("parent")}
        for f in _QDISC_FIELDS:
            d[f] = int(q.get(f, 0) or 0)
        out.append(d)
    return out


def qdisc_root_stats(ns, dev):
    """The root qdisc's entry of qdisc_stats().  For TBF + pfifo the root's
    counters cover the child: its backlog and qlen are the pfifo's, and a
    packet the pfifo refuses counts in the root's drops as well."""
    for q in qdisc_stats(ns, dev):
        if q["parent"] == "root":
            return q
    raise TestbedError("no root qdisc on %s/%s" % (ns, dev))


# Runs inside the namespace (`ip netns exec NS python3 -c ...`): samples the
# root qdisc of DEV (RTM_GETQDISC dump, TCA_STATS2) and DEV's link counters
# (RTM_GETLINK, IFLA_STATS64) every INTERVAL s for at most LIMIT s, or until
# SIGTERM/SIGINT; writes one JSON array per sample to OUT:
#   [t_ns (CLOCK_MONOTONIC), qdisc bytes, packets, drops, overlimits, qlen,
#    backlog bytes, link tx_bytes, tx_packets, tx_dropped]
# One netlink request each per sample: no process per sample.
_SAMPLER_SRC = r"""
import json, signal, socket, struct, sys, time
dev, interval, limit, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
ifindex = socket.if_nametoindex(dev)
sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
sk.bind((0, 0))
sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
seq = [0]
def request(mtype, flags, body):
    seq[0] += 1
    sk.send(struct.pack("=IHHII", 16 + len(body), mtype, flags, seq[0], 0) + body)
    msgs = []
    while True:
        data = sk.recv(1 << 17)
        off = 0
        while off + 16 <= len(data):
            ln, t, fl, sq, _ = struct.unpack_from("=IHHII", data, off)
            if ln < 16:
                return msgs
            if sq == seq[0]:
                if t == 3:
                    return msgs
                if t == 2:
                    err = struct.unpack_from("=i", data, off + 16)[0]
                    if err:
                        raise OSError(-err, "netlink error")
                    return msgs
                msgs.append((t, fl, data[off + 16:off + ln]))
            off += (ln + 3) & ~3
        if msgs and not (msgs[-1][1] & 2):
            return msgs
def attrs(buf, off):
    a = {}
    while off + 4 <= len(buf):
        ln, t = struct.unpack_from("=HH", buf, off)
        if ln < 4:
            break
        a[t & 0x3fff] = buf[off + 4:off + ln]
        off += (ln + 3) & ~3
    return a
def qdisc():
    for t, fl, m in request(38, 0x301, struct.pack("=BBHiIII", 0, 0, 0, ifindex, 0, 0, 0)):
        if t != 36:
            continue
        _, _, _, idx, handle, parent, _ = struct.unpack_from("=BBHiIII", m, 0)
        if idx != ifindex or parent != 0xFFFFFFFF:
            continue
        a = attrs(m, 20)
        st = attrs(a.get(7, b""), 0)
        nbytes, pkts = struct.unpack_from("=QI", st[1], 0) if 1 in st else (0, 0)
        qlen, backlog, drops, requeues, over = \
            struct.unpack_from("=IIIII", st[3], 0) if 3 in st else (0,) * 5
        return [nbytes, pkts, drops, over, qlen, backlog]
    return [0] * 6
def link():
    for t, fl, m in request(18, 1, struct.pack("=BBHiII", 0, 0, 0, ifindex, 0, 0)):
        if t == 16:
            a = attrs(m, 16)
            if 23 in a:
                v = struct.unpack_from("=8Q", a[23], 0)
                return [v[3], v[1], v[7]]
    return [0, 0, 0]
t0 = time.monotonic()
nxt = t0
with open(out, "w") as f:
    while not stop and time.monotonic() - t0 < limit:
        f.write(json.dumps([time.monotonic_ns()] + qdisc() + link()) + "\n")
        nxt += interval
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        else:
            nxt = time.monotonic()
"""

SAMPLE_KEYS = ("t_ns", "bytes", "packets", "drops", "overlimits", "qlen", "backlog",
               "tx_bytes", "tx_packets", "tx_dropped")


class QdiscSampler:
    """Samples the root qdisc of ns/dev (and dev's link counters) every
    `interval` s from one small Python process inside ns that asks the
    kernel over rtnetlink, so sampling every 10 ms costs no process per
    sample.  start() it before the load, stop() after: samples() gives a
    list of dicts with SAMPLE_KEYS (t_ns is CLOCK_MONOTONIC, comparable
    with time.monotonic_ns() here; the counters are cumulative, backlog
    and qlen are the queue at that instant).  The sampler stops by itself
    after limit_s seconds; also usable as a context manager."""

    def __init__(self, ns, dev, out_path, interval=SAMPLE_INTERVAL, limit_s=SAMPLE_LIMIT):
        self.ns, self.dev, self.out = ns, dev, str(out_path)
        self.interval, self.limit_s = float(interval), float(limit_s)
        self.proc = None
        self._samples = None

    def start(self, timeout=10.0):
        """Start; returns once the first sample is written (TestbedError if not)."""
        if os.path.exists(self.out):
            os.unlink(self.out)
        self.proc = subprocess.Popen(
            ns_cmd(self.ns, [sys.executable or "python3", "-c", _SAMPLER_SRC, self.dev,
                             repr(self.interval),
                             repr(self.limit_s), self.out]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise TestbedError("qdisc sampler on %s/%s exited %s: %s" % (
                    self.ns, self.dev, self.proc.returncode,
                    self.proc.stderr.read().decode(errors="replace")[-2000:]))
            try:
                if os.path.getsize(self.out) > 0:
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise TestbedError("qdisc sampler on %s/%s wrote nothing in %.0f s"
                           % (self.ns, self.dev, timeout))

    def stop(self):
        """Stop (SIGTERM, then SIGKILL after 5 s) and read the samples."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        return self.samples()

    def samples(self):
        out = []
        try:
            with open(self.out) as f:
                for line in f:
                    try:
                        out.append(dict(zip(SAMPLE_KEYS, json.loads(line))))
                    except ValueError:
                        break        # a line cut short by SIGKILL
        except OSError:
            pass
        return out

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


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
    switch, exclusive with rate), rate_dir ("to-service", the default, or
    "to-peer": the bottleneck, ecn_mark_above and ecn_all on the switch port
    toward peer 1; forces switch), ecn_marker ("nft", the default, or
    "bpf": how ecn_mark_above decides, see the module docstring).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, prefix="ss", peers=1, switch=False, loss=None,
                 ecn_all=False, ecn_mark_above=None, rate=None, queue=100,
                 reorder=None, rate_dir="to-service", ecn_marker="nft"):
        self.prefix = prefix_check(prefix)
        if rate_dir not in RATE_DIRS:
            raise TestbedError("rate_dir must be one of %s, not %r"
                               % (", ".join(RATE_DIRS), rate_dir))
        self.rate_dir = rate_dir
        if ecn_marker not in ECN_MARKERS:
            raise TestbedError("ecn_marker must be one of %s, not %r"
                               % (", ".join(ECN_MARKERS), ecn_marker))
        self.ecn_marker = ecn_marker
        if not isinstance(peers, int) or not 1 <= peers <= MAX_PEERS:
            raise TestbedError("peers must be 1..%d, not %r" % (MAX_PEERS, peers))
        self.npeers = peers
        self.loss_permille = _permille("loss", loss)
        self.reorder_permille = _permille("reorder", reorder)
        if self.reorder_permille and rate is not None:
            raise TestbedError("reorder and rate are exclusive (both shape the "
                               "switch port toward the service)")
        self.switch = bool(switch) or peers > 1 or bool(self.reorder_permille) \
            or rate_dir == "to-peer"
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

    @property
    def shaped_port(self):
        """(namespace, device) where `rate`, `ecn_mark_above` and (with
        rate_dir "to-peer") `ecn_all` act, whether or not they are set."""
        if self.rate_dir == "to-peer":
            return self.sw_ns, sw_port_name(self.prefix, 1)
        if self.switch:
            return self.sw_ns, sw_port_name(self.prefix, 0)
        return peer_ns_name(self.prefix, 1), peer_iface_name(self.prefix, 1)

    @property
    def bottleneck(self):
        """(namespace, device) of the TBF + pfifo bottleneck, or None without rate."""
        return self.shaped_port if self.rate is not None else None

    def bottleneck_stats(self):
        """The bottleneck's root qdisc counters now (see qdisc_stats); one
        `tc` call, so for occasional reads: bottleneck_sampler() for series."""
        if self.bottleneck is None:
            raise TestbedError("no bottleneck: this test bed has no rate")
        return qdisc_root_stats(*self.bottleneck)

    def bottleneck_sampler(self, out_path, interval=SAMPLE_INTERVAL, limit_s=SAMPLE_LIMIT):
        """A QdiscSampler (not started) on the bottleneck, writing to out_path."""
        if self.bottleneck is None:
            raise TestbedError("no bottleneck: this test bed has no rate")
        ns, dev = self.bottleneck
        return QdiscSampler(ns, dev, out_path, interval, limit_s)

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
        # The shaped port: toward the service, or toward peer 1 (to-peer).
        ns, shaped = self.shaped_port
        rules = []
        if self.loss_permille:
            rules.append("meta protocol ip numgen random mod 1000 < %d drop"
                         % self.loss_permille)
        if self.reorder_permille:
            # Switch only (forced in __init__): picks the HTB class below.
            rules.append("meta protocol ip numgen random mod 1000 < %d "
                         "meta priority set %s" % (self.reorder_permille, REORDER_CLASS))
        if self.ecn_all and self.rate_dir == "to-peer":
            # Switch only (forced in __init__): packets toward peer 1.
            rules.append('oifname "%s" meta protocol ip ip ecn { ect0, ect1 } '
                         'ip ecn set ce' % shaped)
        elif self.ecn_all:
            rules.append("meta protocol ip ip ecn { ect0, ect1 } ip ecn set ce")
        mark_above = None
        if self.ecn_mark_above is not None and self.ecn_marker == "nft":
            # See the module docstring: a bucket of MTU-sized frames.
            pps = max(1, int(round(self.rate * 1e6 / 8 / MTU_FRAME)))
            depth = max(1, -(-self.ecn_mark_above // MTU_FRAME))
            mark_above = ("ip ecn { ect0, ect1 } limit rate over %d/second "
                          "burst %d packets ip ecn set ce" % (pps, depth))
        table = nft_table_name(p)
        if rules or mark_above:
            if self.switch:
                body = "\n".join(rules + ([
                    'oifname "%s" meta protocol ip %s' % (shaped, mark_above)]
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
            run(["tc", "-n", ns, "qdisc", "add", "dev", shaped, "root",
                 "handle", "1:", "tbf", "rate", "%gmbit" % self.rate,
                 "burst", str(burst), "limit", str(self.queue * MTU_FRAME)])
            run(["tc", "-n", ns, "qdisc", "add", "dev", shaped, "parent", "1:1",
                 "handle", "10:", "pfifo", "limit", str(self.queue)])
        if self.ecn_mark_above is not None and self.ecn_marker == "bpf":
            self._bpf_marker(ns, shaped)
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

    def impair_live(self, to_service=0, to_peers=0, reorder=0, duplicate=0, port=0):
        """Switch beds: replace the impairments set by earlier calls (not
        those of __init__) at once, without rebuilding.  Percent, 0.1
        granularity, of IPv4 packets: dropped toward the service (frames
        the bridge forwards out of switch port @port, 0 being the
        service's, i for peer i) and toward the peers (frames it forwards
        in from @port); held back in the slow HTB class as `reorder` does
        (both ways; the classes are added at the first call that asks);
        sent twice (a copy goes straight out of the opposite port from the
        netdev ingress hook of ports @port and 1, so duplicates travel
        between the host on @port and peer 1).  All zero removes them.
        The tables live in the switch namespace (gone with the bed)."""
        if not self.switch:
            raise TestbedError("impair_live needs a switch bed")
        p, ns = self.prefix, self.sw_ns
        pm = lambda what, pct: _permille(what, pct) if pct else 0  # noqa: E731
        lt, lp = pm("loss", to_service), pm("loss", to_peers)
        ro, du = pm("reorder", reorder), pm("duplicate", duplicate)
        br, nd = p + "_live", p + "_livedup"
        for family, name in (("bridge", br), ("netdev", nd)):
            run(ns_cmd(ns, ["nft", "delete", "table", family, name]), check=False)
        if not 0 <= port <= self.npeers or port == 1 and du:
            raise TestbedError("impair_live: port must be 0..%d (not 1 with duplicate), "
                               "not %r" % (self.npeers, port))
        s0, s1 = sw_port_name(p, port), sw_port_name(p, 1)
        rules = []
        if lt:
            rules.append('oifname "%s" meta protocol ip numgen random mod 1000 < %d drop'
                         % (s0, lt))
        if lp:
            rules.append('iifname "%s" meta protocol ip numgen random mod 1000 < %d drop'
                         % (s0, lp))
        if ro:
            if not getattr(self, "_live_htb", False):
                for i in range(0, self.npeers + 1):
                    port = sw_port_name(p, i)
                    run(["tc", "-n", ns, "qdisc", "replace", "dev", port, "root", "handle",
                         "1:", "htb", "default", "0"])
                    run(["tc", "-n", ns, "class", "add", "dev", port, "parent", "1:",
                         "classid", REORDER_CLASS, "htb", "rate", REORDER_RATE,
                         "ceil", REORDER_RATE, "burst", str(2 * MTU_FRAME),
                         "cburst", str(2 * MTU_FRAME), "quantum", str(MTU_FRAME)])
                    run(["tc", "-n", ns, "qdisc", "add", "dev", port, "parent",
                         REORDER_CLASS, "handle", "20:", "pfifo", "limit",
                         str(REORDER_QUEUE)])
                self._live_htb = True
            rules.append("meta protocol ip numgen random mod 1000 < %d meta priority set %s"
                         % (ro, REORDER_CLASS))
        if rules:
            run(ns_cmd(ns, ["nft", "-f", "-"]), input=(
                "table bridge %s {\n chain forward {\n"
                "  type filter hook forward priority -1; policy accept;\n%s\n }\n}\n"
                % (br, "\n".join(rules))))
        if du:
            chains = "".join(
                ' chain in%d {\n  type filter hook ingress device "%s" priority 0; '
                'policy accept;\n  meta protocol ip numgen random mod 1000 < %d dup to "%s"\n'
                ' }\n' % (i, a, du, b) for i, (a, b) in enumerate(((s0, s1), (s1, s0))))
            run(ns_cmd(ns, ["nft", "-f", "-"]), input="table netdev %s {\n%s}\n" % (nd, chains))

    def _bpf_marker(self, ns, dev):
        """ecn_marker "bpf": compile the queue-model marker for this rate and
        threshold and attach it to dev's clsact egress hook in ns."""
        clang = shutil.which("clang")
        if clang is None:
            raise TestbedError("ecn_marker bpf needs clang (apt-get install clang "
                               "libbpf-dev)")
        with tempfile.TemporaryDirectory(prefix="sstb-bpf-") as d:
            src, obj = os.path.join(d, "vq_mark.c"), os.path.join(d, "vq_mark.o")
            with open(src, "w") as f:
                f.write(_VQ_BPF_SRC)
            run([clang, "-O2", "-g", "-target", "bpf", "-I", _multiarch_include(),
                 "-DVQ_THRESH=%dU" % self.ecn_mark_above,
                 "-c", src, "-o", obj], timeout=120)
            run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "clsact"])
            run(["tc", "-n", ns, "filter", "add", "dev", dev, "egress", "bpf",
                 "direct-action", "obj", obj, "sec", "tc"])


def _multiarch_include():
    """/usr/include/<multiarch> (asm/types.h for the BPF build)."""
    for cc in ("cc", "gcc"):
        path = shutil.which(cc)
        if path:
            res = run([path, "-print-multiarch"], check=False)
            if res.returncode == 0 and res.stdout.strip():
                return "/usr/include/" + res.stdout.strip()
    return "/usr/include/%s-linux-gnu" % os.uname().machine


# ecn_marker "bpf" (module docstring): CE on ECT packets that find the real
# root qdisc of their device holding more than VQ_THRESH bytes (from the
# compiler command line).  bpf_cast_to_kern_ctx gives the kernel's sk_buff;
# skb->dev->qdisc->qstats.backlog is read with CO-RE relocations against the
# running kernel's BTF.
_VQ_BPF_SRC = r"""
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/gen_stats.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

struct Qdisc { struct gnet_stats_queue qstats; } __attribute__((preserve_access_index));
struct net_device { struct Qdisc *qdisc; } __attribute__((preserve_access_index));
struct sk_buff { struct net_device *dev; } __attribute__((preserve_access_index));
extern void *bpf_cast_to_kern_ctx(void *) __ksym;

SEC("tc")
int vq_mark(struct __sk_buff *skb)
{
	struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
	struct net_device *dev = BPF_CORE_READ(kskb, dev);
	struct Qdisc *root = BPF_CORE_READ(dev, qdisc);
	__u32 backlog = BPF_CORE_READ(root, qstats.backlog);

	if (backlog <= VQ_THRESH)
		return TC_ACT_OK;
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TC_ACT_OK;
	__u8 tos = ip->tos;
	if ((tos & 3) == 0 || (tos & 3) == 3)   /* not ECT, or already CE */
		return TC_ACT_OK;
	__u16 old = *(__u16 *)ip, new = old;    /* version/IHL and TOS */
	__u8 ce = tos | 3;
	((__u8 *)&new)[1] = ce;
	bpf_l3_csum_replace(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, check),
			    old, new, 2);
	bpf_skb_store_bytes(skb, ETH_HLEN + __builtin_offsetof(struct iphdr, tos), &ce, 1, 0);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
"""
