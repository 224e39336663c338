"""Human-readable rendering of the service's stats and ARP replies."""

# Counter groups in display order: (title, name prefix).  Names matching no
# prefix land in "other", so counters the service adds later still show up.
COUNTER_GROUPS = (("rx", "rx_"), ("tx", "tx_"), ("tcp", "tcp_"), ("app", "app_"),
                  ("drops", "drop_"))


def _onoff(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    return "?" if value is None else str(value)


def counters_group(counters):
    """Split a counters dict into [(title, [(name, value), ...]), ...].

    Groups keep the service's order within each group; empty groups are left out.
    """
    groups = {title: [] for title, _ in COUNTER_GROUPS}
    other = []
    for name, value in counters.items():
        for title, prefix in COUNTER_GROUPS:
            if name.startswith(prefix):
                groups[title].append((name, value))
                break
        else:
            other.append((name, value))
    out = [(title, groups[title]) for title, _ in COUNTER_GROUPS if groups[title]]
    if other:
        out.append(("other", other))
    return out


def service_header(service):
    """One line of service info, then one line about the DPDK port."""
    svc = service or {}
    uptime = svc.get("uptime_s")
    uptime = "%.1fs" % uptime if isinstance(uptime, (int, float)) else "?"
    lines = ["slipstreamd %s  pid %s  up %s  ip %s  gateway %s  mac %s" % (
        svc.get("version", "?"), svc.get("pid", "?"), uptime,
        svc.get("ip", "?"), svc.get("gateway", "?"), svc.get("mac", "?"))]
    port = svc.get("port")
    if isinstance(port, dict):
        lines.append(
            "port %s  %s (%s)  rxq %s/%s  txq %s  mtu %s  rss %s (reta %s)  "
            "csum rx %s tx %s  tso %s" % (
                port.get("id", "?"), port.get("driver", "?"),
                port.get("name", "?"), port.get("rx_queues", "?"),
                port.get("max_rx_queues", "?"), port.get("tx_queues", "?"),
                port.get("mtu", "?"), _onoff(port.get("rss")),
                port.get("reta_size", "?"), _onoff(port.get("rx_csum_offload")),
                _onoff(port.get("tx_csum_offload")), _onoff(port.get("tso"))))
    return lines


def stats_format(reply, nonzero=False):
    """Render a stats reply as text: header, then counters grouped by prefix,
    names left-aligned and values right-aligned in one column."""
    lines = service_header(reply.get("service"))
    gauges = reply.get("gauges")
    if isinstance(gauges, dict):
        lines.append("now  " + "  ".join("%s %s" % (k, v) for k, v in gauges.items()))
    nic = reply.get("nic")
    if isinstance(nic, dict):
        lines.append("nic  " + "  ".join("%s %s" % (k, v) for k, v in nic.items()))
    counters = reply.get("counters") or {}
    if nonzero:
        counters = {k: v for k, v in counters.items() if v}
    groups = counters_group(counters)
    if not groups:
        lines += ["", "(no counters)" if not nonzero else "(all counters zero)"]
        return "\n".join(lines) + "\n"
    name_w = max(len(name) for _, items in groups for name, _ in items)
    value_w = max(len(str(value)) for _, items in groups for _, value in items)
    for title, items in groups:
        lines += ["", title + ":"]
        for name, value in items:
            lines.append("  %-*s  %*s" % (name_w, name, value_w, value))
    return "\n".join(lines) + "\n"


def arp_format(reply):
    """Render an arp reply as a table."""
    entries = reply.get("entries") or []
    if not entries:
        return "(ARP cache is empty)\n"
    rows = [("IP", "MAC", "STATE", "AGE")]
    for e in entries:
        age = e.get("age_s")
        age = "%.1fs" % age if isinstance(age, (int, float)) else "?"
        rows.append((str(e.get("ip", "?")), str(e.get("mac", "?")),
                     str(e.get("state", "?")), age))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    text = "".join("%-*s  %-*s  %-*s  %s\n" % (widths[0], r[0], widths[1], r[1],
                                              widths[2], r[2], r[3])
                   for r in rows)
    if reply.get("truncated"):
        text += "(truncated: the cache holds more entries than one reply carries)\n"
    return text
