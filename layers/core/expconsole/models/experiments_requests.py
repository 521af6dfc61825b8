"""Experiments: what a client may send to change one (create, update, patch, the lifecycle bodies).

Apart from models/experiments.py so that a cold start serving a read does not create them: the
experiments function imports this module lazily (`expconsole.lazy`), so its ~30 request classes (the
writable fields, ~85 of them, in create, update and patch) are created by the first request that
sends a body, and a sandbox that only reads never creates them (what that saves:
docs/performance.md, 'Cold start'). The scalar types, the nullable fields and the design checks they
share with the answer stay in models/experiments.py.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    WithJsonSchema,
    field_validator,
)
from pydantic.config import JsonDict

from expconsole.models.base import Description, Number, PatchModel, RequestModel, StrList, Tag
from expconsole.models.common import MetricRef, OwnerIn, ReviewSettingsIn
from expconsole.models.experiments import (
    CLEARABLE_FIELDS,
    NULLABLE_FIELDS,
    ROLLUP_WINDOWS,
    AnalyticsType,
    Bucket,
    CheckStatus,
    ConfidenceInterval,
    Direction,
    ExperimentId,
    ExperimentName,
    ExperimentStatus,
    ExperimentType,
    FilterCondition,
    GroupId,
    Hour,
    IdentifierMappingMode,
    IdType,
    LongText,
    OverOne,
    Percent,
    Positive,
    PowerPercent,
    ReloadType,
    ShortText,
    SprtBaselineMode,
    Weekday,
    Weight,
)
from expconsole.models.rules import RuleFields

# --- scalar types ------------------------------------------------------------------------------------


def _rollup_window(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in ROLLUP_WINDOWS:
        raise ValueError("must be -1 (cumulative), 1 or 7")
    return value


RollupWindow = Annotated[
    int, PlainValidator(_rollup_window), WithJsonSchema({"type": "integer", "enum": list(ROLLUP_WINDOWS)})
]


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


# --- nested objects ----------------------------------------------------------------------------------


class ExperimentGroupIn(RequestModel):
    """A test group. `id` is generated when absent (an update keeps the id of a same-named group)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_not_blank)]
    id: GroupId | None = None
    size: Percent = Field(description="Percent of the experiment's units, 0 to 100; sizes sum to 100.")
    parameterValues: dict[str, Any] = Field(default_factory=dict)
    description: Annotated[str, StringConstraints(max_length=1000)] = ""
    disabled: bool = False
    foreignGroupID: ShortText | None = None
    highlighted: bool = False


class ExperimentMetricIn(RequestModel):
    """A metric on the experiment, named by `name` and `type` (its id is `<name>::<type>`)."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    type: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    direction: Direction | None = None
    hypothesizedValue: Number | None = None


class ExperimentLink(RequestModel):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]
    title: Annotated[str, StringConstraints(max_length=200)] | None = None

    @field_validator("url")
    @classmethod
    def _absolute(cls, value: str) -> str:
        scheme, sep, rest = value.partition("://")
        if not sep or not scheme.isalpha() or not rest:
            raise ValueError("must be an absolute URL such as https://example.com/doc")
        return value


class ExternalEvent(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    timestamp: int = Field(ge=0, description="Milliseconds since the epoch.")


class BayesianPrior(RequestModel):
    metric: MetricRef
    priorMean: Number
    priorStdDev: Positive


class SprtGroupSetting(RequestModel):
    groupKey: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description="A group of the experiment, by id or name."
    )
    mde: Positive | None = None
    mean: Number | None = None
    stdDev: Positive | None = None


class SprtMDESetting(RequestModel):
    metricKey: Annotated[str, StringConstraints(min_length=1, max_length=300)] = Field(
        description="A primary or secondary metric of the experiment, as `<name>::<type>`."
    )
    groupSettings: list[SprtGroupSetting] = Field(default_factory=list, max_length=100)


class PreComputedUserDimension(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    propertySource: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class StratifiedMetric(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    startDate: ShortText
    endDate: ShortText
    type: ShortText | None = None


class EntityPropertySourceRef(RequestModel):
    propertySourceName: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    column: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class StratifiedCsv(RequestModel):
    original: Annotated[str, StringConstraints(max_length=100_000)]
    identifier: ShortText


class StratifiedSampling(RequestModel):
    status: Literal["pending", "success", "error"]
    metric: StratifiedMetric | None = None
    entityPropertySource: EntityPropertySourceRef | None = None
    csv: StratifiedCsv | None = None
    useStratifiedSalt: bool | None = None
    useUnits: bool | None = None
    deltaReduction: Number | None = None
    spreadReduction: Number | None = None


class AssignmentSourceFilter(RequestModel):
    condition: FilterCondition
    column: ShortText | None = None
    values: list[Annotated[str, StringConstraints(max_length=1000)]] | None = Field(None, max_length=1000)


class ManualQualityScore(RequestModel):
    """A quality criterion of this experiment's own, or a new weight for a default one."""

    criteriaName: Annotated[str, StringConstraints(min_length=1, max_length=100), AfterValidator(_not_blank)]
    status: CheckStatus
    criteriaDescription: Annotated[str, StringConstraints(max_length=1000)]
    score: Percent = Field(description="Percent of the criterion earned: 0 to 100.")
    weight: Weight = Field(description="At least 0; 0 removes the criterion. Weights are renormalised.")


