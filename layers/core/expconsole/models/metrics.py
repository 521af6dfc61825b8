"""Metrics: request bodies, list queries, the stored metric, the response shape and the
definition rules per type.

A metric is identified by `<name>::<type>`; the name has 4 to 200 characters (letters, digits,
space and `_ . - ( ) / % :`, as the peer allows). Its definition is one of three kinds, fixed by
its `type`; a field another type uses is refused (an empty array counts as left out):

- `sum`: `metricEvents` (1-20), summing event values; `metricEvents[].type` `value` (the
  default) or `metadata`.
- `event_count_custom`: `metricEvents` (1-20), counting matching events; type `count` (the
  default) or `count_distinct`.
- `event_user`: `metricEvents` (1-20), units with a matching event; type `count` (the default).
- `ratio`: `metricComponentMetrics`, exactly 2 (numerator first, then a different denominator),
  each an existing metric, built-ins included.
- `composite_sum`: `metricComponentMetrics`, 2-20 distinct existing metrics, summed.
- `funnel`: `funnelEventList` (2-10 steps) and `funnelCountDistinct` `events`|`users` (default
  `users`).
- `event_count`, `event_dau`: built in for every event name, so never created (409).

A funnel step `{name, type}` of type `event_count`/`event_dau` names an event (any event: the
built-ins exist for all of them); one of type `event_count_custom`/`event_user` names a metric
of that type, which must exist. Component metrics and custom steps may not form a cycle.

Metric events: `metadataKey` is required for `metadata` (the key summed), optional for
`count_distinct` (distinct values of that key, else of the event value) and refused otherwise.
Criteria `{type, column, condition, values}` filter the events:

- `type` `value` addresses the event value (`column` left out or `!service_value`); `metadata`,
  `user` and `user_custom` need a `column` (the metadata key or user field). A column with the
  prefix `!service_` addresses a built-in field: only `!service_value` (the event value) exists,
  and it goes with types `value` and `metadata`.
- `condition` is one of the peer's: `in`, `not_in`, `contains`, `not_contains` take 1-1000
  `values`; `=` exactly one; `>`, `<`, `>=`, `<=` exactly one number (as text); `is_null`,
  `non_null`, `is_true`, `is_false` none. The peer's warehouse-native-only conditions
  (`sql_filter`, `starts_with`, `ends_with`, `after_exposure`, `before_exposure`) are refused.

`rollupTimeWindow` `custom` needs `customRollUpStart` <= `customRollUpEnd` (days since
exposure, >= 0); the custom bounds are refused with any other window.

Type-independent rules live in field validators (so errors carry the field's path); the
rules that depend on the metric type are `definition_errors`, a pure function the service
runs on the definition a create or update would store.

A metric's fields are declared once, in parts (`_MetricHead`, `_MetricDefinition`, ...) that
`MetricFields` (what it stores, in the order a create stores them) and `Metric` (the answer, the
fields derived on every read among them, in the order the API has always answered them) both list;
the stored metric (`StoredMetric`) adds its archive schedule and writes its keys back in the order
its item held them.
"""

import math
import re
from collections.abc import Mapping
from datetime import date
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from expconsole import kinds
from expconsole.models.base import (
    Description,
    Number,
    PatchModel,
    QueryBool,
    RequestModel,
    ResponseModel,
    Tag,
)
from expconsole.models.common import EventWarning, MetricRef
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.stored import StoredModel

MetricType = Literal[
    "sum",
    "ratio",
    "event_count",
    "event_count_custom",
    "event_dau",
    "event_user",
    "composite_sum",
    "funnel",
]
METRIC_TYPES: tuple[str, ...] = MetricType.__args__  # type: ignore[attr-defined]
BUILTIN_TYPES = frozenset({"event_count", "event_dau"})
EVENT_TYPES = frozenset({"sum", "event_count_custom", "event_user"})
COMPONENT_TYPES = frozenset({"ratio", "composite_sum"})
Directionality = Literal["increase", "decrease"]
MetricEventType = Literal["count", "count_distinct", "value", "metadata"]
CriterionType = Literal["value", "metadata", "user", "user_custom"]
FunnelStepType = Literal["event_dau", "event_user", "event_count", "event_count_custom"]
CUSTOM_STEP_TYPES = frozenset({"event_user", "event_count_custom"})
ExperimentStatus = Literal[
    "active", "setup", "decision_made", "abandoned", "archived", "experiment_stopped", "assignment_stopped"
]
ExperimentType = Literal["BASE", "GEO", "SWITCHBACK", "PROMPT", "SIDECAR", "GRID_SEARCH"]

