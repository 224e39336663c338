"""Starting, pinning and stopping the programs of a run.

Every program runs inside a test-bed namespace (`ip netns exec NS`),
optionally pinned with `taskset -c CPUS` (the pin is inherited across the
exec of `slipstream run` and by every thread the program makes), in its own
session (so stop() can signal its whole group), with its output in a log
file, and with RLIMIT_NOFILE raised: the 16384-connection points need more
than the usual 1024 descriptors (an accelerated socket holds an eventfd, so
a program under `slipstream run` needs one per connection too).
"""

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

NOFILE_WANT = 65536


def nofile_limit():
    """(soft, hard) RLIMIT_NOFILE a child gets: the hard limit raised to
    NOFILE_WANT where we may (CAP_SYS_RESOURCE), the soft limit up to it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < NOFILE_WANT:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, NOFILE_WANT))
            hard = NOFILE_WANT
        except (ValueError, OSError):
            pass        # no CAP_SYS_RESOURCE: keep the hard limit we have
    want = NOFILE_WANT if hard == resource.RLIM_INFINITY else min(NOFILE_WANT, hard)
    return want, hard


def _raise_nofile():
    """preexec_fn: the soft descriptor limit up to the hard one."""
    soft, hard = nofile_limit()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def wrap(ns, argv, cpus=None):
    """argv run inside namespace ns, pinned to cpus ("1", "0-1") if given."""
    pin = ["taskset", "-c", str(cpus)] if cpus is not None else []
    return ["ip", "netns", "exec", ns] + pin + [str(a) for a in argv]


class Proc:
    """One started program: its Popen, name and log file."""

    def __init__(self, name, popen, log):
        self.name, self.p, self.log = name, popen, Path(log)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def log_tail(self, n=1500):
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError as e:
            return "<%s>" % e

    def wait_log(self, needle, timeout):
        """Until needle shows up in the log; False if the program died or
        time ran out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_tail(1 << 20):
                return True
            if not self.alive():
                return False
            time.sleep(0.05)
        return False

    def stop(self, grace=5.0):
        """SIGTERM to the group, SIGKILL after grace; the exit status."""
        if self.p.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.p.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        return self.p.poll()


class ProcSet:
    """Every long-running program of the run, for stop_all()."""

    def __init__(self, logdir):
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.procs = []

    def start(self, name, ns, argv, cpus=None, env=None):
        log = self.logdir / ("%s.log" % name)
        with open(log, "wb") as f:
            p = subprocess.Popen(wrap(ns, argv, cpus), stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True, preexec_fn=_raise_nofile)
        proc = Proc(name, p, log)
        self.procs.append(proc)
        return proc

    def pids(self):
        return {p.pid for p in self.procs}

    def stop(self, proc, grace=5.0):
        rc = proc.stop(grace)
        if proc in self.procs:
            self.procs.remove(proc)
        return rc

    def stop_all(self):
        for p in reversed(list(self.procs)):
            try:
                self.stop(p, 3.0)
            except OSError:
                pass


def run_client(ns, argv, cpus=None, env=None, timeout=60.0, on_phase=None):
    """Run a client to completion (bounded by timeout); returns
    (exit status or "timeout", stdout, stderr).  on_phase(word) is called
    from a reader thread for each "phase WORD" line it prints on stderr
    (linux_rpc --phases), at the moment the line arrives."""
    import threading

    p = subprocess.Popen(wrap(ns, argv, cpus), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env, text=True,
                         start_new_session=True, preexec_fn=_raise_nofile)
    out, err = [], []

    def read_err():
        for line in p.stderr:
            if on_phase and line.startswith("phase "):
                on_phase(line.split()[1])
            err.append(line)

    def read_out():
        out.append(p.stdout.read())

    threads = [threading.Thread(target=read_err, daemon=True),
               threading.Thread(target=read_out, daemon=True)]
    for t in threads:
        t.start()
    try:
        rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(5)
        rc = "timeout"
    for t in threads:
        t.join(5)
    return rc, "".join(out), "".join(err)
