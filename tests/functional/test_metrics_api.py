"""In-process tests of the metric endpoints: create (and dry run) every type, the definition rules per
type, limits at their edges, built-ins, reads by URL-encoded id, updates, versions, the archive
states, delete and what blocks it, lists with their filters and pagination, experiments using a
metric, and auth.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_metrics.py`. Experiments are written straight into the table (the document shape the
experiments service stores), so these tests do not depend on the experiments API; archive effects
run with a grace period of 0 (`METRIC_ARCHIVE_GRACE_SECONDS`).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import boto3
import pytest
import requests

from tests.e2e.client import ApiClient, Transport, assert_error
from tests.functional.lambdas import STORE_TABLE

METRICS = "/console/v1/metrics"
DAY_MS = 24 * 3600 * 1000

CONTRACT_FIELDS = {
    "id",
    "name",
    "directionality",
    "type",
    "description",
    "isPermanent",
    "isReadOnly",
    "isHidden",
    "isVerified",
    "tags",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "owner",
    "lineage",
    "team",
    "unitTypes",
    "permalink",
}
BOOKKEEPING_FIELDS = {
    "version",
    "teamID",
    "creatorID",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
    "isArchived",
    "scheduledArchiveTime",
}


def uid() -> str:
    return uuid.uuid4().hex[:10]


def path_of(metric_id: str) -> str:
    return f"{METRICS}/{quote(metric_id, safe='')}"


# --- bodies ---------------------------------------------------------------------------------------


def event(name: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"name": f"purchase_{uid()}" if name is None else name, **fields}


def crit(condition: str, values: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "metadata", "column": "sku", "condition": condition, **fields}
    if values is not None:
        out["values"] = values
    return out


def builtin_ref(metric_type: str = "event_count", name: str | None = None) -> dict[str, str]:
    return {"name": name or f"ev_{uid()}", "type": metric_type}


def body_for(metric_type: str, name: str | None = None, **fields: Any) -> dict[str, Any]:
    """A valid create body of a type (fields override)."""
    definition: dict[str, Any] = {
        "sum": {"metricEvents": [event()]},
        "event_count_custom": {"metricEvents": [event(type="count")]},
        "event_user": {"metricEvents": [event()]},
        "ratio": {"metricComponentMetrics": [builtin_ref("event_count"), builtin_ref("event_dau")]},
        "composite_sum": {"metricComponentMetrics": [builtin_ref(), builtin_ref()]},
        "funnel": {
            "funnelEventList": [
                {"name": f"view_{uid()}", "type": "event_dau"},
                {"name": f"buy_{uid()}", "type": "event_count"},
            ]
        },
    }.get(metric_type, {})
    return {"name": name or f"{metric_type} {uid()}", "type": metric_type, **definition, **fields}


class Metrics:
    """The metric endpoints on one server."""

    def __init__(self, url: str, key: str, transport: Transport | None = None) -> None:
        self.url = url
        self.key = key
        self.api = ApiClient(url, key, transport)

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.api.request(method, path, **kwargs)

    def create(self, metric_type: str = "sum", **fields: Any) -> dict[str, Any]:
        resp = self.call("POST", METRICS, json=body_for(metric_type, **fields))
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def get(self, metric_id: str) -> dict[str, Any]:
        resp = self.call("GET", path_of(metric_id))
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def update(self, metric_id: str, **fields: Any) -> dict[str, Any]:
        resp = self.call("POST", path_of(metric_id), json=fields)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def act(self, metric_id: str, action: str) -> requests.Response:
        return self.call("PUT", f"{path_of(metric_id)}/{action}")

    def listing(self, path: str = METRICS, **params: Any) -> dict[str, Any]:
        resp = self.call("GET", path, params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def versions(self, metric_id: str, **params: Any) -> dict[str, Any]:
        resp = self.call("GET", f"{path_of(metric_id)}/versions", params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def missing(self, metric_id: str) -> bool:
        return self.call("GET", path_of(metric_id)).status_code == 404


@pytest.fixture(scope="module")
def metrics(app_api: ApiClient) -> Iterator[Metrics]:
    client = Metrics(app_api.url, app_api.key, app_api.transport)
    yield client
    client.api.close()


def ids_of(listing: dict[str, Any]) -> list[str]:
    return [m["id"] for m in listing["data"]]


# --- experiments, written into the server's table ------------------------------------------------


class Experiments:
    """Puts experiment documents into the table as the store keeps entities.

    (docs/architecture.md, 'Data: one DynamoDB table'.)
    """

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def put(self, experiment_id: str | None = None, **fields: Any) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": experiment_id or f"exp_{uid()}",
            "name": "an experiment",
            "status": "setup",
            "idType": "userID",
            "layerID": None,
            "teamID": None,
            "targetApps": [],
            "tags": [],
            "experimentType": "BASE",
            "isStale": False,
            "creatorName": "CONSOLE API",
            "creatorID": "key-1",
            "createdTime": int(time.time() * 1000),
            "primaryMetrics": [],
            "secondaryMetrics": [],
            "otherMetrics": [],
            "version": 1,
            **fields,
        }
        item = {
            "PK": {"S": f"EXPERIMENT#{doc['id']}"},
            "SK": {"S": "CURRENT"},
            "GSI1PK": {"S": "TYPE#EXPERIMENT"},
            "GSI1SK": {"S": f"{doc['createdTime']:013d}#{doc['id']}"},
            "version": {"N": str(doc["version"])},
            "doc": {"S": json.dumps(doc)},
        }
        self.client.put_item(TableName=self.table, Item=item)
        return doc

    def using(self, metric: dict[str, Any], where: str = "primaryMetrics", **fields: Any) -> dict[str, Any]:
        entry = {"name": metric["name"], "type": metric["type"], "direction": "increase"}
        return self.put(**{where: [entry]}, **fields)


@pytest.fixture(scope="module")
def experiments(module_store: None) -> Experiments:
    return Experiments(boto3.client("dynamodb"), STORE_TABLE)


DEFINITION_FIELDS = {"metricEvents", "metricComponentMetrics", "funnelEventList", "funnelCountDistinct"}


# --- create every type: the whole answer ------------------------------------------------------


def _expected_lineage(body: dict[str, Any]) -> dict[str, list[str]]:
    events = [e["name"] for e in body.get("metricEvents") or []]
    metrics = [f"{c['name']}::{c['type']}" for c in body.get("metricComponentMetrics") or []]
    for step in body.get("funnelEventList") or []:
        if step["type"] in ("event_user", "event_count_custom"):
            metrics.append(f"{step['name']}::{step['type']}")
        else:
            events.append(step["name"])
    return {"events": events, "metrics": metrics}


@pytest.mark.parametrize(
    "metric_type", ["sum", "event_count_custom", "event_user", "ratio", "composite_sum", "funnel"]
)
def test_create_each_type_returns_the_whole_metric(metrics: Metrics, metric_type: str) -> None:
    body = body_for(metric_type, description="a metric", tags=["t1"], unitTypes=["userID"])
    resp = metrics.call("POST", METRICS, json=body)
    assert resp.status_code == 201, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    metric = resp.json()["data"]
    assert metric.keys() >= CONTRACT_FIELDS | BOOKKEEPING_FIELDS, CONTRACT_FIELDS - metric.keys()
    assert metric["id"] == f"{body['name']}::{metric_type}"
    assert (metric["name"], metric["type"]) == (body["name"], metric_type)
    assert metric["directionality"] == "increase"
    assert (
        metric["description"] == "a metric" and metric["tags"] == ["t1"] and metric["unitTypes"] == ["userID"]
    )
    assert [metric[f] for f in ("isPermanent", "isReadOnly", "isHidden", "isVerified")] == [False] * 4
    assert metric["lineage"] == _expected_lineage(body)
    assert metric["version"] == 1 and isinstance(metric["version"], int)
    assert metric["team"] is None and metric["teamID"] is None and metric["creatorEmail"] is None
    assert metric["creatorName"] == "CONSOLE API" and metric["lastModifierName"] == "CONSOLE API"
    assert metric["owner"]["ownerType"] == "SDK_KEY"
    assert metric["owner"]["ownerName"] == metric["owner"]["name"] == "CONSOLE API"
    assert metric["owner"]["ownerEmail"] == ""
    assert isinstance(metric["createdTime"], int) and metric["createdTime"] > 1_600_000_000_000
    assert metric["lastModifiedTime"] >= metric["createdTime"]
    assert metric["isArchived"] is False and metric["scheduledArchiveTime"] is None
    assert metric["permalink"].startswith("http") and metric["permalink"].endswith(
        quote(metric["id"], safe=":")
    )
    # The type's own definition fields, and only those.
    for field in DEFINITION_FIELDS & body.keys():
        given = body[field]
        if field == "metricEvents":
            assert [e["name"] for e in metric[field]] == [e["name"] for e in given]
        else:
            assert metric[field] == given
    unused = DEFINITION_FIELDS - body.keys() - ({"funnelCountDistinct"} if metric_type == "funnel" else set())
    assert not unused & metric.keys(), unused & metric.keys()
    assert metrics.get(metric["id"]) == metric


def test_defaults_are_resolved_on_create(metrics: Metrics) -> None:
    summed = metrics.create("sum", metricEvents=[event()])
    assert summed["metricEvents"][0]["type"] == "value"
    assert summed["metricEvents"][0]["criteria"] == []
    counted = metrics.create("event_count_custom", metricEvents=[event()])
    assert counted["metricEvents"][0]["type"] == "count"
    funnel = metrics.create("funnel")
    assert funnel["funnelCountDistinct"] == "users"
    assert metrics.create("funnel", funnelCountDistinct="events")["funnelCountDistinct"] == "events"


def test_create_keeps_what_was_sent(metrics: Metrics) -> None:
    criteria = [
        {"type": "value", "column": "!service_value", "condition": ">", "values": ["500"]},
        {"type": "metadata", "column": "sku", "condition": "in", "values": ["a", "b"]},
        {"type": "user", "column": "country", "condition": "not_in", "values": ["CA"]},
        {"type": "user_custom", "column": "plan", "condition": "is_null", "nullVacuousOverride": True},
    ]
    metric = metrics.create(
        "sum",
        metricEvents=[event("checkout", type="metadata", metadataKey="price", criteria=criteria)],
        directionality="decrease",
        isPermanent=True,
        isReadOnly=True,
        isVerified=True,
        team="growth",
        teamID="team-1",
        tags="one-tag",
        owner={"ownerID": "u-1", "ownerType": "USER", "ownerName": "Ann", "ownerEmail": "ann@example.com"},
        rollupTimeWindow="custom",
        customRollUpStart=0,
        customRollUpEnd=7,
    )
    [stored] = metric["metricEvents"]
    assert stored["metadataKey"] == "price" and stored["type"] == "metadata"
    assert stored["criteria"][0] == criteria[0]
    assert stored["criteria"][3] == {**criteria[3], "values": []}
    assert metric["directionality"] == "decrease"
    assert (metric["isPermanent"], metric["isReadOnly"], metric["isVerified"]) == (True, True, True)
    assert (metric["team"], metric["teamID"], metric["tags"]) == ("growth", "team-1", ["one-tag"])
    assert metric["owner"] == {
        "ownerID": "u-1",
        "ownerType": "USER",
        "ownerName": "Ann",
        "ownerEmail": "ann@example.com",
        "name": "Ann",
    }
    assert (metric["rollupTimeWindow"], metric["customRollUpStart"], metric["customRollUpEnd"]) == (
        "custom",
        0,
        7,
    )
    assert re.search(r'"customRollUpEnd":\s*7[,}\s]', metrics.call("GET", path_of(metric["id"])).text)


def test_duplicate_id_is_409_and_keeps_the_first(metrics: Metrics) -> None:
    first = metrics.create("sum", description="first")
    resp = metrics.call("POST", METRICS, json=body_for("sum", name=first["name"], description="second"))
    assert_error(resp, 409)
    assert metrics.get(first["id"]) == first
    # The same name with another type is another metric.
    other = metrics.create("event_user", name=first["name"])
    assert other["id"] == f"{first['name']}::event_user"


# --- dry run ---------------------------------------------------------------------------------------


def test_dry_run_validates_and_stores_nothing(metrics: Metrics) -> None:
    tag = f"dry_{uid()}"
    body = body_for("sum", tags=[tag], dryRun=True)
    resp = metrics.call("POST", METRICS, json=body)
    assert resp.status_code == 200, resp.text
    metric = resp.json()["data"]
    assert metric["id"] == f"{body['name']}::sum" and metric["version"] == 1
    assert metric.keys() >= CONTRACT_FIELDS
    assert metrics.missing(metric["id"])
    assert metrics.listing(tags=tag, showHiddenMetrics="true", includeArchived="true")["data"] == []
    assert metrics.call("GET", f"{path_of(metric['id'])}/versions").status_code == 404
    # After the dry run, the real create works.
    assert metrics.call("POST", METRICS, json={**body, "dryRun": False}).status_code == 201


def test_dry_run_reports_what_a_create_would(metrics: Metrics) -> None:
    existing = metrics.create("sum")
    assert_error(metrics.call("POST", METRICS, json=body_for("sum", name=existing["name"], dryRun=True)), 409)
    bad = body_for("ratio", dryRun=True, metricComponentMetrics=[builtin_ref()])
    assert_error(metrics.call("POST", METRICS, json=bad), 400, "metricComponentMetrics")
    assert metrics.missing(f"{bad['name']}::ratio")


# --- definition rules per type -------------------------------------------------------------------

MISSING = {"name": f"nothing_{uuid.uuid4().hex[:8]}", "type": "sum"}


@pytest.mark.parametrize(
    "metric_type, fields, field",
    [
        pytest.param("sum", {"metricEvents": None}, "metricEvents", id="sum-without-events"),
        pytest.param("sum", {"metricEvents": []}, "metricEvents", id="sum-empty-events"),
        pytest.param("sum", {"metricEvents": [event(type="count")]}, "metricEvents[0].type", id="sum-count"),
        pytest.param(
            "sum",
            {"metricComponentMetrics": [builtin_ref(), builtin_ref()]},
            "metricComponentMetrics",
            id="sum-components",
        ),
        pytest.param(
            "sum",
            {"funnelEventList": [builtin_ref(), builtin_ref()]},
            "funnelEventList",
            id="sum-funnel-steps",
        ),
        pytest.param("sum", {"funnelCountDistinct": "users"}, "funnelCountDistinct", id="sum-count-distinct"),
        pytest.param(
            "event_count_custom",
            {"metricEvents": [event(type="value")]},
            "metricEvents[0].type",
            id="custom-value",
        ),
        pytest.param(
            "event_count_custom", {"metricEvents": None}, "metricEvents", id="custom-without-events"
        ),
        pytest.param(
            "event_user",
            {"metricEvents": [event(), event(type="count_distinct")]},
            "metricEvents[1].type",
            id="user-count-distinct",
        ),
        pytest.param("event_user", {"metricEvents": []}, "metricEvents", id="user-empty-events"),
        pytest.param(
            "ratio", {"metricComponentMetrics": [builtin_ref()]}, "metricComponentMetrics", id="ratio-one"
        ),
        pytest.param(
            "ratio",
            {"metricComponentMetrics": [builtin_ref(), builtin_ref(), builtin_ref()]},
            "metricComponentMetrics",
            id="ratio-three",
        ),
        pytest.param("ratio", {"metricComponentMetrics": None}, "metricComponentMetrics", id="ratio-none"),
        pytest.param(
            "ratio",
            {"metricComponentMetrics": [builtin_ref(name="same"), builtin_ref(name="same")]},
            "metricComponentMetrics[1]",
            id="ratio-same-twice",
        ),
        pytest.param(
            "ratio",
            {"metricComponentMetrics": [builtin_ref(), MISSING]},
            "metricComponentMetrics[1]",
            id="ratio-missing-denominator",
        ),
        pytest.param(
            "ratio",
            {"metricComponentMetrics": [builtin_ref(), {"name": "x", "type": "mean"}]},
            "metricComponentMetrics[1]",
            id="ratio-unknown-type",
        ),
        pytest.param("ratio", {"metricEvents": [event()]}, "metricEvents", id="ratio-events"),
        pytest.param(
            "composite_sum",
            {"metricComponentMetrics": [builtin_ref()]},
            "metricComponentMetrics",
            id="composite-one",
        ),
        pytest.param(
            "composite_sum",
            {"metricComponentMetrics": [builtin_ref(name="dup"), builtin_ref(), builtin_ref(name="dup")]},
            "metricComponentMetrics[2]",
            id="composite-duplicate",
        ),
        pytest.param(
            "composite_sum",
            {"metricComponentMetrics": [MISSING, builtin_ref()]},
            "metricComponentMetrics[0]",
            id="composite-missing",
        ),
        pytest.param(
            "composite_sum", {"funnelCountDistinct": "events"}, "funnelCountDistinct", id="composite-distinct"
        ),
        pytest.param(
            "funnel", {"funnelEventList": [builtin_ref("event_dau")]}, "funnelEventList", id="funnel-one-step"
        ),
        pytest.param("funnel", {"funnelEventList": None}, "funnelEventList", id="funnel-no-steps"),
        pytest.param(
            "funnel",
            {"funnelEventList": [{"name": "a", "type": "sum"}, builtin_ref()]},
            "funnelEventList[0].type",
            id="funnel-step-type",
        ),
        pytest.param(
            "funnel",
            {"funnelEventList": [builtin_ref(), {"name": MISSING["name"], "type": "event_user"}]},
            "funnelEventList[1].name",
            id="funnel-missing-custom-step",
        ),
        pytest.param(
            "funnel", {"funnelCountDistinct": "sessions"}, "funnelCountDistinct", id="funnel-sessions"
        ),
        pytest.param("funnel", {"metricEvents": [event()]}, "metricEvents", id="funnel-events"),
        pytest.param(
            "sum", {"metricEvents": [event(name="")]}, "metricEvents[0].name", id="event-name-empty"
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(type="metadata")]},
            "metricEvents[0].metadataKey",
            id="metadata-without-key",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(type="value", metadataKey="k")]},
            "metricEvents[0].metadataKey",
            id="value-with-key",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("sql_filter", ["x"])])]},
            "metricEvents[0].criteria[0].condition",
            id="warehouse-condition",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("like", ["x"])])]},
            "metricEvents[0].criteria[0].condition",
            id="unknown-condition",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("in", ["a"]), crit("in", [])])]},
            "metricEvents[0].criteria[1].values",
            id="in-without-values",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit(">", ["ten"])])]},
            "metricEvents[0].criteria[0].values",
            id="gt-not-a-number",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("=", ["a", "b"])])]},
            "metricEvents[0].criteria[0].values",
            id="eq-two-values",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("non_null", ["a"])])]},
            "metricEvents[0].criteria[0].values",
            id="non-null-with-values",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[{"type": "metadata", "condition": "in", "values": ["a"]}])]},
            "metricEvents[0].criteria[0].column",
            id="metadata-without-column",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("in", ["a"], column="!service_time")])]},
            "metricEvents[0].criteria[0].column",
            id="unknown-service-column",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("in", ["a"], type="user", column="!service_value")])]},
            "metricEvents[0].criteria[0].column",
            id="service-value-on-user",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit(">", ["1"], type="value", column="price")])]},
            "metricEvents[0].criteria[0].column",
            id="value-with-column",
        ),
        pytest.param(
            "sum",
            {"metricEvents": [event(criteria=[crit("in", ["a"], type="session")])]},
            "metricEvents[0].criteria[0].type",
            id="criterion-type",
        ),
        pytest.param("sum", {"directionality": "up"}, "directionality", id="directionality"),
        pytest.param("sum", {"type": "mean"}, "type", id="unknown-type"),
        pytest.param("sum", {"isHidden": "true"}, "isHidden", id="boolean-as-text"),
        pytest.param("sum", {"lineage": {"events": [], "metrics": []}}, "lineage", id="lineage-not-accepted"),
        pytest.param("sum", {"id": "x::sum"}, "id", id="id-not-accepted"),
        pytest.param("sum", {"name": "ab#cd"}, "name", id="name-character"),
        pytest.param("sum", {"customRollUpStart": 1}, "customRollUpStart", id="rollup-bound-without-custom"),
        pytest.param(
            "sum",
            {"rollupTimeWindow": "custom", "customRollUpStart": 9, "customRollUpEnd": 2},
            "customRollUpEnd",
            id="rollup-end-before-start",
        ),
    ],
)
def test_each_definition_violation_is_a_400_naming_the_field(
    metrics: Metrics, metric_type: str, fields: dict[str, Any], field: str
) -> None:
    body = {k: v for k, v in {**body_for(metric_type), **fields}.items() if v is not None}
    assert_error(metrics.call("POST", METRICS, json=body), 400, field)
    assert metrics.missing(f"{body['name']}::{body['type']}")


@pytest.mark.parametrize("field", ["name", "type"])
def test_name_and_type_are_required(metrics: Metrics, field: str) -> None:
    body = body_for("sum")
    del body[field]
    assert_error(metrics.call("POST", METRICS, json=body), 400, field)


def test_components_may_be_stored_metrics_of_any_type(metrics: Metrics) -> None:
    summed = metrics.create("sum")
    ratio = metrics.create(
        "ratio", metricComponentMetrics=[builtin_ref(), {"name": summed["name"], "type": "sum"}]
    )
    composite = metrics.create(
        "composite_sum",
        metricComponentMetrics=[
            {"name": ratio["name"], "type": "ratio"},
            {"name": summed["name"], "type": "sum"},
            builtin_ref("event_dau"),
        ],
    )
    assert composite["lineage"]["metrics"][:2] == [ratio["id"], summed["id"]]


def test_funnel_steps_may_name_custom_metrics(metrics: Metrics) -> None:
    users = metrics.create("event_user")
    view = f"view_{uid()}"
    funnel = metrics.create(
        "funnel",
        funnelEventList=[{"name": view, "type": "event_dau"}, {"name": users["name"], "type": "event_user"}],
    )
    assert funnel["lineage"] == {"events": [view], "metrics": [users["id"]]}


# --- limits at their edges ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, field, ok",
    [
        pytest.param({"name": "abcd"}, "name", True, id="name-4"),
        pytest.param({"name": "abc"}, "name", False, id="name-3"),
        pytest.param({"description": "d" * 1000}, "description", True, id="description-1000"),
        pytest.param({"description": "d" * 1001}, "description", False, id="description-1001"),
        pytest.param({"metricEvents": [event("e" * 200)]}, "metricEvents[0].name", True, id="event-name-200"),
        pytest.param(
            {"metricEvents": [event("e" * 201)]}, "metricEvents[0].name", False, id="event-name-201"
        ),
        pytest.param({"metricEvents": [event()] * 20}, "metricEvents", True, id="events-20"),
        pytest.param({"metricEvents": [event()] * 21}, "metricEvents", False, id="events-21"),
        pytest.param(
            {"metricEvents": [event(criteria=[crit("in", ["a"])] * 20)]},
            "metricEvents[0].criteria",
            True,
            id="criteria-20",
        ),
        pytest.param(
            {"metricEvents": [event(criteria=[crit("in", ["a"])] * 21)]},
            "metricEvents[0].criteria",
            False,
            id="criteria-21",
        ),
        pytest.param(
            {"metricEvents": [event(criteria=[crit("in", ["v"] * 1000)])]},
            "metricEvents[0].criteria[0].values",
            True,
            id="values-1000",
        ),
        pytest.param(
            {"metricEvents": [event(criteria=[crit("in", ["v"] * 1001)])]},
            "metricEvents[0].criteria[0].values",
            False,
            id="values-1001",
        ),
        pytest.param({"tags": ["t" * 100]}, "tags[0]", True, id="tag-100"),
        pytest.param({"tags": ["t" * 101]}, "tags[0]", False, id="tag-101"),
        pytest.param({"tags": [""]}, "tags[0]", False, id="tag-empty"),
        pytest.param({"unitTypes": ["u" * 100]}, "unitTypes[0]", True, id="unit-type-100"),
        pytest.param({"unitTypes": ["u" * 101]}, "unitTypes[0]", False, id="unit-type-101"),
        pytest.param(
            {"metricEvents": [event(type="metadata", metadataKey="k" * 200)]},
            "metricEvents[0].metadataKey",
            True,
            id="metadata-key-200",
        ),
        pytest.param(
            {"metricEvents": [event(type="metadata", metadataKey="k" * 201)]},
            "metricEvents[0].metadataKey",
            False,
            id="metadata-key-201",
        ),
        pytest.param(
            {"rollupTimeWindow": "custom", "customRollUpStart": 0, "customRollUpEnd": 0},
            "customRollUpStart",
            True,
            id="rollup-0-0",
        ),
        pytest.param(
            {"rollupTimeWindow": "custom", "customRollUpStart": -1, "customRollUpEnd": 0},
            "customRollUpStart",
            False,
            id="rollup-negative",
        ),
    ],
)
def test_limits_at_their_edges(metrics: Metrics, fields: dict[str, Any], field: str, ok: bool) -> None:
    # Dry runs: the 4-character name is then no collision risk across runs of the session.
    body = {**body_for("sum"), **fields, "dryRun": True}
    resp = metrics.call("POST", METRICS, json=body)
    if ok:
        assert resp.status_code == 200, resp.text
    else:
        assert_error(resp, 400, field)


def test_name_of_200_characters_is_stored(metrics: Metrics) -> None:
    name = (uid() + "n" * 200)[:200]
    assert metrics.create("sum", name=name)["name"] == name
    assert_error(metrics.call("POST", METRICS, json=body_for("sum", name=name + "x")), 400, "name")


@pytest.mark.parametrize("count, ok", [(2, True), (20, True), (21, False)])
def test_composite_components_2_to_20(metrics: Metrics, count: int, ok: bool) -> None:
    body = body_for("composite_sum", metricComponentMetrics=[builtin_ref() for _ in range(count)])
    resp = metrics.call("POST", METRICS, json=body)
    if ok:
        assert resp.status_code == 201, resp.text
        assert len(resp.json()["data"]["lineage"]["metrics"]) == count
    else:
        assert_error(resp, 400, "metricComponentMetrics")


@pytest.mark.parametrize("count, ok", [(2, True), (10, True), (11, False)])
def test_funnel_steps_2_to_10(metrics: Metrics, count: int, ok: bool) -> None:
    steps = [{"name": f"step{i}_{uid()}", "type": "event_count"} for i in range(count)]
    resp = metrics.call("POST", METRICS, json=body_for("funnel", funnelEventList=steps))
    if ok:
        assert resp.status_code == 201, resp.text
        assert resp.json()["data"]["funnelEventList"] == steps
    else:
        assert_error(resp, 400, "funnelEventList")


# --- built-ins ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric_type", ["event_count", "event_dau"])
def test_builtins_exist_for_any_event(metrics: Metrics, metric_type: str) -> None:
    event_name = f"never logged {uid()}"
    metric = metrics.get(f"{event_name}::{metric_type}")
    assert metric.keys() >= CONTRACT_FIELDS | BOOKKEEPING_FIELDS
    assert (metric["id"], metric["name"], metric["type"]) == (
        f"{event_name}::{metric_type}",
        event_name,
        metric_type,
    )
    assert metric["isReadOnly"] is True and metric["isPermanent"] is True
    assert metric["lineage"] == {"events": [event_name], "metrics": []}
    assert metric["team"] is None and metric["isArchived"] is False
    assert metric["version"] == 1


def test_creating_a_builtin_is_409(metrics: Metrics) -> None:
    for metric_type in ("event_count", "event_dau"):
        resp = metrics.call("POST", METRICS, json={"name": f"click {uid()}", "type": metric_type})
        assert "built in" in assert_error(resp, 409)["message"]


def test_builtins_are_read_only(metrics: Metrics) -> None:
    builtin_id = f"tap_{uid()}::event_count"
    assert_error(metrics.call("POST", path_of(builtin_id), json={"description": "x"}), 400)
    assert_error(metrics.call("DELETE", path_of(builtin_id)), 400)
    for action in ("schedule_archive", "cancel_archive", "unarchive"):
        assert_error(metrics.act(builtin_id, action), 400)
    versions = metrics.versions(builtin_id)
    assert [v["version"] for v in versions["data"]] == [1]
    assert metrics.call("GET", f"{path_of(builtin_id)}/experiments").json()["data"] == []


# --- update --------------------------------------------------------------------------------------------


def test_update_changes_the_fields_sent_and_bumps_the_version(metrics: Metrics) -> None:
    metric = metrics.create("sum", description="before", tags=["keep"], team="a")
    updated = metrics.update(
        metric["id"], description="after", isVerified=True, team=None, directionality="decrease"
    )
    assert updated["description"] == "after" and updated["isVerified"] is True and updated["team"] is None
    assert updated["directionality"] == "decrease"
    assert updated["tags"] == ["keep"] and updated["metricEvents"] == metric["metricEvents"]
    assert updated["version"] == 2 and updated["lastModifiedTime"] >= metric["lastModifiedTime"]
    assert updated["createdTime"] == metric["createdTime"] and updated["id"] == metric["id"]
    assert metrics.get(metric["id"]) == updated
    again = metrics.update(metric["id"], name=metric["name"], type="sum", tags=[])
    assert again["version"] == 3 and again["tags"] == []


def test_update_replaces_the_definition_and_its_lineage(metrics: Metrics) -> None:
    metric = metrics.create("sum")
    new_event = event(type="metadata", metadataKey="amount")
    updated = metrics.update(metric["id"], metricEvents=[new_event])
    assert updated["lineage"] == {"events": [new_event["name"]], "metrics": []}
    assert updated["metricEvents"][0]["metadataKey"] == "amount"
    ratio = metrics.create("ratio")
    numerator, denominator = builtin_ref(), builtin_ref("event_dau")
    updated_ratio = metrics.update(ratio["id"], metricComponentMetrics=[numerator, denominator])
    assert updated_ratio["lineage"]["metrics"] == [
        f"{numerator['name']}::event_count",
        f"{denominator['name']}::event_dau",
    ]


@pytest.mark.parametrize(
    "fields, field",
    [
        pytest.param({"name": "another name"}, "name", id="rename"),
        pytest.param({"type": "event_user"}, "type", id="retype"),
        pytest.param({"metricEvents": []}, "metricEvents", id="no-events"),
        pytest.param({"metricEvents": [event(type="count")]}, "metricEvents[0].type", id="event-type"),
        pytest.param(
            {"metricComponentMetrics": [builtin_ref(), builtin_ref()]}, "metricComponentMetrics", id="foreign"
        ),
        pytest.param({"description": None}, "description", id="null-description"),
        pytest.param({"lineage": {"events": ["x"], "metrics": []}}, "lineage", id="lineage"),
        pytest.param({"version": 0}, "version", id="version-0"),
    ],
)
def test_bad_updates_are_400_and_change_nothing(metrics: Metrics, fields: dict[str, Any], field: str) -> None:
    metric = metrics.create("sum")
    assert_error(metrics.call("POST", path_of(metric["id"]), json=fields), 400, field)
    assert metrics.get(metric["id"]) == metric


def test_update_to_a_missing_component_is_400(metrics: Metrics) -> None:
    composite = metrics.create("composite_sum")
    components = [builtin_ref(), MISSING]
    resp = metrics.call("POST", path_of(composite["id"]), json={"metricComponentMetrics": components})
    assert_error(resp, 400, "metricComponentMetrics[1]")
    assert metrics.get(composite["id"]) == composite


def test_components_cannot_form_a_cycle(metrics: Metrics) -> None:
    base = metrics.create("composite_sum")
    outer = metrics.create(
        "composite_sum",
        metricComponentMetrics=[{"name": base["name"], "type": "composite_sum"}, builtin_ref()],
    )
    cycle = [{"name": outer["name"], "type": "composite_sum"}, builtin_ref()]
    body = assert_error(
        metrics.call("POST", path_of(base["id"]), json={"metricComponentMetrics": cycle}),
        400,
        "metricComponentMetrics",
    )
    assert "cycle" in body["message"]
    itself = [{"name": base["name"], "type": "composite_sum"}, builtin_ref()]
    assert_error(
        metrics.call("POST", path_of(base["id"]), json={"metricComponentMetrics": itself}),
        400,
        "metricComponentMetrics[0]",
    )
    assert metrics.get(base["id"]) == base


def test_stale_version_is_409_and_the_right_one_applies(metrics: Metrics) -> None:
    metric = metrics.create("sum")
    metrics.update(metric["id"], description="moved on")
    body = assert_error(
        metrics.call("POST", path_of(metric["id"]), json={"description": "stale", "version": 1}), 409
    )
    assert body["errors"][0]["field"] == "version"
    assert metrics.get(metric["id"])["description"] == "moved on"
    assert metrics.update(metric["id"], description="fresh", version=2)["version"] == 3


def test_update_dry_run_changes_nothing(metrics: Metrics) -> None:
    metric = metrics.create("sum", description="kept")
    resp = metrics.call("POST", path_of(metric["id"]), json={"description": "proposed", "dryRun": True})
    assert resp.status_code == 200, resp.text
    proposed = resp.json()["data"]
    assert proposed["description"] == "proposed" and proposed["version"] == 2
    assert metrics.get(metric["id"]) == metric
    assert len(metrics.versions(metric["id"])["data"]) == 1
    bad = {"metricEvents": [], "dryRun": True}
    assert_error(metrics.call("POST", path_of(metric["id"]), json=bad), 400, "metricEvents")
    stale = {"description": "x", "dryRun": True, "version": 5}
    assert_error(metrics.call("POST", path_of(metric["id"]), json=stale), 409)


def test_update_of_an_unknown_metric_is_404(metrics: Metrics) -> None:
    assert_error(metrics.call("POST", path_of(f"nope {uid()}::sum"), json={"description": "x"}), 404)


# --- versions --------------------------------------------------------------------------------------------


def test_versions_newest_first_one_per_write(metrics: Metrics) -> None:
    metric = metrics.create("sum", description="v1")
    metrics.update(metric["id"], description="v2")
    assert metrics.act(metric["id"], "schedule_archive").status_code == 200
    assert metrics.act(metric["id"], "cancel_archive").status_code == 200
    listing = metrics.versions(metric["id"])
    assert [v["version"] for v in listing["data"]] == [4, 3, 2, 1]
    assert [v["description"] for v in listing["data"]] == ["v2", "v2", "v2", "v1"]
    assert listing["data"][1]["scheduledArchiveTime"] is not None
    assert listing["data"][0]["scheduledArchiveTime"] is None
    assert listing["data"][-1] == metric
    assert listing["pagination"]["totalItems"] == 4


def test_versions_paginate(metrics: Metrics) -> None:
    metric = metrics.create("sum")
    for limit in (0, 1001):
        assert_error(
            metrics.call("GET", f"{path_of(metric['id'])}/versions", params={"limit": limit}), 400, "limit"
        )
    assert metrics.versions(metric["id"], limit=1000)["pagination"]["itemsPerPage"] == 1000
    for i in range(2):
        metrics.update(metric["id"], description=f"d{i}")
    page = metrics.versions(metric["id"], limit=1, page=2)
    assert [v["version"] for v in page["data"]] == [2]
    base = f"{path_of(metric['id'])}/versions"
    assert page["pagination"]["nextPage"] == f"{base}?page=3&limit=1"
    assert page["pagination"]["previousPage"] == f"{base}?page=1&limit=1"
    last = metrics.call("GET", page["pagination"]["nextPage"]).json()
    assert [v["version"] for v in last["data"]] == [1] and last["pagination"]["nextPage"] is None


# --- archive states ------------------------------------------------------------------------------------


def test_schedule_and_cancel_archive(metrics: Metrics) -> None:
    tag = f"sched_{uid()}"
    metric = metrics.create("sum", tags=[tag])
    before = int(time.time() * 1000)
    resp = metrics.act(metric["id"], "schedule_archive")
    after = int(time.time() * 1000)
    assert resp.status_code == 200, resp.text
    scheduled = resp.json()["data"]
    assert before + DAY_MS - 1000 <= scheduled["scheduledArchiveTime"] <= after + DAY_MS + 1000
    assert scheduled["isArchived"] is False and scheduled["version"] == 2
    # Still active until the grace period ends: listed, and editable.
    assert ids_of(metrics.listing(tags=tag)) == [metric["id"]]
    assert metrics.update(metric["id"], description="still editable")["scheduledArchiveTime"] is not None
    for action in ("schedule_archive", "unarchive"):
        assert "'scheduled'" in assert_error(metrics.act(metric["id"], action), 400)["message"]
    cancelled = metrics.act(metric["id"], "cancel_archive")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["data"]["scheduledArchiveTime"] is None
    for action in ("cancel_archive", "unarchive"):
        assert "'active'" in assert_error(metrics.act(metric["id"], action), 400)["message"]
    assert metrics.get(metric["id"])["version"] == 4


@pytest.mark.parametrize("action", ["schedule_archive", "cancel_archive", "unarchive"])
def test_archive_actions_on_an_unknown_metric_are_404(metrics: Metrics, action: str) -> None:
    assert_error(metrics.act(f"nope {uid()}::sum", action), 404)


# --- delete ----------------------------------------------------------------------------------------------


def test_delete_removes_the_metric_and_its_versions(metrics: Metrics) -> None:
    metric = metrics.create("sum")
    metrics.update(metric["id"], description="two")
    resp = metrics.call("DELETE", path_of(metric["id"]))
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert metrics.missing(metric["id"])
    assert_error(metrics.call("GET", f"{path_of(metric['id'])}/versions"), 404)
    assert_error(metrics.call("DELETE", path_of(metric["id"])), 404)
    # The id is free again, and starts over at version 1.
    again = metrics.create("sum", name=metric["name"])
    assert again["version"] == 1 and len(metrics.versions(again["id"])["data"]) == 1


@pytest.mark.parametrize("where", ["primaryMetrics", "secondaryMetrics", "otherMetrics"])
def test_delete_of_a_metric_experiments_use_is_409_naming_them(
    metrics: Metrics, experiments: Experiments, where: str
) -> None:
    metric = metrics.create("sum")
    first = experiments.using(metric, where)
    second = experiments.using(metric, where, status="archived")
    experiments.put(primaryMetrics=[{"name": metric["name"], "type": "event_user"}])  # another metric
    body = assert_error(metrics.call("DELETE", path_of(metric["id"])), 409)
    assert first["id"] in body["message"] and second["id"] in body["message"]
    assert metrics.get(metric["id"]) == metric
    # Once the experiments no longer name it, it can go.
    experiments.put(first["id"])
    experiments.put(second["id"])
    assert metrics.call("DELETE", path_of(metric["id"])).status_code == 200


def test_delete_of_a_component_is_409_naming_the_metric(metrics: Metrics) -> None:
    part = metrics.create("event_user")
    funnel = metrics.create(
        "funnel", funnelEventList=[builtin_ref(), {"name": part["name"], "type": "event_user"}]
    )
    ratio = metrics.create(
        "ratio", metricComponentMetrics=[{"name": part["name"], "type": "event_user"}, builtin_ref()]
    )
    body = assert_error(metrics.call("DELETE", path_of(part["id"])), 409)
    assert funnel["id"] in body["message"] and ratio["id"] in body["message"]
    for user in (funnel, ratio):
        assert metrics.call("DELETE", path_of(user["id"])).status_code == 200
    assert metrics.call("DELETE", path_of(part["id"])).status_code == 200


def test_permanent_metrics_cannot_be_deleted(metrics: Metrics) -> None:
    metric = metrics.create("sum", isPermanent=True)
    assert_error(metrics.call("DELETE", path_of(metric["id"])), 400, "isPermanent")
    metrics.update(metric["id"], isPermanent=False)
    assert metrics.call("DELETE", path_of(metric["id"])).status_code == 200


# --- lists ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [METRICS, f"{METRICS}/list"])
def test_list_at_both_paths_filters_and_paginates(metrics: Metrics, path: str) -> None:
    tag = f"page_{uid()}"
    made = [metrics.create("sum", tags=[tag])["id"] for _ in range(3)]
    first = metrics.listing(path, tags=tag, limit=2)
    assert ids_of(first) == made[:2]
    assert first["pagination"] == {
        "itemsPerPage": 2,
        "pageNumber": 1,
        "totalItems": 3,
        "nextPage": f"{path}?tags={tag}&page=2&limit=2",
        "previousPage": None,
        "all": f"{path}?tags={tag}",
    }
    second = metrics.call("GET", first["pagination"]["nextPage"]).json()
    assert ids_of(second) == made[2:]
    assert second["pagination"]["nextPage"] is None
    assert second["pagination"]["previousPage"] == f"{path}?tags={tag}&page=1&limit=2"
    assert ids_of(metrics.listing(path, tags=tag)) == made


def test_list_filters(metrics: Metrics) -> None:
    tag, other = f"f_{uid()}", f"g_{uid()}"
    summed = metrics.create("sum", tags=[tag], teamID="team-a")
    user = metrics.create("event_user", tags=[tag, other])
    hidden = metrics.create("sum", tags=[tag], isHidden=True)
    funnel = metrics.create("funnel", tags=[other])
    both = f"{tag},{other}"
    assert ids_of(metrics.listing(tags=tag)) == [summed["id"], user["id"]]
    assert ids_of(metrics.listing(tags=tag, showHiddenMetrics="true")) == [
        summed["id"],
        user["id"],
        hidden["id"],
    ]
    assert ids_of(metrics.listing(tags=both)) == [summed["id"], user["id"], funnel["id"]]
    assert ids_of(metrics.listing(tags=[tag, other], type="funnel")) == [funnel["id"]]
    assert ids_of(metrics.listing(tags=both, type="sum,funnel")) == [summed["id"], funnel["id"]]
    assert ids_of(metrics.listing(tags=tag, teamID="team-a")) == [summed["id"]]
    assert ids_of(metrics.listing(filters=json.dumps({"tags": [other]}))) == [user["id"], funnel["id"]]
    assert ids_of(metrics.listing(tags=tag, filters=json.dumps({"tags": other}))) == [user["id"]]
    two = json.dumps({"tags": [other, f"none_{uid()}"]})
    assert ids_of(metrics.listing(filters=two)) == [user["id"], funnel["id"]]
    assert ids_of(metrics.listing(tags=tag, creatorName="CONSOLE API")) == [summed["id"], user["id"]]
    assert metrics.listing(tags=tag, creatorName="someone else")["data"] == []
    assert ids_of(metrics.listing(tags=tag, creatorID=summed["creatorID"])) == [summed["id"], user["id"]]
    assert metrics.listing(tags=tag, creatorID="nobody")["data"] == []


@pytest.mark.parametrize(
    "params, field",
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"page": 0}, "page"),
        ({"type": "mean"}, "type[0]"),
        ({"showHiddenMetrics": "yes"}, "showHiddenMetrics"),
        ({"includeArchived": "1"}, "includeArchived"),
        ({"filters": "not json"}, "filters"),
        ({"filters": '["tags"]'}, "filters"),
        ({"filters": '{"owner": "x"}'}, "filters"),
    ],
)
def test_bad_list_parameters_are_400(metrics: Metrics, params: dict[str, Any], field: str) -> None:
    assert_error(metrics.call("GET", METRICS, params=params), 400, field)


def test_list_limit_bounds(metrics: Metrics) -> None:
    for limit in (1, 1000):
        assert metrics.listing(limit=limit)["pagination"]["itemsPerPage"] == limit


# --- experiments using a metric ------------------------------------------------------------------------

MARCH_1 = 1709294400000  # 2024-03-01T12:00:00Z
MARCH_2 = 1709337600000  # 2024-03-02T00:00:00Z
MARCH_3_END = 1709510399999  # 2024-03-03T23:59:59.999Z
MARCH_4 = MARCH_3_END + 1


@pytest.fixture(scope="module")
def used(metrics: Metrics, experiments: Experiments) -> dict[str, Any]:
    """A metric named by four experiments of different kinds, and one naming another metric.

    Staleness is derived as the experiments API does: `a` runs within its duration (fresh),
    `b` has sat in setup for over 90 days and `c` was decided over 30 days ago (both stale);
    `d` is archived, so it is listed only when the status filter asks for it.
    """
    metric = metrics.create("sum")
    now = int(time.time() * 1000)
    e = {
        "a": experiments.using(
            metric,
            "primaryMetrics",
            layerID="layer-1",
            idType="userID",
            teamID="t1",
            status="active",
            startTime=now - DAY_MS,
            duration=14,
            targetApps=["web"],
            tags=["x"],
            createdTime=MARCH_1,
            creatorName="Ann",
            creatorID="u-ann",
        ),
        "b": experiments.using(
            metric,
            "secondaryMetrics",
            idType="stableID",
            status="setup",
            createdTime=MARCH_2,
            experimentType="SWITCHBACK",
            targetApps="ios",
            tags=["y"],
        ),
        "c": experiments.using(
            metric,
            "otherMetrics",
            status="decision_made",
            startTime=MARCH_3_END,
            decisionTime=MARCH_3_END + 14 * DAY_MS,
            createdTime=MARCH_3_END,
            tags=["x", "z"],
        ),
        "d": experiments.using(metric, "primaryMetrics", status="archived", createdTime=MARCH_4, tags=["x"]),
    }
    experiments.put(primaryMetrics=[{"name": metric["name"], "type": "ratio"}], createdTime=MARCH_2)
    return {"metric": metric, **{k: v["id"] for k, v in e.items()}}


def exp_ids(metrics: Metrics, metric: dict[str, Any], **params: Any) -> list[str]:
    resp = metrics.call("GET", f"{path_of(metric['id'])}/experiments", params=params)
    assert resp.status_code == 200, resp.text
    return [e["id"] for e in resp.json()["data"]]


def test_experiments_using_a_metric_are_listed_oldest_first(metrics: Metrics, used: dict[str, Any]) -> None:
    resp = metrics.call("GET", f"{path_of(used['metric']['id'])}/experiments")
    body = resp.json()
    assert [e["id"] for e in body["data"]] == [used["a"], used["b"], used["c"]]
    assert body["pagination"]["totalItems"] == 3
    assert body["data"][0]["primaryMetrics"][0]["name"] == used["metric"]["name"]
    # Shown as the experiments API shows them: staleness derived.
    assert [e["isStale"] for e in body["data"]] == [False, True, True]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"layerID": "layer-1"}, "a"),
        ({"idType": "stableID"}, "b"),
        ({"idType": "userID"}, "ac"),
        ({"teamID": "t1"}, "a"),
        ({"status": "setup"}, "b"),
        ({"status": "decision_made"}, "c"),
        ({"status": "archived"}, "d"),
        ({"status": "active,archived"}, "ad"),
        ({"targetAppID": "ios"}, "b"),
        ({"targetAppID": "web"}, "a"),
        ({"isStale": "true"}, "bc"),
        ({"isStale": "false"}, "abc"),
        ({"createdStartDate": "2024-03-02"}, "bc"),
        ({"createdStartDate": "2024-03-03"}, "c"),
        ({"createdEndDate": "2024-03-02"}, "ab"),
        ({"createdEndDate": "2024-03-01"}, "a"),
        ({"createdStartDate": "2024-03-02", "createdEndDate": "2024-03-02"}, "b"),
        ({"createdStartDate": "2024-03-04"}, ""),
        ({"createdStartDate": "2024-03-04", "status": "archived"}, "d"),
        ({"experimentType": "SWITCHBACK"}, "b"),
        ({"experimentType": "BASE,GEO"}, "ac"),
        ({"creatorName": "Ann"}, "a"),
        ({"creatorID": "u-ann"}, "a"),
        ({"tags": "x"}, "ac"),
        ({"tags": "y,z"}, "bc"),
        ({"tags": "x", "status": "archived"}, "d"),
    ],
)
def test_experiment_filters(
    metrics: Metrics, used: dict[str, Any], params: dict[str, str], expected: str
) -> None:
    assert exp_ids(metrics, used["metric"], **params) == [used[k] for k in expected]


def test_experiments_paginate(metrics: Metrics, used: dict[str, Any]) -> None:
    path = f"{path_of(used['metric']['id'])}/experiments"
    body = metrics.call("GET", path, params={"tags": "x", "limit": 1}).json()
    assert [e["id"] for e in body["data"]] == [used["a"]]
    assert body["pagination"]["nextPage"] == f"{path}?tags=x&page=2&limit=1"
    second = metrics.call("GET", body["pagination"]["nextPage"]).json()
    assert [e["id"] for e in second["data"]] == [used["c"]]
    assert second["pagination"]["nextPage"] is None


@pytest.mark.parametrize(
    "params, field",
    [
        ({"createdStartDate": "2024-02-30"}, "createdStartDate"),
        ({"createdEndDate": "03/02/2024"}, "createdEndDate"),
        ({"createdStartDate": "2024-03-03", "createdEndDate": "2024-03-02"}, "createdEndDate"),
        ({"status": "running"}, "status[0]"),
        ({"experimentType": "AB"}, "experimentType[0]"),
        ({"isStale": "yes"}, "isStale"),
        ({"limit": 1001}, "limit"),
    ],
)
def test_bad_experiment_filters_are_400(
    metrics: Metrics, used: dict[str, Any], params: dict[str, str], field: str
) -> None:
    resp = metrics.call("GET", f"{path_of(used['metric']['id'])}/experiments", params=params)
    assert_error(resp, 400, field)


def test_experiments_using_a_builtin(metrics: Metrics, experiments: Experiments) -> None:
    builtin = builtin_ref("event_dau")
    exp = experiments.put(otherMetrics=[builtin])
    ids = exp_ids(metrics, {"id": f"{builtin['name']}::event_dau"})
    assert ids == [exp["id"]]


# --- archive after the grace period ---------------------------------------------------------------


@pytest.fixture
def quick(metrics: Metrics) -> Iterator[Metrics]:
    """The metrics client while scheduled archives take effect at once (grace period 0)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("METRIC_ARCHIVE_GRACE_SECONDS", "0")
        yield metrics


