"""Experiments: the scalar types, the list query, the fields, the answer and the design checks.

The request bodies are in models/experiments_requests.py, which the experiments function imports
lazily (a read never creates them).

Field limits are the console API's (`docs/api/experiments.md`, with `openapi.json` generated from
these models); where it is silent they follow the peer (Statsig's) console API, and a few generous
caps keep a stored experiment within one DynamoDB item. Checks that relate several fields (group
sizes summing to 100, the control group naming a group, complete SPRT settings, ...) live in
`design_errors`, which the service runs on the experiment as it would be stored, so create, full
update, patch and restart share them.

An experiment's fields are declared once, in `ExperimentFields`, in the order a new experiment
stores them: the stored experiment (`StoredExperiment`, in models/experiments_stored.py, which a
write imports) adds its internal `_state` and `_health`, the answer (`Experiment`) the fields
derived on every read. Both keep the key order of the item they come from, which follows its
history, so a read and a write change nothing and an answer is the stored keys in their order,
then the derived ones, as it has always been.
"""

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, TypeAlias

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    StringConstraints,
    WithJsonSchema,
    field_validator,
)
from pydantic_core.core_schema import CoreSchema, wrap_serializer_function_ser_schema

from expconsole.models.base import (
    Number,
    QueryBool,
    ResponseModel,
)
from expconsole.models.common import EventWarning, Owner, ReviewSettings
from expconsole.models.pagination import PageQuery, Pagination
from expconsole.models.rules import RolloutsOut, RuleOutFields

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, SerializerFunctionWrapHandler

# --- scalar types ------------------------------------------------------------------------------------

ExperimentId = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\-]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen."),
]
ExperimentName = Annotated[
    str,
    StringConstraints(min_length=3, max_length=100, pattern=r"^[a-zA-Z0-9_\- ]*$"),
    Field(description="3 to 100 characters: letters, digits, underscore, hyphen, space."),
]
GroupId = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_\-]*$"),
    Field(description="1 to 100 characters: letters, digits, underscore, hyphen."),
]
ShortText = Annotated[str, StringConstraints(max_length=200)]
LongText = Annotated[str, StringConstraints(max_length=10_000)]
IdType = Annotated[str, StringConstraints(min_length=1, max_length=100)]

ExperimentStatus = Literal[
    "active", "setup", "decision_made", "abandoned", "archived", "experiment_stopped", "assignment_stopped"
]
STATUSES: tuple[str, ...] = ExperimentStatus.__args__  # type: ignore[attr-defined]
ExperimentType = Literal["BASE", "GEO", "SWITCHBACK", "PROMPT", "SIDECAR", "GRID_SEARCH"]
IdentifierMappingMode = Literal["strictOneToOne", "firstTouchOneToMany", "lastTouchOneToMany"]
AnalyticsType = Literal["frequentist", "bayesian", "sprt"]
SprtBaselineMode = Literal["manual", "in_experiment_control"]
ReloadType = Literal["full", "incremental"]
ConfidenceInterval = Literal["80", "90", "95", "98", "99"]
CheckStatus = Literal["PASSED", "FAILED", "WARNING"]
Direction = Literal["increase", "decrease"]
FilterCondition = Literal[
    "in",
    "not_in",
    "=",
    ">",
    "<",
    ">=",
    "<=",
    "is_null",
    "non_null",
    "contains",
    "not_contains",
    "sql_filter",
    "starts_with",
    "ends_with",
    "after_exposure",
    "before_exposure",
    "is_true",
    "is_false",
]


