#!/usr/bin/python3
"""Many checked streams over plain sockets, for either end of a test: it runs
on Linux or unmodified under `slipstream run`.

  send  --dst IP:PORT --conns N --bytes B [--seed S] [--timeout T]
  recv  --listen PORT --conns N --bytes B [--seed S] [--timeout T]

The sender opens N connections at once; connection i first sends its index
(4 bytes, big-endian), then B bytes of stream i, then closes.  The receiver
accepts N connections, reads each to EOF and compares what came after the
index with stream i, byte for byte (from the index it learns which stream
to expect), so data moved between connections, lost, duplicated or out of
place is caught.  Stream i is B bytes of a block generated from (S, i)
whose length is a prime, repeated.  One thread, non-blocking sockets, one
selector; everything bounded by --timeout.

One JSON line on stdout: {"conns": done, "bytes": payload bytes, "seconds":
t, "bad": streams that differed or ended early, "error": null or text};
exit status 0 only when all N streams were whole and equal.
"""

import argparse
import json
import random
import selectors
import socket
import struct
import sys
import time

BLOCK = 65537


def block(seed, i):
    return random.Random(seed * 1000003 + i).randbytes(BLOCK)


class Stream:
    def __init__(self, sock, seed, nbytes, index=None):
        self.sock, self.seed, self.nbytes = sock, seed, nbytes
        self.index = index
        self.head = b""
        self.pos = 0            # payload bytes sent or checked
        self.bad = False
        self.done = False
        self.blk = block(seed, index) if index is not None else None

    def expect(self, n):
        """The next n bytes of the stream from pos (n <= BLOCK)."""
        off = self.pos % BLOCK
        b = self.blk[off:off + n]
        return b if len(b) == n else b + self.blk[:n - len(b)]


def out(doc, ok):
    print(json.dumps(doc), flush=True)
    sys.exit(0 if ok else 1)


def run_send(a):
    host, port = a.dst.rsplit(":", 1)
    sel = selectors.DefaultSelector()
    streams = []
    for i in range(a.conns):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, int(port)))
        st = Stream(s, a.seed, a.bytes, i)
        st.head = struct.pack(">I", i)
        streams.append(st)
        sel.register(s, selectors.EVENT_WRITE, st)
    t0, deadline = time.monotonic(), time.monotonic() + a.timeout
    left, err = a.conns, None
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            st = key.data
            try:
                if st.head:
                    st.head = st.head[st.sock.send(st.head):]
                    continue
                n = min(BLOCK, st.nbytes - st.pos)
                if n:
                    st.pos += st.sock.send(st.expect(n))
                if st.pos == st.nbytes:
                    sel.unregister(st.sock)
                    left -= 1
                    st.sock.shutdown(socket.SHUT_WR)
                    st.done = True
            except BlockingIOError:
                pass
            except OSError as e:
                err = err or "%s on connection %d" % (e.strerror or e, st.index)
                st.bad = True
                if st.pos < st.nbytes:
                    sel.unregister(st.sock)
                    left -= 1
    # Wait for each receiver's EOF: the bytes are then all acknowledged.
    for st in streams:
        if st.done:
            st.sock.setblocking(True)
            st.sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                while st.sock.recv(4096):
                    pass
            except OSError as e:
                err = err or "%s waiting for EOF on %d" % (e, st.index)
                st.bad = True
        st.sock.close()
    done = sum(1 for st in streams if st.done and not st.bad)
    if left and not err:
        err = "timeout: %d of %d streams unfinished" % (left, a.conns)
    out({"conns": done, "bytes": sum(st.pos for st in streams),
         "seconds": round(time.monotonic() - t0, 3),
         "bad": sum(1 for st in streams if st.bad), "error": err},
        done == a.conns and err is None)


def run_recv(a):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.listen))
    ls.listen(max(128, a.conns))
    ls.setblocking(False)
    print(json.dumps({"listening": a.listen}), file=sys.stderr, flush=True)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    accepted, finished, seen = 0, [], set()
    t0, deadline = None, time.monotonic() + a.timeout
    err = None
    while len(finished) < a.conns and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            if key.data is None:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    continue
                t0 = t0 or time.monotonic()
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ, Stream(c, a.seed, a.bytes))
                accepted += 1
                if accepted == a.conns:
                    sel.unregister(ls)
                continue
            st = key.data
            try:
                d = st.sock.recv(262144)
            except BlockingIOError:
                continue
            except OSError as e:
                d, err = b"", err or "%s" % e
                st.bad = True
            eof = not d
            if d and st.index is None:
                st.head += d
                if len(st.head) < 4:
                    continue
                i = struct.unpack(">I", st.head[:4])[0]
                d = st.head[4:]
                if i >= a.conns or i in seen:
                    st.bad, err = True, err or "bad stream index %d" % i
                else:
                    seen.add(i)
                    st.index, st.blk = i, block(a.seed, i)
            if d and not st.bad:
                off = 0
                while off < len(d) and not st.bad:
                    n = min(len(d) - off, BLOCK - st.pos % BLOCK)
                    if st.pos + n > st.nbytes or d[off:off + n] != st.expect(n):
                        st.bad = True
                        err = err or "stream %s differs at byte %d" % (st.index, st.pos)
                    st.pos += n
                    off += n
            if eof or st.bad:
                sel.unregister(st.sock)
                st.sock.close()   # the sender waits for this EOF
                if st.pos != st.nbytes and not st.bad:
                    st.bad = True
                    err = err or "stream %s ended at %d of %d" % (st.index, st.pos, st.nbytes)
                finished.append(st)
    ls.close()
    good = sum(1 for st in finished if not st.bad)
    if len(finished) < a.conns and not err:
        err = "timeout: %d of %d streams finished (%d accepted)" % (len(finished), a.conns,
                                                                    accepted)
    out({"conns": good, "bytes": sum(st.pos for st in finished),
         "seconds": round(time.monotonic() - (t0 or time.monotonic()), 3),
         "bad": sum(1 for st in finished if st.bad), "error": err},
        good == a.conns and err is None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("send", "recv"))
    p.add_argument("--dst")
    p.add_argument("--listen", type=int)
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60.0)
    a = p.parse_args()
    if a.conns < 1 or a.bytes < 0 or a.timeout <= 0:
        p.error("--conns >= 1, --bytes >= 0, --timeout > 0")
    if a.mode == "send" and not a.dst or a.mode == "recv" and not a.listen:
        p.error("send needs --dst, recv needs --listen")
    (run_send if a.mode == "send" else run_recv)(a)


if __name__ == "__main__":
    main()
