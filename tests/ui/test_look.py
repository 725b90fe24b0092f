"""Dark mode follows the system setting (emulated in Chromium through the DevTools protocol)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from nicegui.testing import Screen

from .test_browser import css, open_builder, shot, wait_until

pytestmark = pytest.mark.browser

BACKGROUND = "return getComputedStyle(arguments[0]).backgroundColor"


def test_dark_mode_follows_the_system_setting(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    card = css(screen, ".fb-node")[0]
    assert screen.selenium.execute_script(BACKGROUND, card) == "rgb(255, 255, 255)"
    assert "body--dark" not in (css(screen, "body")[0].get_attribute("class") or "")
    screen.selenium.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    wait_until(lambda: "body--dark" in (css(screen, "body")[0].get_attribute("class") or ""))
    card = css(screen, ".fb-node")[0]
    assert screen.selenium.execute_script(BACKGROUND, card) == "rgb(30, 41, 59)"
    shot(screen, "dark-mode")
    screen.selenium.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]}
    )
    wait_until(lambda: "body--dark" not in (css(screen, "body")[0].get_attribute("class") or ""))
