"""The trust room's one face: what the executor, ``analyze``, serving and the UI ask before a flow touches anything.

A :class:`TrustPolicy` holds the user's bindings and approvals (a :class:`CredentialResolver`), Flowbuilder's data
dir and whether what runs is served. It answers, for one node of one flow:

- :meth:`node_issues`: the files it would read, the program it would start, the references it keeps, where it
  would send requests and (when credentials are checked) the keys it lacks;
- :meth:`key_plans`: every bound key, where it would go and whether it is sent, withheld or refused;
- :meth:`store_issues` / :meth:`store_access`: whether it may open its collection (:mod:`.ledger`);
- :meth:`node_secrets`: the keys to hand it for a run (refusing what may not go where it points);

and, for everything a flow serves or listens on: :meth:`mask` (length-kept masking of what a served flow passes
on) and :meth:`guard_http` / :meth:`http_middleware` (Host, Origin, token, framing, body size).

Node classes are asked through their hooks (``config_paths``, ``command_line``, ``destinations``,
``collection_address``, ``credential_slots``), never imported: the trust room sits below the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flowbuilder.errors import CredentialError, EndpointError, FlowbuilderError, ValidationIssue
from flowbuilder.trust.bodylimit import BodyLimit
from flowbuilder.trust.credentials import CredentialResolver, CredentialStore, normalize_command
from flowbuilder.trust.egress import KeyPlan, key_plans, node_problems
from flowbuilder.trust.ledger import DATA_DIR_TOKEN, StoreAccess, StoreLedger, collection_name, concrete_address
from flowbuilder.trust.netguard import NetGuard
from flowbuilder.trust.pathguard import FileRoots
from flowbuilder.trust.places import default_data_dir
from flowbuilder.trust.providers import CredentialRef, reference_problem
from flowbuilder.trust.scopes import FlowScope, flow_scope
from flowbuilder.trust.secrets import mask_in_place

NO_CREDENTIALS = CredentialStore(Path("/nonexistent/flowbuilder-no-credentials.json"))
"""Without a resolver nothing is bound or approved: no credentials file is consulted."""


class TrustPolicy:
    """What a flow may touch in one session (see the module docstring)."""

    def __init__(
        self, resolver: CredentialResolver | None = None, *, data_dir: Path | None = None, served: bool = False
    ) -> None:
        self.check_credentials = resolver is not None
        """Whether unbound keys are issues (``validate`` with a resolver, every run); None: only the flow is judged."""
        self.resolver = resolver if resolver is not None else CredentialResolver(store=NO_CREDENTIALS, environ={})
        self._data_dir = data_dir
        self.served = served
        """What runs leaves the machine (``serve``, ``mcp``, the Serve tab): see :meth:`mask`."""

    @property
    def data_dir(self) -> Path:
        return self._data_dir or default_data_dir()

    # ---------------------------------------------------------------- which flow, which files
    @staticmethod
    def scope(meta: Any, flow_file: Path | None, base_dir: Path | None) -> FlowScope:
        """Which flow this is (:mod:`.scopes`): what its stores, memory and cached results belong to."""
        return flow_scope(meta, flow_file, base_dir)

    def file_roots(self, base_dir: Path | None, files: Iterable[str | Path] = ()) -> FileRoots:
        """What a flow in ``base_dir`` may read (:mod:`.pathguard`); ``files``: single files the user chose."""
        return self.resolver.file_roots(base_dir, self.data_dir, files)

    # ---------------------------------------------------------------- one node
    def node_issues(
        self,
        node_id: str,
        cls: Any,
        config: Any,
        refs: Mapping[str, CredentialRef],
        base_dir: Path | None,
        roots: FileRoots,
    ) -> list[ValidationIssue]:
        """Everything the node may not do yet: ``untrusted-path`` / ``invalid-config`` for its files,
        ``untrusted-command``, ``unsafe-credential`` for a reference naming another provider, the egress issues
        (``untrusted-endpoint``, ``unsafe-credential``, ``invalid-endpoint``) and, when credentials are checked,
        ``missing-credential``. Each carries the ``detail`` an approval covers (for a UI)."""
        issues = path_issues(node_id, cls, config, roots)
        command = cls.command_line(config, base_dir)
        if command:
            refusal = self.resolver.command_problem(command)
            if refusal:
                detail = {"command": normalize_command(command)}
                issues.append(ValidationIssue("untrusted-command", refusal, node_id, detail=detail))
        for slot in cls.credential_slots:
            problem = reference_problem(slot, refs.get(slot.name))
            if problem:
                message = f"credential slot '{slot.name}': {problem}"
                issues.append(ValidationIssue("unsafe-credential", message, node_id, slot.name))
        resolver = self.resolver if self.check_credentials else None
        for egress in node_problems(node_id, cls, config, refs, resolver):
            issues.append(ValidationIssue(egress.code, egress.message, node_id, detail=egress.detail))
        if self.check_credentials:
            for slot in cls.credential_slots:
                ref = refs.get(slot.name)
                if (
                    reference_problem(slot, ref) is None
                    and slot.required
                    and not self.resolver.resolve(node_id, slot, ref)
                ):
                    where = f"{ref.provider if ref else slot.provider}{' / ' + ref.name if ref else ''}"
                    message = (
                        f"credential slot '{slot.name}' ({where}) is not bound: "
                        f"{self.resolver.describe_sources(slot, ref)}"
                    )
                    issues.append(ValidationIssue("missing-credential", message, node_id, slot.name))
        return issues

    def key_plans(self, node_id: str, cls: Any, config: Any, refs: Mapping[str, CredentialRef]) -> list[KeyPlan]:
        """Every key bound for the node, where it would go and whether it is sent (none when credentials are not
        checked)."""
        return key_plans(node_id, cls, config, refs, self.resolver if self.check_credentials else None)

    def node_secrets(
        self, node_id: str, cls: Any, config: Any, refs: Mapping[str, CredentialRef], base_dir: Path | None
    ) -> dict[str, str]:
        """The keys to hand the node for a run, by slot; :class:`CredentialError` (one line naming the node) when
        it would start an unapproved program, reach an unapproved server or send a key where it may not go. A
        withheld key (an optional one from the environment that may not go there) is left out."""
        command = cls.command_line(config, base_dir)
        refusal = self.resolver.command_problem(command) if command else None
        if refusal:
            raise CredentialError(f"Node '{node_id}': {refusal}.")
        for egress in node_problems(node_id, cls, config, refs, self.resolver):
            raise EndpointError(f"Node '{node_id}': {egress.message}.")
        return self.node_keys(node_id, cls, config, refs)

    def node_keys(self, node_id: str, cls: Any, config: Any, refs: Mapping[str, CredentialRef]) -> dict[str, str]:
        """The keys the node's slots get, by slot: each only where :meth:`key_plans` sends it (a withheld one is
        left out; a refused one raises :class:`CredentialError`)."""
        plans = {plan.slot.name: plan for plan in key_plans(node_id, cls, config, refs, self.resolver)}
        keys: dict[str, str] = {}
        for slot in cls.credential_slots:
            value = self.resolver.resolve_for(node_id, slot, refs.get(slot.name))
            plan = plans.get(slot.name)
            if value and plan is not None and plan.verdict == "refuse":
                raise CredentialError(f"Node '{node_id}': credential slot '{slot.name}': {plan.reason}.")
            if value and plan is not None and plan.verdict == "send":
                keys[slot.name] = value
        return keys

    # ---------------------------------------------------------------- collections
    def store_access(
        self,
        node_id: str,
        cls: Any,
        config: Any,
        writes: bool,
        base_dir: Path | None,
        scope: FlowScope,
        files: FileRoots | None = None,
    ) -> StoreAccess | None:
        """The node's access to its collection (None for a node without one, or whose location is unusable);
        ``files``: what the flow may read as files (a collection in such a folder needs no approval to adopt)."""
        try:
            address = cls.collection_address(config, base_dir)
        except FlowbuilderError:
            return None
        if address is None:
            return None
        concrete = concrete_address(str(address), scope.state_dir(self.data_dir))
        approved = self.check_credentials and self.resolver.store_approved(concrete, scope.key, scope.file)
        location = concrete.partition(":")[2].rpartition(":")[0]
        readable = False
        if files is not None and location.startswith("/"):
            try:
                readable = files.check(location, "file").problem is None
            except FlowbuilderError:
                readable = False
        return StoreAccess(node_id, concrete, writes, scope, StoreLedger(self.data_dir), approved, readable)

    def store_issues(
        self,
        node_id: str,
        cls: Any,
        config: Any,
        writes: bool,
        base_dir: Path | None,
        scope: FlowScope,
        roots: FileRoots,
    ) -> tuple[list[ValidationIssue], list[str]]:
        """``untrusted-store`` for a collection another flow wrote (``detail``: the collection and, for a node that
        only reads, the address an approval covers), and a note where stores from before flows had their own are."""
        access = self.store_access(node_id, cls, config, writes, base_dir, scope, roots)
        if access is None:
            return [], []
        issues = []
        problem = access.problem()
        if problem:
            detail = {"collection": collection_name(access.address)}
            if not writes:  # reading it can be approved; writing another flow's collection cannot
                detail["store"] = access.address
            issues.append(ValidationIssue("untrusted-store", problem, node_id, detail=detail))
        notes = []
        raw = str(cls.collection_address(config, base_dir))
        kind = raw.partition(":")[0]
        legacy = self.data_dir / kind
        if DATA_DIR_TOKEN in raw and legacy.is_dir():
            notes.append(
                f"node '{node_id}': this flow keeps its {kind} collections in its own folder "
                f"{scope.state_dir(self.data_dir)}; {legacy}, which every flow shared before, is left as it was "
                f"(to read a collection there, set the node's folder to it and approve it: validate names it)"
            )
        return issues, notes

    # ---------------------------------------------------------------- what leaves
    def mask(self, text: str) -> str:
        """What a served flow passes on from a node (masked in place, so offsets hold); as is otherwise."""
        return mask_in_place(text) if self.served else text

    def start_serving(self) -> None:
        """Before a served run: every key the user has is masked from now on, used by the flow or not."""
        if self.served:
            self.resolver.register_known_secrets()

    @staticmethod
    def guard_http(app: Any, *, host: str, token: str | None, max_bytes: int, cookie_name: str | None = None) -> Any:
        """``app`` behind the Host/Origin/token guard (frame-ancestors on every response) and the body limit."""
        return NetGuard(BodyLimit(app, max_bytes=max_bytes), host=host, token=token, cookie_name=cookie_name)

    @staticmethod
    def http_middleware(
        *, host: str, token: str | None, max_bytes: int, cookie_name: str | None = None, navigations: bool = False
    ) -> list[tuple[Any, dict[str, Any]]]:
        """The same guard as ``(middleware class, options)`` pairs for ``app.add_middleware``, innermost first (a
        framework that takes middleware rather than an app: the builder's NiceGUI app). ``navigations``: another
        site may link to the pages (a top-level GET), never fetch from them."""
        return [
            (BodyLimit, {"max_bytes": max_bytes}),
            (NetGuard, {"host": host, "token": token, "cookie_name": cookie_name, "navigations": navigations}),
        ]


def path_issues(node_id: str, cls: Any, config: Any, roots: FileRoots) -> list[ValidationIssue]:
    """``untrusted-path`` for every config path of the node that the flow may not read (``detail`` has the
    resolved ``path`` and, when an approval can allow it, the ``folder`` to approve); ``invalid-config`` for
    a path that names nothing (``~nosuchuser/...``)."""
    found = []
    for field_name, raw, kind in cls.config_paths(config):
        shown = raw if len(raw) <= 200 else raw[:200] + "..."
        try:
            verdict = roots.check(raw, kind)
        except FlowbuilderError as exc:
            found.append(ValidationIssue("invalid-config", f"{field_name}: {exc}", node_id))
            continue
        if verdict.problem:
            detail = {"path": str(verdict.path), "field": field_name}
            if verdict.approve is not None:
                detail["folder"] = str(verdict.approve)
            message = f"{field_name} '{shown}': {verdict.problem}"
            found.append(ValidationIssue("untrusted-path", message, node_id, detail=detail))
    return found


__all__ = ["NO_CREDENTIALS", "TrustPolicy", "path_issues"]
