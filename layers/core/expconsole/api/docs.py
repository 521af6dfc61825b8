"""OpenAPI response declarations, so the generated document shows every route's shapes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from expconsole.models.common import ErrorBody, GatewayError

_ERRORS = {
    400: "Bad input: the message and `errors` name each field and the rule it broke.",
    401: (
        "No API key in the SERVICE-API-KEY header (missing, or sent in Authorization instead), or an "
        "unknown or deactivated one; the message says which."
    ),
    403: "A key of the wrong kind (a server secret on a console route, a console key on ingestion).",
    404: "No entity with that id.",
    409: "Duplicate id, a stale version, or an entity still in use.",
    413: (
        "The request body is too large: over 1 MiB, or an entity that would exceed the 400 KB a stored "
        "item may hold. Past API Gateway's own 10 MB limit the body is only "
        '`{"message": "Request Entity Too Large"}`.'
    ),
    415: "A request body whose Content-Type is not `application/json`.",
    503: (
        "Storage is throttled, failing or not answering; a change is stored whole or not at all, so "
        "read the resource, then retry after `Retry-After` seconds. A function that times out is "
        "API Gateway's own "
        '`{"message": "Service Unavailable"}`.'
    ),
}

# Every route answers these whatever its body model: the checks run before the route's own.
_ALWAYS = (400, 401, 403, 413, 415, 503)
# Statuses API Gateway may answer itself, with its own `{message}` body.
_GATEWAY = frozenset({413, 503})


def responses(status: int, model: type[BaseModel], description: str, *errors: int) -> dict[int, Any]:
    """The success response and the error statuses this route can answer with."""
    out: dict[int, Any] = {
        status: {"description": description, "content": {"application/json": {"model": model}}}
    }
    for code in sorted({*_ALWAYS, *errors}):
        body: Any = ErrorBody | GatewayError if code in _GATEWAY else ErrorBody
        out[code] = {"description": _ERRORS[code], "content": {"application/json": {"model": body}}}
    return out
