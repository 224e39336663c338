"""`slipstream` command line: stats, arp, testbed, run."""

import argparse
import json
import os
import sys

from . import VERSION, ctl, render, run, testbed

EXIT_OK, EXIT_ERROR = 0, 1


def _err(msg):
    print("slipstream: %s" % msg, file=sys.stderr)
    return EXIT_ERROR


def _query(args, command):
    """Run one control query; returns (reply, raw_bytes) or raises ctl.CtlError."""
    raw = ctl.ctl_query_raw(command, args.ctl, args.timeout)
    reply = ctl.ctl_query_parse(raw, command)
    return reply, raw


def _show(args, command, text_format):
    """Query one command; print its JSON or its text rendering."""
    try:
        reply, _ = _query(args, command)
    except ctl.CtlError as e:
        return _err(str(e))
    if args.json:
        print(json.dumps(reply, indent=2))
    else:
        sys.stdout.write(text_format(reply))
    return EXIT_OK


def cmd_stats(args):
    return _show(args, "stats",
                 lambda reply: render.stats_format(reply, nonzero=args.nonzero))


def cmd_arp(args):
    return _show(args, "arp", render.arp_format)


def _need_root(what):
    if os.geteuid() != 0:
        raise testbed.TestbedError("testbed %s needs root (network namespaces)" % what)


def _status_print(st, as_json):
    if as_json:
        print(json.dumps(st, indent=2))
        return
    print("testbed %s: %s" % (st["prefix"], st["state"]))
    svc = st.get("service")
    if svc:
        print("  service  ns %-12s iface %-10s ip %s  gateway %s  veth mac %s"
              % (svc["ns"], svc["iface"] or "-", svc["cidr"], svc["gateway"],
                 svc["mac"] or "-"))
        print("           dpdk args (%s): %s" % (svc["pmd"], " ".join(svc["dpdk_args"])))
    sw = st.get("switch")
    if sw:
        print("  switch   ns %-12s bridge %s  ports %s"
              % (sw["ns"], sw["bridge"] or "-", " ".join(sw["ports"]) or "-"))
    for p in st.get("peers", []):
        print("  peer%-4d ns %-12s iface %-10s ip %-16s mac %s"
              % (p["index"], p["ns"], p["iface"] or "-", p["cidr"] or "-",
                 p["mac"] or "-"))
    for ns, tables in st.get("nft_tables", {}).items():
        print("  nft      %s: %s" % (ns, ", ".join(tables)))
    for where, kinds in st.get("qdiscs", {}).items():
        print("  shaping  %s: %s" % (where, " / ".join(kinds)))
    if st.get("root_links"):
        print("  leftover links in the root namespace: %s" % " ".join(st["root_links"]))


def cmd_testbed(args):
    try:
        if args.action == "up":
            _need_root("up")
            tb = testbed.Testbed(args.prefix, peers=args.peers, switch=args.switch,
                                 loss=args.loss, ecn_all=args.ecn_all,
                                 ecn_mark_above=args.ecn_mark_above,
                                 rate=args.rate, queue=args.queue,
                                 reorder=args.reorder, rate_dir=args.rate_dir,
                                 ecn_marker=args.ecn_marker)
            tb.up()
            _status_print(tb.status(args.pmd), args.json)
        elif args.action == "down":
            _need_root("down")
            removed = testbed.down(args.prefix, kill=not args.no_kill)
            if args.json:
                print(json.dumps({"prefix": args.prefix, "removed": removed}, indent=2))
            else:
                for what in removed:
                    print("removed %s" % what)
                print("testbed %s: down" % args.prefix)
        else:
            _status_print(testbed.status(args.prefix, args.pmd), args.json)
    except testbed.TestbedError as e:
        return _err(str(e))
    return EXIT_OK


def _pow2(text):
    v = int(text, 0)
    if v <= 0 or v & (v - 1):
        raise argparse.ArgumentTypeError("must be a power of two")
    return v


def _positive(text):
    v = int(text, 0)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return v


def cmd_run(args):
    try:
        run.run_exec(args)  # returns only on error
    except run.RunError as e:
        _err(str(e))
        return 127
    return EXIT_ERROR


