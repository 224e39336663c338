#!/usr/bin/python3
"""A hostile Slipstream application: speaks the attach protocol itself
(docs/api.md, src/shm/abi.h) and then abuses the shared memory.

  hostile_app.py --sock PATH [--seconds T] [--seed S] [--max-sessions N]
                 [--echo IP:PORT] [--avoid-port P]

Until T seconds have passed (at most N sessions), it repeatedly:
  1. sends garbage on a fresh control connection (a nonsense attach line or
     random bytes) and records the answer ({"ok": false, ...} or a close);
  2. attaches ("attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536") and
     takes the fds: region memfd, status page, doorbell eventfd, context 0
     eventfd;
  3. "plausible" phase (~0.2 s): publishes well-formed-looking commands with
     hostile fields through a correctly advanced producer index: invalid
     opcodes, CONNECTs (some to --echo, a Linux echo server, so real
     connections exist), TX / RX_DONE (apart, or one TX with SS_CMDF_RX_DONE) with absurd byte counts on real and
     made-up handles, stale generations, SHUTDOWN/CLOSE/ABORT on random
     handles, LISTEN on random ports (never --avoid-port), LISTEN_CLOSE of
     random ids.  It consumes its events (learning connection handles);
  4. "corrupt" phase: random bytes in command slots and a producer index
     more than a ring ahead (or a garbage event-ring consumer index), then
     rings the doorbell; the service must hang up on it within 3 s.

One JSON line at the end: {"sessions", "disconnected", "not_disconnected",
"commands", "events", "connected", "refused", "garbage_closed", "errors"};
exit 0 when every corrupted session was disconnected and nothing odd
happened, 1 otherwise.
"""

import argparse
import json
import mmap
import os
import random
import select
import socket
import struct
import sys
import time

ATTACH = b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n"

# struct ss_shm_hdr
HDR = struct.Struct("<IIQIIIIIIIIIIQ")
HDR_FIELDS = ("magic", "version", "region_size", "app_id", "n_ctx", "ctx_off",
              "ctx_stride", "atx_slots", "arx_slots", "max_conns", "rxbuf_size",
              "txbuf_size", "flags", "buf_off")
SS_SHM_MAGIC = 0x314D5353
RING_HDR = 3 * 64                    # prod, cons, sleeping: one cache line each
CMD = struct.Struct("<B3xIIIIHHQ")   # op, conn, gen, arg, ip, port, pad, cookie
CMD_F = struct.Struct("<BB2xIIIIHHQ")  # op, flags, conn, gen, arg, ip/rx_done, port, pad, cookie
CMDF_RX_DONE = 0x02                  # TX: also RX_DONE of the ip field's bytes
EV = struct.Struct("<BBHIIIQIIHHIQQQ")
assert CMD.size == 32 and CMD_F.size == 32 and EV.size == 64

(CMD_NOP, CMD_LISTEN, CMD_LISTEN_CLOSE, CMD_CONNECT, CMD_TX, CMD_RX_DONE,
 CMD_SHUTDOWN, CMD_CLOSE, CMD_ABORT, CMD_OP_MAX) = range(10)
(EV_NONE, EV_LISTEN, EV_CONNECTED, EV_ACCEPTED, EV_RX, EV_TX_ACKED, EV_PEER_FIN,
 EV_RESET, EV_ERROR, EV_CLOSED, EV_CMD_ERROR) = range(11)

GARBAGE_LINES = [
    b"attach\n", b"attach 2 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n",
    b"attach 1 contexts=0 conns=64 rxbuf=65536 txbuf=65536\n",
    b"attach 1 contexts=1 conns=64 rxbuf=65535 txbuf=65536\n",
    b"attach 1 contexts=1 conns=99999999999999999999 rxbuf=65536 txbuf=65536\n",
    b"attach 1 bogus\n", b"attach 1 contexts=1\n", b"\n", b"\x00\x01\x02\xff\n",
]


def ip_u32(s):
    return struct.unpack("!I", socket.inet_aton(s))[0]


