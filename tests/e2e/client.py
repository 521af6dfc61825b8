"""A thin HTTP client for end-to-end tests: the console key by default, any key on request."""

from __future__ import annotations

import uuid
from typing import Any

import requests

KEY_HEADER = "SERVICE-API-KEY"
OWN_KEY: Any = object()


def uid() -> str:
    """A short unique suffix: the server is shared by the whole session, so ids must not clash."""
    return uuid.uuid4().hex[:12]


class HttpConsole:
    """HTTP verbs against the local server; `key=None` sends no key, `key="..."` another one."""

    timeout = 60

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.key = key

    def call(self, method: str, path: str, *, key: Any = OWN_KEY, **kwargs: Any) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}))
        if key is not None:
            headers[KEY_HEADER] = self.key if key is OWN_KEY else key
        return requests.request(method, self.url + path, headers=headers, timeout=self.timeout, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("PATCH", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.call("DELETE", path, **kwargs)
