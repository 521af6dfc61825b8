"""SDK `log_event` batches as our events, stored exactly once under retries.

The body is `{events, statsigMetadata}`, gzip'd by the SDKs (Content-Encoding). Each event:

- a custom event `{eventName, user, value, metadata, time}` is stored as ours (`event`,
  `user` with `stableID` lifted from `customIDs`, `timestamp`, `value`, `metadata`);
- `statsig::config_exposure` whose `ruleID` is a group of the named experiment, and
  `statsig::layer_exposure` of an explicit parameter (its `allocatedExperiment` and `ruleID`),
  become `console::experiment_exposure {experiment, group}`;
- every holdout check, in an exposure's `secondaryExposures` or as a gate exposure of
  `holdout:<id>`, becomes `console::holdout_exposure {holdout, heldOut}`;
- `statsig::gate_exposure` of a gate is stored as `console::gate_check {gate, value, ruleID}`
  (pulse and the gate's check statistics read them);
- `statsig::diagnostics` and other SDK-internal events are accepted and dropped.

Which rule ids are groups comes from the spec document the SDK was served (S3), not from the
table. An event that cannot be stored (no unit id at all, a name over 128 characters, a time
before 2000) is skipped and reported in the answer by index; the rest are stored: a 4xx would
make the SDK drop the whole batch. The stored objects are named from the decompressed body's
hash, so a retried batch (the SDK resends the same body) rewrites the same objects and counts
nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from expconsole import observability
from expconsole.errors import Invalid, TooLarge, Unavailable
from expconsole.models.events import MAX_FUTURE_MS, MAX_NAME_CHARS, MIN_TIMESTAMP_MS
from expconsole.services import ingest
from expconsole.services.sdk import documents, specs
from expconsole.store import gate_checks

logger = observability.logger
SOURCE_SDK = "sdk"
MAX_EVENTS = 2000  # the SDKs flush at 1,000 (plus their diagnostics)
MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024
EXPERIMENT_EXPOSURE = "console::experiment_exposure"
HOLDOUT_EXPOSURE = "console::holdout_exposure"
GATE_CHECK = "console::gate_check"
DROPPED = frozenset({"statsig::diagnostics", "statsig::non_exposed_checks"})


@dataclass
class Groups:
    """Experiment id → its group rule ids, from the spec document."""

    by_experiment: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: dict[str, Any] | None) -> Groups:
        out = cls()
        for config in (spec or {}).get("dynamic_configs", []):
            if config.get("entity") == "experiment":
                out.by_experiment[config["name"]] = {
                    r["id"] for r in config.get("rules", []) if r.get("isExperimentGroup")
                }
        return out

    def group(self, experiment: str, rule_id: str) -> str | None:
        return rule_id if rule_id in self.by_experiment.get(experiment, ()) else None


def decode(body: bytes, encoding: str | None) -> dict[str, Any]:
    """The request's JSON object, decompressed when the SDK gzip'd it."""
    # gzip magic too: a proxy may drop the Content-Encoding header of a gzip'd body.
    if (encoding and encoding.strip().lower() in ("gzip", "deflate")) or body[:2] == b"\x1f\x8b":
        try:
            decoder = zlib.decompressobj(wbits=47)  # gzip or zlib headers
            body = decoder.decompress(body, MAX_DECOMPRESSED_BYTES + 1)
        except zlib.error as exc:
            raise Invalid.field("body", f"is not valid {encoding or 'gzip'} data ({exc})") from None
        if len(body) > MAX_DECOMPRESSED_BYTES:
            raise TooLarge(f"The decompressed body is over {MAX_DECOMPRESSED_BYTES} bytes.")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Invalid.field("body", f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise Invalid.field("events", "is required: an array of events ({events, statsigMetadata})")
    if len(data["events"]) > MAX_EVENTS:
        raise TooLarge(f"{len(data['events'])} events in one batch; the limit is {MAX_EVENTS}.")
    return data


def _object(value: Any) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty one: the SDK's fields are read leniently."""
    return value if isinstance(value, dict) else {}


