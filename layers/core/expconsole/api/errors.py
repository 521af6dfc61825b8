"""Errors as HTTP answers: `{status, message, errors}`.

The one place a status is chosen. Services raise the domain's errors (`expconsole.errors`), which
`STATUS` maps; `ApiError` is for what only HTTP knows of (authentication, methods, media types).
The HTTP names (`BadRequest`, `PayloadTooLarge`, `ServiceUnavailable`) are the domain errors
under the name the API layer's own checks read best with.
"""

from __future__ import annotations

from typing import Any

from expconsole.errors import Conflict, DomainError, Invalid, NotFound, TooLarge, Unavailable

__all__ = [
    "STATUS",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "RangeNotSatisfiable",
    "ServiceUnavailable",
    "Unauthorized",
    "body_of",
    "status_of",
]

STATUS: dict[type[DomainError], int] = {
    Invalid: 400,
    NotFound: 404,
    Conflict: 409,
    TooLarge: 413,
    Unavailable: 503,
}

BadRequest = Invalid
PayloadTooLarge = TooLarge
ServiceUnavailable = Unavailable


class ApiError(DomainError):
    """An error only HTTP has a word for; its status is its class's (or set on the instance)."""

    status = 500


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class MethodNotAllowed(ApiError):
    status = 405


class RangeNotSatisfiable(ApiError):
    status = 416


def status_of(error: DomainError) -> int:
    """The HTTP status of an error: its own for an ApiError, else the nearest mapped class's."""
    if isinstance(error, ApiError):
        return error.status
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def body_of(error: DomainError) -> dict[str, Any]:
    """The contract's error body."""
    out: dict[str, Any] = {"status": status_of(error), "message": error.message}
    if error.errors:
        out["errors"] = error.errors
    return out