class SummarySection(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    content: LongText | None = None


class InlineTargetingRule(RuleFields):
    """An inline targeting rule: who may enter the experiment."""

    returnValue: dict[str, Any] | None = None


# --- request bodies ------------------------------------------------------------------------------------


class _ExperimentFields(PatchModel):
    """Every writable field; a field left out is not set. `null` only where a field allows it."""

    NULLABLE: ClassVar[frozenset[str]] = NULLABLE_FIELDS | CLEARABLE_FIELDS

    name: ExperimentName | None = None
    description: Description | None = None
    idType: IdType | None = None
    secondaryIDType: IdType | None = None
    identifierMappingMode: IdentifierMappingMode | None = None
    identityResolutionSource: ShortText | None = None
    hypothesis: LongText | None = None
    links: list[ExperimentLink] | None = Field(None, max_length=100)
    externalEvents: list[ExternalEvent] | None = Field(None, max_length=1000)
    externalExperimentName: ShortText | None = None
    groups: list[ExperimentGroupIn] | None = Field(
        None, min_length=2, max_length=100, description="2 to 100 groups whose sizes sum to 100."
    )
    controlGroupID: GroupId | None = None
    allocation: Percent | None = None
    userBuckets: list[Bucket] | None = Field(None, max_length=1000)
    primaryMetricTags: list[Tag] | None = Field(None, max_length=100)
    secondaryMetricTags: list[Tag] | None = Field(None, max_length=100)
    primaryMetrics: list[ExperimentMetricIn] | None = Field(None, max_length=100)
    secondaryMetrics: list[ExperimentMetricIn] | None = Field(None, max_length=100)
    otherMetrics: list[ExperimentMetricIn] | None = Field(None, max_length=100)
    targetApps: StrList | None = None
    tags: list[Tag] | None = Field(None, max_length=100)
    holdoutIDs: list[Annotated[str, StringConstraints(min_length=1, max_length=100)]] | None = Field(
        None, max_length=100
    )
    duration: OverOne | None = Field(None, description="Planned length in days; more than 1.")
    targetExposures: OverOne | None = None
    targetingGateID: Annotated[str, StringConstraints(max_length=100)] | None = Field(
        None, description="A gate id, or empty / null for none."
    )
    sequentialTesting: bool | None = None
    bonferroniCorrection: bool | None = None
    bonferroniCorrectionPerMetric: bool | None = None
    benjaminiHochbergPerVariant: bool | None = None
    benjaminiHochbergPerMetric: bool | None = None
    benjaminiPrimaryMetricsOnly: bool | None = None
    defaultConfidenceInterval: ConfidenceInterval | None = None
    defaultRollupWindow: RollupWindow | None = None
    defaultChanceToBeatThreshold: Percent | None = None
    bayesianPriors: list[BayesianPrior] | None = Field(None, max_length=100)
    manualQualityScores: list[ManualQualityScore] | None = Field(None, max_length=10)
    status: ExperimentStatus | None = Field(
        None, description="Restates the current status; lifecycle endpoints change it."
    )
    launchedGroupID: GroupId | None = None
    decisionReason: LongText | None = None
    assignmentSourceName: ShortText | None = None
    assignmentSourceExperimentName: ShortText | None = None
    assignmentSourceFilters: list[AssignmentSourceFilter] | None = Field(None, max_length=100)
    creatorID: ShortText | None = None
    creatorEmail: Annotated[str, StringConstraints(max_length=320)] | None = None
    isAnalysisOnly: bool | None = None
    team: ShortText | None = None
    teamID: ShortText | None = None
    allocationDuration: OverOne | None = None
    cohortedAnalysisDuration: OverOne | None = None
    cohortedMetricsMatureAfterEnd: bool | None = None
    cohortWaitUntilEndToInclude: bool | None = None
    fixedAnalysisDuration: OverOne | None = None
    scheduledReloadHour: Hour | None = None
    scheduledReloadType: ReloadType | None = None
    scheduledReloadDays: list[Weekday] | None = Field(None, max_length=7)
    turboMode: bool | None = None
    analysisEndTime: ShortText | None = None
    analyticsType: AnalyticsType | None = None
    defaultSPRTPowerParam: PowerPercent | None = None
    defaultSPRTMDE: Positive | None = None
    sprtBaselineMode: SprtBaselineMode | None = None
    sprtMDESettings: list[SprtMDESetting] | None = Field(None, max_length=300)
    isSidecar: bool | None = None
    experimentType: ExperimentType | None = None
    subtype: ShortText | None = None
    enabledNonProdEnvironments: (
        list[Annotated[str, StringConstraints(min_length=1, max_length=100)]] | None
    ) = Field(None, max_length=100)
    cureCovariates: list[MetricRef] | None = Field(None, max_length=100)
    preComputedUserDimensions: list[PreComputedUserDimension] | None = Field(None, max_length=100)
    stratifiedSampling: StratifiedSampling | None = None
    layerID: Annotated[str, StringConstraints(max_length=100)] | None = None
    inlineTargetingRules: list[InlineTargetingRule] | None = Field(None, max_length=100)
    inlineTargetingRulesJSON: Annotated[str, StringConstraints(max_length=200_000)] | None = Field(
        None, description="The inline targeting rules as JSON text (an array of rules); `{}` or `` for none."
    )
    owner: OwnerIn | None = None
    reviewSettings: ReviewSettingsIn | None = None
    summarySections: list[SummarySection] | None = Field(None, max_length=100)

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str | None) -> str | None:
        return None if value is None else _not_blank(value)


