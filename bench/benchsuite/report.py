"""Ratios, number formats and the markdown report (pure: dicts in, text out).

Every figure is Slipstream / Linux from the same run.  A failed point
shows "FAILED" and its reason, never a number.
"""

import math

STACK_TITLES = {"slipstream": "Slipstream", "linux": "Linux"}


def ratio(s, l):
    """s / l, or None when either is missing or l is 0."""
    if s is None or l is None or not l:
        return None
    return s / l


def fmt_num(x, digits=None):
    """A number for a table: thousands separated, fewer decimals as it grows;
    "–" for None or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if digits is None:
        ax = abs(x)
        digits = 0 if ax >= 100 else 1 if ax >= 10 else 2
    return "{:,.{d}f}".format(x, d=digits)


def fmt_ratio(r):
    return "–" if r is None else "%.2f" % r


def pair(s, l, digits=None):
    """ "S / L (ratio)" """
    return "%s / %s (%s)" % (fmt_num(s, digits), fmt_num(l, digits), fmt_ratio(ratio(s, l)))


def ok(res):
    return bool(res) and not res.get("error")


def get(res, key):
    """A figure of a result, None if the point failed or lacks it."""
    return res.get(key) if ok(res) else None


def cpu_cell(res):
    """ "1.95 (0.98 + 0.97)": cores busy, then each CPU's share."""
    if not ok(res) or not res.get("cpu"):
        return "–"
    c = res["cpu"]
    cpus = sorted((k for k in c if k.startswith("cpu") and k != "cpu"), key=lambda k: int(k[3:]))
    return "%.2f (%s)" % (c["busy_cores"], " + ".join("%.2f" % c[k]["busy"] for k in cpus))


def table_row(cells):
    """One markdown table row ("|" inside a cell becomes "/")."""
    return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"


def table_text(rows, notes):
    """The table's lines, then the footnote of its contended points."""
    text = "\n".join(rows)
    if notes:
        text += "\n\n\\* contended: " + "; ".join(notes)
    return text


def contended_note(value, s, l):
    """The footnote of a point another process disturbed: its CPU-s and who."""
    return "%s: other processes took %.1f / %.1f CPU-s during the Slipstream / Linux run (%s)" % (
        value, s.get("foreign_cpu_s") or 0, l.get("foreign_cpu_s") or 0,
        ", ".join((s.get("foreign_top") or [])[:3] + (l.get("foreign_top") or [])[:3]))


def point_ratios(s, l):
    """The ratios recorded in the JSON for one point."""
    keys = ("rps", "cps", "gbps", "p50_us", "p90_us", "p99_us", "max_us", "rtt_p50_us",
            "rtt_p99_us", "cpu_us_per_req", "server_cpu_us_per_req", "cpu_s_per_gb")
    out = {k: ratio(get(s, k), get(l, k)) for k in keys}
    out["busy_cores"] = ratio(get(s, "cpu") and s["cpu"]["busy_cores"],
                              get(l, "cpu") and l["cpu"]["busy_cores"])
    return out


def contended(res, limit=0.5):
    """True when other people's processes took >= limit CPU-s in the run."""
    return bool(res) and (res.get("foreign_cpu_s") or 0) >= limit


def _failed(res):
    return "**FAILED**: %s" % res.get("error", "not run") if res else "not run"


def _columns(workload, setup):
    """[(header, cell(s, l))] of a benchmark's table after its parameter."""
    unit = {"pipe": "msgs", "kv": "ops"}.get(workload, "req")
    per = "op" if workload == "kv" else unit        # CPU µs per ...

    def rate(stack):
        return lambda s, l: (lambda r: fmt_num(get(r, "rps")) if ok(r) else _failed(r))(
            s if stack == "s" else l)

    cols = [("%s/s Slipstream" % unit, rate("s")), ("%s/s Linux" % unit, rate("l")),
            ("ratio", lambda s, l: fmt_ratio(ratio(get(s, "rps"), get(l, "rps"))))]
    if workload == "short":
        cols.append(("conns/s S / L (ratio)", lambda s, l: pair(get(s, "cps"), get(l, "cps"))))
    if workload == "pipe":
        cols.append(("Gbit/s S / L (ratio)", lambda s, l: pair(get(s, "gbps"), get(l, "gbps"), 2)))
    else:
        cols += [("p50 µs S / L (ratio)", lambda s, l: pair(get(s, "p50_us"), get(l, "p50_us"))),
                 ("p99 µs S / L (ratio)", lambda s, l: pair(get(s, "p99_us"), get(l, "p99_us")))]
    cols += [("CPU busy S, cores (cpu0 + cpu1)", lambda s, l: cpu_cell(s)),
             ("CPU busy L, cores (cpu0 + cpu1)", lambda s, l: cpu_cell(l)),
             ("CPU µs/%s S / L (ratio)" % per,
              lambda s, l: pair(get(s, "cpu_us_per_req"), get(l, "cpu_us_per_req")))]
    if setup == "server":
        cols.append(("server CPU µs/%s S / L (ratio)" % per,
                     lambda s, l: pair(get(s, "server_cpu_us_per_req"),
                                       get(l, "server_cpu_us_per_req"))))
    return cols


