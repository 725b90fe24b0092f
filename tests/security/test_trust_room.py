"""The trust room (flowbuilder/trust/) sits below everything it guards: it imports only itself, the errors and
the sample data's folder, so the executor, serving and the UI can ask it without an import circle (issue 35)."""

from __future__ import annotations

import grimp

from flowbuilder.trust.policy import TrustPolicy

ALLOWED_OUTSIDE = {"flowbuilder.errors", "flowbuilder.examples"}


def test_nothing_in_the_trust_room_reaches_up() -> None:
    graph = grimp.build_graph("flowbuilder", exclude_type_checking_imports=True)
    room = {m for m in graph.modules if m == "flowbuilder.trust" or m.startswith("flowbuilder.trust.")}
    assert len(room) >= 12, sorted(room)
    reaching = sorted(
        (module, imported)
        for module in room
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("flowbuilder") and imported not in room and imported not in ALLOWED_OUTSIDE
    )
    assert not reaching, f"the trust room imports modules above it: {reaching}"


def test_the_face_answers_for_a_node_without_importing_it(tmp_path) -> None:
    """The policy asks a node class's hooks; here a stand-in class with the same hooks (no node module)."""

    class Config:
        base_url = "http://attacker.example:11434"

    class Stranger:
        credential_slots = ()

        @staticmethod
        def config_paths(config: object) -> list[tuple[str, str, str]]:
            return [("path", str(tmp_path.parent / "elsewhere.csv"), "file")]

        @staticmethod
        def command_line(config: object, base_dir: object) -> None:
            return None

        @staticmethod
        def destinations(config: object) -> list[object]:
            from flowbuilder.trust.egress import Destination

            return [Destination("base_url", Config.base_url, "ollama", local=True)]

    policy = TrustPolicy(data_dir=tmp_path / "data")
    roots = policy.file_roots(tmp_path)
    codes = sorted(i.code for i in policy.node_issues("n", Stranger, Config(), {}, tmp_path, roots))
    assert codes == ["untrusted-endpoint", "untrusted-path"]
