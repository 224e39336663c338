#!/usr/bin/python3
"""Runs one conformance script: the scripted peer on the wire plus the
program under test (sockscript) making socket calls.

Runs inside the peer's network namespace, on the veth that faces the system
under test (SUT).  The peer uses an address its own kernel does not own, so
the kernel there neither answers nor resets anything; this program answers
ARP for that address itself, injects the script's segments through an
AF_PACKET socket and captures what the SUT sends back.

  runner.py --iface IF --peer-ip A --sut-ip B --port P --peer-port Q \
            --script FILE -- CMD...

CMD starts sockscript on the SUT side (plain in the Linux namespace, or under
`slipstream run`).  Exit status 0: the script passed; 1: it failed (the
reason on stdout, with a trace of the wire); 2: bad usage or script.

The script format is described in docs/compat.md, "Conformance suite", and
in the comment at the top of every script in tests/conformance/scripts/.
"""

import argparse
import faulthandler
import fcntl
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import frames as F  # noqa: E402

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
FLAG_BITS = {"F": F.FIN, "S": F.SYN, "R": F.RST, "P": F.PSH, ".": F.ACK, "U": F.URG,
             "E": 0x40, "W": 0x80}
DEFAULT_TOLERANCE = 1.0      # seconds late an expected segment may be (busy machines)
EARLY_SLACK = 0.005          # seconds early a timed segment may be (clock reads)
CALL_TIMEOUT = 5.0           # seconds a call may take to return
MAX_SCRIPT_SECONDS = 60.0    # a script ends (fails) after this long
PAYLOAD = bytes(range(256))


class ScriptError(Exception):
    """The script itself is wrong (exit 2)."""


class Mismatch(Exception):
    """The SUT did not do what the script expects (exit 1)."""


def u32(x):
    return x & 0xFFFFFFFF


def seq_diff(a, b):
    """a - b in sequence space, as a signed int."""
    d = u32(a - b)
    return d - (1 << 32) if d >= 1 << 31 else d


# ---- segments -----------------------------------------------------------

class Segment:
    """A TCP segment received from the SUT (decoded) with its arrival time."""

    def __init__(self, frame, t):
        self.t = t
        ip = frame[14:]
        ihl = (ip[0] & 0xF) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        self.src = socket.inet_ntoa(ip[12:16])
        self.dst = socket.inet_ntoa(ip[16:20])
        tcp = ip[ihl:total]
        (self.sport, self.dport, self.seq, self.ack, off, self.flags, self.win, _,
         _) = struct.unpack("!HHIIBBHHH", tcp[:20])
        doff = (off >> 4) * 4
        self.payload = tcp[doff:]
        self.opts = parse_options(tcp[20:doff])
        ip_ok, l4_ok = F.checksums_valid(frame)
        self.csum_ok = ip_ok and l4_ok


