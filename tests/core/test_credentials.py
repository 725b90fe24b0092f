"""Credentials are bound at run time and never appear in flows, logs, errors or events."""

from __future__ import annotations

import json
import logging
import stat

import pytest
from core_helpers import flow, node

from flowbuilder.credentials import (
    CredentialRef,
    CredentialResolver,
    CredentialSlot,
    CredentialStore,
    parse_cred_option,
)
from flowbuilder.errors import CredentialError
from flowbuilder.executor import Executor, RunEvent
from flowbuilder.formats.native import dump_flow
from flowbuilder.secrets import MASK, install_log_filter, redact

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
    r.bind("llm.api_key", "from-flag")
    assert r.resolve("llm", SLOT, ref) == "from-flag"


def test_langflow_global_variable_name_is_an_env_var(tmp_path) -> None:
    ref = CredentialRef(provider="openai", name="MY_OPENAI_KEY")
    assert resolver(tmp_path, environ={"MY_OPENAI_KEY": "abcd1234"}).resolve("x", SLOT, ref) == "abcd1234"


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
            registry=registry, resolver=resolver(tmp_path, explicit={"api_key": SECRET}), data_dir=tmp_path
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
