"""The trust room: everything that decides what a flow may touch, in one package with one face.

A flow file comes from anyone. What it may read, reach, start, bind and leave behind is decided here, and
asked through :class:`flowbuilder.trust.policy.TrustPolicy` by the executor, ``analyze``, serving and the UI.

Layers, each importing only those below it (``flowbuilder.errors`` beside all of them; checked by the
import-linter contract in pyproject.toml and tests/core/test_layers.py)::

    policy                                   the face: issues, keys, stores, masking, HTTP guard
    ledger                                   who wrote each collection (untrusted-store)
    credentials                              the credentials file, bindings and approvals (CredentialResolver)
    egress | pathguard                       where a node may send requests | which files it may read
    netguard | providers | scopes | secrets  Host/Origin/token | slots, refs, hosts | a flow's identity | masking
    places | terminal | bodylimit            data dir, credentials path, path resolution | safe printing | bodies

Nothing here imports the rest of Flowbuilder but the errors (and, for the sample data's folder, the examples).
"""
