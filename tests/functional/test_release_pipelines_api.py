"""In-process tests of the release pipeline endpoints: create, read, list and pagination, full update
(phase and rule ids kept), delete (refused while a gate or dynamic config uses the pipeline),
archive and unarchive, limits and auth.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_release_pipelines.py`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.e2e.client import assert_error, country, uid

PIPELINES = "/console/v1/release_pipelines"
GATES = "/console/v1/gates"
SEGMENTS = "/console/v1/segments"
DYNAMIC_CONFIGS = "/console/v1/dynamic_configs"


def prule(name: str = "rule", *conditions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": name, "conditions": list(conditions), **fields}


def phase(
    name: str = "phase", *rules: dict[str, Any], interval: int = 3_600_000, **fields: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "timeIntervalMs": interval,
        "requiredReview": False,
        "rules": list(rules) or [prule()],
        **fields,
    }


def create(api: Any, **fields: Any) -> dict[str, Any]:
    body = {"name": f"pipeline {uid()}", "phases": [phase()], **fields}
    resp = api.post(PIPELINES, json=body)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def read(api: Any, pipeline_id: str) -> dict[str, Any]:
    resp = api.get(f"{PIPELINES}/{pipeline_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def update(api: Any, pipeline_id: str, **body: Any) -> requests.Response:
    return api.post(f"{PIPELINES}/{pipeline_id}", json=body)


def listed_ids(api: Any, **params: Any) -> list[str]:
    """Every pipeline id the list shows, following nextPage to the end."""
    ids: list[str] = []
    resp = api.get(PIPELINES, params={"limit": 1000, **params})
    while True:
        assert resp.status_code == 200, resp.text
        body = resp.json()
        ids.extend(p["id"] for p in body["data"])
        if body["pagination"]["nextPage"] is None:
            return ids
        resp = api.get(body["pagination"]["nextPage"])


def create_gate(api: Any, **fields: Any) -> dict[str, Any]:
    suffix = uid()
    resp = api.post(GATES, json={"name": f"gate {suffix}", "id": f"gate_{suffix}", **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def test_create_without_phases_has_none(api: Any) -> None:
    resp = api.post(PIPELINES, json={"name": f"empty {uid()}"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["phases"] == []


def test_two_pipelines_with_one_name_get_different_ids(api: Any) -> None:
    name = f"twin {uid()}"
    first, second = create(api, name=name), create(api, name=name)
    assert first["id"] != second["id"]


def test_create_with_ids_is_400_as_there_is_nothing_to_keep(api: Any) -> None:
    body = {"name": f"p {uid()}", "phases": [phase(id="made_up")]}
    assert_error(api.post(PIPELINES, json=body), 400, "phases[0].id")
    body = {"name": f"p {uid()}", "phases": [phase("p", prule(id="made_up"))]}
    assert_error(api.post(PIPELINES, json=body), 400, "phases[0].rules[0].id")


# --- limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"name": "p"}, id="name-1-char"),
        pytest.param({"name": "n" * 100}, id="name-100-chars"),
        pytest.param({"name": "Pipeline #1 (web)"}, id="name-any-characters"),
        pytest.param({"phases": [phase(interval=0)]}, id="interval-0"),
        pytest.param({"phases": [phase(interval=10**13)]}, id="interval-large"),
        pytest.param({"phases": [phase("x")]}, id="phase-name-1-char"),
        pytest.param({"phases": [phase("p" * 100)]}, id="phase-name-100-chars"),
        pytest.param({"phases": [phase(str(i)) for i in range(100)]}, id="100-phases"),
        pytest.param({"phases": [phase("p", *[prule(f"r{i}") for i in range(500)])]}, id="500-rules"),
        pytest.param(
            {"phases": [phase("p", prule("r", *[country(str(i)) for i in range(100)]))]}, id="100-conditions"
        ),
        pytest.param({"phases": [phase("p", prule("r" * 100))]}, id="rule-name-100-chars"),
    ],
)
def test_values_just_inside_the_limits_are_accepted(api: Any, body: dict[str, Any]) -> None:
    pipeline = create(api, **body)
    if "name" in body:
        assert pipeline["name"] == body["name"]
    if "phases" in body:
        sent = body["phases"]
        assert [p["name"] for p in pipeline["phases"]] == [p["name"] for p in sent]
        assert [p["timeIntervalMs"] for p in pipeline["phases"]] == [p["timeIntervalMs"] for p in sent]
        assert [len(p["rules"]) for p in pipeline["phases"]] == [len(p["rules"]) for p in sent]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"name": ""}, "name", id="name-empty"),
        pytest.param({"name": "   "}, "name", id="name-blank"),
        pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
        pytest.param({"name": 5}, "name", id="name-number"),
        pytest.param({"phases": [phase(interval=-1)]}, "phases[0].timeIntervalMs", id="interval-negative"),
        pytest.param({"phases": [phase(interval=1.5)]}, "phases[0].timeIntervalMs", id="interval-fraction"),
        pytest.param({"phases": [phase(interval="5")]}, "phases[0].timeIntervalMs", id="interval-text"),
        pytest.param({"phases": [phase("")]}, "phases[0].name", id="phase-name-empty"),
        pytest.param({"phases": [phase("p" * 101)]}, "phases[0].name", id="phase-name-101-chars"),
        pytest.param({"phases": [phase(str(i)) for i in range(101)]}, "phases", id="101-phases"),
        pytest.param(
            {"phases": [phase("p", *[prule(f"r{i}") for i in range(501)])]}, "phases[0].rules", id="501-rules"
        ),
        pytest.param(
            {"phases": [phase("p", prule("r", *[country(str(i)) for i in range(101)]))]},
            "phases[0].rules[0].conditions",
            id="101-conditions",
        ),
        pytest.param(
            {"phases": [phase("p", prule("r" * 101))]}, "phases[0].rules[0].name", id="rule-name-101"
        ),
        pytest.param({"phases": [phase("p", prule(""))]}, "phases[0].rules[0].name", id="rule-name-empty"),
        pytest.param(
            {"phases": [{"name": "p", "timeIntervalMs": 0, "rules": []}]},
            "phases[0].requiredReview",
            id="required-review-missing",
        ),
        pytest.param(
            {"phases": [phase(requiredReview="true")]}, "phases[0].requiredReview", id="required-review-text"
        ),
        pytest.param(
            {"phases": [{"name": "p", "requiredReview": False, "rules": []}]},
            "phases[0].timeIntervalMs",
            id="interval-missing",
        ),
        pytest.param(
            {"phases": [phase("p", {"name": "r"})]}, "phases[0].rules[0].conditions", id="conditions-missing"
        ),
        pytest.param(
            {
                "phases": [
                    phase("p", prule("r", {"type": "country", "operator": "gt", "targetValue": ["US"]}))
                ]
            },
            "phases[0].rules[0].conditions[0].operator",
            id="operator-not-for-type",
        ),
        pytest.param(
            {"phases": [phase("p", prule("r", {"type": "country", "operator": "any", "targetValue": "US"}))]},
            "phases[0].rules[0].conditions[0].targetValue",
            id="list-operator-needs-array",
        ),
        pytest.param(
            {"phases": [phase("p", prule("r", {"type": "planet", "operator": "any", "targetValue": ["x"]}))]},
            "phases[0].rules[0].conditions[0].type",
            id="unknown-condition-type",
        ),
        pytest.param(
            {"phases": [phase("p", prule("r", environments="production"))]},
            "phases[0].rules[0].environments",
            id="environments-not-array",
        ),
        pytest.param(
            {"phases": [phase("p", prule("r", passPercentage=50))]},
            "phases[0].rules[0].passPercentage",
            id="rule-pass-percentage-unknown",
        ),
        pytest.param({"colour": "red"}, "colour", id="unknown-field"),
    ],
)
def test_values_just_outside_the_limits_are_400_naming_the_field(
    api: Any, body: dict[str, Any], field: str
) -> None:
    full = {"name": f"pipeline {uid()}", "phases": [phase()], **body}
    assert_error(api.post(PIPELINES, json=full), 400, field)


def test_name_is_required(api: Any) -> None:
    assert_error(api.post(PIPELINES, json={"phases": []}), 400, "name")


def test_conditions_naming_segments_and_gates_must_name_existing_ones(api: Any) -> None:
    missing = f"missing_{uid()}"
    for ctype in ("passes_segment", "fails_segment", "passes_gate", "fails_gate"):
        cond = {"type": ctype, "targetValue": missing}
        body = {"name": f"p {uid()}", "phases": [phase("a"), phase("b", prule("r", cond))]}
        err = assert_error(
            api.post(PIPELINES, json=body), 400, "phases[1].rules[0].conditions[0].targetValue"
        )
        assert missing in err["message"]
    suffix = uid()
    seg = api.post(SEGMENTS, json={"name": f"seg {suffix}", "type": "id_list"})
    assert seg.status_code == 201, seg.text
    gate = create_gate(api)
    conditions = [
        {"type": "passes_segment", "targetValue": seg.json()["data"]["id"]},
        {"type": "fails_gate", "targetValue": gate["id"]},
    ]
    pipeline = create(api, phases=[phase("p", prule("r", *conditions))])
    assert pipeline["phases"][0]["rules"][0]["conditions"] == conditions


# --- list and pagination ---------------------------------------------------------------------------


def test_list_shows_created_pipelines_in_pages(api: Any) -> None:
    made = [create(api)["id"] for _ in range(3)]
    resp = api.get(PIPELINES)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert isinstance(body["message"], str) and body["message"]
    pagination = body["pagination"]
    assert pagination["pageNumber"] == 1 and pagination["itemsPerPage"] == 100
    assert pagination["totalItems"] >= 3 and pagination["previousPage"] is None
    assert isinstance(pagination["all"], str)
    ids = listed_ids(api, limit=2)
    assert len(ids) == len(set(ids)), "a pipeline appeared on two pages"
    assert set(made) <= set(ids)
    resp = api.get(PIPELINES, params={"limit": 2, "page": 2})
    page = resp.json()["pagination"]
    assert page["pageNumber"] == 2 and page["itemsPerPage"] == 2
    assert len(resp.json()["data"]) <= 2
    assert parse_qs(urlsplit(page["previousPage"]).query) == {"page": ["1"], "limit": ["2"]}
    assert urlsplit(page["previousPage"]).path == PIPELINES


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"limit": "1"}, True),
        ({"limit": "1000"}, True),
        ({"page": "1"}, True),
        ({"limit": "0"}, False),
        ({"limit": "1001"}, False),
        ({"page": "0"}, False),
        ({"limit": "ten"}, False),
    ],
)
def test_list_limit_and_page_bounds(api: Any, params: dict[str, str], ok: bool) -> None:
    resp = api.get(PIPELINES, params=params)
    if ok:
        assert resp.status_code == 200, resp.text
        assert resp.json()["pagination"]["itemsPerPage"] == int(params.get("limit", 100))
    else:
        assert_error(resp, 400, next(iter(params)))


# --- update ------------------------------------------------------------------------------------------


def test_update_keeps_ids_sent_back_and_assigns_new_ones(api: Any) -> None:
    pipeline = create(api, phases=[phase("one", prule("a"), prule("b")), phase("two", prule("c"))])
    one, two = pipeline["phases"]
    a, b = one["rules"]
    [c] = two["rules"]
    phases = [
        {**two, "name": "two renamed", "rules": [c, {**a, "name": "a moved"}]},  # a moves to phase two
        phase("three", prule("d")),
        {**one, "rules": [b], "timeIntervalMs": 0, "requiredReview": True},
    ]
    resp = update(api, pipeline["id"], phases=phases)
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["name"] == pipeline["name"]  # kept when left out
    assert updated["version"] == 2
    assert updated["lastModifiedTime"] >= pipeline["lastModifiedTime"]
    assert updated["createdTime"] == pipeline["createdTime"]
    new_two, three, new_one = updated["phases"]
    assert (new_two["id"], new_two["name"]) == (two["id"], "two renamed")
    assert [(r["id"], r["name"]) for r in new_two["rules"]] == [(c["id"], "c"), (a["id"], "a moved")]
    assert three["id"] not in {one["id"], two["id"]}
    assert three["rules"][0]["id"] not in {a["id"], b["id"], c["id"]}
    assert new_one["id"] == one["id"] and [r["id"] for r in new_one["rules"]] == [b["id"]]
    assert (new_one["timeIntervalMs"], new_one["requiredReview"]) == (0, True)
    assert read(api, pipeline["id"]) == updated


def test_update_changes_the_name(api: Any) -> None:
    pipeline = create(api)
    resp = update(api, pipeline["id"], name="renamed pipeline", phases=pipeline["phases"])
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["name"] == "renamed pipeline"
    assert resp.json()["data"]["phases"] == pipeline["phases"]


def test_update_requires_phases(api: Any) -> None:
    pipeline = create(api)
    assert_error(update(api, pipeline["id"], name="only a name"), 400, "phases")
    assert read(api, pipeline["id"]) == pipeline


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(lambda ph: [{**ph[0], "id": "not_a_phase"}], "phases[0].id", id="unknown-phase-id"),
        pytest.param(lambda ph: [ph[0], ph[0]], "phases[1].id", id="phase-twice"),
        pytest.param(
            lambda ph: [{**ph[0], "rules": [{**ph[0]["rules"][0], "id": "not_a_rule"}]}],
            "phases[0].rules[0].id",
            id="unknown-rule-id",
        ),
        pytest.param(
            lambda ph: [{**ph[0], "rules": ph[0]["rules"] * 2}], "phases[0].rules[1].id", id="rule-twice"
        ),
        pytest.param(lambda ph: [{**ph[0], "timeIntervalMs": -1}], "phases[0].timeIntervalMs", id="negative"),
        pytest.param(lambda ph: None, "phases", id="phases-null"),
    ],
)
def test_failed_update_is_400_naming_the_field_and_changes_nothing(api: Any, mutate: Any, field: str) -> None:
    pipeline = create(api)
    assert_error(update(api, pipeline["id"], phases=mutate(pipeline["phases"])), 400, field)
    assert read(api, pipeline["id"]) == pipeline


def test_update_with_the_current_version_succeeds_and_a_stale_one_is_409(api: Any) -> None:
    pipeline = create(api)
    resp = update(api, pipeline["id"], phases=[], version=1)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["version"] == 2
    err = assert_error(update(api, pipeline["id"], phases=[phase("late")], version=1), 409)
    assert "version" in err["message"]
    assert read(api, pipeline["id"])["phases"] == []


def test_update_unknown_pipeline_is_404(api: Any) -> None:
    assert_error(update(api, f"nope_{uid()}", phases=[]), 404)


# --- delete ------------------------------------------------------------------------------------------


def test_delete_removes_the_pipeline(api: Any) -> None:
    pipeline = create(api)
    resp = api.delete(f"{PIPELINES}/{pipeline['id']}")
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    assert_error(api.get(f"{PIPELINES}/{pipeline['id']}"), 404)
    assert pipeline["id"] not in listed_ids(api, includeArchived="true")
    assert_error(api.delete(f"{PIPELINES}/{pipeline['id']}"), 404)


def test_delete_of_a_pipeline_a_gate_uses_is_409_naming_the_gate(api: Any) -> None:
    pipeline = create(api)
    gate = create_gate(api, releasePipelineID=pipeline["id"])
    err = assert_error(api.delete(f"{PIPELINES}/{pipeline['id']}"), 409)
    assert gate["id"] in err["message"]
    assert read(api, pipeline["id"]) == pipeline
    # An archived gate still counts: it could be unarchived.
    assert api.put(f"{GATES}/{gate['id']}/archive", json={}).status_code == 200
    assert_error(api.delete(f"{PIPELINES}/{pipeline['id']}"), 409)
    assert api.put(f"{GATES}/{gate['id']}/unarchive", json={}).status_code == 200
    resp = api.patch(f"{GATES}/{gate['id']}", json={"releasePipelineID": None})
    assert resp.status_code == 200, resp.text
    assert api.delete(f"{PIPELINES}/{pipeline['id']}").status_code == 200


def test_delete_of_a_pipeline_a_dynamic_config_uses_is_409_naming_it(api: Any) -> None:
    pipeline = create(api)
    config_id = f"config_{uid()}"
    resp = api.post(
        DYNAMIC_CONFIGS, json={"name": config_id, "id": config_id, "releasePipelineID": pipeline["id"]}
    )
    assert resp.status_code == 201, resp.text
    err = assert_error(api.delete(f"{PIPELINES}/{pipeline['id']}"), 409)
    assert config_id in err["message"]


# --- archive -----------------------------------------------------------------------------------------


def test_archive_and_unarchive(api: Any) -> None:
    pipeline = create(api)
    resp = api.put(f"{PIPELINES}/{pipeline['id']}/archive")
    assert resp.status_code == 200, resp.text
    archived = resp.json()["data"]
    assert archived["isArchived"] is True and archived["version"] == 2
    assert read(api, pipeline["id"]) == archived
    assert pipeline["id"] not in listed_ids(api)
    assert pipeline["id"] in listed_ids(api, includeArchived="true")
    assert_error(update(api, pipeline["id"], phases=[]), 400)
    assert_error(api.put(f"{PIPELINES}/{pipeline['id']}/archive"), 400)
    resp = api.put(f"{PIPELINES}/{pipeline['id']}/unarchive", json={"unarchiveReason": "back"})
    assert resp.status_code == 200, resp.text
    restored = resp.json()["data"]
    assert restored["isArchived"] is False and restored["version"] == 3
    assert restored["phases"] == pipeline["phases"]
    assert pipeline["id"] in listed_ids(api)
    assert_error(api.put(f"{PIPELINES}/{pipeline['id']}/unarchive"), 400)
    assert update(api, pipeline["id"], phases=[]).status_code == 200


def test_archive_of_a_used_pipeline_is_409_unless_forced(api: Any) -> None:
    pipeline = create(api)
    gate = create_gate(api, releasePipelineID=pipeline["id"])
    err = assert_error(api.put(f"{PIPELINES}/{pipeline['id']}/archive", json={"forceArchive": False}), 409)
    assert gate["id"] in err["message"]
    assert read(api, pipeline["id"])["isArchived"] is False
    resp = api.put(
        f"{PIPELINES}/{pipeline['id']}/archive", json={"forceArchive": True, "archiveReason": "done"}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["isArchived"] is True


def test_archive_body_is_validated(api: Any) -> None:
    pipeline = create(api)
    assert_error(
        api.put(f"{PIPELINES}/{pipeline['id']}/archive", json={"forceArchive": "yes"}), 400, "forceArchive"
    )
    assert_error(
        api.put(f"{PIPELINES}/{pipeline['id']}/archive", json={"archiveReason": "r" * 1001}),
        400,
        "archiveReason",
    )


@pytest.mark.parametrize("action", ["archive", "unarchive"])
def test_archive_actions_on_unknown_pipeline_are_404(api: Any, action: str) -> None:
    assert_error(api.put(f"{PIPELINES}/nope_{uid()}/{action}"), 404)
