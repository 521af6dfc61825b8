"""In-process API fixtures: the functions' handlers on one moto store per test module.

Validation and error cases live here rather than in tests/e2e: the handlers answer them
without a server process, and a test module shares one store (ids are unique per test, as on
the e2e server), so a case costs a handler call.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import moto_store
from tests.e2e.client import ApiClient
from tests.functional.lambdas import CONSOLE_KEY, SERVER_SECRET, Lambdas

BASE_URL = "http://localhost:3000"  # the host tests/conftest.py's events name: links point there


@pytest.fixture(scope="module")
def module_store() -> Iterator[None]:
    """One moto store for the module's tests."""
    with moto_store():
        yield


@pytest.fixture(scope="module")
def app_api(module_store: None) -> ApiClient:
    """The console key's client, in process."""
    return ApiClient(BASE_URL, CONSOLE_KEY, transport=Lambdas())


@pytest.fixture(scope="module")
def app_ingest(module_store: None) -> ApiClient:
    """The server secret's client (ingestion and SDK routes), in process."""
    return ApiClient(BASE_URL, SERVER_SECRET, transport=Lambdas())


@pytest.fixture(scope="module")
def api(app_api: ApiClient) -> ApiClient:
    """The e2e fixture's name for the console client, so that tests move down unchanged."""
    return app_api


@pytest.fixture(scope="module")
def server_api(app_ingest: ApiClient) -> ApiClient:
    """The e2e fixture's name for the server secret's client."""
    return app_ingest
