"""The pure helpers of bench/suite.py (bench/benchsuite/): /proc parsing,
ratios, number and table formatting, benchmark selection.  No root, no test
bed, no benchmark run: the suite itself is not a test (its numbers are not
pass/fail)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from benchsuite import cpu, points, report, runner  # noqa: E402

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
        ["short-server", "rpc-both", "short-both"]
    with pytest.raises(points.SelectError):
        points.select(["nope"])
    assert points.point_params(points.BY_NAME["short-both"], 4) == \
        {"size": 64, "conns": 1024, "rpcs_per_conn": 4}


def test_select_values():
    vals = points.parse_values("64,4096")
    assert vals == (64, 4096)
    assert points.parse_values(None) is None and points.parse_values("") is None
    with pytest.raises(points.SelectError):
        points.parse_values("64,x")
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
    s = _res(12000.0, p90_us=15.0, max_us=900.0)
    l = _res(12000.0, p50_us=20.0, p90_us=30.0, p99_us=40.0, max_us=300.0)
    lat = {"rate": 12000.0, "fraction": 0.15, "params": {"conns": 64},
           "peaks": {"slipstream": 90000.0, "linux": 80000.0, "basis": "linux"},
           "slipstream": s, "linux": l}
    t = report.kv_latency_table(lat).splitlines()
    assert t[0] == "| at 12,000 ops/s offered | Slipstream | Linux | ratio |"
    assert t[2] == "| ops/s achieved | 12,000 | 12,000 | 1.00 |"
    assert t[3:7] == ["| p50 µs | 10.0 | 20.0 | 0.50 |", "| p90 µs | 15.0 | 30.0 | 0.50 |",
                      "| p99 µs | 20.0 | 40.0 | 0.50 |", "| max µs | 900 | 300 | 3.00 |"]
    assert t[-1] == "| CPU busy, cores (cpu0 + cpu1) | 1.50 (0.50 + 1.00) | " \
                    "1.50 (0.50 + 1.00) | |"
    text = report.kv_latency_text(lat)
    assert "12,000 ops/s over 64 connections" in text
    assert "15% of the lower peak (Linux: Slipstream 90,000, Linux 80,000 ops/s)" in text
    head = report.bench_table({"workload": "kv", "setup": "server", "param_title": "connections"},
                              [{"value": 64, "slipstream": s, "linux": l}]).splitlines()[0]
    assert head.startswith("| connections | ops/s Slipstream | ops/s Linux | ratio |")
    assert head.endswith("| CPU µs/op S / L (ratio) | server CPU µs/op S / L (ratio) |")
    ratios = report.point_ratios(s, l)
    assert ratios["p90_us"] == 0.5 and ratios["max_us"] == 3.0
    # A failed side: its reason, and no figure or ratio for it.
    lat["slipstream"] = {"error": "client: conn 3: GET of key 7 missed (END without VALUE)"}
    t = report.kv_latency_table(lat).splitlines()
    assert t[2] == "| Slipstream | **FAILED**: client: conn 3: GET of key 7 missed " \
                   "(END without VALUE) |"
    assert "| p99 µs | – | 40.0 | – |" in t
