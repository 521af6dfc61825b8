"""In-process tests of the holdout endpoints (create, list, read, full and partial update, delete,
archive, unarchive), every limit at its edge, and the holdout-experiment link kept on both sides
(`holdout.experimentIDs` and `experiment.holdoutIDs`), including under concurrent edits.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_holdouts.py`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.client import ApiClient, assert_error, uid

HOLDOUTS = "/console/v1/holdouts"
EXPERIMENTS = "/console/v1/experiments"
GATES = "/console/v1/gates"
LAYERS = "/console/v1/layers"


class Console(ApiClient):
    """The console client with helpers for this file's resources."""

    def _create(self, path: str, prefix: str, fields: dict[str, Any]) -> dict[str, Any]:
        suffix = uid()
        body = {"name": f"{prefix} {suffix}", "id": f"{prefix}_{suffix}", **fields}
        resp = self.post(path, json=body)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def create_holdout(self, **fields: Any) -> dict[str, Any]:
        return self._create(HOLDOUTS, "holdout", fields)

    def create_experiment(self, **fields: Any) -> dict[str, Any]:
        return self._create(EXPERIMENTS, "exp", fields)

    def create_gate(self) -> dict[str, Any]:
        return self._create(GATES, "gate", {})

    def create_layer(self, **fields: Any) -> dict[str, Any]:
        return self._create(LAYERS, "layer", {"idType": "userID", **fields})

    def _read(self, path: str) -> dict[str, Any]:
        resp = self.get(path)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def holdout(self, holdout_id: str) -> dict[str, Any]:
        return self._read(f"{HOLDOUTS}/{holdout_id}")

    def experiment(self, exp_id: str) -> dict[str, Any]:
        return self._read(f"{EXPERIMENTS}/{exp_id}")

    def list_holdouts(self, **params: Any) -> dict[str, Any]:
        resp = self.get(HOLDOUTS, params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()


@pytest.fixture(scope="module")
def console(app_api: ApiClient, app_ingest: ApiClient) -> Console:
    return Console(app_api.url, app_api.key, transport=app_api.transport)


def ids_of(listing: dict[str, Any]) -> set[str]:
    return {h["id"] for h in listing["data"]}


def full_body(**fields: Any) -> dict[str, Any]:
    """A full-update body: every field the full update requires, overridable."""
    return {
        "isEnabled": True,
        "description": "",
        "passPercentage": 0,
        "gateIDs": [],
        "experimentIDs": [],
        "layerIDs": [],
        "isGlobal": False,
        "targetingGateID": None,
        **fields,
    }


def assert_linked(console: Console, holdout_ids: list[str], exp_ids: list[str]) -> None:
    """For each pair: h in e.holdoutIDs iff e in h.experimentIDs."""
    holdouts = {h: console.holdout(h) for h in holdout_ids}
    experiments = {e: console.experiment(e) for e in exp_ids}
    for h, holdout in holdouts.items():
        for e, exp in experiments.items():
            assert (h in exp["holdoutIDs"]) == (e in holdout["experimentIDs"]), (
                h,
                holdout["experimentIDs"],
                e,
                exp["holdoutIDs"],
            )


def test_create_with_every_field(console: Console) -> None:
    gate, targeting = console.create_gate(), console.create_gate()
    layer = console.create_layer()
    exp = console.create_experiment()
    holdout = console.create_holdout(
        description="all of it",
        idType="stableID",
        isEnabled=False,
        isGlobal=True,
        passPercentage=5,
        gateIDs=[gate["id"]],
        experimentIDs=[exp["id"]],
        layerIDs=[layer["id"]],
        targetingGateID=targeting["id"],
        targetApps="web",
        tags=["a", "b"],
        team="Growth",
        teamID="team_1",
        monitoringMetrics=[{"name": "purchase", "type": "event_count"}],
        creatorEmail="me@example.com",
    )
    assert holdout["description"] == "all of it" and holdout["idType"] == "stableID"
    assert holdout["isEnabled"] is False and holdout["isGlobal"] is True
    assert holdout["passPercentage"] == 5
    assert holdout["gateIDs"] == [gate["id"]]
    assert holdout["experimentIDs"] == [exp["id"]]
    assert holdout["layerIDs"] == [layer["id"]]
    assert holdout["targetingGateID"] == targeting["id"]
    assert holdout["targetApps"] == ["web"]  # one string or a list: stored as a list
    assert holdout["tags"] == ["a", "b"] and holdout["team"] == "Growth" and holdout["teamID"] == "team_1"
    assert holdout["monitoringMetrics"] == [{"name": "purchase", "type": "event_count"}]
    assert holdout["creatorEmail"] == "me@example.com"
    assert console.experiment(exp["id"])["holdoutIDs"] == [holdout["id"]]
    assert console.holdout(holdout["id"]) == holdout


def test_empty_targeting_gate_means_none(console: Console) -> None:
    assert console.create_holdout(targetingGateID="")["targetingGateID"] == ""


def test_duplicate_id_is_409_and_keeps_the_first(console: Console) -> None:
    first = console.create_holdout(description="first")
    resp = console.post(HOLDOUTS, json={"name": "another one", "id": first["id"], "description": "second"})
    assert_error(resp, 409)
    assert console.holdout(first["id"]) == first
    name = f"Same Name {uid()}"
    assert console.post(HOLDOUTS, json={"name": name}).status_code == 201
    assert_error(console.post(HOLDOUTS, json={"name": name}), 409)


# --- limits -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "abc"}, id="name-3-chars"),
        pytest.param({"name": "n" * 100}, id="name-100-chars"),
        pytest.param({"name": "team_holdout-2 a"}, id="name-all-allowed-characters"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param({"passPercentage": 0}, id="pass-percentage-0"),
        pytest.param({"passPercentage": 100}, id="pass-percentage-100"),
        pytest.param({"passPercentage": 0.01}, id="pass-percentage-0.01"),
        pytest.param({"passPercentage": 99.99}, id="pass-percentage-99.99"),
        pytest.param({"tags": [f"t{i}" for i in range(100)]}, id="tags-100"),
    ],
)
def test_values_at_the_limits_are_accepted(console: Console, fields: dict[str, Any]) -> None:
    resp = console.post(HOLDOUTS, json={"name": f"limits {uid()}", **fields})
    assert resp.status_code == 201, resp.text
    holdout = resp.json()["data"]
    for key, value in fields.items():
        assert holdout[key] == value
    assert console.holdout(holdout["id"]) == holdout