NAME_PATTERN = r"^[a-zA-Z0-9_.\-()/ %:]*$"
SERVICE_PREFIX = "!service_"
SERVICE_VALUE = "!service_value"

MAX_METRIC_EVENTS = 20
MAX_CRITERIA = 20
MAX_CRITERION_VALUES = 1000
MAX_COMPONENTS = 20
MIN_COMPOSITE_COMPONENTS = 2
RATIO_COMPONENTS = 2
MIN_FUNNEL_STEPS = 2
MAX_FUNNEL_STEPS = 10

# Which metricEvents[].type each event-based metric type allows; the first is the default.
EVENT_TYPES_ALLOWED: dict[str, tuple[str, ...]] = {
    "sum": ("value", "metadata"),
    "event_count_custom": ("count", "count_distinct"),
    "event_user": ("count",),
}

LIST_CONDITIONS = frozenset({"in", "not_in", "contains", "not_contains"})
SINGLE_CONDITIONS = frozenset({"="})
NUMBER_CONDITIONS = frozenset({">", "<", ">=", "<="})
NO_VALUE_CONDITIONS = frozenset({"is_null", "non_null", "is_true", "is_false"})
CONDITIONS = LIST_CONDITIONS | SINGLE_CONDITIONS | NUMBER_CONDITIONS | NO_VALUE_CONDITIONS
WAREHOUSE_ONLY_CONDITIONS = frozenset(
    {"sql_filter", "starts_with", "ends_with", "after_exposure", "before_exposure"}
)
_CONDITION_ORDER = ("in", "not_in", "=", ">", "<", ">=", "<=", "is_null", "non_null", "contains")
_CONDITION_LIST = ", ".join(repr(c) for c in (*_CONDITION_ORDER, "not_contains", "is_true", "is_false"))

# The definition fields: which ones a metric type uses is decided by `definition_errors`.
DEFINITION_FIELDS = ("metricEvents", "metricComponentMetrics", "funnelEventList", "funnelCountDistinct")
ROLLUP_FIELDS = ("rollupTimeWindow", "customRollUpStart", "customRollUpEnd")


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


MetricName = Annotated[
    str,
    StringConstraints(min_length=4, max_length=200, pattern=NAME_PATTERN),
    Field(
        description="4 to 200 characters: letters, digits, space and _ . - ( ) / % :. "
        "With the type it makes the id `<name>::<type>`."
    ),
]
EventName = Annotated[str, StringConstraints(min_length=1, max_length=200)]
UnitType = Annotated[str, StringConstraints(min_length=1, max_length=100)]
# The peer takes one tag or a list of them.
TagList = Annotated[list[Tag], BeforeValidator(_one_or_many)]


def metric_id(name: str, metric_type: str) -> str:
    return f"{name}::{metric_type}"


def split_id(value: str) -> tuple[str, str] | None:
    """`<name>::<type>` → (name, type); None when it has no `::` or either part is empty.

    The type is what follows the last `::` (no type contains a colon), so names may contain
    colons themselves.
    """
    name, sep, metric_type = value.rpartition("::")
    if not sep or not name or not metric_type:
        return None
    return name, metric_type


# --- request pieces ----------------------------------------------------------------------------


