"""Credentials are bound at run time and never appear in flows, logs, errors or events."""

from __future__ import annotations

import json
import logging
import re
import stat

import pytest
from core_helpers import flow, node

from flowbuilder.errors import CredentialError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.formats.native import dump_flow
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore, parse_cred_option
from flowbuilder.trust.providers import CredentialRef, CredentialSlot
from flowbuilder.trust.secrets import MASK, install_log_filter, redact

SECRET = "sk-test-THISISASECRETKEY1234567890"
SLOT = CredentialSlot("api_key", "openai")


def resolver(tmp_path, explicit=None, environ=None) -> CredentialResolver:
    return CredentialResolver(explicit=explicit, store=CredentialStore(tmp_path / "creds.json"), environ=environ or {})


def test_binding_order_explicit_then_store_then_env(tmp_path) -> None:
    ref = CredentialRef(provider="openai", name="work")
    env = {"OPENAI_API_KEY": "from-env-1"}
    r = resolver(tmp_path, environ=env)
    assert r.resolve("llm", SLOT, ref) == "from-env-1"
    r.store.set("openai", "work", "from-store")
    assert r.resolve("llm", SLOT, ref) == "from-store"
    r.bind("openai.api_key", "from-flag")
    assert r.resolve("llm", SLOT, ref) == "from-flag"


def test_a_flow_never_names_an_environment_variable(tmp_path) -> None:
    """A reference's account name is not looked up in the environment: a shared flow cannot ask for
    AWS_SECRET_ACCESS_KEY. The provider's standard variable still binds, and the user can bind any variable."""
    env = {"AWS_SECRET_ACCESS_KEY": "aws-secret-value", "MY_OPENAI_KEY": "abcd1234"}
    hostile = CredentialRef(provider="openai", name="AWS_SECRET_ACCESS_KEY")
    assert resolver(tmp_path, environ=env).resolve("x", SLOT, hostile) is None
    ref = CredentialRef(provider="openai", name="MY_OPENAI_KEY")
    assert resolver(tmp_path, environ=env).resolve("x", SLOT, ref) is None
    assert resolver(tmp_path, environ={**env, "OPENAI_API_KEY": "std"}).resolve("x", SLOT, ref) == "std"
    bound = resolver(tmp_path, explicit=dict([("openai/MY_OPENAI_KEY", "abcd1234")]), environ=env)
    assert bound.resolve("x", SLOT, ref) == "abcd1234"
    # a binding names its provider: an account of that name under another provider gets nothing
    other = CredentialRef(provider="groq", name="MY_OPENAI_KEY")
    assert bound.resolve("x", CredentialSlot("api_key", "groq"), other) is None


def test_a_reference_cannot_route_another_providers_key(tmp_path) -> None:
    ref = CredentialRef(provider="pinecone", name="default")
    r = resolver(tmp_path, environ={"PINECONE_API_KEY": "pc-secret", "OPENAI_API_KEY": "oa"})
    assert r.resolve("x", SLOT, ref) is None
    with pytest.raises(CredentialError, match="pinecone"):
        r.resolve_for("x", SLOT, ref)


class _Endpoint:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("", True),
        ("https://api.openai.com/v1", True),
        # a cloud key goes to this machine only once approved: another user's server may listen there
        ("http://127.0.0.1:9999/v1", False),
        ("http://localhost:8000", False),
        ("http://[::1]:8000", False),
        ("http://api.openai.com/v1", False),  # not over https: the key would travel in clear
        ("https://evil.example/v1", False),
        ("https://api.openai.com.evil.example/v1", False),
        ("http://10.0.0.5:8000", False),
        ("http://x:99999", False),
        ("http://[::1", False),
    ],
)
def test_a_key_goes_only_to_its_provider(tmp_path, url, allowed) -> None:
    r = resolver(tmp_path, environ={"OPENAI_API_KEY": "sk-env-value-123456789012"})
    problem = r.endpoint_problem(SLOT, None, _Endpoint(url))
    assert (problem is None) is allowed
    if not allowed:
        assert "--allow-endpoint openai/default=" in problem or "not a valid URL" in problem
        assert re.search(r"not openai.s service|not a valid URL", problem)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        # a key goes to this machine only once approved: the flow picks the port (issue 30)
        ("http://127.0.0.1:11434", False),
        ("http://localhost:11434", False),
        ("http://[::1]:11434", False),
        ("http://sneaky.localhost:11434", False),  # not resolved to loopback by this machine
        ("http://attacker.example:11434", False),
        ("https://ollama.com", True),
    ],
)
def test_an_ollama_key_goes_only_to_ollama_com_unless_approved(tmp_path, url, allowed) -> None:
    r = resolver(tmp_path, environ={"OLLAMA_API_KEY": "ollama-env-key-1234567890"})
    problem = r.endpoint_problem(CredentialSlot("api_key", "ollama", required=False), None, _Endpoint(url))
    assert (problem is None) is allowed


