"""POSIX socket semantics: the same C suite (tests/semantics, sockcheck) run
against the Linux kernel and under `slipstream run`; Linux is the oracle.

Test bed: two peers behind a switch.  sockpeer (the suite's partner, plain
Linux) listens in peer1 (198.18.0.2).  The Linux run puts sockcheck in
peer2 (198.18.0.3); the Slipstream run puts it in the root namespace under
`slipstream run --strict`, so its IPv4 TCP sockets go through slipstreamd
(198.18.0.1) and everything else through the kernel.

Each case is its own pytest item (test_semantics_linux[CASE],
test_semantics_slipstream[CASE]) although sockcheck runs once per side: a
module-scoped fixture runs the whole suite and, if sockcheck dies (a crash
in the layer), blames the first unreported case and runs the rest again.

Cases sockcheck lists with --known do not work under Slipstream yet: they
run with SOCKCHECK_XFAIL and show as xfail (or pass when they start working).

Binaries: <build>/tests/semantics/{sockcheck,sockpeer} (SLIPSTREAM_BUILD
overrides <repo>/build), the shim <build>/src/preload/libslipstream-preload.so.
SLIPSTREAM_SEMANTICS_ONLY=CASE,CASE runs only those cases.
"""

import os
import re
import subprocess
from collections import namedtuple

import pytest

from harness import BUILD, CLI
from harness import testbed as tbmod

SEM = BUILD / "tests" / "semantics"
SOCKCHECK = SEM / "sockcheck"
SOCKPEER = SEM / "sockpeer"
PRELOAD = BUILD / "src" / "preload" / "libslipstream-preload.so"
PEER_PORT = 9000                   # sockpeer; PEER_PORT + 1 must stay closed
CASE_TIMEOUT_S = 20                # sockcheck's per-case alarm
LINE_RE = re.compile(r"^(ok|FAIL|xfail|xpass) ([A-Za-z0-9_]+)(?:: (.*))?$")

Result = namedtuple("Result", "status line")


def _sockcheck_names(flag):
    if not SOCKCHECK.exists():
        return []
    res = subprocess.run([str(SOCKCHECK), flag], capture_output=True, text=True, timeout=10)
    return res.stdout.split() if res.returncode == 0 else []


CASES = _sockcheck_names("--list")
# SLIPSTREAM_SEMANTICS_ONLY=case1,case2: run only those (while working on them).
_ONLY = [c for c in os.environ.get("SLIPSTREAM_SEMANTICS_ONLY", "").split(",") if c]
if _ONLY:
    CASES = [c for c in CASES if c in _ONLY]
KNOWN = set(_sockcheck_names("--known"))
NOT_BUILT = "sockcheck-not-built"


def _need_binaries():
    for path in (SOCKCHECK, SOCKPEER):
        if not path.exists():
            pytest.skip("%s not built (add subdir('tests/semantics') to meson.build and "
                        "build, or set SLIPSTREAM_BUILD)" % path)


def suite_run(argv, env=None):
    """Run sockcheck (argv, without --only) over every case; {name: Result}.

    When sockcheck ends before reporting every case, the first unreported
    case is blamed ("crash") and sockcheck runs again on the rest.
    """
    results = {}
    left = list(CASES)
    while left:
        limit = CASE_TIMEOUT_S * len(left) + 30
        try:
            res = subprocess.run(argv + ["--only", ",".join(left)], capture_output=True,
                                 text=True, timeout=limit, env=env)
            out, err, how = res.stdout, res.stderr, "exit status %d" % res.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) \
                else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) \
                else (e.stderr or "")
            how = "killed after %d s" % limit
        for line in out.splitlines():
            m = LINE_RE.match(line)
            if m and m.group(2) in left:
                results[m.group(2)] = Result(m.group(1), line)
        left = [c for c in left if c not in results]
        if left:
            results[left[0]] = Result("crash", "sockcheck ended (%s) during %s\n"
                                      "---- stdout tail:\n%s\n---- stderr tail:\n%s"
                                      % (how, left[0], out[-3000:], err[-3000:]))
            left = left[1:]
    return results