_HYPOTHESIS = (
    "A blue pay button stands out more than the gray one, so more of the users who start a "
    "checkout finish it: purchases per user rise."
)
_CONTROL: JsonDict = {
    "name": "Control",
    "id": "control",
    "description": "Today's gray button.",
    "parameterValues": {"button_color": "gray"},
}
_BLUE: JsonDict = {"name": "Blue button", "id": "blue_button", "parameterValues": {"button_color": "blue"}}


class ExperimentCreate(_ExperimentFields):
    """POST /experiments: only `name` is required; `id` defaults to the name in lower case with
    spaces as underscores. A new experiment is in `setup`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "checkout button color",
                    "description": "Does a blue pay button sell more than the gray one?",
                    "hypothesis": _HYPOTHESIS,
                    "idType": "userID",
                    "groups": [{**_CONTROL, "size": 50}, {**_BLUE, "size": 50}],
                    "controlGroupID": "control",
                    "layerID": "checkout",
                    "allocation": 50,
                    "targetingGateID": "new_checkout",
                    "primaryMetrics": [
                        {"name": "purchase", "type": "event_count", "direction": "increase"},
                        {"name": "revenue", "type": "sum", "direction": "increase"},
                    ],
                    "secondaryMetrics": [{"name": "checkout funnel", "type": "funnel"}],
                    "duration": 14,
                    "defaultConfidenceInterval": "95",
                    "tags": ["checkout"],
                }
            ]
        }
    )

    name: ExperimentName
    id: ExperimentId | None = None


class _ExperimentChanges(_ExperimentFields):
    version: int | None = Field(
        None, ge=1, description="Optimistic lock: the version this change is based on."
    )


class ExperimentUpdate(_ExperimentChanges):
    """POST /experiments/{id}: a full update. The peer's full-update body requires `description`,
    `idType`, `hypothesis`, `groups`, `allocation`, `targetingGateID` (null allowed),
    `bonferroniCorrection`, `defaultConfidenceInterval` and `status`; other fields left out keep
    their value."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "description": "Does a blue or a green pay button sell more than the gray one?",
                    "idType": "userID",
                    "hypothesis": _HYPOTHESIS,
                    "groups": [
                        {**_CONTROL, "size": 34},
                        {**_BLUE, "size": 33},
                        {
                            "name": "Green button",
                            "id": "green_button",
                            "size": 33,
                            "parameterValues": {"button_color": "green"},
                        },
                    ],
                    "allocation": 50,
                    "targetingGateID": "new_checkout",
                    "bonferroniCorrection": True,
                    "defaultConfidenceInterval": "95",
                    "status": "setup",
                }
            ]
        }
    )

    description: Description
    idType: IdType
    hypothesis: LongText
    groups: list[ExperimentGroupIn] = Field(min_length=2, max_length=100)
    allocation: Percent
    targetingGateID: Annotated[str, StringConstraints(max_length=100)] | None
    bonferroniCorrection: bool
    defaultConfidenceInterval: ConfidenceInterval
    status: ExperimentStatus


