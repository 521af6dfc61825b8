"""OpenAPI response declarations, so the generated document shows every route's shapes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from expconsole.models.common import ErrorBody

_ERRORS = {
    400: "Bad input: the message and `errors` name each field and the rule it broke.",
    401: "Missing or unknown API key in SERVICE-API-KEY.",
    403: "A key of the wrong kind (a server secret on a console route).",
    404: "No entity with that id.",
    409: "Duplicate id, a stale version, or an entity still in use.",
}


def responses(status: int, model: type[BaseModel], description: str, *errors: int) -> dict[int, Any]:
    """The success response and the error statuses this route can answer with."""
    out: dict[int, Any] = {
        status: {"description": description, "content": {"application/json": {"model": model}}}
    }
    for code in (400, 401, 403, *errors):
        out[code] = {"description": _ERRORS[code], "content": {"application/json": {"model": ErrorBody}}}
    return out
