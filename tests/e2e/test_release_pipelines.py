"""End-to-end tests of the release pipeline endpoints over HTTP against the local server:
create, read, list and pagination, full update (phase and rule ids kept), delete (refused
while a gate or dynamic config uses the pipeline), archive and unarchive, limits and auth.

The server is shared by the whole session: every test makes its own pipelines (random ids)
and finds them in lists by id.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in
`tests/functional/test_release_pipelines_api.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error
from tests.functional.test_release_pipelines_api import PIPELINES, country, phase, prule, read, uid

PIPELINE_FIELDS = {
    "id",
    "name",
    "phases",
    "creatorID",
    "createdTime",
    "lastModifierID",
    "lastModifiedTime",
    "version",
    "isArchived",
}


# --- create and read ---------------------------------------------------------------------------


def test_create_answers_201_with_the_contract_fields_and_assigned_ids(api: Any) -> None:
    name = f"Pipeline {uid()}"
    body = {
        "name": name,
        "phases": [
            phase("canary", prule("ca", country("CA")), interval=0),
            {
                "name": "everyone",
                "timeIntervalMs": 86_400_000,
                "requiredReview": True,
                "rules": [
                    prule("all", environments=["production"]),
                    prule("staging only", environments=None),
                ],
            },
        ],
    }
    resp = api.post(PIPELINES, json=body)
    assert resp.status_code == 201, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    pipeline = resp.json()["data"]
    assert pipeline.keys() >= PIPELINE_FIELDS, f"missing: {PIPELINE_FIELDS - pipeline.keys()}"
    assert isinstance(pipeline["id"], str) and len(pipeline["id"]) >= 10
    assert pipeline["name"] == name
    assert pipeline["version"] == 1
    assert pipeline["isArchived"] is False
    assert pipeline["creatorName"] == "CONSOLE API"
    assert pipeline["creatorID"] == pipeline["lastModifierID"] and pipeline["creatorID"]
    assert pipeline["createdTime"] == pipeline["lastModifiedTime"] > 1_600_000_000_000
    first, second = pipeline["phases"]
    assert (first["name"], first["timeIntervalMs"], first["requiredReview"]) == ("canary", 0, False)
    assert (second["name"], second["timeIntervalMs"], second["requiredReview"]) == (
        "everyone",
        86_400_000,
        True,
    )
    assert first["rules"][0]["conditions"] == [country("CA")]  # unused condition fields left out
    assert first["rules"][0]["environments"] is None
    assert [r["environments"] for r in second["rules"]] == [["production"], None]
    ids = [first["id"], second["id"], *(r["id"] for p in pipeline["phases"] for r in p["rules"])]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
    assert set(first["rules"][0]) == {"id", "name", "conditions", "environments"}
    assert read(api, pipeline["id"]) == pipeline


def test_get_unknown_pipeline_is_404(api: Any) -> None:
    body = assert_error(api.get(f"{PIPELINES}/nope_{uid()}"), 404)
    assert "nope_" in body["message"]


# --- auth --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", PIPELINES), ("POST", PIPELINES), ("GET", f"{PIPELINES}/x"), ("DELETE", f"{PIPELINES}/x")],
)
def test_missing_or_unknown_key_is_401_and_a_server_secret_403(server: Any, method: str, path: str) -> None:
    url = server.url + path
    resp = requests.request(method, url, json={"name": "no key"}, timeout=30)
    assert resp.status_code == 401, resp.text
    assert isinstance(resp.json()["message"], str)
    for key, status in (("console-not-a-real-key", 401), (server.server_secret, 403)):
        resp = requests.request(
            method, url, json={"name": "bad key"}, headers={"SERVICE-API-KEY": key}, timeout=30
        )
        assert_error(resp, status)