@pytest.mark.parametrize("length", [3, 100])
def test_ids_of_3_and_100_characters_are_accepted(console: Console, length: int) -> None:
    holdout_id = ("x" + uid() + "-" * 100)[:length]  # unique within one session's server
    resp = console.post(HOLDOUTS, json={"name": f"id limits {uid()}", "id": holdout_id})
    assert resp.status_code == 201, resp.text
    assert console.holdout(holdout_id)["id"] == holdout_id


BAD_CREATES = [
    pytest.param({"name": "ab"}, "name", id="name-2-chars"),
    pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
    pytest.param({"name": "v1.2 holdout"}, "name", id="name-with-period"),
    pytest.param({"id": "ab"}, "id", id="id-2-chars"),
    pytest.param({"id": "i" * 101}, "id", id="id-101-chars"),
    pytest.param({"id": "has space"}, "id", id="id-with-space"),
    pytest.param({"description": "d" * 1001}, "description", id="description-1001-chars"),
    pytest.param({"passPercentage": -0.01}, "passPercentage", id="pass-percentage-below-0"),
    pytest.param({"passPercentage": 100.01}, "passPercentage", id="pass-percentage-above-100"),
    pytest.param({"passPercentage": 5.125}, "passPercentage", id="pass-percentage-3-decimals"),
    pytest.param({"passPercentage": "5"}, "passPercentage", id="pass-percentage-string"),
    pytest.param({"passPercentage": True}, "passPercentage", id="pass-percentage-boolean"),
    pytest.param({"isEnabled": "true"}, "isEnabled", id="is-enabled-string"),
    pytest.param({"isGlobal": 1}, "isGlobal", id="is-global-number"),
    pytest.param({"tags": [f"t{i}" for i in range(101)]}, "tags", id="tags-101"),
    pytest.param({"gateIDs": "gate"}, "gateIDs", id="gate-ids-not-a-list"),
    pytest.param({"gateIDs": [f"g{i}" for i in range(101)]}, "gateIDs", id="gate-ids-101"),
    pytest.param({"layerIDs": [f"l{i}" for i in range(101)]}, "layerIDs", id="layer-ids-101"),
    pytest.param({"experimentIDs": [f"e{i}" for i in range(50)]}, "experimentIDs", id="experiment-ids-50"),
    pytest.param({"gateIDs": [""]}, "gateIDs[0]", id="gate-id-empty"),
    pytest.param({"gateIDs": ["no_such_gate_anywhere"]}, "gateIDs[0]", id="unknown-gate"),
    pytest.param({"layerIDs": ["no_such_layer_anywhere"]}, "layerIDs[0]", id="unknown-layer"),
    pytest.param({"experimentIDs": ["no_such_experiment"]}, "experimentIDs[0]", id="unknown-experiment"),
    pytest.param(
        {"targetingGateID": "no_such_gate_anywhere"}, "targetingGateID", id="unknown-targeting-gate"
    ),
    pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
    pytest.param(
        {"monitoringMetrics": [{"name": "m"}]}, "monitoringMetrics[0].type", id="metric-without-type"
    ),
]