def parse_options(b):
    """{name: value} of TCP options; sack is a list of (left, right)."""
    out = {}
    i = 0
    while i < len(b):
        kind = b[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(b):
            break
        ln = b[i + 1]
        if ln < 2 or i + ln > len(b):
            break
        data = b[i + 2:i + ln]
        if kind == 2 and ln == 4:
            out["mss"] = struct.unpack("!H", data)[0]
        elif kind == 3 and ln == 3:
            out["ws"] = data[0]
        elif kind == 4:
            out["sackok"] = True
        elif kind == 5:
            out["sack"] = [struct.unpack("!II", data[j:j + 8])
                           for j in range(0, len(data) - 7, 8)]
        elif kind == 8 and ln == 10:
            out["ts"] = struct.unpack("!II", data)
        else:
            out["opt%d" % kind] = data.hex()
        i += ln
    return out


def flags_text(f):
    s = "".join(c for c in "SFRPUEW" if f & FLAG_BITS[c])
    return s + ("." if f & F.ACK else "")


# ---- the script ---------------------------------------------------------

TIME_RE = re.compile(r"^(\+)?(\d+(?:\.\d*)?)(?:~(\d+(?:\.\d*)?))?$")


class Event:
    def __init__(self, lineno, text, rel, t, t_hi, kind, rest):
        self.lineno, self.text = lineno, text
        self.rel, self.t, self.t_hi = rel, t, t_hi
        self.kind, self.rest = kind, rest


def script_expand(text, where, depth=0):
    """The script's lines, each `include NAME` replaced by NAME.inc's lines
    (from the script's directory); returns [(line number, text)]."""
    out = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if words and words[0] == "include":
            if depth > 4 or len(words) != 2:
                raise ScriptError("line %d: bad include" % lineno)
            inc = (where / (words[1] + ".inc")).read_text()
            out += [(lineno, line) for _, line in script_expand(inc, where, depth + 1)]
        else:
            out.append((lineno, raw))
    return out


def script_parse(text, subst, where=Path(".")):
    options, events = {}, []
    for lineno, raw in script_expand(text, where):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        for k, v in subst.items():
            line = line.replace("$" + k, str(v))
        words = line.split()
        if words[0] == "option":
            for w in words[1:]:
                k, _, v = w.partition("=")
                options[k] = v
            continue
        m = TIME_RE.match(words[0])
        if not m or len(words) < 2:
            raise ScriptError("line %d: want TIME KIND ...: %r" % (lineno, raw))
        rel = m.group(1) == "+"
        t = float(m.group(2))
        t_hi = float(m.group(3)) if m.group(3) is not None else None
        kind = words[1]
        if kind not in ("inject", "expect", "call", "call&", "returns"):
            raise ScriptError("line %d: unknown kind %r" % (lineno, kind))
        events.append(Event(lineno, raw.strip(), rel, t, t_hi, kind, words[2:]))
    return options, events


def seg_spec(words, lineno):
    """Parses 'FLAGS key=value ...' of an inject or expect line."""
    if not words:
        raise ScriptError("line %d: no flags" % lineno)
    spec = {"flags": words[0], "fields": {}}
    if words[0] != "none":
        for c in words[0]:
            if c not in FLAG_BITS:
                raise ScriptError("line %d: unknown flag %r" % (lineno, c))
    for w in words[1:]:
        k, eq, v = w.partition("=")
        spec["fields"][k] = v if eq else True
    return spec


def flags_value(text):
    v = 0
    for c in text:
        v |= FLAG_BITS[c]
    return v


# ---- the run ------------------------------------------------------------

class Run:
    def __init__(self, args, options, events):
        self.a = args
        self.events = events
        self.tol = float(options.get("tolerance", DEFAULT_TOLERANCE))
        self.trace = []
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((args.iface, 0))
        self.mac = ":".join("%02x" % b for b in self.sock.getsockname()[4][:6])
        self.sut_mac = None
        self.queue = []
        self.cond = threading.Condition()
        self.stop = False
        self.t0 = time.monotonic()
        # sequence state: peer side (ours) and SUT side
        self.peer_isn = random.randrange(1 << 32)
        self.peer_nxt = 0                  # relative to peer_isn
        self.sut_isn = None
        self.sut_max = 0                   # highest seq+len seen, relative
        self.sut_port = args.port
        self.ts_base = random.randrange(1 << 31)
        self.ts_on = [False, False]        # [peer sent TS on SYN, SUT did]
        self.sut_tsval = 0
        self.proc = None
        self.reader = threading.Thread(target=self._rx, daemon=True)

    def now(self):
        return time.monotonic() - self.t0

    def log(self, s):
        self.trace.append("%8.3f %s" % (self.now(), s))

    # -- wire

    def _rx(self):
        while not self.stop:
            r, _, _ = select.select([self.sock], [], [], 0.1)
            if not r:
                continue
            data, addr = self.sock.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING or len(data) < 14:
                continue
            t = self.now()
            etype = struct.unpack("!H", data[12:14])[0]
            if etype == F.ETH_ARP and len(data) >= 42:
                self._arp(data)
                continue
            if etype != F.ETH_IPV4 or len(data) < 34 or data[23] != F.PROTO_TCP:
                continue
            try:
                seg = Segment(data, t)
            except struct.error:
                continue
            if seg.src != self.a.sut_ip or seg.dst != self.a.peer_ip or \
                    seg.dport != self.a.peer_port:
                continue
            self.sut_mac = ":".join("%02x" % b for b in data[6:12])
            with self.cond:
                self.queue.append(seg)
                self.cond.notify_all()

    def _arp(self, data):
        op = struct.unpack("!H", data[20:22])[0]
        spa, tpa = socket.inet_ntoa(data[28:32]), socket.inet_ntoa(data[38:42])
        sha = ":".join("%02x" % b for b in data[22:28])
        if op == 1 and tpa == self.a.peer_ip:
            reply = F.eth(sha, self.mac, F.ETH_ARP,
                          F.arp(2, self.mac, self.a.peer_ip, sha, spa))
            self.sock.send(reply)
            self.sut_mac = self.sut_mac or sha
        elif op == 2 and spa == self.a.sut_ip and tpa == self.a.peer_ip:
            self.sut_mac = self.sut_mac or sha  # the answer _sut_mac() asked for

    def _sut_mac(self):
        """The SUT's MAC: learned from its frames, else asked by ARP.  Only
        the reader thread reads the socket (two readers of one socket race
        for each frame, and the loser blocks); it takes the answer."""
        deadline = time.monotonic() + 3.0
        while self.sut_mac is None and time.monotonic() < deadline:
            req = F.eth(F.BROADCAST, self.mac, F.ETH_ARP,
                        F.arp(1, self.mac, self.a.peer_ip, "00:00:00:00:00:00",
                              self.a.sut_ip))
            self.sock.send(req)
            end = time.monotonic() + 0.3
            while time.monotonic() < end and self.sut_mac is None:
                time.sleep(0.005)
        if self.sut_mac is None:
            raise Mismatch("the SUT (%s) does not answer ARP" % self.a.sut_ip)
        return self.sut_mac

    # -- events

    def inject(self, ev):
        spec = seg_spec(ev.rest, ev.lineno)
        f = spec["fields"]
        flags = flags_value(spec["flags"])
        seq = self.peer_nxt if "seq" not in f else int(f["seq"])
        if "ack" in f:
            if self.sut_isn is None:
                raise ScriptError("line %d: ack= before the SUT's ISN is known" % ev.lineno)
            ack = u32(self.sut_isn + int(f["ack"]))
        elif flags & F.ACK and self.sut_isn is not None:
            ack = u32(self.sut_isn + self.sut_max)
        else:
            ack = 0
        n = int(f.get("len", 0))
        payload = (PAYLOAD * (n // 256 + 1))[:n]
        opts = b""
        if "mss" in f:
            opts += struct.pack("!BBH", 2, 4, int(f["mss"]))
        if "sackok" in f:
            opts += b"\x04\x02"
        want_ts = "ts" in f or "tsval" in f or (all(self.ts_on) and "nots" not in f)
        if want_ts:
            tsval = self.ts_base + (int(f["tsval"]) if "tsval" in f
                                    else 100 + int(self.now() * 1000))
            tsecr = int(f["tsecr"]) if "tsecr" in f else self.sut_tsval
            if not (flags & F.ACK) and "tsecr" not in f:
                tsecr = 0
            opts += (b"\x01\x01" if "sackok" not in f else b"") + \
                struct.pack("!BBII", 8, 10, u32(tsval), u32(tsecr))
            if flags & F.SYN:
                self.ts_on[0] = True
        if "sack" in f:
            blocks = [tuple(int(x) for x in b.split(":")) for b in f["sack"].split(",")]
            opts += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(blocks)) + b"".join(
                struct.pack("!II", u32(self.sut_isn + l), u32(self.sut_isn + r))
                for l, r in blocks)
        if "ws" in f:
            opts += b"\x01" + struct.pack("!BBB", 3, 3, int(f["ws"]))
        while len(opts) % 4:
            opts += b"\x01"
        win = int(f.get("win", 65535))
        seg = F.tcp(self.a.peer_ip, self.a.sut_ip, self.a.peer_port, self.sut_port,
                    seq=u32(self.peer_isn + seq), ack=ack, flags=flags, window=win,
                    options=opts, payload=payload)
        frame = F.eth(self._sut_mac(), self.mac, F.ETH_IPV4,
                      F.ipv4(self.a.peer_ip, self.a.sut_ip, F.PROTO_TCP, seg))
        self.t_sent = self.now()
        self.sock.send(frame)
        end = seq + n + (1 if flags & F.SYN else 0) + (1 if flags & F.FIN else 0)
        if seq_diff(end, self.peer_nxt) > 0 and "seq" not in f or \
                ("seq" in f and seq == self.peer_nxt):
            self.peer_nxt = max(self.peer_nxt, end)
        self.log("inject %s seq=%d ack=%s len=%d win=%d %s" % (
            spec["flags"], seq, f.get("ack", "auto" if flags & F.ACK else "-"), n, win,
            "ts" if want_ts else ""))

    def describe(self, s):
        rel_seq = seq_diff(s.seq, self.sut_isn) if self.sut_isn is not None else s.seq
        rel_ack = seq_diff(s.ack, self.peer_isn)
        o = dict(s.opts)
        if "sack" in o:
            o["sack"] = ",".join("%d:%d" % (seq_diff(l, self.peer_isn), seq_diff(r, self.peer_isn))
                                 for l, r in o["sack"])
        if "ts" in o:
            o["ts"] = "val=%d,ecr=%s" % (o["ts"][0], "ours" if o["ts"][1] and
                                         o["ts"][1] - self.ts_base >= 0 else o["ts"][1])
        return "%s seq=%d ack=%d len=%d win=%d %s" % (
            flags_text(s.flags), rel_seq, rel_ack if s.flags & F.ACK else 0,
            len(s.payload), s.win, " ".join("%s=%s" % kv for kv in sorted(o.items())))

    def _take(self, deadline):
        with self.cond:
            while not self.queue:
                left = deadline - self.now()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.1))
            return self.queue.pop(0)

    def expect(self, ev, t_prev):
        spec = seg_spec(ev.rest, ev.lineno)
        if spec["flags"] == "none":
            # no segment at all until the event's time
            deadline = ev.t_abs
            seg = self._take(deadline)
            if seg is not None:
                self._learn(seg)
                raise Mismatch("line %d: expected no segment until %.3f, got %s at %.3f" % (
                    ev.lineno, deadline, self.describe(seg), seg.t))
            self.log("expect none: nothing arrived")
            return deadline
        lo, hi = (ev.t_abs, ev.t_hi_abs) if ev.t_hi is not None else (None, ev.t_abs + self.tol)
        seg = self._take(hi)
        if seg is None:
            raise Mismatch("line %d: expected %s by %.3f, nothing arrived" % (
                ev.lineno, " ".join(ev.rest), hi))
        self._learn(seg)
        self.log("got    %s" % self.describe(seg))
        if not seg.csum_ok:
            raise Mismatch("line %d: bad checksum on %s" % (ev.lineno, self.describe(seg)))
        problems = self._compare(spec, seg)
        if problems:
            raise Mismatch("line %d: expected %s, got %s (%s)" % (
                ev.lineno, " ".join(ev.rest), self.describe(seg), "; ".join(problems)))
        if lo is not None and seg.t < lo - EARLY_SLACK:
            raise Mismatch("line %d: %s arrived at +%.3f s, before the window +%.3f~%.3f" % (
                ev.lineno, self.describe(seg), seg.t - t_prev, lo - t_prev, hi - t_prev))
        return seg.t

    def _learn(self, seg):
        if seg.flags & F.SYN:
            self.sut_isn = seg.seq
            self.sut_port = seg.sport
            self.ts_on[1] = "ts" in seg.opts
        if self.sut_isn is None:
            return
        end = seq_diff(seg.seq, self.sut_isn) + len(seg.payload) + \
            (1 if seg.flags & (F.SYN | F.FIN) else 0) + \
            (1 if seg.flags & F.SYN and seg.flags & F.FIN else 0)
        if not seg.flags & F.RST:
            self.sut_max = max(self.sut_max, end)
        if "ts" in seg.opts:
            self.sut_tsval = seg.opts["ts"][0]

    def _compare(self, spec, seg):
        f = spec["fields"]
        bad = []
        # PSH is never compared (RFC 9293 3.9.1: a sender may set it as it
        # likes); ECE and CWR only when the script names one of them (RFC 3168
        # 6.1.1: asking for ECN on a SYN is the sender's choice).
        ignore = F.PSH | (0 if set(spec["flags"]) & set("EW") else 0xC0)
        want = flags_value(spec["flags"]) & ~ignore
        if seg.flags & ~ignore != want:
            bad.append("flags %s" % flags_text(seg.flags))
        if "seq" in f and f["seq"] != "*":
            if seq_diff(seg.seq, self.sut_isn) != int(f["seq"]):
                bad.append("seq")
        if "ack" in f and f["ack"] != "*":
            if seq_diff(seg.ack, self.peer_isn) != int(f["ack"]):
                bad.append("ack")
        if "len" in f and f["len"] != "*" and len(seg.payload) != int(f["len"]):
            bad.append("len")
        if "win" in f and f["win"] != "*" and seg.win != int(f["win"]):
            bad.append("win")
        for name in ("mss", "ws"):
            if name in f:
                if name not in seg.opts:
                    bad.append("no %s option" % name)
                elif f[name] not in ("*", True) and seg.opts[name] != int(f[name]):
                    bad.append(name)
        for name in ("sackok", "ts", "mss", "ws", "sack"):
            if "!" + name in f and name in seg.opts:
                bad.append("unwanted %s option" % name)
        for name in ("sackok", "ts"):
            if name in f and name not in seg.opts:
                bad.append("no %s option" % name)
        if "tsecr" in f:
            if "ts" not in seg.opts:
                bad.append("no ts option")
            elif seg.opts["ts"][1] != u32(self.ts_base + int(f["tsecr"])):
                bad.append("tsecr")
        if "sack" in f:
            got = [(seq_diff(l, self.peer_isn), seq_diff(r, self.peer_isn))
                   for l, r in seg.opts.get("sack", [])]
            if f["sack"] != "*":
                want_b = [tuple(int(x) for x in b.split(":")) for b in f["sack"].split(",")]
                if got[:1] != want_b[:1] or sorted(got) != sorted(want_b):
                    bad.append("sack blocks")
            elif not got:
                bad.append("no sack blocks")
        return bad

    def call(self, ev):
        text = " ".join(ev.rest)
        cmd, _, want = text.partition("->")
        self.proc.stdin.write((cmd.strip() + "\n").encode())
        self.proc.stdin.flush()
        self.pending.append((ev, cmd.strip(), want.strip()))
        self.log("call   %s" % cmd.strip())

    def returns(self, ev):
        if not self.pending:
            raise ScriptError("line %d: no call is pending" % ev.lineno)
        cev, cmd, want = self.pending.pop(0)
        if ev is not cev:
            want = " ".join(ev.rest).partition("->")[2].strip() or want
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + CALL_TIMEOUT
        while b"\n" not in self.outbuf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Mismatch("line %d: call %r did not return within %.0f s" % (
                    cev.lineno, cmd, CALL_TIMEOUT))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise Mismatch("line %d: sockscript exited during %r (%s)" % (
                        cev.lineno, cmd, self.proc.poll()))
                self.outbuf += chunk
        line, self.outbuf = self.outbuf.split(b"\n", 1)
        got = dict(kv.split("=", 1) for kv in line.decode().split())
        self.log("return %s -> %s" % (cmd, line.decode()))
        if got.get("ret") == "bad":
            raise ScriptError("line %d: sockscript cannot run %r: %s" % (
                cev.lineno, cmd, got.get("val")))
        if want:
            self._check_return(ev, cmd, want, got)
        return self.now()

    def _check_return(self, ev, cmd, want, got):
        words = want.split()
        bad = []
        if words[0] != "*" and got["ret"] != words[0]:
            bad.append("ret")
        for w in words[1:]:
            if w.startswith("val="):
                if got.get("val") != w[4:]:
                    bad.append("val")
            elif got["errno"] != w:
                bad.append("errno")
        if bad:
            raise Mismatch("line %d: %s: expected %s, got ret=%s errno=%s val=%s" % (
                ev.lineno, cmd, want, got["ret"], got["errno"], got.get("val", "")))

    # -- main loop

    def run(self):
        self.pending = []
        self.outbuf = b""
        self.proc = subprocess.Popen(self.a.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.reader.start()
        t_prev = 0.0
        try:
            for ev in self.events:
                base = t_prev if ev.rel else 0.0
                ev.t_abs = base + ev.t
                ev.t_hi_abs = base + ev.t_hi if ev.t_hi is not None else None
                if ev.t_abs > MAX_SCRIPT_SECONDS:
                    raise ScriptError("line %d: beyond %.0f s" % (ev.lineno, MAX_SCRIPT_SECONDS))
                if ev.kind == "expect":
                    t_prev = self.expect(ev, t_prev)
                    continue
                if ev.kind != "returns":
                    delay = ev.t_abs - self.now()
                    if delay > 0:
                        time.sleep(delay)
                if ev.kind == "inject":
                    self.inject(ev)
                    t_prev = self.t_sent
                elif ev.kind == "call":
                    self.call(ev)
                    t_prev = self.returns(ev)
                elif ev.kind == "call&":
                    self.call(ev)
                    t_prev = self.now()
                else:
                    t_prev = self.returns(ev)
        finally:
            self._finish()

    def _finish(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(3)
        # Reset whatever the script left open on the SUT, so the next script
        # finds no old connection (its ports are fresh anyway).
        if self.sut_isn is not None and self.sut_mac is not None:
            seg = F.tcp(self.a.peer_ip, self.a.sut_ip, self.a.peer_port, self.sut_port,
                        seq=u32(self.peer_isn + self.peer_nxt), ack=0, flags=F.RST, window=0)
            self.sock.send(F.eth(self.sut_mac, self.mac, F.ETH_IPV4,
                                 F.ipv4(self.a.peer_ip, self.a.sut_ip, F.PROTO_TCP, seg)))
        self.stop = True
        self.reader.join(1)
        fd = self.proc.stderr.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        try:
            err = (os.read(fd, 65536) or b"").decode(errors="replace")
        except BlockingIOError:
            err = ""
        if err.strip():
            self.trace.append("sockscript stderr: " + err.strip()[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--peer-ip", required=True)
    ap.add_argument("--sut-ip", required=True)
    ap.add_argument("--port", type=int, required=True, help="the SUT's port")
    ap.add_argument("--peer-port", type=int, required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    # A hang anywhere ends the run with every thread's stack on stderr.
    faulthandler.dump_traceback_later(MAX_SCRIPT_SECONDS + 15, exit=True)
    if a.cmd and a.cmd[0] == "--":
        a.cmd = a.cmd[1:]
    subst = {"SUT_IP": a.sut_ip, "PEER_IP": a.peer_ip, "PORT": a.port,
             "PEER_PORT": a.peer_port}
    try:
        path = Path(a.script)
        options, events = script_parse(path.read_text(), subst, path.parent)
        run = Run(a, options, events)
    except ScriptError as e:
        print("SCRIPT ERROR: %s" % e)
        return 2
    try:
        run.run()
        status, msg = 0, "PASS"
    except Mismatch as e:
        status, msg = 1, "FAIL: %s" % e
    except ScriptError as e:
        status, msg = 2, "SCRIPT ERROR: %s" % e
    print(msg)
    print("trace:")
    print("\n".join(run.trace))
    return status


if __name__ == "__main__":
    sys.exit(main())
