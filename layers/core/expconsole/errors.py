"""What went wrong, in the domain's words: services raise these, and know nothing of HTTP.

The API maps each to a status in one place (`expconsole.api.errors`); the CLI prints the same
message. Every error carries a message naming the field and the rule, and `errors`, the
`[{field, message}]` list a client can act on field by field.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses: the message says why, `errors` which fields."""

    def __init__(self, message: str, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []


class Invalid(DomainError):
    """The input breaks a rule: a field's value, or the state it would put an entity in."""

    @classmethod
    def field(cls, field: str, message: str) -> Invalid:
        """About one field (its path, `rules[0].conditions[1].targetValue`): the message and the
        errors list both name it."""
        return cls(f"{field}: {message}", [{"field": field, "message": message}])

    @classmethod
    def fields(cls, errors: list[dict[str, str]]) -> Invalid:
        """About several fields at once; an empty field name is a rule about the whole input."""
        summary = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors)
        return cls(f"Invalid request: {summary}", errors)


class NotFound(DomainError):
    """The entity (or the part of it) named does not exist."""


class Conflict(DomainError):
    """The change collides with what is stored: an id taken, a stale version, an entity in use."""


class TooLarge(DomainError):
    """The input is over a size limit (see `expconsole.services.common.size`)."""


class Unavailable(DomainError):
    """Something the request needs (storage, a query engine) cannot answer now; retrying may work."""
