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

import pytest

from expconsole_tools.local.process import ServeProcess
from tests.e2e.client import ApiClient

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def server() -> Iterator[ServeProcess]:
    """The running server: `.url` (http://127.0.0.1:<port>), `.api_key`, `.server_secret`."""
    with ServeProcess("--ephemeral", "--port", "0", cwd=REPO) as process:
        yield process


@pytest.fixture
def api(server: ServeProcess) -> Iterator[ApiClient]:
    """A session sending the console key."""
    with ApiClient(server.url, server.api_key) as session:
        yield session


@pytest.fixture
def server_api(server: ServeProcess) -> Iterator[ApiClient]:
    """A session sending the server secret (ingestion routes)."""
    with ApiClient(server.url, server.server_secret) as session:
        yield session


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data dir of `served`: what the CLI (`expconsole pulse`, `import`) reads beside the server."""
    return tmp_path_factory.mktemp("data-dir-server")


@pytest.fixture(scope="session")
def served(data_dir: Path) -> Iterator[ServeProcess]:
    """A server on a data dir (not ephemeral), shared by the modules that run the CLI beside it;
    a module with a server of its own (test_aws_paths.py) overrides it."""
    with ServeProcess(
        "--port", "0", "--data-dir", str(data_dir), "--quiet", "--no-warm", cwd=REPO
    ) as process:
        yield process


@pytest.fixture
def console(served: ServeProcess) -> Iterator[ApiClient]:
    """The console key's client for a module's own server (its `served` fixture)."""
    with ApiClient(served.url, served.api_key) as session:
        yield session


@pytest.fixture
def sender(served: ServeProcess) -> Iterator[ApiClient]:
    """The server secret's client for a module's own server (its `served` fixture)."""
    with ApiClient(served.url, served.server_secret) as session:
        yield session
