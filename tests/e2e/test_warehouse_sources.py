"""End-to-end tests of the warehouse sources, qualifying event sources
(`/console/v1/experiments/qualifying_events`) and assignment sources
(`/console/v1/experiments/assignment_sources`, `.../assignment_source/{name}`), over HTTP against
the local server: create, read, list, update, patch, delete, dry runs, limits at their edges,
the SQL checks, name immutability, 404s, 409s and authentication.

The server is shared by the session, so every test makes its own sources under unique names.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in
`tests/functional/test_warehouse_sources_api.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error
from tests.functional.test_warehouse_sources_api import (
    AS_FIELDS,
    AS_LIST,
    AS_ONE,
    AS_SQL,
    BOOKKEEPING,
    QE,
    as_body,
    as_path,
    create_qe,
    mapping,
    qe_body,
    qe_path,
    read,
    uid,
)

QE_FIELDS = {
    "name",
    "description",
    "tags",
    "sql",
    "timestampColumn",
    "timestampAsDay",
    "idTypeMapping",
    "sourceType",
    "tableName",
    "customFieldMapping",
    "isReadOnly",
    "isVerified",
    "disableCURE",
    "owner",
    "team",
    "teamID",
} | BOOKKEEPING


# --- qualifying events: create and read ---------------------------------------------------------


def test_create_qualifying_event_returns_the_source_with_bookkeeping(api: requests.Session) -> None:
    body = qe_body(
        description="app events",
        tags=["web", "core"],
        timestampAsDay=True,
        idTypeMapping=[mapping(), mapping("device_id", "stableID")],
        customFieldMapping=[{"key": "revenue", "formula": "price * 100"}],
        isVerified=True,
        disableCURE=True,
        team="growth",
    )
    resp = api.post(QE, json=body)
    assert resp.status_code == 201, resp.text
    envelope = resp.json()
    assert set(envelope) == {"message", "data"}
    assert envelope["message"] == "Qualifying event created successfully."
    data = envelope["data"]
    assert set(data) == QE_FIELDS, set(data) ^ QE_FIELDS
    for key in ("name", "description", "tags", "sql", "timestampColumn", "timestampAsDay", "idTypeMapping"):
        assert data[key] == body[key], key
    assert data["customFieldMapping"] == body["customFieldMapping"]
    assert data["sourceType"] == "query"
    assert data["tableName"] == ""
    assert (data["isVerified"], data["isReadOnly"], data["disableCURE"]) == (True, False, True)
    assert (data["team"], data["teamID"]) == ("growth", None)
    assert data["version"] == 1
    assert data["creatorName"] == "CONSOLE API"
    assert data["owner"]["ownerType"] == "SDK_KEY"
    assert data["owner"]["ownerName"] == "CONSOLE API"
    assert data["owner"]["ownerEmail"] == ""
    assert data["owner"]["ownerID"] == data["creatorID"]
    assert data["createdTime"] == data["lastModifiedTime"] > 0
    assert read(api, qe_path(body["name"])) == data


def test_name_with_spaces_reads_through_the_encoded_path(api: requests.Session) -> None:
    name = f"Log Events {uid()}"
    source = create_qe(api, name=name)
    assert source["name"] == name
    assert read(api, qe_path(name)) == source
    assert api.delete(qe_path(name)).status_code == 200


def test_get_unknown_qualifying_event_is_404(api: requests.Session) -> None:
    body = assert_error(api.get(qe_path(f"missing_{uid()}")), 404)
    assert "not found" in body["message"]


# --- assignment sources: create and read --------------------------------------------------------


def test_create_assignment_source_returns_the_source(api: requests.Session) -> None:
    body = as_body(
        description="exposures",
        tags=["wh"],
        groupNameColumn="group_name",
        idTypeMapping=[mapping(), mapping("device_id", "stableID")],
        sql=AS_SQL.replace("user_id", "user_id, device_id"),
        isVerified=True,
        scheduledReloadHour=5,
        teamID="t-1",
    )
    resp = api.post(AS_LIST, json=body)
    assert resp.status_code == 201, resp.text
    assert resp.json()["message"] == "Assignment source created successfully."
    data = resp.json()["data"]
    assert set(data) == AS_FIELDS | {"groupNameColumn"}, set(data) ^ AS_FIELDS
    for key, value in body.items():
        assert data[key] == value, key
    assert data["isReadOnly"] is False
    assert (data["team"], data["teamID"]) == (None, "t-1")
    assert data["version"] == 1
    assert data["owner"]["ownerType"] == "SDK_KEY"
    assert data["creatorName"] == "CONSOLE API"
    assert read(api, as_path(body["name"])) == data
    resp = api.get(as_path(body["name"]))
    assert resp.json()["message"] == "Assignment source read successfully."


# --- authentication -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [QE, AS_LIST, f"{QE}/any_name", f"{AS_ONE}/any_name"])
def test_missing_or_wrong_key(server: Any, path: str) -> None:
    url = server.url + path
    assert requests.get(url, timeout=30).status_code == 401
    assert requests.get(url, headers={"SERVICE-API-KEY": "console-unknown"}, timeout=30).status_code == 401
    assert requests.get(url, headers={"SERVICE-API-KEY": server.server_secret}, timeout=30).status_code == 403


def test_create_without_a_key_stores_nothing(server: Any, api: requests.Session) -> None:
    body = qe_body()
    assert requests.post(server.url + QE, json=body, timeout=30).status_code == 401
    assert_error(api.get(qe_path(body["name"])), 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [("PATCH", f"{QE}/some_source"), ("PUT", f"{AS_ONE}/some_source"), ("DELETE", AS_LIST)],
)
def test_unrouted_methods_are_404_or_405(api: requests.Session, method: str, path: str) -> None:
    """A path no route has is a 404; a path routed under other methods a 405 naming them."""
    response = api.request(method, path, json={})
    if method == "DELETE":
        assert response.status_code == 404
    else:
        assert response.status_code == 405 and response.headers["Allow"]


def test_body_that_is_not_json_is_400(api: requests.Session) -> None:
    resp = api.post(QE, data='{"name": ', headers={"Content-Type": "application/json"})
    assert_error(resp, 400, "body")
