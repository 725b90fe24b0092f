"""Credentials as the user thinks of them: one *account* (provider + credential name, e.g. OpenAI /
"OpenAI account") shared by every node slot that refers to it. Binding a key binds the account, for
every node that uses it now or later in this session. The secret stays in this process; the flow keeps
only references, and the key field is cleared before anything goes back to the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nicegui import ui

from flowbuilder.errors import ValidationIssue
from flowbuilder.trust.providers import CredentialSlot
from flowbuilder.ui.session import EditorSession, binding_source
from flowbuilder.ui.widgets import notify

PROVIDER_NAMES = {
    "openai": "OpenAI",
    "groq": "Groq",
    "pinecone": "Pinecone",
    "cohere": "Cohere",
    "mistral": "Mistral",
    "ollama": "Ollama",
    "qdrant": "Qdrant",
}


def provider_name(provider: str) -> str:
    return PROVIDER_NAMES.get(provider, provider.capitalize())


@dataclass
class Account:
    """One credential account the flow uses, the nodes that use it and whether it is bound."""

    provider: str
    name: str
    users: list[tuple[str, CredentialSlot]] = field(default_factory=list)
    bound: bool = True

    @property
    def title(self) -> str:
        return f"{provider_name(self.provider)} · “{self.name}”"


def account_key(session: EditorSession, node_id: str, slot: CredentialSlot) -> tuple[str, str]:
    ref = session.state.flow.node(node_id).credentials.get(slot.name)
    return (ref.provider if ref else slot.provider, ref.name if ref else "default")


def accounts(session: EditorSession) -> list[Account]:
    """Every account the flow's required credential slots use, in node order."""
    found: dict[tuple[str, str], Account] = {}
    for spec in session.state.flow.nodes:
        cls = session.state.node_class(spec.id)
        if cls is None or spec.disabled:
            continue
        for slot in cls.credential_slots:
            if not slot.required:
                continue
            key = account_key(session, spec.id, slot)
            account = found.setdefault(key, Account(*key))
            account.users.append((spec.id, slot))
            if binding_source(session.resolver, spec.id, slot, spec.credentials.get(slot.name)) is None:
                account.bound = False
    return list(found.values())


def account_bound(session: EditorSession, account: Account) -> bool:
    return all(
        binding_source(session.resolver, n, slot, session.state.flow.node(n).credentials.get(slot.name)) is not None
        for n, slot in account.users
    )


def missing_accounts(session: EditorSession) -> list[Account]:
    return [a for a in accounts(session) if not a.bound]


def apply_account_keys(session: EditorSession) -> None:
    """Bind the session's account keys (``PROVIDER/ACCOUNT``: the key goes to that provider's slots referring to
    that account, never to another provider's, whatever a node is called)."""
    for (provider, name), value in session.account_keys.items():
        key = f"{provider}/{name}"
        if session.resolver.explicit.get(key) != value:
            session.resolver.bind(key, value)


def bind_account(session: EditorSession, provider: str, name: str, value: str) -> int:
    """Bind ``value`` for the account; returns how many node slots use it."""
    session.account_keys[(provider, name)] = value
    for spec in session.state.flow.nodes:
        cls = session.state.node_class(spec.id)
        for slot in cls.credential_slots if cls else ():
            if slot.name not in spec.credentials and account_key(session, spec.id, slot) == (provider, name):
                # the flow keeps a reference to the account it now uses (never the key)
                session.state.set_credential_ref(spec.id, slot.name, provider, name)
    apply_account_keys(session)
    return sum(len(a.users) for a in accounts(session) if (a.provider, a.name) == (provider, name))


