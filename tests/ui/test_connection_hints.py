"""Dragging a connection lights up the handles it may end on and dims the rest; a refused drop says why
in one line over the canvas (replaced, never stacked over the minimap)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from nicegui.testing import Screen
from selenium.webdriver import ActionChains

from .test_browser import css, drag, handle, open_builder, shot, wait_animations_done, wait_until

pytestmark = pytest.mark.browser


def classes(screen: Screen, selector: str) -> str:
    return str(css(screen, selector)[0].get_attribute("class"))


def test_dragging_a_connection_highlights_compatible_handles(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    start = css(screen, handle("loader", "records", "source"))[0]
    target = css(screen, handle("store", "query", "target"))[0]
    chain = ActionChains(screen.selenium).move_to_element(start).click_and_hold().move_by_offset(40, 30)
    chain.move_by_offset(60, 40).perform()
    wait_until(lambda: "fb-fit" in classes(screen, handle("store", "documents", "target")))
    wait_animations_done(screen)  # the highlight has faded in: the screenshot shows it
    shot(screen, "connection-drag")
    # records fit the store's documents (chunks) and the splitter's documents; not text, not services
    assert "fb-fit" in classes(screen, handle("splitter", "documents", "target"))
    assert "fb-unfit" in classes(screen, handle("store", "query", "target"))
    assert "fb-unfit" in classes(screen, handle("store", "embedder", "target"))
    assert "fb-unfit" in classes(screen, handle("splitter", "chunks", "source"))  # same side: never
    ActionChains(screen.selenium).move_to_element(target).release().perform()
    # the drop on an unfit handle is refused by Python, in one line over the canvas
    wait_until(lambda: [m for m in css(screen, ".fb-canvas-message") if m.is_displayed()])
    assert "Cannot connect records to text" in css(screen, ".fb-canvas-message")[0].text
    assert not any("fb-fit" in (h.get_attribute("class") or "") for h in css(screen, ".vue-flow__handle"))
    drag(screen, handle("loader", "records", "source"), handle("store", "embedder", "target"))
    wait_until(lambda: "embedder" in css(screen, ".fb-canvas-message")[0].text)
    assert len([m for m in css(screen, ".fb-canvas-message") if m.is_displayed()]) == 1
    assert not css(screen, ".q-notification")  # no toasts
    css(screen, ".fb-map-toggle")[0].click()
    minimap = wait_until(lambda: css(screen, ".vue-flow__minimap"))[0].rect  # type: ignore[index]
    message = css(screen, ".fb-canvas-message")[0].rect
    assert message["y"] + message["height"] < minimap["y"]
    assert len(css(screen, ".vue-flow__edge")) == 1
