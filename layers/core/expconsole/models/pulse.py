"""Pulse loads: the body of `load_pulse` and the records of `pulse_load_history` (the peer's shapes)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from expconsole.models.base import QueryBool, RequestModel, ResponseModel
from expconsole.models.pagination import Pagination

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
