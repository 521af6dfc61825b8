"""In-process tests of the layer endpoints (create, list, read, full and partial update, delete, the
layer's experiments), every limit at its edge, and the placement of experiments in a layer (disjoint
buckets, allocation within the layer's 1000 buckets, one id type).

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_layers.py`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.client import ApiClient, assert_error, uid

LAYERS = "/console/v1/layers"
EXPERIMENTS = "/console/v1/experiments"
HOLDOUTS = "/console/v1/holdouts"


class Console(ApiClient):
    """The console client with helpers for this file's resources."""

    def create_layer(self, **fields: Any) -> dict[str, Any]:
        suffix = uid()
        body = {"name": f"layer {suffix}", "id": f"layer_{suffix}", "idType": "userID", **fields}
        resp = self.post(LAYERS, json=body)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def create_experiment(self, **fields: Any) -> dict[str, Any]:
        resp = self.post(EXPERIMENTS, json=experiment_body(**fields))
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def layer(self, layer_id: str) -> dict[str, Any]:
        resp = self.get(f"{LAYERS}/{layer_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def experiment(self, exp_id: str) -> dict[str, Any]:
        resp = self.get(f"{EXPERIMENTS}/{exp_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def all_layers(self) -> list[dict[str, Any]]:
        resp = self.get(LAYERS, params={"limit": 1000})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["pagination"]["totalItems"] <= 1000, "too many layers for one page"
        return body["data"]

    def layer_experiments(self, layer_id: str, **params: Any) -> dict[str, Any]:
        resp = self.get(f"{LAYERS}/{layer_id}/experiments", params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()


def experiment_body(**fields: Any) -> dict[str, Any]:
    suffix = uid()
    return {"name": f"exp {suffix}", "id": f"exp_{suffix}", **fields}


@pytest.fixture(scope="module")
def console(app_api: ApiClient, app_ingest: ApiClient) -> Console:
    return Console(app_api.url, app_api.key, transport=app_api.transport)


PARAMETERS = [
    {"name": "a_parameter", "type": "boolean", "defaultValue": True},
    {"name": "b_parameter", "type": "number", "defaultValue": 123},
    {"name": "c_parameter", "type": "string", "defaultValue": "this is a string"},
    {"name": "d_parameter", "type": "array", "defaultValue": [1, "two"]},
    {"name": "e_parameter", "type": "object", "defaultValue": {"key": "value"}},
    {"name": "f_parameter", "type": "number", "defaultValue": 1.5},
]


def test_id_type_is_required(console: Console) -> None:
    body = assert_error(console.post(LAYERS, json={"name": f"no id type {uid()}"}), 400, "idType")
    assert {e["field"] for e in body["errors"]} == {"idType"}


def test_duplicate_id_is_409_and_keeps_the_first(console: Console) -> None:
    first = console.create_layer(description="first")
    resp = console.post(LAYERS, json={"name": "other name", "id": first["id"], "idType": "userID"})
    assert_error(resp, 409)
    assert console.layer(first["id"]) == first


# --- limits --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "abc"}, id="name-3-chars"),
        pytest.param({"name": "n" * 100}, id="name-100-chars"),
        pytest.param({"name": "Layer_one-2 x"}, id="name-all-allowed-characters"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param(
            {"parameters": [{"name": f"p{i}", "type": "string", "defaultValue": ""} for i in range(100)]},
            id="parameters-100",
        ),
        pytest.param(
            {"parameters": [{"name": "p" * 100, "type": "number", "defaultValue": 0}]}, id="param-name-100"
        ),
        pytest.param({"tags": [f"t{i}" for i in range(100)]}, id="tags-100"),
        pytest.param({"idType": "i" * 100}, id="id-type-100"),
    ],
)
def test_values_at_the_limits_are_accepted(console: Console, fields: dict[str, Any]) -> None:
    resp = console.post(LAYERS, json={"name": f"limits {uid()}", "idType": "userID", **fields})
    assert resp.status_code == 201, resp.text
    layer = resp.json()["data"]
    for key, value in fields.items():
        assert layer[key] == value
    assert console.layer(layer["id"]) == layer


BAD_CREATES = [
    pytest.param({"name": "ab"}, "name", id="name-2-chars"),
    pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
    pytest.param({"name": "layer.v2"}, "name", id="name-with-period"),
    pytest.param({"id": "ab"}, "id", id="id-2-chars"),
    pytest.param({"id": "i" * 101}, "id", id="id-101-chars"),
    pytest.param({"id": "has space"}, "id", id="id-with-space"),
    pytest.param({"idType": ""}, "idType", id="id-type-empty"),
    pytest.param({"idType": "i" * 101}, "idType", id="id-type-101"),
    pytest.param({"description": "d" * 1001}, "description", id="description-1001-chars"),
    pytest.param({"tags": [f"t{i}" for i in range(101)]}, "tags", id="tags-101"),
    pytest.param(
        {"parameters": [{"name": f"p{i}", "type": "string", "defaultValue": ""} for i in range(101)]},
        "parameters",
        id="parameters-101",
    ),
    pytest.param(
        {"parameters": [{"name": "p" * 101, "type": "string", "defaultValue": ""}]},
        "parameters[0].name",
        id="param-name-101",
    ),
    pytest.param(
        {"parameters": [{"name": "", "type": "string", "defaultValue": ""}]},
        "parameters[0].name",
        id="param-name-empty",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "date", "defaultValue": ""}]},
        "parameters[0].type",
        id="param-type-unknown",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "string"}]}, "parameters[0].defaultValue", id="param-no-default"
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "string", "defaultValue": 1}]},
        "parameters[0].defaultValue",
        id="string-param-number-default",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "number", "defaultValue": "1"}]},
        "parameters[0].defaultValue",
        id="number-param-string-default",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "number", "defaultValue": True}]},
        "parameters[0].defaultValue",
        id="number-param-boolean-default",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "boolean", "defaultValue": "true"}]},
        "parameters[0].defaultValue",
        id="boolean-param-string-default",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "object", "defaultValue": []}]},
        "parameters[0].defaultValue",
        id="object-param-array-default",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "array", "defaultValue": {}}]},
        "parameters[0].defaultValue",
        id="array-param-object-default",
    ),
    pytest.param(
        {
            "parameters": [
                {"name": "p", "type": "string", "defaultValue": ""},
                {"name": "p", "type": "number", "defaultValue": 1},
            ]
        },
        "parameters[1].name",
        id="param-name-repeated",
    ),
    pytest.param(
        {"parameters": [{"name": "p", "type": "string", "defaultValue": "", "colour": 1}]},
        "parameters[0].colour",
        id="param-unknown-field",
    ),
    pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
    pytest.param({"isImplicitLayer": True}, "isImplicitLayer", id="implicit-not-writable"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_CREATES)
