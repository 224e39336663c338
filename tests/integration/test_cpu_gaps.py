"""bench/cpu_gaps (the bed's own latency noise): its JSON adds up, its
percentiles are ordered and bounded by the longest gap, and bad options
are refused with the usage and exit status 2.  No test bed or root."""

import json
import os
import subprocess

import pytest

from harness import BUILD

pytestmark = pytest.mark.no_root

CPU_GAPS = BUILD / "bench" / "cpu_gaps"


@pytest.fixture(scope="module")
def cpu_gaps():
    if not CPU_GAPS.exists():
        pytest.skip("%s not built (ninja -C %s)" % (CPU_GAPS, BUILD))
    return str(CPU_GAPS)


def test_report_adds_up(cpu_gaps):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    r = subprocess.run([cpu_gaps, "--cpu", str(cpu), "--seconds", "0.3"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["cpu"] == cpu and d["seconds"] == pytest.approx(0.3, abs=0.05)
    assert list(d["gaps"]) == ["2-5", "5-10", "10-20", "20-50", "50-100", "100-200", "200+"]
    n = sum(d["gaps"].values())
    assert d["reads"] > n
    assert 0 <= d["p_wait_20us_pct"] <= d["lost_pct"] < 100
    # Percentiles of the wait: ordered, and none longer than the longest gap.
    assert 0 <= d["wait_p99_us"] <= d["wait_p999_us"] <= d["max_us"] + 0.01
    if n == 0:
        assert d["lost_pct"] == 0 and d["max_us"] == 0 and d["wait_p999_us"] == 0
    else:
        assert d["max_us"] >= 2.0


@pytest.mark.parametrize("args", [["--cpu", "-1"], ["--cpu", "x"], ["--seconds", "0"],
                                  ["--seconds", "601"], ["extra"]])
def test_bad_options(cpu_gaps, args):
    r = subprocess.run([cpu_gaps] + args, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("usage: cpu_gaps")
