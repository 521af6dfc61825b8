"""A day of events as an Arrow table, and the compaction of finished days into Parquet.

Raw events live in `events/date=D/<hash>.jsonl.gz` (ingestion and import write them). A
finished day is compacted into `compacted/date=D/part-<hash>.parquet`, with a manifest
`compacted/date=D/_manifest.json` naming the raw objects it holds. The Parquet file's name
derives from the sorted list of those objects, so compacting the same objects twice writes the
same file (idempotent); raw objects that appear later (a backfill, an import) are read beside
the Parquet file until the next compaction folds them in. Raw objects are kept: the events
catalogue reads them, and the bucket's lifecycle rule expires them. `compacted/` follows the
same `date=` partition scheme, so the Glue table of template.yaml (partition projection) lets
Athena query it.

Columns: event, timestamp (ms), userID, stableID, user (JSON text of the whole user object),
value (text: strings as sent, numbers as JSON text), valueNumber (the value as a number when it
is one, or numeric text), metadata (JSON text), source, receivedTime.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from expconsole.store import s3

SCHEMA = pa.schema(
    [
        ("event", pa.string()),
        ("timestamp", pa.int64()),
        ("userID", pa.string()),
        ("stableID", pa.string()),
        ("user", pa.string()),
        ("value", pa.string()),
        ("valueNumber", pa.float64()),
        ("metadata", pa.string()),
        ("source", pa.string()),
        ("receivedTime", pa.int64()),
    ]
)
MANIFEST = "_manifest.json"


def compacted_prefix(day: str) -> str:
    return f"{s3.COMPACTED_PREFIX}date={day}/"


def number_of(value: Any) -> float | None:
    """The event value as a number: numbers, and text that parses as a finite number."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def table_of_lines(lines: Iterable[str]) -> pa.Table:
    """Raw JSON lines (as ingestion stores them) as a table of SCHEMA."""
    cols: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode
    for text in lines:
        line = json.loads(text)
        user = line.get("user") or {}
        value = line.get("value")
        cols["event"].append(line["event"])
        cols["timestamp"].append(line["timestamp"])
        cols["userID"].append(user.get("userID") or None)
        cols["stableID"].append(user.get("stableID") or None)
        cols["user"].append(dumps(user))
        cols["value"].append(
            None if value is None else value if isinstance(value, str) else json.dumps(value)
        )
        cols["valueNumber"].append(number_of(value))
        metadata = line.get("metadata")
        cols["metadata"].append(dumps(metadata) if metadata else None)
        cols["source"].append(line.get("source"))
        cols["receivedTime"].append(line.get("receivedTime"))
    return pa.Table.from_pydict(cols, schema=SCHEMA)


def raw_keys(day: str) -> list[str]:
    return sorted(k for k in s3.keys(s3.day_prefix(day)) if k.endswith(".jsonl.gz"))


def _manifest(day: str) -> dict[str, Any] | None:
    body = s3.get_if_exists(compacted_prefix(day) + MANIFEST)
    return json.loads(body) if body else None


def read_raw(keys: list[str]) -> pa.Table:
    tables = [table_of_lines(s3.decode(s3.get(key))) for key in keys]
    return pa.concat_tables(tables) if tables else SCHEMA.empty_table()


def read_day(
    day: str, columns: list[str] | None = None, keys: list[str] | None = None
) -> tuple[pa.Table, list[str]]:
    """Every event of the day (compacted Parquet plus raw objects not in it) and the raw keys seen."""
    keys = raw_keys(day) if keys is None else keys
    manifest = _manifest(day)
    parts = []
    pending = keys
    if manifest is not None:
        held = set(manifest["sources"])
        pending = [k for k in keys if k not in held]
        body = s3.get(manifest["parquet"])
        parts.append(pq.read_table(io.BytesIO(body), columns=columns))
    if pending:
        raw = read_raw(pending)
        parts.append(raw.select(columns) if columns else raw)
    if not parts:
        empty = SCHEMA.empty_table()
        return (empty.select(columns) if columns else empty), keys
    return pa.concat_tables(parts), keys


def sources_digest(keys: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:32]


def compact(day: str, keys: list[str] | None = None) -> bool:
    """Fold the day's raw objects into one Parquet file (when something new arrived); True if written.

    Order: Parquet first, manifest last, so a reader sees the old manifest (and reads the raw
    objects it does not list) or the new one, whose Parquet file already exists.
    """
    keys = raw_keys(day) if keys is None else keys
    manifest = _manifest(day)
    if not keys or (manifest is not None and set(keys) <= set(manifest["sources"])):
        return False
    table = read_raw(keys).sort_by([("timestamp", "ascending")])
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=256_000)
    parquet_key = f"{compacted_prefix(day)}part-{sources_digest(keys)}.parquet"
    s3.put_object(parquet_key, sink.getvalue(), "application/vnd.apache.parquet")
    body = json.dumps({"day": day, "parquet": parquet_key, "sources": keys, "rows": table.num_rows})
    s3.put_object(compacted_prefix(day) + MANIFEST, body.encode(), "application/json")
    if manifest is not None and manifest["parquet"] != parquet_key:
        s3.delete_objects([manifest["parquet"]])
    return True
