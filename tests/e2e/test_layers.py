"""End-to-end tests of the layer endpoints (create, list, read, full and partial update,
delete, the layer's experiments), every limit at its edge, and the placement of experiments in
a layer (disjoint buckets, allocation within the layer's 1000 buckets, one id type), over HTTP
against the local server.

The server is shared by the whole session, so every test makes its own layers and experiments
(unique ids). The list of layers takes only `limit` and `page` (as in the peer), so list tests
look for their own layers in the whole list.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_layers_api.py`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.client import assert_error, uid
from tests.functional.test_layers_api import EXPERIMENTS, LAYERS, PARAMETERS, Console


@pytest.fixture(scope="module")
def console(server: Any) -> Console:
    return Console(server.url, server.api_key)


def ids_of(listing: dict[str, Any]) -> set[str]:
    return {e["id"] for e in listing["data"]}


# --- create and read -----------------------------------------------------------------------------------

LAYER_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "isImplicitLayer",
    "parameters",
    "targetApps",
    "tags",
    "holdoutIDs",
    "team",
    "teamID",
    "owner",
    "version",
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


def test_create_derives_id_from_name_and_fills_bookkeeping(console: Console) -> None:
    suffix = uid()
    resp = console.post(
        LAYERS,
        json={
            "name": f"The Best Layer {suffix.upper()}",
            "idType": "stableID",
            "description": "helpful",
            "targetApps": "Android",
            "team": "Console Team",
            "parameters": PARAMETERS,
        },
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert isinstance(body["message"], str) and body["message"]
    layer = body["data"]
    assert layer.keys() >= LAYER_FIELDS, f"missing: {LAYER_FIELDS - layer.keys()}"
    assert layer["id"] == f"the_best_layer_{suffix}"
    assert layer["idType"] == "stableID" and layer["description"] == "helpful"
    assert layer["isImplicitLayer"] is False
    assert layer["parameters"] == PARAMETERS
    assert layer["targetApps"] == ["Android"] and layer["tags"] == [] and layer["holdoutIDs"] == []
    assert layer["team"] == "Console Team" and layer["teamID"] is None
    assert layer["version"] == 1 and layer["creatorName"] == "CONSOLE API"
    assert layer["owner"]["ownerType"] == "SDK_KEY"
    assert layer["createdTime"] == layer["lastModifiedTime"] > 1_600_000_000_000
    assert layer["permalink"].endswith(f"/layers/{layer['id']}")
    assert console.layer(layer["id"]) == layer


def test_get_unknown_layer_is_404(console: Console) -> None:
    assert_error(console.get(f"{LAYERS}/no_such_layer_{uid()}"), 404)
    assert_error(console.get(f"{LAYERS}/no_such_layer_{uid()}/experiments"), 404)


def test_keys_are_checked(console: Console, server: Any) -> None:
    layer = console.create_layer()
    for path in (LAYERS, f"{LAYERS}/{layer['id']}", f"{LAYERS}/{layer['id']}/experiments"):
        missing = console.get(path, key=None)
        assert missing.status_code == 401 and isinstance(missing.json()["message"], str), missing.text
        assert_error(console.get(path, key="console-not-a-real-key"), 401)
        assert_error(console.get(path, key=server.server_secret), 403)
    assert_error(console.delete(f"{LAYERS}/{layer['id']}", key=server.server_secret), 403)
    assert console.layer(layer["id"]) == layer


# --- the layer's experiments ---------------------------------------------------------------------------


def test_layer_experiments_lists_the_experiments_placed_in_it(console: Console) -> None:
    layer, other = console.create_layer(), console.create_layer()
    one = console.create_experiment(layerID=layer["id"], userBuckets=[0])
    two = console.create_experiment(layerID=layer["id"], userBuckets=[1])
    three = console.create_experiment(layerID=layer["id"], userBuckets=[2])
    console.create_experiment(layerID=other["id"], userBuckets=[0])
    console.create_experiment()
    assert console.put(f"{EXPERIMENTS}/{three['id']}/archive").status_code == 200
    listing = console.layer_experiments(layer["id"])
    assert isinstance(listing["message"], str)
    assert ids_of(listing) == {one["id"], two["id"], three["id"]}
    shown = {e["id"]: e for e in listing["data"]}
    assert shown[one["id"]] == console.experiment(one["id"])
    assert listing["pagination"]["totalItems"] == 3
    first = console.layer_experiments(layer["id"], limit=2)
    assert len(first["data"]) == 2
    parts = urlsplit(first["pagination"]["nextPage"])
    assert parts.path == f"{LAYERS}/{layer['id']}/experiments"
    assert parse_qs(parts.query) == {"page": ["2"], "limit": ["2"]}
    second = console.get(first["pagination"]["nextPage"]).json()
    assert ids_of(first) | ids_of(second) == ids_of(listing) and second["pagination"]["nextPage"] is None
    assert console.layer_experiments(console.create_layer()["id"])["data"] == []
