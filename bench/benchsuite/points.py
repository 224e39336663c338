"""The benchmarks and their points: what bench/suite.py can run.

A benchmark is one workload in one set-up ("server" = server-side, "both" =
both ends; see beds.py), named WORKLOAD-SETUP (rpc-server, short-both, ...).
It has one varied parameter; each value is a point, run once on Slipstream
and right after on Linux, so outside load disturbs both sides of a ratio
alike.  --quick runs the quick values only.
"""

from dataclasses import dataclass, field

RPC_SIZE = 64
SHORT_CONNS = 1024
PIPE_CONNS = 100
# The key-value store benchmark: memcached, unmodified, -t 1.
KV_WORKLOAD = {"keys": 100000, "key_size": 32, "value_size": 64, "zipf": 0.9,
               "get_ratio": 0.9}
KV_LAT_FRACTION = 0.15      # the latency point's offered load: this share of ...
KV_LAT_CONNS = 64           # ... the lower of the two stacks' peaks, over this many connections
# Bulk flows (loss, interop): 100 connections, each a patterned stream
# written in 64 KiB send()s (pipe_server --size 65536 --work 0, or
# pipe_client --mode send, which writes 64 KiB chunks too).
BULK_CONNS = 100
BULK_SIZE = 65536
LOSS_PCTS = (0, 0.1, 0.5, 1, 2, 5)
# Workloads whose points run a pipe_server per point and a pipe_client
# against it (runner.py): a patterned stream, checked byte for byte where
# it arrives.
STREAM_WORKLOADS = ("pipe", "loss", "interop")


@dataclass(frozen=True)
class Bench:
    name: str            # WORKLOAD-SETUP
    workload: str        # rpc | short | pipe | kv
    setup: str           # server | both
    title: str
    param: str           # the varied parameter's key in a point
    param_title: str
    full: tuple
    quick: tuple
    fixed: dict = field(default_factory=dict)   # parameters every point shares
    seconds: int = None  # measured / warm-up seconds of a full run, if not the
    warmup: int = None   # suite's defaults (pipelined points are steady sooner)


def _rpc(setup, quick):
    return Bench("rpc-" + setup, "rpc", setup,
                 "RPC echo, %d-byte messages, one request in flight per connection" % RPC_SIZE,
                 "conns", "connections", (1, 64, 1024, 4096, 16384), quick,
                 {"size": RPC_SIZE})


def _short(setup, quick):
    return Bench("short-" + setup, "short", setup,
                 "Short-lived connections: %d at a time, each N %d-byte RPCs then closed "
                 "by the client" % (SHORT_CONNS, RPC_SIZE),
                 "rpcs_per_conn", "RPCs per connection", (1, 4, 16, 64, 256), quick,
                 {"size": RPC_SIZE, "conns": SHORT_CONNS})


def _pipe(mode, work, quick):
    what = "receive-only" if mode == "recv" else "send-only"
    return Bench("pipe-%s%d" % (mode, work), "pipe", "server",
                 "Pipelined RPC, %s server, %d cycles of work per message, %d connections"
                 % (what, work, PIPE_CONNS),
                 "size", "message bytes", (32, 64, 256, 1024, 2048), quick,
                 {"mode": mode, "work": work, "conns": PIPE_CONNS}, seconds=4, warmup=1)


def _kv(quick):
    return Bench("kv-server", "kv", "server",
                 "Key-value store: memcached -t 1, %d keys, %d-byte keys, %d-byte values, "
                 "Zipf %.1f, %d%% GET" % (KV_WORKLOAD["keys"], KV_WORKLOAD["key_size"],
                                          KV_WORKLOAD["value_size"], KV_WORKLOAD["zipf"],
                                          round(100 * KV_WORKLOAD["get_ratio"])),
                 "conns", "connections (closed loop: peak)", (16, 64, 256, 1024), quick,
                 dict(KV_WORKLOAD))


def kv_latency_rate(points, fraction=KV_LAT_FRACTION):
    """The offered load of the key-value latency point: fraction of the
    lower of the two stacks' peaks (each stack's peak: its highest ops/s
    over the closed-loop points), so both stacks are measured at the same
    rate.  A stack with no successful point leaves the other's peak; none
    at all: (None, why).  Returns (rate, {"slipstream": peak, "linux": peak,
    "basis": stack whose peak set the rate})."""
    peaks = {}
    for stack in ("slipstream", "linux"):
        rates = [(p.get(stack) or {}).get("rps") for p in points
                 if not (p.get(stack) or {}).get("error")]
        rates = [r for r in rates if r]
        peaks[stack] = max(rates) if rates else None
    have = {k: v for k, v in peaks.items() if v}
    if not have:
        return None, "no peak measured on either stack"
    basis = min(have, key=have.get)
    return fraction * have[basis], dict(peaks, basis=basis, fraction=fraction)
