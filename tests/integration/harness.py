"""Integration-test harness: the running service, the peer agent, counters.

Imported by conftest.py and the tests; pure helpers, no fixtures here.
"""

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from slipstream_tools import ctl, testbed  # noqa: E402

PYTHON = "/usr/bin/python3"        # Debian's: the one with scapy and pytest
AGENT = Path(__file__).resolve().parent / "peer_agent.py"
CLI = REPO / "tools" / "slipstream"
BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build")
SERVICE_BIN = BUILD / "src" / "service" / "slipstreamd"
PMD = os.environ.get("SLIPSTREAM_PMD", "af_xdp")
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

# Every counter the service must report (zero or not); it may add more.
COUNTERS = """
rx_packets rx_bytes tx_packets tx_bytes rx_arp_request rx_arp_reply
tx_arp_request tx_arp_reply rx_icmp_echo_request tx_icmp_echo_reply rx_tcp
tx_tcp_rst drop_eth_truncated drop_eth_not_for_us drop_eth_unsupported_type
drop_arp_truncated drop_arp_unsupported drop_arp_bad_op drop_arp_not_for_us
drop_ipv4_truncated drop_ipv4_bad_version drop_ipv4_bad_ihl
drop_ipv4_bad_total_len drop_ipv4_bad_checksum drop_ipv4_not_for_us
drop_ipv4_options drop_ipv4_fragment drop_ipv4_unsupported_proto
drop_ipv4_bad_src drop_icmp_truncated drop_icmp_bad_checksum
drop_icmp_unsupported_type drop_tcp_truncated drop_tcp_bad_offset
drop_tcp_bad_option drop_tcp_bad_checksum drop_tcp_no_flow drop_tx_full
drop_no_mbuf tx_loopback rx_loopback drop_loopback_full drop_tx_link_down
tx_kept tx_ring_full fp_tx_waits fp_link_naps fp_peer_kicks fp_peer_kick_failed
""".split()


class ServiceError(Exception):
    pass


def _tail(path, limit=20000):
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return "<%s>" % e
    text = data[-limit:].decode("utf-8", "replace")
    return ("...[%d bytes cut]...\n" % (len(data) - limit) if len(data) > limit else "") + text


