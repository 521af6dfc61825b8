"""In-process tests of the segment endpoints: create (type fixed at creation), read, list and
pagination, rules of rule_based segments (POST /conditional), ids of id_list segments
(GET/PATCH/DELETE /id_list: paged, 1 to 1000 ids a request, deduplicated, stored outside the
segment's item), delete and archive (refused while a gate, pipeline or segment names the segment),
limits and auth.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_segments.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error, country, rule, uid

SEGMENTS = "/console/v1/segments"
GATES = "/console/v1/gates"
PIPELINES = "/console/v1/release_pipelines"


def passes(segment_id: str) -> dict[str, Any]:
    return {"type": "passes_segment", "targetValue": segment_id}


def create(api: Any, kind: str = "id_list", **fields: Any) -> dict[str, Any]:
    suffix = uid()
    body = {"name": f"segment {suffix}", "id": f"seg_{suffix}", "type": kind, **fields}
    resp = api.post(SEGMENTS, json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def read(api: Any, segment_id: str) -> dict[str, Any]:
    resp = api.get(f"{SEGMENTS}/{segment_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def add_ids(api: Any, segment_id: str, ids: Any) -> requests.Response:
    return api.patch(f"{SEGMENTS}/{segment_id}/id_list", json={"ids": ids})


def remove_ids(api: Any, segment_id: str, ids: Any) -> requests.Response:
    return api.delete(f"{SEGMENTS}/{segment_id}/id_list", json={"ids": ids})


def set_rules(api: Any, segment_id: str, body: Any) -> requests.Response:
    return api.post(f"{SEGMENTS}/{segment_id}/conditional", json=body)


def all_ids(api: Any, segment_id: str, limit: int = 1000) -> list[str]:
    """Every id of the list, following nextPage to the end."""
    ids: list[str] = []
    resp = api.get(f"{SEGMENTS}/{segment_id}/id_list", params={"limit": limit})
    while True:
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["data"]["count"] == body["pagination"]["totalItems"]
        ids.extend(body["data"]["ids"])
        if body["pagination"]["nextPage"] is None:
            return ids
        resp = api.get(body["pagination"]["nextPage"])


def listed_ids(api: Any, **params: Any) -> list[str]:
    ids: list[str] = []
    resp = api.get(SEGMENTS, params={"limit": 1000, **params})
    while True:
        assert resp.status_code == 200, resp.text
        body = resp.json()
        ids.extend(s["id"] for s in body["data"])
        if body["pagination"]["nextPage"] is None:
            return ids
        resp = api.get(body["pagination"]["nextPage"])


def create_gate(api: Any, *conditions: dict[str, Any]) -> dict[str, Any]:
    suffix = uid()
    body = {"name": f"gate {suffix}", "id": f"gate_{suffix}", "rules": [rule(10, *conditions)]}
    resp = api.post(GATES, json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def test_create_id_list_segment(api: Any) -> None:
    segment = create(api, "id_list", idType="stableID", description="vips")
    assert segment["type"] == "id_list"
    assert segment["count"] == 0
    assert "rules" not in segment
    assert segment["idType"] == "stableID"
    body = api.get(f"{SEGMENTS}/{segment['id']}/id_list").json()
    assert body["data"] == {"name": segment["name"], "count": 0, "ids": []}
    assert body["pagination"]["totalItems"] == 0


def test_create_duplicate_id_is_409(api: Any) -> None:
    first = create(api)
    resp = api.post(SEGMENTS, json={"name": "another", "id": first["id"], "type": "rule_based"})
    assert_error(resp, 409)
    assert read(api, first["id"]) == first


# --- limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "abc"}, id="name-3-chars"),
        pytest.param({"name": "n" * 100}, id="name-100-chars"),
        pytest.param({"name": "New_users - 2"}, id="name-every-allowed-character"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param({"idType": "i" * 100}, id="id-type-100-chars"),
    ],
)
def test_values_just_inside_the_limits_are_accepted(api: Any, fields: dict[str, Any]) -> None:
    segment = create(api, **fields)
    for key, value in fields.items():
        assert segment[key] == value


@pytest.mark.parametrize("length", [3, 100])
def test_ids_at_the_length_limits_are_accepted(api: Any, length: int) -> None:
    segment_id = (uid() * 9)[:length]
    resp = api.post(SEGMENTS, json={"name": "any name", "id": segment_id, "type": "id_list"})
    assert resp.status_code == 201, resp.text
    assert read(api, segment_id)["id"] == segment_id


def test_rule_count_at_the_limit_is_accepted(api: Any) -> None:
    segment = create(api, "rule_based", rules=[rule(1, name=f"r{i}") for i in range(500)])
    assert len(segment["rules"]) == 500


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"name": "ab"}, "name", id="name-2-chars"),
        pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
        pytest.param({"name": "v1.2 users"}, "name", id="name-period"),
        pytest.param({"id": "ab"}, "id", id="id-2-chars"),
        pytest.param({"id": "i" * 101}, "id", id="id-101-chars"),
        pytest.param({"id": "has space"}, "id", id="id-space"),
        pytest.param({"id": "has.period"}, "id", id="id-period"),
        pytest.param({"description": "d" * 1001}, "description", id="description-1001-chars"),
        pytest.param({"type": "analysis_list"}, "type", id="type-unsupported"),
        pytest.param({"type": None}, "type", id="type-null"),
        pytest.param({"idType": ""}, "idType", id="id-type-empty"),
        pytest.param({"tags": "a"}, "tags", id="tags-not-array"),
        pytest.param({"type": "id_list", "rules": [rule()]}, "rules", id="rules-on-id-list"),
        pytest.param(
            {"type": "rule_based", "rules": [rule(1, name=f"r{i}") for i in range(501)]},
            "rules",
            id="501-rules",
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(100.5)]}, "rules[0].passPercentage", id="pct-over-100"
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(-1)]}, "rules[0].passPercentage", id="pct-negative"
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(12.345)]}, "rules[0].passPercentage", id="pct-3-decimals"
        ),
        pytest.param(
            {
                "type": "rule_based",
                "rules": [rule(5, {"type": "country", "operator": "gt", "targetValue": 5})],
            },
            "rules[0].conditions[0].operator",
            id="operator-not-for-type",
        ),
        pytest.param(
            {
                "type": "rule_based",
                "rules": [rule(5, {"type": "custom_field", "operator": "any", "targetValue": ["x"]})],
            },
            "rules[0].conditions[0].field",
            id="custom-field-needs-field",
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(5, {"type": "passes_gate", "targetValue": "some_gate"})]},
            "rules[0].conditions[0].type",
            id="gate-condition-refused",
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(5, passes("missing_segment_x"))]},
            "rules[0].conditions[0].targetValue",
            id="unknown-segment",
        ),
        pytest.param(
            {"type": "rule_based", "rules": [rule(5, id="made_up")]}, "rules[0].id", id="rule-id-on-create"
        ),
        pytest.param({"colour": "red"}, "colour", id="unknown-field"),
    ],
)
def test_values_just_outside_the_limits_are_400_naming_the_field(
    api: Any, fields: dict[str, Any], field: str
) -> None:
    suffix = uid()
    body = {"name": f"segment {suffix}", "id": f"seg_{suffix}", "type": "rule_based", **fields}
    assert_error(api.post(SEGMENTS, json=body), 400, field)
    assert_error(api.get(f"{SEGMENTS}/{body.get('id') or f'seg_{suffix}'}"), 404)


def test_type_and_name_are_required(api: Any) -> None:
    assert_error(api.post(SEGMENTS, json={"name": f"no type {uid()}"}), 400, "type")
    assert_error(api.post(SEGMENTS, json={"type": "id_list"}), 400, "name")


# --- list ----------------------------------------------------------------------------------------


def test_list_shows_created_segments_in_pages(api: Any) -> None:
    made = [create(api, kind)["id"] for kind in ("id_list", "rule_based", "id_list")]
    resp = api.get(SEGMENTS)
    assert resp.status_code == 200, resp.text
    pagination = resp.json()["pagination"]
    assert pagination["pageNumber"] == 1 and pagination["itemsPerPage"] == 100
    assert pagination["totalItems"] >= 3
    ids = listed_ids(api, limit=2)
    assert len(ids) == len(set(ids)), "a segment appeared on two pages"
    assert set(made) <= set(ids)
    assert_error(api.get(SEGMENTS, params={"limit": "1001"}), 400, "limit")
    assert api.get(SEGMENTS, params={"limit": "1000"}).status_code == 200


# --- rules ---------------------------------------------------------------------------------------


def test_conditional_sets_the_rules_keeping_ids_sent_back(api: Any) -> None:
    segment = create(api, "rule_based", rules=[rule(10, country("CA"), name="a"), rule(20, name="b")])
    a, b = segment["rules"]
    new_rules = [{**b, "passPercentage": 30}, rule(40, country("FR"), name="c")]
    resp = set_rules(api, segment["id"], new_rules)
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["version"] == 2
    first, second = updated["rules"]
    assert (first["id"], first["baseID"], first["passPercentage"]) == (b["id"], b["baseID"], 30)
    assert second["name"] == "c" and second["id"] not in {a["id"], b["id"]}
    assert read(api, segment["id"]) == updated


def test_conditional_accepts_a_rules_object_and_an_empty_array(api: Any) -> None:
    segment = create(api, "rule_based")
    resp = set_rules(api, segment["id"], {"rules": [rule(5, country("DE"))]})
    assert resp.status_code == 200, resp.text
    assert [r["conditions"] for r in resp.json()["data"]["rules"]] == [[country("DE")]]
    resp = set_rules(api, segment["id"], [])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["rules"] == []


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        pytest.param([rule(101)], "[0].passPercentage", id="pct-101"),
        pytest.param([rule(5), {"name": "r", "conditions": []}], "[1].passPercentage", id="pct-missing"),
        pytest.param(
            [rule(5, {"type": "email", "operator": "any", "targetValue": []})],
            "[0].conditions[0].targetValue",
            id="empty-list",
        ),
        pytest.param(
            [rule(5, {"type": "fails_gate", "targetValue": "g"})], "[0].conditions[0].type", id="gate-refused"
        ),
        pytest.param(
            [rule(5, passes("missing_segment_y"))], "[0].conditions[0].targetValue", id="unknown-segment"
        ),
        pytest.param([rule(5, id="not_a_rule")], "[0].id", id="unknown-rule-id"),
        pytest.param([rule(1, name=f"r{i}") for i in range(501)], "body", id="501-rules"),
        pytest.param({"rules": "none"}, "body", id="rules-not-array"),
        pytest.param({"name": "r"}, "body", id="one-rule-not-in-an-array"),
    ],
)
def test_conditional_with_bad_rules_is_400_naming_the_field(api: Any, rules: Any, field: str) -> None:
    segment = create(api, "rule_based", rules=[rule(5)])
    assert_error(set_rules(api, segment["id"], rules), 400, field)
    assert read(api, segment["id"]) == segment


def test_conditional_with_500_rules_is_accepted(api: Any) -> None:
    segment = create(api, "rule_based")
    resp = set_rules(api, segment["id"], [rule(1, name=f"r{i}") for i in range(500)])
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["data"]["rules"]) == 500


def test_segment_conditions_name_other_segments_without_cycles(api: Any) -> None:
    base = create(api, "id_list")
    middle = create(api, "rule_based", rules=[rule(100, passes(base["id"]))])
    top = create(api, "rule_based", rules=[rule(100, {"type": "fails_segment", "targetValue": middle["id"]})])
    assert_error(
        set_rules(api, middle["id"], [rule(100, passes(middle["id"]))]), 400, "[0].conditions[0].targetValue"
    )
    err = assert_error(
        set_rules(api, middle["id"], [rule(5), rule(100, country("US"), passes(top["id"]))]),
        400,
        "[1].conditions[1].targetValue",
    )
    assert "cycle" in err["message"] and top["id"] in err["message"]
    assert read(api, middle["id"]) == middle


def test_conditional_on_an_id_list_segment_is_400(api: Any) -> None:
    segment = create(api, "id_list")
    err = assert_error(set_rules(api, segment["id"], [rule(5)]), 400)
    assert "id_list" in err["message"]
    assert read(api, segment["id"]) == segment


def test_conditional_on_unknown_segment_is_404(api: Any) -> None:
    assert_error(set_rules(api, f"nope_{uid()}", [rule(5)]), 404)


def test_id_list_pages(api: Any) -> None:
    segment = create(api, "id_list")
    ids = [f"user_{i:02d}" for i in range(25)]
    assert add_ids(api, segment["id"], ids).status_code == 200
    first = api.get(f"{SEGMENTS}/{segment['id']}/id_list", params={"limit": 10}).json()
    assert first["data"]["ids"] == ids[:10] and first["data"]["count"] == 25
    assert first["pagination"]["nextPage"] == f"{SEGMENTS}/{segment['id']}/id_list?page=2&limit=10"
    third = api.get(f"{SEGMENTS}/{segment['id']}/id_list", params={"limit": 10, "page": 3}).json()
    assert third["data"]["ids"] == ids[20:] and third["pagination"]["nextPage"] is None
    assert all_ids(api, segment["id"], limit=7) == ids
    assert_error(api.get(f"{SEGMENTS}/{segment['id']}/id_list", params={"limit": 1001}), 400, "limit")
    assert_error(api.get(f"{SEGMENTS}/{segment['id']}/id_list", params={"page": 0}), 400, "page")


def test_a_list_larger_than_one_item_holds(api: Any) -> None:
    """3000 ids of 200 characters: 600 KB of ids, more than a DynamoDB item (400 KB) holds."""
    segment = create(api, "id_list")
    ids = [f"{i:05d}" + "x" * 195 for i in range(3000)]
    for start in range(0, 3000, 1000):
        resp = add_ids(api, segment["id"], ids[start : start + 1000])
        assert resp.status_code == 200, resp.text
    assert read(api, segment["id"])["count"] == 3000
    assert all_ids(api, segment["id"]) == ids
    resp = remove_ids(api, segment["id"], ids[:1000])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["count"] == 2000


def test_1000_ids_a_request_pass_and_1001_are_400(api: Any) -> None:
    segment = create(api, "id_list")
    resp = add_ids(api, segment["id"], [f"id{i}" for i in range(1000)])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["count"] == 1000
    assert_error(add_ids(api, segment["id"], [f"new{i}" for i in range(1001)]), 400, "ids")
    assert_error(remove_ids(api, segment["id"], [f"id{i}" for i in range(1001)]), 400, "ids")
    assert read(api, segment["id"])["count"] == 1000
    resp = remove_ids(api, segment["id"], [f"id{i}" for i in range(1000)])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["count"] == 0


def test_1000_ids_with_repeats_count_once(api: Any) -> None:
    segment = create(api, "id_list")
    resp = add_ids(api, segment["id"], [f"id{i % 10}" for i in range(1000)])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["count"] == 10


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"ids": []}, "ids"),
        ({"ids": [""]}, "ids[0]"),
        ({"ids": ["ok", "i" * 257]}, "ids[1]"),
        ({"ids": [5]}, "ids[0]"),
        ({"ids": "u1"}, "ids"),
        ({}, "ids"),
        ({"ids": ["a"], "version": 1}, "version"),
    ],
)
@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
def test_bad_id_bodies_are_400_naming_the_field(
    api: Any, method: str, body: dict[str, Any], field: str
) -> None:
    segment = create(api, "id_list")
    assert add_ids(api, segment["id"], ["keep"]).status_code == 200
    assert_error(api.request(method, f"{SEGMENTS}/{segment['id']}/id_list", json=body), 400, field)
    assert all_ids(api, segment["id"]) == ["keep"]


def test_an_id_of_256_characters_is_accepted(api: Any) -> None:
    segment = create(api, "id_list")
    long_id = "i" * 256
    assert add_ids(api, segment["id"], [long_id]).status_code == 200
    assert all_ids(api, segment["id"]) == [long_id]


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_id_list_endpoints_on_a_rule_based_segment_are_400(api: Any, method: str) -> None:
    segment = create(api, "rule_based")
    body = None if method == "GET" else {"ids": ["u1"]}
    err = assert_error(api.request(method, f"{SEGMENTS}/{segment['id']}/id_list", json=body), 400)
    assert "rule_based" in err["message"]
    assert read(api, segment["id"]) == segment


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_id_list_endpoints_on_unknown_segment_are_404(api: Any, method: str) -> None:
    body = None if method == "GET" else {"ids": ["u1"]}
    assert_error(api.request(method, f"{SEGMENTS}/nope_{uid()}/id_list", json=body), 404)


# --- delete and archive ----------------------------------------------------------------------------


def test_delete_removes_the_segment_and_its_ids(api: Any) -> None:
    segment = create(api, "id_list")
    assert add_ids(api, segment["id"], ["a", "b"]).status_code == 200
    resp = api.delete(f"{SEGMENTS}/{segment['id']}")
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(api.get(f"{SEGMENTS}/{segment['id']}"), 404)
    assert_error(api.get(f"{SEGMENTS}/{segment['id']}/id_list"), 404)
    assert_error(api.delete(f"{SEGMENTS}/{segment['id']}"), 404)
    # Created again under the same id, it starts empty.
    resp = api.post(SEGMENTS, json={"name": segment["name"], "id": segment["id"], "type": "id_list"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["count"] == 0 and resp.json()["data"]["version"] == 1
    assert all_ids(api, segment["id"]) == []


def test_gates_may_only_name_existing_segments(api: Any) -> None:
    missing = f"missing_{uid()}"
    resp = api.post(GATES, json={"name": f"g {uid()}", "rules": [rule(5, passes(missing))]})
    assert_error(resp, 400, "rules[0].conditions[0].targetValue")
    segment = create(api, "id_list")
    gate = create_gate(api, passes(segment["id"]))
    assert gate["rules"][0]["conditions"] == [passes(segment["id"])]


def test_delete_or_archive_of_a_segment_a_gate_uses_is_409_naming_it(api: Any) -> None:
    segment = create(api, "rule_based")
    gate = create_gate(api, country("US"), {"type": "fails_segment", "targetValue": segment["id"]})
    for resp in (api.delete(f"{SEGMENTS}/{segment['id']}"), api.put(f"{SEGMENTS}/{segment['id']}/archive")):
        err = assert_error(resp, 409)
        assert gate["id"] in err["message"]
    assert read(api, segment["id"]) == segment
    assert api.delete(f"{GATES}/{gate['id']}").status_code == 200
    assert api.delete(f"{SEGMENTS}/{segment['id']}").status_code == 200


def test_delete_of_a_segment_a_pipeline_or_segment_uses_is_409_naming_them(api: Any) -> None:
    segment = create(api, "id_list")
    user = create(api, "rule_based", rules=[rule(50, passes(segment["id"]))])
    phase = {
        "name": "p",
        "timeIntervalMs": 0,
        "requiredReview": False,
        "rules": [{"name": "r", "conditions": [passes(segment["id"])]}],
    }
    resp = api.post(PIPELINES, json={"name": f"pipeline {uid()}", "phases": [phase]})
    assert resp.status_code == 201, resp.text
    pipeline = resp.json()["data"]
    err = assert_error(api.delete(f"{SEGMENTS}/{segment['id']}"), 409)
    assert user["id"] in err["message"] and pipeline["id"] in err["message"]


def test_archive_of_a_used_segment_with_force_archive_succeeds(api: Any) -> None:
    segment = create(api, "id_list")
    create_gate(api, passes(segment["id"]))
    resp = api.put(
        f"{SEGMENTS}/{segment['id']}/archive", json={"forceArchive": True, "archiveReason": "done"}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["isArchived"] is True


def test_archive(api: Any) -> None:
    segment = create(api, "id_list")
    assert add_ids(api, segment["id"], ["a"]).status_code == 200
    resp = api.put(f"{SEGMENTS}/{segment['id']}/archive")
    assert resp.status_code == 200, resp.text
    archived = resp.json()["data"]
    assert archived["isArchived"] is True and archived["version"] == 3
    assert read(api, segment["id"]) == archived
    assert segment["id"] not in listed_ids(api)
    assert segment["id"] in listed_ids(api, includeArchived="true")
    assert all_ids(api, segment["id"]) == ["a"]  # still readable
    assert_error(add_ids(api, segment["id"], ["b"]), 400)
    assert_error(remove_ids(api, segment["id"], ["a"]), 400)
    assert_error(api.put(f"{SEGMENTS}/{segment['id']}/archive"), 400)
    assert all_ids(api, segment["id"]) == ["a"]
    rule_based = create(api, "rule_based")
    assert api.put(f"{SEGMENTS}/{rule_based['id']}/archive").status_code == 200
    assert_error(set_rules(api, rule_based["id"], [rule(5)]), 400)
    # An archived segment that nothing uses can be deleted.
    assert api.delete(f"{SEGMENTS}/{segment['id']}").status_code == 200


def test_archive_unknown_segment_is_404(api: Any) -> None:
    assert_error(api.put(f"{SEGMENTS}/nope_{uid()}/archive"), 404)
