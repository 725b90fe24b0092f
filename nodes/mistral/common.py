"""What the Mistral nodes share: the SDK client and one clear error for each SDK failure."""

from __future__ import annotations

from typing import Any

from flowbuilder.errors import ProviderError

PROVIDER = "mistral"
DEFAULT_BASE_URL = "https://api.mistral.ai"
ENV_VAR = "MISTRAL_API_KEY"


def make_client(api_key: str, base_url: str, timeout: float) -> Any:
    from mistralai.client import Mistral  # lazily: only flows that use Mistral import the SDK

    # The SDK appends /v1/... itself; a URL copied with /v1 is trimmed so both spellings work.
    url = (base_url or DEFAULT_BASE_URL).rstrip("/").removesuffix("/v1")
    return Mistral(api_key=api_key, server_url=url, timeout_ms=int(timeout * 1000))


def mistral_error(exc: Exception, *, where: str, what: str, timeout: float, secret: str | None) -> ProviderError:
    """An SDK exception as a message that says what to do (never the key)."""
    import httpx
    from mistralai.client import errors

    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(PROVIDER, f"no answer from {where} within {timeout:g} s for {what}: raise the timeout.")
    if isinstance(exc, httpx.TransportError):
        return ProviderError(PROVIDER, f"cannot connect to {where} for {what}: check base_url and the network.")
    if isinstance(exc, errors.MistralError):
        status = exc.status_code
        if status == 401:
            return ProviderError(
                PROVIDER, f"{where} rejected the API key (401) for {what}: bind a key to `api_key` or set {ENV_VAR}."
            )
        if status == 429:
            return ProviderError(PROVIDER, f"rate limit or quota exceeded (429) for {what}: wait and run again.")
        if status == 404:
            return ProviderError(PROVIDER, f"{what} was not found at {where} (404): check the model name.")
        detail = str(exc.message or "")[:300]
        if secret:
            detail = detail.replace(secret, "***")
        return ProviderError(PROVIDER, f"{where} answered HTTP {status} for {what}: {detail}")
    return ProviderError(PROVIDER, f"calling {what} at {where} failed: {type(exc).__name__}")
