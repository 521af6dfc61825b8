"""A day of events as a DuckDB query, and the compaction of finished days into Parquet.

Raw events live in `events/date=D/<hash>.jsonl.gz` (ingestion and import write them); DuckDB
reads them as they are (gzip JSON lines), from local copies (engine.Spill). A finished day is
compacted into `compacted/date=D/part-<hash>.parquet` by DuckDB (`COPY ... (FORMAT parquet)`),
with a manifest `compacted/date=D/_manifest.json` naming the raw objects it holds. The Parquet
file's name derives from the sorted list of those objects, so compacting the same objects twice
writes the same file (idempotent); raw objects that appear later (a backfill, an import) are
read beside the Parquet file until the next compaction folds them in. Raw objects are kept: the
events catalogue reads them, and the bucket's lifecycle rule expires them. `compacted/` follows
the same `date=` partition scheme, so the Glue table of template.yaml (partition projection)
lets Athena query it.

Columns (`COLUMNS`): event, timestamp (ms), userID, stableID, user (JSON text of the whole user
object), value (text: strings as sent, numbers as JSON text), valueNumber (the value as a number
when it is one, or finite numeric text), metadata (JSON text), source, receivedTime.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Any

import duckdb

from expconsole.services.pulse.engine import Spill, file_list, literal
from expconsole.store import s3

COLUMNS = (
    "event",
    "timestamp",
    "userID",
    "stableID",
    "user",
    "value",
    "valueNumber",
    "metadata",
    "source",
    "receivedTime",
)
MANIFEST = "_manifest.json"

# The ingestion line format read as it is: JSON fields stay JSON until a query needs them.
RAW_COLUMNS = (
    "{event: 'VARCHAR', timestamp: 'BIGINT', user: 'JSON', value: 'JSON', metadata: 'JSON',"
    " source: 'VARCHAR', receivedTime: 'BIGINT'}"
)
# A finite number from text, as Python's float() would read it (None for nan/inf).
FINITE = "CASE WHEN isfinite(TRY_CAST({x} AS DOUBLE)) THEN TRY_CAST({x} AS DOUBLE) END"
RAW_SELECT = """
SELECT
    event,
    "timestamp",
    NULLIF(json_extract_string("user", '$.userID'), '') AS userID,
    NULLIF(json_extract_string("user", '$.stableID'), '') AS stableID,
    CAST("user" AS VARCHAR) AS "user",
    CASE
        WHEN json_type(value) IN ('NULL') OR value IS NULL THEN NULL
        WHEN json_type(value) = 'VARCHAR' THEN json_extract_string(value, '$')
        ELSE CAST(value AS VARCHAR)
    END AS value,
    CASE
        WHEN json_type(value) IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN CAST(value AS DOUBLE)
        WHEN json_type(value) = 'VARCHAR' THEN {finite}
    END AS valueNumber,
    CASE
        WHEN metadata IS NULL OR json_type(metadata) <> 'OBJECT' OR CAST(metadata AS VARCHAR) = '{{}}'
        THEN NULL ELSE CAST(metadata AS VARCHAR)
    END AS metadata,
    source,
    receivedTime
FROM read_json({files}, format = 'newline_delimited', compression = 'gzip', columns = {columns})
"""
EMPTY_SELECT = """
SELECT NULL::VARCHAR AS event, NULL::BIGINT AS "timestamp", NULL::VARCHAR AS userID,
    NULL::VARCHAR AS stableID, NULL::VARCHAR AS "user", NULL::VARCHAR AS value,
    NULL::DOUBLE AS valueNumber, NULL::VARCHAR AS metadata, NULL::VARCHAR AS source,
    NULL::BIGINT AS receivedTime
WHERE false
"""
PARQUET_SELECT = "SELECT {columns} FROM read_parquet({files})"
# zstd level 1: faster to write than the default level 3 and no larger; snappy and lz4 are faster
# still but write larger files, more to upload and keep (docs/performance.md, 'Pulse pipeline').
# COPY streams the day from the JSON reader to the file (no table of the whole day in memory) and
# answers the number of rows written.
COMPACT_COPY = (
    "COPY ({select}) TO {target}"
    " (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 256000)"
)


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


def raw_select(spill: Spill, keys: list[str]) -> str:
    """The SELECT of the raw objects' events (in COLUMNS), read from their local copies."""
    if not keys:
        return EMPTY_SELECT
    files = file_list(spill.fetch(keys))
    return RAW_SELECT.format(
        files=files, columns=RAW_COLUMNS, finite=FINITE.format(x="json_extract_string(value, '$')")
    )


def raw_keys(day: str) -> list[str]:
    return sorted(k for k in s3.keys(s3.day_prefix(day)) if k.endswith(".jsonl.gz"))