def issue_text(session: EditorSession, issue: ValidationIssue) -> str:
    """An issue in UI words: a missing key names the account, not environment variables or flags."""
    if issue.code == "missing-credential" and issue.node_id and issue.port:
        account = account_for_issue(session, issue)
        if account is not None:
            return f"No {provider_name(account.provider)} key bound (account “{account.name}”)."
    endpoint = endpoint_approval(issue)
    if endpoint is not None and issue.code == "untrusted-endpoint":
        return (
            f"Would send this node's requests (and the text in them) to {endpoint[2]}, a server the flow file "
            "chose. Approve it only if you trust that server, or change the node's server address."
        )
    if endpoint is not None:
        provider, name, origin = endpoint
        return (
            f"Would send your {provider_name(provider)} key (account “{name}”) to {origin}, which is not "
            f"{provider_name(provider)}'s service. Approve it only if you trust that server, or clear the "
            "node's endpoint field."
        )
    folder = path_approval(issue)
    if folder is not None:
        return (
            f"Would read {issue.detail.get('path', folder)}, outside this flow's folder, the workspace and the "
            f"sample data. Approve the folder {folder} only if you trust this flow, or change the node's "
            f"{issue.detail.get('field', 'path')}."
        )
    command = command_approval(issue)
    if command is not None:
        return (
            f"Would start the program `{command[:200]}` on this computer; a flow file cannot start programs by "
            "itself. Approve it only if you trust it."
        )
    return issue.message


ENDPOINT_CODES = ("unsafe-credential", "untrusted-endpoint")
"""Issues an approval of a server lifts: a key, or a keyless node's requests, going to a server the flow chose."""


def endpoint_approval(issue: ValidationIssue) -> tuple[str, str, str] | None:
    """``(provider, account, origin)`` when the issue is a key that would go to a non-provider server."""
    detail = issue.detail
    if issue.code in ENDPOINT_CODES and {"provider", "account", "origin"} <= detail.keys():
        return detail["provider"], detail["account"], detail["origin"]
    return None


def command_approval(issue: ValidationIssue) -> str | None:
    """The command line a flow wants to start, when the issue is that it is not approved yet."""
    return issue.detail.get("command") if issue.code == "untrusted-command" else None


def path_approval(issue: ValidationIssue) -> str | None:
    """The folder to approve when the issue is a path outside the folders the flow may read (None when no
    approval can allow it: the credentials file, ~/.ssh, /etc ...)."""
    return issue.detail.get("folder") if issue.code == "untrusted-path" else None


def store_approval(issue: ValidationIssue) -> str | None:
    """The collection address to approve when the issue is a read of another flow's collection (None when no
    approval can allow it: writing it)."""
    return issue.detail.get("store") if issue.code == "untrusted-store" else None


def approve_dialog(session: EditorSession, issue: ValidationIssue, on_approved: Callable[[], None]) -> None:
    """Say plainly what approving lets the flow do, and approve it for this session only."""
    endpoint = endpoint_approval(issue)
    command = command_approval(issue)
    folder = path_approval(issue)
    store = store_approval(issue)
    if endpoint is None and command is None and folder is None and store is None:
        return
    with ui.dialog() as dialog, ui.card().classes("w-[32rem] fb-approve-dialog"):
        ui.label("Approve?").classes("text-h6")
        if endpoint is not None and issue.code == "untrusted-endpoint":
            question = f"Let this flow send requests to {endpoint[2]}?"
            risk = f"Whoever runs {endpoint[2]} sees what the node sends (documents, questions) and answers it."
        elif endpoint is not None:
            provider, name, origin = endpoint
            question = f"Let this flow send your {provider_name(provider)} key (account “{name}”) to {origin}?"
            risk = f"Whoever runs {origin} can read and use that key."
        elif folder is not None:
            question = f"Let this flow read the files in {folder}?"
            risk = "What it reads can be embedded, sent to a model or served: approve it only if you trust the flow."
        elif store is not None:
            question = (
                f"Let this flow read the collection “{issue.detail.get('collection', store)}” another flow wrote?"
            )
            risk = "It reads it only (never writes); what it reads can be sent to a model or served."
        else:
            question = f"Let this flow start the program `{command}` on this computer?"
            risk = "The program runs with your user's rights: approve it only if you trust it."
        ui.label(question).classes("text-body1 fb-approve-question").style("overflow-wrap: anywhere")
        ui.label(risk + " Lasts until you close the builder; nothing is saved.").classes("text-xs text-grey-7")

        def approve() -> None:
            if endpoint is not None:
                session.resolver.approve(f"{endpoint[0]}/{endpoint[1]}", endpoint[2])
            elif command is not None:
                session.resolver.approve_command(command)
            elif folder is not None:
                session.resolver.approve_path(folder)
            elif store is not None:
                session.resolver.approve_store(store, session.scope.key)  # this flow only
            dialog.close()
            notify("Approved for this session.", type="positive")
            on_approved()

        with ui.row():
            ui.button("Approve for this session", on_click=approve).props("unelevated color=warning").mark(
                "approve-confirm"
            )
            ui.button("Cancel", on_click=dialog.close).props("flat").mark("approve-cancel")
    dialog.open()


