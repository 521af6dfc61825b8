"""Pulse loads and pulse health: the body of `load_pulse`, the records of `pulse_load_history` (the
peer's shapes) as answered (`PulseLoad`) and stored (`PulseLoadRecord`), and the health checks a
load stores on an experiment (`PulseHealth`).

Plain pydantic, no DuckDB: the pulse function's HTTP routes import this module.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    Tag,
    model_serializer,
)

from expconsole.models.base import QueryBool, RequestModel, ResponseModel
from expconsole.models.pagination import Pagination
from expconsole.models.stored import KeptOrder

ReloadType = Literal["full", "incremental", "metric"]
FinishedState = Literal["success", "failure", "partial_failure", "cancelled", "timeout"]
MetricId = Annotated[str, StringConstraints(min_length=1, max_length=300)]


class LoadPulseBody(RequestModel):
    """What to reload: `full` recomputes every day from the events, `incremental` reuses stored
    day aggregates whose events did not change, `metric` writes only `metricIDs`' results."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"refresh": "full"}]})

    refresh: ReloadType = "full"
    metricIDs: list[MetricId] | None = Field(
        None, max_length=100, description="Metric ids (`<name>::<type>`); required with refresh `metric`."
    )
    ruleId: Annotated[str, StringConstraints(max_length=100)] | None = Field(
        None, description="Accepted for the peer's compatibility; experiments have no rules to pick."
    )
    turboMode: bool = False


class LoadPulseQuery(BaseModel):
    """Query of `load_pulse`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    wait: QueryBool = Field(
        False,
        description=(
            "`true`: answer when the load has finished (for scripts). Default: answer at once with the "
            "queued load (202), then poll `pulse_load_history`, which shows it `running` with progress."
        ),
    )


class LoadProgress(ResponseModel):
    step: str = Field(description="What the pipeline does now (`events <day>`, `results <day>`, `done`).")
    done: int
    total: int


class PulseLoad(ResponseModel):
    creatorName: str
    createdTime: int
    finishedTime: int | None = Field(description="Null while the load runs.")
    finishedState: FinishedState | None = Field(description="Null while the load runs.")
    startDs: str
    endDs: str
    reloadType: ReloadType
    turboMode: bool
    message: str | None = Field(None, description="Why a load failed.")
    running: bool = Field(False, description="True until the load finishes (finishedState set).")
    progress: LoadProgress | None = Field(
        None, description="While running: the pipeline's step and how far it is (null otherwise)."
    )


class LoadPulseEnvelope(ResponseModel):
    message: str
    data: PulseLoad


class PulseLoadListEnvelope(ResponseModel):
    message: str
    data: list[PulseLoad]
    pagination: Pagination


# --- the load history's stored record -----------------------------------------------------------------


class PulseLoadRecord(KeptOrder):
    """A load's history record as store.pulse_runs keeps it: written when the load starts (or is
    queued), with `progress` while a queued load runs, and again when it ends (`message` on a
    failure). Records written before any of these keys existed read too; keys this model does not
    declare are kept, in their order, and answered."""

    creatorName: str
    createdTime: int
    finishedTime: int | None
    finishedState: FinishedState | None
    startDs: str
    endDs: str
    reloadType: ReloadType
    turboMode: bool
    message: str | None = None
    progress: LoadProgress | None = None

    @property
    def running(self) -> bool:
        return self.finishedState is None

    def with_progress(self, step: str, done: int, total: int) -> "PulseLoadRecord":
        """This (queued) record showing the pipeline's step."""
        return self.model_copy(update={"progress": LoadProgress(step=step, done=done, total=total)})

    def finished(
        self, state: FinishedState, time_ms: int, end_ds: str | None = None, message: str | None = None
    ) -> "PulseLoadRecord":
        """This record once the load ended: its state, when, the last result day, why it failed."""
        update: dict[str, Any] = {"finishedState": state, "finishedTime": time_ms}
        if end_ds is not None:
            update["endDs"] = end_ds
        if message is not None:
            update["message"] = message
        return self.model_copy(update=update)

    def presented(self) -> dict[str, Any]:
        """The record as `pulse_load_history` and `load_pulse` answer it (`PulseLoad`): the stored
        keys in their order, then `running`, and `progress` only while it runs."""
        out = self.doc()
        running = self.running
        out["running"] = running
        out["progress"] = out.get("progress") if running else None
        return out


