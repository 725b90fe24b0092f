"""Approving, from the builder, a key sent to a non-provider server and a program a flow would start: the
issue says what is at stake in plain words, the button asks once, and the issue is gone for this session."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from nicegui.testing import User

from flowbuilder.flow import Flow, NodeSpec
from flowbuilder.formats.native import save_flow
from flowbuilder.trust.providers import CredentialRef
from flowbuilder.ui.accounts import bind_account

from .test_user_journeys import canvas_of, open_builder

KEY = "sk-proj-APPROVETESTKEY-never-on-the-page-1234"


def one_node_flow(folder: Path, node: NodeSpec) -> Path:
    path = folder / "approve.json"
    save_flow(Flow(name="Approve me", nodes=[node]), path)
    return path


def page_text(user: User) -> str:
    """Everything the page's elements would send to the browser (texts, props, values)."""
    assert user.client is not None
    return json.dumps([e._to_dict() for e in user.client.elements.values()], default=str, ensure_ascii=False)


async def test_approve_a_key_sent_to_a_proxy(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    node = NodeSpec(id="llm", type="llm.openai", config={"base_url": "https://proxy.example.org/v1"})
    node.credentials["api_key"] = CredentialRef(provider="openai", name="work")
    page = await open_builder(user, builder, flow_path=one_node_flow(tmp_path, node))
    bind_account(page.session, "openai", "work", KEY)
    page.refresh()
    wording = "Would send your OpenAI key (account “work”) to https://proxy.example.org"
    await user.should_see(wording)
    await user.should_not_see("--allow-endpoint")
    assert wording in page_text(user) and KEY not in page_text(user)
    # the canvas card's issue tooltip uses the same words
    assert [i["message"] for i in (canvas_of(user).node_data("llm") or {})["issues"]] == [
        wording + ", which is not "
        "OpenAI's service. Approve it only if you trust that server, or clear the node's endpoint field."
    ]
    assert [i.code for i in page.state.issues(page.session.resolver)] == ["unsafe-credential"]
    # Cancel leaves it refused
    user.find(marker="overview-approve").click()
    await user.should_see("Let this flow send your OpenAI key (account “work”) to https://proxy.example.org?")
    user.find(marker="approve-cancel").click()
    assert page.session.resolver.approved == set()
    await user.should_see(wording)
    # from the Run log's list this time: approving clears the issue everywhere
    page.show_issues(page.state.issues(page.session.resolver))
    user.find(marker="log-approve").click()
    user.find(marker="approve-confirm").click()
    await user.should_see("Approved for this session.")
    assert page.session.resolver.approved == {("openai/work", "https://proxy.example.org")}
    assert page.state.issues(page.session.resolver) == []
    await user.should_see("Ready to run: no validation issues.")
    await user.should_see("No validation issues.")
    await user.should_not_see(wording)
    assert KEY not in page_text(user) and KEY not in page.state.flow.model_dump_json()
    # the approval covers that account and server only, and is not written to the flow
    assert "proxy.example.org" not in str(page.state.flow.node("llm").credentials)


async def test_approve_a_program_a_flow_would_start(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    marker = tmp_path / "started"
    node = NodeSpec(
        id="tools", type="tool.mcp", config={"transport": "stdio", "command": "touch", "args": [str(marker)]}
    )
    page = await open_builder(user, builder, flow_path=one_node_flow(tmp_path, node))
    command = f"{shutil.which('touch')} {marker} (in {tmp_path})"  # the resolved program and the folder
    await user.should_see(f"Would start the program `{command}` on this computer")
    await user.should_not_see("--allow-command")
    assert "untrusted-command" in [i.code for i in page.state.issues(page.session.resolver)]
    user.find(marker="overview-approve").click()
    await user.should_see(f"Let this flow start the program `{command}` on this computer?")
    user.find(marker="approve-confirm").click()
    await user.should_see("Approved for this session.")
    assert page.session.resolver.commands == {command}
    assert "untrusted-command" not in [i.code for i in page.state.issues(page.session.resolver)]
    await user.should_not_see("Would start the program")
    assert not marker.exists()  # approving starts nothing; only a run would


async def test_approve_a_server_a_keyless_node_would_call(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    node = NodeSpec(id="emb", type="embedder.ollama", config={"base_url": "http://gpu-box.example:11434"})
    page = await open_builder(user, builder, flow_path=one_node_flow(tmp_path, node))
    wording = "Would send this node's requests (and the text in them) to http://gpu-box.example:11434"
    await user.should_see(wording)
    assert [i.code for i in page.state.issues(page.session.resolver)] == ["untrusted-endpoint"]
    user.find(marker="overview-approve").click()
    await user.should_see("Let this flow send requests to http://gpu-box.example:11434?")
    user.find(marker="approve-confirm").click()
    await user.should_see("Approved for this session.")
    assert page.session.resolver.approved == {("ollama/default", "http://gpu-box.example:11434")}
    assert page.state.issues(page.session.resolver) == []
    await user.should_not_see(wording)
