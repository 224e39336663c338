"""Real programs on the test bed, under Slipstream and on Linux: the shared code
of bench/apps_compare.py and tests/integration/test_posix_apps.py.

Test bed (one prefix, a switch, three peers):

    service  198.18.0.1   slipstreamd (DPDK AF_XDP PMD on its veth); programs
                          under `slipstream run --strict` run in the root
                          namespace and use it for every AF_INET TCP socket
    peer1    198.18.0.2   Linux clients (wrk, curl, mc_load, iperf3 -c, ...)
    peer2    198.18.0.3   the same servers on Linux (the reference), and the
                          Linux servers the Slipstream clients talk to
    peer3    198.18.0.4   haproxy on Linux (the reference for haproxy)

A case runs on one side:
    "slipstream"  server cases: the server runs under `slipstream run` in the
                  root namespace, clients in peer1 reach it at 198.18.0.1;
                  client cases: the client runs under `slipstream run` in the
                  root namespace against Linux servers in peer2
    "linux"       the same server in peer2 (clients in peer1), or the same
                  client in peer1 against the same Linux servers in peer2

Every case checks results and raises CheckError when one is wrong: sha256 of
whole files, wrk responses checked by a Lua script (status 200 and the exact
body), mc_load values byte for byte, redis error counters, iperf3 and sockperf
counters.  A Slipstream server must also leave the service with no
application attached after it stops.  Every wait and every run is bounded.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import CLI, BUILD, PYTHON, REPO  # noqa: E402
from harness import testbed as tbmod  # noqa: E402

SIDES = ("slipstream", "linux")
BIG_FILE_BYTES = 10 * 1024 * 1024
SMALL_BODY = (b"<html><body>slipstream apps test bed: " + b"x" * 540 + b"</body></html>\n")

TOOLS = {t: shutil.which(t) for t in (
    "memcached", "nginx", "wrk", "haproxy", "iperf3", "sockperf", "ab", "curl",
    "redis-server", "redis-cli", "redis-benchmark", "h2load", "cc")}

# name -> (tools it needs, kind); kind "server": the server is the program
# under test, "client": the client is.
CASES = {
    "memcached": (("memcached",), "server"),
    "nginx": (("nginx", "wrk", "curl"), "server"),
    "nginx_single": (("nginx", "wrk", "curl"), "server"),
    "nginx_sendfile": (("nginx", "wrk", "curl"), "server"),
    "haproxy": (("haproxy", "nginx", "wrk", "curl"), "server"),
    "haproxy_nbthread1": (("haproxy", "nginx", "wrk", "curl"), "server"),
    "iperf3": (("iperf3",), "server"),
    "iperf3_R": (("iperf3",), "server"),
    "sockperf": (("sockperf",), "server"),
    "http_server": (("curl", "ab"), "server"),
    "client_redis": (("redis-server", "redis-cli", "redis-benchmark"), "client"),
    "client_wrk": (("nginx", "wrk"), "client"),
    "client_curl": (("nginx", "curl"), "client"),
    "client_iperf3": (("iperf3",), "client"),
    "client_iperf3_R": (("iperf3",), "client"),
}

PORTS = {"memcached": 11211, "nginx": 8080, "nginx_single": 8081, "nginx_sendfile": 8084, "haproxy": 8090, "haproxy_nbthread1": 8091,
         "haproxy_backend": 8082, "iperf3": 5201, "iperf3_R": 5201, "sockperf": 11111, "http_server": 8000,
         "client_redis": 6379, "client_nginx": 8083, "client_iperf3": 5202, "client_iperf3_R": 5202}
# A 10 MB fetch takes well under 0.5 s on this bed (Linux or Slipstream); one
# that takes longer than this has stalled (a lost wake-up recovered by a timer).
CURL_MAX_SECONDS = 5.0


class CheckError(AssertionError):
    """A program gave a wrong result (or did not run)."""


def missing_tools(case):
    return [t for t in CASES[case][0] if not TOOLS.get(t)]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tail(path, n=3000):
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return "<%s>" % e
    return data[-n:].decode("utf-8", "replace")


class Proc:
    """A long-running program we started (its own session: killed by group)."""

    def __init__(self, popen, name, log, side):
        self.p, self.name, self.log, self.side = popen, name, log, side

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10.0):
        """Signal the process group; SIGKILL after timeout.  Returns the exit status."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait(5)
                return "killed"
        # Children (nginx workers) may outlive a killed parent: end the group.
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.p.returncode