def _manifest(day: str) -> dict[str, Any] | None:
    body = s3.get_if_exists(compacted_prefix(day) + MANIFEST)
    return json.loads(body) if body else None


@dataclasses.dataclass(frozen=True)
class Listing:
    """A day's raw objects and its compaction manifest, listed once (a run lists the next day's
    while DuckDB works on the current one, and passes the listing on)."""

    keys: list[str]
    manifest: dict[str, Any] | None

    @property
    def compacted(self) -> bool:
        """Whether the Parquet file holds every raw object (nothing to compact)."""
        held = self.manifest["sources"] if self.manifest is not None else None
        return not self.keys or (held is not None and set(self.keys) <= set(held))

    def pending(self) -> list[str]:
        """The raw objects not in the Parquet file."""
        held = set(self.manifest["sources"]) if self.manifest is not None else set()
        return [k for k in self.keys if k not in held]

    def reads(self) -> list[str]:
        """The objects day_select reads: the Parquet file and the raw objects not in it."""
        return ([self.manifest["parquet"]] if self.manifest is not None else []) + self.pending()


def listing(day: str, keys: list[str] | None = None) -> Listing:
    return Listing(raw_keys(day) if keys is None else keys, _manifest(day))


def fetch(spill: Spill, day: str, listed: Listing) -> Listing:
    """Download what day_select reads; the listing to read it with.

    Compaction runs beside the loads and deletes the Parquet file it replaces (after a backfill),
    so the file a listing named may be gone by the time it is downloaded: then the day's new
    manifest is read and its file, which holds every object the old one did, is fetched instead."""
    from botocore.exceptions import ClientError

    try:
        spill.fetch(listed.reads())
        return listed
    except ClientError as exc:
        if listed.manifest is None or not s3.is_missing(exc):
            raise
    fresh = Listing(listed.keys, _manifest(day))
    spill.fetch(fresh.reads())
    return fresh


def day_select(
    spill: Spill, day: str, keys: list[str] | None = None, listed: Listing | None = None
) -> tuple[str, list[str]]:
    """A SELECT of every event of the day (compacted Parquet plus raw objects not in it), the raw keys."""
    listed = listed or listing(day, keys)
    parts = []
    if listed.manifest is not None:
        columns = ", ".join(f'"{c}"' for c in COLUMNS)
        parts.append(
            PARQUET_SELECT.format(columns=columns, files=file_list(spill.fetch([listed.manifest["parquet"]])))
        )
    pending = listed.pending()
    if pending or not parts:
        parts.append(raw_select(spill, pending))
    return "\nUNION ALL\n".join(f"({p})" for p in parts), listed.keys


def read_rows(day: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The day's events as rows of `columns` (what a reader outside a run sees)."""
    with Spill() as spill:
        select, _ = day_select(spill, day)
        con = duckdb.connect(":memory:", config={"autoload_known_extensions": False})
        try:
            names = ", ".join(f'"{c}"' for c in columns)
            return con.execute(f"SELECT {names} FROM ({select})").fetchall()
        finally:
            con.close()


def sources_digest(keys: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:32]


def compact(
    con: duckdb.DuckDBPyConnection,
    spill: Spill,
    day: str,
    keys: list[str] | None = None,
    listed: Listing | None = None,
) -> bool:
    """Fold the day's raw objects into one Parquet file (when something new arrived); True if written.

    Order: Parquet first, manifest last, so a reader sees the old manifest (and reads the raw
    objects it does not list) or the new one, whose Parquet file already exists (a reader that
    listed the old manifest and finds its file deleted reads the new one: `fetch`).
    """
    listed = listed or listing(day, keys)
    keys, manifest = listed.keys, listed.manifest
    if listed.compacted:
        return False
    parquet_key = f"{compacted_prefix(day)}part-{sources_digest(keys)}.parquet"
    target = spill.path(parquet_key)
    target.parent.mkdir(parents=True, exist_ok=True)
    copy = COMPACT_COPY.format(select=raw_select(spill, keys), target=literal(str(target)))
    rows = con.execute(copy).fetchone()
    spill.adopt(parquet_key)
    with open(target, "rb") as body:
        s3.put_file(parquet_key, body, "application/vnd.apache.parquet")
    body_json = json.dumps(
        {"day": day, "parquet": parquet_key, "sources": keys, "rows": rows[0] if rows else 0}
    )
    s3.put_object(compacted_prefix(day) + MANIFEST, body_json.encode(), "application/json")
    if manifest is not None and manifest["parquet"] != parquet_key:
        s3.delete_objects([manifest["parquet"]])
    return True
