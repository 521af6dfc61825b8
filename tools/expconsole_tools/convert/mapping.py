"""One row of another tool's export → one event of this console's model (or a reason to skip it).

The model (contract, Events part): `{event, user: {userID?, stableID?, …user properties},
timestamp (ms), metadata, value?}`. Each mapper follows its tool's public export format; the
rules, and what is deliberately dropped, are listed in `docs/api/events.md` (converting other tools'
exports). A mapper returns the event, `None` for a message that is not an event (a Segment
`identify`, an Amplitude `$identify`), or raises `Skip` with the reason a row cannot become one.
Nested property values are kept as they are (JSON objects and arrays stay JSON in `metadata`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from expconsole.models.events import MIN_TIMESTAMP_MS

Event = dict[str, Any]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MS = timedelta(milliseconds=1)
# A numeric time below 1e11 is seconds (1e11 s is the year 5138; 1e11 ms is 1973): how Mixpanel's
# raw export is told apart from its `time_in_ms=true` variant.
SECONDS_BELOW = 100_000_000_000
ID_FIELDS = ("userID", "stableID")


class Skip(Exception):
    """A row that cannot be converted; the message says why."""


# --- shared helpers ------------------------------------------------------------------------------


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Skip(f"no event name ({field} is {_shown(value)})")
    return value


def _id(value: Any) -> str | None:
    """An id as the model wants it: a non-blank string (whole numbers, which some SDKs send, as text)."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _object(value: Any, field: str) -> dict[str, Any]:
    """A property bag: absent or null is empty; anything but an object is a broken row."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Skip(f"{field} is not an object ({_shown(value)})")
    return value


def _number(value: Any) -> int | float | None:
    """A finite number, or None (booleans and numeric text are not amounts)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _timestamp(value: Any, field: str) -> int:
    """Milliseconds since the epoch from an ISO-8601 text (no offset means UTC) or a number of
    seconds or milliseconds (told apart by magnitude); refused before 2000, as ingestion would,
    but with a reason that fits a conversion (the validator's would say "send milliseconds")."""
    timestamp = _milliseconds(value, field)
    if timestamp < MIN_TIMESTAMP_MS:
        raise Skip(f"{field} {_shown(value)} is before 2000-01-01, earlier than any event this console keeps")
    return timestamp


def _milliseconds(value: Any, field: str) -> int:
    if value is None:
        raise Skip(f"no time ({field} is missing)")
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return _milliseconds(int(text), field)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise Skip(f"{field} {value!r} is not a date-time") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return (moment - EPOCH) // ONE_MS
    number = _number(value)
    if number is None:
        raise Skip(f"{field} is not a time ({_shown(value)})")
    return round(number * 1000) if abs(number) < SECONDS_BELOW else round(number)


def _event(
    name: str,
    user_id: str | None,
    stable_id: str | None,
    properties: dict[str, Any],
    timestamp: int,
    metadata: dict[str, Any],
    value: int | float | None,
) -> Event:
    """The model's event; user properties first so that they can never replace the ids."""
    if user_id is None and stable_id is None:
        raise Skip("no user id or device id")
    user = {key: item for key, item in properties.items() if key not in ID_FIELDS}
    if user_id is not None:
        user["userID"] = user_id
    if stable_id is not None:
        user["stableID"] = stable_id
    event: Event = {"event": name, "user": user, "timestamp": timestamp, "metadata": metadata}
    if value is not None:
        event["value"] = value
    return event


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- Amplitude -----------------------------------------------------------------------------------

# Amplitude's own per-event user properties (its "Amplitude user properties": platform, OS, device,
# location, language, app version) become user fields as well; ip_address, location_lat/lng and
# advertising ids are left out on purpose.
AMPLITUDE_USER_COLUMNS = (
    "platform",
    "os_name",
    "os_version",
    "device_type",
    "device_family",
    "device_brand",
    "device_manufacturer",
    "device_model",
    "device_carrier",
    "country",
    "region",
    "city",
    "dma",
    "language",
    "version_name",
)
# Rows the export carries for user and group property updates: not things users did.
AMPLITUDE_NOT_EVENTS = frozenset({"$identify", "$groupidentify"})


class Amplitude:
    """Amplitude Export API rows (`event_type`, `event_time`, `user_id`, `device_id`, …)."""

    tool = "amplitude"

    def __call__(self, row: dict[str, Any]) -> Event | None:
        name = _name(row.get("event_type"), "event_type")
        if name in AMPLITUDE_NOT_EVENTS:
            return None
        # event_time is Amplitude's canonical time (UTC, "YYYY-MM-DD HH:MM:SS.ffffff"); `time` (ms)
        # is the HTTP API's field, present when rows were saved in that shape.
        if row.get("event_time") is not None:
            timestamp = _timestamp(row["event_time"], "event_time")
        else:
            timestamp = _timestamp(row.get("time"), "event_time")
        metadata = _object(row.get("event_properties"), "event_properties")
        user: dict[str, Any] = {k: row[k] for k in AMPLITUDE_USER_COLUMNS if row.get(k) is not None}
        user.update(_object(row.get("user_properties"), "user_properties"))
        value = _number(row.get("revenue"))
        if value is None:
            value = _number(metadata.get("$revenue"))
        return _event(
            name, _id(row.get("user_id")), _id(row.get("device_id")), user, timestamp, metadata, value
        )