def bench_table(bench, points):
    """The markdown table of one benchmark.  points: [{"value", "slipstream",
    "linux"}]; a point marked * ran while other processes took CPU."""
    cols = _columns(bench["workload"], bench["setup"])
    head = [bench["param_title"]] + [h for h, _ in cols]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for p in points:
        s, l = p.get("slipstream") or {}, p.get("linux") or {}
        mark = "*" if contended(s) or contended(l) else ""
        cells = [str(p["value"]) + mark] + [f(s, l) for _, f in cols]
        rows.append(table_row(cells))
        if mark:
            notes.append(contended_note(p["value"], s, l))
    text = table_text(rows, notes)
    return text


KV_LAT_ROWS = (("p50 µs", "p50_us"), ("p90 µs", "p90_us"), ("p99 µs", "p99_us"),
               ("max µs", "max_us"))
# Latency from due = the client's own lateness (sent - due) + the round
# trip from the send (reply - sent), per request: the two apart say how
# much of a percentile is the load generator's, which both stacks share.
KV_LAT_PARTS = (("client lateness p50 µs (sent − due)", "late_p50_us"),
                ("client lateness p99 µs", "late_p99_us"),
                ("round trip p50 µs (reply − sent)", "rtt_p50_us"),
                ("round trip p99 µs", "rtt_p99_us"))


def kv_latency_table(lat):
    """The key-value latency point: one row per figure (offered and
    achieved ops/s, p50/p90/p99/max, CPU), Slipstream, Linux, ratio."""
    s, l = lat.get("slipstream") or {}, lat.get("linux") or {}
    rows = ["| at %s ops/s offered | Slipstream | Linux | ratio |" % fmt_num(lat.get("rate")),
            "|---|---:|---:|---:|"]
    if not ok(s) or not ok(l):
        rows += ["| %s | %s |" % (STACK_TITLES[n], _failed(r).replace("|", "/"))
                 for n, r in (("slipstream", s), ("linux", l)) if not ok(r)]
    for title, key in (("ops/s achieved", "rps"),) + KV_LAT_ROWS + KV_LAT_PARTS + (
            ("CPU µs/op", "cpu_us_per_req"), ("server CPU µs/op", "server_cpu_us_per_req")):
        rows.append("| %s | %s | %s | %s |" % (title, fmt_num(get(s, key)), fmt_num(get(l, key)),
                                             fmt_ratio(ratio(get(s, key), get(l, key)))))
    rows.append("| CPU busy, cores (cpu0 + cpu1) | %s | %s | |" % (cpu_cell(s), cpu_cell(l)))
    return "\n".join(rows)


# How the client waited (bench/suite.py --kv-pace); runs before the option
# slept.
KV_PACE_TEXT = {"spin": "the client polls on its own CPU (never late by a wake-up of it)",
                "sleep": "the client blocks between due times and replies (its timer "
                         "wake-ups make it late)"}


def kv_latency_text(lat):
    """The words above the latency table: how its rate was chosen."""
    pk = lat.get("peaks") or {}
    if not lat.get("rate"):
        return "Latency point not run: %s" % ((lat.get("slipstream") or {}).get("error"))
    return ("Latency, open loop: requests due on a fixed schedule at %s ops/s over %s "
            "connections, each one's latency counted from when it was due (no coordinated "
            "omission), %d%% of the lower peak (%s: Slipstream %s, Linux %s ops/s), the same "
            "offered load on both stacks; %s%s." % (
                fmt_num(lat["rate"]), lat["params"]["conns"], round(100 * lat["fraction"]),
                STACK_TITLES.get(pk.get("basis"), "?"), fmt_num(pk.get("slipstream")),
                fmt_num(pk.get("linux")), KV_PACE_TEXT.get(lat["params"].get("pace"),
                                                           KV_PACE_TEXT["sleep"]),
                "; * contended (other processes took %.1f / %.1f CPU-s)" % (
                    (lat.get("slipstream") or {}).get("foreign_cpu_s") or 0,
                    (lat.get("linux") or {}).get("foreign_cpu_s") or 0)
                if contended(lat.get("slipstream")) or contended(lat.get("linux")) else ""))