def test_create_with_bad_input_is_400_naming_the_field(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    layer_id = f"bad_{uid()}"
    resp = console.post(LAYERS, json={"name": "valid name", "id": layer_id, "idType": "userID", **fields})
    assert_error(resp, 400, field)
    assert_error(console.get(f"{LAYERS}/{layer_id}"), 404)  # nothing was stored


# --- list ----------------------------------------------------------------------------------------------


def test_list_shows_every_layer_as_read(console: Console) -> None:
    created = [console.create_layer(tags=[f"t-{uid()}"]) for _ in range(3)]
    listed = {layer["id"]: layer for layer in console.all_layers()}
    for layer in created:
        assert listed[layer["id"]] == layer


def test_pagination_walks_every_layer_once(console: Console) -> None:
    created = {console.create_layer()["id"] for _ in range(3)}
    total = len(console.all_layers())
    first = console.get(LAYERS, params={"limit": 2}).json()
    assert first["pagination"]["totalItems"] == total and first["pagination"]["itemsPerPage"] == 2
    assert first["pagination"]["previousPage"] is None
    seen = [layer["id"] for layer in first["data"]]
    link = first["pagination"]["nextPage"]
    parts = urlsplit(link)
    assert parts.path == LAYERS and parse_qs(parts.query) == {"page": ["2"], "limit": ["2"]}
    while link is not None:
        resp = console.get(link)
        assert resp.status_code == 200, resp.text
        page = resp.json()
        seen.extend(layer["id"] for layer in page["data"])
        link = page["pagination"]["nextPage"]
        assert len(seen) <= total, "nextPage does not end"
    assert len(seen) == len(set(seen)) == total
    assert created <= set(seen)


@pytest.mark.parametrize(
    ("params", "field"), [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"page": 0}, "page")]
)
def test_bad_page_parameters_are_400(console: Console, params: dict[str, Any], field: str) -> None:
    assert_error(console.get(LAYERS, params=params), 400, field)
    layer = console.create_layer()
    assert_error(console.get(f"{LAYERS}/{layer['id']}/experiments", params=params), 400, field)


