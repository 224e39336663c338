#!/usr/bin/python3
"""Linux-side TCP workloads for the integration tests, run inside a peer namespace.

Every mode prints exactly one JSON line on stdout and exits 0 when the
workload completed, 1 otherwise (the JSON says why).

  echo-client  --dst IP:PORT --conns N --bytes B [--seed S] [--timeout T]
      N concurrent connections each send B pseudo-random bytes and read them
      back; every byte is compared.  Connection i sends the stream from
      offset i * 7919 (B <= 1000003), so no two connections carry the same
      bytes and data crossing between connections is caught.
  send         --dst IP:PORT --bytes B [--seed S]     stream B bytes, then FIN
  recv         --listen PORT [--timeout T]            accept one, read to EOF
  echo-server  --listen PORT [--count N]              echo N connections (threads)
  hold         --dst IP:PORT [--seconds T]            connect, read until RST/EOF
  serve-send   --listen PORT --bytes B [--seed S]     accept one, stream B bytes,
                                                      FIN, read to EOF
  send-rst     --dst IP:PORT --bytes B [--seconds T]  stream B bytes, wait T s,
                                                      then close with SO_LINGER 0 (RST)
  recv-rst     --listen PORT --bytes B                accept one, read B bytes,
                                                      then close with SO_LINGER 0 (RST)
  fin-late     --dst IP:PORT [--seconds T]            connect, wait T s, shutdown
                                                      (FIN), read to EOF

Modes that listen print {"listening": PORT} on stderr once they do.

The payload stream is a 1000003-byte random block (a prime length, so a
segment placed at the wrong offset never matches) repeated; sha256 is over
the bytes actually sent or received.
"""

import argparse
import errno
import hashlib
import json
import os
import random
import selectors
import socket
import struct
import sys
import threading
import time

BLOCK_LEN = 1000003


def block(seed):
    return random.Random(seed).randbytes(BLOCK_LEN)


def stream_chunks(seed, total, chunk=256 * 1024):
    """Yields memoryviews covering `total` bytes of the repeated block."""
    b = block(seed)
    doubled = memoryview(b + b)
    off = 0
    left = total
    while left:
        n = min(chunk, left, BLOCK_LEN)
        yield doubled[off:off + n]
        off = (off + n) % BLOCK_LEN
        left -= n


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def out(obj, ok):
    print(json.dumps(obj), flush=True)
    sys.exit(0 if ok else 1)


CONN_STRIDE = 7919


def echo_client(a):
    dst = addr(a.dst)
    if a.bytes > BLOCK_LEN:
        out({"error": "echo-client: --bytes must be <= %d" % BLOCK_LEN}, False)
    blk = block(a.seed)
    doubled = blk + blk
    offs = [(i * CONN_STRIDE) % BLOCK_LEN for i in range(a.conns)]
    wants = [doubled[o:o + a.bytes] for o in offs]
    sel = selectors.DefaultSelector()
    conns = {}
    errors = []
    t0 = time.monotonic()
    for i in range(a.conns):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(dst)
        except BlockingIOError:
            pass
        st = {"i": i, "sent": 0, "got": bytearray(), "connected": False,
              "want": wants[i]}
        conns[s] = st
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, st)
    deadline = t0 + a.timeout
    done = 0
    while done < a.conns and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=0.5):
            s, st = key.fileobj, key.data
            want = st["want"]
            if ev & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    errors.append("conn %d: connect: %s" % (st["i"], os.strerror(err)))
                    sel.unregister(s)
                    s.close()
                    done += 1
                    continue
                if st["sent"] < len(want):
                    try:
                        st["sent"] += s.send(memoryview(want)[st["sent"]:])
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        errors.append("conn %d: send: %s" % (st["i"], e))
                if st["sent"] >= len(want):
                    sel.modify(s, selectors.EVENT_READ, st)
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError as e:
                    errors.append("conn %d: recv: %s" % (st["i"], e))
                    data = b""
                if data:
                    st["got"] += data
                if not data or len(st["got"]) >= len(want):
                    if bytes(st["got"]) != want:
                        errors.append("conn %d: echoed %d bytes, want %d, equal prefix: %s"
                                      % (st["i"], len(st["got"]), len(want),
                                         bytes(st["got"][:len(want)]) == want[:len(st["got"])]))
                    sel.unregister(s)
                    s.close()
                    done += 1
    if done < a.conns:
        errors.append("%d connections unfinished after %.0f s" % (a.conns - done, a.timeout))
    for s in list(sel.get_map().values()):
        s.fileobj.close()
    out({"conns": a.conns, "bytes": a.bytes, "done": done, "errors": errors[:20],
         "n_errors": len(errors), "seconds": round(time.monotonic() - t0, 3)}, not errors)


def send(a):
    h = hashlib.sha256()
    s = socket.create_connection(addr(a.dst), timeout=a.timeout)
    t0 = time.monotonic()
    n = 0
    err = None
    try:
        for c in stream_chunks(a.seed, a.bytes):
            s.sendall(c)
            h.update(c)
            n += len(c)
        s.shutdown(socket.SHUT_WR)
        # Wait for the peer's FIN so every byte is acknowledged.
        while s.recv(65536):
            pass
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    dt = time.monotonic() - t0
    s.close()
    out({"bytes": n, "sha256": h.hexdigest(), "seconds": round(dt, 3),
         "gbps": round(n * 8 / dt / 1e9, 3) if dt else 0, "error": err}, err is None)