# --- pulse health: the health checks stored on an experiment (`_health`) --------------------------------

HealthStatus = Literal["PASSED", "WARNING", "FAILED"]


class _Stored(BaseModel):
    """A part of the stored health document: keys of other (older or later) shapes are kept."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    def doc(self) -> dict[str, Any]:
        return self.model_dump()


class HasChecksMetadata(_Stored):
    type: Literal["has_checks"] = "has_checks"
    primary_id_type: str
    lastPulseLoadTime: int
    lastUpdatedDs: str | None


class SrmGroup(_Stored):
    groupID: str
    groupName: str
    units: int
    expectedPercent: float
    observedPercent: float | None


class SrmMetadata(_Stored):
    type: Literal["srm"] = "srm"
    p_value: float | None
    groups: list[SrmGroup]


class ExposureBalanceMetadata(_Stored):
    type: Literal["exposure_balance"] = "exposure_balance"
    crossoverPercent: float
    unknownGroupExposures: int
    disabledGroupExposures: int
    exposuresAfterDecision: int
    validExposures: int


class MetricDates(_Stored):
    metric_name: str
    earliest_date: str | None
    latest_date: str | None


class MetricsMetadata(_Stored):
    """The metrics check. `neverLoggedMetrics` (services.event_names) is absent from documents
    written before it existed and from those with no metric on a never-logged event."""

    type: Literal["metrics"] = "metrics"
    missingMetrics: list[str] = Field(default_factory=list)
    metrics: list[MetricDates] = Field(default_factory=list)
    neverLoggedMetrics: list[str] | None = None

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if out.get("neverLoggedMetrics") is None:
            out.pop("neverLoggedMetrics", None)
        return out


class OtherMetadata(_Stored):
    """The metadata of a check of a type this version does not write: read and kept as it is."""

    type: str | None = None


_METADATA_TYPES = ("has_checks", "srm", "exposure_balance", "metrics")


def _metadata_type(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _METADATA_TYPES else "other"


CheckMetadata = Annotated[
    Annotated[HasChecksMetadata, Tag("has_checks")]
    | Annotated[SrmMetadata, Tag("srm")]
    | Annotated[ExposureBalanceMetadata, Tag("exposure_balance")]
    | Annotated[MetricsMetadata, Tag("metrics")]
    | Annotated[OtherMetadata, Tag("other")],
    Discriminator(_metadata_type),
]


class PulseHealthCheck(_Stored):
    name: str
    description: str
    status: HealthStatus
    type: str | None = None
    metadata: CheckMetadata | None = None


NEVER_LOGGED = (
    "Metrics with data, and the first and last day each had any. FAILED: {metrics} count events never logged."
)


class PulseHealth(_Stored):
    """The health checks pulse stores on an experiment (`_health`; services.pulse.run.health_doc)
    and the experiment answers as `healthCheckStatus` / `healthChecks`, in their stored shape."""

    status: HealthStatus
    checks: list[PulseHealthCheck] = Field(default_factory=list)

    @classmethod
    def read(cls, doc: Mapping[str, Any] | None) -> "PulseHealth | None":
        """A stored document, whatever version wrote it; None when there is none."""
        return cls.model_validate(doc) if doc else None

    def metrics_check(self) -> MetricsMetadata | None:
        """The metrics check's metadata, when the document has one."""
        for check in self.checks:
            if check.type == "metrics" and isinstance(check.metadata, MetricsMetadata):
                return check.metadata
        return None

    def with_never_logged(self, metric_ids: list[str]) -> "PulseHealth":
        """This document with metrics on never-logged events (services.event_names) added to
        `missingMetrics`, and the metrics check (so the overall status) FAILED while there are any."""
        if not metric_ids:
            return self
        checks = []
        for check in self.checks:
            if check.type == "metrics":
                meta = check.metadata if isinstance(check.metadata, MetricsMetadata) else MetricsMetadata()
                listed = list(meta.missingMetrics)
                meta = meta.model_copy(
                    update={
                        "missingMetrics": listed + [m for m in metric_ids if m not in listed],
                        "neverLoggedMetrics": list(metric_ids),
                    }
                )
                check = check.model_copy(
                    update={
                        "status": "FAILED",
                        "description": NEVER_LOGGED.format(metrics=", ".join(metric_ids)),
                        "metadata": meta,
                    }
                )
            checks.append(check)
        return self.model_copy(update={"status": "FAILED", "checks": checks})
