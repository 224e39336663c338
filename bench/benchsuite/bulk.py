"""Bulk flows: the loss and interop benchmarks' own pieces (pure where they
can be: text in, numbers out; the unit test feeds them fixed input).

Loss: an nftables table in the RECEIVER's namespace (the Linux client's of
a server-side bed) drops data segments of the point's stream at random, in
the prerouting hook (right after the veth hands the frame to the kernel,
before TCP sees it), identically for both stacks:

    table ip <prefix>_loss {
     chain pre {
      type filter hook prerouting priority -300; policy accept;
      ip saddr 198.18.0.1 tcp sport PORT ip length > 100 counter
      ip saddr 198.18.0.1 tcp sport PORT ip length > 100 numgen random mod 10000 < N counter drop
     }
    }

N per 10,000 (0.1% = 10).  "ip length > 100" picks data segments (every
one here is full-sized); SYN, SYN-ACK, FIN and pure ACKs are never dropped,
so connection set-up is the same at every loss rate.  The first rule counts
the data segments offered, the second those dropped: the point records both
and the loss rate really applied.

Counters beside each point: the sender's retransmissions, Slipstream's from
the service (`slipstream stats`: tcp_retrans_segs, tcp_fast_retrans,
tcp_rto_fired, tcp_timeout) and Linux's from the sender namespace's
/proc/net/snmp and /proc/net/netstat (RetransSegs, TCPTimeouts, ...),
and the receiver's kernel counters the same way (out-of-order queueing,
DSACKs, SACKs sent).
"""

from . import report

TABLE_SUFFIX = "_loss"
CHAIN = "pre"
DATA_MIN_IP_LEN = 100       # bytes: above any pure ACK / SYN / FIN (<= 60 + options)
PER = 10000                 # numgen modulus: loss in units of 0.01 %

# Linux counters to keep, by (/proc file's section, name).  Sender side:
# what it retransmitted and why; receiver side: what it saw out of order.
SNMP_KEYS = (("Tcp", "OutSegs"), ("Tcp", "InSegs"), ("Tcp", "RetransSegs"),
             ("TcpExt", "TCPTimeouts"), ("TcpExt", "TCPLossProbes"),
             ("TcpExt", "TCPLossProbeRecovery"), ("TcpExt", "TCPFastRetrans"),
             ("TcpExt", "TCPSlowStartRetrans"), ("TcpExt", "TCPLostRetransmit"),
             ("TcpExt", "TCPSackRecovery"), ("TcpExt", "TCPRenoRecovery"),
             ("TcpExt", "TCPSpuriousRTOs"), ("TcpExt", "TCPOFOQueue"),
             ("TcpExt", "TCPDSACKOldSent"), ("TcpExt", "TCPDSACKRecv"),
             ("TcpExt", "TCPSACKReneging"), ("TcpExt", "TCPRcvQDrop"),
             ("TcpExt", "TCPOFODrop"), ("TcpExt", "TCPBacklogDrop"))
SERVICE_KEYS = ("tcp_retrans_segs", "tcp_fast_retrans", "tcp_rto_fired", "tcp_tail_probes",
                "tcp_lost_rexmits", "tcp_dup_acks", "tcp_timeout", "tcp_dup_data_bytes",
                "tx_tcp_segments", "rx_tcp", "nic_rx_missed")


def loss_permyriad(loss_pct):
    """Loss in percent -> N of `numgen random mod 10000 < N` (0.1 -> 10).
    Raises ValueError outside 0..100 or finer than 0.01 %."""
    n = round(loss_pct * PER / 100)
    if not 0 <= n <= PER or abs(n - loss_pct * PER / 100) > 1e-6:
        raise ValueError("loss %r%%: want 0..100 in steps of 0.01" % (loss_pct,))
    return n


def loss_table(prefix):
    return prefix + TABLE_SUFFIX


def loss_script(prefix, src_ip, sport, loss_pct):
    """The nft -f script of a point's loss (see the module docstring)."""
    n = loss_permyriad(loss_pct)
    match = "ip saddr %s tcp sport %d ip length > %d" % (src_ip, sport, DATA_MIN_IP_LEN)
    return ("table ip %s {\n chain %s {\n  type filter hook prerouting priority -300; "
            "policy accept;\n  %s counter\n  %s numgen random mod %d < %d counter drop\n }\n}\n"
            % (loss_table(prefix), CHAIN, match, match, PER, n))


def parse_loss_counters(nft_json):
    """`nft -j list table ip T` -> {"offered": packets, "dropped": packets}
    from the two counters of loss_script (the first rule counts what is
    offered, the one with a drop what it dropped); None if not found."""
    import json
    try:
        doc = json.loads(nft_json)
    except ValueError:
        return None
    counted = []
    for item in doc.get("nftables", []):
        rule = item.get("rule")
        if not rule:
            continue
        pkts, drop = None, False
        for e in rule.get("expr", []):
            if "counter" in e:
                pkts = e["counter"].get("packets")
            if "drop" in e:
                drop = True
        if pkts is not None:
            counted.append((drop, pkts))
    offered = [p for d, p in counted if not d]
    dropped = [p for d, p in counted if d]
    if len(offered) != 1 or len(dropped) != 1:
        return None
    return {"offered": offered[0], "dropped": dropped[0],
            "rate": dropped[0] / offered[0] if offered[0] else None}


