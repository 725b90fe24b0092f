"""Which files a flow may read: an allow-list of roots, checked on the resolved path.

A flow file comes from anyone, and every field that names a path (a loader's file or folder, a model
folder, a store's folder) could point at the user's keys. So a path is first resolved (``~`` expanded,
``..`` and symlinks followed: ``data.csv -> ~/.ssh/id_rsa`` is judged as ``~/.ssh/id_rsa``) and then read
only when it lies under one of the *roots*:

- the flow file's own folder, unless that folder is no flow's own: the home folder (or a folder above it,
  or ``/``), a downloads folder (``~/Downloads`` or the XDG download dir) or the temp folder. Everything lands
  there, so a flow saved directly in one reads only the workspace, the sample data and approved folders;
- the workspace: the builder's workspace folder (``flowbuilder ui --workspace``, default
  ``./flowbuilder-workspace``, where the builder keeps uploads), the same folder for every command;
  the working directory itself is not a root (a flow run from ``~`` must not read all of ``~``);
- the sample data shipped with Flowbuilder (``data/``, which the example flows read);
- folders the user approved: ``--allow-path DIR``, the credentials file's ``"approved_paths"``, or the
  builder's Approve button (for the session).

A store's folder (``persist_directory``, Qdrant's ``path``) may also be in Flowbuilder's per-user data
dir, where stores live by default (who may open which collection is :mod:`flowbuilder.trust.ledger`'s question).
Some places are never readable, not even by approval: the credentials file, the per-user data dir for
anything but a store (collections, caches, chat memory), hidden entries anywhere below the home folder
(``~/.ssh``, ``~/.config``, ``~/projects/.secret/notes.txt``, ``.git``, ``.env`` ...), and ``/proc``,
``/sys``, ``/etc``, ``/dev``.

A flow built in code (no flow file, so no folder) is its programmer's own: only the never-readable
places are refused for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flowbuilder.errors import NodeError, UntrustedPathError
from flowbuilder.trust.places import default_credentials_path, default_data_dir, real, resolve_path

PathKind = Literal["file", "store"]
"""``file``: something read (a document, a folder of documents, a model); ``store``: a store's own folder."""

DEFAULT_WORKSPACE = Path("flowbuilder-workspace")
SYSTEM_FOLDERS = (Path("/proc"), Path("/sys"), Path("/etc"), Path("/dev"))
APPROVED_PATHS_KEY = "approved_paths"
"""Section of the credentials file: folders the user lets every flow read."""