@pytest.mark.parametrize(("fields", "field"), BAD_CREATES)
def test_create_with_bad_input_is_400_naming_the_field(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    holdout_id = f"bad_{uid()}"
    resp = console.post(HOLDOUTS, json={"name": "valid name", "id": holdout_id, **fields})
    assert_error(resp, 400, field)
    assert_error(console.get(f"{HOLDOUTS}/{holdout_id}"), 404)  # nothing was stored


def test_a_reference_listed_twice_is_400_naming_the_repeat(console: Console) -> None:
    gate = console.create_gate()
    layer = console.create_layer()
    exp = console.create_experiment()
    for field, ref in (("gateIDs", gate["id"]), ("layerIDs", layer["id"]), ("experimentIDs", exp["id"])):
        resp = console.post(HOLDOUTS, json={"name": f"repeat {uid()}", field: [ref, ref]})
        assert_error(resp, 400, f"{field}[1]")
    assert console.experiment(exp["id"])["holdoutIDs"] == []


def test_100_gates_and_100_layers_are_accepted(console: Console) -> None:
    gates = [console.create_gate()["id"] for _ in range(100)]
    layers = [console.create_layer()["id"] for _ in range(100)]
    holdout = console.create_holdout(gateIDs=gates, layerIDs=layers)
    assert holdout["gateIDs"] == gates and holdout["layerIDs"] == layers
    path = f"{HOLDOUTS}/{holdout['id']}"
    assert_error(console.patch(path, json={"gateIDs": [*gates, "g101"]}), 400, "gateIDs")
    assert_error(console.patch(path, json={"layerIDs": [*layers, "l101"]}), 400, "layerIDs")
    assert console.holdout(holdout["id"]) == holdout


def test_a_holdout_holds_at_most_49_experiments_and_49_change_at_once(console: Console) -> None:
    experiments = [console.create_experiment()["id"] for _ in range(50)]
    holdout = console.create_holdout(experimentIDs=experiments[:49])  # 49 added at once: inside
    assert holdout["experimentIDs"] == experiments[:49]
    path = f"{HOLDOUTS}/{holdout['id']}"
    # One more would be 50: the list's limit.
    assert_error(console.patch(path, json={"experimentIDs": experiments}), 400, "experimentIDs")
    # Swapping all 49 for another is 50 changes in one request: outside.
    assert_error(console.patch(path, json={"experimentIDs": [experiments[49]]}), 400, "experimentIDs")
    assert console.holdout(holdout["id"]) == holdout
    assert console.experiment(experiments[49])["holdoutIDs"] == []
    # An experiment cannot join a full holdout from its side either.
    resp = console.patch(f"{EXPERIMENTS}/{experiments[49]}", json={"holdoutIDs": [holdout["id"]]})
    assert_error(resp, 400, "holdoutIDs[0]")
    # Removing 48 at once is fine, and so is deleting a holdout of 49 (49 + 1 entities).
    resp = console.patch(path, json={"experimentIDs": experiments[:1]})
    assert resp.status_code == 200, resp.text
    assert console.experiment(experiments[1])["holdoutIDs"] == []
    assert console.experiment(experiments[0])["holdoutIDs"] == [holdout["id"]]
    full = console.create_holdout(experimentIDs=experiments[1:50])
    assert console.delete(f"{HOLDOUTS}/{full['id']}").status_code == 200
    assert all(console.experiment(e)["holdoutIDs"] == [] for e in experiments[1:50])


# --- list ----------------------------------------------------------------------------------------------


def test_list_filters_by_tags_creator_name_and_creator_id(console: Console) -> None:
    tag, other = f"t-{uid()}", f"t-{uid()}"
    one = console.create_holdout(tags=[tag])
    two = console.create_holdout(tags=[other, tag], creatorID="someone_else")
    three = console.create_holdout(tags=[other])
    listing = console.list_holdouts(tags=tag)
    assert isinstance(listing["message"], str)
    assert ids_of(listing) == {one["id"], two["id"]}
    assert ids_of(console.list_holdouts(tags=[tag, other])) == {one["id"], two["id"], three["id"]}
    assert ids_of(console.list_holdouts(tags=f"{tag},{other}")) == {one["id"], two["id"], three["id"]}
    assert ids_of(console.list_holdouts(tags=tag, creatorID="someone_else")) == {two["id"]}
    assert ids_of(console.list_holdouts(tags=tag, creatorID=one["creatorID"])) == {one["id"]}
    assert ids_of(console.list_holdouts(tags=tag, creatorName="CONSOLE API")) == {one["id"], two["id"]}
    assert ids_of(console.list_holdouts(tags=tag, creatorName="Somebody")) == set()
    assert [h for h in listing["data"] if h["id"] == one["id"]] == [one]


def test_archived_holdouts_are_listed_only_when_asked_for(console: Console) -> None:
    tag = f"t-{uid()}"
    kept = console.create_holdout(tags=[tag])
    archived = console.create_holdout(tags=[tag])
    assert console.put(f"{HOLDOUTS}/{archived['id']}/archive").status_code == 200
    assert ids_of(console.list_holdouts(tags=tag)) == {kept["id"]}
    assert ids_of(console.list_holdouts(tags=tag, includeArchived="true")) == {kept["id"], archived["id"]}
    assert_error(console.get(HOLDOUTS, params={"includeArchived": "yes"}), 400, "includeArchived")


def test_pagination_walks_every_item_once_and_keeps_the_filters(console: Console) -> None:
    tag = f"t-{uid()}"
    created = {console.create_holdout(tags=[tag])["id"] for _ in range(5)}
    first = console.list_holdouts(tags=tag, limit=2)
    pagination = first["pagination"]
    assert pagination["totalItems"] == 5 and pagination["itemsPerPage"] == 2
    assert pagination["pageNumber"] == 1 and pagination["previousPage"] is None
    parts = urlsplit(pagination["nextPage"])
    assert parts.path == HOLDOUTS
    assert parse_qs(parts.query) == {"tags": [tag], "page": ["2"], "limit": ["2"]}
    seen = [h["id"] for h in first["data"]]
    link, pages = pagination["nextPage"], 1
    while link is not None:
        resp = console.get(link)
        assert resp.status_code == 200, resp.text
        page = resp.json()
        seen.extend(h["id"] for h in page["data"])
        link = page["pagination"]["nextPage"]
        pages += 1
        assert pages <= 3, "nextPage does not end"
    assert len(seen) == len(set(seen)) == 5 and set(seen) == created
    assert page["pagination"]["previousPage"] is not None


@pytest.mark.parametrize(
    ("params", "field"),
    [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"page": 0}, "page"), ({"limit": "ten"}, "limit")],
)
def test_bad_page_parameters_are_400(console: Console, params: dict[str, Any], field: str) -> None:
    assert_error(console.get(HOLDOUTS, params=params), 400, field)