def parse_snmp(text):
    """/proc/net/snmp or /proc/net/netstat text -> {("Tcp", "RetransSegs"): n}:
    each section is a header line of names and a line of values."""
    out, header = {}, None
    for line in text.splitlines():
        sec, _, rest = line.partition(":")
        fields = rest.split()
        if header and header[0] == sec:
            for k, v in zip(header[1], fields):
                try:
                    out[(sec, k)] = int(v)
                except ValueError:
                    pass
            header = None
        else:
            header = (sec, fields)
    return out


def snmp_delta(before, after, keys=SNMP_KEYS):
    """{"Tcp.RetransSegs": n, ...} for keys, after - before (missing: 0)."""
    return {"%s.%s" % k: after.get(k, 0) - before.get(k, 0) for k in keys if k in after}


def service_retrans(counter_deltas):
    """The retransmit counters of a point's service counter deltas
    ({service: {counter: delta}}), summed over the services."""
    out = {}
    for c in counter_deltas.values():
        for k in SERVICE_KEYS:
            if k in c:
                out[k] = out.get(k, 0) + c[k]
    return out


# ---- loss: penalties ---------------------------------------------------------

def penalty(gbps, gbps0):
    """1 - goodput under loss / goodput without: the share of throughput
    the loss cost.  None where either is missing or the base is 0."""
    if gbps is None or not gbps0:
        return None
    return 1.0 - gbps / gbps0


def loss_penalties(points):
    """For the points of a loss benchmark ([{"value": loss %, "slipstream":
    res, "linux": res}], one with value 0): sets each point's "penalty":
    {"slipstream": p, "linux": p, "ratio": p_S / p_L} against the 0 % point
    of the same stack in the same run.  The ratio is None where Linux's
    penalty is not above 0 (no meaningful ratio)."""
    base = next((p for p in points if p["value"] == 0), None)
    for p in points:
        pen = {}
        for stack in ("slipstream", "linux"):
            b = report.get((base or {}).get(stack) or {}, "gbps")
            pen[stack] = penalty(report.get(p.get(stack) or {}, "gbps"), b)
        s, l = pen["slipstream"], pen["linux"]
        pen["ratio"] = s / l if s is not None and l is not None and l > 0 else None
        p["penalty"] = pen
    return points


TARGET_VALUE = 1            # loss %: the target point
TARGET_RATIO = 2.0          # "no more than twice Linux's"


def loss_target(points):
    """The issue's target: Slipstream's penalty at 1 % loss no more than
    twice Linux's.  Returns {"met": bool|None, "slipstream", "linux",
    "ratio", "words"}."""
    p = next((p for p in points if p["value"] == TARGET_VALUE), None)
    pen = (p or {}).get("penalty") or {}
    s, l = pen.get("slipstream"), pen.get("linux")
    out = {"slipstream": s, "linux": l, "ratio": pen.get("ratio"), "met": None}
    if s is None or l is None:
        out["words"] = "not measured (a point failed or was not run)"
    elif s <= TARGET_RATIO * max(l, 0.0):
        out["met"] = True
        out["words"] = ("met: Slipstream loses %.1f%% at 1%% loss, Linux %.1f%% (limit %.1f%%)"
                        % (100 * s, 100 * l, 100 * TARGET_RATIO * max(l, 0)))
    else:
        out["met"] = False
        out["words"] = ("MISSED by %.1f points: Slipstream loses %.1f%% at 1%% loss, Linux "
                        "%.1f%%, limit %.1f%%" % (100 * (s - TARGET_RATIO * max(l, 0)), 100 * s,
                                                  100 * l, 100 * TARGET_RATIO * max(l, 0)))
    return out


# ---- interop: the sender x receiver matrix -----------------------------------

def interop_matrix(benches):
    """The four sender x receiver pairs from the interop benchmarks of a
    run (the "benchmarks" entries with workload "interop"): [{"sender",
    "receiver", "bench", "value", "res", "linux_res"}], one row per measured
    pair, each with the Linux -> Linux result of the same point (measured
    right after it, same bed layout) for the ratio.  Linux -> Linux itself
    is a row of its own from each point's Linux run."""
    from .points import interop_pair
    rows = []
    for b in benches:
        if b.get("workload") != "interop":
            continue
        for p in b["points"]:
            for stack in ("slipstream", "linux"):
                snd, rcv = interop_pair(b["setup"], stack, p["value"])
                rows.append({"sender": snd, "receiver": rcv, "bench": b["name"],
                             "setup": b["setup"], "value": p["value"],
                             "res": p.get(stack) or {}, "linux_res": p.get("linux") or {}})
    order = {("slipstream", "slipstream"): 0, ("slipstream", "linux"): 1,
             ("linux", "slipstream"): 2, ("linux", "linux"): 3}
    rows.sort(key=lambda r: (order[(r["sender"], r["receiver"])], r["setup"] != "server"))
    return rows


def path_drops(res):
    """Frames lost on the way other than by the loss rule: the veth ends'
    tx_dropped (a veth counts a frame its peer could not take there: the
    receiving kernel's full input backlog, or a full ring toward an XDP
    program) and the service's AF_XDP receive ring overflows
    (nic_rx_missed), over the client run.  None without veth counters."""
    veth = res.get("veth")
    if veth is None:
        return None
    n = sum(v.get("tx_dropped", 0) for v in veth.values())
    return n + (res.get("service_retrans") or {}).get("nic_rx_missed", 0)