def _bounded(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> Callable[[int | float], int | float]:
    """A check that a number lies in a range, saying the range in its message."""
    lo = "" if low is None else (f"above {low:g}" if low_open else f"at least {low:g}")
    hi = "" if high is None else (f"below {high:g}" if high_open else f"at most {high:g}")
    words = " and ".join(w for w in (lo, hi) if w)

    def check(value: int | float) -> int | float:
        too_low = low is not None and (value <= low if low_open else value < low)
        too_high = high is not None and (value >= high if high_open else value > high)
        if too_low or too_high:
            raise ValueError(f"must be {words}")
        return value

    return check


def _range(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> tuple[AfterValidator, WithJsonSchema]:
    """A number's range as Annotated metadata: checked after parsing, and stated in the JSON schema."""
    schema: dict[str, Any] = {"type": "number"}
    if low is not None:
        schema["exclusiveMinimum" if low_open else "minimum"] = low
    if high is not None:
        schema["exclusiveMaximum" if high_open else "maximum"] = high
    return AfterValidator(_bounded(low, high, low_open=low_open, high_open=high_open)), WithJsonSchema(schema)


# Written out as Annotated (a function returning the type would be no type to mypy).
Percent: TypeAlias = Annotated[Number, *_range(0, 100)]
Bucket: TypeAlias = Annotated[Number, *_range(0, 1000, high_open=True)]
Positive: TypeAlias = Annotated[Number, *_range(0, low_open=True)]
PowerPercent: TypeAlias = Annotated[Number, *_range(0, 100, low_open=True, high_open=True)]
Weight: TypeAlias = Annotated[Number, *_range(0)]
# Days and exposures: integers that must exceed 1.
OverOne = Annotated[int, Field(gt=1)]
Hour = Annotated[int, Field(ge=0, le=23)]
Weekday = Annotated[int, Field(ge=0, le=6, description="0 is Sunday.")]
ROLLUP_WINDOWS = (-1, 1, 7)


# --- nullable fields ------------------------------------------------------------------------------------

# Fields whose type is "... or null" in the contract (plus two that may be cleared with null).
NULLABLE_FIELDS = frozenset(
    {
        "secondaryIDType",
        "identityResolutionSource",
        "creatorID",
        "creatorEmail",
        "team",
        "teamID",
        "layerID",
        "targetingGateID",
        "launchedGroupID",
        "decisionReason",
        "isAnalysisOnly",
        "allocationDuration",
        "scheduledReloadHour",
        "scheduledReloadDays",
    }
)
CLEARABLE_FIELDS = frozenset(
    {"controlGroupID", "stratifiedSampling", "reviewSettings", "inlineTargetingRulesJSON"}
)


# --- list query -----------------------------------------------------------------------------------------


def _day(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        if len(value) != 10:
            raise ValueError
        dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a date as YYYY-MM-DD") from None
    return value


class ExperimentListQuery(PageQuery):
    layerID: str | None = None
    idType: list[str] | None = Field(None, description="Any of these id types (comma-separated).")
    teamID: str | None = None
    status: list[ExperimentStatus] | None = Field(
        None, description="Any of these statuses. Archived experiments are listed only when asked for."
    )
    targetAppID: str | None = None
    createdStartDate: str | None = Field(None, description="Created on or after this UTC day (YYYY-MM-DD).")
    createdEndDate: str | None = Field(None, description="Created on or before this UTC day (YYYY-MM-DD).")
    creatorName: str | None = None
    creatorID: str | None = None
    tags: list[str] | None = Field(None, description="Experiments carrying any of these tags.")
    isStale: QueryBool = Field(False, description="`true`: only stale experiments; `false`: all.")
    experimentType: list[ExperimentType] | None = None
    searchString: Annotated[str, StringConstraints(min_length=1, max_length=200)] | None = Field(
        None, description="Text found (ignoring case) in the id, name, description or hypothesis."
    )

    @field_validator("createdStartDate", "createdEndDate")
    @classmethod
    def _dates(cls, value: str | None) -> str | None:
        return _day(value)


# --- cross-field checks ----------------------------------------------------------------------------------

METRIC_LISTS = ("primaryMetrics", "secondaryMetrics", "otherMetrics")
SIZE_TOLERANCE = 1e-6


def metric_key(metric: dict[str, Any]) -> str:
    return f"{metric['name']}::{metric['type']}"


def _error(field: str, message: str) -> dict[str, str]:
    return {"field": field, "message": message}


def _group_errors(doc: dict[str, Any]) -> list[dict[str, str]]:
    groups = doc.get("groups") or []
    errors: list[dict[str, str]] = []
    if len(groups) < 2:
        errors.append(_error("groups", "an experiment needs at least 2 groups"))
    total = math.fsum(g["size"] for g in groups)
    if groups and abs(total - 100) > SIZE_TOLERANCE:
        errors.append(_error("groups", f"group sizes must sum to 100 (they sum to {total:g})"))
    names: dict[str, int] = {}
    ids: dict[str, int] = {}
    for index, group in enumerate(groups):
        folded = group["name"].strip().casefold()
        if folded in names:
            errors.append(
                _error(
                    f"groups[{index}].name", f"repeats the name of groups[{names[folded]}]: names are unique"
                )
            )
        names.setdefault(folded, index)
        if group["id"] in ids:
            errors.append(
                _error(f"groups[{index}].id", f"repeats the id of groups[{ids[group['id']]}]: ids are unique")
            )
        ids.setdefault(group["id"], index)
    control = doc.get("controlGroupID")
    if control is not None and control not in ids:
        errors.append(_error("controlGroupID", f"names no group of the experiment ({control!r})"))
    launched = doc.get("launchedGroupID")
    if launched is not None and launched not in ids:
        errors.append(_error("launchedGroupID", f"names no group of the experiment ({launched!r})"))
    return errors


def _metric_errors(doc: dict[str, Any]) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    seen: dict[str, str] = {}
    for field in METRIC_LISTS:
        for index, metric in enumerate(doc.get(field) or []):
            key = metric_key(metric)
            where = f"{field}[{index}]"
            if key in seen:
                errors.append(_error(where, f"metric {key!r} is listed already as {seen[key]}"))
            else:
                seen[key] = where
    return errors


def _sprt_errors(doc: dict[str, Any]) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    settings = doc.get("sprtMDESettings") or []
    analysed = {
        metric_key(m): m for field in ("primaryMetrics", "secondaryMetrics") for m in doc.get(field) or []
    }
    group_keys = {g["id"] for g in doc.get("groups") or []} | {g["name"] for g in doc.get("groups") or []}
    by_metric: dict[str, tuple[int, dict[str, Any]]] = {}
    for index, setting in enumerate(settings):
        key = setting["metricKey"]
        if key not in analysed:
            errors.append(
                _error(f"sprtMDESettings[{index}].metricKey", f"{key!r} is not a primary or secondary metric")
            )
        elif key in by_metric:
            errors.append(_error(f"sprtMDESettings[{index}].metricKey", f"{key!r} has settings already"))
        by_metric.setdefault(key, (index, setting))
        for g_index, group in enumerate(setting.get("groupSettings") or []):
            if group["groupKey"] not in group_keys:
                errors.append(
                    _error(
                        f"sprtMDESettings[{index}].groupSettings[{g_index}].groupKey",
                        f"names no group of the experiment ({group['groupKey']!r})",
                    )
                )
    if doc.get("analyticsType") != "sprt":
        return errors
    mode = doc.get("sprtBaselineMode")
    if mode is None:
        errors.append(_error("sprtBaselineMode", "is required when analyticsType is 'sprt'"))
        return errors
    default_mde = doc.get("defaultSPRTMDE")
    for key in analysed:
        found = by_metric.get(key)
        groups = (found[1].get("groupSettings") or []) if found else []
        if found is None or not groups:
            if mode == "manual":
                errors.append(
                    _error("sprtMDESettings", f"metric {key!r} needs mde, mean and stdDev in manual mode")
                )
            elif default_mde is None:
                errors.append(
                    _error("sprtMDESettings", f"metric {key!r} needs an mde (or set defaultSPRTMDE)")
                )
            continue
        for g_index, group in enumerate(groups):
            where = f"sprtMDESettings[{found[0]}].groupSettings[{g_index}]"
            if group.get("mde") is None and default_mde is None:
                errors.append(_error(f"{where}.mde", f"is required for {key!r} (or set defaultSPRTMDE)"))
            if mode == "manual":
                for name in ("mean", "stdDev"):
                    if group.get(name) is None:
                        errors.append(_error(f"{where}.{name}", f"is required for {key!r} in manual mode"))
    return errors


def design_errors(doc: dict[str, Any]) -> list[dict[str, str]]:
    """What is wrong with an experiment as it would be stored: each error names its field."""
    return [*_group_errors(doc), *_metric_errors(doc), *_sprt_errors(doc), *_quality_errors(doc)]


def _quality_errors(doc: dict[str, Any]) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(doc.get("manualQualityScores") or []):
        name = entry["criteriaName"]
        if name in seen:
            errors.append(
                _error(
                    f"manualQualityScores[{index}].criteriaName",
                    f"repeats manualQualityScores[{seen[name]}] ({name!r})",
                )
            )
        seen.setdefault(name, index)
    return errors


# --- stored and answered ---------------------------------------------------------------------------------


def _absent(value: object) -> bool:
    """`exclude_if` of the keys an experiment stores only when set: left out rather than null."""
    return value is None


class ExperimentGroup(ResponseModel):
    name: str
    id: str
    size: Number
    parameterValues: dict[str, Any]
    description: str
    disabled: bool
    highlighted: bool
    foreignGroupID: str | None = Field(None, exclude_if=_absent)


class _InlineReturnValue(ResponseModel):
    returnValue: dict[str, Any] | None = Field(None, exclude_if=_absent)


# An inline targeting rule as stored and answered: `returnValue`, when sent, between the rule's fields
# and its rollouts (services.common.rules.rule_doc). (A docstring would become the schema's
# description in openapi.json.)
class InlineRuleOut(RolloutsOut, _InlineReturnValue, RuleOutFields):
    pass


class ExperimentFields(ResponseModel):
    """What an experiment stores and answers alike, in the order a new experiment stores them: the
    fields every experiment holds (services.experiments.defaults), those stored only when sent (left
    out rather than null; in the order a body lists them), the owner and bookkeeping, then those
    set by the lifecycle. A stored experiment keeps the order its item has
    (models/experiments_stored.py)."""

    id: str
    name: str
    description: str
    idType: str
    secondaryIDType: str | None
    identityResolutionSource: str | None
    hypothesis: str
    links: list[dict[str, Any]]
    externalEvents: list[dict[str, Any]]
    groups: list[ExperimentGroup]
    allocation: Number
    userBuckets: list[Number]
    layerID: str | None
    targetingGateID: str | None
    launchedGroupID: str | None
    duration: int
    startTime: int | None
    endTime: int | None
    decisionTime: int | None
    decisionReason: str | None
    status: ExperimentStatus
    experimentType: ExperimentType
    isSidecar: bool
    isAnalysisOnly: bool | None
    enabledNonProdEnvironments: list[str]
    inlineTargetingRules: list[InlineRuleOut]
    primaryMetrics: list[dict[str, Any]]
    secondaryMetrics: list[dict[str, Any]]
    otherMetrics: list[dict[str, Any]]
    primaryMetricTags: list[str]
    secondaryMetricTags: list[str]
    sequentialTesting: bool
    bonferroniCorrection: bool
    bonferroniCorrectionPerMetric: bool
    benjaminiHochbergPerVariant: bool
    benjaminiHochbergPerMetric: bool
    benjaminiPrimaryMetricsOnly: bool
    defaultConfidenceInterval: ConfidenceInterval
    defaultRollupWindow: int
    bayesianPriors: list[dict[str, Any]]
    analyticsType: AnalyticsType
    sprtMDESettings: list[dict[str, Any]]
    cureCovariates: list[dict[str, Any]]
    preComputedUserDimensions: list[dict[str, Any]]
    assignmentSourceFilters: list[dict[str, Any]]
    allocationDuration: int | None
    cohortedMetricsMatureAfterEnd: bool
    cohortWaitUntilEndToInclude: bool
    scheduledReloadHour: int | None
    scheduledReloadDays: list[int] | None
    turboMode: bool
    manualQualityScores: list[dict[str, Any]]
    summarySections: list[dict[str, Any]]
    reviewSettings: ReviewSettings
    tags: list[str]
    targetApps: list[str]
    holdoutIDs: list[str]
    team: str | None
    teamID: str | None
    identifierMappingMode: IdentifierMappingMode | None = Field(None, exclude_if=_absent)
    externalExperimentName: str | None = Field(None, exclude_if=_absent)
    controlGroupID: str | None = Field(None, exclude_if=_absent)
    targetExposures: int | None = Field(None, exclude_if=_absent)
    defaultChanceToBeatThreshold: Number | None = Field(None, exclude_if=_absent)
    assignmentSourceName: str | None = Field(None, exclude_if=_absent)
    assignmentSourceExperimentName: str | None = Field(None, exclude_if=_absent)
    cohortedAnalysisDuration: int | None = Field(None, exclude_if=_absent)
    fixedAnalysisDuration: int | None = Field(None, exclude_if=_absent)
    scheduledReloadType: ReloadType | None = Field(None, exclude_if=_absent)
    analysisEndTime: str | None = Field(None, exclude_if=_absent)
    defaultSPRTPowerParam: Number | None = Field(None, exclude_if=_absent)
    defaultSPRTMDE: Number | None = Field(None, exclude_if=_absent)
    sprtBaselineMode: SprtBaselineMode | None = Field(None, exclude_if=_absent)
    subtype: str | None = Field(None, exclude_if=_absent)
    stratifiedSampling: dict[str, Any] | None = Field(None, exclude_if=_absent)
    owner: Owner
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int
    scheduledStartTime: int | None = Field(
        None, exclude_if=_absent, description="Set by schedule_start until the start happens."
    )
    activeReview: dict[str, Any] | None = Field(None, exclude_if=_absent)


class QualityCriterion(ResponseModel):
    criterion: str
    status: str
    passingDescription: str
    score: Number
    weight: Number


class QualityScore(ResponseModel):
    score: Number
    breakdown: list[QualityCriterion]


class HealthCheck(ResponseModel):
    name: str
    description: str
    status: str
    type: str | None = None
    metadata: dict[str, Any] | None = None


# An experiment as the API answers it: its stored fields, in its item's order, then those derived on
# every read (services.experiments.present builds it in that order; `of` keeps it, and the envelopes
# answer it so: AnsweredExperiment). (A docstring would become the schema's description in
# openapi.json.)
class Experiment(ExperimentFields):
    inlineTargetingRulesJSON: str
    permalink: str
    isStale: bool
    qualityScore: QualityScore
    healthCheckStatus: str
    healthChecks: list[HealthCheck]

    _keys: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> Self:
        """The answer as services.experiments.present builds it: its keys, in its order (an
        experiment's stored keys follow its history, see models/experiments_stored.py)."""
        experiment = cls.model_validate(answer)
        experiment._keys = tuple(answer)
        return experiment


def _in_answered_order(experiment: Experiment, handler: "SerializerFunctionWrapHandler") -> Any:
    out = handler(experiment)
    keys = experiment._keys
    return {key: out[key] for key in keys if key in out} if keys else out


class _AsAnswered:
    """Where an envelope answers an Experiment: with the keys of the answer it was built from, in
    their order (`Experiment.of`). A wrap serializer without a return schema, so the JSON schema
    stays the model's. (pydantic's model_serializer would do the same from within Experiment, but
    importing pydantic.functional_serializers would add to the experiments function's import:
    docs/performance.md, 'Cold start'.)"""

    def __get_pydantic_core_schema__(self, source: Any, handler: "GetCoreSchemaHandler") -> CoreSchema:
        return {**handler(source), "serialization": wrap_serializer_function_ser_schema(_in_answered_order)}


AnsweredExperiment = Annotated[Experiment, _AsAnswered()]


class ExperimentEnvelope(ResponseModel):
    message: str
    data: AnsweredExperiment
    warnings: list[EventWarning] | None = Field(
        None,
        exclude_if=_absent,
        description="On create and update: events named that were never logged (typos?).",
    )


class ExperimentListEnvelope(ResponseModel):
    message: str
    data: list[AnsweredExperiment]
    pagination: Pagination