class Service:
    """One slipstreamd inside the test bed's service namespace."""

    def __init__(self, tb, pmd=PMD, binary=SERVICE_BIN, extra_eal=None, extra_args=None,
                 ns=None, cidr=None, gateway=None, eal=None):
        """By default on the test bed's service veth end (@pmd) in its
        service namespace; @ns, @cidr, @gateway and @eal (the EAL arguments
        before -l and @extra_eal, e.g. a memif vdev) put it elsewhere."""
        self.tb = tb
        self.pmd = pmd
        self.ns = ns or tb.svc_ns
        self.binary = Path(binary)
        # Short path: sun_path holds 108 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="sst-svc-"))
        self.ctl_path = str(self.dir / "ctl.sock")
        self.stdout_path = self.dir / "stdout.log"
        self.stderr_path = self.dir / "stderr.log"
        if extra_eal is None:
            extra_eal = os.environ.get("SLIPSTREAM_EAL_EXTRA", "").split()
        eal = (list(eal) if eal is not None else tb.dpdk_args(pmd) + ["-l", "0"]) \
            + list(extra_eal)
        # extra_args: more service options (e.g. ["--time-wait-ms", "500"]).
        self.argv = [str(self.binary), "--ip", cidr or tb.service_cidr,
                     "--gateway", gateway or tb.gateway,
                     "--ctl", self.ctl_path] + list(extra_args or []) + ["--"] + eal
        self.proc = None
        self.returncode = None

    def start(self, timeout=READY_TIMEOUT):
        """Start and wait until the control socket answers `stats`."""
        if not self.binary.exists():
            raise ServiceError("slipstreamd not built at %s" % self.binary)
        self.tb.xdp_detach()     # a SIGKILLed predecessor may have left one
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            # Own session: a Ctrl-C at the terminal reaches pytest, not this.
            self.proc = self.tb.ns_popen(self.ns, self.argv, stdout=out,
                                         stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.returncode = self.proc.returncode
                raise ServiceError("slipstreamd exited with %s before answering "
                                   "on %s\n%s" % (self.returncode, self.ctl_path, self.logs()))
            try:
                ctl.ctl_query("stats", self.ctl_path, timeout=2.0)
                return self
            except ctl.CtlError as e:
                last = e
            time.sleep(0.2)
        self.kill()
        raise ServiceError("slipstreamd did not answer `stats` on %s within %.0f s "
                           "(last: %s)\n%s" % (self.ctl_path, timeout, last, self.logs()))

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def query(self, command, timeout=5.0):
        return ctl.ctl_query(command, self.ctl_path, timeout)

    def stats(self):
        """The counters dict."""
        return self.query("stats")["counters"]

    def info(self):
        """The "service" object of the stats reply."""
        return self.query("stats")["service"]

    def arp(self):
        """The ARP cache entries (a list of dicts)."""
        return self.query("arp")["entries"]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Send sig and wait up to timeout; returns (exit status, seconds).
        If it does not exit in time it is killed and ServiceError raised."""
        if self.proc is None:
            return None, 0.0
        if self.proc.poll() is None:
            t0 = time.monotonic()
            self.proc.send_signal(sig)
            try:
                self.returncode = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise ServiceError("slipstreamd ignored %s for %.0f s (killed)\n%s"
                                   % (signal.Signals(sig).name, timeout, self.logs()))
            return self.returncode, time.monotonic() - t0
        self.returncode = self.proc.returncode
        return self.returncode, 0.0

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:
            self.returncode = self.proc.poll()

    def logs(self):
        return ("---- slipstreamd: %s\n---- exit status: %s\n---- stdout:\n%s\n"
                "---- stderr:\n%s" % (" ".join(self.argv), self.returncode,
                                      _tail(self.stdout_path), _tail(self.stderr_path)))

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def service_start(tb, extra_args=None, **kw):
    """A started Service in @tb (@kw: Service's other arguments); the test
    fails (with the logs) if it does not start."""
    import pytest
    svc = Service(tb, extra_args=extra_args, **kw)
    try:
        svc.start()
    except ServiceError as e:
        svc.kill()
        svc.cleanup()
        pytest.fail(str(e), pytrace=False)
    return svc


def service_finish(svc):
    """Stop a service: SIGTERM, up to 10 s, then SIGKILL.  Fails the test
    (with the logs) if it died earlier or did not exit 0 on SIGTERM."""
    import pytest
    died = None if svc.alive() else svc.proc.returncode
    try:
        try:
            rc, _ = svc.stop()
        except ServiceError as e:
            pytest.fail(str(e), pytrace=False)
        if died is not None:
            pytest.fail("slipstreamd died during the tests (exit %s)\n%s"
                        % (died, svc.logs()), pytrace=False)
        if rc != 0:
            pytest.fail("slipstreamd exited with %s on SIGTERM\n%s" % (rc, svc.logs()),
                        pytrace=False)
    finally:
        svc.kill()
        svc.cleanup()


def service_stop_problems(svc):
    """Stop @svc (SIGTERM, then kill) and clean up; returns what went wrong
    (it had died, or did not exit 0), with its logs, as a list of str.  For
    runs that report instead of failing a test (benchmarks, test libraries)."""
    problems = []
    died = None if svc.alive() else svc.proc.returncode
    try:
        rc, _ = svc.stop()
        if died is not None:
            problems.append("slipstreamd died during the run (exit %s)" % died)
        elif rc != 0:
            problems.append("slipstreamd exited with %s on SIGTERM" % rc)
    except ServiceError as e:
        problems.append(str(e))
    if problems:
        problems.append(svc.logs())
    svc.kill()
    svc.cleanup()
    return problems


@contextlib.contextmanager
def service_running(tb, extra_args=None):
    """On @tb (already up): start the service and yield it; afterwards stop
    it (failing on a bad exit) and take the test bed down, whatever
    happened."""
    svc = None
    try:
        svc = service_start(tb, extra_args=extra_args)
        yield svc
    finally:
        try:
            if svc is not None:
                service_finish(svc)
        finally:
            tb.down()


def bed_with_service(tb, extra_args=None):
    """Generator for module fixtures: bring @tb up, then as
    service_running(), yielding (tb, svc)."""
    tb.up()
    with service_running(tb, extra_args) as svc:
        yield tb, svc


class PeerAgent:
    """peer_agent.py running in a peer namespace: injects and captures frames."""

    def __init__(self, tb, peer, timeout=20.0):
        self.peer = peer
        self.err = tempfile.TemporaryFile()
        self.proc = tb.ns_popen(peer.ns, [PYTHON, str(AGENT), peer.iface],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.err)
        self._buf = b""
        ready = self._reply(timeout)
        if not ready.get("ok"):
            raise RuntimeError("peer agent failed to start: %r" % ready)

    def _reply(self, timeout):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.err.seek(0)
                raise RuntimeError("peer agent: no reply (exit %s) %s" % (
                    self.proc.poll(), self.err.read().decode(errors="replace")))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    continue
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, req, timeout):
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        reply = self._reply(timeout)
        if not reply.get("ok"):
            raise RuntimeError("peer agent: %s" % reply.get("error"))
        return reply

    def send(self, frames, count=1, gap_ms=0):
        if isinstance(frames, (bytes, bytearray)):
            frames = [frames]
        return self.request({"op": "send", "frames": [f.hex() for f in frames],
                             "count": count, "gap_ms": gap_ms}, 20.0)["sent"]

    def xchg(self, frames, match, timeout=1.0, max_frames=0, count=1):
        """Send, then capture matching frames for timeout s (or until
        max_frames arrived); returns the captured frames as bytes."""
        if isinstance(frames, (bytes, bytearray)):
            frames = [frames]
        reply = self.request({"op": "xchg", "frames": [f.hex() for f in frames],
                              "count": count, "timeout": timeout, "max": max_frames,
                              "match": match}, timeout + 20.0)
        return [bytes.fromhex(h) for h in reply["frames"]]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.close()
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)
        self.err.close()


# ---- counters -----------------------------------------------------------

def counters_delta(before, after):
    """{name: after - before} for every counter that changed."""
    names = set(before) | set(after)
    return {n: after.get(n, 0) - before.get(n, 0) for n in sorted(names)
            if after.get(n, 0) != before.get(n, 0)}


def counters_wait(service, before, want, timeout=3.0, settle=0.3):
    """Poll stats until every want[name] delta is reached (or timeout), then
    wait `settle` s more so late extra counts show up; returns the delta."""
    deadline = time.monotonic() + timeout
    while True:
        delta = counters_delta(before, service.stats())
        if all(delta.get(k, 0) >= v for k, v in want.items()) or \
                time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    time.sleep(settle)
    return counters_delta(before, service.stats())


def cli_run(*args, timeout=20):
    """Run the real `slipstream` CLI."""
    return subprocess.run([str(CLI)] + list(args), capture_output=True, text=True,
                          timeout=timeout)


def ping(tb, ns, dst, count, interval=0.2, wait=1):
    """Run ping in ns; returns (transmitted, received, output)."""
    res = tb.ns_exec(ns, ["ping", "-n", "-c", str(count), "-i", str(interval),
                          "-W", str(wait), dst], timeout=count * (interval + wait) + 10)
    m = re.search(r"(\d+) packets transmitted, (\d+) received", res.stdout)
    if not m:
        return 0, 0, res.stdout + res.stderr
    return int(m.group(1)), int(m.group(2)), res.stdout + res.stderr


__all__ = ["Service", "ServiceError", "service_start", "service_finish", "service_running", "PeerAgent", "counters_delta", "counters_wait",
           "cli_run", "ping", "testbed", "ctl", "COUNTERS", "SERVICE_BIN", "PMD",
           "REPO", "PYTHON", "CLI"]
