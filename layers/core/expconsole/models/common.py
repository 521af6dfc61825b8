"""Small objects several resources share: owner, review settings, metric references."""

from pydantic import ConfigDict, Field

from expconsole.models.base import RequestModel, ResponseModel


class OwnerIn(RequestModel):
    ownerID: str = Field(min_length=1, max_length=200)
    ownerType: str = Field("USER", description="`USER` or `SDK_KEY`.")
    ownerName: str = Field("", max_length=200)
    ownerEmail: str = Field("", max_length=320)


class Owner(ResponseModel):
    ownerID: str
    ownerType: str
    ownerName: str
    ownerEmail: str


class Reviewer(RequestModel):
    id: str
    name: str
    email: str


class ReviewSettingsIn(RequestModel):
    requiredReview: bool
    allowedReviewers: list[Reviewer] | None = None


class ReviewSettings(ResponseModel):
    requiredReview: bool
    allowedReviewers: list[dict[str, str]] | None = None


class MetricRef(RequestModel):
    """A metric named by `name` and `type` (its id is `<name>::<type>`)."""

    name: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=100)


class ArchiveBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"archiveReason": "Launched to everyone; nothing checks it any more."}]
        }
    )

    forceArchive: bool = Field(False, description="Archive even when other entities still reference it.")
    archiveReason: str | None = Field(None, max_length=1000)


class UnarchiveBody(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"unarchiveReason": "Archived by mistake: the old app still reads it."}]
        }
    )

    unarchiveReason: str | None = Field(None, max_length=1000)


class Message(ResponseModel):
    message: str


class EventWarning(ResponseModel):
    """An accepted request that names an event never logged: maybe a typo, maybe not flowing yet."""

    field: str = Field(description="Where the event is named (`primaryMetrics[0]`, a metric id).")
    event: str = Field(description="The event name no ingestion has seen.")
    closest: list[str] = Field(description="Logged event names closest to it (up to 3).")
    message: str


class ErrorItem(ResponseModel):
    field: str
    message: str


class ErrorBody(ResponseModel):
    status: int
    message: str
    errors: list[ErrorItem] | None = None


class GatewayError(ResponseModel):
    """An answer of API Gateway itself, not of a function (e.g. a 413 past its 10 MB body limit)."""

    message: str
