"""The one exception hierarchy of Flowbuilder.

Every error a user can meet is a :class:`FlowbuilderError`; its message says what failed, where
(file, node, port) and what to do, and lists what *is* available. The CLI prints ``str(error)``
and never a traceback for these.

::

    FlowbuilderError
    ├── RegistryError
    │   ├── UnknownNodeTypeError
    │   └── DuplicateNodeTypeError
    ├── FlowError
    │   ├── InvalidConnectionError
    │   └── FlowValidationError        (carries every ValidationIssue at once)
    ├── FlowFileError                  (missing / malformed / wrong-format / wrong-version file)
    │   └── UnsupportedFormatError
    ├── CredentialError
    │   └── EndpointError              (a malformed URL, or a destination not approved)
    ├── NodeError                      (raised by a node's run: bad input, bad data)
    │   ├── ProviderError              (a remote provider refused or was unreachable)
    │   ├── PortValueError             (a value on a port is not of the port's type)
    │   └── UntrustedPathError         (a path outside the folders a flow may read)
    ├── NodeExecutionError             (a NodeError or any exception, wrapped with the node id)
    ├── RunCancelledError
    ├── ServeError                     (serving a flow: unsafe bind, nothing to serve)
    └── ClusterError                   (--ray: no cluster, an embedded store, the cluster lost mid-run)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


class FlowbuilderError(Exception):
    """Base class of every error Flowbuilder raises on purpose."""


class RegistryError(FlowbuilderError):
    """A node type could not be found or registered."""


class UnknownNodeTypeError(RegistryError):
    """A flow names a node type that no registered node provides."""

    def __init__(self, type_name: str, close: Sequence[str] = ()) -> None:
        hint = f" Did you mean: {', '.join(close)}?" if close else " Run `flowbuilder nodes` to list the node types."
        super().__init__(f"Unknown node type '{type_name}'.{hint}")
        self.type_name = type_name
        self.close = list(close)


class DuplicateNodeTypeError(RegistryError):
    """Two node classes claim the same registry name."""


class FlowError(FlowbuilderError):
    """The flow graph itself is wrong."""


class InvalidConnectionError(FlowError):
    """A connection between two ports is not allowed."""


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found before a run: where it is and how to fix it."""

    code: str
    message: str
    node_id: str | None = None
    port: str | None = None
    detail: Mapping[str, str] = field(default_factory=dict, compare=False)
    """What a UI needs to offer a fix (e.g. the account and origin an approval would cover); never a secret."""

    def __str__(self) -> str:
        where = ""
        if self.node_id is not None:
            where = f"node '{self.node_id}'" + (f", port '{self.port}'" if self.port else "")
            where += ": "
        return f"[{self.code}] {where}{self.message}"


class FlowValidationError(FlowError):
    """A flow has one or more validation issues; all of them are listed."""

    def __init__(self, issues: Iterable[ValidationIssue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(f"The flow has {len(self.issues)} problem(s):\n{lines}")


class FlowFileError(FlowbuilderError):
    """A flow file is missing, unreadable, malformed or of the wrong format or version."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class UnsupportedFormatError(FlowFileError):
    """A file is JSON but not a format Flowbuilder can read."""


class CredentialError(FlowbuilderError):
    """A credential slot is unbound, or a credential source is unusable."""


class NodeError(FlowbuilderError):
    """Raised by a node's ``run`` for bad input or data; the executor adds the node id."""


class ProviderError(NodeError):
    """A provider (OpenAI, Groq, Ollama, Pinecone, Chroma server) refused or could not be reached."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider


class PortValueError(NodeError):
    """A node received or returned values that do not match its declared ports (checked by the executor)."""

    def __init__(self, node_id: str, type_name: str, side: str, problems: Sequence[str]) -> None:
        super().__init__(f"Node '{node_id}' ({type_name}) {side}s do not match its ports: {'; '.join(problems)}.")
        self.node_id = node_id
        self.type_name = type_name
        self.side = side
        self.problems = list(problems)


class UntrustedPathError(NodeError):
    """A path a flow names lies outside the folders it may read (or in one no flow may ever read)."""

    def __init__(self, message: str, path: object = None, approve: object = None) -> None:
        super().__init__(message)
        self.path = path
        self.approve = approve
        """The folder an approval would cover, or None when no approval can allow the path."""


class UntrustedStoreError(NodeError):
    """A store node would open a collection this flow did not write (another flow's, or one nobody recorded)."""

    def __init__(self, message: str, address: str = "") -> None:
        super().__init__(message)
        self.address = address
        """The collection's address, what ``--allow-store`` approves."""


class NodeExecutionError(FlowbuilderError):
    """A node failed while running; names the node, its type and the cause."""

    def __init__(self, node_id: str, type_name: str, cause: BaseException) -> None:
        reason = str(cause) or type(cause).__name__
        if not isinstance(cause, FlowbuilderError):
            reason = f"{type(cause).__name__}: {reason}"
        super().__init__(f"Node '{node_id}' ({type_name}) failed: {reason}")
        self.node_id = node_id
        self.type_name = type_name
        self.cause = cause


class RunCancelledError(FlowbuilderError):
    """The user cancelled the run."""

    def __init__(self, message: str = "The run was cancelled.") -> None:
        super().__init__(message)


class ServeError(FlowbuilderError):
    """Serving a flow is refused or impossible: a non-loopback bind without a token, nothing to serve."""


class ClusterError(FlowbuilderError):
    """Running on a Ray cluster is refused or failed: no cluster at the address, a store the workers cannot
    reach (an embedded one), a cluster lost mid-run (a re-run resumes from what was stored)."""


class EndpointError(CredentialError):
    """A URL in a flow or an option that cannot be used (malformed), or a destination not approved."""