def parser_build():
    ap = argparse.ArgumentParser(
        prog="slipstream", description="Slipstream TCP service tool.")
    ap.add_argument("--version", action="version", version="slipstream " + VERSION)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def ctl_opts(p):
        p.add_argument("--json", action="store_true",
                       help="print the service's JSON reply (pretty)")
        p.add_argument("--ctl", metavar="PATH",
                       help="control socket (default: $%s or %s)"
                       % (ctl.CTL_ENV, ctl.DEFAULT_CTL_PATH))
        p.add_argument("--timeout", type=float, default=5.0, metavar="S",
                       help="seconds to wait for the reply (default 5)")

    p = sub.add_parser("stats", help="show the service's counters")
    ctl_opts(p)
    p.add_argument("--nonzero", action="store_true", help="hide zero counters")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("arp", help="show the service's ARP cache")
    ctl_opts(p)
    p.set_defaults(func=cmd_arp)

    p = sub.add_parser("testbed", help="network-namespace test bed",
                       description="Build, remove or show a veth/namespace test "
                       "bed: <prefix>-svc for the service, <prefix>-peerN for "
                       "Linux peers, <prefix>-sw with a bridge if --switch.")
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--prefix", default="ss",
                   help="name prefix (default ss; at most %d chars)"
                   % testbed.MAX_PREFIX_LEN)
    p.add_argument("--json", action="store_true", help="JSON output")
    p.add_argument("--pmd", choices=testbed.PMDS,
                   default=os.environ.get("SLIPSTREAM_PMD", "af_xdp")
                   if os.environ.get("SLIPSTREAM_PMD") in testbed.PMDS else "af_xdp",
                   help="DPDK PMD for the dpdk_args shown (default af_xdp or "
                   "$SLIPSTREAM_PMD)")
    p.add_argument("--peers", type=int, default=1, metavar="N",
                   help="up: number of Linux peers (default 1; >1 implies --switch)")
    p.add_argument("--switch", action="store_true",
                   help="up: join everything through a bridge in <prefix>-sw")
    p.add_argument("--loss", type=float, metavar="PCT",
                   help="up: drop this percentage of IPv4 packets (0.1 steps)")
    p.add_argument("--reorder", type=float, metavar="PCT",
                   help="up: delay this percentage of IPv4 packets in the switch "
                   "so later ones overtake them (0.1 steps; implies --switch; "
                   "not with --rate)")
    ecn = p.add_mutually_exclusive_group()
    ecn.add_argument("--ecn-all", action="store_true",
                     help="up: set CE on every ECT packet")
    ecn.add_argument("--ecn-mark-above", type=int, metavar="BYTES",
                     help="up: set CE on ECT packets toward the service once a "
                     "virtual queue at --rate exceeds BYTES (needs --rate)")
    p.add_argument("--rate", type=float, metavar="MBIT",
                   help="up: shape traffic toward the service to MBIT Mbit/s")
    p.add_argument("--queue", type=int, default=100, metavar="PKTS",
                   help="up: bottleneck queue for --rate in packets (default 100)")
    p.add_argument("--rate-dir", choices=testbed.RATE_DIRS, default="to-service",
                   help="up: where --rate, --ecn-mark-above (and --ecn-all) act: "
                   "to-service (default: the switch port toward the service, or "
                   "peer1's veth) or to-peer (the switch port toward peer1, so "
                   "service -> peer1 and peer2..N -> peer1 share it; implies --switch)")
    p.add_argument("--ecn-marker", choices=testbed.ECN_MARKERS, default="nft",
                   help="up: how --ecn-mark-above decides: nft (default: a token "
                   "bucket at the link rate) or bpf (the real queue's backlog, "
                   "DCTCP-style; needs clang and libbpf headers)")
    p.add_argument("--no-kill", action="store_true",
                   help="down: leave processes running inside the namespaces")
    p.set_defaults(func=cmd_testbed)

    p = sub.add_parser("run", help="run a program with its TCP sockets accelerated",
                       description="Execute CMD with LD_PRELOAD set to the Slipstream "
                       "shim: its IPv4 TCP sockets go through the service, everything "
                       "else through the kernel.  The command replaces this process.",
                       usage="slipstream run [OPTIONS] -- CMD [ARGS...]")
    p.add_argument("--sock", metavar="PATH",
                   help="service socket (default: $SLIPSTREAM_SOCK or %s)"
                   % ctl.DEFAULT_CTL_PATH)
    p.add_argument("--strict", action="store_true",
                   help="fail socket() when the service is unreachable "
                   "(default: warn once and use the kernel stack)")
    p.add_argument("--conns", type=_positive, metavar="N",
                   help="connection slots to ask for (default 4096)")
    p.add_argument("--buf", type=_pow2, metavar="BYTES",
                   help="receive and transmit ring per connection, power of two "
                   "(default 262144)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD",
                   help="the command and its arguments, after --")
    p.set_defaults(func=cmd_run)
    return ap


def main(argv=None):
    args = parser_build().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # e.g. `slipstream stats | head`: not an error worth a traceback.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
