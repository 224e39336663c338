"""The pure helpers of bench/suite.py (bench/benchsuite/): /proc parsing,
ratios, number and table formatting, benchmark selection.  No root, no test
bed, no benchmark run: the suite itself is not a test (its numbers are not
pass/fail)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from benchsuite import cpu, paths, points, report, runner  # noqa: E402

pytestmark = pytest.mark.no_root

STAT_A = """cpu  100 0 50 800 50 0 0 0 0 0
cpu0 60 0 20 400 20 0 0 0 0 0
cpu1 40 0 30 400 30 0 0 0 0 0
intr 12345
processes 1000
"""
STAT_B = """cpu  250 0 100 1000 50 0 50 0 0 0
cpu0 160 0 20 400 20 0 0 0 0 0
cpu1 90 0 80 600 30 0 50 0 0 0
processes 1007
"""


def test_results_carry_relative_paths():
    doc = {"command": "/usr/bin/python3 bench/suite.py --only rpc-both --out /scratch/x",
           "argv": ["bench/suite.py", "--out", "/scratch/x"],
           "points": [{"client_argv": "taskset -c 0 /r/build/bench/linux_rpc --conns 1",
                       "service_argv": ["/r/tools/slipstream run -- /r/build/bench/pipe_server"],
                       "n": 3}]}
    got = paths.relative(doc, "/r", "/r/build", "/scratch/x")
    assert got["command"] == "/usr/bin/python3 bench/suite.py --only rpc-both --out DIR"
    assert got["argv"] == ["bench/suite.py", "--out", "DIR"]
    assert got["points"][0] == {"client_argv": "taskset -c 0 build/bench/linux_rpc --conns 1",
                                "service_argv": ["tools/slipstream run -- build/bench/pipe_server"],
                                "n": 3}
    # A build outside the repository is named as the default one.
    assert paths.relative("/b2/bench/kv_load", "/r", "/b2") == "build/bench/kv_load"


def test_parse_stat_and_delta():
    a, b = cpu.parse_stat(STAT_A), cpu.parse_stat(STAT_B)
    assert a[0]["cpu0"] == [60, 0, 20, 400, 20, 0, 0, 0] and a[1] == 1000
    d = cpu.delta(a, b)
    # cpu0: 100 user ticks of 100: fully busy; cpu1: 50 user + 50 system +
    # 50 softirq busy of 350 (200 idle); the "cpu" line: 250 busy of 450.
    assert d["cpu0"]["busy"] == pytest.approx(1.0)
    assert d["cpu1"]["busy"] == pytest.approx(150 / 350)
    assert d["cpu1"]["softirq"] == pytest.approx(50 / 350)
    assert d["busy_cores"] == pytest.approx(2 * 250 / 450)
    assert d["forks"] == 7
    assert cpu.per_cpu_busy(d) == [pytest.approx(1.0), pytest.approx(150 / 350)]


def test_softnet():
    a = cpu.parse_softnet("0000000a 00000001 00000000 0\n00000010 00000000 00000002 0\n")
    b = cpu.parse_softnet("0000000f 00000003 00000000 0\n00000020 00000000 00000002 0\n")
    assert a[1] == {"processed": 16, "dropped": 0, "squeezed": 2}
    assert cpu.softnet_delta(a, b) == {"cpu0": {"processed": 5, "dropped": 2, "squeezed": 0}}


def test_foreign_cpu_counts_new_and_grown_processes():
    before = {1: ("cc1", 100), 2: ("make", 5)}
    after = {1: ("cc1", 150), 2: ("make", 5), 3: ("ld", 20)}
    secs, top = cpu.foreign_cpu(before, after)
    hz = __import__("os").sysconf("SC_CLK_TCK")
    assert secs == pytest.approx(70 / hz)
    assert top[0].startswith("cc1 ")


def test_ratio_and_numbers():
    assert report.ratio(3.0, 2.0) == 1.5
    assert report.ratio(None, 2.0) is None and report.ratio(1.0, 0) is None
    assert report.fmt_num(123456.7) == "123,457"
    assert report.fmt_num(12.345) == "12.3"
    assert report.fmt_num(1.234) == "1.23"
    assert report.fmt_num(None) == "–" and report.fmt_num(float("nan")) == "–"
    assert report.pair(200.0, 100.0) == "200 / 100 (2.00)"
    assert report.pair(None, 100.0) == "– / 100 (–)"


def _res(rps, **kw):
    r = {"rps": rps, "p50_us": 10.0, "p99_us": 20.0, "cps": kw.pop("cps", None),
         "cpu": {"busy_cores": 1.5, "cpu": {"busy": 0.75}, "cpu0": {"busy": 0.5},
                 "cpu1": {"busy": 1.0}}, "foreign_cpu_s": 0.0}
    r.update(kw)
    runner.derive(r, "server")
    return r


def test_derive_cpu_per_request():
    r = _res(10000.0)
    assert r["cpu_us_per_req"] == pytest.approx(150.0)
    assert r["server_cpu_us_per_req"] == pytest.approx(100.0)


def test_table_reports_failures_without_numbers():
    bench = {"workload": "rpc", "setup": "server", "param_title": "connections"}
    pts = [{"value": 1, "slipstream": _res(20000.0), "linux": _res(10000.0)},
           {"value": 16384, "slipstream": {"error": "client: ETIMEDOUT (12 of 16384 "
                                                    "connections up after 20 s)"},
            "linux": _res(5000.0, foreign_cpu_s=2.0, foreign_top=["cc1 2.00s"])}]
    t = report.bench_table(bench, pts).splitlines()
    assert t[0].startswith("| connections | req/s Slipstream | req/s Linux | ratio |")
    assert t[2].startswith("| 1 | 20,000 | 10,000 | 2.00 | 10.0 / 10.0 (1.00) |")
    assert "**FAILED**: client: ETIMEDOUT" in t[3] and t[3].startswith("| 16384* |")
    assert "| 5,000 | – | – / 10.0 (–) |" in t[3]     # no ratio where one side failed
    assert "contended" in t[-1] and "cc1" in t[-1]
    ratios = report.point_ratios(pts[1]["slipstream"], pts[1]["linux"])
    assert ratios["rps"] is None


def test_select():
    assert [b.name for b in points.select(None)] == [b.name for b in points.BENCHES]
    assert [b.name for b in points.select(["rpc"])] == ["rpc-server", "rpc-both"]
    assert [b.name for b in points.select(["both", "short-server"])] == \
        ["short-server", "rpc-both", "short-both", "interop-both"]
    with pytest.raises(points.SelectError):
        points.select(["nope"])
    assert points.point_params(points.BY_NAME["short-both"], 4) == \
        {"size": 64, "conns": 1024, "rpcs_per_conn": 4}


def test_select_values():
    vals = points.parse_values("64,4096")
    assert vals == (64, 4096)
    assert points.parse_values(None) is None and points.parse_values("") is None
    with pytest.raises(points.SelectError):
        points.parse_values("64,x1")        # a value is a number or a word (interop)
    rpc = points.BY_NAME["rpc-server"]
    assert points.values(rpc, False, vals) == (64, 4096)
    assert points.values(rpc, True, vals) == ()          # quick has 1 and 1024
    # Benchmarks without any of the values drop out (short-* has 1..256).
    assert [b.name for b in points.select(["server"], False, (4096,))] == ["rpc-server"]
    assert [b.name for b in points.select(None, False, (64,))] == \
        ["rpc-server", "short-server", "pipe-recv250", "pipe-recv1000", "pipe-send250",
         "pipe-send1000", "kv-server", "rpc-both", "short-both"]


def test_last_json():
    assert runner.last_json('noise\n{"a": 1}\n{"b": 2}\n') == {"b": 2}
    assert runner.last_json("nothing") is None


def test_plots_are_optional(monkeypatch):
    from benchsuite import plots
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import fails
    assert "matplotlib" in (plots.available() or "")


def test_pipe_rate_counts_where_messages_arrive():
    log = ('pipe_server: listening on port 7101\n'
           '{"msgs":1000,"bytes":64000,"t_ns":1000000000,"conns":100,"errors":0}\n'
           '{"msgs":5000,"bytes":320000,"t_ns":3000000000,"conns":100,"errors":0}\n'
           '{"msgs":5100,"bytes":326400,"t_ns":3100000000,"conns":0,"errors":0}\n')
    rate, how = runner.pipe_rate({"mode": "recv", "size": 64}, {"seconds": 2.0}, log)
    assert rate == pytest.approx(2000.0) and how == "server received"
    rate, how = runner.pipe_rate({"mode": "send", "size": 64},
                                 {"seconds": 2.0, "bytes": 64 * 3000}, "")
    assert rate == pytest.approx(1500.0) and how == "client received"
    assert runner.pipe_rate({"mode": "recv", "size": 64}, {"seconds": 2.0}, "")[0] is None


def test_kv_bench_and_client_argv():
    kv = points.BY_NAME["kv-server"]
    assert [b.name for b in points.select(["kv"])] == ["kv-server"]
    assert kv.setup == "server" and kv.full == (16, 64, 256, 1024) and kv.quick == (64,)
    params = points.point_params(kv, 64)
    assert params == {"keys": 100000, "key_size": 32, "value_size": 64, "zipf": 0.9,
                      "get_ratio": 0.9, "conns": 64}
    st = runner.Settings(8, 2, 20)
    assert runner.client_argv("/b", kv, params, st, "198.18.0.1", 11211) == [
        "/b/bench/kv_load", "--keys", "100000", "--zipf", "0.9", "--get-ratio", "0.9",
        "--stall", "5", "--connect", "198.18.0.1:11211", "--conns", "64", "--seconds", "8",
        "--warmup", "2", "--connect-seconds", "20", "--phases"]
    argv = runner.client_argv("/b", kv, dict(params, rate=12345.6), st, "198.18.0.1", 11211)
    assert argv[-2:] == ["--rate", "12346"]
    # The latency point's pace (bench/suite.py --kv-pace): spin polls.
    argv = runner.client_argv("/b", kv, dict(params, rate=9000, pace="spin"), st,
                              "198.18.0.1", 11211)
    assert argv[-3:] == ["--rate", "9000", "--spin"]
    argv = runner.client_argv("/b", kv, dict(params, rate=9000, pace="sleep"), st,
                              "198.18.0.1", 11211)
    assert argv[-2:] == ["--rate", "9000"]
    mc = runner.memcached_argv(11211)
    assert mc[0] == "/usr/bin/memcached"
    for flag, val in (("-t", "1"), ("-U", "0"), ("-p", "11211"), ("-l", "0.0.0.0")):
        assert mc[mc.index(flag) + 1] == val


def test_kv_latency_rate_is_a_share_of_the_lower_peak():
    pts = [{"slipstream": {"rps": 100000.0}, "linux": {"rps": 80000.0}},
           {"slipstream": {"rps": 120000.0}, "linux": {"error": "x", "rps": 999999.0}},
           {"slipstream": {"rps": 90000.0}, "linux": {"rps": 85000.0}}]
    rate, basis = points.kv_latency_rate(pts)
    assert rate == pytest.approx(0.15 * 85000.0)
    assert basis == {"slipstream": 120000.0, "linux": 85000.0, "basis": "linux",
                     "fraction": 0.15}
    # Slipstream's lower: its peak sets the rate.
    rate, basis = points.kv_latency_rate(pts[:1], 0.5)
    assert rate == 40000.0 and basis["basis"] == "linux"
    rate, basis = points.kv_latency_rate([{"slipstream": {"rps": 50.0},
                                           "linux": {"rps": 60.0}}])
    assert rate == pytest.approx(7.5) and basis["basis"] == "slipstream"
    # One stack failed everywhere: the other's peak; both: no rate.
    rate, basis = points.kv_latency_rate([{"slipstream": {"error": "e"},
                                           "linux": {"rps": 1000.0}}])
    assert rate == pytest.approx(150.0) and basis["slipstream"] is None
    rate, why = points.kv_latency_rate([{"slipstream": {"error": "e"}, "linux": {"error": "f"}}])
    assert rate is None and why == "no peak measured on either stack"


def test_kv_latency_table():
    s = _res(12000.0, p90_us=15.0, max_us=900.0, late_p50_us=2.0, late_p99_us=5.0,
             rtt_p50_us=8.0, rtt_p99_us=16.0)
    l = _res(12000.0, p50_us=20.0, p90_us=30.0, p99_us=40.0, max_us=300.0, late_p50_us=4.0,
             late_p99_us=5.0, rtt_p50_us=16.0, rtt_p99_us=32.0)
    lat = {"rate": 12000.0, "fraction": 0.15, "params": {"conns": 64},
           "peaks": {"slipstream": 90000.0, "linux": 80000.0, "basis": "linux"},
           "slipstream": s, "linux": l}
    t = report.kv_latency_table(lat).splitlines()
    assert t[0] == "| at 12,000 ops/s offered | Slipstream | Linux | ratio |"
    assert t[2] == "| ops/s achieved | 12,000 | 12,000 | 1.00 |"
    assert t[3:7] == ["| p50 µs | 10.0 | 20.0 | 0.50 |", "| p90 µs | 15.0 | 30.0 | 0.50 |",
                      "| p99 µs | 20.0 | 40.0 | 0.50 |", "| max µs | 900 | 300 | 3.00 |"]
    assert t[7:11] == ["| client lateness p50 µs (sent − due) | 2.00 | 4.00 | 0.50 |",
                       "| client lateness p99 µs | 5.00 | 5.00 | 1.00 |",
                       "| round trip p50 µs (reply − sent) | 8.00 | 16.0 | 0.50 |",
                       "| round trip p99 µs | 16.0 | 32.0 | 0.50 |"]
    assert t[-1] == "| CPU busy, cores (cpu0 + cpu1) | 1.50 (0.50 + 1.00) | " \
                    "1.50 (0.50 + 1.00) | |"
    text = report.kv_latency_text(lat)
    assert "12,000 ops/s over 64 connections" in text
    assert "15% of the lower peak (Linux: Slipstream 90,000, Linux 80,000 ops/s)" in text
    assert "the client blocks between due times" in text     # no pace recorded
    lat["params"]["pace"] = "spin"
    assert "; the client polls on its own CPU" in report.kv_latency_text(lat)
    del lat["params"]["pace"]
    head = report.bench_table({"workload": "kv", "setup": "server", "param_title": "connections"},
                              [{"value": 64, "slipstream": s, "linux": l}]).splitlines()[0]
    assert head.startswith("| connections | ops/s Slipstream | ops/s Linux | ratio |")
    assert head.endswith("| CPU µs/op S / L (ratio) | server CPU µs/op S / L (ratio) |")
    ratios = report.point_ratios(s, l)
    assert ratios["p90_us"] == 0.5 and ratios["max_us"] == 3.0
    assert ratios["rtt_p50_us"] == 0.5 and ratios["rtt_p99_us"] == 0.5
    # A failed side: its reason, and no figure or ratio for it.
    lat["slipstream"] = {"error": "client: conn 3: GET of key 7 missed (END without VALUE)"}
    t = report.kv_latency_table(lat).splitlines()
    assert t[2] == "| Slipstream | **FAILED**: client: conn 3: GET of key 7 missed " \
                   "(END without VALUE) |"
    assert "| p99 µs | – | 40.0 | – |" in t


# ---- bulk flows: loss and interop ---------------------------------------------

from benchsuite import bulk  # noqa: E402


def test_loss_rule():
    assert bulk.loss_permyriad(0.1) == 10 and bulk.loss_permyriad(1) == 100
    assert bulk.loss_permyriad(5) == 500 and bulk.loss_permyriad(0) == 0
    for bad in (-1, 101, 0.001):
        with pytest.raises(ValueError):
            bulk.loss_permyriad(bad)
    s = bulk.loss_script("ssbsl", "198.18.0.1", 7105, 0.5)
    assert s.startswith("table ip ssbsl_loss {")
    assert "hook prerouting priority -300" in s
    match = "ip saddr 198.18.0.1 tcp sport 7105 ip length > 100"
    lines = [line.strip() for line in s.splitlines()]
    assert match + " counter" in lines
    assert match + " numgen random mod 10000 < 50 counter drop" in lines


NFT_JSON = """{"nftables": [{"metainfo": {"version": "1.0.6"}},
 {"table": {"family": "ip", "name": "ssbsl_loss", "handle": 1}},
 {"chain": {"family": "ip", "table": "ssbsl_loss", "name": "pre", "handle": 1}},
 {"rule": {"family": "ip", "table": "ssbsl_loss", "chain": "pre", "handle": 2, "expr": [
   {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}},
              "right": "198.18.0.1"}},
   {"counter": {"packets": 200000, "bytes": 300000000}}]}},
 {"rule": {"family": "ip", "table": "ssbsl_loss", "chain": "pre", "handle": 3, "expr": [
   {"match": {"op": "<", "left": {"numgen": {"mode": "random", "mod": 10000, "offset": 0}},
              "right": 100}},
   {"counter": {"packets": 2010, "bytes": 3015000}}, {"drop": null}]}}]}"""


def test_loss_counters():
    c = bulk.parse_loss_counters(NFT_JSON)
    assert c == {"offered": 200000, "dropped": 2010, "rate": pytest.approx(0.01005)}
    assert bulk.parse_loss_counters("not json") is None
    assert bulk.parse_loss_counters('{"nftables": []}') is None


SNMP = """Ip: Forwarding DefaultTTL
Ip: 1 64
Tcp: RtoAlgorithm RtoMin OutSegs RetransSegs
Tcp: 1 200 1000 7
TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPOFOQueue
TcpExt: 0 3 5 11
"""


def test_snmp_parse_and_delta():
    a = bulk.parse_snmp(SNMP)
    assert a[("Tcp", "RetransSegs")] == 7 and a[("TcpExt", "TCPOFOQueue")] == 11
    assert a[("Ip", "DefaultTTL")] == 64
    b = dict(a)
    b[("Tcp", "RetransSegs")] = 107
    b[("TcpExt", "TCPTimeouts")] = 4
    d = bulk.snmp_delta(a, b)
    assert d["Tcp.RetransSegs"] == 100 and d["TcpExt.TCPTimeouts"] == 1
    assert d["TcpExt.TCPOFOQueue"] == 0 and "TcpExt.TCPFastRetrans" not in d
    assert bulk.service_retrans({"a": {"tcp_retrans_segs": 5, "rx_tcp": 9},
                                 "b": {"tcp_retrans_segs": 1, "tcp_rto_fired": 2}}) == \
        {"tcp_retrans_segs": 6, "rx_tcp": 9, "tcp_rto_fired": 2}


def _bulk(gbps, **kw):
    r = {"gbps": gbps, "cpu": {"busy_cores": 1.6, "cpu": {"busy": 0.8}, "cpu0": {"busy": 0.7},
                               "cpu1": {"busy": 0.9}}, "retrans": kw.pop("retrans", 0)}
    r.update(kw)
    runner.derive(r, "server")
    return r


def test_loss_penalties_and_target():
    pts = [{"value": 0, "slipstream": _bulk(10.0), "linux": _bulk(8.0)},
           {"value": 1, "slipstream": _bulk(7.0, retrans=900), "linux": _bulk(6.0)},
           {"value": 5, "slipstream": {"error": "client: EBADMSG"}, "linux": _bulk(4.0)}]
    bulk.loss_penalties(pts)
    assert pts[0]["penalty"]["slipstream"] == pytest.approx(0.0)
    assert pts[0]["penalty"]["ratio"] is None                 # Linux lost nothing
    assert pts[1]["penalty"]["slipstream"] == pytest.approx(0.3)
    assert pts[1]["penalty"]["linux"] == pytest.approx(0.25)
    assert pts[1]["penalty"]["ratio"] == pytest.approx(1.2)
    assert pts[2]["penalty"]["slipstream"] is None            # failed: no number
    assert pts[2]["penalty"]["linux"] == pytest.approx(0.5)
    t = bulk.loss_target(pts)
    assert t["met"] is True and t["words"].startswith("met")
    # 45 % against Linux's 20 %: limit 40 %, missed by 5 points.
    pts[1]["slipstream"] = _bulk(5.5)
    pts[1]["linux"] = _bulk(6.4)
    bulk.loss_penalties(pts)
    t = bulk.loss_target(pts)
    assert t["met"] is False and t["words"].startswith("MISSED by 5.0 points")
    # The 0 % point failed: no penalty at all, target not measured.
    pts[0]["slipstream"] = {"error": "x"}
    bulk.loss_penalties(pts)
    assert pts[1]["penalty"]["slipstream"] is None
    assert bulk.loss_target(pts)["met"] is None
    assert bulk.penalty(None, 1.0) is None and bulk.penalty(1.0, 0) is None


def test_loss_and_interop_benches():
    loss = points.BY_NAME["loss-server"]
    assert points.values(loss, False) == (0, 0.1, 0.5, 1, 2, 5)
    assert points.point_params(loss, 0.5) == {"mode": "send", "size": 65536, "work": 0,
                                              "conns": 100, "loss_pct": 0.5}
    assert points.parse_values("0.5,1,server") == (0.5, 1, "server")
    with pytest.raises(points.SelectError):
        points.parse_values("1,x-y")
    assert [b.name for b in points.select(["loss", "interop"])] == \
        ["loss-server", "interop-server", "interop-both"]
    assert points.values(loss, False, points.parse_values("1,5")) == (1, 5)
    io = points.BY_NAME["interop-server"]
    assert points.point_params(io, "server")["mode"] == "send"
    assert points.point_params(io, "client")["mode"] == "recv"
    # Who sends to whom on each bed.
    assert points.interop_pair("server", "slipstream", "server") == ("slipstream", "linux")
    assert points.interop_pair("server", "slipstream", "client") == ("linux", "slipstream")
    assert points.interop_pair("server", "linux", "client") == ("linux", "linux")
    assert points.interop_pair("both", "slipstream", "client") == ("slipstream", "slipstream")
    # The client side of a stream point: pipe_client, receiving from a
    # sending server and sending to a receiving one.
    rs = runner.Settings(4, 1, 10)
    argv = runner.client_argv("/b", loss, points.point_params(loss, 1), rs, "198.18.0.1", 7101)
    assert argv[:3] == ["/b/bench/pipe_client", "--mode", "recv"] and "100" in argv
    sargv = runner.server_argv("/b", io, points.point_params(io, "client"), 7102)
    assert sargv[-6:] == ["--mode", "recv", "--size", "65536", "--work", "0"]


def test_bulk_tables_and_matrix():
    pts = [{"value": 0, "slipstream": _bulk(10.0), "linux": _bulk(8.0)},
           {"value": 1, "slipstream": _bulk(7.0, retrans=900,
                                             loss_applied={"offered": 1000, "dropped": 10,
                                                           "rate": 0.01}),
            "linux": _bulk(6.0, retrans=800)}]
    bulk.loss_penalties(pts)
    b = {"name": "loss-server", "workload": "loss", "setup": "server", "param_title": "loss %",
         "points": pts}
    b["target"] = bulk.loss_target(pts)
    t = report.bulk_table(b, pts).splitlines()
    assert t[0].startswith("| loss % | Gbit/s Slipstream | Gbit/s Linux | ratio | penalty S |")
    assert t[3].startswith("| 1 | 7.00 | 6.00 | 1.17 | 30.0% | 25.0% | 1.20 | 1.00% / – | "
                           "900 / 800 | – / – |")
    assert bulk.path_drops({"veth": {"server veth": {"tx_dropped": 5, "rx_packets": 9},
                                     "client veth": {"rx_dropped": 5}},
                            "service_retrans": {"nic_rx_missed": 2}}) == 7
    assert t[-1].startswith("Target: loss penalty at 1% no more than twice Linux's: ") \
        and "met" in t[-1]
    io_pts = [{"value": "server", "slipstream": _bulk(3.0), "linux": _bulk(4.0)},
              {"value": "client", "slipstream": {"error": "pipe_server closed 1 connections "
                                                          "on a pattern mismatch"},
               "linux": _bulk(4.0)}]
    io = {"name": "interop-server", "workload": "interop", "setup": "server",
          "param_title": "which end sends", "points": io_pts}
    iob = {"name": "interop-both", "workload": "interop", "setup": "both",
           "param_title": "which end sends",
           "points": [{"value": "client", "slipstream": _bulk(2.0), "linux": _bulk(5.0)}]}
    t = report.bulk_table(io, io_pts).splitlines()
    assert "| server | Slipstream → Linux | Linux → Linux | 3.00 | 4.00 | 0.75 |" in t[2]
    assert "**FAILED**: pipe_server closed" in t[3] and "Linux → Slipstream" in t[3]
    rows = bulk.interop_matrix([b, io, iob])
    pairs = [(r["sender"], r["receiver"]) for r in rows]
    assert pairs[0] == ("slipstream", "slipstream") and pairs[-1] == ("linux", "linux")
    assert {("slipstream", "linux"), ("linux", "slipstream")} <= set(pairs)
    m = report.interop_table({"benchmarks": [b, io, iob]})
    assert "| Slipstream → Slipstream | both ends (client sends) | 2.00 | 5.00 | 0.40 |" in m


def test_pipe_rate_fails_on_receiver_errors():
    ok_line = '{"msgs":1,"bytes":65536,"t_ns":1000000000,"conns":100,"errors":0}\n'
    bad = ok_line + '{"msgs":9,"bytes":589824,"t_ns":2000000000,"conns":99,"errors":1}\n'
    rate, why = runner.pipe_rate({"mode": "recv", "size": 65536, "conns": 100}, {}, bad)
    assert rate is None and "pattern mismatch" in why
    short = ok_line.replace('"conns":100', '"conns":98') + \
        '{"msgs":9,"bytes":589824,"t_ns":2000000000,"conns":98,"errors":0}\n'
    rate, why = runner.pipe_rate({"mode": "recv", "size": 65536, "conns": 100}, {}, short)
    assert rate is None and "98 connections open at the window's start" in why
    # At the window's end the client may be closing already: not an error.
    good = ok_line + '{"msgs":9,"bytes":589824,"t_ns":2000000000,"conns":49,"errors":0}\n'
    rate, _ = runner.pipe_rate({"mode": "recv", "size": 65536, "conns": 100}, {}, good)
    assert rate == pytest.approx(8.0)


# ---- the receivers' checks fail on a corrupted stream -------------------------
# bench/pipe_client (--mode recv) and bench/pipe_server (--mode recv) are
# the receivers of the bulk flows; fed over loopback (no namespace) a
# stream with one wrong byte, each must refuse it.

import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or Path(__file__).resolve().parents[2] / "build")
PERIOD = 251


def _pattern(off, n):
    return bytes((off + i) % PERIOD for i in range(n))


def _bin(name):
    p = BUILD / "bench" / name
    if not p.exists():
        pytest.skip("%s not built" % p)
    return str(p)


def _feed(sock, corrupt_at, stop):
    """Send the pattern stream on sock until stop is set or the peer goes;
    byte corrupt_at (None: none) flipped."""
    off = 0
    try:
        while not stop.is_set():
            chunk = bytearray(_pattern(off, 65536))
            if corrupt_at is not None and off <= corrupt_at < off + len(chunk):
                chunk[corrupt_at - off] ^= 0x55
            sock.sendall(chunk)
            off += len(chunk)
    except OSError:
        pass


@pytest.mark.parametrize("corrupt_at", [None, 300000])
def test_pipe_client_refuses_a_corrupted_stream(corrupt_at):
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    stop = threading.Event()

    def serve():
        c, _ = lsock.accept()
        _feed(c, corrupt_at, stop)
        c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    r = subprocess.run([_bin("pipe_client"), "--connect", "127.0.0.1:%d" % port, "--mode", "recv",
                        "--conns", "1", "--seconds", "1", "--warmup", "0"],
                       capture_output=True, text=True, timeout=30)
    stop.set()
    lsock.close()
    got = runner.last_json(r.stdout)
    if corrupt_at is None:
        assert r.returncode == 0 and got["error"] is None and got["bytes"] > 0
    else:
        assert r.returncode == 1 and got["error"] == "EBADMSG"


@pytest.mark.parametrize("corrupt_at", [None, 200000])
def test_pipe_server_counts_a_corrupted_stream(corrupt_at):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    srv = subprocess.Popen([_bin("pipe_server"), "--port", str(port), "--mode", "recv",
                            "--size", "65536", "--work", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening" in srv.stderr.readline()
        c = socket.create_connection(("127.0.0.1", port))
        data = bytearray(_pattern(0, 400000))
        if corrupt_at is not None:
            data[corrupt_at] ^= 1
        try:
            c.sendall(data)
        except OSError:
            pass
        time.sleep(0.5)
        srv.send_signal(signal.SIGUSR1)
        line = runner.last_json(srv.stdout.readline())
        c.close()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)
    if corrupt_at is None:
        assert line["errors"] == 0 and line["bytes"] == 400000 and line["conns"] == 1
        # and the runner accepts it: one connection was asked for
        assert runner.pipe_rate({"mode": "recv", "size": 65536, "conns": 1}, {},
                                "%s\n%s\n" % (
                                    '{"msgs":0,"bytes":0,"t_ns":1,"conns":1,"errors":0}',
                                    '{"msgs":6,"bytes":400000,"t_ns":1000000001,"conns":1,'
                                    '"errors":0}'))[0] == pytest.approx(6.0)
    else:
        # Everything before the bad byte's read counted, the connection closed
        # for it, and the runner would fail the point.
        assert line["errors"] == 1 and line["conns"] == 0 and line["bytes"] < 400000
        log = '{"msgs":0,"bytes":0,"t_ns":1,"conns":1,"errors":0}\n' + json_line(line)
        assert runner.pipe_rate({"mode": "recv", "size": 65536, "conns": 1}, {}, log)[0] is None


def json_line(d):
    import json
    return json.dumps(d, separators=(",", ":")) + "\n"