def test_archive_takes_effect_after_the_grace_period(quick: Metrics) -> None:
    tag = f"arch_{uid()}"
    metric = quick.create("sum", tags=[tag])
    resp = quick.act(metric["id"], "schedule_archive")
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["isArchived"] is True
    assert quick.get(metric["id"])["isArchived"] is True
    # Archived: out of lists unless asked for, not editable, and only unarchive is legal.
    assert quick.listing(tags=tag)["data"] == []
    assert ids_of(quick.listing(tags=tag, includeArchived="true")) == [metric["id"]]
    assert (
        "archived"
        in assert_error(quick.call("POST", path_of(metric["id"]), json={"description": "x"}), 400)["message"]
    )
    for action in ("schedule_archive", "cancel_archive"):
        assert "'archived'" in assert_error(quick.act(metric["id"], action), 400)["message"]
    restored = quick.act(metric["id"], "unarchive")
    assert restored.status_code == 200, restored.text
    assert restored.json()["data"]["isArchived"] is False
    assert restored.json()["data"]["scheduledArchiveTime"] is None
    assert ids_of(quick.listing(tags=tag)) == [metric["id"]]
    assert quick.update(metric["id"], description="editable again")["version"] == 4


def test_archived_metrics_still_count_as_existing(quick: Metrics) -> None:
    metric = quick.create("sum")
    assert quick.act(metric["id"], "schedule_archive").status_code == 200
    ratio = quick.create(
        "ratio", metricComponentMetrics=[{"name": metric["name"], "type": "sum"}, builtin_ref()]
    )
    assert ratio["lineage"]["metrics"][0] == metric["id"]
