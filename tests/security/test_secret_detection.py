"""Plaintext secrets are found by shape, by field name and by entropy, and never carried or printed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.formats.convert import export_flow
from flowbuilder.formats.native import load_flow
from flowbuilder.secrets import is_secret_field, is_secret_value, looks_random

FIXTURES = Path(__file__).resolve().parents[1] / "formats" / "fixtures"
RANDOM_40 = "Q7vX2mLp9RtZ4kWb8NcY1dHs6FgJ3aUe5VoTiEr0"  # not shaped like any provider's key
PASSWORD = "hunter2-correct-horse"
CRED_DATA = "n8nInlineCredentialValue"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("apiKey", True),
        ("openai_api_key", True),
        ("accessToken", True),
        ("password", True),
        ("client_secret", True),
        ("max_tokens", False),
        ("tokenizer", False),
        ("chunk_size", False),
        ("api_key_name", False),
    ],
)
def test_secret_field_names(name: str, secret: bool) -> None:
    assert is_secret_field(name) is secret


def test_random_values_are_secrets_but_ids_and_prose_are_not() -> None:
    assert looks_random(RANDOM_40)
    assert not looks_random("3f1c6d8e-1b2a-4c3d-9e8f-0a1b2c3d4e5f")  # n8n node ids are UUIDs
    assert not looks_random("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")  # a hash
    assert not looks_random("Answer the question using only the context below.")
    assert not looks_random("text-embedding-3-small")
    assert is_secret_value("model", RANDOM_40)
    assert not is_secret_value("api_key", "={{ $env.OPENAI_KEY }}")  # an n8n expression holds no value


def hostile_n8n(tmp_path: Path) -> Path:
    data = json.loads((FIXTURES / "n8n_small.json").read_text(encoding="utf-8"))
    nodes = copy.deepcopy(data["nodes"])
    model = next(n for n in nodes if n["name"] == "Model")
    model["parameters"]["options"]["apiKey"] = RANDOM_40
    model["parameters"]["options"]["customHeader"] = RANDOM_40
    model["credentials"]["openAiApi"]["data"] = {"apiKey": CRED_DATA, "url": "https://api.openai.com"}
    http = next(n for n in nodes if n["name"] == "HTTP Request")
    http["parameters"]["password"] = PASSWORD
    data["nodes"] = nodes
    path = tmp_path / "hostile_n8n.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("report_json", [False, True])
def test_secrets_found_by_name_and_entropy_never_leave_the_import(tmp_path: Path, capsys, report_json) -> None:
    out = tmp_path / "flow.json"
    args = ["import", str(hostile_n8n(tmp_path)), "-o", str(out)] + (["--report-json"] if report_json else [])
    assert main(args) == 0
    captured = capsys.readouterr()
    written = out.read_text(encoding="utf-8")
    for secret in (RANDOM_40, PASSWORD, CRED_DATA):
        assert secret not in written, secret
        assert secret not in captured.out + captured.err, secret
    assert "apiKey" in captured.out and "password" in captured.out  # reported by location
    flow = load_flow(out)
    for fmt in ("n8n", "langflow"):
        exported = json.dumps(export_flow(flow, fmt)[0])
        assert all(s not in exported for s in (RANDOM_40, PASSWORD, CRED_DATA))