# ---- fixtures -----------------------------------------------------------

@pytest.fixture(scope="module")
def testbed(testbed_prefix):
    """Two peers behind a switch: sockpeer in peer1, the Linux sockcheck in peer2."""
    tb = tbmod.Testbed(testbed_prefix, peers=2)
    tb.up()
    try:
        yield tb
    finally:
        tb.down()


@pytest.fixture(scope="module")
def sockpeer(testbed):
    _need_binaries()
    proc = testbed.ns_popen(testbed.peer(1).ns, [str(SOCKPEER), "--port", str(PEER_PORT)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if "listening" not in line:
        proc.kill()
        proc.wait(5)
        pytest.fail("sockpeer did not start: %r" % line, pytrace=False)
    yield proc
    alive = proc.poll() is None
    proc.kill()
    proc.wait(5)
    if not alive:
        pytest.fail("sockpeer died during the tests (exit %s)" % proc.returncode,
                    pytrace=False)


def _args(server_ip, peer):
    return ["--server-ip", server_ip, "--peer-ip", peer.ip, "--peer-port", str(PEER_PORT),
            "--timeout", str(CASE_TIMEOUT_S)]


@pytest.fixture(scope="module")
def linux_results(testbed, sockpeer):
    """The whole suite, plain, in peer2's namespace."""
    peer2 = testbed.peer(2)
    argv = tbmod.ns_cmd(peer2.ns, [str(SOCKCHECK)] + _args(peer2.ip, testbed.peer(1)))
    return suite_run(argv)


def _slipstream_unavailable():
    if not PRELOAD.exists():
        return "the preload shim is not built (%s)" % PRELOAD
    try:
        res = subprocess.run([str(CLI), "run", "--help"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "`slipstream run --help` failed: %s" % e
    if res.returncode != 0:
        return "`slipstream run` is not available yet: %s" % (res.stderr or res.stdout).strip()
    return None


@pytest.fixture(scope="module")
def slipstream_results(testbed, sockpeer, request):
    """The whole suite under `slipstream run` in the root namespace."""
    why = _slipstream_unavailable()
    if why:
        pytest.skip(why)
    service = request.getfixturevalue("service")
    env = dict(os.environ, SLIPSTREAM_SOCK=service.ctl_path,
               SOCKCHECK_XFAIL=",".join(sorted(KNOWN)))
    argv = [str(CLI), "run", "--strict", "--sock", service.ctl_path, "--",
            str(SOCKCHECK)] + _args(testbed.service_ip, testbed.peer(1))
    results = suite_run(argv, env)
    if not service.alive():
        pytest.fail("slipstreamd died during the suite\n%s" % service.logs(), pytrace=False)
    return results


# ---- tests --------------------------------------------------------------

@pytest.mark.parametrize("case", CASES or [NOT_BUILT])
def test_semantics_linux(case, linux_results):
    """Every case passes on Linux: this validates the suite itself."""
    r = linux_results[case]
    if r.status != "ok":
        pytest.fail(r.line, pytrace=False)


@pytest.mark.parametrize("case", CASES or [NOT_BUILT])
def test_semantics_slipstream(case, linux_results, slipstream_results):
    """Under Slipstream every case gives Linux's result (known gaps: xfail)."""
    lin, ss = linux_results[case], slipstream_results[case]
    if lin.status != "ok":
        pytest.fail("Linux (the oracle) fails this case, so it proves nothing: %s"
                    % lin.line, pytrace=False)
    if case in KNOWN:
        if ss.status == "xfail":
            pytest.xfail("known not to work under Slipstream yet: %s" % ss.line)
        if ss.status not in ("xpass", "ok"):
            pytest.fail(ss.line, pytrace=False)
        return
    if ss.status != "ok":
        pytest.fail(ss.line, pytrace=False)


@pytest.mark.no_root
def test_semantics_known_names():
    """The known list names real cases (a renamed case must not hide)."""
    if not CASES:
        pytest.skip("%s not built" % SOCKCHECK)
    assert KNOWN <= set(CASES), sorted(KNOWN - set(CASES))