def recv(a):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.listen))
    ls.listen(1)
    ls.settimeout(a.timeout)
    print(json.dumps({"listening": a.listen}), file=sys.stderr, flush=True)
    s, peer = ls.accept()
    s.settimeout(a.timeout)
    h = hashlib.sha256()
    n = 0
    err = None
    t0 = time.monotonic()
    buf = bytearray(1 << 20)
    try:
        while True:
            k = s.recv_into(buf)
            if k == 0:
                break
            h.update(memoryview(buf)[:k])
            n += k
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    dt = time.monotonic() - t0
    s.close()
    ls.close()
    out({"bytes": n, "sha256": h.hexdigest(), "seconds": round(dt, 3),
         "gbps": round(n * 8 / dt / 1e9, 3) if dt else 0, "error": err,
         "peer": "%s:%d" % peer}, err is None)


def echo_server(a):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.listen))
    ls.listen(1024)
    ls.settimeout(a.timeout)
    print(json.dumps({"listening": a.listen}), file=sys.stderr, flush=True)
    results = []

    def serve(s):
        n = 0
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                s.sendall(d)
                n += len(d)
            s.shutdown(socket.SHUT_WR)
            results.append(n)
        except OSError as e:
            results.append(str(e))
        finally:
            s.close()

    threads = []
    try:
        for _ in range(a.count):
            s, _ = ls.accept()
            t = threading.Thread(target=serve, args=(s,))
            t.start()
            threads.append(t)
    except OSError as e:
        out({"error": "accept: %s" % e, "results": results}, False)
    for t in threads:
        t.join(a.timeout)
    ok = all(isinstance(r, int) for r in results) and len(results) == a.count
    out({"results": results, "error": None if ok else "connection errors"}, ok)


def _listen_accept(a):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.listen))
    ls.listen(1)
    ls.settimeout(a.timeout)
    print(json.dumps({"listening": a.listen}), file=sys.stderr, flush=True)
    s, peer = ls.accept()
    ls.close()
    s.settimeout(a.timeout)
    return s, peer


def _rst_close(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _read_to_eof(s, h=None):
    n = 0
    buf = bytearray(1 << 20)
    while True:
        k = s.recv_into(buf)
        if k == 0:
            return n
        if h is not None:
            h.update(memoryview(buf)[:k])
        n += k


def serve_send(a):
    try:
        s, peer = _listen_accept(a)
    except OSError as e:
        out({"error": "accept: %s" % e}, False)
    h = hashlib.sha256()
    n = 0
    err = None
    extra = 0
    t0 = time.monotonic()
    try:
        for c in stream_chunks(a.seed, a.bytes):
            s.sendall(c)
            h.update(c)
            n += len(c)
        s.shutdown(socket.SHUT_WR)
        extra = _read_to_eof(s)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    dt = time.monotonic() - t0
    s.close()
    out({"bytes": n, "sha256": h.hexdigest(), "seconds": round(dt, 3),
         "received": extra, "error": err, "peer": "%s:%d" % peer}, err is None)


def send_rst(a):
    s = socket.create_connection(addr(a.dst), timeout=a.timeout)
    n = 0
    err = None
    try:
        for c in stream_chunks(a.seed, a.bytes):
            s.sendall(c)
            n += len(c)
        time.sleep(a.seconds)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    _rst_close(s)
    out({"bytes": n, "error": err}, err is None)


def recv_rst(a):
    try:
        s, peer = _listen_accept(a)
    except OSError as e:
        out({"error": "accept: %s" % e}, False)
    n = 0
    err = None
    buf = bytearray(1 << 16)
    try:
        while n < a.bytes:
            k = s.recv_into(buf, min(len(buf), a.bytes - n))
            if k == 0:
                err = "EOF"
                break
            n += k
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    _rst_close(s)
    out({"bytes": n, "error": err, "peer": "%s:%d" % peer}, err is None)


def fin_late(a):
    s = socket.create_connection(addr(a.dst), timeout=a.timeout)
    h = hashlib.sha256()
    n = 0
    err = None
    try:
        time.sleep(a.seconds)
        s.shutdown(socket.SHUT_WR)
        print(json.dumps({"shutdown": True}), file=sys.stderr, flush=True)
        n = _read_to_eof(s, h)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    s.close()
    out({"bytes": n, "sha256": h.hexdigest(), "error": err}, err is None)


def hold(a):
    s = socket.create_connection(addr(a.dst), timeout=a.seconds)
    got = 0
    err = None
    try:
        while True:
            d = s.recv(65536)
            if not d:
                err = "EOF"
                break
            got += len(d)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e))
    out({"bytes": got, "error": err}, True)


def main():
    p = argparse.ArgumentParser()
    modes = {"echo-client": echo_client, "send": send, "recv": recv,
             "echo-server": echo_server, "hold": hold, "serve-send": serve_send,
             "send-rst": send_rst, "recv-rst": recv_rst, "fin-late": fin_late}
    p.add_argument("mode", choices=sorted(modes))
    p.add_argument("--dst")
    p.add_argument("--listen", type=int)
    p.add_argument("--conns", type=int, default=1)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--seconds", type=float, default=30.0)
    a = p.parse_args()
    modes[a.mode](a)


if __name__ == "__main__":
    main()
