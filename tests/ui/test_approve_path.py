"""Approving, from the builder, a folder outside the ones a flow may read; a never-readable file has no button."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nicegui.testing import User

from flowbuilder.flow import NodeSpec
from flowbuilder.trust.places import default_credentials_path

from .test_approve import one_node_flow
from .test_user_journeys import open_builder


async def test_approve_a_folder_a_flow_would_read(user: User, builder: Callable[..., None], tmp_path: Path) -> None:
    outside = tmp_path / "shared"
    outside.mkdir()
    (tmp_path / "flow").mkdir()
    (outside / "team.csv").write_text("id,text\nr1,row\n", encoding="utf-8")
    node = NodeSpec(id="loader", type="loader.file", config={"path": str(outside / "team.csv")})
    page = await open_builder(user, builder, flow_path=one_node_flow(tmp_path / "flow", node))
    wording = f"Would read {outside / 'team.csv'}, outside this flow's folder, the workspace and the sample data."
    await user.should_see(wording)
    await user.should_not_see("--allow-path")
    issues = page.state.issues(page.session.resolver, page.session.base_dir)
    assert [(i.code, i.detail.get("folder")) for i in issues] == [("untrusted-path", str(outside))]
    user.find(marker="overview-approve").click()
    await user.should_see(f"Let this flow read the files in {outside}?")
    user.find(marker="approve-cancel").click()
    assert page.session.resolver.paths == []
    user.find(marker="overview-approve").click()
    user.find(marker="approve-confirm").click()
    await user.should_see("Approved for this session.")
    assert page.session.resolver.paths == [outside.resolve()]
    assert page.state.issues(page.session.resolver, page.session.base_dir) == []
    await user.should_not_see(wording)
    assert str(outside) not in page.state.flow.model_dump_json().replace(str(outside / "team.csv"), "")


async def test_the_credentials_file_gets_no_approve_button(
    user: User, builder: Callable[..., None], tmp_path: Path
) -> None:
    credentials = default_credentials_path()
    (tmp_path / "flow").mkdir()
    node = NodeSpec(id="loader", type="loader.file", config={"path": str(credentials)})
    page = await open_builder(user, builder, flow_path=one_node_flow(tmp_path / "flow", node))
    await user.should_see("is Flowbuilder's credentials file; no flow may read it, not even with approval")
    await user.should_not_see(marker="overview-approve")
    issues = page.state.issues(page.session.resolver, page.session.base_dir)
    assert [(i.code, "folder" in i.detail) for i in issues] == [("untrusted-path", False)]
