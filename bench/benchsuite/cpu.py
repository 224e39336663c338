"""CPU accounting from /proc/stat, and a rough measure of other people's load.

Busy time is everything but idle and iowait, per CPU line of /proc/stat, as
a fraction of that CPU over the window; "busy_cores" adds the CPUs up (2.0
is both vCPUs busy the whole time).  The parse and delta functions are pure
(text in, numbers out) so the unit test can feed them fixed text.
"""

import os
from pathlib import Path

# The first eight fields of a "cpuN" line, in order.
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
IDLE_FIELDS = ("idle", "iowait")


def parse_stat(text):
    """/proc/stat text -> ({"cpu": [ticks...], "cpu0": [...], ...}, forks).
    forks is the "processes" line: processes created since boot."""
    cpus, forks = {}, None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("cpu"):
            cpus[parts[0]] = [int(x) for x in parts[1:1 + len(FIELDS)]]
        elif parts[0] == "processes":
            forks = int(parts[1])
    return cpus, forks


def snapshot():
    """The current /proc/stat, parsed."""
    return parse_stat(Path("/proc/stat").read_text())


def delta(a, b):
    """CPU use between two snapshots.  Returns
      {"busy_cores": x, "cpu": {...}, "cpu0": {...}, ..., "forks": n}
    where each per-line dict has "busy" (fraction of that CPU) and the
    fractions user, system, irq, softirq, steal (nice is folded into user)."""
    (ca, fa), (cb, fb) = a, b
    out = {}
    for name, after in cb.items():
        before = ca.get(name, after)
        d = dict(zip(FIELDS, (y - x for x, y in zip(before, after))))
        total = sum(d.values()) or 1
        idle = sum(d[k] for k in IDLE_FIELDS)
        out[name] = {"busy": (total - idle) / total,
                     "user": (d["user"] + d["nice"]) / total,
                     "system": d["system"] / total, "irq": d["irq"] / total,
                     "softirq": d["softirq"] / total, "steal": d["steal"] / total}
    ncpu = sum(1 for n in out if n != "cpu")
    out["busy_cores"] = out["cpu"]["busy"] * ncpu if "cpu" in out else 0.0
    out["forks"] = (fb - fa) if fa is not None and fb is not None else None
    return out


def per_cpu_busy(d):
    """[busy fraction of cpu0, cpu1, ...] of a delta()."""
    n = sorted((k for k in d if k.startswith("cpu") and k != "cpu"), key=lambda k: int(k[3:]))
    return [d[k]["busy"] for k in n]


# ---- other people's load -----------------------------------------------------

def process_ticks(exclude):
    """{pid: (name, utime + stime ticks)} of every user-space process not in
    exclude (kernel threads, whose cmdline is empty, are left out: their time
    is softirq and the like, which our own traffic causes too)."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in exclude:
            continue
        try:
            if not (d / "cmdline").read_bytes():
                continue
            stat = (d / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.find("(") + 1:stat.rfind(")")]
        rest = stat.rsplit(")", 1)[1].split()
        found[int(d.name)] = (name, int(rest[11]) + int(rest[12]))
    return found


def foreign_cpu(before, after, top=5):
    """CPU seconds the processes of two process_ticks() used in between, and
    the busiest names.  Processes that started and ended in between (a
    compiler's cc1) are missed: the fork count of delta() shows those."""
    hz = os.sysconf("SC_CLK_TCK")
    used = {}
    for pid, (name, t) in after.items():
        dt = t - before[pid][1] if pid in before else t   # new: all of it
        if dt > 0:
            used[name] = used.get(name, 0) + dt
    names = sorted(used.items(), key=lambda kv: -kv[1])[:top]
    return sum(used.values()) / hz, ["%s %.2fs" % (n, t / hz) for n, t in names]


# ---- the kernel's per-CPU receive backlog --------------------------------------

def parse_softnet(text):
    """/proc/net/softnet_stat text -> [{"processed", "dropped", "squeezed"}]
    per CPU (hexadecimal columns 1-3): "dropped" counts packets refused by a
    full input backlog (net.core.netdev_max_backlog), where veth delivers."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            out.append({"processed": int(f[0], 16), "dropped": int(f[1], 16),
                        "squeezed": int(f[2], 16)})
    return out


def softnet():
    try:
        return parse_softnet(Path("/proc/net/softnet_stat").read_text())
    except OSError:
        return []


def softnet_delta(a, b):
    """{"cpu0": {"dropped": n, ...}, ...} for the CPUs whose counters moved."""
    out = {}
    for i, (x, y) in enumerate(zip(a, b)):
        d = {k: y[k] - x[k] for k in y}
        if d["dropped"] or d["squeezed"]:
            out["cpu%d" % i] = d
    return out