# --- full and partial update -----------------------------------------------------------------------------


def test_full_update_requires_description_and_parameters(console: Console) -> None:
    layer = console.create_layer()
    path = f"{LAYERS}/{layer['id']}"
    body = assert_error(console.post(path, json={"targetApps": ["web"]}), 400)
    assert {e["field"] for e in body["errors"]} == {"description", "parameters"}
    assert_error(console.post(path, json={"description": "x"}), 400, "parameters")
    assert_error(console.post(path, json={"parameters": []}), 400, "description")
    assert console.layer(layer["id"]) == layer


def test_full_update_replaces_description_and_parameters(console: Console) -> None:
    layer = console.create_layer(parameters=PARAMETERS[:1], tags=["keep"])
    resp = console.post(
        f"{LAYERS}/{layer['id']}",
        json={"description": "new description", "parameters": PARAMETERS[1:], "targetApps": "new fo"},
    )
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    updated = resp.json()["data"]
    assert updated["description"] == "new description"
    assert updated["parameters"] == PARAMETERS[1:]
    assert updated["targetApps"] == ["new fo"] and updated["tags"] == ["keep"]
    assert updated["version"] == 2 and updated["createdTime"] == layer["createdTime"]
    assert updated["lastModifiedTime"] >= layer["lastModifiedTime"]
    assert console.layer(layer["id"]) == updated


def test_patch_changes_only_the_fields_sent(console: Console) -> None:
    layer = console.create_layer(description="original", parameters=PARAMETERS, team="Core")
    resp = console.patch(f"{LAYERS}/{layer['id']}", json={"description": "patched", "team": None})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["description"] == "patched" and patched["team"] is None
    assert patched["parameters"] == PARAMETERS and patched["version"] == 2
    assert console.layer(layer["id"]) == patched


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"description": "d" * 1001}, "description", id="description-1001"),
        pytest.param({"description": None}, "description", id="description-null"),
        pytest.param({"parameters": None}, "parameters", id="parameters-null"),
        pytest.param(
            {"parameters": [{"name": "p", "type": "number", "defaultValue": "x"}]},
            "parameters[0].defaultValue",
            id="param-default-of-wrong-type",
        ),
        pytest.param(
            {
                "parameters": [
                    {"name": "p", "type": "number", "defaultValue": 1},
                    {"name": "p", "type": "number", "defaultValue": 2},
                ]
            },
            "parameters[1].name",
            id="param-name-repeated",
        ),
        pytest.param({"name": "ab"}, "name", id="name-2-chars"),
        pytest.param({"isImplicitLayer": True}, "isImplicitLayer", id="implicit-not-writable"),
    ],
)
def test_patch_with_bad_input_is_400_and_changes_nothing(
    console: Console, body: dict[str, Any], field: str
) -> None:
    layer = console.create_layer()
    assert_error(console.patch(f"{LAYERS}/{layer['id']}", json=body), 400, field)
    assert console.layer(layer["id"]) == layer