# --- Mixpanel ------------------------------------------------------------------------------------

# Properties that become the event's time and ids rather than metadata.
MIXPANEL_MAPPED = frozenset({"time", "distinct_id", "$user_id", "$device_id"})
MIXPANEL_DEVICE_PREFIX = "$device:"


class Mixpanel:
    """Mixpanel raw export rows: `{"event": …, "properties": {"time", "distinct_id", …}}`.

    Ids: `$user_id` (or else `distinct_id`) is the user id; `$device_id` is the device id. A
    `distinct_id` of `$device:<id>` (simplified ID merge) or equal to `$device_id` is anonymous,
    so it is the device id, not a user id. Every other property, `$`-prefixed ones included
    (`$insert_id`, `$browser`, `mp_lib`…), is an event property and kept in `metadata`: the raw
    export has no user profiles, so nothing becomes a user field.
    """

    tool = "mixpanel"

    def __call__(self, row: dict[str, Any]) -> Event | None:
        name = _name(row.get("event"), "event")
        properties = _object(row.get("properties"), "properties")
        timestamp = _timestamp(properties.get("time"), "properties.time")
        distinct = _id(properties.get("distinct_id"))
        device = _id(properties.get("$device_id"))
        user = _id(properties.get("$user_id"))
        if distinct is not None and distinct.startswith(MIXPANEL_DEVICE_PREFIX):
            device = device or _id(distinct[len(MIXPANEL_DEVICE_PREFIX) :])
        elif user is None and distinct != device:
            user = distinct
        metadata = {key: item for key, item in properties.items() if key not in MIXPANEL_MAPPED}
        return _event(name, user, device, {}, timestamp, metadata, None)


# --- Segment -------------------------------------------------------------------------------------

SEGMENT_NOT_EVENTS = frozenset({"identify", "group", "alias"})


class Segment:
    """Segment spec messages as its S3 / Data Lakes / raw exports write them, one per line.

    `track` is its `event`; `page` and `screen` are the events `page` and `screen`, their `name`
    (and `category`) in metadata. `identify` is not an event: its traits are remembered (by
    `userId` and by `anonymousId`) and added as user fields to the same user's later messages, in
    reading order, under the message's own `context.traits`. `group` and `alias` are not events.
    The remembered traits grow with the number of identified users, not with the file.
    """

    tool = "segment"

    def __init__(self) -> None:
        self.traits: dict[str, dict[str, Any]] = {}

    def __call__(self, row: dict[str, Any]) -> Event | None:
        kind = row.get("type")
        user_id, anonymous_id = _id(row.get("userId")), _id(row.get("anonymousId"))
        context = _object(row.get("context"), "context")
        if kind == "identify":
            traits = {
                **_object(context.get("traits"), "context.traits"),
                **_object(row.get("traits"), "traits"),
            }
            for key in (f"u:{user_id}" if user_id else None, f"a:{anonymous_id}" if anonymous_id else None):
                if key is not None:
                    self.traits.setdefault(key, {}).update(traits)
            return None
        if kind in SEGMENT_NOT_EVENTS:
            return None
        metadata = dict(_object(row.get("properties"), "properties"))
        if kind == "track":
            name = _name(row.get("event"), "event")
        elif kind in ("page", "screen"):
            name = kind
            for key in ("name", "category"):
                if row.get(key) is not None:
                    metadata[key] = row[key]
        else:
            raise Skip(f"type {_shown(kind)} is not a Segment event (track, page, screen, identify…)")
        # Segment's `timestamp` is the event time corrected for device clock skew.
        timestamp = _timestamp(
            next((row[k] for k in ("timestamp", "originalTimestamp", "receivedAt") if row.get(k)), None),
            "timestamp",
        )
        user: dict[str, Any] = {}
        if anonymous_id:
            user.update(self.traits.get(f"a:{anonymous_id}", {}))
        if user_id:
            user.update(self.traits.get(f"u:{user_id}", {}))
        user.update(_object(context.get("traits"), "context.traits"))
        value = _number(metadata.get("revenue"))
        if value is None:
            value = _number(metadata.get("value"))
        return _event(name, user_id, anonymous_id, user, timestamp, metadata, value)


MAPPERS: dict[str, type[Amplitude] | type[Mixpanel] | type[Segment]] = {
    "amplitude": Amplitude,
    "mixpanel": Mixpanel,
    "segment": Segment,
}
