"""The one API client and error assertions every API test uses, over HTTP or in process.

`ApiClient` speaks to the local server over HTTP (tests/e2e, tests/stack) by default; given a
transport (tests/functional/lambdas.py) the same calls go straight into the functions' Lambda
handlers, so a test can move down the pyramid without being rewritten.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

import requests

KEY_HEADER = "SERVICE-API-KEY"
OWN_KEY: Any = object()


def uid() -> str:
    """A short unique suffix: the store is shared by a whole session or module, so ids must not clash."""
    return uuid.uuid4().hex[:12]


class Response(Protocol):
    """What tests read from an answer: requests.Response has it, so has the in-process one."""

    status_code: int
    headers: Any
    text: str

    def json(self) -> Any: ...


class Transport(Protocol):
    def send(self, method: str, url: str, **kwargs: Any) -> Response: ...


class ApiClient:
    """HTTP verbs with the client's key; `key=None` sends no key, `key="..."` another one.

    Paths are relative (`api.get("/console/v1/gates")`); absolute URLs (pagination links) pass as given.
    """

    timeout = 60

    def __init__(self, url: str, key: str, transport: Transport | None = None) -> None:
        self.url = url
        self.key = key
        self.session = requests.Session()
        self.transport = transport

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.session.close()

    def request(self, method: str, path: str, *, key: Any = OWN_KEY, **kwargs: Any) -> Any:
        headers = dict(kwargs.pop("headers", None) or {})
        if key is not None:
            headers[KEY_HEADER] = self.key if key is OWN_KEY else key
        url = self.url + path if path.startswith("/") else path
        if self.transport is not None:
            return self.transport.send(method, url, headers=headers, **kwargs)
        kwargs.setdefault("timeout", self.timeout)
        return self.session.request(method, url, headers=headers, **kwargs)

    call = request

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self.request("PATCH", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Any:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)


def assert_error(resp: Response, status: int, field: str | None = None) -> dict[str, Any]:
    """An error answer: `{status, message}` and, for a field, `errors` naming it in a non-empty message."""
    assert resp.status_code == status, f"expected {status}, got {resp.status_code}: {resp.text[:2000]}"
    body = resp.json()
    assert body["status"] == status, body
    assert isinstance(body["message"], str) and body["message"], body
    if field is not None:
        fields = [e["field"] for e in body.get("errors") or []]
        assert field in fields, f"no error names {field!r}: {str(body)[:2000]}"
        assert all(isinstance(e["message"], str) and e["message"] for e in body["errors"]), body
        assert field in body["message"], f"the message does not name {field!r}: {str(body)[:2000]}"
    return body


def error_for(body: dict[str, Any], field: str) -> str:
    """The message of the `errors` entry naming `field`."""
    return next(e["message"] for e in body["errors"] if e["field"] == field)


def ids_of(listing: dict[str, Any]) -> set[str]:
    """The ids on one page of a listing."""
    return {item["id"] for item in listing["data"]}


def rule(pct: float = 50, *conditions: dict[str, Any], name: str = "rule", **fields: Any) -> dict[str, Any]:
    """A targeting rule as gates, dynamic configs, segments and experiments' inline rules take it."""
    return {"name": name, "passPercentage": pct, "conditions": list(conditions), **fields}


def country(*codes: str) -> dict[str, Any]:
    """A condition on the user's country (CA when none is given)."""
    return {"type": "country", "operator": "any", "targetValue": list(codes) or ["CA"]}
