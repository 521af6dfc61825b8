"""Bodies and answers of the evaluation endpoints (POST /v1/check_gate, get_config, get_experiment,
get_layer): the shapes of the peer's HTTP API, `{user, <kind>Name}`.

The user is the SDKs' JSON user (`userID`, `customIDs`, `email`, `ip`, `userAgent`, `country`,
`locale`, `appVersion`, `custom`, `privateAttributes`, `statsigEnvironment`); its rules (one of
`userID` or `customIDs`, objects where objects go) are checked by the evaluator, whose message
names the field.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints
from pydantic.config import JsonDict

from expconsole.models.base import RequestModel, ResponseModel

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


# The bodies of log_event and sdk_exception as OpenAPI documents them: the SDKs' shapes, read
# leniently by expconsole.services.sdk.log_event (unknown fields are ignored, not refused), which
# parses the raw body itself (it may be gzip'd); expconsole_tools.openapi reads these by name from
# the routes' `x-request-body-model`, so the SDK function never builds them.


class SdkEvent(BaseModel):
    """An event as the SDKs log it: a custom event, or an exposure (`statsig::...`)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    eventName: str = Field(description="1 to 128 characters; `statsig::` names are exposures.")
    user: dict[str, Any] = Field(description="The SDK user: `userID`, `stableID` or `customIDs`.")
    value: str | float | None = None
    metadata: dict[str, Any] | None = None
    time: int | None = Field(
        None, description="Milliseconds since the epoch, from 2000 to a day ahead; receipt time if left out."
    )
    secondaryExposures: list[dict[str, Any]] | None = None


class LogEventBody(BaseModel):
    """A batch of at most 2,000 events (gzip allowed); an event that cannot be stored is skipped
    and reported by index, the rest are stored."""

    model_config = ConfigDict(
        extra="allow",
        defer_build=True,
        json_schema_extra={
            "examples": [
                {
                    "events": [
                        {
                            "eventName": "purchase",
                            "user": {"userID": "user-1842", "country": "CA"},
                            "value": 42.5,
                            "metadata": {"sku": "SKU-1001", "currency": "USD"},
                        },
                        {
                            "eventName": "add_to_cart",
                            "user": {"userID": "user-2907", "country": "GB"},
                            "metadata": {"sku": "SKU-2002"},
                        },
                    ],
                    "statsigMetadata": {"sdkType": "py-server", "sdkVersion": "0.45.0"},
                }
            ]
        },
    )

    events: list[SdkEvent]
    statsigMetadata: dict[str, Any] | None = None


class SdkExceptionBody(BaseModel):
    """An SDK's error report; only `exception`, `tag` and the SDK's type and version are logged."""

    model_config = ConfigDict(
        extra="allow",
        defer_build=True,
        json_schema_extra={
            "examples": [
                {
                    "exception": "TimeoutError",
                    "info": "Traceback (most recent call last): ...",
                    "tag": "download_config_specs",
                    "statsigMetadata": {"sdkType": "py-server", "sdkVersion": "0.45.0"},
                }
            ]
        },
    )

    exception: str | None = None
    info: str | None = None
    tag: str | None = None
    statsigMetadata: dict[str, Any] | None = None


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


class CheckGateAnswer(RootModel):
    """One gate's answer (`gateName`), or each gate's by name (`gateNames`)."""

    model_config = ConfigDict(defer_build=True)

    root: GateAnswer | dict[str, GateAnswer]


class IdLists(RootModel):
    """Each id list by its name (the id-list segment's id)."""

    model_config = ConfigDict(defer_build=True)

    root: dict[str, IdList]