def approve_button(
    session: EditorSession, issue: ValidationIssue, on_approved: Callable[[], None], where: str = ""
) -> ui.button | None:
    """An "Approve" button for an endpoint or command issue, or None for any other issue."""
    approvals = (endpoint_approval(issue), command_approval(issue), path_approval(issue), store_approval(issue))
    if all(approval is None for approval in approvals):
        return None
    return (
        ui.button("Approve", icon="verified_user", on_click=lambda: approve_dialog(session, issue, on_approved))
        .props("dense unelevated no-caps size=sm color=warning")
        .classes("fb-approve")
        .mark(f"approve-{issue.node_id}", *([f"{where}-approve"] if where else []))
    )


def account_for_issue(session: EditorSession, issue: ValidationIssue) -> Account | None:
    if issue.code != "missing-credential" or not issue.node_id or not issue.port:
        return None
    spec = session.state.flow.find_node(issue.node_id)
    cls = session.state.node_class(issue.node_id) if spec else None
    slot = next((s for s in cls.credential_slots if s.name == issue.port), None) if cls else None
    if slot is None:
        return None
    key = account_key(session, issue.node_id, slot)
    return next((a for a in accounts(session) if (a.provider, a.name) == key), Account(*key))


def bind_dialog(session: EditorSession, provider: str, name: str, on_bound: Callable[[], None]) -> None:
    """Ask for the account's key and bind it for every node that uses the account."""
    account = next((a for a in accounts(session) if (a.provider, a.name) == (provider, name)), Account(provider, name))
    labels = [session.state.flow.node(n).label for n, _ in account.users]
    with ui.dialog() as dialog, ui.card().classes("w-[30rem] fb-bind-dialog"):
        ui.label(f"Bind a key: {account.title}").classes("text-h6")
        if labels:
            ui.label("Used by " + ", ".join(dict.fromkeys(labels)) + ".").classes("text-sm text-grey-8")
        ui.label("Kept in memory for this session only; the saved flow stores just the account name.").classes(
            "text-xs text-grey-7"
        )
        secret = (
            ui.input(f"{provider_name(provider)} key", password=True, password_toggle_button=False)
            .props("dense outlined autocomplete=off autofocus")
            .classes("w-full")
            .mark("account-secret")
        )

        def bind() -> None:
            value = str(secret.value or "")
            secret.value = ""  # cleared first: the key never goes back to the page
            if not value:
                notify("Paste the key first.", type="warning")
                return
            count = bind_account(session, provider, name, value)
            dialog.close()
            notify(f"{account.title} bound for {count} node setting(s).", type="positive")
            on_bound()

        secret.on("keydown.enter", bind)
        with ui.row():
            ui.button("Bind", on_click=bind).props("unelevated").mark("account-bind")
            ui.button("Cancel", on_click=dialog.close).props("flat")
    dialog.open()


def bind_button(session: EditorSession, account: Account, on_bound: Callable[[], None], where: str = "") -> ui.button:
    return (
        ui.button(
            "Bind a key", icon="key", on_click=lambda: bind_dialog(session, account.provider, account.name, on_bound)
        )
        .props("dense unelevated no-caps size=sm color=primary")
        .classes("fb-bind-key")
        .mark(f"bind-key-{account.provider}", *([f"{where}-bind-key"] if where else []))
    )
