"""Events: the ingestion body, its fast validator, the stored line and the logged event record.

Ingestion body (POST /v1/webhooks/event_webhook): one event object, a JSON array of them, or
`{"events": [...]}`. An event is `{event, user, timestamp?, metadata?, value?}`:

| field     | rule                                                                          |
|-----------|-------------------------------------------------------------------------------|
| event     | required; a string of 1 to 128 characters                                     |
| user      | required; an object carrying a non-empty string `userID` or `stableID`        |
| timestamp | optional (time of receipt); integer ms since the epoch, from 2000-01-01 (a    |
|           | smaller value looks like seconds) to at most one day after receipt            |
| metadata  | optional (`{}`); an object                                                    |
| value     | optional; a string or a number                                                |

`null` for an optional field means "left out". Unknown top-level fields are refused by name,
as every request body is (a typo such as `timestmap` would otherwise lose the time).

Errors name the event by its index in the request, counting from 0, always in the form
`events[<i>].<field>` — a single-event body is `events[0]` — so a client can map errors back
whatever shape it sent. The validator is hand-written rather than pydantic: a batch of 1,000
events validates in well under a millisecond per hundred events (see bench/ingest.py).

Stored line (one JSON object per line in `events/date=YYYY-MM-DD/<key>.jsonl.gz`):
`{event, user, timestamp, metadata, value?, source, receivedTime}` — `timestamp` always set
(filled with the receipt time when absent), `source` `webhook` (or `import:<file>` for bulk
import), `receivedTime` ms. Readers (catalogue, pulse) take these fields and ignore others.
"""

import json
import math
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from expconsole.models.base import AnyRootModel, Number, RequestModel, ResponseModel
from expconsole.models.pagination import PageQuery

MAX_EVENTS = 2000
MAX_BODY_BYTES = 1024 * 1024
MAX_NAME_CHARS = 128
MIN_TIMESTAMP_MS = 946_684_800_000  # 2000-01-01T00:00:00Z; smaller values look like seconds
MAX_FUTURE_MS = 24 * 3600 * 1000
SOURCE_WEBHOOK = "webhook"
EVENT_FIELDS = frozenset({"event", "user", "timestamp", "metadata", "value"})
MAX_ERRORS = 100

Error = dict[str, str]


def _err(errors: list[Error], index: int, field: str, message: str) -> None:
    errors.append({"field": f"events[{index}].{field}" if field else f"events[{index}]", "message": message})


def check_event(index: int, raw: Any, now_ms: int, errors: list[Error]) -> dict[str, Any] | None:
    """The stored line for one event (without source/receivedTime), or None after adding errors."""
    if type(raw) is not dict:
        _err(errors, index, "", "must be an object {event, user, timestamp, metadata, value}")
        return None
    before = len(errors)
    if len(raw) > 5 or not raw.keys() <= EVENT_FIELDS:
        for key in sorted(set(raw) - EVENT_FIELDS):
            _err(errors, index, key, "unknown field (allowed: event, user, timestamp, metadata, value)")

    name = raw.get("event")
    if name is None:
        _err(errors, index, "event", "is required: the event name")
    elif type(name) is not str:
        _err(errors, index, "event", "must be a string")
    elif not name or len(name) > MAX_NAME_CHARS:
        _err(errors, index, "event", f"must be 1 to {MAX_NAME_CHARS} characters (got {len(name)})")

    user = raw.get("user")
    if user is None:
        _err(errors, index, "user", "is required: an object with userID or stableID")
    elif type(user) is not dict:
        _err(errors, index, "user", "must be an object with userID or stableID")
    else:
        uid, sid = user.get("userID"), user.get("stableID")
        if uid is not None and type(uid) is not str:
            _err(errors, index, "user.userID", "must be a string")
        elif sid is not None and type(sid) is not str:
            _err(errors, index, "user.stableID", "must be a string")
        elif not uid and not sid:
            _err(errors, index, "user", "must carry a non-empty userID or stableID")

    ts = raw.get("timestamp")
    if ts is None:
        ts = now_ms
    elif type(ts) is float and math.isfinite(ts) and ts.is_integer():
        ts = int(ts)
    if type(ts) is not int:
        _err(errors, index, "timestamp", "must be an integer: milliseconds since the epoch")
    elif ts < MIN_TIMESTAMP_MS:
        _err(
            errors,
            index,
            "timestamp",
            f"{ts} is before 2000-01-01 in milliseconds: it looks like seconds; send milliseconds "
            "since the epoch",
        )
    elif ts > now_ms + MAX_FUTURE_MS:
        _err(errors, index, "timestamp", f"{ts} is more than a day in the future (now {now_ms} ms)")

    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    elif type(metadata) is not dict:
        _err(errors, index, "metadata", "must be an object")

    value = raw.get("value")
    if value is not None and (
        type(value) is bool
        or not isinstance(value, str | int | float)
        or (type(value) is float and not math.isfinite(value))
    ):
        _err(errors, index, "value", "must be a string or a number")

    if len(errors) != before:
        return None
    line = {"event": name, "user": user, "timestamp": ts, "metadata": metadata}
    if value is not None:
        line["value"] = value
    return line


