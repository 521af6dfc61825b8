"""End-to-end fixtures: a local server per test process, and HTTP sessions that carry a key.

The server runs as `expconsole serve --ephemeral --port 0` in a child process rather than in
the test process: functional tests that share an xdist worker use moto's in-process mocks,
which reset moto's global state and set AWS variables, and would wipe an in-process server's
tables mid-session. Each worker gets its own server on a free port. Its log (access lines,
handler tracebacks) goes to the test run's stderr.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from expconsole_tools.local.process import ServeProcess

REPO = Path(__file__).resolve().parents[2]


class ApiSession(requests.Session):
    """A requests.Session bound to the server: paths are relative (`api.get("/console/v1/gates")`)."""

    def __init__(self, base_url: str, key: str) -> None:
        super().__init__()
        self.base_url = base_url
        self.headers["SERVICE-API-KEY"] = key

    def url(self, path: str) -> str:
        return self.base_url + path

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        if isinstance(url, str) and url.startswith("/"):
            url = self.url(url)
        return super().request(method, url, *args, **kwargs)


@pytest.fixture(scope="session")
def server() -> Iterator[ServeProcess]:
    """The running server: `.url` (http://127.0.0.1:<port>), `.api_key`, `.server_secret`."""
    with ServeProcess("--ephemeral", "--port", "0", cwd=REPO) as process:
        yield process


@pytest.fixture
def api(server: ServeProcess) -> Iterator[ApiSession]:
    """A session sending the console key."""
    with ApiSession(server.url, server.api_key) as session:
        yield session


@pytest.fixture
def server_api(server: ServeProcess) -> Iterator[ApiSession]:
    """A session sending the server secret (ingestion routes)."""
    with ApiSession(server.url, server.server_secret) as session:
        yield session
