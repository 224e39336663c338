"""The `slipstream` CLI against a fake control socket (no root, no service):
protocol, output format, errors, socket path resolution."""

import json
import os
import socket
import subprocess
import threading

import pytest

from harness import CLI, COUNTERS, cli_run

pytestmark = pytest.mark.no_root

STATS = {
    "service": {"version": "0.1.0", "pid": 4242, "uptime_s": 12.25, "ip": "198.18.0.1/24",
                "gateway": "198.18.0.2", "mac": "aa:bb:cc:dd:ee:ff",
                "port": {"id": 0, "driver": "net_af_xdp", "name": "net_af_xdp0",
                         "rx_queues": 1, "tx_queues": 1, "mtu": 1500, "rss": False,
                         "reta_size": 0, "rx_csum_offload": False,
                         "tx_csum_offload": False, "tso": False, "max_rx_queues": 1}},
    "counters": dict({name: 0 for name in COUNTERS}, rx_packets=123456789,
                     rx_bytes=9876543210, drop_tcp_no_flow=7, flows_open=3),
}
ARP = {"entries": [{"ip": "198.18.0.2", "mac": "02:00:00:00:00:02",
                    "state": "reachable", "age_s": 1.5}]}


class FakeService:
    """Answers one JSON document per connection on a UNIX socket, like slipstreamd."""

    def __init__(self, path, replies):
        self.path = path
        self.replies = replies        # command -> bytes (None: close silently)
        self.commands = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\n" not in data and len(data) < 4096:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except socket.timeout:
                    continue
                cmd = data.split(b"\n")[0].decode()
                self.commands.append(cmd)
                reply = self.replies.get(cmd, json.dumps(
                    {"error": "unknown command: %s" % cmd}).encode())
                if reply is not None:
                    conn.sendall(reply)

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def fake(tmp_path):
    services = []

    def make(replies=None, name="ctl.sock"):
        path = str(tmp_path / name)
        f = FakeService(path, replies if replies is not None else {
            "stats": json.dumps(STATS).encode(), "arp": json.dumps(ARP).encode()})
        services.append(f)
        return f
    yield make
    for f in services:
        f.close()


def test_stats_human(fake):
    f = fake()
    res = cli_run("stats", "--ctl", f.path)
    assert res.returncode == 0, res.stderr
    assert f.commands == ["stats"]
    lines = res.stdout.splitlines()
    assert lines[0].startswith("slipstreamd 0.1.0") and "pid 4242" in lines[0]
    assert "198.18.0.1/24" in lines[0] and "aa:bb:cc:dd:ee:ff" in lines[0]
    assert "net_af_xdp" in lines[1]
    groups = [l for l in lines if l and not l.startswith(" ") and l.endswith(":")]
    assert groups == ["rx:", "tx:", "drops:", "other:"]
    rows = [l for l in lines if l.startswith("  ")]
    assert len(rows) == len(STATS["counters"])
    # name left-aligned, value right-aligned: every row has the same length,
    # names start in one column and values end in one column.
    assert len({len(r) for r in rows}) == 1, rows
    by_name = {r.split()[0]: r for r in rows}
    assert by_name["rx_packets"].endswith(" 123456789")
    assert by_name["rx_bytes"].endswith("9876543210")
    assert by_name["drop_tcp_no_flow"].split()[1] == "7"
    # groups keep counters under their prefix
    drops = lines[lines.index("drops:") + 1:lines.index("other:")]
    assert all(r.split()[0].startswith("drop_") for r in drops if r)
    assert "flows_open" in by_name


def test_stats_nonzero(fake):
    f = fake()
    res = cli_run("stats", "--nonzero", "--ctl", f.path)
    assert res.returncode == 0
    rows = [l.split()[0] for l in res.stdout.splitlines() if l.startswith("  ")]
    assert sorted(rows) == ["drop_tcp_no_flow", "flows_open", "rx_bytes", "rx_packets"]


def test_stats_json_is_the_reply(fake):
    f = fake()
    res = cli_run("stats", "--json", "--ctl", f.path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == STATS
    assert res.stdout.startswith("{\n  ")          # pretty
    assert list(json.loads(res.stdout)["counters"]) == list(STATS["counters"])


def test_arp_human_and_json(fake):
    f = fake()
    res = cli_run("arp", "--ctl", f.path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["IP", "MAC", "STATE", "AGE"]
    assert lines[1].split() == ["198.18.0.2", "02:00:00:00:00:02", "reachable", "1.5s"]
    res = cli_run("arp", "--json", "--ctl", f.path)
    assert json.loads(res.stdout) == ARP
    assert f.commands == ["arp", "arp"]


def test_arp_empty(fake):
    f = fake({"arp": b'{"entries": []}'})
    res = cli_run("arp", "--ctl", f.path)
    assert res.returncode == 0 and "empty" in res.stdout


def test_not_running(tmp_path):
    path = str(tmp_path / "missing.sock")
    for cmd in ("stats", "arp"):
        res = cli_run(cmd, "--ctl", path)
        assert res.returncode == 1
        assert res.stderr.strip() == \
            "slipstream: slipstreamd is not running (no control socket at %s)" % path
        assert res.stdout == ""


def test_refused_is_not_running(tmp_path):
    path = str(tmp_path / "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)          # bound, never listening: connect() is refused
    try:
        res = cli_run("stats", "--ctl", path)
    finally:
        s.close()
    assert res.returncode == 1
    assert "slipstreamd is not running (no control socket at %s)" % path in res.stderr


def test_service_error_reply(fake):
    f = fake({})
    res = cli_run("stats", "--ctl", f.path)
    assert res.returncode == 1
    assert "unknown command: stats" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("reply,what", [
    (b"{not json", "malformed"), (b"[1, 2]", "malformed"), (None, "empty")])
def test_bad_replies(fake, reply, what):
    f = fake({"stats": reply})
    res = cli_run("stats", "--ctl", f.path)
    assert res.returncode == 1
    assert what in res.stderr and "Traceback" not in res.stderr


def test_ctl_path_resolution(fake, tmp_path):
    env_f = fake(name="env.sock")
    opt_f = fake(name="opt.sock")
    env = dict(os.environ, SLIPSTREAM_CTL=env_f.path)
    res = subprocess.run([str(CLI), "stats", "--json"], env=env, capture_output=True,
                         text=True, timeout=20)
    assert res.returncode == 0 and env_f.commands == ["stats"]
    res = subprocess.run([str(CLI), "stats", "--json", "--ctl", opt_f.path], env=env,
                         capture_output=True, text=True, timeout=20)
    assert res.returncode == 0 and opt_f.commands == ["stats"]
    env.pop("SLIPSTREAM_CTL")
    res = subprocess.run([str(CLI), "stats"], env=env, capture_output=True, text=True,
                         timeout=20)
    if not os.path.exists("/run/slipstream/slipstreamd.sock"):
        assert "/run/slipstream/slipstreamd.sock" in res.stderr


def test_timeout_when_service_never_answers(tmp_path):
    path = str(tmp_path / "mute.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)           # accepts (backlog) but never replies
    try:
        res = cli_run("stats", "--ctl", path, "--timeout", "0.5")
    finally:
        s.close()
    assert res.returncode == 1 and "within" in res.stderr
