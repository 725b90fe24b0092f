"""Plaintext secrets are found by shape, by field name and by entropy, and never carried or printed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from flowbuilder.cli import main
from flowbuilder.formats.convert import export_flow
from flowbuilder.formats.native import load_flow
from flowbuilder.trust.secrets import is_secret_field, is_secret_value, looks_random, secret_reason

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
    for model in ("Meta-Llama-3.3-70B-Instruct", "Mixtral-8x7B-Instruct-v0.1", "gpt-4o-mini", "Qwen2.5-72B-Instruct"):
        assert not looks_random(model), model  # model names (LangFlow's SambaNova starter refused to import)
    assert looks_random("Xk9-q2Lm8-Tz4v7-Rw3n-Bp6s")  # random pieces joined by dashes stay a secret
    assert not looks_random("ft:gpt-4.1-2025-04-14:aimagine:adept3:CrV9Ir4p")  # a fine-tuned model's id
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


@pytest.mark.parametrize(
    "value",
    [
        "/srv/n8n/Uploads/HR-Policies-2024",
        "C:/Users/qa/Documents/Release-Notes-2024.pdf",
        "~/datasets/vwo/VWO_500_Test_Cases.csv",
        "uploads/HR-Policies-2024-final.pdf",
        "https://api.example.com/v1/embeddings2?page=3",
        "https://docs.n8n.io/integrations/builtin/cluster-nodes/root-nodes/2024",
    ],
)
def test_paths_and_urls_are_not_secrets(value: str) -> None:
    assert not looks_random(value)
    assert secret_reason("fileSelector", value) is None and secret_reason("url", value) is None


def test_a_secret_inside_a_url_or_path_is_still_found() -> None:
    assert looks_random(f"https://hooks.example.com/services/T000/{RANDOM_40}")
    assert secret_reason("url", f"https://api.example.com/v1?key=1&x=sk-proj-{RANDOM_40}") == (
        "shaped like a provider's API key"
    )


def test_the_reason_names_how_a_secret_was_recognised() -> None:
    assert secret_reason("model", "sk-proj-" + RANDOM_40) == "shaped like a provider's API key"
    assert "entropy" in str(secret_reason("model", RANDOM_40))
    assert secret_reason("password", PASSWORD) == "a literal value in the secret-named field 'password'"


def n8n_with_upload_path(tmp_path: Path, note: str = "") -> Path:
    data = json.loads((FIXTURES / "n8n_small.json").read_text(encoding="utf-8"))
    data["nodes"].append(
        {
            "id": "7a1c2d3e-0000-4000-8000-000000000019",
            "name": "Read HR policies",
            "type": "n8n-nodes-base.readWriteFile",
            "typeVersion": 1,
            "position": [0, 400],
            "parameters": {"operation": "read", "fileSelector": "/srv/n8n/Uploads/HR-Policies-2024"},
        }
    )
    if note:
        sticky = next(n for n in data["nodes"] if n["type"] == "n8n-nodes-base.stickyNote")
        sticky["parameters"]["content"] = note
    path = tmp_path / "hr.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_n8n_upload_path_is_not_taken_for_a_secret(tmp_path: Path, capsys) -> None:
    out = tmp_path / "flow.json"
    assert main(["import", str(n8n_with_upload_path(tmp_path)), "-o", str(out), "--report-json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["secrets_found"] == []
    assert "/srv/n8n/Uploads/HR-Policies-2024" in json.dumps(report["warnings"])  # said, not refused


def test_found_secrets_are_reported_with_location_and_reason(tmp_path: Path, capsys) -> None:
    assert main(["import", str(hostile_n8n(tmp_path)), "-o", str(tmp_path / "o.json"), "--report-json"]) == 0
    found = {(s["node"], s["parameter"]): s["detail"] for s in json.loads(capsys.readouterr().out)["secrets_found"]}
    assert "entropy" in found[("Model", "options.apiKey")]
    assert "entropy" in found[("Model", "options.customHeader")]
    assert "'password'" in found[("HTTP Request", "password")]


def test_a_refused_import_says_where_the_secret_would_have_gone(tmp_path: Path, capsys) -> None:
    source = n8n_with_upload_path(tmp_path, note=f"Ops: the model key is {RANDOM_40}, ask Dana")
    data = json.loads(source.read_text(encoding="utf-8"))
    model = next(n for n in data["nodes"] if n["name"] == "Model")
    model["parameters"]["options"]["apiKey"] = RANDOM_40
    source.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "o.json"
    assert main(["import", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "import refused" in err and "entropy" in err and "notes[" in err and RANDOM_40 not in err
    assert not out.exists()