def _is_number_text(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


class Criterion(RequestModel):
    """A filter on the events a metric counts: all criteria of an event must hold."""

    type: CriterionType = Field(description="`value`, `metadata`, `user` or `user_custom`.")
    condition: str = Field(description="A condition of the peer's set (see the module docstring).")
    column: str | None = Field(
        None,
        validate_default=True,
        max_length=200,
        description="The metadata key or user field; `!service_value` addresses the event value.",
    )
    values: list[str] | None = Field(
        None, validate_default=True, description="Values to compare with, as text."
    )
    nullVacuousOverride: bool | None = None

    @field_validator("condition")
    @classmethod
    def _condition(cls, value: str) -> str:
        if value in WAREHOUSE_ONLY_CONDITIONS:
            raise ValueError(
                f"{value!r} applies only to warehouse-native metrics; use one of {_CONDITION_LIST}"
            )
        if value not in CONDITIONS:
            raise ValueError(f"unknown condition {value!r}; use one of {_CONDITION_LIST}")
        return value

    @field_validator("column")
    @classmethod
    def _column(cls, value: str | None, info: ValidationInfo) -> str | None:
        ctype = info.data.get("type")
        if value is not None and value.startswith(SERVICE_PREFIX) and value != SERVICE_VALUE:
            raise ValueError(
                f"unknown built-in column {value!r}: the only `{SERVICE_PREFIX}` column is "
                f"{SERVICE_VALUE!r} (the event value)"
            )
        if ctype is None:
            return value
        if ctype == "value":
            if value not in (None, SERVICE_VALUE):
                raise ValueError(
                    f"must be left out or {SERVICE_VALUE!r} for criterion type 'value' "
                    "(it addresses the event value)"
                )
            return value
        if value is None or not value.strip():
            raise ValueError(f"is required for criterion type {ctype!r} (the key or field to filter on)")
        if value == SERVICE_VALUE and ctype != "metadata":
            raise ValueError(
                f"{SERVICE_VALUE!r} addresses the event value: use it with criterion type 'value' or "
                f"'metadata', not {ctype!r}"
            )
        return value

    @field_validator("values")
    @classmethod
    def _values(cls, value: list[str] | None, info: ValidationInfo) -> list[str]:
        condition = info.data.get("condition")
        values = value or []
        if len(values) > MAX_CRITERION_VALUES:
            raise ValueError(f"has {len(values)} values; at most {MAX_CRITERION_VALUES} are allowed")
        if condition is None:
            return values  # the condition's own error is reported
        if condition in LIST_CONDITIONS and not values:
            raise ValueError(f"needs at least one value for condition {condition!r}")
        if condition in SINGLE_CONDITIONS | NUMBER_CONDITIONS and len(values) != 1:
            raise ValueError(f"needs exactly one value for condition {condition!r}")
        if condition in NUMBER_CONDITIONS and not _is_number_text(values[0]):
            raise ValueError(f"must be a number (as text, e.g. '500') for condition {condition!r}")
        if condition in NO_VALUE_CONDITIONS and values:
            raise ValueError(f"takes no values for condition {condition!r}; leave it out")
        return values


class MetricEventIn(RequestModel):
    """An event a metric is built from, with the criteria its occurrences must meet."""

    name: EventName = Field(description="The event name.")
    type: MetricEventType | None = Field(
        None, description="`count`, `count_distinct`, `value` or `metadata`; defaults by metric type."
    )
    metadataKey: str | None = Field(None, validate_default=True, min_length=1, max_length=200)
    criteria: list[Criterion] = Field(default_factory=list, max_length=MAX_CRITERIA)

    @field_validator("metadataKey")
    @classmethod
    def _metadata_key(cls, value: str | None, info: ValidationInfo) -> str | None:
        if "type" not in info.data:
            return value  # the type's own error is reported
        etype = info.data["type"]
        if etype == "metadata" and not value:
            raise ValueError("is required for event type 'metadata' (the metadata key summed)")
        if value is not None and etype not in ("metadata", "count_distinct"):
            raise ValueError("is used only with event type 'metadata' or 'count_distinct'; leave it out")
        return value


class FunnelStep(RequestModel):
    name: EventName = Field(
        description="An event name (types event_count, event_dau) or a metric name (event_user, "
        "event_count_custom)."
    )
    type: FunnelStepType


class MetricOwnerIn(RequestModel):
    """The owner: `ownerID` required; `name`/`email` are accepted as the peer's update sends them."""

    ownerID: str = Field(min_length=1, max_length=200)
    ownerType: str = Field("USER", min_length=1, max_length=50, description="`USER` or `SDK_KEY`.")
    ownerName: str | None = Field(None, max_length=200)
    ownerEmail: str | None = Field(None, max_length=320)
    name: str | None = Field(None, max_length=200)
    email: str | None = Field(None, max_length=320)

    def as_owner(self) -> dict[str, str]:
        return {
            "ownerID": self.ownerID,
            "ownerType": self.ownerType,
            "ownerName": self.ownerName or self.name or "",
            "ownerEmail": self.ownerEmail or self.email or "",
        }


# --- bodies ------------------------------------------------------------------------------------


class MetricCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "revenue",
                    "type": "sum",
                    "description": "Purchase value in USD (the purchase event's value).",
                    "directionality": "increase",
                    "tags": ["checkout"],
                    "unitTypes": ["userID"],
                    "metricEvents": [{"name": "purchase", "type": "value"}],
                },
                {
                    "name": "mobile checkout starts",
                    "type": "event_count_custom",
                    "description": "Checkouts started in the iOS and Android apps.",
                    "metricEvents": [
                        {
                            "name": "checkout_start",
                            "criteria": [
                                {
                                    "type": "metadata",
                                    "column": "platform",
                                    "condition": "in",
                                    "values": ["ios", "android"],
                                }
                            ],
                        }
                    ],
                },
                {
                    "name": "purchasers",
                    "type": "event_user",
                    "description": "Users with at least one purchase.",
                    "metricEvents": [{"name": "purchase"}],
                },
                {
                    "name": "revenue per checkout start",
                    "type": "ratio",
                    "description": "Revenue over mobile checkout starts (numerator first).",
                    "metricComponentMetrics": [
                        {"name": "revenue", "type": "sum"},
                        {"name": "mobile checkout starts", "type": "event_count_custom"},
                    ],
                },
                {
                    "name": "checkout funnel",
                    "type": "funnel",
                    "description": "From adding to the cart to paying, counted in users.",
                    "funnelEventList": [
                        {"name": "add_to_cart", "type": "event_count"},
                        {"name": "checkout_start", "type": "event_count"},
                        {"name": "purchase", "type": "event_count"},
                    ],
                    "funnelCountDistinct": "users",
                },
            ]
        }
    )

    name: MetricName
    type: MetricType
    description: Description = ""
    directionality: Directionality = "increase"
    tags: TagList = Field(default_factory=list)
    isPermanent: bool = False
    isReadOnly: bool = Field(False, description="Editable only through the console API.")
    isVerified: bool = False
    isHidden: bool = Field(False, description="Hidden metrics leave lists unless showHiddenMetrics=true.")
    unitTypes: list[UnitType] = Field(default_factory=list)
    metricEvents: list[MetricEventIn] | None = Field(None, max_length=MAX_METRIC_EVENTS)
    metricComponentMetrics: list[MetricRef] | None = Field(None, max_length=MAX_COMPONENTS)
    funnelEventList: list[FunnelStep] | None = Field(None, max_length=MAX_FUNNEL_STEPS)
    funnelCountDistinct: Literal["events", "users"] | None = None
    rollupTimeWindow: str | None = Field(None, min_length=1, max_length=50)
    customRollUpStart: Number | None = None
    customRollUpEnd: Number | None = None
    team: str | None = Field(None, max_length=200)
    teamID: str | None = Field(None, max_length=200)
    owner: MetricOwnerIn | None = None
    dryRun: bool = Field(False, description="Validate and return the metric without storing it (200).")