def test_stale_version_is_409_and_changes_nothing(console: Console) -> None:
    layer = console.create_layer()
    path = f"{LAYERS}/{layer['id']}"
    assert console.patch(path, json={"description": "v2", "version": 1}).status_code == 200
    before = console.layer(layer["id"])
    assert_error(console.patch(path, json={"description": "lost", "version": 1}), 409)
    assert_error(console.post(path, json={"description": "lost", "parameters": [], "version": 1}), 409)
    assert console.layer(layer["id"]) == before


def test_update_of_unknown_layer_is_404(console: Console) -> None:
    assert_error(console.patch(f"{LAYERS}/missing_{uid()}", json={"description": "x"}), 404)
    assert_error(console.post(f"{LAYERS}/missing_{uid()}", json={"description": "x", "parameters": []}), 404)


def test_id_type_cannot_change_while_experiments_use_the_layer(console: Console) -> None:
    layer = console.create_layer()
    exp = console.create_experiment(layerID=layer["id"], allocation=10)
    path = f"{LAYERS}/{layer['id']}"
    body = assert_error(console.patch(path, json={"idType": "stableID"}), 400, "idType")
    assert exp["id"] in body["message"]
    assert console.patch(path, json={"idType": "userID"}).status_code == 200  # unchanged: fine
    assert console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"layerID": None}).status_code == 200
    resp = console.patch(path, json={"idType": "stableID"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["idType"] == "stableID"


# --- delete --------------------------------------------------------------------------------------------


def test_delete_removes_the_layer(console: Console) -> None:
    layer = console.create_layer()
    resp = console.delete(f"{LAYERS}/{layer['id']}")
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(console.get(f"{LAYERS}/{layer['id']}"), 404)
    assert layer["id"] not in {item["id"] for item in console.all_layers()}
    assert_error(console.delete(f"{LAYERS}/{layer['id']}"), 404)


def test_delete_is_409_naming_the_experiments_that_use_it(console: Console) -> None:
    layer = console.create_layer()
    one = console.create_experiment(layerID=layer["id"], userBuckets=[0, 1])
    two = console.create_experiment(layerID=layer["id"], userBuckets=[2])
    assert console.put(f"{EXPERIMENTS}/{two['id']}/archive").status_code == 200  # archived ones too
    body = assert_error(console.delete(f"{LAYERS}/{layer['id']}"), 409)
    assert one["id"] in body["message"] and two["id"] in body["message"]
    assert console.layer(layer["id"]) == layer
    assert console.patch(f"{EXPERIMENTS}/{one['id']}", json={"layerID": None}).status_code == 200
    assert console.delete(f"{EXPERIMENTS}/{two['id']}").status_code == 200
    assert console.delete(f"{LAYERS}/{layer['id']}").status_code == 200


def test_delete_is_409_naming_the_holdouts_that_list_it(console: Console) -> None:
    layer = console.create_layer()
    resp = console.post(HOLDOUTS, json={"name": f"holdout {uid()}", "layerIDs": [layer["id"]]})
    assert resp.status_code == 201, resp.text
    holdout = resp.json()["data"]
    assert console.layer(layer["id"])["holdoutIDs"] == [holdout["id"]]  # derived from the holdout
    body = assert_error(console.delete(f"{LAYERS}/{layer['id']}"), 409)
    assert holdout["id"] in body["message"]
    assert console.patch(f"{HOLDOUTS}/{holdout['id']}", json={"layerIDs": []}).status_code == 200
    assert console.layer(layer["id"])["holdoutIDs"] == []
    assert console.delete(f"{LAYERS}/{layer['id']}").status_code == 200


# --- placement of experiments in a layer -------------------------------------------------------------------


def test_experiment_layer_must_exist(console: Console) -> None:
    resp = console.post(EXPERIMENTS, json=experiment_body(layerID=f"no_layer_{uid()}"))
    assert_error(resp, 400, "layerID")


def test_overlapping_buckets_are_400_naming_the_experiment_and_buckets(console: Console) -> None:
    layer = console.create_layer()
    first = console.create_experiment(layerID=layer["id"], userBuckets=list(range(10)), allocation=1)
    # Adjacent buckets: just inside.
    second = console.create_experiment(layerID=layer["id"], userBuckets=[10, 11])
    body = experiment_body(layerID=layer["id"], userBuckets=[20, 9, 11])
    err = assert_error(console.post(EXPERIMENTS, json=body), 400, "userBuckets")
    assert first["id"] in err["message"] and "9" in err["message"]
    assert_error(console.get(f"{EXPERIMENTS}/{body['id']}"), 404)
    # The same buckets in another layer are fine.
    other = console.create_layer()
    assert console.create_experiment(layerID=other["id"], userBuckets=[9])["userBuckets"] == [9]
    # Patching buckets into another experiment's is refused, and changes nothing.
    path = f"{EXPERIMENTS}/{second['id']}"
    err = assert_error(console.patch(path, json={"userBuckets": [10, 11, 5]}), 400, "userBuckets")
    assert first["id"] in err["message"] and "5" in err["message"]
    assert console.experiment(second["id"]) == second
    # Keeping its own buckets is not an overlap with itself.
    assert console.patch(path, json={"userBuckets": [10, 11, 12]}).status_code == 200


def test_moving_an_experiment_into_a_layer_checks_its_buckets(console: Console) -> None:
    layer = console.create_layer()
    console.create_experiment(layerID=layer["id"], userBuckets=[500])
    outside = console.create_experiment(userBuckets=[499, 500])
    path = f"{EXPERIMENTS}/{outside['id']}"
    assert_error(console.patch(path, json={"layerID": layer["id"]}), 400, "userBuckets")
    assert console.experiment(outside["id"])["layerID"] is None
    resp = console.patch(path, json={"layerID": layer["id"], "userBuckets": [499, 501]})
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize(
    ("buckets", "field"),
    [
        pytest.param([0, 999], None, id="0-and-999"),
        pytest.param([1000], "userBuckets[0]", id="1000"),
        pytest.param([-1], "userBuckets[0]", id="negative"),
        pytest.param([1, 2.5], "userBuckets[1]", id="fraction-in-a-layer"),
        pytest.param([3, 4, 3], "userBuckets[2]", id="repeated"),
    ],
)
def test_bucket_values_in_a_layer(console: Console, buckets: list[float], field: str | None) -> None:
    layer = console.create_layer()
    resp = console.post(EXPERIMENTS, json=experiment_body(layerID=layer["id"], userBuckets=buckets))
    if field is None:
        assert resp.status_code == 201, resp.text
        assert resp.json()["data"]["userBuckets"] == buckets
    else:
        assert_error(resp, 400, field)


def test_allocation_must_fit_in_the_free_buckets(console: Console) -> None:
    layer = console.create_layer()
    console.create_experiment(layerID=layer["id"], allocation=60)
    body = experiment_body(layerID=layer["id"], allocation=40.1)  # 401 buckets, 400 free: outside
    err = assert_error(console.post(EXPERIMENTS, json=body), 400, "allocation")
    assert "400" in err["message"]
    last = console.create_experiment(layerID=layer["id"], allocation=40)  # exactly the rest: inside
    assert console.create_experiment(layerID=layer["id"], allocation=0)["allocation"] == 0  # takes none
    assert_error(
        console.post(EXPERIMENTS, json=experiment_body(layerID=layer["id"], allocation=0.1)),
        400,
        "allocation",
    )
    # Growing one of them past the free space is refused too.
    assert_error(console.patch(f"{EXPERIMENTS}/{last['id']}", json={"allocation": 40.1}), 400, "allocation")
    assert console.patch(f"{EXPERIMENTS}/{last['id']}", json={"allocation": 39.9}).status_code == 200


def test_listed_buckets_and_allocations_share_the_layer(console: Console) -> None:
    layer = console.create_layer()
    console.create_experiment(layerID=layer["id"], userBuckets=list(range(500)))
    body = experiment_body(layerID=layer["id"], allocation=50.1)
    assert_error(console.post(EXPERIMENTS, json=body), 400, "allocation")
    console.create_experiment(layerID=layer["id"], allocation=50)
    body = experiment_body(layerID=layer["id"], userBuckets=[999])  # free by number, but no room
    assert_error(console.post(EXPERIMENTS, json=body), 400, "userBuckets")


def test_a_whole_layer_of_listed_buckets(console: Console) -> None:
    layer = console.create_layer()
    exp = console.create_experiment(layerID=layer["id"], userBuckets=list(range(1000)))
    assert len(exp["userBuckets"]) == 1000
    assert console.create_experiment(layerID=layer["id"], allocation=0)["layerID"] == layer["id"]
    assert_error(
        console.post(EXPERIMENTS, json=experiment_body(layerID=layer["id"], userBuckets=[0])),
        400,
        "userBuckets",
    )


def test_archived_experiments_free_their_buckets_until_unarchived(console: Console) -> None:
    layer = console.create_layer()
    old = console.create_experiment(layerID=layer["id"], userBuckets=[7, 8])
    assert console.put(f"{EXPERIMENTS}/{old['id']}/archive").status_code == 200
    new = console.create_experiment(layerID=layer["id"], userBuckets=[8, 9])
    err = assert_error(console.put(f"{EXPERIMENTS}/{old['id']}/unarchive"), 400, "userBuckets")
    assert new["id"] in err["message"] and "8" in err["message"]
    assert console.experiment(old["id"])["status"] == "archived"
    assert console.patch(f"{EXPERIMENTS}/{new['id']}", json={"userBuckets": [9]}).status_code == 200
    assert console.put(f"{EXPERIMENTS}/{old['id']}/unarchive").status_code == 200


def test_restart_as_new_must_fit_the_layer(console: Console) -> None:
    layer = console.create_layer()
    exp = console.create_experiment(layerID=layer["id"], userBuckets=[1, 2])
    assert console.put(f"{EXPERIMENTS}/{exp['id']}/start").status_code == 200
    path = f"{EXPERIMENTS}/{exp['id']}/restart_as_new"
    # The original still holds buckets 1 and 2: the copy would overlap it.
    err = assert_error(console.post(path, json={"name": f"again {uid()}"}), 400, "userBuckets")
    assert exp["id"] in err["message"]
    resp = console.put(f"{EXPERIMENTS}/{exp['id']}/abandon", json={"decisionReason": "restart"})
    assert resp.status_code == 200, resp.text
    assert console.put(f"{EXPERIMENTS}/{exp['id']}/archive").status_code == 200
    resp = console.post(path, json={"name": f"again {uid()}"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["layerID"] == layer["id"] and resp.json()["data"]["userBuckets"] == [1, 2]


def test_experiment_id_type_must_be_the_layers(console: Console) -> None:
    layer = console.create_layer(idType="stableID")
    body = experiment_body(layerID=layer["id"])  # idType defaults to userID
    err = assert_error(console.post(EXPERIMENTS, json=body), 400, "idType")
    assert "stableID" in err["message"]
    exp = console.create_experiment(layerID=layer["id"], idType="stableID", allocation=10)
    assert_error(console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"idType": "userID"}), 400, "idType")


def test_experiments_outside_layers_may_share_buckets(console: Console) -> None:
    # Buckets are a layer's: without a layer there is nothing to share, so no overlap check.
    one = console.create_experiment(userBuckets=[0, 1], allocation=100)
    two = console.create_experiment(userBuckets=[1, 2], allocation=100)
    assert one["layerID"] is None and two["userBuckets"] == [1, 2]
