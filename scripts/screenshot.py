"""Take a screenshot of a Flowbuilder page in headless Chromium, to look at UI changes.

    python scripts/screenshot.py [FLOW] [--path /compare] [--out /tmp/shots/page.png] [--wait 4]

Starts ``flowbuilder ui`` on a free port with a throw-away data dir, opens the page with Debian's
chromium + chromedriver through selenium, waits, saves a PNG and stops the server.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from flowbuilder.ui.browser import headless_chrome


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("flow", nargs="?")
    parser.add_argument("--path", default="/")
    parser.add_argument("--out", default="/tmp/shots/page.png")
    parser.add_argument("--wait", type=float, default=4.0)
    parser.add_argument("--size", default="1600,1000")
    args = parser.parse_args()
    port = free_port()
    env = {**os.environ, "FLOWBUILDER_DATA_DIR": os.environ.get("FLOWBUILDER_DATA_DIR", tempfile.mkdtemp())}
    command = [sys.executable, "-m", "flowbuilder", "ui", "--port", str(port)] + ([args.flow] if args.flow else [])
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)  # loopback only
                break
            except OSError:
                time.sleep(0.3)
        driver = headless_chrome(window_size=args.size)
        try:
            driver.get(f"http://127.0.0.1:{port}{args.path}")
            time.sleep(args.wait)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            driver.get_screenshot_as_file(args.out)
            print(args.out)
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