def logged_record(line: dict[str, Any]) -> dict[str, Any]:
    """A stored line as the catalogue lists it: numeric value as its JSON text, userID `""` when
    only stableID was given (docs/architecture.md, 'Decisions')."""
    value = line.get("value")
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    user = line.get("user") or {}
    return {
        "timestamp": str(line.get("timestamp", "")),
        "name": line.get("event", ""),
        "source": line.get("source", ""),
        "value": text,
        "userID": user.get("userID") or "",
        "metadata": line.get("metadata") or {},
    }


# --- API shapes (OpenAPI and contract tests) ---------------------------------------------------


# The ingestion body as OpenAPI documents it. Requests are checked by `check_event` above, not by
# these models (which only describe the same rules); expconsole_tools.openapi reads them by name from the
# route's `x-request-body-model` extension, so the ingest function never builds their schemas.


class IngestUser(RequestModel):
    """Who sent the event: a non-empty `userID` or `stableID` (other fields are kept as sent)."""

    model_config = ConfigDict(extra="allow")

    userID: str | None = None
    stableID: str | None = None


class IngestEvent(RequestModel):
    event: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="The event name.")
    user: IngestUser
    timestamp: int | None = Field(
        None,
        ge=MIN_TIMESTAMP_MS,
        description="Milliseconds since the epoch, at most a day ahead; the time of receipt if left out.",
    )
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object; `{}` if left out.")
    value: str | Number | None = None


class IngestBatch(RequestModel):
    events: list[IngestEvent] = Field(min_length=1, max_length=MAX_EVENTS)


IngestEvents = Annotated[list[IngestEvent], Field(min_length=1, max_length=MAX_EVENTS)]


class IngestBody(AnyRootModel):
    """One event, an array of events, or `{"events": [...]}`: at most 2,000 events and 1 MiB."""

    # `root` annotated, not `RootModel[...]`: that parametrized class would be built at import.
    model_config = ConfigDict(
        defer_build=True,
        json_schema_extra={
            "examples": [
                [
                    {
                        "event": "purchase",
                        "user": {"userID": "user-1842"},
                        "value": 42.5,
                        "metadata": {"sku": "SKU-1001", "currency": "USD"},
                    },
                    {
                        "event": "add_to_cart",
                        "user": {"userID": "user-2907"},
                        "metadata": {"sku": "SKU-2002"},
                    },
                    {
                        "event": "checkout_start",
                        "user": {"userID": "user-2907"},
                        "metadata": {"platform": "ios"},
                    },
                ]
            ]
        },
    )

    root: IngestEvent | IngestEvents | IngestBatch


class IngestAccepted(ResponseModel):
    success: bool = True
    accepted: int = Field(description="Events newly stored; all of them are stored once this returns.")
    duplicates: int = Field(
        0,
        description=(
            "Events already stored by an identical earlier request (a retry): stored once, not again."
        ),
    )


class LoggedEvent(ResponseModel):
    timestamp: str = Field(description="Milliseconds since the epoch, as text.")
    name: str
    source: str = Field(description="`webhook`, or `import:<file>` for bulk import.")
    value: str = Field(description="The value as text (a number as its JSON text); '' when none.")
    userID: str = Field(description="'' when the event carried only a stableID.")
    metadata: dict[str, Any]


class LoggedEventListEnvelope(ResponseModel):
    message: str
    data: list[LoggedEvent]
    pagination: dict[str, Any]


class EventDay(ResponseModel):
    date: str
    count: int
    lastSeen: int


class EventSummary(ResponseModel):
    name: str
    totalCount: int
    firstSeen: int | None = Field(description="Receipt time (ms) of the first event of this name.")
    lastSeen: int | None = Field(description="Receipt time (ms) of the latest event of this name.")
    days: list[EventDay] = Field(description="Per UTC day of the events' timestamps, newest first.")
    metadataKeys: list[str]


class EventSummaryEnvelope(ResponseModel):
    message: str
    data: EventSummary


MAX_WINDOW_DAYS = 31
DEFAULT_WINDOW_DAYS = 7


class EventListQuery(PageQuery):
    """The window of UTC days to list: the last `days` days (today included), or a date range."""

    days: int | None = Field(
        None, ge=1, le=MAX_WINDOW_DAYS, description="The last N UTC days, today included (default 7)."
    )
    startDate: str | None = Field(None, description="First UTC day, YYYY-MM-DD (with endDate).")
    endDate: str | None = Field(None, description="Last UTC day, YYYY-MM-DD, inclusive.")