class MetricUpdate(PatchModel):
    """POST /metrics/{id}: the fields sent replace the stored ones; `name` and `type` cannot change."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "description": "Purchase value in USD, large orders left out.",
                    "metricEvents": [
                        {
                            "name": "purchase",
                            "type": "value",
                            "criteria": [{"type": "value", "condition": "<", "values": ["5000"]}],
                        }
                    ],
                    "isVerified": True,
                }
            ]
        }
    )

    NULLABLE = frozenset(
        {"team", "teamID", "rollupTimeWindow", "customRollUpStart", "customRollUpEnd", "funnelCountDistinct"}
    )

    name: MetricName | None = Field(None, description="Must equal the stored name when sent.")
    type: MetricType | None = Field(None, description="Must equal the stored type when sent.")
    description: Description | None = None
    directionality: Directionality | None = None
    tags: TagList | None = None
    isPermanent: bool | None = None
    isReadOnly: bool | None = None
    isVerified: bool | None = None
    isHidden: bool | None = None
    unitTypes: list[UnitType] | None = None
    metricEvents: list[MetricEventIn] | None = Field(None, max_length=MAX_METRIC_EVENTS)
    metricComponentMetrics: list[MetricRef] | None = Field(None, max_length=MAX_COMPONENTS)
    funnelEventList: list[FunnelStep] | None = Field(None, max_length=MAX_FUNNEL_STEPS)
    funnelCountDistinct: Literal["events", "users"] | None = None
    rollupTimeWindow: str | None = Field(None, min_length=1, max_length=50)
    customRollUpStart: Number | None = None
    customRollUpEnd: Number | None = None
    team: str | None = Field(None, max_length=200)
    teamID: str | None = Field(None, max_length=200)
    owner: MetricOwnerIn | None = None
    dryRun: bool | None = Field(None, description="Validate and return the result without storing it.")
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


# --- the definition rules ----------------------------------------------------------------------


def _present(value: Any) -> bool:
    """A definition field counts as sent unless it is absent, null or an empty array."""
    return value is not None and value != []


def definition_errors(metric_type: str, fields: dict[str, Any]) -> list[dict[str, str]]:
    """What is wrong with a metric definition of this type, as `{field, message}` pairs.

    `fields` holds JSON values (as `model_dump(mode="json")` gives them); pure: existence of
    referenced metrics is the service's to check.
    """
    errors: list[dict[str, str]] = []

    def error(field: str, message: str) -> None:
        errors.append({"field": field, "message": message})

    used: set[str] = set()
    if metric_type in EVENT_TYPES:
        used = {"metricEvents"}
    elif metric_type in COMPONENT_TYPES:
        used = {"metricComponentMetrics"}
    elif metric_type == "funnel":
        used = {"funnelEventList", "funnelCountDistinct"}
    for field in DEFINITION_FIELDS:
        if field not in used and _present(fields.get(field)):
            error(field, f"is not used by metrics of type {metric_type!r}; leave it out")

    if metric_type in EVENT_TYPES:
        events = fields.get("metricEvents") or []
        if not events:
            error("metricEvents", f"is required for type {metric_type!r}: at least one event")
        allowed = EVENT_TYPES_ALLOWED[metric_type]
        for index, event in enumerate(events):
            etype = event.get("type")
            if etype is not None and etype not in allowed:
                error(
                    f"metricEvents[{index}].type",
                    f"must be one of {', '.join(repr(a) for a in allowed)} for type {metric_type!r}",
                )
    elif metric_type in COMPONENT_TYPES:
        components = fields.get("metricComponentMetrics") or []
        ids = [metric_id(c["name"], c["type"]) for c in components]
        if metric_type == "ratio":
            if len(components) != RATIO_COMPONENTS:
                error(
                    "metricComponentMetrics",
                    f"must name exactly {RATIO_COMPONENTS} metrics for type 'ratio' (numerator, then "
                    f"denominator); got {len(components)}",
                )
            elif ids[0] == ids[1]:
                error("metricComponentMetrics[1]", "the denominator must differ from the numerator")
        else:
            if len(components) < MIN_COMPOSITE_COMPONENTS:
                error(
                    "metricComponentMetrics",
                    f"must name at least {MIN_COMPOSITE_COMPONENTS} metrics for type 'composite_sum'; "
                    f"got {len(components)}",
                )
            seen: set[str] = set()
            for index, cid in enumerate(ids):
                if cid in seen:
                    error(f"metricComponentMetrics[{index}]", f"names {cid!r} twice")
                seen.add(cid)
    elif metric_type == "funnel":
        steps = fields.get("funnelEventList") or []
        if len(steps) < MIN_FUNNEL_STEPS:
            error(
                "funnelEventList",
                f"must have at least {MIN_FUNNEL_STEPS} steps for type 'funnel'; got {len(steps)}",
            )

    window = fields.get("rollupTimeWindow")
    start, end = fields.get("customRollUpStart"), fields.get("customRollUpEnd")
    if window == "custom":
        for field, value in (("customRollUpStart", start), ("customRollUpEnd", end)):
            if value is None:
                error(field, "is required when rollupTimeWindow is 'custom'")
            elif value < 0:
                error(field, "must be at least 0 (days since exposure)")
        if start is not None and end is not None and start >= 0 and end >= 0 and start > end:
            error("customRollUpEnd", "must not be before customRollUpStart")
    else:
        for field, value in (("customRollUpStart", start), ("customRollUpEnd", end)):
            if value is not None:
                error(field, "is used only when rollupTimeWindow is 'custom'; leave it out")
    return errors


def normalized_definition(metric_type: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The definition fields stored for a valid definition: the type's own, defaults resolved."""
    out: dict[str, Any] = {}
    if metric_type in EVENT_TYPES:
        default = EVENT_TYPES_ALLOWED[metric_type][0]
        out["metricEvents"] = [_stored_event(e, default) for e in fields.get("metricEvents") or []]
    elif metric_type in COMPONENT_TYPES:
        out["metricComponentMetrics"] = [
            {"name": c["name"], "type": c["type"]} for c in fields.get("metricComponentMetrics") or []
        ]
    elif metric_type == "funnel":
        out["funnelEventList"] = [{"name": s["name"], "type": s["type"]} for s in fields["funnelEventList"]]
        out["funnelCountDistinct"] = fields.get("funnelCountDistinct") or "users"
    for field in ROLLUP_FIELDS:
        if fields.get(field) is not None:
            out[field] = fields[field]
    return out


