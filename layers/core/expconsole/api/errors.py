"""Errors a client can act on, rendered as `{status, message, errors}`."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error with an HTTP status and a message that names the field and the rule."""

    status = 500

    def __init__(self, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "message": self.message}
        if self.errors:
            out["errors"] = self.errors
        return out


class BadRequest(ApiError):
    status = 400

    @classmethod
    def field(cls, field: str, message: str) -> BadRequest:
        """A 400 about one field: the message and the errors list both name it."""
        return cls(f"{field}: {message}", [{"field": field, "message": message}])

    @classmethod
    def fields(cls, errors: list[dict[str, str]]) -> BadRequest:
        summary = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        return cls(f"Invalid request: {summary}", errors)


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class MethodNotAllowed(ApiError):
    status = 405


class Conflict(ApiError):
    status = 409


class PayloadTooLarge(ApiError):
    status = 413


class RangeNotSatisfiable(ApiError):
    status = 416


class ServiceUnavailable(ApiError):
    status = 503
