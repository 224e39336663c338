"""PNG figures of a run (matplotlib, headless).  Optional: without
matplotlib the suite still writes the JSON and the markdown, and says so.

One figure per benchmark, three panels over its varied parameter:
throughput (both stacks), latency (p50 solid, p99 dashed; Gbit/s for
pipelined RPC) and CPU per request, each with the Slipstream/Linux ratio
written at every point.
Failed points are left out of the lines and marked "failed" on the axis.
"""

COLORS = {"slipstream": "tab:blue", "linux": "tab:orange"}
LABELS = {"slipstream": "Slipstream", "linux": "Linux"}


def available():
    """None if matplotlib can be used, else why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except Exception as e:          # ImportError, or a broken backend
        return "%s: %s" % (type(e).__name__, e)
    return None


def _series(points, stack, key):
    xs, ys = [], []
    for p in points:
        r = p.get(stack) or {}
        if not r.get("error") and r.get(key) is not None:
            xs.append(p["value"])
            ys.append(r[key])
    return xs, ys


def _panel(ax, points, key, ylabel, log_y=False, extra=None):
    for stack in ("slipstream", "linux"):
        xs, ys = _series(points, stack, key)
        ax.plot(xs, ys, "o-", color=COLORS[stack], label=LABELS[stack])
        if extra:
            xs2, ys2 = _series(points, stack, extra)
            ax.plot(xs2, ys2, "s--", color=COLORS[stack], alpha=0.6,
                    label=LABELS[stack] + " p99")
    for i, p in enumerate(points):
        s, l = p.get("slipstream") or {}, p.get("linux") or {}
        if s.get("error") or l.get("error"):
            who = " + ".join(n for n, r in (("Slipstream", s), ("Linux", l)) if r.get("error"))
            ax.annotate("%s failed" % who, (p["value"], 0), xycoords=("data", "axes fraction"),
                        xytext=(0, 4), textcoords="offset points", fontsize=7, color="red",
                        ha="right" if i == len(points) - 1 else "center")
        elif s.get(key) and l.get(key):
            ax.annotate("%.2f×" % (s[key] / l[key]), (p["value"], max(s[key], l[key])),
                        xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _latency_bars(ax, lat):
    """The key-value latency point: p50/p90/p99/max of both stacks as bars
    (log scale), the ratio over each pair."""
    keys = (("p50", "p50_us"), ("p90", "p90_us"), ("p99", "p99_us"), ("max", "max_us"))
    width = 0.38
    for j, stack in enumerate(("slipstream", "linux")):
        r = lat.get(stack) or {}
        if r.get("error"):
            ax.annotate("%s failed" % LABELS[stack], (0.02, 0.9 - 0.08 * j),
                        xycoords="axes fraction", fontsize=7, color="red")
            continue
        xs = [i + (j - 0.5) * width for i in range(len(keys))]
        ax.bar(xs, [r.get(k) or 0 for _, k in keys], width, color=COLORS[stack],
               label=LABELS[stack])
    s, l = lat.get("slipstream") or {}, lat.get("linux") or {}
    for i, (_, k) in enumerate(keys):
        if not s.get("error") and not l.get("error") and s.get(k) and l.get(k):
            ax.annotate("%.2f×" % (s[k] / l[k]), (i, max(s[k], l[k])), xytext=(0, 5),
                        textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([t for t, _ in keys])
    ax.set_yscale("log")
    ax.set_ylabel("latency µs")
    rate = lat.get("rate")
    ax.set_title("open loop at %s ops/s (%d%% of the lower peak)" % (
        "{:,.0f}".format(rate) if rate else "–", round(100 * (lat.get("fraction") or 0))),
        fontsize=8)
    ax.grid(True, alpha=0.3, axis="y")
    ax.legend(fontsize=7)


def _categorical(ax, points, key, ylabel, scale=1.0, fmt="%.2f×", style="o-"):
    """Both stacks over the points at evenly spaced positions (loss % has
    0; interop's values are words), the Slipstream/Linux ratio above each."""
    xs = list(range(len(points)))
    for stack in ("slipstream", "linux"):
        pts = [(i, (p.get(stack) or {}).get(key)) for i, p in enumerate(points)
               if not (p.get(stack) or {}).get("error")]
        pts = [(i, v * scale) for i, v in pts if v is not None]
        ax.plot([i for i, _ in pts], [v for _, v in pts], style, color=COLORS[stack],
                label=LABELS[stack])
    for i, p in enumerate(points):
        s, l = p.get("slipstream") or {}, p.get("linux") or {}
        if s.get("error") or l.get("error"):
            ax.annotate("failed", (i, 0), xycoords=("data", "axes fraction"), xytext=(0, 4),
                        textcoords="offset points", fontsize=7, color="red", ha="center")
        elif s.get(key) and l.get(key):
            ax.annotate(fmt % (s[key] / l[key]), (i, max(s[key], l[key]) * scale),
                        xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(xs)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _penalty_panel(ax, points):
    xs = list(range(len(points)))
    for stack in ("slipstream", "linux"):
        pts = [(i, (p.get("penalty") or {}).get(stack)) for i, p in enumerate(points)]
        pts = [(i, 100 * v) for i, v in pts if v is not None]
        ax.plot([i for i, _ in pts], [v for _, v in pts], "o-", color=COLORS[stack],
                label=LABELS[stack])
    for i, p in enumerate(points):
        pen = p.get("penalty") or {}
        if pen.get("ratio") is not None:
            ax.annotate("%.2f×" % pen["ratio"], (i, 100 * max(pen["slipstream"], pen["linux"])),
                        xytext=(0, 5), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(xs)
    ax.set_ylabel("throughput penalty % (vs 0 % loss, same stack)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def bulk_figure(bench, path, plt):
    """loss: goodput, penalty and retransmitted segments over the loss
    rate; interop: goodput, CPU s per GB over the points."""
    points = bench["points"]
    loss = bench["workload"] == "loss"
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    style = "o-" if loss else "o"       # interop's points are separate pairs
    _categorical(axes[0], points, "gbps", "goodput Gbit/s (receiver)", style=style)
    if loss:
        _penalty_panel(axes[1], points)
        _categorical(axes[2], points, "retrans", "sender's retransmitted segments (run)")
        labels = ["%g" % p["value"] for p in points]
    else:
        from .points import interop_pair
        _categorical(axes[1], points, "cpu_s_per_gb", "CPU s per GB (whole machine)",
                     style=style)
        _categorical(axes[2], points, "retrans", "sender's retransmitted segments (run)",
                     style=style)
        labels = ["S: %s\nL: %s" % tuple(" → ".join(LABELS[x] for x in interop_pair(
            bench["setup"], st, p["value"])) for st in ("slipstream", "linux"))
            for p in points]
    for ax in axes:
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_xlabel(bench["param_title"])
    fig.suptitle("%s — %s (%s)" % (bench["name"], bench["title"], bench["setup_title"]),
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def bench_figure(bench, path):
    """Write one benchmark's PNG to path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if bench["workload"] in ("loss", "interop"):
        return bulk_figure(bench, path, plt)
    points = bench["points"]
    lat = bench.get("latency")
    fig, axes = plt.subplots(1, 4 if lat else 3, figsize=(20 if lat else 15, 4.2))
    if bench["workload"] == "pipe":
        _panel(axes[0], points, "rps", "messages/s")
        _panel(axes[1], points, "gbps", "Gbit/s")
        _panel(axes[2], points, "cpu_us_per_req", "CPU µs per message (whole machine)")
    else:
        _panel(axes[0], points, "rps", "operations/s" if bench["workload"] == "kv"
               else "requests/s")
        _panel(axes[1], points, "p50_us", "latency µs (p50 solid, p99 dashed)", log_y=True,
               extra="p99_us")
        _panel(axes[2], points, "cpu_us_per_req", "CPU µs per request (whole machine)")
    if lat:
        _latency_bars(axes[3], lat)
    for ax in axes[:3]:
        ax.set_xscale("log", base=2)
        ax.set_xlabel(bench["param_title"])
        ax.set_xticks([p["value"] for p in points])
        ax.set_xticklabels([str(p["value"]) for p in points])
    fig.suptitle("%s — %s (%s)" % (bench["name"], bench["title"], bench["setup_title"]),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
