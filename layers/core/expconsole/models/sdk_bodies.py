"""The bodies of `POST /v1/log_event` and `/v1/sdk_exception` as OpenAPI documents them.

The SDKs' shapes, read leniently by expconsole.services.sdk.log_event (unknown fields are ignored,
not refused), which parses the raw body itself (it may be gzip'd). Apart from models/sdk.py so
that the SDK function never creates these classes: only expconsole_tools.openapi imports this
module, by the name in the routes' `x-request-body-model`.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
