"""Client for slipstreamd's control socket.

Protocol (docs: the service's control thread): a UNIX SOCK_STREAM socket; the
client sends one command line (``stats\\n`` or ``arp\\n``), the service answers
with one JSON document and closes the connection.  An unknown command is
answered with ``{"error": "unknown command: X"}``.
"""

import json
import os
import socket
import time

DEFAULT_CTL_PATH = "/run/slipstream/slipstreamd.sock"
CTL_ENV = "SLIPSTREAM_CTL"
MAX_REPLY_BYTES = 16 << 20


class CtlError(Exception):
    """The query failed; str(err) is a message fit for the user."""


class NotRunning(CtlError):
    """No service answers on the control socket (missing or refused)."""

    def __init__(self, path):
        super().__init__(
            "slipstreamd is not running (no control socket at %s)" % path)
        self.path = path


class ServiceError(CtlError):
    """The service answered with {"error": ...}."""


def ctl_path_resolve(path=None):
    """Pick the socket path: explicit path, then $SLIPSTREAM_CTL, then the default."""
    if path:
        return path
    return os.environ.get(CTL_ENV) or DEFAULT_CTL_PATH


def ctl_query_raw(command, path=None, timeout=5.0):
    """Send one command and return the reply bytes (the whole stream up to EOF).

    Raises NotRunning when the socket is missing or refuses connections, and
    CtlError on a timeout, a permission problem or an oversized reply.
    """
    path = ctl_path_resolve(path)
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
            raise NotRunning(path) from None
        except PermissionError:
            raise CtlError("permission denied on control socket %s "
                           "(run as root?)" % path) from None
        except socket.timeout:
            raise CtlError("timed out connecting to %s" % path) from None
        sock.sendall(command.encode() + b"\n")
        chunks = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CtlError("no complete reply from slipstreamd within %.1f s"
                               % timeout)
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                raise CtlError("no complete reply from slipstreamd within "
                               "%.1f s" % timeout) from None
            except ConnectionResetError:
                raise CtlError("slipstreamd closed the control connection "
                               "without a reply") from None
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise CtlError("reply from slipstreamd exceeds %d bytes"
                               % MAX_REPLY_BYTES)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        sock.close()


def ctl_query_parse(raw, command):
    """Decode a reply (bytes) to a dict; ServiceError for {"error": ...}."""
    if not raw.strip():
        raise CtlError("empty reply from slipstreamd to %r" % command)
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise CtlError("malformed reply from slipstreamd to %r: %s"
                       % (command, err)) from None
    if not isinstance(reply, dict):
        raise CtlError("malformed reply from slipstreamd to %r: not a JSON "
                       "object" % command)
    if "error" in reply:
        raise ServiceError("slipstreamd: %s" % reply["error"])
    return reply


def ctl_query(command, path=None, timeout=5.0):
    """Send one command and return the decoded JSON reply (a dict).

    Raises NotRunning, ServiceError (the service answered {"error": ...}) or
    CtlError.
    """
    return ctl_query_parse(ctl_query_raw(command, path, timeout), command)
