"""What the benchmarks that start servers share: the machine's load line, a free port, stopping a child."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path


def loadavg() -> str:
    """``/proc/loadavg`` (printed before and after every figure: the machine is shared)."""
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
