"""API keys: generation, hashing, and the check every function makes on the authorizer's verdict.

Keys are stored only as SHA-256 hashes. The authorizer resolves a presented key to its kind;
each function then requires the kind it serves, so a wrong kind is a 403 and a missing or
unknown key a 401, both with the usual error body (an HTTP API authorizer alone can only
answer a bare 403 for a denied request).
"""

from __future__ import annotations

import re
from typing import Any

from expconsole.api.errors import ApiError, Forbidden, Unauthorized
from expconsole.key_hashes import PREFIX, KeyKind, generate_key, hash_key, hashes_match

__all__ = [
    "PREFIX",
    "KeyKind",
    "check",
    "generate_key",
    "hash_key",
    "hashes_match",
    "header_value",
    "mask_keys",
]

HEADER = "service-api-key"
# The Statsig SDKs send their key here; the SDK protocol routes accept either header.
SDK_HEADER = "statsig-api-key"
UNKNOWN = "unknown"


_KEY_PATTERN = re.compile(r"\b(secret|console)-[A-Za-z0-9_\-]{8,}")


def mask_keys(text: str) -> str:
    """`text` with anything shaped like one of our keys masked, for logs (the SDK protocol puts the
    server secret in its paths: `/v1/download_config_specs/<key>.json`)."""
    return _KEY_PATTERN.sub(r"\1-***", text)


def header_value(headers: dict[str, str] | None) -> str | None:
    """The key header, whatever its case (HTTP header names are case-insensitive): SERVICE-API-KEY,
    else STATSIG-API-KEY (what the SDKs send)."""
    sdk = None
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if lowered == HEADER:
            return value
        if lowered == SDK_HEADER:
            sdk = value
    return sdk


def authorizer_context(event: dict[str, Any]) -> dict[str, Any]:
    """The context our Lambda authorizer attached to an API Gateway v2 event ({} if none)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    return authorizer.get("lambda") or {}


def check(event: dict[str, Any], required: KeyKind) -> tuple[str, str] | ApiError:
    """The caller's (key id, kind), or the error to answer with."""
    ctx = authorizer_context(event)
    kind = ctx.get("keyKind")
    if header_value(event.get("headers")) is None or not kind:
        return Unauthorized(
            f"Missing API key: send it in the SERVICE-API-KEY header ({_describe(required)})."
        )
    if kind == UNKNOWN:
        return Unauthorized("Unknown or inactive API key in the SERVICE-API-KEY header.")
    if kind != required:
        return Forbidden(
            f"This route requires {_describe(required)}; the key in SERVICE-API-KEY is a {kind} key."
        )
    return str(ctx.get("keyId", "")), kind


def _describe(kind: KeyKind) -> str:
    return "a console API key" if kind == "console" else "a server secret"