STACK_SHORT = {"slipstream": "Slipstream", "linux": "Linux"}


def _pct(x):
    return "–" if x is None else "%.1f%%" % (100 * x)


def _retrans(res):
    return fmt_num(res.get("retrans"), 0) if ok(res) and res.get("retrans") is not None else "–"


def _drops(res):
    from .bulk import path_drops
    return fmt_num(path_drops(res), 0) if ok(res) else "–"


def _applied(res):
    la = res.get("loss_applied") if ok(res) else None
    if not la or la.get("rate") is None:
        return "–"
    return "%.2f%%" % (100 * la["rate"])


def _rate_cell(res):
    return fmt_num(get(res, "gbps"), 2) if ok(res) else _failed(res)


def _cpu_per_gb(res):
    """CPU seconds (whole machine) per GB (1e9 bytes) received."""
    return get(res, "cpu_s_per_gb")


def bulk_table(bench, points):
    """The table of a loss or interop benchmark: goodput (Gbit/s, counted
    by the receiver) with the ratio; for loss each stack's penalty against
    its own 0 % point and the penalty ratio; the sender's retransmitted
    segments; CPU."""
    loss = bench["workload"] == "loss"
    head = [bench["param_title"]]
    if not loss:
        head += ["Slipstream bed: sender → receiver", "Linux bed"]
    head += ["Gbit/s Slipstream", "Gbit/s Linux", "ratio"]
    if loss:
        head += ["penalty S", "penalty L", "penalty ratio S/L", "dropped S / L"]
    head += ["retransmitted segs S / L", "other drops S / L", "CPU busy S, cores (cpu0 + cpu1)",
             "CPU busy L, cores (cpu0 + cpu1)", "CPU s per GB S / L (ratio)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for p in points:
        s, l = p.get("slipstream") or {}, p.get("linux") or {}
        mark = "*" if contended(s) or contended(l) else ""
        cells = [str(p["value"]) + mark]
        if not loss:
            from .points import interop_pair
            cells += [" → ".join(STACK_SHORT[x] for x in interop_pair(bench["setup"], st,
                                                                       p["value"]))
                      for st in ("slipstream", "linux")]
        cells += [_rate_cell(s), _rate_cell(l), fmt_ratio(ratio(get(s, "gbps"), get(l, "gbps")))]
        if loss:
            pen = p.get("penalty") or {}
            cells += [_pct(pen.get("slipstream")), _pct(pen.get("linux")),
                      fmt_ratio(pen.get("ratio")), "%s / %s" % (_applied(s), _applied(l))]
        cells += ["%s / %s" % (_retrans(s), _retrans(l)),
                  "%s / %s" % (_drops(s), _drops(l)), cpu_cell(s), cpu_cell(l),
                  pair(_cpu_per_gb(s), _cpu_per_gb(l))]
        rows.append(table_row(cells))
        if mark:
            notes.append(contended_note(p["value"], s, l))
    text = table_text(rows, notes)
    if loss and bench.get("target"):
        text += "\n\nTarget: loss penalty at 1%% no more than twice Linux's: %s." % (
            bench["target"]["words"])
    return text


def interop_table(doc):
    """All four sender x receiver pairs of a run's interop benchmarks, one
    row per measurement, each against the Linux -> Linux run of the same
    point (same bed layout, measured right after it)."""
    from .bulk import interop_matrix
    rows = interop_matrix(doc["benchmarks"])
    if not rows:
        return ""
    head = ["sender → receiver", "set-up (point)", "Gbit/s", "Linux → Linux Gbit/s, same point",
            "ratio", "CPU busy, cores (cpu0 + cpu1)", "CPU s per GB"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        res, lin = r["res"], r["linux_res"]
        same = r["sender"] == "linux" and r["receiver"] == "linux"
        out.append("| " + " | ".join([
            "%s → %s" % (STACK_SHORT[r["sender"]], STACK_SHORT[r["receiver"]]),
            "%s (%s sends)" % (SETUP_SHORT.get(r["setup"], r["setup"]), r["value"]),
            _rate_cell(res), "(itself)" if same else _rate_cell(lin),
            "–" if same else fmt_ratio(ratio(get(res, "gbps"), get(lin, "gbps"))),
            cpu_cell(res), fmt_num(_cpu_per_gb(res))]) + " |")
    return "\n".join(out)


SETUP_SHORT = {"server": "server-side", "both": "both ends"}


def markdown(doc):
    """The whole results page from the JSON document of a run."""
    m = doc["machine"]
    out = ["# Slipstream vs Linux: benchmark results", "",
           "Generated by `%s` (%s)." % (doc["command"], doc["mode"]), "",
           "- date: %s; elapsed %.0f s" % (m["date_utc"], doc.get("elapsed_s") or 0),
           "- machine: %s vCPUs (%s), %s GiB, kernel %s, Debian %s, DPDK %s" % (
               m["cpus"], m["cpu_model"], m["memory_gib"], m["kernel"], m["os"], m["dpdk"]),
           "- build: commit %s%s" % ((m["git_commit"] or "?")[:12],
                                     " (with uncommitted changes)" if m["git_dirty"] else ""),
           "- load average before %s, after %s" % (" ".join(doc["loadavg_before"]),
                                                  " ".join(doc.get("loadavg_after") or [])),
           "- settings: connections must be up within %s s; one run per point, Slipstream "
           "then Linux back to back; measured and warm-up seconds with each benchmark" % (
               doc["settings"]["connect_seconds"]),
           "- descriptor limit of every program: %s (soft, hard)" % (doc.get("nofile"),),
           "",
           "Ratios are Slipstream / Linux.  CPU busy is the whole machine from "
           "/proc/stat over the measured window (client, server, service and kernel "
           "together), in cores of %s, with each CPU's share; CPU µs/req is busy time "
           "per request.  In the server-side set-up CPU 1 is the whole server side, so "
           "\"server CPU µs/req\" is CPU 1's busy time per request." % m["cpus"], ""]
    for setup, stacks in doc["setups"].items():
        out += ["## Layout: %s" % stacks["title"], ""]
        for stack in ("slipstream", "linux"):
            rec = stacks.get(stack)
            if rec:
                out.append("- **%s**: %s" % (STACK_TITLES[stack], rec.get("layout", "–")))
                if rec.get("error"):
                    out.append("  - **set-up FAILED**: %s" % rec["error"])
        out.append("")
    for b in doc["benchmarks"]:
        st = b.get("settings") or doc["settings"]
        bulk = b["workload"] in ("loss", "interop")
        out += ["## %s (%s)" % (b["title"], b["setup_title"]), "",
                "`%s`: %s s measured per point after %s s warm-up%s." % (
                    b["name"], st["seconds"], st["warmup"],
                    "; messages counted where they arrive (the server for a receive-only "
                    "server, the client for a send-only one)" if b["workload"] == "pipe"
                    else "; peak throughput in closed loop, one request in flight per "
                    "connection, after every key was stored (bench/kv_load compares every "
                    "GET's whole reply with the key's value)" if b["workload"] == "kv"
                    else "; goodput counted by the receiver over the window, every byte "
                    "checked; retransmitted segments and dropped segments over the whole "
                    "client run; penalty = 1 − goodput / goodput at 0 % loss, same stack"
                    if b["workload"] == "loss" else "; goodput counted by the receiver, "
                    "every byte checked; retransmitted segments are the sender's"
                    if bulk else ""), ""]
        nb = b.get("netdev_max_backlog")
        if nb:
            out += ["net.core.netdev_max_backlog: %s during these points." % (
                "%s (was %s, put back after)" % (nb["set"], nb["was"]) if "set" in nb
                else "%s (left as it was)" % nb.get("left")), ""]
        out += [bulk_table(b, b["points"]) if bulk else bench_table(b, b["points"]), ""]
        if b.get("latency"):
            out += [kv_latency_text(b["latency"]), "", kv_latency_table(b["latency"]), ""]
    matrix = interop_table(doc)
    if matrix:
        out += ["## Interoperation: sender × receiver", "",
                "Each pair's goodput beside the Linux → Linux run of the same point "
                "(same bed and layout, right after it).", "", matrix, ""]
    if doc.get("failed"):
        out += ["## Failed points", ""] + ["- %s" % f for f in doc["failed"]] + [""]
    if doc.get("warnings"):
        out += ["## Warnings", ""] + ["- %s" % w for w in doc["warnings"]] + [""]
    return "\n".join(out)
