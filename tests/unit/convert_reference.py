"""The sample exports and what converting them must give, worked out here independently.

The expected events are computed from the sample input with the mapping `docs/api/events.md` documents
(converting other tools' exports), written plainly (strptime, explicit branches) rather than
with the converter's code, so that a test compares two readings of the same rules instead of
the converter with itself. Shared by tests/unit/test_convert.py and tests/e2e/test_convert_cli.py.
"""

from __future__ import annotations

import calendar
import gzip
import json
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"
TOOLS = ("amplitude", "mixpanel", "segment")
YEAR_2000_MS = 946_684_800_000

# docs/api/events.md: Amplitude's own user properties that become user fields beside user_properties.
AMPLITUDE_USER_COLUMNS = [
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
]


def sample_files(tool: str) -> list[Path]:
    """The committed sample export of a tool, in name order."""
    return sorted(p for p in (EXPORTS / tool).iterdir() if p.is_file())


def sample_lines(tool: str) -> list[str]:
    """Every non-blank line of the sample, in reading order."""
    return [line for path in sample_files(tool) for line in path.read_text().splitlines() if line.strip()]


def amplitude_zip(dest: Path) -> Path:
    """The Amplitude sample packed as the Export API answers: a zip of gzipped hourly files."""
    with zipfile.ZipFile(dest, "w") as archive:
        for path in sample_files("amplitude"):
            archive.writestr(f"187520/{path.name}.gz", gzip.compress(path.read_bytes()))
    return dest


@dataclass
class Expected:
    events: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0
    not_events: int = 0

    def days(self) -> dict[str, list[dict[str, Any]]]:
        """Expected events by UTC day, in input order."""
        by_day: dict[str, list[dict[str, Any]]] = {}
        for event in self.events:
            day = datetime.fromtimestamp(event["timestamp"] / 1000, UTC).strftime("%Y-%m-%d")
            by_day.setdefault(day, []).append(event)
        return by_day


def expected(tool: str, lines: list[str] | None = None) -> Expected:
    """What converting `lines` (the tool's sample by default) must produce."""
    result = Expected()
    convert_one = {"amplitude": _amplitude, "mixpanel": _mixpanel, "segment": _segment()}[tool]
    for line in sample_lines(tool) if lines is None else lines:
        try:
            row = json.loads(line)
            event = convert_one(row)
        except (ValueError, KeyError, TypeError, AttributeError):
            result.skipped += 1
            continue
        if event is None:
            result.not_events += 1
        elif len(event["event"]) > 128 or event["timestamp"] < YEAR_2000_MS:
            result.skipped += 1
        else:
            result.events.append(event)
    return result


def _model(
    name: Any, uid: Any, sid: Any, user: dict[str, Any], ts: int, meta: dict[str, Any], value: Any
) -> Any:
    if not isinstance(name, str) or not name:
        raise ValueError("no name")
    if not uid and not sid:
        raise ValueError("no ids")
    user = dict(user)
    if uid:
        user["userID"] = uid
    if sid:
        user["stableID"] = sid
    event = {"event": name, "user": user, "timestamp": ts, "metadata": meta}
    if value is not None:
        event["value"] = value
    return event


def _amplitude(row: dict[str, Any]) -> dict[str, Any] | None:
    if row["event_type"] in ("$identify", "$groupidentify"):
        return None
    moment = datetime.strptime(row["event_time"], "%Y-%m-%d %H:%M:%S.%f")
    ts = calendar.timegm(moment.timetuple()) * 1000 + moment.microsecond // 1000
    user = {key: row[key] for key in AMPLITUDE_USER_COLUMNS if row.get(key) is not None}
    user.update(row.get("user_properties") or {})
    meta = row.get("event_properties") or {}
    return _model(
        row["event_type"], row.get("user_id"), row.get("device_id"), user, ts, meta, meta.get("$revenue")
    )


def _mixpanel(row: dict[str, Any]) -> dict[str, Any]:
    props = row["properties"]
    seconds_or_ms = props["time"]
    ts = round(seconds_or_ms * 1000) if seconds_or_ms < 10**11 else seconds_or_ms
    distinct, device, uid = props.get("distinct_id"), props.get("$device_id"), props.get("$user_id")
    if distinct and distinct.startswith("$device:"):
        device = device or distinct.split(":", 1)[1]
    elif not uid and distinct != device:
        uid = distinct
    meta = {k: v for k, v in props.items() if k not in ("time", "distinct_id", "$user_id", "$device_id")}
    return _model(row["event"], uid, device, {}, ts, meta, None)


def _segment() -> Any:
    """A converter of one message that remembers identify traits, as docs/api/events.md says."""
    traits: dict[str, dict[str, Any]] = {}

    def convert_one(row: dict[str, Any]) -> dict[str, Any] | None:
        kind = row["type"]
        uid, aid = row.get("userId"), row.get("anonymousId")
        if kind == "identify":
            for key in (uid, aid):
                if key:
                    traits.setdefault(key, {}).update(row.get("traits") or {})
            return None
        if kind in ("group", "alias"):
            return None
        meta = dict(row.get("properties") or {})
        if kind == "track":
            name = row.get("event")
        else:
            name = kind
            meta.update({k: row[k] for k in ("name", "category") if k in row})
        ts = round(datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
        user = {**traits.get(aid, {}), **traits.get(uid, {}), **(row.get("context") or {}).get("traits", {})}
        value = meta.get("revenue", meta.get("value"))
        return _model(name, uid, aid, user, ts, meta, value)

    return convert_one


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The events of one output file (.jsonl or .jsonl.gz)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_days(root: Path, tool: str) -> dict[str, list[dict[str, Any]]]:
    """The events of a day-directory output, by day directory."""
    return {day.name: read_jsonl(day / f"{tool}.jsonl") for day in sorted(root.iterdir()) if day.is_dir()}
