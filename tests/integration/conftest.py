"""Fixtures for the namespace/veth integration tests.

Run as root:  /usr/bin/python3 -m pytest tests/integration
Environment:  SLIPSTREAM_BUILD  build dir (default <repo>/build; the service is
                                <build>/src/service/slipstreamd)
              SLIPSTREAM_PMD    af_xdp (default) or af_packet
              SLIPSTREAM_REQUIRE_SERVICE=1  fail instead of skip when the
                                service binary is missing
              SLIPSTREAM_EAL_EXTRA  extra EAL arguments (e.g. --log-level=8)

Test-bed names: every module gets prefix sst<pid % 1000><letters>, so parallel
runs from different processes do not collide and interface names stay within
15 characters; at session end nothing with this run's prefix may remain.
"""

import os
import re
import shutil
import string
import sys

import pytest

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__

import harness  # noqa: E402
from harness import PMD, SERVICE_BIN, Service, ServiceError  # noqa: E402
from harness import testbed as tbmod  # noqa: E402

BASE_PREFIX = "sst%03d" % (os.getpid() % 1000)
_prefix_count = [0]


def prefix_new():
    """A fresh test-bed prefix for this run: BASE_PREFIX + a..z, aa..zz."""
    n = _prefix_count[0]
    _prefix_count[0] += 1
    letters = string.ascii_lowercase
    suffix = letters[n] if n < 26 else letters[n // 26 - 1] + letters[n % 26]
    return BASE_PREFIX + suffix


def _missing_tools():
    return [t for t in ("ip", "nft", "ethtool", "tc", "ping") if shutil.which(t) is None]


def pytest_collection_modifyitems(config, items):
    reason = None
    if os.geteuid() != 0:
        reason = ("integration tests need root (network namespaces, veth, AF_XDP): "
                  "run  sudo /usr/bin/python3 -m pytest tests/integration")
    elif _missing_tools():
        reason = "integration tests need %s on PATH" % ", ".join(_missing_tools())
    elif PMD not in tbmod.PMDS:
        reason = "SLIPSTREAM_PMD=%s: want one of %s" % (PMD, ", ".join(tbmod.PMDS))
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "no_root" not in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On any failure, attach the logs of the services the test used."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    services = []
    funcargs = getattr(item, "funcargs", {})
    if isinstance(funcargs.get("service"), Service):
        services.append(funcargs["service"])
    factory = funcargs.get("service_factory")
    if factory is not None:
        services += factory.started
    for i, svc in enumerate(services):
        report.sections.append(("slipstreamd #%d (%s)" % (i, svc.pmd), svc.logs()))


def _our_leftovers():
    pat = re.compile(r"^%s[a-z]+[-_]" % BASE_PREFIX)
    left = ["netns " + n for n in tbmod.netns_list() if pat.match(n)]
    left += ["link " + l for l in tbmod.links_list(None) if pat.match(l)]
    return left


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Fail loudly if anything this run created is still there (then remove it)."""
    if os.geteuid() != 0:
        return
    left = _our_leftovers()
    if not left:
        return
    prefixes = sorted({re.match(r"^(%s[a-z]+)" % BASE_PREFIX, x.split()[1]).group(1)
                       for x in left})
    for p in prefixes:
        try:
            tbmod.down(p)
        except tbmod.TestbedError:
            pass
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    msg = ("LEAK: the integration tests left behind: %s (removed now; still "
           "there: %s)" % (", ".join(left), ", ".join(_our_leftovers()) or "nothing"))
    if tr is not None:
        tr.write_sep("!", msg, red=True, bold=True)
    else:
        print(msg)
    session.exitstatus = 1


# ---- fixtures -----------------------------------------------------------

@pytest.fixture(scope="module")
def testbed_prefix():
    return prefix_new()


@pytest.fixture(scope="module")
def testbed(testbed_prefix):
    """A one-peer test bed (no switch), one per test module."""
    tb = tbmod.Testbed(testbed_prefix, peers=1)
    tb.up()
    try:
        yield tb
    finally:
        tb.down()


@pytest.fixture(scope="session")
def prefix_new_fn():
    return prefix_new


@pytest.fixture
def prefix_factory():
    """Hands out fresh prefixes; removes anything left under them afterwards."""
    made = []

    def make():
        p = prefix_new()
        made.append(p)
        return p
    yield make
    for p in made:
        tbmod.down(p)


def _service_require():
    if not SERVICE_BIN.exists():
        msg = ("slipstreamd not built at %s (build it, or set SLIPSTREAM_BUILD)"
               % SERVICE_BIN)
        if os.environ.get("SLIPSTREAM_REQUIRE_SERVICE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)


class ServiceFactory:
    """Starts services in a test bed and stops all of them at teardown."""

    def __init__(self):
        self.started = []

    def start(self, tb, **kw):
        _service_require()
        svc = Service(tb, **kw)
        self.started.append(svc)
        try:
            return svc.start()
        except ServiceError as e:
            pytest.fail(str(e), pytrace=False)

    def stop_all(self):
        errors = []
        for svc in self.started:
            try:
                svc.stop()
            except ServiceError as e:
                errors.append(str(e))
            finally:
                svc.kill()
        return errors


@pytest.fixture
def service_factory():
    f = ServiceFactory()
    yield f
    try:
        errors = f.stop_all()
    finally:
        for svc in f.started:
            svc.cleanup()
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture(scope="module")
def service(testbed):
    """slipstreamd in the module's test bed, ready (stats answers).

    Teardown: SIGTERM, up to 10 s, then SIGKILL; a service that had to be
    killed, or exited non-zero, fails the last test's teardown with its logs.
    """
    _service_require()
    svc = harness.service_start(testbed)
    yield svc
    harness.service_finish(svc)


@pytest.fixture(scope="module")
def agent(testbed):
    """peer_agent.py in peer1's namespace."""
    a = harness.PeerAgent(testbed, testbed.peer(1))
    yield a
    a.close()
