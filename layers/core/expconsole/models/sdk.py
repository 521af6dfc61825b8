"""Bodies and answers of the evaluation endpoints (POST /v1/check_gate, get_config, get_experiment,
get_layer): the shapes of the peer's HTTP API, `{user, <kind>Name}`.

The user is the SDKs' JSON user (`userID`, `customIDs`, `email`, `ip`, `userAgent`, `country`,
`locale`, `appVersion`, `custom`, `privateAttributes`, `statsigEnvironment`); its rules (one of
`userID` or `customIDs`, objects where objects go) are checked by the evaluator, whose message
names the field.
"""

from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints
from pydantic.config import JsonDict

from expconsole.models.base import AnyRootModel, RequestModel, ResponseModel

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
SdkUser = Annotated[
    dict[str, Any],
    Field(
        description="The SDK user: `userID` or `customIDs` required; `statsigEnvironment.tier` picks rules."
    ),
]


# The examples' user: she passes the gate `new_checkout` of models/gates.py's example (employees).
_USER: JsonDict = {
    "userID": "user-1842",
    "email": "ana@example.com",
    "country": "CA",
    "appVersion": "4.3.0",
    "custom": {"plan": "enterprise"},
    "statsigEnvironment": {"tier": "production"},
}


class CheckGateBody(RequestModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"user": _USER, "gateName": "new_checkout"}]})

    user: SdkUser
    gateName: Name | None = Field(None, description="One gate; or `gateNames` for several.")
    gateNames: list[Name] | None = Field(None, min_length=1, max_length=100)


class GetConfigBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"user": _USER, "configName": "checkout_settings"}]}
    )

    user: SdkUser
    configName: Name


class GetExperimentBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"user": _USER, "experimentName": "checkout_button_color"}]}
    )

    user: SdkUser
    experimentName: Name


class GetLayerBody(RequestModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"user": _USER, "layerName": "checkout"}]})

    user: SdkUser
    layerName: Name


class GateAnswer(ResponseModel):
    name: str
    value: bool
    rule_id: str
    group_name: str | None
    id_type: str


class ConfigAnswer(ResponseModel):
    name: str
    value: dict[str, Any]
    rule_id: str
    group_name: str | None
    id_type: str
    is_experiment_group: bool


class LayerAnswer(ConfigAnswer):
    allocated_experiment_name: str | None
    explicit_parameters: list[str]


class SpecDocument(ResponseModel):
    """The `download_config_specs` document (the Statsig SDKs' shape; its specs are theirs to
    read), or `{has_updates: false, time}` when nothing changed since `sinceTime`."""

    time: int
    has_updates: bool


class IdList(ResponseModel):
    name: str
    size: int = Field(description="Bytes of the file; the SDK reads from what it has on (Range).")
    url: str
    creationTime: int
    fileID: str


class SkippedEvent(ResponseModel):
    index: int
    reason: str


class LogEventAccepted(ResponseModel):
    success: bool
    accepted: int = Field(description="Events stored now.")
    duplicates: int = Field(0, description="Events an identical earlier batch stored (a retry).")
    dropped: int = Field(description="SDK-internal events (diagnostics) not stored.")
    skipped: list[SkippedEvent] = Field(
        description="Events that could not be stored, by index (at most 100)."
    )


class Accepted(ResponseModel):
    success: bool


# The root models below annotate `root` rather than parametrize RootModel: `RootModel[X]` is a class
# of its own that pydantic builds when it is created, at import (models/base.py: defer_build).


class CheckGateAnswer(AnyRootModel):
    """One gate's answer (`gateName`), or each gate's by name (`gateNames`)."""

    model_config = ConfigDict(defer_build=True)

    root: GateAnswer | dict[str, GateAnswer]


class IdLists(AnyRootModel):
    """Each id list by its name (the id-list segment's id)."""

    model_config = ConfigDict(defer_build=True)

    root: dict[str, IdList]
