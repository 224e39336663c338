"""The wire-level conformance suite (tests/conformance/): every script runs
against Linux (the oracle) and against Slipstream, each on its own test bed.

A script passes when the system under test makes exactly the segments and
call results the script expects.  Scripts listed in suite.EXPECTED_DIFF
(a known Slipstream defect) must still fail on Slipstream: once one passes
the test reports an unexpected pass, so the entry goes with the fix.
docs/compat.md, "Conformance suite", has the format and the differences.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
import suite  # noqa: E402


@pytest.fixture(scope="module", params=suite.TARGETS)
def sut(request, prefix_new_fn):
    target = request.param
    if not suite.SOCKSCRIPT.exists():
        pytest.skip("sockscript not built at %s" % suite.SOCKSCRIPT)
    if target == "slipstream" and not suite.harness.SERVICE_BIN.exists():
        pytest.skip("slipstreamd not built at %s" % suite.harness.SERVICE_BIN)
    s = suite.Sut(target, prefix_new_fn())
    try:
        s.up()
    except Exception:
        s.down()
        raise
    yield s
    problems = s.down()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.mark.parametrize("script", suite.scripts_all())
def test_script(sut, script):
    status, out = sut.run_script(script)
    ok, text = suite.verdict(sut.target, script, status)
    print("%s %s: %s\n%s" % (sut.target, script, text, out))
    assert ok, "%s on %s: %s\n%s" % (script, sut.target, text, out)
