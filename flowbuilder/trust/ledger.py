"""Who wrote each collection, so that a flow reads another flow's collection only on purpose.

Every store node that writes a collection records its flow (:mod:`flowbuilder.trust.scopes`) in the ledger,
``<data dir>/ledger.sqlite``, under the collection's address (``chroma:/abs/folder:name``,
``qdrant:http://host:6333:name``, ``pinecone:index:namespace``). Before a store node opens a collection:

- a collection this flow wrote, or a new (empty) one, is the flow's own; a writer records itself;
- a collection another flow wrote is read only through an explicit, approved, read-only reference: the node
  has no documents connected and the user approved that address for the flow (``--allow-store ADDRESS``,
  the credentials file's ``approved_stores`` or the builder's Approve). ``validate`` reports it as
  ``untrusted-store`` naming the collection and its writer; a node that would write it is refused outright;
- a collection that holds chunks nobody recorded (made before writers were recorded, or by another program)
  is opened only once the user approves its address (a writer then adopts it), unless it lies in a folder the
  flow may read as files anyway (its own folder, the workspace): then approving it would protect nothing.

Default store locations are the flow's own folder in the data dir, so two flows never meet there; the ledger
matters where flows can name the same place (a folder both may read, a Chroma or Qdrant server, Pinecone).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from flowbuilder.errors import UntrustedStoreError
from flowbuilder.trust.providers import normalize_address
from flowbuilder.trust.scopes import FlowScope

LEDGER_FILE = "ledger.sqlite"
DATA_DIR_TOKEN = "<data dir>"
"""How a store node's ``collection_address`` names its default folder; here it is the flow's own state dir."""


@dataclass(frozen=True)
class Writer:
    """Which flow last wrote a store collection, so another flow that reads it is told whose data it is."""

    key: str
    """The writing flow's scope key."""
    label: str
    """Who that is, for people (its file)."""


_LOCK = threading.Lock()


class StoreLedger:
    """The ledger file of one data dir (sqlite: several processes may run flows at once)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LEDGER_FILE

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(self.path), timeout=30)
        db.execute(
            "CREATE TABLE IF NOT EXISTS writers (address TEXT PRIMARY KEY, scope TEXT NOT NULL, "
            "label TEXT NOT NULL, written REAL NOT NULL)"
        )
        return db

    def writer(self, address: str) -> Writer | None:
        """Who wrote the collection at ``address``, or None when nobody is recorded."""
        if not self.path.exists():
            return None
        with _LOCK:
            try:
                db = self._connect()
                try:
                    row = db.execute(
                        "SELECT scope, label FROM writers WHERE address = ?", [normalize_address(address)]
                    ).fetchone()
                finally:
                    db.close()
            except sqlite3.Error:
                return None
        return Writer(row[0], row[1]) if row else None

    def record(self, address: str, scope: FlowScope) -> None:
        """Record ``scope`` as the writer of the collection at ``address``."""
        with _LOCK:
            db = self._connect()
            try:
                with db:
                    db.execute(
                        "INSERT OR REPLACE INTO writers (address, scope, label, written) VALUES (?, ?, ?, ?)",
                        [normalize_address(address), scope.key, scope.label, time.time()],
                    )
            finally:
                db.close()


def concrete_address(address: str, state_dir: Path) -> str:
    """A node's ``collection_address`` with its default folder made the flow's own state dir, normalised."""
    return normalize_address(address.replace(DATA_DIR_TOKEN, str(state_dir), 1))


def collection_name(address: str) -> str:
    return address.rpartition(":")[2]


@dataclass
class StoreAccess:
    """One store node's use of its collection in one run (or one ``validate``)."""

    node_id: str
    address: str
    writes: bool
    """The node has documents connected: it would change the collection."""
    scope: FlowScope
    ledger: StoreLedger
    approved: bool
    """The user approved this address for this flow (read-only; a writer adopts an unrecorded one)."""
    readable: bool = False
    """The collection's folder is one the flow may read as files (:mod:`flowbuilder.trust.pathguard`)."""

    def problem(self) -> str | None:
        """Why the node may not open the collection, as far as the ledger tells without opening it."""
        writer = self.ledger.writer(self.address)
        if writer is None or writer.key == self.scope.key:
            return None
        name = collection_name(self.address)
        if self.writes:
            return (
                f"collection '{name}' ({self.address}) was written by flow {writer.label}; a flow writes only its "
                "own collections: give this node another collection or folder, or disconnect its documents to read "
                "that collection read-only (with your approval)"
            )
        if self.approved:
            return None
        return (
            f"collection '{name}' ({self.address}) was written by flow {writer.label}, not by this flow; a flow "
            f"reads another flow's collection only read-only and once you approve it: --allow-store {self.address} "
            '(or "approved_stores" in the credentials file, or the builder\'s Approve button)'
        )

    def claim(self, count: int) -> None:
        """Called by the store node once the collection is open, before anything is read or written, with the
        number of chunks it holds: refuses what :meth:`problem` refuses and an unrecorded collection that holds
        chunks unless approved; a writer records itself."""
        problem = self.problem()
        if problem:
            raise UntrustedStoreError(f"untrusted-store: {problem}", self.address)
        writer = self.ledger.writer(self.address)
        if writer is None and count > 0 and not (self.approved or self.readable):
            raise UntrustedStoreError(
                f"untrusted-store: collection '{collection_name(self.address)}' ({self.address}) holds {count} "
                "chunks and no flow is recorded as its writer (made before Flowbuilder recorded writers, or by "
                f"another program); nothing was read or changed; if you trust it, approve it: --allow-store "
                f"{self.address}",
                self.address,
            )
        if self.writes and (writer is None or writer.key != self.scope.key):
            self.ledger.record(self.address, self.scope)


__all__ = ["LEDGER_FILE", "StoreAccess", "StoreLedger", "Writer", "collection_name", "concrete_address"]
