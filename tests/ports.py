"""Loopback ports for tests that start a server or need a port nothing listens on.

Every pytest process (each xdist worker, each engineer's run on the same machine) takes its ports from here, so
concurrent runs never pick the same one:

- a port is taken from ``PORTS``, below the kernel's ephemeral range, so no outgoing connection (a browser's,
  an HTTP client's) is ever given it as its local port while a test's server is stopped between two tests;
- a port is held with an ``flock`` on ``<tmp>/flowbuilder-test-ports/<port>.lock`` for the life of the process
  that took it (the kernel drops the lock when the process ends, also on kill -9), and is taken only if it can be
  bound right now, so a port used by something else on the machine is skipped.

Servers that can bind port 0 themselves and report it (``tests/fakes``) need none of this.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

PORTS = range(20000, 30000)
"""Below Linux's default ephemeral range (32768-60999) and above the usual service ports."""

LOCK_DIR = Path(tempfile.gettempdir()) / "flowbuilder-test-ports"

_held: dict[int, int] = {}  # port -> file descriptor holding its lock (kept open: the lock lasts with the process)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT does not block
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def reserve_port() -> int:
    """A loopback port that this process holds until it ends and no other test process on the machine gets."""
    LOCK_DIR.mkdir(mode=0o777, exist_ok=True)
    start = random.randrange(len(PORTS))  # spreads concurrent processes over the range: fewer lock attempts
    for i in range(len(PORTS)):
        port = PORTS[(start + i) % len(PORTS)]
        if port in _held:
            continue
        fd = os.open(LOCK_DIR / f"{port}.lock", os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another test process holds it
            os.close(fd)
            continue
        if not _bindable(port):  # something else on the machine uses it
            os.close(fd)  # closing releases the lock
            continue
        _held[port] = fd
        return port
    raise RuntimeError(f"no free loopback port in {PORTS.start}-{PORTS.stop - 1} for a test server")
