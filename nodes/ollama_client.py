"""One way to open an ``ollama.Client``: the key goes only where the flow's resolver bound it.

The ``ollama`` library reads ``OLLAMA_API_KEY`` from the environment by itself and sends it as a Bearer
header to whatever host it is given, behind the credential resolver's back (which checks where a key may
go). Here the header is set from the node's bound ``api_key`` slot only, and dropped otherwise.
"""

from __future__ import annotations

from typing import Any

from flowbuilder.trust.providers import CredentialSlot

API_KEY_SLOT = CredentialSlot(
    "api_key", "ollama", required=False, description="Only for Ollama servers behind a key (ollama.com)."
)


def make_client(host: str, timeout: float, api_key: str | None) -> Any:
    import ollama

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    client = ollama.Client(host=host, timeout=timeout, headers=headers)
    if not api_key:
        # the library filled it from OLLAMA_API_KEY; an unbound slot sends no key
        client._client.headers.pop("authorization", None)
    return client