class Bed:
    """The test bed, the service, a scratch directory, the files served."""

    def __init__(self, prefix, pmd=harness.PMD):
        self.prefix = prefix
        self.pmd = pmd
        self.tb = tbmod.Testbed(prefix, peers=3)
        self.svc = None
        self.dir = Path(tempfile.mkdtemp(prefix="ss-apps-"))
        os.chmod(self.dir, 0o755)
        self.www = self.dir / "www"
        self.procs = []
        self.mc_load = None
        self.env = dict(os.environ, SLIPSTREAM_BUILD=str(BUILD))

    # -- life cycle

    def up(self):
        self.tb.up()
        self.svc = harness.Service(self.tb, pmd=self.pmd)
        try:
            self.svc.start()
        except harness.ServiceError:
            self.svc.kill()
            raise
        self.www.mkdir()
        os.chmod(self.www, 0o755)
        (self.www / "index.html").write_bytes(SMALL_BODY)
        with open(self.www / "big.bin", "wb") as f:
            f.write(os.urandom(BIG_FILE_BYTES))
        self.big_sha = sha256_file(self.www / "big.bin")
        return self

    def down(self):
        """Stop everything; returns the service's exit problems (list of str)."""
        problems = []
        for p in reversed(self.procs):
            p.stop(timeout=5)
        self.procs = []
        try:
            if self.svc is not None:
                problems = harness.service_stop_problems(self.svc)
        finally:
            self.tb.down()
            shutil.rmtree(self.dir, ignore_errors=True)
        return problems

    # -- where things run

    @property
    def client_ns(self):
        return self.tb.peer(1).ns

    def linux_ns(self):
        return self.tb.peer(2).ns

    def server_ip(self, side):
        return self.tb.service_ip if side == "slipstream" else self.tb.peer(2).ip

    def ss_argv(self, argv):
        return [str(CLI), "run", "--sock", self.svc.ctl_path, "--strict", "--"] + list(argv)

    def start(self, name, side, argv, ns=None):
        """A server: under `slipstream run` in the root namespace (side
        "slipstream"), else on Linux in @ns (default peer2)."""
        log = self.dir / ("%s-%s.log" % (name, side))
        out = open(log, "wb")
        try:
            if side == "slipstream":
                p = subprocess.Popen(self.ss_argv(argv), env=self.env, stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
            else:
                p = self.tb.ns_popen(ns or self.linux_ns(), argv, stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        finally:
            out.close()
        proc = Proc(p, name, log, side)
        self.procs.append(proc)
        return proc

    def stop(self, proc):
        """Stop a server; a Slipstream one must leave the service without
        applications, connections or listeners."""
        proc.stop()
        if proc in self.procs:
            self.procs.remove(proc)
        if proc.side == "slipstream":
            self.wait_service_idle("after %s stopped" % proc.name)

    def wait_service_idle(self, what, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            g = self.svc.query("stats")["gauges"]
            if g["apps"] == 0 and g["app_conns"] == 0 and g["listeners"] == 0:
                return g
            if time.monotonic() > deadline:
                raise CheckError("service not idle %s: %s" % (what, g))
            time.sleep(0.1)

    def run(self, side_or_ns, argv, timeout, slipstream=False):
        """Run a client to completion: under `slipstream run` in the root
        namespace (slipstream=True), else in namespace side_or_ns."""
        try:
            if slipstream:
                return subprocess.run(self.ss_argv(argv), env=self.env, capture_output=True,
                                      text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            return self.tb.ns_exec(side_or_ns, argv, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise CheckError("%s did not finish within %s s" % (argv[0], timeout)) from e

    def client(self, side, argv, timeout, kind="server"):
        """A client run for a case: for server cases always from peer1 (Linux);
        for client cases under Slipstream (root namespace) or from peer1."""
        return self.run(self.client_ns, argv, timeout,
                        slipstream=(kind == "client" and side == "slipstream"))

    def wait_listen(self, ip, port, proc=None, timeout=20.0):
        """Until a TCP connect from peer1 to ip:port succeeds."""
        script = ("import socket,sys,time\n"
                  "d=time.monotonic()+%f\n"
                  "while time.monotonic()<d:\n"
                  " s=socket.socket()\n s.settimeout(1)\n"
                  " try:\n  s.connect((%r,%d)); s.close(); sys.exit(0)\n"
                  " except OSError: s.close(); time.sleep(0.1)\n"
                  "sys.exit(1)\n" % (timeout, ip, port))
        r = self.tb.ns_exec(self.client_ns, [PYTHON, "-c", script], timeout=timeout + 10)
        if r.returncode != 0:
            what = ""
            if proc is not None:
                what = "; %s %s; log:\n%s" % (
                    proc.name, "exited %s" % proc.p.returncode if not proc.alive()
                    else "is running", _tail(proc.log))
            raise CheckError("nothing listens on %s:%d after %.0f s%s" % (ip, port, timeout,
                                                                       what))

    def require_alive(self, proc):
        if not proc.alive():
            raise CheckError("%s exited (%s); log:\n%s" % (proc.name, proc.p.returncode,
                                                          _tail(proc.log)))

    def build_mc_load(self):
        if self.mc_load is None:
            out = BUILD / "bench" / "mc_load"
            if not out.exists():
                raise CheckError("mc_load not built at %s (ninja -C %s)" % (out, BUILD))
            self.mc_load = out
        return self.mc_load


@contextlib.contextmanager
def bed_up(prefix):
    """A Bed that is up for the with-block; then it is taken down, and the
    service's exit problems, if any, raise CheckError."""
    b = Bed(prefix)
    try:
        b.up()
    except Exception:
        b.down()
        raise
    try:
        yield b
    finally:
        problems = b.down()
    if problems:
        raise CheckError("\n".join(problems))


# ---- the side-by-side table --------------------------------------------

def fmt(v, unit):
    if v is None:
        return "-"
    if unit in ("Gbit/s",):
        return "%.2f %s" % (v, unit)
    if unit in ("MB/s",):
        return "%.0f %s" % (v, unit)
    if unit == "us":
        return "%.0f us" % v if v >= 100 else "%.1f us" % v
    return "{:,.0f} {}".format(v, unit)


def table(results, cases):
    lines = []
    head = "%-18s %-22s %16s %16s %7s" % ("program", "metric", "Slipstream", "Linux", "ratio")
    lines.append(head)
    lines.append("-" * len(head))
    for c in cases:
        r = results.get(c, {})
        ss, lin = r.get("slipstream", {}), r.get("linux", {})
        for side, d in (("slipstream", ss), ("linux", lin)):
            if d.get("error"):
                lines.append("%-18s %-22s %s" % (c, "FAILED (%s)" % ("Slipstream" if side ==
                             "slipstream" else "Linux"), d["error"].splitlines()[0][:120]))
        metrics = list((ss.get("metrics") or {}).keys())
        metrics += [m for m in (lin.get("metrics") or {}) if m not in metrics]
        for m in metrics:
            sv = (ss.get("metrics") or {}).get(m)
            lv = (lin.get("metrics") or {}).get(m)
            unit = (sv or lv)[1]
            ratio = "-"
            if sv and lv and lv[0]:
                ratio = "%.2f" % (sv[0] / lv[0])
            lines.append("%-18s %-22s %16s %16s %7s" % (c, m, fmt(sv and sv[0], unit),
                                                       fmt(lv and lv[0], unit), ratio))
    return "\n".join(lines)


# ---- clients and their checks -------------------------------------------

WRK_LUA = """
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  local f = assert(io.open("%s", "rb")); expected = f:read("*a"); f:close()
  good = 0; bad = 0; badstatus = 0
end
function response(status, headers, body)
  if status ~= 200 then badstatus = badstatus + 1
  elseif body ~= expected then bad = bad + 1
  else good = good + 1 end
end
function done(summary, latency, requests)
  local g, b, s = 0, 0, 0
  for _, t in ipairs(threads) do
    g = g + t:get("good"); b = b + t:get("bad"); s = s + t:get("badstatus")
  end
  io.write(string.format("CHECK good=%%d badbody=%%d badstatus=%%d\\n", g, b, s))
  io.write(string.format("LAT p50=%%d p99=%%d\\n", latency:percentile(50), latency:percentile(99)))
end
"""

_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def wrk(bed, side, url, seconds, conns=50, threads=2, kind="server", body="index.html"):
    """wrk with a Lua check of every response (status 200, exact body: the
    file @body of the served directory).  Returns {rps, p50_us, p99_us,
    requests}."""
    lua = bed.dir / ("wrk_check.lua" if body == "index.html" else "wrk_check-%s.lua" % body)
    if not lua.exists():
        lua.write_text(WRK_LUA % (bed.www / body))
    argv = [TOOLS["wrk"], "-t", str(threads), "-c", str(conns), "-d", "%ds" % seconds,
            "--timeout", "5s", "-s", str(lua), url]
    r = bed.client(side, argv, timeout=seconds + 60, kind=kind)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise CheckError("wrk exit %d:\n%s" % (r.returncode, out))
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    chk = re.search(r"CHECK good=(\d+) badbody=(\d+) badstatus=(\d+)", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    lat = re.search(r"LAT p50=(\d+) p99=(\d+)", out)
    if not (m and chk and rps and lat):
        raise CheckError("wrk output not understood:\n%s" % out)
    requests = int(m.group(1))
    good, badbody, badstatus = (int(x) for x in chk.groups())
    if "Socket errors" in out:
        raise CheckError("wrk reports socket errors:\n%s" % out)
    if "Non-2xx" in out or badstatus:
        raise CheckError("wrk got non-200 responses:\n%s" % out)
    if badbody:
        raise CheckError("wrk: %d responses with a wrong body:\n%s" % (badbody, out))
    if good < 100 or good < requests:
        raise CheckError("wrk: %d good responses of %d requests:\n%s" % (good, requests, out))
    return {"rps": float(rps.group(1)), "p50_us": float(lat.group(1)),
            "p99_us": float(lat.group(2)), "requests": requests}


def curl_sha(bed, side, url, kind="server", name="curl"):
    """Fetch the 10 MB file; its sha256 must match.  Returns {mbyte_s, seconds}."""
    out = bed.dir / ("%s-%s.out" % (name, side))
    if out.exists():
        out.unlink()
    # --speed-time/--speed-limit: give up after 5 s without a byte.
    argv = [TOOLS["curl"], "-sS", "--fail", "--max-time", "20", "--speed-time", "5",
            "--speed-limit", "1", "-o", str(out), "-w",
            "%{http_code} %{size_download} %{speed_download} %{time_total}\n", url]
    r = bed.client(side, argv, timeout=90, kind=kind)
    if r.returncode != 0:
        raise CheckError("curl %s: exit %d: %s%s" % (url, r.returncode, r.stdout, r.stderr))
    fields = r.stdout.split()
    if len(fields) < 4 or fields[0] != "200":
        raise CheckError("curl %s: %r" % (url, r.stdout))
    got = sha256_file(out)
    size = out.stat().st_size
    out.unlink()
    if size != BIG_FILE_BYTES or got != bed.big_sha:
        raise CheckError("curl %s: %d bytes, sha256 %s; want %d bytes, %s" % (
            url, size, got, BIG_FILE_BYTES, bed.big_sha))
    if float(fields[3]) > CURL_MAX_SECONDS:
        raise CheckError("curl %s: right bytes, but 10 MB took %.1f s (stalls; limit %.0f s)"
                         % (url, float(fields[3]), CURL_MAX_SECONDS))
    return {"mbyte_s": float(fields[2]) / 1e6, "seconds": float(fields[3])}


def ab(bed, side, url, requests, conns):
    """ApacheBench: every request complete, none failed, all 2xx."""
    argv = [TOOLS["ab"], "-q", "-n", str(requests), "-c", str(conns), "-s", "10", url]
    r = bed.client(side, argv, timeout=120)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise CheckError("ab exit %d:\n%s" % (r.returncode, out))
    comp = re.search(r"Complete requests:\s+(\d+)", out)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    rps = re.search(r"Requests per second:\s+([\d.]+)", out)
    p50 = re.search(r"^\s+50%\s+(\d+)", out, re.M)
    if not (comp and failed and rps):
        raise CheckError("ab output not understood:\n%s" % out)
    if int(comp.group(1)) != requests or int(failed.group(1)) != 0 or "Non-2xx" in out:
        raise CheckError("ab: not every request answered correctly:\n%s" % out)
    return {"rps": float(rps.group(1)), "p50_us": float(p50.group(1)) * 1e3 if p50 else None}


def iperf3_client(bed, side, ip, port, seconds, reverse, kind="server", streams=1):
    """iperf3 -c (@streams parallel streams, -P); returns {gbit_s, bytes}."""
    argv = [TOOLS["iperf3"], "-c", ip, "-p", str(port), "-t", str(seconds), "-J",
            "--connect-timeout", "5000"] + (["-R"] if reverse else []) + \
        (["-P", str(streams)] if streams > 1 else [])
    r = bed.client(side, argv, timeout=seconds + 40, kind=kind)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        raise CheckError("iperf3 %s: exit %d, no JSON: %s %s" % (
            "-R" if reverse else "", r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    if r.returncode != 0 or doc.get("error"):
        raise CheckError("iperf3 %s: exit %d: %s" % ("-R" if reverse else "", r.returncode,
                                                     doc.get("error")))
    end = doc.get("end", {})
    sent = end.get("sum_sent", {}).get("bytes", 0)
    recv = end.get("sum_received", {}).get("bytes", 0)
    if not sent or not recv:
        raise CheckError("iperf3: sent %s received %s bytes" % (sent, recv))
    # What one side received can lag what the other sent only by data in flight.
    if recv > sent:
        raise CheckError("iperf3: received %d > sent %d bytes" % (recv, sent))
    return {"gbit_s": end["sum_received"]["bits_per_second"] / 1e9, "bytes": recv}


# ---- the cases ----------------------------------------------------------

def case_memcached(bed, side, quick):
    port = PORTS["memcached"]
    ip = bed.server_ip(side)
    mc = bed.build_mc_load()
    bind = "0.0.0.0" if side == "slipstream" else ip
    srv = bed.start("memcached", side, [TOOLS["memcached"], "-u", "root", "-t", "2", "-p",
                                         str(port), "-U", "0", "-l", bind, "-m", "256",
                                         "-c", "1024"])
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        # Mixed sizes up to 100 kB (correctness), then small values (rate).
        for label, sizes, conns in (("mixed", "16,100,1000,4000,16000,100000", 20),
                                    ("small", "32,100,400", 50)):
            r = bed.client(side, [str(mc), "--host", ip, "--port", str(port), "--conns",
                                  str(conns), "--seconds", "1.5" if quick else "5",
                                  "--stall", "5",
                                  "--sizes", sizes, "--keys", "32"], timeout=60)
            try:
                d = json.loads(r.stdout)
            except ValueError:
                raise CheckError("mc_load: exit %d: %s %s" % (r.returncode, r.stdout,
                                                              r.stderr))
            if r.returncode != 0 or d["errors"] or d["mismatches"] or d["verified"] < 100:
                raise CheckError("mc_load (%s values): %s" % (label, r.stdout.strip()))
            res["%s set+get/s" % label] = (d["ops_per_s"], "op/s", "higher")
            res["%s p50" % label] = (d["p50_us"], "us", "lower")
            res["%s p99" % label] = (d["p99_us"], "us", "lower")
            res["%s verified" % label] = (d["verified"], "gets", None)
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
    return res


NGINX_CONF = """
daemon off;
master_process %(master)s;
worker_processes %(workers)d;
user root;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log notice;
events { worker_connections 2048; }
http {
    access_log off;
    client_body_temp_path %(dir)s/body;
    proxy_temp_path %(dir)s/proxy;
    fastcgi_temp_path %(dir)s/fastcgi;
    uwsgi_temp_path %(dir)s/uwsgi;
    scgi_temp_path %(dir)s/scgi;
    keepalive_requests 1000000;
    sendfile %(sendfile)s;
    server {
        listen %(listen)s;
        root %(www)s;
        location / { }
    }
}
"""


def nginx_start(bed, name, side, listen, master, workers=2, sendfile="off", ns=None):
    d = bed.dir / ("%s-%s" % (name, side))
    d.mkdir(exist_ok=True)
    conf = d / "nginx.conf"
    conf.write_text(NGINX_CONF % {"master": "on" if master else "off", "workers": workers,
                                  "dir": d, "listen": listen, "www": bed.www,
                                  "sendfile": sendfile})
    return bed.start(name, side, [TOOLS["nginx"], "-c", str(conf), "-p", str(d), "-e",
                                  str(d / "error.log")], ns=ns)


def nginx_workers(proc):
    """Pids of the nginx worker processes (children of the master)."""
    try:
        kids = Path("/proc/%d/task/%d/children" % (proc.p.pid, proc.p.pid)).read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids]


def _case_nginx(bed, side, quick, name, master, sendfile="off"):
    port = PORTS[name]
    ip = bed.server_ip(side)
    listen = "0.0.0.0:%d" % port if side == "slipstream" else "%s:%d" % (ip, port)
    srv = nginx_start(bed, name, side, listen, master, sendfile=sendfile)
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        if master:
            workers = nginx_workers(srv)
            if len(workers) != 2:
                raise CheckError("nginx master has %d worker children, want 2" % len(workers))
        w = wrk(bed, side, "http://%s:%d/index.html" % (ip, port), 2 if quick else 5)
        res["wrk req/s"] = (w["rps"], "req/s", "higher")
        res["wrk p50"] = (w["p50_us"], "us", "lower")
        res["wrk p99"] = (w["p99_us"], "us", "lower")
        c = curl_sha(bed, side, "http://%s:%d/big.bin" % (ip, port), name=name)
        res["curl 10 MB, sha256 ok"] = (c["mbyte_s"], "MB/s", "higher")
        if master:
            # Both workers still there, none replaced (a crashed worker is respawned).
            after = nginx_workers(srv)
            if sorted(after) != sorted(workers):
                raise CheckError("nginx workers changed during the run: %s -> %s; log:\n%s"
                                 % (workers, after, _tail(srv.log)))
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
    return res


def case_nginx(bed, side, quick):
    """nginx, a master and 2 workers (the listener is created by the master
    and inherited by the workers over fork)."""
    return _case_nginx(bed, side, quick, "nginx", master=True)


def case_nginx_single(bed, side, quick):
    """nginx with master_process off: one process."""
    return _case_nginx(bed, side, quick, "nginx_single", master=False)


def case_nginx_sendfile(bed, side, quick):
    """nginx, master_process off, `sendfile on` (as in Debian's nginx.conf)."""
    return _case_nginx(bed, side, quick, "nginx_sendfile", master=False, sendfile="on")


HAPROXY_CONF = """
global
    maxconn 4096
%(threads)s
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind %(bind)s
    default_backend be
backend be
    server s1 %(backend)s
"""


def case_haproxy(bed, side, quick, nbthread=None):
    """haproxy (mode http) between Linux clients in peer1 and nginx on Linux
    in peer2; under Slipstream both its client side and its server side
    connections go through the service.  Default threads (one per CPU)."""
    name = "haproxy" if nbthread is None else "haproxy_nbthread%d" % nbthread
    port, bport = PORTS[name], PORTS["haproxy_backend"]
    backend_ip = bed.tb.peer(2).ip
    if side == "slipstream":
        ip, bind, ns = bed.tb.service_ip, "0.0.0.0:%d" % port, None
    else:
        ip = bed.tb.peer(3).ip
        bind, ns = "%s:%d" % (ip, port), bed.tb.peer(3).ns
    be = nginx_start(bed, "haproxy-backend-" + side, "linux", "%s:%d" % (backend_ip, bport),
                     master=False)
    cfg = bed.dir / ("%s-%s.cfg" % (name, side))
    cfg.write_text(HAPROXY_CONF % {"bind": bind, "backend": "%s:%d" % (backend_ip, bport),
                                   "threads": "    nbthread %d" % nbthread if nbthread else ""})
    srv = bed.start(name, side, [TOOLS["haproxy"], "-db", "-f", str(cfg)], ns=ns)
    res = {}
    try:
        bed.wait_listen(backend_ip, bport, be)
        bed.wait_listen(ip, port, srv)
        w = wrk(bed, side, "http://%s:%d/index.html" % (ip, port), 2 if quick else 5)
        res["wrk req/s"] = (w["rps"], "req/s", "higher")
        res["wrk p50"] = (w["p50_us"], "us", "lower")
        res["wrk p99"] = (w["p99_us"], "us", "lower")
        c = curl_sha(bed, side, "http://%s:%d/big.bin" % (ip, port), name=name)
        res["curl 10 MB, sha256 ok"] = (c["mbyte_s"], "MB/s", "higher")
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
        bed.stop(be)
    return res


def case_haproxy_nbthread1(bed, side, quick):
    """haproxy as above with one thread (nbthread 1)."""
    return case_haproxy(bed, side, quick, nbthread=1)


def _case_iperf3(bed, side, quick, reverse):
    """iperf3 -s (bound to the server's address: without -B it listens on
    the IPv6 wildcard, which `slipstream run` leaves to the kernel)."""
    port = PORTS["iperf3"]
    ip = bed.server_ip(side)
    srv = bed.start("iperf3", side, [TOOLS["iperf3"], "-s", "-p", str(port), "-B", ip])
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        f = iperf3_client(bed, side, ip, port, 2 if quick else 5, reverse=reverse)
        res["server->client (-R)" if reverse else "client->server"] = (f["gbit_s"], "Gbit/s",
                                                                      "higher")
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
    return res


def case_iperf3(bed, side, quick):
    return _case_iperf3(bed, side, quick, reverse=False)


def case_iperf3_R(bed, side, quick):
    return _case_iperf3(bed, side, quick, reverse=True)


def sockperf_pingpong(bed, side, ip, port, secs, size=64):
    """sockperf ping-pong --tcp from peer1: every message answered, none
    dropped, duplicated or out of order.  Returns {rt_s, avg_us, p50_us,
    p99_us} (sockperf's latencies are one-way: half the round trip)."""
    r = bed.client(side, [TOOLS["sockperf"], "ping-pong", "--tcp", "-i", ip, "-p",
                          str(port), "-t", str(secs), "-m", str(size)], timeout=secs + 30)
    out = r.stdout + r.stderr
    valid = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); "
                      r"ReceivedMessages=(\d+)", out)
    dropped = re.search(r"# dropped messages = (\d+); # duplicated messages = (\d+); "
                        r"# out-of-order messages = (\d+)", out)
    avg = re.search(r"avg-latency=([\d.]+)", out)
    p50 = re.search(r"percentile 50\.000 =\s+([\d.]+)", out)
    p99 = re.search(r"percentile 99\.000 =\s+([\d.]+)", out)
    if r.returncode != 0 or not (valid and dropped and avg and p50 and p99):
        raise CheckError("sockperf ping-pong: exit %d:\n%s" % (r.returncode, out[-3000:]))
    t, sent, recv = float(valid.group(1)), int(valid.group(2)), int(valid.group(3))
    if recv < 100 or recv != sent or any(int(x) for x in dropped.groups()):
        raise CheckError("sockperf: sent %d received %d, dropped/dup/ooo %s" % (
            sent, recv, dropped.groups()))
    return {"rt_s": recv / t, "avg_us": float(avg.group(1)), "p50_us": float(p50.group(1)),
            "p99_us": float(p99.group(1)), "round_trips": recv}


def case_sockperf(bed, side, quick):
    port = PORTS["sockperf"]
    ip = bed.server_ip(side)
    bind = "0.0.0.0" if side == "slipstream" else ip
    srv = bed.start("sockperf", side, [TOOLS["sockperf"], "server", "--tcp", "-i", bind,
                                       "-p", str(port)])
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        p = sockperf_pingpong(bed, side, ip, port, 2 if quick else 5)
        res["round trips/s"] = (p["rt_s"], "rt/s", "higher")
        res["avg latency (1-way)"] = (p["avg_us"], "us", "lower")
        res["p50"] = (p["p50_us"], "us", "lower")
        res["p99"] = (p["p99_us"], "us", "lower")
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
    return res


def case_http_server(bed, side, quick):
    port = PORTS["http_server"]
    ip = bed.server_ip(side)
    bind = "0.0.0.0" if side == "slipstream" else ip
    srv = bed.start("http.server", side, [PYTHON, "-m", "http.server", str(port), "--bind",
                                          bind, "--directory", str(bed.www)])
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        c = curl_sha(bed, side, "http://%s:%d/big.bin" % (ip, port), name="http_server")
        res["curl 10 MB, sha256 ok"] = (c["mbyte_s"], "MB/s", "higher")
        a = ab(bed, side, "http://%s:%d/index.html" % (ip, port), 500 if quick else 2000, 10)
        res["ab -c 10 req/s"] = (a["rps"], "req/s", "higher")
        if a["p50_us"] is not None:
            res["ab p50"] = (a["p50_us"], "us", "lower")
        bed.require_alive(srv)
    finally:
        bed.stop(srv)
    return res


# -- Slipstream as the client (Linux servers in peer2)

def _redis_info(bed):
    r = bed.run(bed.client_ns, [TOOLS["redis-cli"], "-h", bed.tb.peer(2).ip, "-p",
                                str(PORTS["client_redis"]), "info", "stats"], timeout=10)
    return {k: v for k, _, v in (l.strip().partition(":") for l in r.stdout.splitlines()) if v}


def case_client_redis(bed, side, quick):
    port = PORTS["client_redis"]
    ip = bed.tb.peer(2).ip
    srv = bed.start("redis-server", "linux", [TOOLS["redis-server"], "--port", str(port),
                                              "--bind", ip, "--save", "", "--appendonly",
                                              "no", "--protected-mode", "no", "--logfile", ""])
    n = 20000 if quick else 100000
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        before = _redis_info(bed)
        r = bed.client(side, [TOOLS["redis-benchmark"], "-h", ip, "-p", str(port), "-c", "50",
                              "-n", str(n), "-t", "set,get", "--csv"], timeout=300,
                       kind="client")
        after = _redis_info(bed)
        if r.returncode != 0:
            raise CheckError("redis-benchmark exit %d: %s %s" % (r.returncode, r.stdout,
                                                                 r.stderr))
        rows = [l.replace('"', "").split(",") for l in r.stdout.splitlines()]
        got = {row[0]: row for row in rows if row and row[0] in ("SET", "GET")}
        header = next((row for row in rows if row and row[0] == "test"), None)
        if set(got) != {"SET", "GET"}:
            raise CheckError("redis-benchmark did not report SET and GET:\n%s" % r.stdout)
        done = int(after.get("total_commands_processed", 0)) - \
            int(before.get("total_commands_processed", 0))
        errs = int(after.get("total_error_replies", 0)) - \
            int(before.get("total_error_replies", 0))
        if errs or after.get("rejected_connections", "0") != "0" or done < 2 * n:
            raise CheckError("redis: %d commands for %d requests, %d error replies, %s "
                             "rejected" % (done, 2 * n, errs, after.get("rejected_connections")))
        for t in ("SET", "GET"):
            res["%s req/s" % t] = (float(got[t][1]), "req/s", "higher")
            if header and "p50_latency_ms" in header:
                res["%s p50" % t] = (float(got[t][header.index("p50_latency_ms")]) * 1e3, "us",
                                     "lower")
    finally:
        bed.stop(srv)
    return res


@contextlib.contextmanager
def linux_nginx(bed):
    """nginx (master + workers) on Linux in peer2, for the client cases:
    yields its base URL and stops it afterwards."""
    port = PORTS["client_nginx"]
    ip = bed.tb.peer(2).ip
    srv = nginx_start(bed, "client-nginx", "linux", "%s:%d" % (ip, port), master=True)
    try:
        bed.wait_listen(ip, port, srv)
        yield "http://%s:%d" % (ip, port)
    finally:
        bed.stop(srv)


def case_client_wrk(bed, side, quick):
    res = {}
    with linux_nginx(bed) as url:
        w = wrk(bed, side, url + "/index.html", 2 if quick else 5, kind="client")
        res["wrk req/s"] = (w["rps"], "req/s", "higher")
        res["wrk p50"] = (w["p50_us"], "us", "lower")
        res["wrk p99"] = (w["p99_us"], "us", "lower")
    return res


def case_client_curl(bed, side, quick):
    res = {}
    with linux_nginx(bed) as url:
        for i in range(1 if quick else 3):
            c = curl_sha(bed, side, url + "/big.bin", kind="client", name="client_curl")
        res["curl 10 MB, sha256 ok"] = (c["mbyte_s"], "MB/s", "higher")
    return res


def _case_client_iperf3(bed, side, quick, reverse):
    port = PORTS["client_iperf3"]
    ip = bed.tb.peer(2).ip
    srv = bed.start("iperf3-server", "linux", [TOOLS["iperf3"], "-s", "-p", str(port), "-B", ip])
    res = {}
    try:
        bed.wait_listen(ip, port, srv)
        f = iperf3_client(bed, side, ip, port, 2 if quick else 5, reverse=reverse,
                          kind="client")
        res["server->client (-R)" if reverse else "client->server"] = (f["gbit_s"], "Gbit/s",
                                                                      "higher")
    finally:
        bed.stop(srv)
    return res


def case_client_iperf3(bed, side, quick):
    return _case_client_iperf3(bed, side, quick, reverse=False)


def case_client_iperf3_R(bed, side, quick):
    return _case_client_iperf3(bed, side, quick, reverse=True)


def run_case(bed, name, side, quick=True):
    """Run one case on one side; returns {metric: (value, unit, better)}.
    Raises CheckError when a result is wrong."""
    missing = missing_tools(name)
    if missing:
        raise CheckError("missing programs: %s (scripts/setup.sh installs them)"
                         % ", ".join(missing))
    fn = globals()["case_" + name]
    res = fn(bed, side, quick)
    if side == "slipstream":
        bed.wait_service_idle("after case %s" % name)
    return res
