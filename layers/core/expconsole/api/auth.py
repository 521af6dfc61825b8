"""Who is calling: the one place a request's key is read, resolved and checked against the route.

Every function serving a keyed route runs `check` before its route (expconsole.api.app), so a
missing, misplaced, unknown or wrong-kind key gets the usual `{status, message, errors}` body
naming the header, in AWS as locally: API Gateway runs no authorizer, so it never answers a bare
401 of its own. Keys are looked up by their SHA-256 hash, compared in constant time, and cached
per sandbox for KEY_CACHE_SECONDS (expconsole.services.keys.KeyCache).
"""

from __future__ import annotations

import re
from typing import Any

from expconsole.api.errors import ApiError, Forbidden, Unauthorized
from expconsole.key_hashes import PREFIX, KeyKind, generate_key, hash_key, hashes_match
from expconsole.services import keys

__all__ = [
    "PREFIX",
    "KeyKind",
    "check",
    "generate_key",
    "hash_key",
    "hashes_match",
    "mask_keys",
    "presented_key",
]

HEADER = "service-api-key"
# The Statsig SDKs send their key here; the server-secret routes accept either header.
SDK_HEADER = "statsig-api-key"
HEADER_NAME = "SERVICE-API-KEY"


_KEY_PATTERN = re.compile(r"\b(secret|console)-[A-Za-z0-9_\-]{8,}")


def mask_keys(text: str) -> str:
    """`text` with anything shaped like one of our keys masked, for logs (the SDK protocol puts the
    server secret in its paths: `/v1/download_config_specs/<key>.json`)."""
    return _KEY_PATTERN.sub(r"\1-***", text)


def _lowered(headers: dict[str, Any] | None) -> dict[str, str]:
    """Header names are case-insensitive (API Gateway lowercases them; a direct call may not)."""
    return {str(name).lower(): str(value) for name, value in (headers or {}).items()}


def presented_key(headers: dict[str, Any] | None, required: KeyKind) -> str:
    """The key a request presents for a route of `required` kind ("" if none): SERVICE-API-KEY,
    or on server-secret routes STATSIG-API-KEY (what the Statsig SDKs send)."""
    lowered = _lowered(headers)
    key = lowered.get(HEADER, "").strip()
    if not key and required == "server":
        key = lowered.get(SDK_HEADER, "").strip()
    return key


def check(event: dict[str, Any], required: KeyKind) -> tuple[str, str] | ApiError:
    """The caller's (key id, kind), or the error to answer with (401 naming the header, or 403)."""
    headers = event.get("headers")
    presented = presented_key(headers, required)
    if not presented:
        return _missing(_lowered(headers), required)
    key = keys.cache().resolve(presented)
    if key is None:
        message = f"Unknown or inactive API key in the {_where(required)} header."
        return _unauthorized(message, "is not an active key")
    if key.kind != required:
        return Forbidden(
            f"This route requires {_describe(required)}; the key in {_where(required)} is a {key.kind} key."
        )
    return key.key_id, key.kind


def _missing(headers: dict[str, str], required: KeyKind) -> ApiError:
    """No key where the route reads one: say where it goes, and where it was sent if elsewhere."""
    if "authorization" in headers:
        return _unauthorized(
            f"The API key goes in the {HEADER_NAME} header, not Authorization: send "
            f"`{HEADER_NAME}: <key>` ({_describe(required)}).",
            "is required (the key was sent in Authorization, which is not read)",
        )
    if SDK_HEADER in headers:  # only a console route gets here with it
        return _unauthorized(
            f"Console routes read the key from the {HEADER_NAME} header, not STATSIG-API-KEY (which "
            f"only the SDK protocol routes read): send `{HEADER_NAME}: <key>` ({_describe(required)}).",
            "is required (STATSIG-API-KEY is read on the SDK protocol routes only)",
        )
    return _unauthorized(
        f"Missing API key: send it in the {_where(required)} header ({_describe(required)}).", "is required"
    )


def _unauthorized(message: str, rule: str) -> Unauthorized:
    return Unauthorized(message, [{"field": HEADER_NAME, "message": rule}])


def _where(kind: KeyKind) -> str:
    return HEADER_NAME if kind == "console" else f"{HEADER_NAME} (or STATSIG-API-KEY)"


def _describe(kind: KeyKind) -> str:
    return "a console API key" if kind == "console" else "a server secret"