def _under(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _home() -> Path | None:
    try:
        return real(Path.home())
    except (RuntimeError, NodeError, KeyError):
        return None


def _downloads() -> set[Path]:
    found = set()
    home = _home()
    if home is not None:
        found.add(home / "Downloads")
    try:
        from platformdirs import user_downloads_dir

        found.add(real(user_downloads_dir()))
    except (OSError, RuntimeError, ValueError, NodeError):
        pass
    return found


def not_own_folder(folder: Path) -> str | None:
    """Why ``folder`` is not a flow's own folder although a flow file sits in it (the home folder, a folder
    above it, a downloads folder, the temp folder), in words; None for an ordinary folder."""
    import tempfile

    folder = real(folder)
    home = _home()
    if home is not None and (folder == home or home.is_relative_to(folder)):
        return f"your home folder ({folder})" if folder == home else f"a folder above your home folder ({folder})"
    if folder == Path(folder.anchor):
        return f"the root folder ({folder})"
    if folder in _downloads():
        return f"a downloads folder ({folder})"
    if folder == real(tempfile.gettempdir()):
        return f"the shared temp folder ({folder})"
    return None


@dataclass(frozen=True)
class Verdict:
    """Whether a path may be read: ``problem`` is None when it may; ``approve`` is the folder an approval
    would cover (None when nothing can allow it)."""

    path: Path
    problem: str | None = None
    approve: Path | None = None


@dataclass
class FileRoots:
    """The folders a flow may read in one run (see the module docstring)."""

    flow_dir: Path | None
    """The flow file's folder; None for a flow built in code (then only the never-readable list applies)."""
    workspace: Path | None = DEFAULT_WORKSPACE
    approved: tuple[Path, ...] = ()
    data_dir: Path | None = None
    """Flowbuilder's per-user data dir (stores, caches, memory)."""
    credentials: Path | None = None
    sample_data: Path | None = None
    allowed_files: tuple[Path, ...] = field(default_factory=tuple)
    """Single files the user chose for this run (``--input NODE=PATH``, the builder's file input)."""
    flow_dir_problem: str = field(default="", init=False)
    """Why the flow's folder is not a root although its file is there (saved directly in ~ or a downloads
    folder), in words; empty when it is its own folder."""

    def __post_init__(self) -> None:
        if self.flow_dir is not None:
            where = not_own_folder(self.flow_dir)
            if where:
                self.flow_dir_problem = (
                    f"this flow is saved directly in {where}, which is not the flow's own folder: everything lands "
                    "there, so the flow reads only the workspace, the sample data and folders you approve"
                )
        if self.sample_data is None:
            from flowbuilder.examples import data_dir

            self.sample_data = data_dir()
        if self.data_dir is None:
            self.data_dir = default_data_dir()
        if self.credentials is None:
            self.credentials = default_credentials_path()

    def roots(self, kind: PathKind) -> list[Path]:
        own = None if self.flow_dir_problem else self.flow_dir
        found = [p for p in (own, self.workspace, self.sample_data, *self.approved) if p is not None]
        if kind == "store" and self.data_dir is not None:
            found.append(self.data_dir)
        return [real(p) for p in found]

    def never_reason(self, path: Path, kind: PathKind) -> str | None:
        """Why no flow may ever read ``path`` (already resolved), or None."""
        if self.credentials is not None:
            credentials = real(self.credentials)
            if path in (credentials, credentials.with_suffix(".tmp")):
                return "is Flowbuilder's credentials file"
        data = real(self.data_dir) if self.data_dir is not None else None
        if data is not None and _under(path, data):
            if kind == "file":
                return "is inside Flowbuilder's data dir (stores, caches and chat memory)"
            return None  # a store's folder in the data dir: where stores live by default
        if self.sample_data is not None and _under(path, real(self.sample_data)):
            return None  # shipped with Flowbuilder (a --user install lives under ~/.local)
        home = _home()
        if home is not None and path != home and path.is_relative_to(home):
            parts = path.relative_to(home).parts
            hidden = next((i for i, part in enumerate(parts) if part.startswith(".")), None)
            if hidden is not None:
                entry = "/".join(parts[: hidden + 1])
                return f"is in a hidden entry below your home folder (~/{entry})"
        for system in SYSTEM_FOLDERS:
            if _under(path, system):
                return f"is in the system folder {system}"
        return None

    def check(self, raw: str | Path, kind: PathKind = "file", base_dir: Path | None = None) -> Verdict:
        """Judge ``raw`` as written in a flow (relative paths resolve against ``base_dir``, else the flow's
        folder, else the working directory)."""
        path = real(resolve_path(raw, base_dir if base_dir is not None else self.flow_dir))
        reason = self.never_reason(path, kind)
        if reason:
            return Verdict(path, f"{path} {reason}; no flow may read it, not even with approval")
        if self.flow_dir is None or path in [real(f) for f in self.allowed_files]:
            return Verdict(path)
        if any(_under(path, root) for root in self.roots(kind)):
            return Verdict(path)
        folder = path if kind == "store" or path.is_dir() or not path.suffix else path.parent
        workspace = f" ({real(self.workspace)})" if self.workspace is not None else ""
        if self.flow_dir_problem:
            places = f"{self.flow_dir_problem} (the workspace is{workspace or ' not set'})"
        else:
            places = f"its own folder ({real(self.flow_dir)}), the workspace{workspace}, Flowbuilder's sample data "
            places += "and folders you approved"
        return Verdict(
            path,
            f"{path} is outside the folders this flow may read: {places}; if you trust the flow, approve the "
            f'folder: --allow-path {folder} (or the builder\'s Approve button, or "{APPROVED_PATHS_KEY}" in the '
            "credentials file)",
            folder,
        )

    def require(
        self, raw: str | Path, kind: PathKind = "file", what: str = "path", base_dir: Path | None = None
    ) -> Path:
        """The resolved path of ``raw``, or :class:`UntrustedPathError` saying why it may not be read."""
        verdict = self.check(raw, kind, base_dir)
        if verdict.problem:
            raise UntrustedPathError(f"{what} '{str(raw)[:200]}': {verdict.problem}", verdict.path, verdict.approve)
        return verdict.path


def approved_folders(values: Iterable[str | Path]) -> tuple[Path, ...]:
    """``--allow-path`` values (or the credentials file's) as absolute folders; ``~`` expanded."""
    return tuple(real(v) for v in values if str(v).strip())
