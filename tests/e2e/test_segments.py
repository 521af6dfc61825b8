"""End-to-end tests of the segment endpoints over HTTP against the local server: create (type
fixed at creation), read, list and pagination, rules of rule_based segments
(POST /conditional), ids of id_list segments (GET/PATCH/DELETE /id_list: paged, 1 to 1000 ids
a request, deduplicated, stored outside the segment's item), delete and archive (refused while
a gate, pipeline or segment names the segment), limits and auth.

The server is shared by the whole session: every test makes its own segments (unique ids).

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_segments_api.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error
from tests.functional.test_segments_api import (
    SEGMENTS,
    add_ids,
    all_ids,
    country,
    create,
    read,
    remove_ids,
    rule,
    uid,
)

SEGMENT_FIELDS = {
    "id",
    "name",
    "type",
    "description",
    "idType",
    "isEnabled",
    "tags",
    "targetApps",
    "holdoutIDs",
    "team",
    "teamID",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
    "version",
    "isArchived",
}


# --- create and read -----------------------------------------------------------------------------


def test_create_rule_based_segment(api: Any) -> None:
    suffix = uid()
    body = {
        "name": f"Beta Users {suffix}",
        "type": "rule_based",
        "description": "people in the beta",
        "tags": ["beta"],
        "team": "Growth",
        "rules": [rule(25, country("CA", "US"), name="north america"), rule(100, environments=["staging"])],
    }
    resp = api.post(SEGMENTS, json=body)
    assert resp.status_code == 201, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    segment = resp.json()["data"]
    assert segment.keys() >= SEGMENT_FIELDS, f"missing: {SEGMENT_FIELDS - segment.keys()}"
    assert segment["id"] == f"beta_users_{suffix}"  # derived from the name
    assert segment["type"] == "rule_based"
    assert segment["isEnabled"] is True and segment["isArchived"] is False
    assert segment["version"] == 1 and segment["idType"] == "userID"
    assert segment["creatorName"] == "CONSOLE API"
    assert segment["team"] == "Growth" and segment["teamID"] is None
    assert "count" not in segment
    first, second = segment["rules"]
    assert (first["name"], first["passPercentage"], first["conditions"]) == (
        "north america",
        25,
        [country("CA", "US")],
    )
    assert first["environments"] is None and second["environments"] == ["staging"]
    assert first["id"] and first["baseID"] and first["id"] != second["id"]
    assert read(api, segment["id"]) == segment


def test_get_unknown_segment_is_404(api: Any) -> None:
    assert_error(api.get(f"{SEGMENTS}/nope_{uid()}"), 404)


# --- ids -----------------------------------------------------------------------------------------


def test_add_read_and_remove_ids(api: Any) -> None:
    segment = create(api, "id_list")
    resp = add_ids(api, segment["id"], ["u3", "u1", "u2", "u1"])
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    after_add = resp.json()["data"]
    assert after_add["count"] == 3 and after_add["version"] == 2
    assert read(api, segment["id"]) == after_add
    resp = api.get(f"{SEGMENTS}/{segment['id']}/id_list")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["data"] == {"name": segment["name"], "count": 3, "ids": ["u1", "u2", "u3"]}
    assert body["pagination"]["totalItems"] == 3 and body["pagination"]["nextPage"] is None
    # Adding ids already there changes nothing, not even the version.
    resp = add_ids(api, segment["id"], ["u2", "u3"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == after_add
    resp = add_ids(api, segment["id"], ["u4", "u1"])
    assert resp.json()["data"]["count"] == 4 and resp.json()["data"]["version"] == 3
    resp = remove_ids(api, segment["id"], ["u1", "u3", "u1", "never_there"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["count"] == 2 and resp.json()["data"]["version"] == 4
    assert all_ids(api, segment["id"]) == ["u2", "u4"]
    resp = remove_ids(api, segment["id"], ["never_there"])
    assert resp.status_code == 200 and resp.json()["data"]["version"] == 4


# --- auth ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", SEGMENTS), ("POST", SEGMENTS), ("PATCH", f"{SEGMENTS}/x/id_list"), ("DELETE", f"{SEGMENTS}/x")],
)
def test_missing_or_unknown_key_is_401_and_a_server_secret_403(server: Any, method: str, path: str) -> None:
    url = server.url + path
    resp = requests.request(method, url, json={"ids": ["a"]}, timeout=30)
    assert resp.status_code == 401, resp.text
    for key, status in (("console-not-a-real-key", 401), (server.server_secret, 403)):
        resp = requests.request(
            method, url, json={"ids": ["a"]}, headers={"SERVICE-API-KEY": key}, timeout=30
        )
        assert_error(resp, status)
