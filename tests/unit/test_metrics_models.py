"""Metric request models and the per-type definition rules, without a server or a store.

Errors must name the field by its path (`metricEvents[0].criteria[1].values`), so every check
here goes through `field_errors`, the same rendering the API uses.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from expconsole.models.metrics import (
    MAX_COMPONENTS,
    MAX_CRITERIA,
    MAX_CRITERION_VALUES,
    MAX_FUNNEL_STEPS,
    MAX_METRIC_EVENTS,
    Criterion,
    MetricCreate,
    MetricEventIn,
    MetricExperimentsQuery,
    MetricUpdate,
    definition_errors,
    lineage,
    metric_id,
    normalized_definition,
    referenced_metrics,
    split_id,
)
from expconsole.models.validation import field_errors


def errors_of(model: type, data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    loc_errors = [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]
    return {e["field"]: e["message"] for e in field_errors(loc_errors)}


def event(name: str = "purchase", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def crit(condition: str, values: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "metadata", "column": "sku", "condition": condition, **fields}
    if values is not None:
        out["values"] = values
    return out


def ref(name: str, metric_type: str = "sum") -> dict[str, str]:
    return {"name": name, "type": metric_type}


def steps(count: int, step_type: str = "event_count") -> list[dict[str, str]]:
    return [{"name": f"step{i}", "type": step_type} for i in range(count)]


def shape_of(metric_type: str, **fields: Any) -> dict[str, str]:
    """definition_errors for a body as the API parses it, as {field: message}."""
    body = MetricCreate.model_validate({"name": "metric name", "type": metric_type, **fields})
    return {e["field"]: e["message"] for e in definition_errors(metric_type, body.model_dump(mode="json"))}


# --- the body ---------------------------------------------------------------------------------


def test_a_minimal_body_gets_the_defaults() -> None:
    body = MetricCreate.model_validate({"name": "revenue", "type": "sum", "metricEvents": [event()]})
    assert body.directionality == "increase"
    assert body.description == "" and body.tags == [] and body.unitTypes == []
    assert (body.isPermanent, body.isReadOnly, body.isVerified, body.isHidden, body.dryRun) == (
        False,
        False,
        False,
        False,
        False,
    )
    assert body.team is None and body.teamID is None and body.owner is None


def test_name_and_type_are_required() -> None:
    assert set(errors_of(MetricCreate, {})) == {"name", "type"}


@pytest.mark.parametrize("length, ok", [(3, False), (4, True), (200, True), (201, False)])
def test_name_is_4_to_200_characters(length: int, ok: bool) -> None:
    data = {"name": "n" * length, "type": "funnel"}
    if ok:
        assert MetricCreate.model_validate(data).name == "n" * length
    else:
        assert "name" in errors_of(MetricCreate, data)


@pytest.mark.parametrize("name", ["rev (usd) 50%", "a/b: c.d-e_f", "x::y"])
def test_name_takes_the_peers_characters(name: str) -> None:
    assert MetricCreate.model_validate({"name": name, "type": "sum"}).name == name


@pytest.mark.parametrize("name", ["bad#name", "tab\there", "quote'd"])
def test_name_refuses_other_characters(name: str) -> None:
    assert "name" in errors_of(MetricCreate, {"name": name, "type": "sum"})


@pytest.mark.parametrize("metric_type", ["mean", "composite", "SUM", "event_counts"])
def test_type_must_be_one_of_the_contract(metric_type: str) -> None:
    assert "type" in errors_of(MetricCreate, {"name": "metric", "type": metric_type})


def test_directionality_is_increase_or_decrease() -> None:
    assert MetricCreate.model_validate({"name": "m123", "type": "sum", "directionality": "decrease"})
    assert "directionality" in errors_of(
        MetricCreate, {"name": "m123", "type": "sum", "directionality": "up"}
    )


def test_description_is_at_most_1000_characters() -> None:
    assert MetricCreate.model_validate({"name": "m123", "type": "sum", "description": "d" * 1000})
    assert "description" in errors_of(
        MetricCreate, {"name": "m123", "type": "sum", "description": "d" * 1001}
    )


def test_body_is_strict_and_refuses_unknown_fields() -> None:
    errors = errors_of(
        MetricCreate,
        {"name": "m123", "type": "sum", "isHidden": "true", "dryRun": 1, "lineage": {}, "id": "x::sum"},
    )
    assert set(errors) == {"isHidden", "dryRun", "lineage", "id"}
    assert errors["lineage"] == "is not a field of this request"


def test_tags_take_one_string_or_a_list() -> None:
    assert MetricCreate.model_validate({"name": "m123", "type": "sum", "tags": "web"}).tags == ["web"]
    assert MetricCreate.model_validate({"name": "m123", "type": "sum", "tags": ["a", "b"]}).tags == ["a", "b"]
    assert "tags[0]" in errors_of(MetricCreate, {"name": "m123", "type": "sum", "tags": [""]})


def test_owner_accepts_the_peers_name_and_email() -> None:
    body = MetricCreate.model_validate(
        {"name": "m123", "type": "sum", "owner": {"ownerID": "u1", "name": "Ann", "email": "a@x.io"}}
    )
    assert body.owner is not None
    assert body.owner.as_owner() == {
        "ownerID": "u1",
        "ownerType": "USER",
        "ownerName": "Ann",
        "ownerEmail": "a@x.io",
    }
    assert "owner.ownerID" in errors_of(MetricCreate, {"name": "m123", "type": "sum", "owner": {}})


# --- metric events and criteria ---------------------------------------------------------------


@pytest.mark.parametrize("length, ok", [(0, False), (1, True), (200, True), (201, False)])
def test_event_names_are_1_to_200_characters(length: int, ok: bool) -> None:
    if ok:
        assert MetricEventIn.model_validate({"name": "e" * length})
    else:
        assert "name" in errors_of(MetricEventIn, {"name": "e" * length})


def test_event_type_is_one_of_four() -> None:
    for etype in ("count", "count_distinct", "value"):
        assert MetricEventIn.model_validate(event(type=etype)).type == etype
    assert "type" in errors_of(MetricEventIn, event(type="sum"))


def test_metadata_key_is_required_for_metadata_events_only() -> None:
    assert MetricEventIn.model_validate(event(type="metadata", metadataKey="price")).metadataKey == "price"
    assert "metadataKey" in errors_of(MetricEventIn, event(type="metadata"))
    assert MetricEventIn.model_validate(event(type="count_distinct", metadataKey="sku"))
    assert MetricEventIn.model_validate(event(type="count_distinct"))
    for etype in ("count", "value", None):
        assert "metadataKey" in errors_of(MetricEventIn, event(type=etype, metadataKey="k"))


def test_a_bad_event_type_is_reported_once() -> None:
    assert set(errors_of(MetricEventIn, event(type="bogus", metadataKey="k"))) == {"type"}


@pytest.mark.parametrize("condition", ["in", "not_in", "contains", "not_contains"])
def test_list_conditions_need_1_to_1000_values(condition: str) -> None:
    assert Criterion.model_validate(crit(condition, ["a"])).values == ["a"]
    assert Criterion.model_validate(crit(condition, ["v"] * MAX_CRITERION_VALUES))
    assert "values" in errors_of(Criterion, crit(condition, []))
    assert "values" in errors_of(Criterion, crit(condition))
    assert "values" in errors_of(Criterion, crit(condition, ["v"] * (MAX_CRITERION_VALUES + 1)))


@pytest.mark.parametrize("condition", [">", "<", ">=", "<="])
def test_number_conditions_need_exactly_one_number(condition: str) -> None:
    assert Criterion.model_validate(crit(condition, ["500"])).values == ["500"]
    assert Criterion.model_validate(crit(condition, ["-1.5"]))
    for bad in ([], ["1", "2"], ["abc"], ["nan"], ["inf"]):
        assert "values" in errors_of(Criterion, crit(condition, bad)), bad


def test_equality_needs_exactly_one_value() -> None:
    assert Criterion.model_validate(crit("=", ["x"]))
    assert "values" in errors_of(Criterion, crit("=", ["x", "y"]))
    assert "values" in errors_of(Criterion, crit("="))


@pytest.mark.parametrize("condition", ["is_null", "non_null", "is_true", "is_false"])
def test_no_value_conditions_take_no_values(condition: str) -> None:
    assert Criterion.model_validate(crit(condition)).values == []
    assert Criterion.model_validate(crit(condition, []))
    assert "values" in errors_of(Criterion, crit(condition, ["x"]))


@pytest.mark.parametrize(
    "condition", ["sql_filter", "starts_with", "ends_with", "after_exposure", "before_exposure"]
)
def test_warehouse_native_conditions_are_refused(condition: str) -> None:
    message = errors_of(Criterion, crit(condition, ["x"]))["condition"]
    assert "warehouse-native" in message


def test_unknown_conditions_are_refused_with_the_list() -> None:
    message = errors_of(Criterion, crit("between", ["x"]))["condition"]
    assert "'in'" in message and "'not_contains'" in message


def test_values_are_text() -> None:
    assert "values[0]" in errors_of(Criterion, crit(">", [5]))  # type: ignore[list-item]


def test_value_criteria_address_the_event_value() -> None:
    assert Criterion.model_validate({"type": "value", "condition": ">", "values": ["1"]}).column is None
    assert Criterion.model_validate(
        {"type": "value", "column": "!service_value", "condition": ">", "values": ["1"]}
    )
    assert "column" in errors_of(
        Criterion, {"type": "value", "column": "price", "condition": "=", "values": ["1"]}
    )


@pytest.mark.parametrize("ctype", ["metadata", "user", "user_custom"])
def test_other_criteria_need_a_column(ctype: str) -> None:
    assert Criterion.model_validate({"type": ctype, "column": "country", "condition": "in", "values": ["CA"]})
    assert "column" in errors_of(Criterion, {"type": ctype, "condition": "in", "values": ["CA"]})
    assert "column" in errors_of(
        Criterion, {"type": ctype, "column": " ", "condition": "in", "values": ["CA"]}
    )


def test_service_columns() -> None:
    assert Criterion.model_validate(
        {"type": "metadata", "column": "!service_value", "condition": ">", "values": ["1"]}
    )
    assert "column" in errors_of(
        Criterion, {"type": "metadata", "column": "!service_time", "condition": ">", "values": ["1"]}
    )
    assert "column" in errors_of(
        Criterion, {"type": "user", "column": "!service_value", "condition": ">", "values": ["1"]}
    )


def test_criterion_type_is_one_of_four() -> None:
    assert "type" in errors_of(
        Criterion, {"type": "event", "column": "x", "condition": "in", "values": ["a"]}
    )


def test_nested_errors_carry_the_full_path() -> None:
    errors = errors_of(
        MetricCreate,
        {
            "name": "metric name",
            "type": "sum",
            "metricEvents": [event(), event(criteria=[crit("in", ["a"]), crit(">", ["x"])])],
        },
    )
    assert set(errors) == {"metricEvents[1].criteria[1].values"}


def test_list_limits() -> None:
    base = {"name": "metric name", "type": "sum"}
    assert MetricCreate.model_validate({**base, "metricEvents": [event()] * MAX_METRIC_EVENTS})
    assert "metricEvents" in errors_of(
        MetricCreate, {**base, "metricEvents": [event()] * (MAX_METRIC_EVENTS + 1)}
    )
    criteria = [crit("in", ["a"])]
    assert MetricEventIn.model_validate(event(criteria=criteria * MAX_CRITERIA))
    assert "criteria" in errors_of(MetricEventIn, event(criteria=criteria * (MAX_CRITERIA + 1)))
    refs = [ref(f"m{i}") for i in range(MAX_COMPONENTS + 1)]
    assert MetricCreate.model_validate({**base, "metricComponentMetrics": refs[:MAX_COMPONENTS]})
    assert "metricComponentMetrics" in errors_of(MetricCreate, {**base, "metricComponentMetrics": refs})
    assert MetricCreate.model_validate({**base, "funnelEventList": steps(MAX_FUNNEL_STEPS)})
    assert "funnelEventList" in errors_of(
        MetricCreate, {**base, "funnelEventList": steps(MAX_FUNNEL_STEPS + 1)}
    )


def test_funnel_fields() -> None:
    base = {"name": "metric name", "type": "funnel"}
    assert "funnelEventList[0].type" in errors_of(
        MetricCreate, {**base, "funnelEventList": [{"name": "a", "type": "sum"}]}
    )
    assert "funnelCountDistinct" in errors_of(MetricCreate, {**base, "funnelCountDistinct": "sessions"})


# --- definition rules per type ------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric_type, fields",
    [
        ("sum", {"metricEvents": [event()]}),
        ("sum", {"metricEvents": [event(type="metadata", metadataKey="price")]}),
        ("event_count_custom", {"metricEvents": [event(type="count_distinct")]}),
        ("event_user", {"metricEvents": [event(type="count")]}),
        ("ratio", {"metricComponentMetrics": [ref("a"), ref("b")]}),
        ("composite_sum", {"metricComponentMetrics": [ref("a"), ref("a", "ratio")]}),
        ("funnel", {"funnelEventList": steps(2), "funnelCountDistinct": "events"}),
        ("sum", {"metricEvents": [event()], "metricComponentMetrics": [], "funnelEventList": []}),
    ],
)
def test_valid_definitions_have_no_errors(metric_type: str, fields: dict[str, Any]) -> None:
    assert shape_of(metric_type, **fields) == {}


@pytest.mark.parametrize("metric_type", ["sum", "event_count_custom", "event_user"])
def test_event_types_need_metric_events(metric_type: str) -> None:
    assert "metricEvents" in shape_of(metric_type)
    assert "metricEvents" in shape_of(metric_type, metricEvents=[])


@pytest.mark.parametrize(
    "metric_type, refused",
    [
        ("sum", "count"),
        ("sum", "count_distinct"),
        ("event_count_custom", "value"),
        ("event_count_custom", "metadata"),
        ("event_user", "value"),
        ("event_user", "count_distinct"),
    ],
)
def test_event_type_must_suit_the_metric_type(metric_type: str, refused: str) -> None:
    fields = {"type": refused, "metadataKey": "k"} if refused == "metadata" else {"type": refused}
    errors = shape_of(metric_type, metricEvents=[event(), event(**fields)])
    assert set(errors) == {"metricEvents[1].type"}


@pytest.mark.parametrize(
    "metric_type, field, value",
    [
        ("sum", "metricComponentMetrics", [ref("a"), ref("b")]),
        ("sum", "funnelEventList", steps(2)),
        ("sum", "funnelCountDistinct", "users"),
        ("ratio", "metricEvents", [event()]),
        ("ratio", "funnelEventList", steps(2)),
        ("composite_sum", "metricEvents", [event()]),
        ("funnel", "metricEvents", [event()]),
        ("funnel", "metricComponentMetrics", [ref("a"), ref("b")]),
        ("event_count", "metricEvents", [event()]),
    ],
)
def test_fields_of_other_types_are_refused(metric_type: str, field: str, value: Any) -> None:
    errors = shape_of(metric_type, **{field: value})
    assert field in errors
    assert metric_type in errors[field]


@pytest.mark.parametrize("count", [0, 1, 3])
def test_ratio_takes_exactly_two_components(count: int) -> None:
    errors = shape_of("ratio", metricComponentMetrics=[ref(f"m{i}") for i in range(count)])
    assert set(errors) == {"metricComponentMetrics"}


def test_ratio_numerator_and_denominator_differ() -> None:
    assert set(shape_of("ratio", metricComponentMetrics=[ref("a"), ref("a")])) == {
        "metricComponentMetrics[1]"
    }
    assert shape_of("ratio", metricComponentMetrics=[ref("a"), ref("a", "event_dau")]) == {}


@pytest.mark.parametrize("count, ok", [(0, False), (1, False), (2, True), (MAX_COMPONENTS, True)])
def test_composite_sum_takes_at_least_two(count: int, ok: bool) -> None:
    errors = shape_of("composite_sum", metricComponentMetrics=[ref(f"m{i}") for i in range(count)])
    assert (errors == {}) is ok
    if not ok:
        assert set(errors) == {"metricComponentMetrics"}


def test_composite_sum_components_are_distinct() -> None:
    errors = shape_of("composite_sum", metricComponentMetrics=[ref("a"), ref("b"), ref("a")])
    assert set(errors) == {"metricComponentMetrics[2]"}


@pytest.mark.parametrize("count, ok", [(0, False), (1, False), (2, True), (MAX_FUNNEL_STEPS, True)])
def test_funnel_takes_at_least_two_steps(count: int, ok: bool) -> None:
    errors = shape_of("funnel", funnelEventList=steps(count))
    assert (errors == {}) is ok
    if not ok:
        assert set(errors) == {"funnelEventList"}


def test_rollup_window() -> None:
    events = [event()]
    assert (
        shape_of(
            "sum", metricEvents=events, rollupTimeWindow="custom", customRollUpStart=0, customRollUpEnd=7
        )
        == {}
    )
    assert (
        shape_of(
            "sum", metricEvents=events, rollupTimeWindow="custom", customRollUpStart=3, customRollUpEnd=3
        )
        == {}
    )
    assert set(shape_of("sum", metricEvents=events, rollupTimeWindow="custom")) == {
        "customRollUpStart",
        "customRollUpEnd",
    }
    assert set(
        shape_of(
            "sum", metricEvents=events, rollupTimeWindow="custom", customRollUpStart=8, customRollUpEnd=7
        )
    ) == {"customRollUpEnd"}
    assert set(
        shape_of(
            "sum", metricEvents=events, rollupTimeWindow="custom", customRollUpStart=-1, customRollUpEnd=7
        )
    ) == {"customRollUpStart"}
    assert set(shape_of("sum", metricEvents=events, customRollUpStart=1)) == {"customRollUpStart"}
    assert set(shape_of("sum", metricEvents=events, rollupTimeWindow="latest", customRollUpEnd=1)) == {
        "customRollUpEnd"
    }


# --- normalization and lineage ------------------------------------------------------------------


def _normalized(metric_type: str, **fields: Any) -> dict[str, Any]:
    body = MetricCreate.model_validate({"name": "metric name", "type": metric_type, **fields})
    return normalized_definition(metric_type, body.model_dump(mode="json"))


def test_event_types_default_by_metric_type() -> None:
    assert _normalized("sum", metricEvents=[event()])["metricEvents"][0]["type"] == "value"
    assert _normalized("event_count_custom", metricEvents=[event()])["metricEvents"][0]["type"] == "count"
    assert _normalized("event_user", metricEvents=[event()])["metricEvents"][0]["type"] == "count"


def test_normalized_definition_keeps_only_the_types_fields() -> None:
    out = _normalized("sum", metricEvents=[event(criteria=[crit("is_null")])], metricComponentMetrics=[])
    assert out == {
        "metricEvents": [
            {
                "name": "purchase",
                "type": "value",
                "criteria": [{"type": "metadata", "column": "sku", "condition": "is_null", "values": []}],
            }
        ]
    }
    funnel = _normalized("funnel", funnelEventList=steps(2))
    assert funnel == {"funnelEventList": steps(2), "funnelCountDistinct": "users"}
    ratio = _normalized("ratio", metricComponentMetrics=[ref("a"), ref("b")], rollupTimeWindow="latest")
    assert ratio == {"metricComponentMetrics": [ref("a"), ref("b")], "rollupTimeWindow": "latest"}


def test_lineage_names_events_and_metric_ids() -> None:
    events = {"metricEvents": [event("a"), event("b"), event("a")]}
    assert lineage("sum", events) == {"events": ["a", "b"], "metrics": []}
    components = {"metricComponentMetrics": [ref("x"), ref("y", "ratio")]}
    assert lineage("composite_sum", components) == {"events": [], "metrics": ["x::sum", "y::ratio"]}
    funnel = {
        "funnelEventList": [
            {"name": "view", "type": "event_dau"},
            {"name": "buyers", "type": "event_user"},
            {"name": "buy", "type": "event_count"},
        ]
    }
    assert lineage("funnel", funnel) == {"events": ["view", "buy"], "metrics": ["buyers::event_user"]}
    assert referenced_metrics(funnel) == ["buyers::event_user"]


@pytest.mark.parametrize(
    "value, parts",
    [
        ("revenue::sum", ("revenue", "sum")),
        ("a::b::ratio", ("a::b", "ratio")),
        ("x: y::event_count", ("x: y", "event_count")),
        ("nocolons", None),
        ("::sum", None),
        ("name::", None),
    ],
)
def test_ids_split_at_the_last_double_colon(value: str, parts: tuple[str, str] | None) -> None:
    assert split_id(value) == parts
    if parts:
        assert metric_id(*parts) == value


# --- update body and queries ----------------------------------------------------------------------


def test_update_refuses_null_except_where_allowed() -> None:
    assert "description" in errors_of(MetricUpdate, {"description": None})
    assert "metricEvents" in errors_of(MetricUpdate, {"metricEvents": None})
    body = MetricUpdate.model_validate({"team": None, "teamID": None, "customRollUpStart": None})
    assert body.changes() == {"team": None, "teamID": None, "customRollUpStart": None}


def test_update_sends_only_what_was_given() -> None:
    assert MetricUpdate.model_validate({"description": "x", "version": 2}).changes() == {
        "description": "x",
        "version": 2,
    }
    assert "version" in errors_of(MetricUpdate, {"version": 0})
    assert "lineage" in errors_of(MetricUpdate, {"lineage": {"events": [], "metrics": []}})


@pytest.mark.parametrize("value", ["2024-02-29", "2023-12-31"])
def test_experiment_query_takes_calendar_dates(value: str) -> None:
    assert MetricExperimentsQuery.model_validate({"createdStartDate": value}).createdStartDate == value


@pytest.mark.parametrize("value", ["2023-02-29", "2024-13-01", "2024-1-01", "20240101", "yesterday"])
def test_experiment_query_refuses_other_dates(value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        MetricExperimentsQuery.model_validate({"createdEndDate": value})
    assert caught.value.errors()[0]["loc"] == ("createdEndDate",)