def _loss(quick):
    return Bench("loss-server", "loss", "server",
                 "Bulk flows under random loss: %d connections, the server side (the stack "
                 "under test) sends, a Linux client receives; data segments toward the "
                 "client dropped at random in the client's namespace" % BULK_CONNS,
                 "loss_pct", "loss %", LOSS_PCTS, quick,
                 {"mode": "send", "size": BULK_SIZE, "work": 0, "conns": BULK_CONNS},
                 seconds=4, warmup=2)


def _interop(setup, full, quick):
    return Bench("interop-" + setup, "interop", setup,
                 "Interoperation: %d bulk flows, sender x receiver (%s)"
                 % (BULK_CONNS, "Slipstream server side against a Linux client" if setup ==
                    "server" else "both ends on the stack under test"),
                 "sender", "which end sends", full, quick,
                 {"size": BULK_SIZE, "work": 0, "conns": BULK_CONNS}, seconds=4, warmup=1)


# In the order they run (grouped by set-up: each set-up is one pair of beds).
BENCHES = [
    _rpc("server", (1, 1024)),
    _short("server", (1, 16)),
    _pipe("recv", 250, (64,)),
    _pipe("recv", 1000, ()),
    _pipe("send", 250, (64,)),
    _pipe("send", 1000, ()),
    _kv((64,)),
    # loss and interop: no quick points (they would not fit in --quick's 2
    # minutes next to the rest); `--only loss,interop` runs them in ~3 min.
    _loss(()),
    _interop("server", ("server", "client"), ()),
    _rpc("both", (1024,)),
    _short("both", (16,)),
    _interop("both", ("server", "client"), ()),
]
BY_NAME = {b.name: b for b in BENCHES}


class SelectError(ValueError):
    pass


def parse_value(v):
    """One --values item: an int ("64"), a number ("0.5"), or a word
    ("server", for interop-*)."""
    v = v.strip()
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    if not v.isalpha():
        raise SelectError("--values: expected numbers or words, got %r" % v)
    return v


def parse_values(text):
    """--values: "64,4096" -> (64, 4096); "0.5,1" -> (0.5, 1); None or "" ->
    None (every value)."""
    if not text:
        return None
    return tuple(parse_value(v) for v in text.split(","))


def select(only=None, quick=False, only_values=None):
    """The benchmarks named in only (a list of names: a benchmark "rpc-server",
    a workload "rpc", or a set-up "server"/"both"), all if None; in run
    order; with quick, those that have quick points; with only_values,
    those that have one of these points."""
    if not only:
        return [b for b in BENCHES if values(b, quick, only_values)]
    picked = set()
    for name in only:
        hits = [b for b in BENCHES if name in (b.name, b.workload, b.setup)]
        if not hits:
            raise SelectError("unknown benchmark %r (have: %s; or a workload: %s; or a "
                              "set-up: server, both)" % (
                                  name, ", ".join(b.name for b in BENCHES),
                                  ", ".join(sorted({b.workload for b in BENCHES}))))
        picked.update(b.name for b in hits)
    return [b for b in BENCHES if b.name in picked and values(b, quick, only_values)]


def values(bench, quick, only_values=None):
    """The points of bench to run: its quick or full values, or of those
    the ones in only_values (--values)."""
    vals = bench.quick if quick else bench.full
    if only_values is not None:
        vals = tuple(v for v in vals if v in only_values)
    return vals


def point_params(bench, value):
    """The full parameter set of one point.  interop: "sender" says which
    end writes the stream; the server side's pipe_server then runs in
    "send" (the server sends) or "recv" mode (the client sends)."""
    p = dict(bench.fixed)
    p[bench.param] = value
    if bench.workload == "interop":
        p["mode"] = "send" if value == "server" else "recv"
    return p


def interop_pair(setup, stack, sender):
    """(sender's stack, receiver's stack) of an interop point: server-side
    set-ups have a Linux client against the stack under test; both ends
    are on the stack under test."""
    server = stack
    client = stack if setup == "both" else "linux"
    return (server, client) if sender == "server" else (client, server)