def recv_line_fds(sock, timeout):
    """One reply line plus any fds; (b"", []) when the service closed."""
    sock.settimeout(timeout)
    data, fds = b"", []
    while not data.endswith(b"\n"):
        try:
            msg, got, _flags, _addr = socket.recv_fds(sock, 4096, 16)
        except (ConnectionResetError, BrokenPipeError):
            break
        fds += got
        if not msg:
            break
        data += msg
    return data, fds


def garbage_once(path, rnd):
    """Sends one piece of garbage on a fresh connection; returns "refused"
    ({"ok": false}), "closed" (no answer) or an error string."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        if rnd.random() < 0.5:
            s.sendall(rnd.choice(GARBAGE_LINES))
        else:
            s.sendall(rnd.randbytes(rnd.randrange(1, 2048)) + b"\n")
        s.shutdown(socket.SHUT_WR)
        data, fds = recv_line_fds(s, 5.0)
        for fd in fds:
            os.close(fd)
        if not data:
            return "closed"
        doc = json.loads(data)
        if doc.get("ok") is False and doc.get("error"):
            return "refused"
        if "error" in doc and "ok" not in doc:
            return "refused"       # a tool request it did not know
        return "unexpected answer %r" % data[:200]
    except (socket.timeout, ValueError, OSError) as e:
        return "error %r" % e
    finally:
        s.close()


class Session:
    """One attached application: the region mapped, the rings located."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(ATTACH)
        data, fds = recv_line_fds(self.sock, 5.0)
        self.reply = json.loads(data) if data else None
        if not self.reply or not self.reply.get("ok") or len(fds) < 4:
            for fd in fds:
                os.close(fd)
            self.sock.close()
            raise RuntimeError("attach failed: %r (%d fds)" % (data, len(fds)))
        self.region_fd, self.status_fd, self.doorbell_fd, self.ctx_fd = fds[:4]
        for fd in fds[4:]:
            os.close(fd)
        size = os.fstat(self.region_fd).st_size
        self.mem = mmap.mmap(self.region_fd, size, mmap.MAP_SHARED,
                             mmap.PROT_READ | mmap.PROT_WRITE)
        # Ring indices are read and written as whole 32-bit words: struct's
        # little-endian packing stores byte by byte, and the service may read
        # a half-written index (0x3ff -> 0x400 seen as 0x300: "corrupted").
        self.words = memoryview(self.mem).cast("I")
        self.hdr = dict(zip(HDR_FIELDS, HDR.unpack_from(self.mem, 0)))
        if self.hdr["magic"] != SS_SHM_MAGIC:
            raise RuntimeError("bad region magic %#x" % self.hdr["magic"])
        base = self.hdr["ctx_off"]
        self.atx = base
        self.atx_slots_off = base + RING_HDR
        self.arx = self.atx_slots_off + self.hdr["atx_slots"] * CMD.size
        self.arx_slots_off = self.arx + RING_HDR
        self.nslots = self.hdr["atx_slots"]
        self.prod = self.u32(self.atx)
        self.ev_cons = self.u32(self.arx + 64)
        self.handles = []        # (conn, gen) seen in CONNECTED/ACCEPTED events

    def u32(self, off):
        return self.words[off // 4]

    def put_u32(self, off, v):
        self.words[off // 4] = v & 0xFFFFFFFF

    def kick(self):
        try:
            os.write(self.doorbell_fd, struct.pack("<Q", 1))
        except OSError:
            pass

    def hung_up(self, timeout=0.0):
        """True once the service closed our control socket."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return False
        try:
            return self.sock.recv(1) == b""
        except OSError:
            return True

    def space(self):
        cons = self.u32(self.atx + 64)
        return self.nslots - ((self.prod - cons) & 0xFFFFFFFF)

    def push(self, cmds):
        """Publishes as many of cmds as fit; returns how many."""
        n = min(len(cmds), max(0, self.space()))
        for c in cmds[:n]:
            off = self.atx_slots_off + (self.prod % self.nslots) * CMD.size
            self.mem[off:off + CMD.size] = c
            self.prod = (self.prod + 1) & 0xFFFFFFFF
        self.put_u32(self.atx, self.prod)
        self.kick()
        return n

    def drain_events(self):
        prod = self.u32(self.arx)
        n = 0
        while self.ev_cons != prod and n < 4096:
            off = self.arx_slots_off + (self.ev_cons % self.hdr["arx_slots"]) * EV.size
            ev = EV.unpack_from(self.mem, off)
            if ev[0] in (EV_CONNECTED, EV_ACCEPTED) and ev[2] == 0:
                self.handles.append((ev[3], ev[4]))
            self.ev_cons = (self.ev_cons + 1) & 0xFFFFFFFF
            n += 1
        self.put_u32(self.arx + 64, self.ev_cons)
        return n

    def indices(self):
        """The ring indices as both sides left them (for error reports)."""
        return {"atx_prod": self.u32(self.atx), "atx_cons": self.u32(self.atx + 64),
                "arx_prod": self.u32(self.arx), "arx_cons": self.u32(self.arx + 64),
                "atx_slots": self.nslots, "arx_slots": self.hdr["arx_slots"],
                "handles": len(self.handles)}

    def close(self):
        self.words.release()
        try:
            self.mem.close()
        except (BufferError, ValueError):
            pass
        for fd in (self.region_fd, self.status_fd, self.doorbell_fd, self.ctx_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.sock.close()


def plausible_cmd(rnd, sess, echo, avoid_port):
    """A well-formed command slot with hostile contents."""
    r = rnd.random()
    handle = rnd.choice(sess.handles) if sess.handles and rnd.random() < 0.7 else \
        (rnd.randrange(0, 80), rnd.randrange(0, 4))
    conn, gen = handle
    cookie = rnd.getrandbits(64)
    if r < 0.10:
        return CMD.pack(rnd.randrange(CMD_OP_MAX, 256), conn, gen, rnd.getrandbits(32),
                        rnd.getrandbits(32), rnd.getrandbits(16), 0, cookie)
    if r < 0.20 and echo:
        return CMD.pack(CMD_CONNECT, 0, 0, 0, echo[0], echo[1], 0, cookie)
    if r < 0.25:
        # Anywhere but the service itself (198.18.0.1): the well-behaved
        # application's listener must only ever see Linux's connection.
        ip = rnd.getrandbits(32)
        if ip >> 8 == 0xC61200:
            ip = 0xC6120002
        return CMD.pack(CMD_CONNECT, 0, 0, 0, ip, rnd.getrandbits(16), 0, cookie)
    if r < 0.30:
        port = rnd.randrange(0, 65536)
        if port == avoid_port:
            port = 0
        return CMD.pack(CMD_LISTEN, 0, 0, rnd.getrandbits(32), 0, port, 0, cookie)
    if r < 0.35:
        return CMD.pack(CMD_LISTEN_CLOSE, rnd.choice([rnd.getrandbits(32), rnd.randrange(64)]),
                        0, 0, 0, 0, 0, cookie)
    if r < 0.60:
        arg = rnd.choice([0, 1, 65535, 65536, 65537, 1 << 31, 0xFFFFFFFF,
                          rnd.getrandbits(32)])
        if rnd.random() < 0.4:
            # A TX carrying an RX_DONE (SS_CMDF_RX_DONE), hostile counts in both.
            rx = rnd.choice([0, 1, 65536, 0xFFFFFFFF, rnd.getrandbits(32)])
            return CMD_F.pack(CMD_TX, CMDF_RX_DONE, conn, gen, arg, rx, 0, 0, cookie)
        return CMD.pack(CMD_TX, conn, gen, arg, 0, 0, 0, cookie)
    if r < 0.80:
        arg = rnd.choice([0, 1, 65536, 0xFFFFFFFF, rnd.getrandbits(32)])
        return CMD.pack(CMD_RX_DONE, conn, gen, arg, 0, 0, 0, cookie)
    if r < 0.90:
        # A handle with a stale or made-up generation.
        return CMD.pack(rnd.choice([CMD_TX, CMD_CLOSE, CMD_ABORT]), conn,
                        (gen + rnd.randrange(1, 1 << 32)) & 0xFFFFFFFF, 1, 0, 0, 0, cookie)
    return CMD.pack(rnd.choice([CMD_SHUTDOWN, CMD_CLOSE, CMD_ABORT]), conn, gen, 0, 0, 0, 0,
                    cookie)


def session_run(sess, rnd, stats, echo, avoid_port, plausible_s):
    """Plausible phase, then corruption; returns True if the service hung up."""
    t_end = time.monotonic() + plausible_s
    while time.monotonic() < t_end:
        cmds = [plausible_cmd(rnd, sess, echo, avoid_port) for _ in range(rnd.randrange(1, 48))]
        stats["commands"] += sess.push(cmds)
        time.sleep(0.002)
        stats["events"] += sess.drain_events()
        if sess.hung_up():
            stats["errors"].append("hung up during the plausible phase (session %d, "
                                   "app %s): %s" % (stats["sessions"], sess.reply.get("app"),
                                                    sess.indices()))
            return True
    stats["connected"] += len(sess.handles)
    # Corruption: random bytes in every slot, then an impossible index.
    for i in range(sess.nslots):
        off = sess.atx_slots_off + i * CMD.size
        sess.mem[off:off + CMD.size] = rnd.randbytes(CMD.size)
    how = rnd.random()
    if how < 0.7:
        cons = sess.u32(sess.atx + 64)
        sess.put_u32(sess.atx, cons + sess.nslots + 1 + rnd.randrange(1 << 30))
    else:
        # The service's event producer index is its own; a consumer index
        # claiming more than the ring holds is impossible.
        prod = sess.u32(sess.arx)
        sess.put_u32(sess.arx + 64, prod + 1 + rnd.randrange(1 << 30))
        # Give it an event to post: a command it must answer.
        sess.put_u32(sess.atx, sess.u32(sess.atx + 64) + 1)
        off = sess.atx_slots_off + (sess.u32(sess.atx + 64) % sess.nslots) * CMD.size
        sess.mem[off:off + CMD.size] = CMD.pack(200, 0, 0, 0, 0, 0, 0, 1)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        sess.kick()
        if sess.hung_up(0.05):
            return True
    return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sock", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-sessions", type=int, default=50)
    p.add_argument("--plausible", type=float, default=0.2)
    p.add_argument("--echo", help="IP:PORT of a Linux echo server to CONNECT to")
    p.add_argument("--avoid-port", type=int, default=-1)
    a = p.parse_args()
    rnd = random.Random(a.seed)
    echo = None
    if a.echo:
        host, port = a.echo.rsplit(":", 1)
        echo = (ip_u32(host), int(port))
    stats = {"sessions": 0, "disconnected": 0, "not_disconnected": 0, "commands": 0,
             "events": 0, "connected": 0, "refused": 0, "garbage_closed": 0, "errors": []}
    t_end = time.monotonic() + a.seconds
    while time.monotonic() < t_end and stats["sessions"] < a.max_sessions:
        g = garbage_once(a.sock, rnd)
        if g == "refused":
            stats["refused"] += 1
        elif g == "closed":
            stats["garbage_closed"] += 1
        else:
            stats["errors"].append("garbage: %s" % g)
        try:
            sess = Session(a.sock)
        except (RuntimeError, OSError, ValueError) as e:
            stats["errors"].append("attach: %s" % e)
            time.sleep(0.1)
            continue
        stats["sessions"] += 1
        try:
            if session_run(sess, rnd, stats, echo, a.avoid_port, a.plausible):
                stats["disconnected"] += 1
            else:
                stats["not_disconnected"] += 1
                stats["errors"].append("session %d: not disconnected 3 s after corrupting "
                                       "the rings" % stats["sessions"])
        finally:
            sess.close()
    ok = not stats["errors"] and stats["sessions"] > 0
    stats["errors"] = stats["errors"][:20]
    print(json.dumps(stats), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
