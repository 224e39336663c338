"""Real, unmodified programs under `slipstream run`, and the same programs on
Linux, on one test bed, with their results checked (tests/integration/
apps_lib.py has the cases; bench/apps_compare.py runs them as a benchmark).

Every case runs twice: on Linux (which proves the case and its checks) and
under Slipstream.  Checked: memcached -t 2 gets return exactly what was set
(bench/mc_load.c, byte for byte); nginx (master + 2 workers,
master_process off, and sendfile on) and haproxy (default threads and
nbthread 1) serve every wrk request with status 200 and
the exact body, and a 10 MB file whose sha256 matches, within 5 s; iperf3
completes with exit 0 and bytes moved in each direction; sockperf ping-pong
gets every message back in order; python3 -m http.server serves the file
(sha256) and every ab request; and the reverse, Slipstream clients
(redis-benchmark with every request answered and no error replies, wrk,
curl, iperf3 -c) against Linux servers.  After each Slipstream case the
service must be back to no applications, connections or listeners.

Known bugs are xfail(strict=True): when one is fixed the test fails until
its mark is removed (docs/compat.md, "Real programs", lists them).
pytest -s prints the side-by-side numbers.
"""

import pytest

import apps_lib
from apps_lib import CASES, SIDES

# (case, side) -> reason, for known bugs (xfail strict: a fix makes it fail
# until the entry goes).  None open today.
XFAIL = {
}

_results = {}


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    missing = [t for t in ("cc", "curl") if not apps_lib.TOOLS.get(t)]
    if missing:
        pytest.skip("missing %s" % ", ".join(missing))
    if not apps_lib.harness.SERVICE_BIN.exists():
        pytest.skip("slipstreamd not built at %s" % apps_lib.harness.SERVICE_BIN)
    try:
        with apps_lib.bed_up(prefix_new_fn()) as b:
            yield b
    finally:
        if _results:
            print("\n" + apps_lib.table(_results, [c for c in CASES if c in _results]))
        _results.clear()


def _params():
    out = []
    for case in CASES:
        for side in SIDES:
            marks = []
            if (case, side) in XFAIL:
                marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(case, side)]))
            out.append(pytest.param(case, side, marks=marks, id="%s-%s" % (case, side)))
    return out


@pytest.mark.parametrize("case,side", _params())
def test_app(bed, case, side):
    missing = apps_lib.missing_tools(case)
    if missing:
        pytest.skip("not installed: %s (scripts/setup.sh installs them)" % ", ".join(missing))
    entry = _results.setdefault(case, {})
    try:
        entry[side] = {"metrics": apps_lib.run_case(bed, case, side, quick=True)}
    except Exception as e:
        entry[side] = {"error": str(e)}
        raise
    finally:
        assert bed.svc.alive(), "slipstreamd died during %s (%s)\n%s" % (case, side,
                                                                        bed.svc.logs())
