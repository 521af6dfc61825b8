"""End-to-end tests of the dynamic config endpoints over HTTP against the local server: create,
read, full and partial update, delete, enable/disable, archive/unarchive, versions, every rule
endpoint, list filters and pagination; values as objects and as JSON5 (round trips, refusals),
JSON Schema enforcement with paths, variants, references, and every limit at its edge.

The server is shared by the session, so every test makes its own configs (unique ids) and
narrows list assertions with a tag of its own. Release pipelines and segments are written
straight into the server's table (the store's item shape, docs/architecture.md, 'Data: one
DynamoDB table'), so these tests do not depend on the API of those entities.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in
`tests/functional/test_dynamic_configs_api.py`.
"""

from __future__ import annotations

import json

import pytest
import requests

from expconsole_tools.local.process import ServeProcess
from tests.e2e.client import assert_error
from tests.functional.test_dynamic_configs_api import DC, Configs, rule, uid

KEY_HEADER = "SERVICE-API-KEY"

CONTRACT_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "isEnabled",
    "rules",
    "defaultValue",
    "defaultValueJson5",
    "isTemplate",
    "status",
    "checksPerHour",
    "tags",
    "targetApps",
    "holdoutIDs",
    "version",
    "owner",
    "permalink",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
}
# Contract fields typed as plain strings: answered when set, left out when not (docs/architecture.md,
# 'Decisions').
OPTIONAL_FIELDS = {"schema", "schemaJson5", "releasePipelineID", "team", "teamID"}


@pytest.fixture
def dc(api: requests.Session) -> Configs:
    return Configs(api)


# --- create and read -----------------------------------------------------------------------------


def test_create_answers_201_with_every_contract_field(dc: Configs, api: requests.Session) -> None:
    suffix = uid()
    resp = api.post(DC, json={"name": f"Checkout Limits {suffix}", "description": "limits"})
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["message"] == "Dynamic Config created successfully."
    config = body["data"]
    assert config["id"] == f"checkout_limits_{suffix}"  # derived from the name
    assert set(config) >= CONTRACT_FIELDS, CONTRACT_FIELDS - set(config)
    assert not OPTIONAL_FIELDS & set(config), "unset optional fields are left out, never null"
    assert config["status"] == "Enabled" and config["isEnabled"] is True
    assert config["defaultValue"] == {} and json.loads(config["defaultValueJson5"]) == {}
    assert config["rules"] == [] and config["holdoutIDs"] == [] and config["tags"] == []
    assert config["targetApps"] == "" and config["isTemplate"] is False
    assert config["version"] == 1 and config["checksPerHour"] == 0
    assert config["creatorName"] == "CONSOLE API" and config["lastModifierName"] == "CONSOLE API"
    assert config["owner"]["ownerType"] == "SDK_KEY" and config["owner"]["ownerName"] == "CONSOLE API"
    assert config["createdTime"] == config["lastModifiedTime"]
    assert config["permalink"].endswith(f"/console/v1/dynamic_configs/{config['id']}")
    assert dc.get(config["id"]) == config


def test_read_answers_the_stored_config(dc: Configs, api: requests.Session) -> None:
    config = dc.create(description="d", tags=["a"], idType="stableID", team="growth", teamID="t1")
    resp = api.get(f"{DC}/{config['id']}")
    assert resp.status_code == 200
    assert resp.json()["message"] == "Dynamic config read successfully."
    data = resp.json()["data"]
    assert (data["description"], data["tags"], data["idType"]) == ("d", ["a"], "stableID")
    assert (data["team"], data["teamID"]) == ("growth", "t1")


def test_unknown_config_is_404_on_every_route(api: requests.Session) -> None:
    missing = f"{DC}/missing_{uid()}"
    calls = [
        ("GET", missing, None),
        ("POST", missing, {"isEnabled": True, "description": "", "rules": []}),
        ("PATCH", missing, {"description": "x"}),
        ("DELETE", missing, None),
        ("GET", f"{missing}/versions", None),
        ("GET", f"{missing}/rules", None),
        ("POST", f"{missing}/rule", rule()),
        ("POST", f"{missing}/rules", {"rules": [rule()]}),
        ("PATCH", f"{missing}/rules", {"rules": [{"id": "x", "name": "y"}]}),
        ("GET", f"{missing}/rule/r1", None),
        ("PATCH", f"{missing}/rule/r1", {"name": "y"}),
        ("DELETE", f"{missing}/rule/r1", None),
        *[("PUT", f"{missing}/{action}", None) for action in ("enable", "disable", "archive", "unarchive")],
    ]
    for method, path, body in calls:
        assert_error(api.request(method, path, json=body), 404)


def test_auth_is_required(server: ServeProcess) -> None:
    assert requests.get(server.url + DC, timeout=30).status_code == 401
    wrong = requests.get(server.url + DC, headers={KEY_HEADER: server.server_secret}, timeout=30)
    assert wrong.status_code == 403
    assert requests.get(server.url + DC, headers={KEY_HEADER: "console-nope"}, timeout=30).status_code == 401


def test_concurrent_patches_never_lose_an_update(dc: Configs, server: ServeProcess) -> None:
    from concurrent.futures import ThreadPoolExecutor

    config = dc.create()

    def patch(i: int) -> requests.Response:
        return requests.patch(
            f"{server.url}{DC}/{config['id']}",
            json={"description": f"writer {i}", "version": 1},
            headers={KEY_HEADER: server.api_key},
            timeout=60,
        )

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(patch, range(8)))
    assert sorted(r.status_code for r in responses) == [200] + [409] * 7, [r.text for r in responses]
    winner = next(r.json()["data"] for r in responses if r.status_code == 200)
    assert dc.get(config["id"])["description"] == winner["description"]
