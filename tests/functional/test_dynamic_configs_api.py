"""In-process tests of the dynamic config endpoints: create, read, full and partial update, delete,
enable/disable, archive/unarchive, versions, every rule endpoint, list filters and pagination;
values as objects and as JSON5 (round trips, refusals), JSON Schema enforcement with paths,
variants, references, and every limit at its edge.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_dynamic_configs.py`. Release pipelines and segments are written straight into the
table (the store's item shape).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import requests

from tests.e2e.client import assert_error, country, error_for, rule, uid
from tests.functional.lambdas import STORE_TABLE

DC = "/console/v1/dynamic_configs"
GATES = "/console/v1/gates"
MAX_TEXT = 100_000
MAX_STORED = 350_000
MAX_DEPTH = 32


def ids_of(listing: dict[str, Any]) -> set[str]:
    return {c["id"] for c in listing["data"]}


def nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    """An object nesting `depth` levels: {"a": {"a": ... leaf}}."""
    value: Any = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


class Configs:
    """The dynamic config endpoints, through the session's `api` fixture."""

    def __init__(self, api: requests.Session) -> None:
        self.api = api

    def body(self, **fields: Any) -> dict[str, Any]:
        suffix = uid()
        return {"name": f"config {suffix}", "id": f"dc_{suffix}", **fields}

    def create(self, **fields: Any) -> dict[str, Any]:
        resp = self.api.post(DC, json=self.body(**fields))
        assert resp.status_code == 201, resp.text[:2000]
        return resp.json()["data"]

    def get(self, config_id: str) -> dict[str, Any]:
        resp = self.api.get(f"{DC}/{config_id}")
        assert resp.status_code == 200, resp.text[:2000]
        return resp.json()["data"]

    def ok(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        resp = self.api.request(method, path, **kwargs)
        assert resp.status_code == 200, resp.text[:2000]
        return resp.json()

    def act(self, config_id: str, action: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.ok("PUT", f"{DC}/{config_id}/{action}", json=body)["data"]

    def listing(self, **params: Any) -> dict[str, Any]:
        return self.ok("GET", DC, params=params)


@pytest.fixture
def dc(api: requests.Session) -> Configs:
    return Configs(api)


class Table:
    """Puts entity documents straight into the server's table, as the store keeps them."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name

    def put(self, kind: str, entity_id: str, **fields: Any) -> dict[str, Any]:
        doc = {"id": entity_id, "name": entity_id, "createdTime": int(time.time() * 1000), "version": 1}
        doc.update(fields)
        item = {
            "PK": {"S": f"{kind}#{entity_id}"},
            "SK": {"S": "CURRENT"},
            "GSI1PK": {"S": f"TYPE#{kind}"},
            "GSI1SK": {"S": f"{doc['createdTime']:013d}#{entity_id}"},
            "version": {"N": "1"},
            "doc": {"S": json.dumps(doc)},
        }
        self.client.put_item(TableName=self.name, Item=item)
        return doc


@pytest.fixture(scope="module")
def table(module_store: None) -> Iterator[Table]:
    yield Table(boto3.client("dynamodb"), STORE_TABLE)


def test_duplicate_id_is_409(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    assert_error(api.post(DC, json={"name": "another name", "id": config["id"]}), 409)


def test_create_keeps_given_fields(dc: Configs) -> None:
    owner = {"ownerID": "u1", "ownerType": "USER", "ownerName": "Ann", "ownerEmail": "ann@example.com"}
    config = dc.create(
        isEnabled=False,
        idType="companyID",
        tags=["x", "y"],
        targetApps=["web", "ios"],
        owner=owner,
        creatorID="c-1",
        creatorEmail="c@example.com",
    )
    assert config["status"] == "Disabled" and config["isEnabled"] is False
    assert config["targetApps"] == "web,ios"
    assert config["owner"] == owner
    assert (config["creatorID"], config["creatorEmail"]) == ("c-1", "c@example.com")


def test_target_apps_accept_a_string_or_a_list(dc: Configs, api: requests.Session) -> None:
    assert dc.create(targetApps="web, ios")["targetApps"] == "web,ios"
    assert dc.create(targetApps="web")["targetApps"] == "web"
    assert_error(api.post(DC, json=dc.body(targetApps=["a,b"])), 400, "targetApps[0]")
    assert_error(api.post(DC, json=dc.body(targetApps=5)), 400, "targetApps")
    assert dc.create(targetApps=["a" * 100])["targetApps"] == "a" * 100
    assert_error(api.post(DC, json=dc.body(targetApps=["a" * 101])), 400, "targetApps[0]")
    assert_error(api.post(DC, json=dc.body(targetApps=[""])), 400, "targetApps[0]")


def test_request_bodies_are_strict(dc: Configs, api: requests.Session) -> None:
    assert_error(api.post(DC, json=dc.body(isEnabled="true")), 400, "isEnabled")
    assert_error(api.post(DC, json=dc.body(color="blue")), 400, "color")
    assert_error(api.post(DC, json={"id": f"dc_{uid()}"}), 400, "name")
    resp = api.post(DC, data=json.dumps(dc.body()), headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415


# --- full and partial update ----------------------------------------------------------------------


def test_full_update_requires_is_enabled_description_and_rules(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    body = assert_error(api.post(f"{DC}/{config['id']}", json={"name": "renamed"}), 400)
    assert {e["field"] for e in body["errors"]} >= {"isEnabled", "description", "rules"}
    assert dc.get(config["id"])["version"] == 1


def test_full_update_replaces_the_fields_sent_and_keeps_the_others(dc: Configs) -> None:
    config = dc.create(tags=["keep"], defaultValue={"a": 1}, rules=[rule(10, name="old")])
    updated = dc.ok(
        "POST",
        f"{DC}/{config['id']}",
        json={"isEnabled": False, "description": "new", "rules": [rule(20, country("US"), name="new")]},
    )
    assert updated["message"] == "Dynamic config updated successfully."
    data = updated["data"]
    assert (data["isEnabled"], data["status"], data["description"]) == (False, "Disabled", "new")
    assert [r["name"] for r in data["rules"]] == ["new"]
    assert data["rules"][0]["id"] != config["rules"][0]["id"]  # a rule sent without id is new
    assert data["tags"] == ["keep"] and data["defaultValue"] == {"a": 1}
    assert data["version"] == 2 and data["lastModifiedTime"] >= config["lastModifiedTime"]
    assert dc.get(config["id"]) == data


def test_patch_changes_only_the_fields_sent(dc: Configs, api: requests.Session) -> None:
    config = dc.create(description="before", tags=["a"], team="t", rules=[rule(30)])
    data = dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": "after", "team": None})["data"]
    assert data["description"] == "after"
    assert "team" not in data  # null clears a nullable field
    assert data["tags"] == ["a"] and data["rules"] == config["rules"]
    assert data["version"] == 2
    assert_error(api.patch(f"{DC}/{config['id']}", json={"description": None}), 400, "description")
    assert_error(api.patch(f"{DC}/{config['id']}", json={"isTemplate": True}), 400, "isTemplate")


def test_stale_version_is_409_and_changes_nothing(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": "one", "version": 1})
    body = assert_error(api.patch(f"{DC}/{config['id']}", json={"description": "two", "version": 1}), 409)
    assert body["errors"][0]["field"] == "version"
    assert dc.get(config["id"])["description"] == "one"


def test_release_pipeline_must_exist(dc: Configs, api: requests.Session, table: Table) -> None:
    missing = f"rp_{uid()}"
    assert_error(api.post(DC, json=dc.body(releasePipelineID=missing)), 400, "releasePipelineID")
    pipeline = table.put("RELEASE_PIPELINE", f"rp_{uid()}", phases=[])
    config = dc.create(releasePipelineID=pipeline["id"])
    assert config["releasePipelineID"] == pipeline["id"]
    assert_error(
        api.patch(f"{DC}/{config['id']}", json={"releasePipelineID": missing}), 400, "releasePipelineID"
    )
    cleared = dc.ok("PATCH", f"{DC}/{config['id']}", json={"releasePipelineID": None})["data"]
    assert "releasePipelineID" not in cleared


# --- delete --------------------------------------------------------------------------------------


def test_delete_removes_the_config_and_its_versions(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": "v2"})
    resp = api.delete(f"{DC}/{config['id']}")
    assert resp.status_code == 200 and resp.json() == {"message": "Dynamic Config deleted successfully."}
    assert_error(api.get(f"{DC}/{config['id']}"), 404)
    assert_error(api.get(f"{DC}/{config['id']}/versions"), 404)
    assert_error(api.delete(f"{DC}/{config['id']}"), 404)
    # The id is free again, and starts over at version 1.
    again = api.post(DC, json={"name": "reborn", "id": config["id"]})
    assert again.status_code == 201 and again.json()["data"]["version"] == 1


def test_an_archived_config_can_be_deleted(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    dc.act(config["id"], "archive")
    assert api.delete(f"{DC}/{config['id']}").status_code == 200


# --- enable, disable, archive, unarchive ----------------------------------------------------------


def test_disable_then_enable(dc: Configs) -> None:
    config = dc.create(rules=[rule(50, country())])
    disabled = dc.act(config["id"], "disable")
    assert (disabled["isEnabled"], disabled["status"], disabled["version"]) == (False, "Disabled", 2)
    assert disabled["rules"] == config["rules"]
    enabled = dc.act(config["id"], "enable")
    assert (enabled["isEnabled"], enabled["status"], enabled["version"]) == (True, "Enabled", 3)
    assert dc.get(config["id"]) == enabled


@pytest.mark.parametrize(
    "body", [{"forceArchive": True, "archiveReason": "replaced"}, {"forceArchive": False}, None]
)
def test_archive_an_enabled_config_returns_it_archived(dc: Configs, body: dict[str, Any] | None) -> None:
    tag = f"t-{uid()}"
    config = dc.create(tags=[tag], rules=[rule(50, country())])
    other = dc.create(tags=[tag])
    archived = dc.act(config["id"], "archive", body)
    assert archived["status"] == "Archived"
    assert archived["id"] == config["id"] and archived["rules"] == config["rules"]
    assert archived["isEnabled"] is True and archived["version"] == 2
    assert dc.get(config["id"]) == archived  # soft: still readable
    assert ids_of(dc.listing(tags=tag)) == {other["id"]}
    assert ids_of(dc.listing(tags=tag, includeArchived="true")) == {config["id"], other["id"]}


def test_archived_config_refuses_changes_until_unarchived(dc: Configs, api: requests.Session) -> None:
    config = dc.create(isEnabled=False, rules=[rule(50)])
    dc.act(config["id"], "archive", {"archiveReason": "done"})
    rule_id = config["rules"][0]["id"]
    for method, path, body in [
        ("PATCH", f"{DC}/{config['id']}", {"description": "x"}),
        ("POST", f"{DC}/{config['id']}", {"isEnabled": True, "description": "", "rules": []}),
        ("PUT", f"{DC}/{config['id']}/enable", None),
        ("PUT", f"{DC}/{config['id']}/archive", None),
        ("POST", f"{DC}/{config['id']}/rule", rule()),
        ("PATCH", f"{DC}/{config['id']}/rule/{rule_id}", {"name": "x"}),
        ("DELETE", f"{DC}/{config['id']}/rule/{rule_id}", None),
    ]:
        assert_error(api.request(method, path, json=body), 400)
    assert dc.get(config["id"])["version"] == 2
    restored = dc.act(config["id"], "unarchive", {"unarchiveReason": "needed"})
    assert restored["status"] == "Disabled"  # the status it had before
    assert_error(api.put(f"{DC}/{config['id']}/unarchive"), 400)


def test_archive_body_is_validated(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    assert_error(api.put(f"{DC}/{config['id']}/archive", json={"forceArchive": "yes"}), 400, "forceArchive")
    reason = "r" * 1001
    assert_error(
        api.put(f"{DC}/{config['id']}/archive", json={"archiveReason": reason}), 400, "archiveReason"
    )
    assert dc.act(config["id"], "archive", {"archiveReason": "r" * 1000})["status"] == "Archived"


# --- versions --------------------------------------------------------------------------------------


def test_versions_lists_every_version_newest_first(dc: Configs) -> None:
    config = dc.create(description="v1", defaultValue={"n": 1})
    dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": "v2", "defaultValue": {"n": 2}})
    dc.act(config["id"], "disable")
    dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": "v4"})
    listing = dc.ok("GET", f"{DC}/{config['id']}/versions")
    assert listing["message"] == "Dynamic Config versions listed successfully."
    versions = listing["data"]
    assert [v["version"] for v in versions] == [4, 3, 2, 1]
    assert [v["description"] for v in versions] == ["v4", "v2", "v2", "v1"]
    assert [v["defaultValue"] for v in versions] == [{"n": 2}, {"n": 2}, {"n": 2}, {"n": 1}]
    assert [v["status"] for v in versions] == ["Disabled", "Disabled", "Enabled", "Enabled"]
    assert versions[0] == dc.get(config["id"])
    assert listing["pagination"]["totalItems"] == 4


def test_versions_are_paginated(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    for i in range(4):
        dc.ok("PATCH", f"{DC}/{config['id']}", json={"description": f"d{i}"})
    page = dc.ok("GET", f"{DC}/{config['id']}/versions", params={"limit": 2, "page": 2})
    assert [v["version"] for v in page["data"]] == [3, 2]
    pagination = page["pagination"]
    assert (pagination["itemsPerPage"], pagination["pageNumber"], pagination["totalItems"]) == (2, 2, 5)
    assert pagination["nextPage"] == f"{DC}/{config['id']}/versions?page=3&limit=2"
    assert pagination["previousPage"] == f"{DC}/{config['id']}/versions?page=1&limit=2"
    last = dc.ok("GET", pagination["nextPage"])
    assert [v["version"] for v in last["data"]] == [1] and last["pagination"]["nextPage"] is None
    assert_error(api.get(f"{DC}/{config['id']}/versions", params={"limit": 0}), 400, "limit")


# --- list --------------------------------------------------------------------------------------------


def test_list_filters(dc: Configs, table: Table) -> None:
    tag = f"t-{uid()}"
    pipeline = table.put("RELEASE_PIPELINE", f"rp_{uid()}", phases=[])
    a = dc.create(tags=[tag], idType="stableID", targetApps=["web"], teamID="team-a", rules=[rule(100)])
    b = dc.create(
        tags=[tag, "other"], creatorID="creator-b", releasePipelineID=pipeline["id"], rules=[rule(0)]
    )
    c = dc.create(tags=[tag], rules=[rule(50, country())])
    assert ids_of(dc.listing(tags=tag)) == {a["id"], b["id"], c["id"]}
    assert ids_of(dc.listing(tags=tag, idType="stableID")) == {a["id"]}
    assert ids_of(dc.listing(tags=tag, idType="stableID,userID")) == {a["id"], b["id"], c["id"]}
    assert ids_of(dc.listing(tags=tag, targetAppID="web")) == {a["id"]}
    assert ids_of(dc.listing(tags=tag, teamID="team-a")) == {a["id"]}
    assert ids_of(dc.listing(tags=tag, creatorID="creator-b")) == {b["id"]}
    assert ids_of(dc.listing(tags=tag, creatorName="CONSOLE API")) == {a["id"], b["id"], c["id"]}
    assert ids_of(dc.listing(tags=tag, creatorName="someone else")) == set()
    assert ids_of(dc.listing(tags=tag, releasePipelineID=pipeline["id"])) == {b["id"]}
    assert ids_of(dc.listing(tags=tag, rolloutRate="100")) == {a["id"]}
    assert ids_of(dc.listing(tags=tag, rolloutRate="0")) == {b["id"]}
    assert ids_of(dc.listing(tags=tag, rolloutRate="0,INBETWEEN")) == {b["id"], c["id"]}
    assert ids_of(dc.listing(tags=f"{tag},nothing-{uid()}")) == {a["id"], b["id"], c["id"]}


def test_templates_are_listed_apart(dc: Configs) -> None:
    tag = f"t-{uid()}"
    template = dc.create(tags=[tag], isTemplate=True)
    normal = dc.create(tags=[tag])
    assert template["isTemplate"] is True
    assert ids_of(dc.listing(tags=tag)) == {normal["id"]}
    assert ids_of(dc.listing(tags=tag, isTemplate="false")) == {normal["id"]}
    assert ids_of(dc.listing(tags=tag, isTemplate="true")) == {template["id"]}
    assert dc.get(template["id"])["isTemplate"] is True


def test_list_pagination_links_keep_the_filters(dc: Configs) -> None:
    tag = f"t-{uid()}"
    created = [dc.create(tags=[tag])["id"] for _ in range(3)]
    first = dc.listing(tags=tag, limit=2)
    assert first["message"] == "Dynamic Configs listed successfully."
    assert [c["id"] for c in first["data"]] == created[:2]  # oldest first
    pagination = first["pagination"]
    assert pagination["totalItems"] == 3 and pagination["previousPage"] is None
    assert pagination["all"] == f"{DC}?tags={tag}"
    next_url = urlsplit(pagination["nextPage"])
    assert next_url.path == DC and parse_qs(next_url.query) == {"tags": [tag], "page": ["2"], "limit": ["2"]}
    second = dc.ok("GET", pagination["nextPage"])
    assert [c["id"] for c in second["data"]] == created[2:]
    assert second["pagination"]["nextPage"] is None


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"page": 0}, "page"),
        ({"includeArchived": "yes"}, "includeArchived"),
        ({"isTemplate": "1"}, "isTemplate"),
        ({"rolloutRate": "50"}, "rolloutRate[0]"),
    ],
)
def test_list_query_is_validated(api: requests.Session, params: dict[str, Any], field: str) -> None:
    assert_error(api.get(DC, params=params), 400, field)


def test_list_limit_edges_pass(dc: Configs) -> None:
    tag = f"t-{uid()}"
    dc.create(tags=[tag])
    assert dc.listing(tags=tag, limit=1)["pagination"]["itemsPerPage"] == 1
    assert dc.listing(tags=tag, limit=1000)["pagination"]["itemsPerPage"] == 1000


# --- rule endpoints ----------------------------------------------------------------------------------


def test_get_rules_answers_the_peer_shape(dc: Configs) -> None:
    config = dc.create(rules=[rule(10, name="a", returnValue={"x": 1}), rule(20, name="b")])
    listing = dc.ok("GET", f"{DC}/{config['id']}/rules")
    assert listing["message"] == "Dynamic Config rules read successfully."
    assert listing["data"] == [{"rules": config["rules"]}]
    assert listing["pagination"]["totalItems"] == 1


def test_rules_get_ids_and_values(dc: Configs) -> None:
    config = dc.create(rules=[rule(10, country("CA"), name="a", returnValue={"x": 1}), rule(20, name="b")])
    first, second = config["rules"]
    assert first["id"] and first["baseID"] == first["id"] and first["id"] != second["id"]
    assert first["conditions"] == [country("CA")] and first["environments"] is None
    assert first["returnValue"] == {"x": 1} and json.loads(first["returnValueJson5"]) == {"x": 1}
    assert second["returnValue"] == {} and json.loads(second["returnValueJson5"]) == {}
    assert "variants" not in first


def test_get_one_rule(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(10, name="a"), rule(20, name="b", returnValue={"k": "v"})])
    wanted = config["rules"][1]
    answer = dc.ok("GET", f"{DC}/{config['id']}/rule/{wanted['id']}")
    assert answer["data"] == wanted
    assert_error(api.get(f"{DC}/{config['id']}/rule/nope"), 404)


def test_add_one_rule(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(10, name="first")])
    added = dc.ok(
        "POST", f"{DC}/{config['id']}/rule", json=rule(30, name="second", returnValueJson5="{k: 'v'}")
    )
    data = added["data"]
    assert [r["name"] for r in data["rules"]] == ["first", "second"]
    assert data["rules"][0] == config["rules"][0]
    assert (
        data["rules"][1]["returnValue"] == {"k": "v"} and data["rules"][1]["returnValueJson5"] == "{k: 'v'}"
    )
    assert data["version"] == 2
    assert_error(api.post(f"{DC}/{config['id']}/rule", json=rule(5, id="mine")), 400, "id")
    assert_error(
        api.post(f"{DC}/{config['id']}/rule", json={"name": "x", "conditions": []}), 400, "passPercentage"
    )


def test_add_several_rules(dc: Configs, api: requests.Session) -> None:
    config = dc.create()
    data = dc.ok("POST", f"{DC}/{config['id']}/rules", json={"rules": [rule(1, name="a"), rule(2, name="b")]})
    assert [r["name"] for r in data["data"]["rules"]] == ["a", "b"]
    assert_error(api.post(f"{DC}/{config['id']}/rules", json={"rules": []}), 400, "rules")
    assert_error(
        api.post(f"{DC}/{config['id']}/rules", json={"rules": [rule(), rule(id="x")]}), 400, "rules[1].id"
    )


def test_update_rules_by_id(dc: Configs, api: requests.Session) -> None:
    config = dc.create(
        rules=[rule(10, name="a", returnValue={"v": 1}), rule(20, name="b"), rule(30, name="c")]
    )
    a, b, c = config["rules"]
    data = dc.ok(
        "PATCH",
        f"{DC}/{config['id']}/rules",
        json={"rules": [{"id": c["id"], "passPercentage": 35}, {"id": a["id"], "name": "a2"}]},
    )
    assert data["message"] == "Dynamic Config rules updated successfully."
    new_a, new_b, new_c = data["data"]["rules"]
    assert (new_a["name"], new_a["passPercentage"], new_a["returnValue"]) == ("a2", 10, {"v": 1})
    assert new_a["returnValueJson5"] == a["returnValueJson5"]
    assert new_b == b
    assert (new_c["id"], new_c["passPercentage"]) == (c["id"], 35)
    assert_error(api.patch(f"{DC}/{config['id']}/rules", json={"rules": [{"name": "x"}]}), 400, "rules[0].id")
    body = {"rules": [{"id": a["id"], "name": "ok"}, {"id": "unknown", "name": "x"}]}
    assert_error(api.patch(f"{DC}/{config['id']}/rules", json=body), 400, "rules[1].id")
    assert dc.get(config["id"])["rules"][0]["name"] == "a2"  # the failed request changed nothing


def test_patch_one_rule_keeps_what_is_not_sent(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(10, country(), name="a", returnValueJson5="{v: 1 /* one */}")])
    rule_id = config["rules"][0]["id"]
    data = dc.ok("PATCH", f"{DC}/{config['id']}/rule/{rule_id}", json={"passPercentage": 15})["data"]
    patched = data["rules"][0]
    assert patched["passPercentage"] == 15 and patched["conditions"] == [country()]
    assert patched["returnValueJson5"] == "{v: 1 /* one */}" and patched["returnValue"] == {"v": 1}
    data = dc.ok("PATCH", f"{DC}/{config['id']}/rule/{rule_id}", json={"returnValue": {"v": 2}})["data"]
    assert data["rules"][0]["returnValue"] == {"v": 2}
    assert json.loads(data["rules"][0]["returnValueJson5"]) == {"v": 2}  # regenerated from the object
    assert_error(api.patch(f"{DC}/{config['id']}/rule/nope", json={"name": "x"}), 404)
    assert_error(api.patch(f"{DC}/{config['id']}/rule/{rule_id}", json={"passPercentage": None}), 400)


def test_delete_one_rule(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(10, name="a"), rule(20, name="b")])
    a, b = config["rules"]
    resp = api.delete(f"{DC}/{config['id']}/rule/{a['id']}")
    assert resp.status_code == 200, resp.text
    assert resp.json()["message"] == "Dynamic Config rule deleted successfully."
    assert resp.json()["data"]["rules"] == [b]
    assert_error(api.delete(f"{DC}/{config['id']}/rule/{a['id']}"), 404)


def test_rules_sent_back_with_their_id_keep_ids_and_values(dc: Configs, api: requests.Session) -> None:
    config = dc.create(
        rules=[
            rule(10, name="a", returnValueJson5="{v: 'a'}"),
            rule(20, name="b", variants=[{"name": "x", "passPercentage": 100, "returnValue": {"v": "x"}}]),
        ]
    )
    a, b = config["rules"]
    resent = [
        {"id": b["id"], "name": "b", "passPercentage": 25, "conditions": []},
        {"id": a["id"], "name": "a", "passPercentage": 10, "conditions": []},
    ]
    data = dc.ok("PATCH", f"{DC}/{config['id']}", json={"rules": resent})["data"]
    new_b, new_a = data["rules"]
    assert (new_b["id"], new_b["passPercentage"], new_b["variants"]) == (b["id"], 25, b["variants"])
    assert (new_a["id"], new_a["returnValueJson5"]) == (a["id"], "{v: 'a'}")
    bad = [{"id": "nope", "name": "a", "passPercentage": 10, "conditions": []}]
    assert_error(api.patch(f"{DC}/{config['id']}", json={"rules": bad}), 400, "rules[0].id")


def test_conditions_must_name_existing_gates_and_segments(
    dc: Configs, api: requests.Session, table: Table
) -> None:
    missing_gate = {"type": "passes_gate", "targetValue": f"gate_{uid()}"}
    body = dc.body(rules=[rule(10), rule(10, country(), missing_gate)])
    assert_error(api.post(DC, json=body), 400, "rules[1].conditions[1].targetValue")
    missing_segment = {"type": "fails_segment", "targetValue": f"seg_{uid()}"}
    assert_error(
        api.post(DC, json=dc.body(rules=[rule(10, missing_segment)])),
        400,
        "rules[0].conditions[0].targetValue",
    )
    segment = table.put("SEGMENT", f"seg_{uid()}")
    gate_resp = api.post(GATES, json={"name": f"gate {uid()}"})
    assert gate_resp.status_code == 201, gate_resp.text
    gate = gate_resp.json()["data"]
    config = dc.create(
        rules=[
            rule(
                10,
                {"type": "passes_gate", "targetValue": gate["id"]},
                {"type": "passes_segment", "targetValue": segment["id"]},
            )
        ]
    )
    # The gate sees the config among the dynamic configs that reference it.
    refs = api.get(f"{GATES}/{gate['id']}/dynamic_config_references")
    assert refs.status_code == 200, refs.text
    assert config["id"] in {c["id"] for c in refs.json()["data"]}
    rule_id = config["rules"][0]["id"]
    bad = {"conditions": [missing_gate]}
    assert_error(api.patch(f"{DC}/{config['id']}/rule/{rule_id}", json=bad), 400, "conditions[0].targetValue")
    assert_error(
        api.post(f"{DC}/{config['id']}/rule", json=rule(5, missing_gate)), 400, "conditions[0].targetValue"
    )


def test_conditions_are_validated_as_for_gates(dc: Configs, api: requests.Session) -> None:
    bad = {"type": "country", "operator": "gt", "targetValue": "CA"}
    assert_error(api.post(DC, json=dc.body(rules=[rule(10, bad)])), 400, "rules[0].conditions[0].operator")


# --- values: objects and JSON5 --------------------------------------------------------------------------


def test_default_value_given_as_object_gets_generated_json5(dc: Configs) -> None:
    value = {"timeout": 30, "name": "café", "ratio": 0.5, "flags": [True, None], "nested": {"k": "v"}}
    config = dc.create(defaultValue=value)
    assert config["defaultValue"] == value
    assert json.loads(config["defaultValueJson5"]) == value


def test_default_value_given_as_json5_gets_the_object_and_keeps_the_text(dc: Configs) -> None:
    text = "{\n  // the request timeout\n  timeout: 30,\n  name: 'x',\n}"
    config = dc.create(defaultValueJson5=text)
    assert config["defaultValue"] == {"timeout": 30, "name": "x"}
    assert config["defaultValueJson5"] == text
    assert dc.get(config["id"])["defaultValueJson5"] == text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("{a: 1 // line comment\n}", {"a": 1}),
        ("{/* block\ncomment */ a: 1}", {"a": 1}),
        ("{a: [1, 2, 3,], b: {c: 1,},}", {"a": [1, 2, 3], "b": {"c": 1}}),
        ("{unquoted_key: 1, $dollar: 2, _under: 3}", {"unquoted_key": 1, "$dollar": 2, "_under": 3}),
        ("{'single': 'quoted \"inner\"'}", {"single": 'quoted "inner"'}),
        ("{hex: 0x1F, neg: -0xff}", {"hex": 31, "neg": -255}),
        ("{lead: .5, trail: 5., plus: +3}", {"lead": 0.5, "trail": 5.0, "plus": 3}),
        ("{s: 'one\\\ntwo'}", {"s": "onetwo"}),
        ('{"json": true, "null": null, "exp": 1e3}', {"json": True, "null": None, "exp": 1000.0}),
    ],
)
def test_json5_round_trips(dc: Configs, text: str, value: dict[str, Any]) -> None:
    config = dc.create(defaultValueJson5=text, rules=[rule(10, returnValueJson5=text)])
    for holder, prefix in ((config, "defaultValue"), (config["rules"][0], "returnValue")):
        assert holder[prefix] == value
        assert holder[f"{prefix}Json5"] == text
    read = dc.get(config["id"])
    assert read["defaultValue"] == value and read["defaultValueJson5"] == text


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "+Infinity", "NaN", "-NaN", "1e400"])
def test_json5_numbers_json_cannot_represent_are_refused(
    dc: Configs, api: requests.Session, literal: str
) -> None:
    body = assert_error(
        api.post(DC, json=dc.body(defaultValueJson5=f"{{x: {literal}}}")), 400, "defaultValueJson5"
    )
    assert "representable in JSON" in error_for(body, "defaultValueJson5")
    resp = api.post(DC, json=dc.body(rules=[rule(5, returnValueJson5=f"{{a: [1, {literal}]}}")]))
    assert_error(resp, 400, "rules[0].returnValueJson5")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_in_a_json_body_are_refused(
    dc: Configs, api: requests.Session, literal: str
) -> None:
    raw = json.dumps(dc.body()).rstrip("}") + f', "defaultValue": {{"a": {{"b": [0, {literal}]}}}}}}'
    resp = api.post(DC, data=raw, headers={"Content-Type": "application/json"})
    assert_error(resp, 400, "defaultValue.a.b[1]")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{a: 1", "line 1"),
        ("{a: 1,,}", "line 1"),
        ("{\n  a: 1\n  b: 2\n}", "line 3"),
        ("", "not valid JSON5"),
        ("{a: 1, a: 2}", "Duplicate key"),
        ("{a: 01}", "not valid JSON5"),
    ],
)
def test_invalid_json5_is_a_400_naming_the_field(
    dc: Configs, api: requests.Session, text: str, fragment: str
) -> None:
    body = assert_error(api.post(DC, json=dc.body(defaultValueJson5=text)), 400, "defaultValueJson5")
    assert fragment in error_for(body, "defaultValueJson5")


@pytest.mark.parametrize("text", ["[1, 2]", "'text'", "42", "null", "true"])
def test_json5_values_must_be_objects(dc: Configs, api: requests.Session, text: str) -> None:
    assert_error(api.post(DC, json=dc.body(defaultValueJson5=text)), 400, "defaultValueJson5")
    assert_error(
        api.post(DC, json=dc.body(rules=[rule(1, returnValueJson5=text)])), 400, "rules[0].returnValueJson5"
    )


@pytest.mark.parametrize("value", [[1], "x", 3, True])
def test_object_values_must_be_objects(dc: Configs, api: requests.Session, value: Any) -> None:
    assert_error(api.post(DC, json=dc.body(defaultValue=value)), 400, "defaultValue")
    assert_error(api.post(DC, json=dc.body(rules=[rule(1, returnValue=value)])), 400, "rules[0].returnValue")


def test_object_and_json5_sent_together_must_agree(dc: Configs, api: requests.Session) -> None:
    same = dc.create(
        defaultValue={"a": 1, "b": [1.0, "x"]}, defaultValueJson5="{b: [1, 'x'], a: 0x1, /* c */}"
    )
    assert same["defaultValue"] == {"a": 1, "b": [1.0, "x"]}
    assert same["defaultValueJson5"] == "{b: [1, 'x'], a: 0x1, /* c */}"
    for value, text, where in [
        ({"a": 1}, "{a: 2}", "defaultValue.a"),
        ({"a": 1}, "{a: true}", "defaultValue.a"),
        ({"a": 1}, "{a: 1, b: 2}", "defaultValue.b"),
        ({"a": [1, 2]}, "{a: [1]}", "defaultValue.a[1]"),
    ]:
        body = assert_error(
            api.post(DC, json=dc.body(defaultValue=value, defaultValueJson5=text)), 400, "defaultValueJson5"
        )
        assert where in error_for(body, "defaultValueJson5")
    resp = api.post(DC, json=dc.body(rules=[rule(1, returnValue={"a": 1}, returnValueJson5="{a: 2}")]))
    assert_error(resp, 400, "rules[0].returnValueJson5")


def test_patch_of_one_form_replaces_both(dc: Configs) -> None:
    config = dc.create(defaultValueJson5="{a: 1 // old\n}")
    data = dc.ok("PATCH", f"{DC}/{config['id']}", json={"defaultValue": {"a": 2}})["data"]
    assert data["defaultValue"] == {"a": 2} and json.loads(data["defaultValueJson5"]) == {"a": 2}
    data = dc.ok("PATCH", f"{DC}/{config['id']}", json={"defaultValueJson5": "{a: 3, /* new */}"})["data"]
    assert data["defaultValue"] == {"a": 3} and data["defaultValueJson5"] == "{a: 3, /* new */}"


# --- schema ----------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"timeout": {"type": "string"}, "limits": {"type": "array", "items": {"type": "integer"}}},
    "required": ["timeout"],
}


def test_schema_is_answered_as_json_and_json5(dc: Configs) -> None:
    only_json = dc.create(schema=json.dumps(SCHEMA, indent=4), defaultValue={"timeout": "5s"})
    assert json.loads(only_json["schema"]) == SCHEMA
    assert json.loads(only_json["schemaJson5"]) == SCHEMA  # generated
    text5 = "{type: 'object', // any object\n required: ['timeout'],}"
    only_json5 = dc.create(schemaJson5=text5, defaultValue={"timeout": 1})
    assert only_json5["schemaJson5"] == text5
    assert json.loads(only_json5["schema"]) == {"type": "object", "required": ["timeout"]}


def test_values_violating_the_schema_are_400s_naming_their_paths(dc: Configs, api: requests.Session) -> None:
    body = dc.body(
        schema=json.dumps(SCHEMA),
        defaultValue={"timeout": "5s"},
        rules=[
            rule(10, name="ok", returnValue={"timeout": "1s"}),
            rule(10, name="bad", returnValue={"timeout": 5, "limits": [1, "two"]}),
        ],
    )
    answer = assert_error(api.post(DC, json=body), 400, "rules[1].returnValue.timeout")
    assert "rules[1].returnValue.timeout: 5 is not of type 'string'" in answer["message"]
    assert error_for(answer, "rules[1].returnValue.limits[1]") == "'two' is not of type 'integer'"
    answer = assert_error(api.post(DC, json=dc.body(schema=json.dumps(SCHEMA))), 400, "defaultValue")
    assert error_for(answer, "defaultValue") == "'timeout' is a required property"
    variants = [
        {"name": "v1", "passPercentage": 50, "returnValue": {"timeout": "x"}},
        {"name": "v2", "passPercentage": 50},
    ]
    body = dc.body(
        schema=json.dumps(SCHEMA),
        defaultValue={"timeout": "5s"},
        rules=[rule(10, returnValue={"timeout": "1s"}, variants=variants)],
    )
    assert_error(api.post(DC, json=body), 400, "rules[0].variants[1].returnValue")


def test_schema_enforced_on_every_rule_endpoint(dc: Configs, api: requests.Session) -> None:
    config = dc.create(
        schemaJson5=json.dumps(SCHEMA),
        defaultValue={"timeout": "5s"},
        rules=[rule(10, returnValue={"timeout": "1s"})],
    )
    rule_id = config["rules"][0]["id"]
    one = rule(5, returnValue={"timeout": 5})
    assert_error(api.post(f"{DC}/{config['id']}/rule", json=one), 400, "returnValue.timeout")
    several = {
        "rules": [rule(5, returnValue={"timeout": "ok"}), rule(5, returnValueJson5="{timeout: false}")]
    }
    assert_error(api.post(f"{DC}/{config['id']}/rules", json=several), 400, "rules[1].returnValue.timeout")
    patch_list = {"rules": [{"id": rule_id, "returnValue": {}}]}
    assert_error(api.patch(f"{DC}/{config['id']}/rules", json=patch_list), 400, "rules[0].returnValue")
    assert_error(
        api.patch(f"{DC}/{config['id']}/rule/{rule_id}", json={"returnValue": {"timeout": []}}),
        400,
        "returnValue.timeout",
    )
    assert_error(
        api.patch(f"{DC}/{config['id']}", json={"defaultValue": {"timeout": None}}),
        400,
        "defaultValue.timeout",
    )
    assert dc.get(config["id"])["version"] == 1  # nothing was stored
    ok = dc.ok("PATCH", f"{DC}/{config['id']}/rule/{rule_id}", json={"returnValueJson5": "{timeout: '2s'}"})
    assert ok["data"]["rules"][0]["returnValue"] == {"timeout": "2s"}


def test_changing_the_schema_revalidates_stored_values(dc: Configs, api: requests.Session) -> None:
    config = dc.create(
        defaultValue={"timeout": "5s"},
        rules=[rule(10, returnValue={"timeout": "1s"}), rule(10, returnValue={"timeout": 7})],
    )
    answer = assert_error(
        api.patch(f"{DC}/{config['id']}", json={"schema": json.dumps(SCHEMA)}),
        400,
        "rules[1].returnValue.timeout",
    )
    assert "7 is not of type 'string'" in answer["message"]
    assert "schema" not in dc.get(config["id"])
    # Fixing the value in the same request makes the schema acceptable.
    fixed = [
        {
            "id": config["rules"][1]["id"],
            "name": "rule",
            "passPercentage": 10,
            "conditions": [],
            "returnValue": {"timeout": "7s"},
        }
    ]
    data = dc.ok(
        "PATCH",
        f"{DC}/{config['id']}",
        json={"schema": json.dumps(SCHEMA), "rules": [config["rules"][0], fixed[0]]},
    )["data"]
    assert json.loads(data["schema"]) == SCHEMA
    stricter = {
        **SCHEMA,
        "properties": {"timeout": {"type": "string", "pattern": "^[0-9]+s$"}},
        "additionalProperties": False,
    }
    config2 = dc.create(defaultValue={"timeout": "5s", "extra": 1})
    answer = assert_error(
        api.patch(f"{DC}/{config2['id']}", json={"schemaJson5": json.dumps(stricter)}), 400, "defaultValue"
    )
    assert "extra" in error_for(answer, "defaultValue")


def test_schema_can_be_removed(dc: Configs, api: requests.Session) -> None:
    config = dc.create(schema=json.dumps(SCHEMA), defaultValue={"timeout": "1s"})
    resp = api.patch(f"{DC}/{config['id']}", json={"schema": None, "schemaJson5": json.dumps(SCHEMA)})
    assert_error(resp, 400, "schema")
    data = dc.ok("PATCH", f"{DC}/{config['id']}", json={"schema": None})["data"]
    assert "schema" not in data and "schemaJson5" not in data
    assert dc.ok("PATCH", f"{DC}/{config['id']}", json={"defaultValue": {"timeout": 1}})["data"][
        "defaultValue"
    ] == {"timeout": 1}


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({"schema": '{"type": "nope"}'}, "schema", "not a valid JSON Schema"),
        ({"schema": '{"properties": {"a": {"pattern": "("}}}'}, "schema", "properties.a.pattern"),
        ({"schema": '{"$schema": "http://example.com/mine"}'}, "schema", "unknown $schema"),
        ({"schema": "{type: 'object'}"}, "schema", "not valid JSON"),
        ({"schema": '{"a": 1, "a": 2}'}, "schema", "duplicate key"),
        ({"schema": '"a string"'}, "schema", "JSON Schema"),
        ({"schemaJson5": "{type: 'object',,}"}, "schemaJson5", "not valid JSON5"),
        ({"schema": '{"type": "object"}', "schemaJson5": "{type: 'array'}"}, "schemaJson5", "schema.type"),
        ({"schema": '{"$ref": "https://example.com/s.json"}'}, "schema", "cannot resolve $ref"),
    ],
)
def test_invalid_schemas_are_400s(
    dc: Configs, api: requests.Session, fields: dict[str, Any], field: str, fragment: str
) -> None:
    body = assert_error(api.post(DC, json=dc.body(**fields)), 400, field)
    assert fragment in error_for(body, field)


def test_schema_dialect_comes_from_dollar_schema(dc: Configs, api: requests.Session) -> None:
    # A tuple `items` array is draft-07; in 2020-12 (the default) `items` must be one schema.
    tuple_items = {
        "type": "object",
        "properties": {"pair": {"items": [{"type": "string"}, {"type": "integer"}]}},
    }
    assert_error(api.post(DC, json=dc.body(schema=json.dumps(tuple_items))), 400, "schema")
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items}
    dc.create(schema=json.dumps(draft7), defaultValue={"pair": ["a", 1]})
    resp = api.post(DC, json=dc.body(schema=json.dumps(draft7), defaultValue={"pair": ["a", "b"]}))
    assert_error(resp, 400, "defaultValue.pair[1]")
    prefix = {"properties": {"pair": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}}}
    resp = api.post(DC, json=dc.body(schema=json.dumps(prefix), defaultValue={"pair": ["a", "b"]}))
    assert_error(resp, 400, "defaultValue.pair[1]")


# --- variants ----------------------------------------------------------------------------------------


def variants(*percentages: float, **fields: Any) -> list[dict[str, Any]]:
    return [{"name": f"v{i}", "passPercentage": p, **fields} for i, p in enumerate(percentages)]


def test_variants_get_ids_and_values(dc: Configs) -> None:
    given = [
        {"name": "small", "passPercentage": 40, "returnValue": {"size": 1}},
        {"name": "large", "passPercentage": 60, "returnValueJson5": "{size: 2, // big\n}"},
    ]
    config = dc.create(rules=[rule(50, variants=given)])
    small, large = config["rules"][0]["variants"]
    assert small["id"] and large["id"] and small["id"] != large["id"]
    assert (small["name"], small["passPercentage"], small["returnValue"]) == ("small", 40, {"size": 1})
    assert json.loads(small["returnValueJson5"]) == {"size": 1}
    assert (large["returnValue"], large["returnValueJson5"]) == ({"size": 2}, "{size: 2, // big\n}")


def test_variants_sent_back_with_ids_keep_them(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(50, variants=variants(50, 50, returnValue={"a": 1}))])
    stored = config["rules"][0]
    first, second = stored["variants"]
    resent = [{"id": second["id"], "name": "v1", "passPercentage": 70}, {"name": "new", "passPercentage": 30}]
    data = dc.ok("PATCH", f"{DC}/{config['id']}/rule/{stored['id']}", json={"variants": resent})["data"]
    kept, new = data["rules"][0]["variants"]
    assert (kept["id"], kept["passPercentage"], kept["returnValue"]) == (second["id"], 70, {"a": 1})
    assert new["id"] not in (first["id"], second["id"]) and new["returnValue"] == {}
    bad = [{"id": "nope", "name": "v", "passPercentage": 100}]
    resp = api.patch(f"{DC}/{config['id']}/rule/{stored['id']}", json={"variants": bad})
    assert_error(resp, 400, "variants[0].id")
    cleared = dc.ok("PATCH", f"{DC}/{config['id']}/rule/{stored['id']}", json={"variants": []})["data"]
    assert "variants" not in cleared["rules"][0]


@pytest.mark.parametrize(
    "percentages", [(33.33, 33.33, 33.33), (33.34, 33.33, 33.34), (100,), (0, 100), (0.01, 99.99)]
)
def test_variant_percentages_summing_to_100_within_a_hundredth_pass(
    dc: Configs, percentages: tuple[float, ...]
) -> None:
    config = dc.create(rules=[rule(50, variants=variants(*percentages))])
    assert [v["passPercentage"] for v in config["rules"][0]["variants"]] == list(percentages)


@pytest.mark.parametrize(
    "percentages", [(33.33, 33.33, 33.32), (33.34, 33.34, 33.34), (50, 49), (50, 51), (0,)]
)
def test_variant_percentages_off_by_more_than_a_hundredth_are_refused(
    dc: Configs, api: requests.Session, percentages: tuple[float, ...]
) -> None:
    body = assert_error(
        api.post(DC, json=dc.body(rules=[rule(50, variants=variants(*percentages))])),
        400,
        "rules[0].variants",
    )
    assert "sum to 100" in error_for(body, "rules[0].variants")


def test_variant_rules(dc: Configs, api: requests.Session) -> None:
    duplicate = [{"name": "same", "passPercentage": 50}, {"name": "same", "passPercentage": 50}]
    assert_error(api.post(DC, json=dc.body(rules=[rule(50, variants=duplicate)])), 400, "rules[0].variants")
    for pct, field in [(-0.01, "passPercentage"), (100.01, "passPercentage"), (12.345, "passPercentage")]:
        given = [{"name": "a", "passPercentage": pct}, {"name": "b", "passPercentage": 100 - pct}]
        assert_error(
            api.post(DC, json=dc.body(rules=[rule(50, variants=given)])), 400, f"rules[0].variants[0].{field}"
        )
    assert_error(
        api.post(DC, json=dc.body(rules=[rule(50, variants=[{"passPercentage": 100}])])),
        400,
        "rules[0].variants[0].name",
    )
    given = [{"name": "a", "passPercentage": 100, "id": "chosen"}]
    assert_error(api.post(DC, json=dc.body(rules=[rule(50, variants=given)])), 400, "rules[0].variants[0].id")


def test_variant_count_and_name_length_at_their_edges(dc: Configs, api: requests.Session) -> None:
    dc.create(rules=[rule(50, variants=variants(*([1] * 100)))])
    assert_error(
        api.post(DC, json=dc.body(rules=[rule(50, variants=variants(*([1] * 101)))])),
        400,
        "rules[0].variants",
    )
    dc.create(rules=[rule(50, variants=[{"name": "n" * 100, "passPercentage": 100}])])
    long_name = [{"name": "n" * 101, "passPercentage": 100}]
    assert_error(
        api.post(DC, json=dc.body(rules=[rule(50, variants=long_name)])), 400, "rules[0].variants[0].name"
    )


# --- limits at their edges ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "inside", "outside"),
    [
        ("name", ["abc", "n" * 100, "a.b-c_d e"], ["ab", "n" * 101, "bad/name"]),
        ("description", ["", "d" * 1000], ["d" * 1001]),
        ("idType", ["u", "u" * 100], ["", "u" * 101]),
    ],
)
def test_entity_field_limits(
    dc: Configs, api: requests.Session, field: str, inside: list[str], outside: list[str]
) -> None:
    for value in inside:
        resp = api.post(DC, json={**dc.body(), field: value})
        assert resp.status_code == 201, (field, len(value), resp.text[:500])
        assert resp.json()["data"][field] == value
    for value in outside:
        assert_error(api.post(DC, json={**dc.body(), field: value}), 400, field)


def test_id_limits(api: requests.Session) -> None:
    three = uuid.uuid4().hex[:3]  # only this test makes 3-character ids
    for config_id in (three, f"{uid()}{'i' * 88}", f"a.b-C_{uid()}"):
        resp = api.post(DC, json={"name": "id edge", "id": config_id})
        assert resp.status_code == 201, (len(config_id), resp.text[:500])
        assert resp.json()["data"]["id"] == config_id
    for config_id in ("ab", "i" * 101, "has space", "slash/id"):
        assert_error(api.post(DC, json={"name": "id edge", "id": config_id}), 400, "id")
    # An id derived from the name has the same limits (names allow 3 to 100 characters).
    assert api.post(DC, json={"name": f"N {uid()}{'n' * 86}"}).status_code == 201


@pytest.mark.parametrize(("tag", "ok"), [("t" * 100, True), ("t" * 101, False), ("", False)])
def test_tag_length(dc: Configs, api: requests.Session, tag: str, ok: bool) -> None:
    resp = api.post(DC, json=dc.body(tags=[tag]))
    if ok:
        assert resp.status_code == 201, resp.text
    else:
        assert_error(resp, 400, "tags[0]")


@pytest.mark.parametrize(
    ("pct", "ok"),
    [(0, True), (100, True), (12.34, True), (-0.01, False), (100.01, False), (12.345, False), ("50", False)],
)
def test_rule_pass_percentage(dc: Configs, api: requests.Session, pct: Any, ok: bool) -> None:
    resp = api.post(DC, json=dc.body(rules=[rule(pct)]))
    if ok:
        assert resp.status_code == 201, resp.text
        assert resp.json()["data"]["rules"][0]["passPercentage"] == pct
    else:
        assert_error(resp, 400, "rules[0].passPercentage")


def test_rule_name_length(dc: Configs, api: requests.Session) -> None:
    dc.create(rules=[rule(1, name="r"), rule(1, name="r" * 100)])
    assert_error(api.post(DC, json=dc.body(rules=[rule(1, name="r" * 101)])), 400, "rules[0].name")
    assert_error(api.post(DC, json=dc.body(rules=[rule(1, name="")])), 400, "rules[0].name")


def test_rule_count_and_condition_count(dc: Configs, api: requests.Session) -> None:
    config = dc.create(rules=[rule(1, name=f"r{i}") for i in range(500)])
    assert len(config["rules"]) == 500
    assert_error(api.post(DC, json=dc.body(rules=[rule(1) for _ in range(501)])), 400, "rules")
    hundred = [country(f"C{i}") for i in range(100)]
    dc.create(rules=[rule(1, *hundred)])
    assert_error(api.post(DC, json=dc.body(rules=[rule(1, *hundred, country())])), 400, "rules[0].conditions")


def padded_json5(length: int) -> str:
    """A JSON5 object of exactly `length` characters, with a comment."""
    head, tail = "{/* c */ s: '", "'}"
    return head + "x" * (length - len(head) - len(tail)) + tail


@pytest.mark.parametrize("where", ["defaultValueJson5", "returnValueJson5", "variant"])
def test_json5_text_length_at_its_edge(dc: Configs, api: requests.Session, where: str) -> None:
    def body(text: str) -> dict[str, Any]:
        if where == "defaultValueJson5":
            return dc.body(defaultValueJson5=text)
        if where == "returnValueJson5":
            return dc.body(rules=[rule(1, returnValueJson5=text)])
        return dc.body(
            rules=[rule(1, variants=[{"name": "v", "passPercentage": 100, "returnValueJson5": text}])]
        )

    field = {
        "defaultValueJson5": "defaultValueJson5",
        "returnValueJson5": "rules[0].returnValueJson5",
        "variant": "rules[0].variants[0].returnValueJson5",
    }[where]
    inside = api.post(DC, json=body(padded_json5(MAX_TEXT)))
    assert inside.status_code == 201, inside.text[:500]
    assert_error(api.post(DC, json=body(padded_json5(MAX_TEXT + 1))), 400, field)


@pytest.mark.parametrize("field", ["schema", "schemaJson5"])
def test_schema_text_length_at_its_edge(dc: Configs, api: requests.Session, field: str) -> None:
    def schema_of(length: int) -> str:
        head, tail = '{"description": "', '"}'
        return head + "x" * (length - len(head) - len(tail)) + tail

    assert api.post(DC, json=dc.body(**{field: schema_of(MAX_TEXT)})).status_code == 201
    assert_error(api.post(DC, json=dc.body(**{field: schema_of(MAX_TEXT + 1)})), 400, field)


def test_nesting_depth_at_its_edge(dc: Configs, api: requests.Session) -> None:
    # nested(n) is n levels of objects; the value itself is level 1.
    dc.create(defaultValue=nested(MAX_DEPTH), rules=[rule(1, returnValue=nested(MAX_DEPTH))])
    too_deep_path = "defaultValue" + ".a" * MAX_DEPTH  # where the 33rd level starts
    assert_error(api.post(DC, json=dc.body(defaultValue=nested(MAX_DEPTH + 1))), 400, too_deep_path)
    resp = api.post(DC, json=dc.body(rules=[rule(1, returnValue=nested(MAX_DEPTH + 1))]))
    assert_error(resp, 400, "rules[0].returnValue" + ".a" * MAX_DEPTH)
    assert dc.create(defaultValueJson5=json.dumps(nested(MAX_DEPTH)))["defaultValue"] == nested(MAX_DEPTH)
    arrays = "{a: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "}"
    dc.create(defaultValueJson5=arrays)
    for text in (json.dumps(nested(MAX_DEPTH + 1)), "{a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"):
        body = assert_error(api.post(DC, json=dc.body(defaultValueJson5=text)), 400, "defaultValueJson5")
        assert "nests more than" in error_for(body, "defaultValueJson5")
    # Brackets inside strings and comments do not count.
    quoted = "{a: '" + "[" * 200 + "', /* " + "{" * 200 + " */}"
    assert dc.create(defaultValueJson5=quoted)["defaultValue"] == {"a": "[" * 200}
    very_deep = "[" * 5000 + "]" * 5000
    assert_error(api.post(DC, json=dc.body(schemaJson5=very_deep)), 400, "schemaJson5")


def test_stored_size_limit_at_its_edge(api: requests.Session) -> None:
    config_id = f"dc_{uid()}"

    def body(chars: int, description: str) -> dict[str, Any]:
        return {
            "name": "size edge",
            "id": config_id,
            "description": description,
            "defaultValue": {"v": "x" * chars},
        }

    probe = assert_error(api.post(DC, json=body(200_000, "d" * 10)), 413)
    found = re.search(r"take (\d+) bytes", probe["message"])
    assert found, probe
    excess = int(found.group(1)) - MAX_STORED
    # The value is stored twice (object and JSON5 text): one character less is two bytes less.
    chars, description = 200_000 - excess // 2, "d" * (10 - excess % 2)
    over = assert_error(api.post(DC, json=body(chars, description + "d")), 413)
    assert f"take {MAX_STORED + 1} bytes" in over["message"]
    resp = api.post(DC, json=body(chars, description))
    assert resp.status_code == 201, resp.text[:500]
    # At the limit it is stored and read back whole.
    assert api.get(f"{DC}/{config_id}").json()["data"]["defaultValue"]["v"] == "x" * chars


def test_json5_text_beyond_what_a_config_holds_is_refused_before_parsing(
    api: requests.Session, dc: Configs
) -> None:
    # Not JSON5 at all: a 400 shows it was parsed, a 413 that it was refused before.
    junk = "x" * MAX_TEXT
    fields = {"defaultValueJson5": junk, "schemaJson5": junk, "schema": junk}
    at_limit = dc.body(**fields, rules=[rule(1, returnValueJson5="x" * (MAX_STORED - 3 * MAX_TEXT))])
    assert_error(api.post(DC, json=at_limit), 400)
    over = dc.body(**fields, rules=[rule(1, returnValueJson5="x" * (MAX_STORED - 3 * MAX_TEXT + 1))])
    assert_error(api.post(DC, json=over), 413)
