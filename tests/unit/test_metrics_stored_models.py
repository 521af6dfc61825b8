"""The stored metric and the answered metric (models/metrics.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in (every key and
value; the keys in the model's order, whatever order an older item held them in); the answer built
from it must be its public fields with the derived ones among them, in the order the API has
always answered them.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.metrics import (
    DEFINITION_FIELDS,
    ROLLUP_FIELDS,
    Metric,
    MetricCreate,
    MetricFields,
    MetricState,
    MetricUpdate,
    StoredMetric,
)
from expconsole.services import entities
from expconsole.services.metrics import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, written

# A metric as services/metrics.py creates it: its definition between its descriptive fields and
# its owner.
STORED: dict[str, Any] = {
    "id": "revenue::sum",
    "name": "revenue",
    "type": "sum",
    "directionality": "increase",
    "description": "d",
    "isPermanent": False,
    "isReadOnly": False,
    "isHidden": False,
    "isVerified": True,
    "tags": ["money"],
    "unitTypes": [],
    "metricEvents": [
        {
            "name": "purchase",
            "type": "metadata",
            "metadataKey": "price",
            "criteria": [{"type": "value", "condition": ">", "values": ["5"]}],
        }
    ],
    "rollupTimeWindow": "custom",
    "customRollUpStart": 0,
    "customRollUpEnd": 7.5,
    "team": None,
    "teamID": "t1",
    "owner": {
        "ownerID": "k1",
        "ownerType": "SDK_KEY",
        "ownerName": "CONSOLE API",
        "ownerEmail": "",
        "name": "CONSOLE API",
    },
    **CREATED_AND_MODIFIED,
    "version": 1,
    "_state": {"scheduledArchiveTime": None},
}
DEFINITION = ("metricEvents", "rollupTimeWindow", "customRollUpStart", "customRollUpEnd")
# The same metric once changed: its definition after every other key.
CHANGED: dict[str, Any] = {
    **{k: v for k, v in STORED.items() if k not in DEFINITION},
    **{k: STORED[k] for k in DEFINITION},
}


def test_a_stored_metric_reads_and_writes_back_byte_for_byte() -> None:
    metric = StoredMetric.read(STORED)
    assert metric.state.scheduledArchiveTime is None
    assert written(metric.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # Changed since created: the definition after everything else.
        CHANGED,
        # No `_state` at all; other modules' `_` keys; unknown state keys and a passed schedule.
        {k: v for k, v in STORED.items() if k != "_state"},
        {**CHANGED, "_health": {"a": 1}, "_state": {"scheduledArchiveTime": 5, "x": 1}},
        # A funnel, and a ratio.
        {
            **{k: v for k, v in STORED.items() if k not in DEFINITION},
            "funnelEventList": [{"name": "v", "type": "event_dau"}, {"name": "b", "type": "event_user"}],
            "funnelCountDistinct": "users",
        },
        {
            **CHANGED,
            "metricComponentMetrics": [{"name": "a", "type": "sum"}, {"name": "b", "type": "event_user"}],
        },
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    """Every key and value, as parsed JSON: the item is written in the model's order, whatever
    order an older one held (the answer has its own: `Metric`)."""
    assert StoredMetric.read(older).doc() == older


def test_a_new_definition_replaces_the_old_one() -> None:
    metric = StoredMetric.read({**STORED, "_health": {}})
    definition = {"metricEvents": [{"name": "e", "type": "value", "criteria": []}], "rollupTimeWindow": "7d"}
    metric.set_definition(definition)
    kept = {k: v for k, v in STORED.items() if k not in DEFINITION}
    assert metric.doc() == {**kept, "_health": {}, **definition}, "rollup bounds left out are gone"


def test_a_metric_created_holds_its_definition_where_a_create_stores_it() -> None:
    metric = StoredMetric(
        **{k: v for k, v in STORED.items() if not k.startswith("_")},
        state=MetricState(scheduledArchiveTime=None),
    )
    assert written(metric.doc()) == written(STORED)


def test_set_fields_and_the_schedule_change_only_their_keys() -> None:
    metric = StoredMetric.read(CHANGED)
    metric.set_fields({"description": "new", "team": "core"})
    metric.state = metric.state.model_copy(update={"scheduledArchiveTime": 9})
    changed = {"description": "new", "team": "core", "_state": {"scheduledArchiveTime": 9}}
    assert metric.doc() == {**CHANGED, **changed}


def test_the_answer_has_the_derived_fields_among_the_stored_ones_whatever_their_stored_order() -> None:
    answer = present(CHANGED, now=0).model_dump(mode="json")
    assert written(answer) == written(present(STORED, now=0).model_dump(mode="json"))
    assert list(answer) == [
        *list(STORED)[:11],
        "lineage",
        *DEFINITION,
        "team",
        "teamID",
        "owner",
        "isArchived",
        "scheduledArchiveTime",
        "version",
        "permalink",
        *CREATED_AND_MODIFIED,
    ]
    assert answer["lineage"] == {"events": ["purchase"], "metrics": []}
    assert answer["permalink"] == entities.permalink("METRIC", "revenue::sum")
    assert present({**STORED, "_state": {"scheduledArchiveTime": 5}}, now=10).isArchived is True


def test_the_fields_of_the_answer_are_the_stored_ones_and_the_derived_ones() -> None:
    """A field is declared once (models/metrics.py's parts), stored and answered as it is named;
    a field a client may send is one of them."""
    derived = {"lineage", "isArchived", "scheduledArchiveTime", "permalink"}
    assert Metric.model_fields.keys() == MetricFields.model_fields.keys() | derived
    assert MetricCreate.model_fields.keys() - MetricFields.model_fields.keys() == {"dryRun"}
    assert MetricUpdate.model_fields.keys() - MetricFields.model_fields.keys() == {"dryRun"}
    assert {*DEFINITION_FIELDS, *ROLLUP_FIELDS} <= MetricFields.model_fields.keys()
