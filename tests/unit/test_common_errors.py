"""Domain errors carry no HTTP; the API maps each to its status in one place (api.errors)."""

from __future__ import annotations

import pytest

from expconsole import errors
from expconsole.api.errors import ApiError, Forbidden, body_of, status_of


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.Invalid("x"), 400),
        (errors.NotFound("x"), 404),
        (errors.Conflict("x"), 409),
        (errors.TooLarge("x"), 413),
        (errors.Unavailable("x"), 503),
        (Forbidden("x"), 403),
        (errors.DomainError("x"), 500),
    ],
)
def test_each_error_has_its_status(error: errors.DomainError, status: int) -> None:
    assert status_of(error) == status


def test_a_subclass_of_a_domain_error_maps_as_its_parent() -> None:
    class Stale(errors.Conflict):
        pass

    assert status_of(Stale("x")) == 409


def test_an_api_error_may_carry_its_own_status() -> None:
    error = ApiError("Content-Type must be application/json")
    error.status = 415
    assert status_of(error) == 415


def test_the_body_names_the_fields_only_when_there_are_some() -> None:
    assert body_of(errors.NotFound("Gate 'g' not found.")) == {
        "status": 404,
        "message": "Gate 'g' not found.",
    }
    error = errors.Invalid.field("rules[0].name", "is required")
    assert body_of(error) == {
        "status": 400,
        "message": "rules[0].name: is required",
        "errors": [{"field": "rules[0].name", "message": "is required"}],
    }


def test_domain_errors_do_not_know_http() -> None:
    for name in ("Invalid", "NotFound", "Conflict", "TooLarge", "Unavailable"):
        assert not hasattr(getattr(errors, name)("x"), "status")