def test_page_limits_at_the_edges(console: Console) -> None:
    tag = f"t-{uid()}"
    console.create_holdout(tags=[tag])
    assert len(console.list_holdouts(tags=tag, limit=1)["data"]) == 1
    assert console.list_holdouts(tags=tag, limit=1000)["pagination"]["itemsPerPage"] == 1000


# --- full update --------------------------------------------------------------------------------------


def test_full_update_requires_the_peers_fields(console: Console) -> None:
    holdout = console.create_holdout()
    path = f"{HOLDOUTS}/{holdout['id']}"
    body = assert_error(console.post(path, json={"name": "renamed"}), 400)
    required = {
        "isEnabled",
        "description",
        "passPercentage",
        "gateIDs",
        "experimentIDs",
        "layerIDs",
        "isGlobal",
        "targetingGateID",
    }
    assert {e["field"] for e in body["errors"]} == required
    for field in required:
        partial = {k: v for k, v in full_body().items() if k != field}
        assert_error(console.post(path, json=partial), 400, field)
    assert console.holdout(holdout["id"]) == holdout


def test_full_update_sets_every_field_and_bumps_the_version(console: Console) -> None:
    gate, layer, exp = console.create_gate(), console.create_layer(), console.create_experiment()
    holdout = console.create_holdout(tags=["keep"], description="before")
    resp = console.post(
        f"{HOLDOUTS}/{holdout['id']}",
        json=full_body(
            isEnabled=False,
            description="after",
            passPercentage=7.5,
            gateIDs=[gate["id"]],
            experimentIDs=[exp["id"]],
            layerIDs=[layer["id"]],
            isGlobal=True,
            targetingGateID=gate["id"],
        ),
    )
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    updated = resp.json()["data"]
    assert updated["isEnabled"] is False and updated["isGlobal"] is True
    assert updated["description"] == "after" and updated["passPercentage"] == 7.5
    assert updated["gateIDs"] == [gate["id"]] and updated["layerIDs"] == [layer["id"]]
    assert updated["experimentIDs"] == [exp["id"]] and updated["targetingGateID"] == gate["id"]
    assert updated["tags"] == ["keep"]  # not in the body: unchanged
    assert updated["version"] == holdout["version"] + 1
    assert updated["createdTime"] == holdout["createdTime"]
    assert updated["lastModifiedTime"] >= holdout["lastModifiedTime"]
    assert console.holdout(holdout["id"]) == updated
    assert console.experiment(exp["id"])["holdoutIDs"] == [holdout["id"]]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"passPercentage": 100.01}, "passPercentage", id="pass-percentage-above-100"),
        pytest.param({"passPercentage": -1}, "passPercentage", id="pass-percentage-negative"),
        pytest.param({"description": "d" * 1001}, "description", id="description-1001"),
        pytest.param({"gateIDs": ["no_such_gate_anywhere"]}, "gateIDs[0]", id="unknown-gate"),
        pytest.param({"experimentIDs": ["no_such_experiment"]}, "experimentIDs[0]", id="unknown-experiment"),
        pytest.param({"targetingGateID": "nope_no_gate"}, "targetingGateID", id="unknown-targeting-gate"),
    ],
)
def test_full_update_with_bad_input_is_400_and_changes_nothing(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    holdout = console.create_holdout()
    assert_error(console.post(f"{HOLDOUTS}/{holdout['id']}", json=full_body(**fields)), 400, field)
    assert console.holdout(holdout["id"]) == holdout


def test_full_update_of_unknown_holdout_is_404(console: Console) -> None:
    assert_error(console.post(f"{HOLDOUTS}/missing_{uid()}", json=full_body()), 404)


# --- partial update -------------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(console: Console) -> None:
    holdout = console.create_holdout(description="original", tags=["a"], passPercentage=3)
    resp = console.patch(f"{HOLDOUTS}/{holdout['id']}", json={"passPercentage": 4, "team": "Core"})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["passPercentage"] == 4 and patched["team"] == "Core"
    assert patched["version"] == 2
    untouched = {"name", "description", "tags", "isEnabled", "experimentIDs", "owner", "createdTime"}
    assert {k: patched[k] for k in untouched} == {k: holdout[k] for k in untouched}
    assert console.holdout(holdout["id"]) == patched


def test_patch_null_is_refused_where_a_value_is_required_and_clears_where_allowed(console: Console) -> None:
    gate = console.create_gate()
    holdout = console.create_holdout(targetingGateID=gate["id"], team="Core")
    path = f"{HOLDOUTS}/{holdout['id']}"
    for field in ("description", "passPercentage", "experimentIDs", "isEnabled"):
        assert_error(console.patch(path, json={field: None}), 400, field)
    resp = console.patch(path, json={"targetingGateID": None, "team": None})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["targetingGateID"] is None and resp.json()["data"]["team"] is None


def test_version_in_the_body_must_be_the_stored_one(console: Console) -> None:
    exp = console.create_experiment()
    holdout = console.create_holdout()
    path = f"{HOLDOUTS}/{holdout['id']}"
    assert console.patch(path, json={"description": "v2", "version": 1}).status_code == 200
    before = console.holdout(holdout["id"])
    # Based on version 1, now stale: 409, and neither side of the link changes.
    resp = console.patch(path, json={"experimentIDs": [exp["id"]], "version": 1})
    body = assert_error(resp, 409)
    assert [e["field"] for e in body.get("errors", [])] == ["version"]
    assert_error(console.post(path, json=full_body(experimentIDs=[exp["id"]], version=1)), 409)
    assert console.holdout(holdout["id"]) == before
    assert console.experiment(exp["id"]) == exp


def test_patch_unknown_holdout_is_404(console: Console) -> None:
    assert_error(console.patch(f"{HOLDOUTS}/missing_{uid()}", json={"description": "x"}), 404)


def test_an_experiment_in_two_holdouts_lists_both(console: Console) -> None:
    exp = console.create_experiment()
    first = console.create_holdout(experimentIDs=[exp["id"]])
    second = console.create_holdout()
    assert console.patch(f"{HOLDOUTS}/{second['id']}", json={"experimentIDs": [exp["id"]]}).status_code == 200
    assert console.experiment(exp["id"])["holdoutIDs"] == [first["id"], second["id"]]
    assert console.patch(f"{HOLDOUTS}/{first['id']}", json={"experimentIDs": []}).status_code == 200
    assert console.experiment(exp["id"])["holdoutIDs"] == [second["id"]]


def test_an_archived_experiment_cannot_join_but_can_leave(console: Console) -> None:
    exp = console.create_experiment()
    holdout = console.create_holdout(experimentIDs=[exp["id"]])
    assert console.put(f"{EXPERIMENTS}/{exp['id']}/archive").status_code == 200
    other = console.create_experiment()
    assert console.put(f"{EXPERIMENTS}/{other['id']}/archive").status_code == 200
    resp = console.post(HOLDOUTS, json={"name": f"archived {uid()}", "experimentIDs": [other["id"]]})
    assert_error(resp, 400, "experimentIDs[0]")
    path = f"{HOLDOUTS}/{holdout['id']}"
    assert_error(
        console.patch(path, json={"experimentIDs": [exp["id"], other["id"]]}), 400, "experimentIDs[1]"
    )
    assert console.patch(path, json={"experimentIDs": []}).status_code == 200
    assert console.experiment(exp["id"])["holdoutIDs"] == []
    assert console.experiment(exp["id"])["status"] == "archived"


# --- the link, from the experiment's side ----------------------------------------------------------------


def test_experiment_created_with_holdouts_joins_them(console: Console) -> None:
    first, second = console.create_holdout(), console.create_holdout()
    exp = console.create_experiment(holdoutIDs=[first["id"], second["id"]])
    assert exp["holdoutIDs"] == [first["id"], second["id"]]
    assert console.holdout(first["id"])["experimentIDs"] == [exp["id"]]
    assert console.holdout(first["id"])["version"] == 2
    assert console.holdout(second["id"])["experimentIDs"] == [exp["id"]]


def test_experiment_update_joins_and_leaves_holdouts(console: Console) -> None:
    first, second = console.create_holdout(), console.create_holdout()
    exp = console.create_experiment(holdoutIDs=[first["id"]])
    path = f"{EXPERIMENTS}/{exp['id']}"
    resp = console.patch(path, json={"holdoutIDs": [second["id"]], "description": "moved"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["holdoutIDs"] == [second["id"]]
    assert resp.json()["data"]["description"] == "moved"
    assert console.holdout(first["id"])["experimentIDs"] == []
    assert console.holdout(second["id"])["experimentIDs"] == [exp["id"]]
    # A full update carries holdoutIDs too.
    current = console.experiment(exp["id"])
    full = {
        k: current[k]
        for k in (
            "description",
            "idType",
            "hypothesis",
            "allocation",
            "targetingGateID",
            "bonferroniCorrection",
            "defaultConfidenceInterval",
            "status",
        )
    }
    full["groups"] = [{"name": g["name"], "size": g["size"]} for g in current["groups"]]
    resp = console.post(path, json={**full, "holdoutIDs": [first["id"], second["id"]]})
    assert resp.status_code == 200, resp.text
    assert console.holdout(first["id"])["experimentIDs"] == [exp["id"]]
    assert_linked(console, [first["id"], second["id"]], [exp["id"]])


@pytest.mark.parametrize(
    ("holdout_ids", "field"),
    [
        pytest.param(lambda h, a: [h, h], "holdoutIDs[1]", id="repeated"),
        pytest.param(lambda h, a: [h, f"missing_{uid()}"], "holdoutIDs[1]", id="unknown"),
        pytest.param(lambda h, a: [a], "holdoutIDs[0]", id="archived"),
    ],
)
def test_experiment_side_errors_change_nothing(console: Console, holdout_ids: Any, field: str) -> None:
    holdout = console.create_holdout()
    archived = console.create_holdout()
    assert console.put(f"{HOLDOUTS}/{archived['id']}/archive").status_code == 200
    ids = holdout_ids(holdout["id"], archived["id"])
    resp = console.post(EXPERIMENTS, json={"name": f"exp {uid()}", "holdoutIDs": ids})
    assert_error(resp, 400, field)
    exp = console.create_experiment()
    assert_error(console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"holdoutIDs": ids}), 400, field)
    assert console.experiment(exp["id"]) == exp
    assert console.holdout(holdout["id"])["experimentIDs"] == []


def test_experiment_side_stale_version_changes_neither_side(console: Console) -> None:
    holdout = console.create_holdout()
    exp = console.create_experiment()
    path = f"{EXPERIMENTS}/{exp['id']}"
    assert console.patch(path, json={"description": "v2"}).status_code == 200
    resp = console.patch(path, json={"holdoutIDs": [holdout["id"]], "version": exp["version"]})
    assert_error(resp, 409)
    assert console.holdout(holdout["id"]) == holdout
    assert console.experiment(exp["id"])["holdoutIDs"] == []


def test_experiment_side_49_holdouts_at_once_and_not_50(console: Console) -> None:
    holdouts = [console.create_holdout()["id"] for _ in range(50)]
    body = {"name": f"exp {uid()}", "holdoutIDs": holdouts}
    assert_error(console.post(EXPERIMENTS, json=body), 400, "holdoutIDs")
    assert all(console.holdout(h)["experimentIDs"] == [] for h in holdouts)
    exp = console.create_experiment(holdoutIDs=holdouts[:49])
    assert exp["holdoutIDs"] == holdouts[:49]
    assert all(console.holdout(h)["experimentIDs"] == [exp["id"]] for h in holdouts[:49])


def test_restart_as_new_keeps_the_holdouts_on_both_sides(console: Console) -> None:
    holdout = console.create_holdout()
    exp = console.create_experiment(holdoutIDs=[holdout["id"]])
    assert console.put(f"{EXPERIMENTS}/{exp['id']}/start").status_code == 200
    resp = console.post(f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={"name": f"again {uid()}"})
    assert resp.status_code == 201, resp.text
    again = resp.json()["data"]
    assert again["holdoutIDs"] == [holdout["id"]]
    assert console.holdout(holdout["id"])["experimentIDs"] == [exp["id"], again["id"]]


def test_experiment_delete_is_409_while_a_holdout_holds_it(console: Console) -> None:
    exp = console.create_experiment()
    holdout = console.create_holdout(experimentIDs=[exp["id"]])
    body = assert_error(console.delete(f"{EXPERIMENTS}/{exp['id']}"), 409)
    assert holdout["id"] in body["message"]
    assert console.patch(f"{HOLDOUTS}/{holdout['id']}", json={"experimentIDs": []}).status_code == 200
    assert console.delete(f"{EXPERIMENTS}/{exp['id']}").status_code == 200
    assert console.holdout(holdout["id"])["experimentIDs"] == []


# --- delete, archive, unarchive --------------------------------------------------------------------------


def test_delete_removes_the_holdout_from_its_experiments(console: Console) -> None:
    tag = f"t-{uid()}"
    one, two = console.create_experiment(), console.create_experiment()
    keep = console.create_holdout(experimentIDs=[one["id"]])
    holdout = console.create_holdout(tags=[tag], experimentIDs=[one["id"], two["id"]])
    resp = console.delete(f"{HOLDOUTS}/{holdout['id']}")
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(console.get(f"{HOLDOUTS}/{holdout['id']}"), 404)
    assert console.list_holdouts(tags=tag, includeArchived="true")["data"] == []
    assert console.experiment(one["id"])["holdoutIDs"] == [keep["id"]]
    assert console.experiment(two["id"])["holdoutIDs"] == []
    assert_error(console.delete(f"{HOLDOUTS}/{holdout['id']}"), 404)
    # The id can be used again, with a fresh history.
    again = console.post(HOLDOUTS, json={"name": "second life", "id": holdout["id"]})
    assert again.status_code == 201, again.text
    assert again.json()["data"]["version"] == 1 and again.json()["data"]["experimentIDs"] == []


def test_archive_detaches_experiments_and_freezes_the_holdout(console: Console) -> None:
    exp = console.create_experiment()
    gate = console.create_gate()
    holdout = console.create_holdout(experimentIDs=[exp["id"]], gateIDs=[gate["id"]])
    path = f"{HOLDOUTS}/{holdout['id']}"
    resp = console.put(f"{path}/archive", json={"archiveReason": "done"})
    assert resp.status_code == 200, resp.text
    archived = resp.json()["data"]
    assert archived["isArchived"] is True
    assert archived["experimentIDs"] == [] and archived["gateIDs"] == [gate["id"]]
    assert archived["version"] == holdout["version"] + 1
    assert console.experiment(exp["id"])["holdoutIDs"] == []
    assert console.holdout(holdout["id"]) == archived
    assert_error(console.put(f"{path}/archive"), 400)  # already archived
    assert_error(console.patch(path, json={"description": "changed"}), 400)
    assert_error(console.post(path, json=full_body()), 400)
    assert console.holdout(holdout["id"]) == archived
    resp = console.put(f"{path}/unarchive")
    assert resp.status_code == 200, resp.text
    restored = resp.json()["data"]
    assert restored["isArchived"] is False and restored["experimentIDs"] == []
    assert_error(console.put(f"{path}/unarchive"), 400)  # not archived
    assert console.patch(path, json={"experimentIDs": [exp["id"]]}).status_code == 200
    assert console.experiment(exp["id"])["holdoutIDs"] == [holdout["id"]]


def test_an_archived_holdout_can_be_deleted(console: Console) -> None:
    holdout = console.create_holdout()
    assert console.put(f"{HOLDOUTS}/{holdout['id']}/archive", json={}).status_code == 200
    assert console.delete(f"{HOLDOUTS}/{holdout['id']}").status_code == 200
    assert_error(console.get(f"{HOLDOUTS}/{holdout['id']}"), 404)


@pytest.mark.parametrize("action", ["archive", "unarchive"])
def test_lifecycle_of_unknown_holdout_is_404(console: Console, action: str) -> None:
    assert_error(console.put(f"{HOLDOUTS}/missing_{uid()}/{action}"), 404)


def test_archive_body_is_validated(console: Console) -> None:
    holdout = console.create_holdout()
    path = f"{HOLDOUTS}/{holdout['id']}/archive"
    assert_error(console.put(path, json={"archiveReason": "r" * 1001}), 400, "archiveReason")
    assert_error(console.put(path, json={"colour": "red"}), 400, "colour")
    assert console.holdout(holdout["id"])["isArchived"] is False
    assert console.put(path, json={"archiveReason": "r" * 1000}).status_code == 200


def test_a_gate_a_holdout_uses_cannot_be_deleted(console: Console) -> None:
    gate = console.create_gate()
    holdout = console.create_holdout(gateIDs=[gate["id"]])
    assert_error(console.delete(f"{GATES}/{gate['id']}"), 409)
    assert console.patch(f"{HOLDOUTS}/{holdout['id']}", json={"gateIDs": []}).status_code == 200
    assert console.delete(f"{GATES}/{gate['id']}").status_code == 200
