"""A layered experiment keeps the buckets it took at its start, whatever its layer's other
experiments do afterwards; the SDK document serves exactly those buckets."""

from __future__ import annotations

from typing import Any

from expconsole.services.sdk import documents, specs
from tests.conftest import Caller

LAYER = {
    "name": "checkout layer",
    "idType": "userID",
    "parameters": [{"name": "color", "type": "string", "defaultValue": "grey"}],
}


def _experiment(name: str, allocation: float) -> dict[str, Any]:
    return {
        "name": name,
        "layerID": "checkout_layer",
        "allocation": allocation,
        "groups": [
            {"name": "Control", "size": 50, "parameterValues": {"color": "grey"}},
            {"name": "Test", "size": 50, "parameterValues": {"color": "blue"}},
        ],
    }


def _served_buckets() -> dict[str, list[int]]:
    doc = specs.build(documents.snapshot(), 1)
    layer = next(spec for spec in doc["layer_configs"] if spec["name"] == "checkout_layer")
    return {rule["configDelegate"]: rule["conditions"][0]["targetValue"] for rule in layer["rules"]}


def test_started_experiments_keep_their_buckets_when_others_start_and_end(aws: None) -> None:
    layers, experiments = Caller("layers"), Caller("experiments")
    assert layers("POST", "/console/v1/layers", LAYER)[0] == 201
    for name, allocation in (("first exp", 30), ("second exp", 20), ("third exp", 10)):
        assert experiments("POST", "/console/v1/experiments", _experiment(name, allocation))[0] == 201

    assert experiments("PUT", "/console/v1/experiments/second_exp/start", {})[0] == 200
    assert _served_buckets() == {"second_exp": list(range(200))}
    assert experiments("PUT", "/console/v1/experiments/first_exp/start", {})[0] == 200
    assert _served_buckets() == {"second_exp": list(range(200)), "first_exp": list(range(200, 500))}

    # the second ends and leaves the layer: the first keeps its buckets; the third takes free ones
    abandon = {"decisionReason": "no effect"}
    assert experiments("PUT", "/console/v1/experiments/second_exp/abandon", abandon)[0] == 200
    assert experiments("PUT", "/console/v1/experiments/second_exp/archive", {})[0] == 200
    assert experiments("PUT", "/console/v1/experiments/third_exp/start", {})[0] == 200
    served = _served_buckets()
    assert served["first_exp"] == list(range(200, 500))
    assert served["third_exp"] == list(range(100)) and "second_exp" not in served


def test_listed_user_buckets_are_served_as_listed(aws: None) -> None:
    layers, experiments = Caller("layers"), Caller("experiments")
    assert layers("POST", "/console/v1/layers", LAYER)[0] == 201
    body = {**_experiment("listed exp", 100), "userBuckets": [5, 7, 999]}
    body.pop("allocation")
    assert experiments("POST", "/console/v1/experiments", body)[0] == 201
    assert experiments("PUT", "/console/v1/experiments/listed_exp/start", {})[0] == 200
    assert _served_buckets() == {"listed_exp": [5, 7, 999]}
