"""Headless Chromium for screenshots, benchmarks and the UI tests: Debian's chromium and chromedriver, offline.

Selenium is imported inside the functions, so importing this module needs neither selenium nor nicegui.
"""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DEFAULT_WINDOW_SIZE = "1600,1000"
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Flags that make Chromium start in this container and never reach out to the network by itself."""


def chrome_options(window_size: str = DEFAULT_WINDOW_SIZE) -> Any:
    """``webdriver.ChromeOptions`` for Debian's chromium with :data:`CHROMIUM_FLAGS`; ``window_size`` is "W,H"."""
    from selenium import webdriver

    os.environ["SE_OFFLINE"] = "true"  # selenium manager must not try the internet
    options = webdriver.ChromeOptions()
    for flag in (*CHROMIUM_FLAGS, f"--window-size={window_size}"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    return options


def headless_chrome(window_size: str = DEFAULT_WINDOW_SIZE) -> Any:
    """A started headless ``webdriver.Chrome`` (the caller quits it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    return webdriver.Chrome(options=chrome_options(window_size), service=Service(CHROMEDRIVER))