def _user(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    user = {k: v for k, v in raw.items() if k != "privateAttributes"}
    custom_ids = _object(user.get("customIDs"))
    if not user.get("stableID") and isinstance(custom_ids.get("stableID"), str):
        user["stableID"] = custom_ids["stableID"]
    if user.get("userID") is not None and not isinstance(user["userID"], str):
        user["userID"] = str(user["userID"])
    if not (user.get("userID") or user.get("stableID") or any(custom_ids.values())):
        return None
    return user


def _time(raw: Any, now_ms: int) -> int | None:
    """The event's time: receipt time when absent; None (skipped) when not a number of ms."""
    if raw is None:
        return now_ms
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw != raw:
        return None
    ts = int(raw)
    if ts < MIN_TIMESTAMP_MS or ts > now_ms + MAX_FUTURE_MS:
        return None
    return ts


@dataclass
class Mapped:
    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0


def _holdout_checks(exposures: Any) -> list[tuple[str, bool]]:
    out = []
    for exp in exposures if isinstance(exposures, list) else []:
        gate = exp.get("gate") if isinstance(exp, dict) else None
        if isinstance(gate, str) and gate.startswith(specs.HOLDOUT_PREFIX):
            out.append((gate.removeprefix(specs.HOLDOUT_PREFIX), exp.get("gateValue") == "true"))
    return out


def map_events(events: list[Any], groups: Groups, now_ms: int) -> Mapped:
    """Our stored lines for a batch (without source/receivedTime), and what was skipped."""
    out = Mapped()
    for index, raw in enumerate(events):
        if not isinstance(raw, dict):
            out.skipped.append({"index": index, "reason": "not an object"})
            continue
        name = raw.get("eventName")
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
            out.skipped.append(
                {"index": index, "reason": f"eventName must be a string of 1 to {MAX_NAME_CHARS} characters"}
            )
            continue
        if name in DROPPED:
            out.dropped += 1
            continue
        user = _user(raw.get("user"))
        if user is None:
            out.skipped.append({"index": index, "reason": "user carries no userID, stableID or customIDs"})
            continue
        ts = _time(raw.get("time"), now_ms)
        if ts is None:
            out.skipped.append(
                {
                    "index": index,
                    "reason": "time must be milliseconds since the epoch, from 2000 to a day ahead",
                }
            )
            continue
        meta = _object(raw.get("metadata"))

        def line(event: str, metadata: dict[str, Any], user: dict[str, Any] = user, ts: int = ts) -> None:
            out.lines.append({"event": event, "user": user, "timestamp": ts, "metadata": metadata})

        for holdout, held_out in _holdout_checks(raw.get("secondaryExposures")):
            line(HOLDOUT_EXPOSURE, {"holdout": holdout, "heldOut": held_out})
        if name == "statsig::config_exposure":
            experiment = str(meta.get("config", ""))
            group = groups.group(experiment, str(meta.get("ruleID", "")))
            if group is not None:
                line(EXPERIMENT_EXPOSURE, {"experiment": experiment, "group": group})
        elif name == "statsig::layer_exposure":
            experiment = str(meta.get("allocatedExperiment", ""))
            group = groups.group(experiment, str(meta.get("ruleID", "")))
            if group is not None and str(meta.get("isExplicitParameter")) == "true":
                line(EXPERIMENT_EXPOSURE, {"experiment": experiment, "group": group})
        elif name == "statsig::gate_exposure":
            gate = str(meta.get("gate", ""))
            if gate.startswith(specs.HOLDOUT_PREFIX):
                line(HOLDOUT_EXPOSURE, {"holdout": gate.removeprefix(specs.HOLDOUT_PREFIX),
                                        "heldOut": meta.get("gateValue") == "true"})  # fmt: skip
            elif not gate.startswith((specs.SEGMENT_PREFIX, specs.TARGETING_PREFIX)):
                line(GATE_CHECK, {"gate": gate, "value": meta.get("gateValue") == "true",
                                  "ruleID": str(meta.get("ruleID", ""))})  # fmt: skip
        elif not name.startswith("statsig::"):
            event = {"event": name, "user": user, "timestamp": ts, "metadata": meta}
            value = raw.get("value")
            if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
                event["value"] = value
            out.lines.append(event)
        else:
            out.dropped += 1
    return out


def gate_tallies(lines: list[dict[str, Any]]) -> dict[tuple[str, str], gate_checks.Tally]:
    """Gate checks by (gate, hour of the check)."""
    out: dict[tuple[str, str], gate_checks.Tally] = {}
    for line in lines:
        if line["event"] != GATE_CHECK:
            continue
        key = (line["metadata"]["gate"], gate_checks.hour_of(line["timestamp"]))
        tally = out.setdefault(key, gate_checks.Tally())
        tally.checks += 1
        tally.passes += bool(line["metadata"]["value"])
    return out


def store(lines: list[dict[str, Any]], seed: str, now_ms: int) -> int:
    """Store mapped lines as events, then count their gate checks; each once under retries (the
    objects and the check counters are keyed by `seed`). The number of lines already stored."""
    retry = "Events storage failed; retry the same batch (nothing is stored twice)."
    try:
        stored = ingest.store_lines(lines, seed, SOURCE_SDK, now_ms)
    except ingest.StoreFailed as exc:
        raise Unavailable(retry) from exc.__cause__
    tallies = gate_tallies(lines)
    if tallies:
        try:
            gate_checks.record(hashlib.sha256(seed.encode()).hexdigest()[:40], tallies, now_ms)
        except Exception as exc:
            raise Unavailable(retry) from exc
    return stored.duplicates


def report_exception(body: bytes) -> None:
    """Log an SDK's error report (what failed, where), so an operator sees SDK trouble in the logs.

    Only the exception's name, tag and SDK type are kept: the report's `info` is a stack trace of
    the application and `statsigOptions` may name its hosts.
    """
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise Invalid.field("body", "is not valid JSON") from None
    if not isinstance(data, dict):
        raise Invalid.field("body", "must be an object {exception, info, tag, statsigMetadata}")
    meta = _object(data.get("statsigMetadata"))
    logger.warning(
        "SDK error report",
        extra={
            "exception": str(data.get("exception", ""))[:200],
            "tag": str(data.get("tag", ""))[:200],
            "sdkType": str(meta.get("sdkType", ""))[:50],
            "sdkVersion": str(meta.get("sdkVersion", ""))[:50],
        },
    )


def log_events(body: bytes, encoding: str | None, now_ms: int | None = None) -> dict[str, Any]:
    """Store a batch; what happened to it: lines stored now (`accepted`), already stored by an
    identical earlier batch (`duplicates`: a retry), events skipped (by index) and dropped."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    data = decode(body, encoding)
    mapped = map_events(data["events"], Groups.of(documents.current_spec()), now)
    duplicates = 0
    if mapped.lines:
        canonical = json.dumps(data["events"], sort_keys=True, separators=(",", ":")).encode()
        duplicates = store(mapped.lines, "sdk:" + hashlib.sha256(canonical).hexdigest(), now)
    observability.count("EventsAccepted", len(mapped.lines) - duplicates)
    observability.count("EventsDuplicate", duplicates)
    observability.count("EventsSkipped", len(mapped.skipped))
    return {
        "success": True,
        "accepted": len(mapped.lines) - duplicates,
        "duplicates": duplicates,
        "dropped": mapped.dropped,
        "skipped": mapped.skipped[:100],
    }