class ExperimentPatch(_ExperimentChanges):
    """PATCH /experiments/{id}: only the fields sent change."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "duration": 21,
                    "secondaryMetrics": [
                        {"name": "checkout funnel", "type": "funnel"},
                        {"name": "revenue per checkout start", "type": "ratio"},
                    ],
                    "links": [{"url": "https://example.com/design/pay-button", "title": "Design brief"}],
                }
            ]
        }
    )


# --- lifecycle bodies ---------------------------------------------------------------------------------

DAY_MS = 86_400_000


class ExperimentStartBody(RequestModel):
    """Optional: a body only analysis-only (warehouse) experiments need."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})

    analysisStartTime: ShortText | None = Field(None, description="Analysis-only experiments (warehouse).")
    analysisEndTime: ShortText | None = Field(None, description="Analysis-only experiments (warehouse).")


class MakeDecisionBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "blue_button",
                    "decisionReason": "Blue raised purchases per user by 4% (95% CI 1-7%); revenue held.",
                    "removeTargeting": True,
                }
            ]
        }
    )

    id: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description="The id of the group to launch."
    )
    decisionReason: LongText
    removeTargeting: bool = Field(False, description="Launch to everyone: drop the targeting gate and rules.")


class AbandonBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"decisionReason": "A payment outage on day 2 spoiled the data; starting again."}]
        }
    )

    decisionReason: LongText


class ExperimentArchiveBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"archiveReason": "Decided and shipped; kept for its results."}]}
    )

    archiveReason: Annotated[str, StringConstraints(max_length=1000)] | None = None


class RestartAsNewBody(RequestModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "checkout button color v2"}]})

    name: ExperimentName

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        return _not_blank(value)


class ScheduleStartBody(RequestModel):
    """The example's time is a day ahead of when /openapi.json is served (`x-example-times`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"scheduledTime": 1767258000000}],
            "x-example-times": {"scheduledTime": DAY_MS},
        }
    )

    scheduledTime: Number = Field(
        description="When to start, in whole milliseconds since the epoch: in the future, within a year."
    )


class GroupNamesBody(RequestModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"group_names": ["Green button"]}]})

    group_names: list[Annotated[str, StringConstraints(min_length=1, max_length=100)]] = Field(
        min_length=1, max_length=100
    )