def _stored_event(event: dict[str, Any], default_type: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": event["name"], "type": event.get("type") or default_type}
    if event.get("metadataKey") is not None:
        out["metadataKey"] = event["metadataKey"]
    out["criteria"] = [{k: v for k, v in c.items() if v is not None} for c in event.get("criteria") or []]
    return out


def lineage(metric_type: str, definition: dict[str, Any]) -> dict[str, list[str]]:
    """Events and metrics (as `<name>::<type>` ids) a definition names directly."""
    events: list[str] = []
    metrics: list[str] = []
    for event in definition.get("metricEvents") or []:
        events.append(event["name"])
    for component in definition.get("metricComponentMetrics") or []:
        metrics.append(metric_id(component["name"], component["type"]))
    for step in definition.get("funnelEventList") or []:
        if step["type"] in CUSTOM_STEP_TYPES:
            metrics.append(metric_id(step["name"], step["type"]))
        else:
            events.append(step["name"])
    return {"events": list(dict.fromkeys(events)), "metrics": list(dict.fromkeys(metrics))}


def referenced_metrics(definition: dict[str, Any]) -> list[str]:
    """Ids of the stored metrics a definition depends on (components and custom funnel steps)."""
    return lineage("", definition)["metrics"]


# --- queries -----------------------------------------------------------------------------------


class MetricListQuery(PageQuery):
    type: list[MetricType] | None = Field(None, description="Metrics of any of these types.")
    tags: list[str] | None = Field(None, description="Metrics carrying any of these tags.")
    filters: str | None = Field(
        None, description='JSON object with more filters, as the peer takes it: `{"tags": ["a"]}`.'
    )
    creatorName: str | None = None
    creatorID: str | None = None
    teamID: str | None = None
    showHiddenMetrics: QueryBool = Field(False, description="Include hidden metrics.")
    includeArchived: QueryBool = Field(False, description="Include archived metrics.")


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_date(value: str | None) -> date | None:
    if value is None:
        return None
    if not _DATE.match(value):
        raise ValueError("must be a date as YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a valid calendar date as YYYY-MM-DD") from None


class MetricExperimentsQuery(PageQuery):
    """Filters of GET /metrics/{id}/experiments, named as the peer's experiment lists name them."""

    layerID: str | None = None
    idType: list[str] | None = Field(None, description="Any of these id types.")
    teamID: str | None = None
    status: list[ExperimentStatus] | None = Field(None, description="Any of these statuses.")
    targetAppID: str | None = None
    isStale: QueryBool = Field(False, description="true: only stale experiments; false: all.")
    createdStartDate: str | None = Field(None, description="Created on or after this UTC day, YYYY-MM-DD.")
    createdEndDate: str | None = Field(None, description="Created on or before this UTC day, YYYY-MM-DD.")
    experimentType: list[ExperimentType] | None = Field(None, description="Any of these experiment types.")
    creatorName: str | None = None
    creatorID: str | None = None
    tags: list[str] | None = Field(None, description="Experiments carrying any of these tags.")

    @field_validator("createdStartDate", "createdEndDate")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        parse_date(value)
        return value


# --- responses ---------------------------------------------------------------------------------


class MetricOwner(ResponseModel):
    ownerID: str
    ownerType: str
    ownerName: str
    ownerEmail: str
    name: str


class Lineage(ResponseModel):
    events: list[str]
    metrics: list[str] = Field(description="Ids (`<name>::<type>`) of the metrics this one is built on.")


def _absent(value: object) -> bool:
    """`exclude_if` of the definition fields: a metric stores (and answers) only its type's own."""
    return value is None


class _MetricHead(ResponseModel):
    id: str
    name: str
    type: MetricType
    directionality: Directionality
    description: str
    isPermanent: bool
    isReadOnly: bool
    isHidden: bool
    isVerified: bool
    tags: list[str]
    unitTypes: list[str]


class _MetricDefinition(ResponseModel):
    """The definition fields (`normalized_definition`), in its order; those a type does not use
    are absent, not null."""

    metricEvents: list[dict[str, Any]] | None = Field(None, exclude_if=_absent)
    metricComponentMetrics: list[dict[str, str]] | None = Field(None, exclude_if=_absent)
    funnelEventList: list[dict[str, str]] | None = Field(None, exclude_if=_absent)
    funnelCountDistinct: Literal["events", "users"] | None = Field(None, exclude_if=_absent)
    rollupTimeWindow: str | None = Field(None, exclude_if=_absent)
    customRollUpStart: Number | None = Field(None, exclude_if=_absent)
    customRollUpEnd: Number | None = Field(None, exclude_if=_absent)


class _MetricOwnership(ResponseModel):
    team: str | None
    teamID: str | None
    owner: MetricOwner


class _MetricHistory(ResponseModel):
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int


class _MetricVersion(ResponseModel):
    version: int


class _MetricLineage(ResponseModel):
    lineage: Lineage


class _MetricArchive(ResponseModel):
    isArchived: bool
    scheduledArchiveTime: int | None = Field(
        description="When a scheduled archive takes (or took) effect; null when none is scheduled."
    )


class _MetricPermalink(ResponseModel):
    permalink: str


# Pydantic orders fields from the last base to the first.
class MetricFields(_MetricVersion, _MetricHistory, _MetricOwnership, _MetricDefinition, _MetricHead):
    """What a metric stores and answers alike, in the order a create stores them."""


class MetricState(StoredModel):
    """A metric's `_state`: when its archive takes (or took) effect, null when none is scheduled."""

    scheduledArchiveTime: int | None = None


class StoredMetric(StoredModel, MetricFields):
    """A metric as the table holds it: its fields plus its archive schedule, never answered as such.

    Written in the declared order, whatever order an older item held its keys in (the answer has
    its own order: `Metric`).
    """

    KIND: ClassVar[str] = kinds.METRIC

    state: MetricState = Field(default_factory=MetricState, alias="_state")

    def set_definition(self, definition: Mapping[str, Any]) -> None:
        """Replace the definition fields by `definition` (`normalized_definition`'s)."""
        for name in (*DEFINITION_FIELDS, *ROLLUP_FIELDS):
            setattr(self, name, definition.get(name))


# A metric as the API answers it: the stored fields with the derived ones among them, in the order
# the API has always answered them (pydantic orders fields from the last base to the first). (A
# docstring would become the schema's description in openapi.json.)
class Metric(
    _MetricHistory,
    _MetricPermalink,
    _MetricVersion,
    _MetricArchive,
    _MetricOwnership,
    _MetricDefinition,
    _MetricLineage,
    _MetricHead,
):
    pass


class MetricEnvelope(ResponseModel):
    message: str
    data: Metric
    warnings: list[EventWarning] | None = Field(
        None,
        exclude_if=_absent,
        description="On create and update: events named that were never logged (typos?).",
    )


class MetricListEnvelope(ResponseModel):
    message: str
    data: list[Metric]
    pagination: Pagination
