"""The builder's Import dialog takes Flowise JSON and Dify YAML (picked or dropped) and shows the same report
and one "Bind a key" button per account as for n8n and LangFlow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nicegui.testing import Screen

from .test_browser import click_import, css, open_builder, shot, wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"


def _import(screen: Screen, path: Path) -> None:
    click_import(screen)
    upload = wait_until(lambda: css(screen, '.fb-import-upload input[type="file"]'))[0]  # type: ignore[index]
    accepted = upload.get_attribute("accept") or ""
    assert ".yml" in accepted and ".json" in accepted, accepted
    upload.send_keys(str(path))
    screen.should_contain("Import report")


def test_import_dialog_reads_a_dify_dsl_and_a_flowise_chatflow(screen: Screen, builder: Callable[..., None]) -> None:
    open_builder(screen, builder)
    _import(screen, FIXTURES / "dify" / "chatflow_knowledge_base.yml")
    wait_until(lambda: len(css(screen, ".vue-flow__node")) >= 4)
    wait_until(lambda: any("dify" in a.text for a in css(screen, ".fb-import-account")))  # one account per provider
    assert [b for b in css(screen, ".fb-import-account button") if "Bind a key" in b.text]
    shot(screen, "import-dify-chatflow")
    # offline: the knowledge base on the Dify server becomes an embedded Chroma store filled from a file
    screen.click("Import again, running offline")
    wait_until(lambda: len(css(screen, ".vue-flow__node")) >= 8)
    screen.should_contain("Import report")
    shot(screen, "import-dify-chatflow-offline")
    screen.click("Close")
    _import(screen, FIXTURES / "flowise" / "pdf_qa_chain_pinecone.json")
    wait_until(lambda: len(css(screen, ".vue-flow__node")) >= 6)
    # one account per Flowise credential: the OpenAI one used by the model and the embedder, and Pinecone's
    accounts = wait_until(lambda: css(screen, ".fb-import-account"))
    titles = " ".join(a.text for a in accounts)  # type: ignore[union-attr]
    assert "flowise-4a9b4d36" in titles and "flowise-b81a0c9e" in titles, titles
    assert [b for b in css(screen, ".fb-import-account button") if "Bind a key" in b.text]
    shot(screen, "import-flowise-chatflow")
    screen.click("Close")