def test_an_approved_endpoint_gets_the_key(tmp_path) -> None:
    r = resolver(tmp_path, environ={"OPENAI_API_KEY": "sk-env-value-123456789012"})
    config = _Endpoint("https://proxy.example.org/v1")
    r.approve("openai/default", "https://proxy.example.org")
    assert r.endpoint_problem(SLOT, None, config) is None
    assert r.resolve_for("llm", SLOT, None) == "sk-env-value-123456789012"
    other = resolver(tmp_path, environ={"OPENAI_API_KEY": "x" * 20})
    assert other.endpoint_problem(SLOT, None, config) is not None
    other.store.approve_endpoint("openai", "default", "https://proxy.example.org/any/path")
    assert other.endpoint_problem(SLOT, None, config) is None
    other.store.set("openai", "default", "stored")  # writing a key keeps the approvals
    assert other.endpoint_problem(SLOT, None, config) is None
    assert other.store.names() == {"openai": ["default"]}


def test_unbound_slot_resolves_to_none(tmp_path) -> None:
    assert resolver(tmp_path).resolve("x", SLOT, None) is None


def test_store_file_is_private(tmp_path) -> None:
    store = CredentialStore(tmp_path / "sub" / "creds.json")
    store.set("groq", "default", "gsk_value")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.get("groq", "anything") == "gsk_value"  # falls back to the provider's default
    assert store.names() == {"groq": ["default"]}


def test_unreadable_store_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "creds.json"
    path.write_text("{not json")
    with pytest.raises(CredentialError, match=r"creds\.json"):
        CredentialStore(path).get("openai", "default")


def test_parse_cred_option(monkeypatch) -> None:
    assert parse_cred_option("api_key=abc") == ("api_key", "abc")
    monkeypatch.setenv("SOME_VAR", "from-var")
    assert parse_cred_option("openai=env:SOME_VAR") == ("openai", "from-var")
    with pytest.raises(CredentialError, match="OTHER_VAR"):
        parse_cred_option("openai=env:OTHER_VAR")
    with pytest.raises(CredentialError, match="SLOT=VALUE"):
        parse_cred_option("novalue")


def test_secret_never_in_saved_flow_events_errors_or_logs(registry, tmp_path, caplog) -> None:
    f = flow([node("k", "test.keyed")])
    f.nodes[0].credentials["api_key"] = CredentialRef(provider="openai", name="OPENAI_API_KEY")
    events: list[RunEvent] = []
    install_log_filter()
    logger = logging.getLogger("flowbuilder.test")
    with caplog.at_level(logging.INFO):
        run = Executor(
            registry=registry, resolver=resolver(tmp_path, explicit={"openai.api_key": SECRET}), data_dir=tmp_path
        ).run(f, on_event=events.append)
        logger.warning("debug dump: %s", SECRET)
    assert run.results["k"].status == "failed"
    error = run.results["k"].error or ""
    assert SECRET not in error and MASK in error
    assert SECRET not in json.dumps([e.to_dict() for e in events])
    assert any(e.kind == "log" and MASK in e.data["message"] for e in events)
    assert SECRET not in caplog.text
    saved = dump_flow(f)
    assert SECRET not in saved and '"name": "OPENAI_API_KEY"' in saved


def test_key_shaped_strings_are_masked_even_if_never_registered() -> None:
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz" not in redact("key sk-proj-abcdefghijklmnopqrstuvwxyz here")
    assert redact("nothing secret here") == "nothing secret here"
