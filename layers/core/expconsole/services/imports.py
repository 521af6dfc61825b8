"""Bulk import: a file put under `imports/date=YYYY-MM-DD/` becomes events stored as ingestion stores them.

Trigger: in AWS, S3 sends "Object Created" to EventBridge and a rule invokes functions/imports;
locally, `expconsole import` calls `import_object` itself for each file it uploaded. Keys are
`imports/date=<day>/<name>` (`<name>` may hold `/`); a name whose last part starts with `_`
(the reports below) or `.` is skipped, and a key of any other shape is ignored (logged).

Formats, by extension, each optionally followed by `.gz`: `.parquet` (read through DuckDB, a batch
of rows at a time), `.jsonl` / `.ndjson` / `.json` (JSON lines: one event object per line, blank lines
skipped; a `.json` file holding an array is refused with a message saying so), `.csv` (UTF-8,
a header row). Rows follow the event model of models/events.py: `{event, user: {userID,
stableID?, ...}, timestamp (ms), metadata, value?}`.

CSV and Parquet columns: `event`, `timestamp`, `value`, `userID`, `stableID`, `user` and
`metadata` (a JSON object as text; in Parquet also a struct or map column), `user.<field>`
and `metadata.<key>` (split at the first dot). Any other column, or two columns setting the
same field, makes the file unreadable: a column silently dropped would lose data. An empty
CSV cell, or a Parquet null, is an absent field.

CSV typing rule (no guessing: `007` must not become 7, nor `true` a boolean, by accident):
every cell is text and stays text, except that
  - `timestamp` is integer text, milliseconds since the epoch (`1767225600000`);
  - `user` and `metadata` are JSON object text (`{"plan": "pro"}`);
  - a column declared with a type suffix is parsed as that type: `value:number`,
    `metadata.price:number`, `metadata.beta:boolean` (`true`/`false`, any case),
    `user.tags:json` (any JSON value), `:string` (the default). Only `value`, `user.<field>`
    and `metadata.<key>` take a suffix; a cell that does not parse as its type rejects its row.
So a `value` column holding `12` stores the string "12"; `value:number` stores the number 12.
In Parquet the schema gives the types: `timestamp` is an integer column (ms) or a Parquet
timestamp of any unit and zone (read as UTC, truncated to ms); decimals become numbers.

Validation: each row exactly as ingestion validates an event (models.events.check_event),
plus: the timestamp is required (a bulk file must say when), and it must fall within the
directory's UTC day. A row that cannot be parsed is rejected with the reason, like any other.
A file that cannot be read at all (not Parquet, bad gzip, a broken CSV, an unknown column)
stores nothing, and its report says why.

Storage: rows are read and validated first (accepted lines spooled to local disk), and only
a file read to its end is stored, in chunks of CHUNK_ROWS accepted rows, each chunk by
services.ingest.store_lines (the very write path of ingestion: the same line format with
source `import:<name>` and `receivedTime`, gzip JSON lines objects under
`events/date=<day>/`, counters once per object). A chunk's object is named from the sha256
of the input's bytes and the chunk's index, so importing the same file again (or a copy
of it under another name, the same day) rewrites the same objects and counts nothing twice.
Caveat: counters are recorded once per object, so if a re-import accepted different rows
(possible only for timestamps more than a day ahead of now), the counts are not revised.

Reports, beside the input (`imports/date=D/[dir/]_report.<file>.json` and
`_rejected.<file>.jsonl`): the report holds {file, key, day, format, source, sha256, bytes,
rows, accepted (newly stored), duplicates (valid rows already stored by an earlier import of the
same content), rejected, objects, rejectedFile, uploadId, startedTime, finishedTime, error?};
the rejected file one JSON line per rejected row: {row (0-based, blank lines not counted),
line (1-based, where the row starts), reasons, input (the row as read)}.

Limits: the input and its accepted rows are spooled to local disk (in Lambda, /tmp: 512 MB
unless the function's EphemeralStorage is raised) and a Lambda run lasts 15 minutes at most;
split files of more than a few million rows.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import logging
import math
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote_plus

from expconsole import config
from expconsole.models.events import check_event
from expconsole.services import ingest
from expconsole.store import s3

log = logging.getLogger(__name__)

PREFIX = "imports/"
CHUNK_ROWS = 50_000
PARQUET_BATCH_ROWS = 10_000
DAY_MS = 86_400_000
UPLOAD_ID = "import-id"  # x-amz-meta-import-id: set by `expconsole import`, copied to the report
FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv"}
SUPPORTED = ".parquet, .jsonl, .ndjson, .json or .csv, optionally followed by .gz"
TYPES = ("string", "number", "boolean", "json")
STATUSES = ("imported", "failed", "skipped", "ignored", "missing")  # outcomes of import_object
MAX_CSV_FIELD = 1 << 20  # csv's default 128 KiB would refuse a large `metadata` cell

_KEY = re.compile(r"imports/date=(\d{4}-\d{2}-\d{2})/(.+)", re.DOTALL)
_INT = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_OBJECT_FIELDS = ("user", "metadata")
_NO_TYPE = ("event", "timestamp", "userID", "stableID", "user", "metadata")
_dumps_line = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class BadFile(Exception):
    """The file as a whole cannot be read; the message completes "<file> ..."."""


# --- keys --------------------------------------------------------------------------------------


def split_key(key: str) -> tuple[str, str] | None:
    """(day, name) of an input key `imports/date=YYYY-MM-DD/<name>`, or None for any other key."""
    match = _KEY.fullmatch(key)
    if match is None or match.group(2).endswith("/"):
        return None
    try:
        date.fromisoformat(match.group(1))
    except ValueError:
        return None
    return match.group(1), match.group(2)


def is_skipped(name: str) -> bool:
    """Reports (`_report.*`, `_rejected.*`) and hidden files are never imported."""
    return name.rsplit("/", 1)[-1].startswith(("_", "."))


def file_format(name: str) -> tuple[str, bool] | None:
    """(format, gzip'd) from the file name, or None when the extension is not supported."""
    lower = name.rsplit("/", 1)[-1].lower()
    compressed = lower.endswith(".gz")
    if compressed:
        lower = lower[:-3]
    dot = lower.rfind(".")
    fmt = FORMATS.get(lower[dot:]) if dot > 0 else None
    return (fmt, compressed) if fmt else None


def _beside(key: str, prefix: str, suffix: str) -> str:
    folder, _, base = key.rpartition("/")
    return f"{folder}/{prefix}{base}{suffix}"


def report_key(key: str) -> str:
    return _beside(key, "_report.", ".json")


def rejected_key(key: str) -> str:
    return _beside(key, "_rejected.", ".jsonl")


# --- columns (CSV and Parquet) -----------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One input column: the field it sets (`event`, `user.country`, ...) and how to read a cell."""

    name: str
    root: str  # event | timestamp | value | user | metadata
    key: str  # the user/metadata field; "" for the whole object or a top-level field
    convert: Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _int_text(text: Any) -> object:
    """Milliseconds from integer text; any other value as it is (judged later)."""
    if type(text) is not str:
        return text  # Parquet: check_event judges the native value
    stripped = text.strip()
    if not _INT.fullmatch(stripped):
        raise ValueError(f"must be integer text, milliseconds since the epoch (got {text!r})")
    return int(stripped)


def _number(text: str) -> int | float:
    stripped = text.strip()
    if not _NUMBER.fullmatch(stripped):
        raise ValueError(f"must be a number (declared :number; got {text!r})")
    number = float(stripped) if any(c in stripped for c in ".eE") else int(stripped)
    if isinstance(number, float) and not math.isfinite(number):
        raise ValueError(f"must be a finite number (got {text!r})")
    return number


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"must be true or false (declared :boolean; got {text!r})")
    return lowered == "true"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json_text(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ValueError(f"must be JSON text ({exc})") from None


def _object_text(text: str) -> dict[str, Any]:
    value = _json_text(text)
    if type(value) is not dict:
        raise ValueError(f"must be a JSON object, {{...}} (got {text[:60]!r})")
    return value


def _object_value(value: Any) -> dict[str, Any] | None:
    """A Parquet user/metadata cell: struct (nulls are absent fields), map, or JSON object text."""
    if isinstance(value, dict):  # a struct or a map column
        return {str(k): _native(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):  # a map column: [(key, value), ...]
        try:
            return {str(k): _native(v) for k, v in value if v is not None}
        except (TypeError, ValueError):
            raise ValueError("must be an object (a struct, a map or JSON object text)") from None
    if isinstance(value, str):
        return None if value == "" else _object_text(value)
    raise ValueError(f"must be an object (a struct, a map or JSON object text; got {type(value).__name__})")


def _native(value: Any) -> Any:
    """Parquet decimals as JSON numbers (an int when whole)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


_CSV_TYPES: dict[str, Callable[[Any], Any]] = {
    "string": _identity,
    "number": _number,
    "boolean": _boolean,
    "json": _json_text,
}


def columns(names: list[str], *, csv_types: bool) -> list[Column]:
    """What each column sets, checked (BadFile): known names only, no field set twice, the
    fields every row needs present. `csv_types`: cells are text, read as the typing rule says."""
    out: list[Column] = []
    unknown: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    for name in names:
        base, _, suffix = name.rpartition(":")
        if not (csv_types and base and suffix in TYPES):
            base, suffix = name, ""
        if suffix and base in _NO_TYPE:
            raise BadFile(f"column {name!r}: only value, user.<field> and metadata.<key> take a type")
        if base in ("event", "value", "timestamp", "user", "metadata"):
            root, key = base, ""
        elif base in ("userID", "stableID"):
            root, key = "user", base
        elif base.startswith(_OBJECT_FIELDS) and "." in base and base.split(".", 1)[1]:
            root, key = base.split(".", 1)
            if root not in _OBJECT_FIELDS:
                unknown.append(name)
                continue
        else:
            unknown.append(name)
            continue
        target = (root, key)
        if target in seen:
            field = f"{root}.{key}" if key else root
            raise BadFile(f"columns {seen[target]!r} and {name!r} both set {field}")
        seen[target] = name
        convert: Callable[[Any], Any]
        if root == "timestamp":
            convert = _int_text if csv_types else _timestamp_value
        elif root in _OBJECT_FIELDS and not key:
            convert = _object_text if csv_types else _object_value
        elif csv_types:
            convert = _CSV_TYPES[suffix or "string"]
        else:
            convert = _native
        out.append(Column(name, root, key, convert))
    if unknown:
        raise BadFile(
            f"has unknown column(s) {', '.join(map(repr, unknown))}; columns are event, timestamp, value, "
            "userID, stableID, user, metadata, user.<field> and metadata.<key>"
            + (" (with an optional :number, :boolean, :json or :string type)" if csv_types else "")
        )
    roots = {root for root, _ in seen}
    for needed, why in (("event", "the event name"), ("timestamp", "when each event happened (ms)")):
        if needed not in roots:
            raise BadFile(f"has no {needed} column: every row needs {why}")
    if "user" not in roots:
        raise BadFile("has no user column: userID, stableID, user or user.<field>")
    # whole-object columns first, so that a dotted column naming the same field is a conflict
    return sorted(out, key=lambda c: c.key != "" or c.root not in _OBJECT_FIELDS)


def _timestamp_value(value: Any) -> Any:
    if isinstance(value, str):
        return _int_text(value)
    return _native(value)


def _build(cols: list[Column], values: list[Any]) -> tuple[dict[str, Any], list[str], set[str]]:
    """An event from one row's values (None: absent), the reasons of cells that did not
    convert, and the fields those cells were for."""
    event: dict[str, Any] = {}
    reasons: list[str] = []
    failed: set[str] = set()
    for col, raw in zip(cols, values, strict=True):
        if raw is None:
            continue
        try:
            value = col.convert(raw)
        except ValueError as exc:
            reasons.append(f"{col.name}: {exc}")
            failed.add(col.root)
            continue
        if value is None:
            continue
        if not col.key:
            event[col.root] = value
            continue
        target = event.get(col.root)
        if target is None:
            target = event[col.root] = {}
        elif type(target) is not dict:
            continue  # the whole-object column was not an object: reported by check_event
        if col.key in target:
            reasons.append(f"{col.name}: {col.root}.{col.key} is also set by the {col.root} column")
            failed.add(col.root)
            continue
        target[col.key] = value
    return event, reasons, failed


# --- readers: each yields (row as read, event or None, reasons, failed fields, line) -----------

Row = tuple[Callable[[], Any], Any, list[str], set[str], int | None]
# An opened input, plain or gzip'd (typeshed's GzipFile is not an IO[bytes]).
BinaryFile = IO[bytes] | gzip.GzipFile


def _bound(value: Any) -> Callable[[], Any]:
    """A row's as-read form already at hand, bound now (a lambda in a loop would see later rows)."""
    return lambda: value


def _jsonl_rows(stream: BinaryFile) -> Iterator[Row]:
    first = True
    for line_no, raw in enumerate(stream, 1):
        data = raw.strip()
        if first:
            data = data.removeprefix(b"\xef\xbb\xbf").strip()
        if not data:
            continue
        if first and data.startswith(b"["):
            raise BadFile("holds a JSON array; write one event object per line (JSON lines) instead")
        first = False
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            shown = data.decode("utf-8", "replace")
            yield _bound(shown), None, [f"not valid UTF-8 (byte {exc.start})"], set(), line_no
            continue
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            yield _bound(text), None, [f"not valid JSON ({exc})"], set(), line_no
            continue
        yield _bound(text), obj, [], set(), line_no


def _csv_rows(stream: BinaryFile) -> Iterator[Row]:
    if csv.field_size_limit() < MAX_CSV_FIELD:
        csv.field_size_limit(MAX_CSV_FIELD)
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape", newline="")
    reader = csv.reader(text)
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise BadFile("is empty: a CSV file starts with a header row") from None
    except csv.Error as exc:
        raise BadFile(f"has an unreadable header row ({exc})") from None
    if not _is_utf8(header):
        raise BadFile("has a header row that is not valid UTF-8")
    cols = columns(header, csv_types=True)
    order = [header.index(c.name) for c in cols]
    width = len(header)
    next_line = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BadFile(f"cannot be parsed as CSV at line {reader.line_num} ({exc})") from None
        line_no, next_line = next_line, reader.line_num + 1
        if not cells:
            continue  # a blank line
        as_read = _csv_as_read(header, cells)
        if not _is_utf8(cells):
            repaired = [_repair(c) for c in cells]
            yield _bound(repaired), None, ["not valid UTF-8"], set(), line_no
            continue
        if len(cells) != width:
            reason = f"has {len(cells)} cells; the header has {width} columns"
            yield as_read, None, [reason], set(), line_no
            continue
        event, reasons, failed = _build(cols, [cells[i] or None for i in order])
        yield as_read, event, reasons, failed, line_no


def _csv_as_read(header: list[str], cells: list[str]) -> Callable[[], Any]:
    """The row for the rejected file: {column: cell}, or the cells when they do not fit the header."""
    return lambda: dict(zip(header, cells, strict=True)) if len(cells) == len(header) else cells


def _is_utf8(cells: list[str]) -> bool:
    try:
        "".join(cells).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _repair(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# A Parquet file's rows through DuckDB; timestamp columns (any unit, zoned or not) as epoch ms.
PARQUET_SCHEMA_SQL = "DESCRIBE SELECT * FROM read_parquet({file})"
PARQUET_ROWS_SQL = "SELECT {columns} FROM read_parquet({file})"
EPOCH_MS = "CAST(floor(epoch_us({column}) / 1000.0) AS BIGINT)"  # floor: as integer division would


def _parquet_rows(path: Path) -> Iterator[Row]:
    import duckdb

    file = "'" + str(path).replace("'", "''") + "'"
    con = duckdb.connect(":memory:", config={"autoload_known_extensions": False, "threads": 1})
    try:
        try:
            schema = con.execute(PARQUET_SCHEMA_SQL.format(file=file)).fetchall()
        except duckdb.Error as exc:
            raise BadFile(f"is not a readable Parquet file ({exc})") from None
        names = [row[0] for row in schema]
        types = {row[0]: str(row[1]) for row in schema}
        cols = columns(names, csv_types=False)
        quoted = {name: '"' + name.replace('"', '""') + '"' for name in names}
        picked = [
            EPOCH_MS.format(column=quoted[c.name])
            if types[c.name].startswith("TIMESTAMP")
            else quoted[c.name]
            for c in cols
        ]
        select = ", ".join([*picked, *quoted.values()])
        cursor = con.execute(PARQUET_ROWS_SQL.format(columns=select, file=file))
        width = len(picked)
        while batch := cursor.fetchmany(PARQUET_BATCH_ROWS):
            for row in batch:
                event, reasons, failed = _build(cols, list(row[:width]))
                as_read = dict(zip(names, row[width:], strict=True))
                yield _bound(as_read), event, reasons, failed, None
    finally:
        con.close()


# --- one file ----------------------------------------------------------------------------------


@dataclass
class _Counts:
    rows: int = 0
    accepted: int = 0
    rejected: int = 0


def _now() -> int:
    return int(time.time() * 1000)


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    except (OverflowError, OSError, ValueError):
        return "out of range"


def _verdict(
    event: Any, reasons: list[str], failed: set[str], now_ms: int, day: str, day_start: int
) -> dict[str, Any] | None:
    """The stored line for a row, or None after adding the reasons it is rejected."""
    if type(event) is dict and event.get("timestamp") is None and "timestamp" not in failed:
        reasons.append("timestamp: is required in a bulk file (milliseconds since the epoch)")
        failed.add("timestamp")
    errors: list[dict[str, str]] = []
    line = check_event(0, event, now_ms, errors)
    for error in errors:
        field = error["field"][len("events[0]") :].lstrip(".")
        if field.split(".", 1)[0] not in failed:
            reasons.append(f"{field}: {error['message']}" if field else error["message"])
    if reasons or line is None:
        return None
    ts = line["timestamp"]
    if not day_start <= ts < day_start + DAY_MS:
        reasons.append(f"timestamp: {ts} ({_iso(ts)}) is outside the directory's day {day} (UTC)")
        return None
    return line


def _rows(path: Path, fmt: str, compressed: bool, spool: Path) -> Iterator[Row]:
    """The file's rows; a gzip'd Parquet file is unpacked to `spool` first (it needs seeking)."""
    if fmt == "parquet":
        if compressed:
            with gzip.open(path, "rb") as packed, spool.open("wb") as out:
                shutil.copyfileobj(packed, out, 1 << 20)
            path = spool
        yield from _parquet_rows(path)
        return
    with gzip.open(path, "rb") if compressed else path.open("rb") as stream:
        yield from (_jsonl_rows(stream) if fmt == "jsonl" else _csv_rows(stream))


def _read(path: Path, fmt: str, compressed: bool, day: str, now_ms: int, work: Path, counts: _Counts) -> None:
    """Validate every row: accepted lines to work/accepted.jsonl, rejected rows to work/rejected.jsonl."""
    day_start = int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() * 1000)
    with (work / "accepted.jsonl").open("wb") as accepted, (work / "rejected.jsonl").open("wb") as rejected:
        for as_read, event, reasons, failed, line_no in _rows(path, fmt, compressed, work / "unpacked"):
            index = counts.rows
            counts.rows += 1
            line = None if event is None else _verdict(event, reasons, failed, now_ms, day, day_start)
            if line is not None:
                try:
                    accepted.write(_dumps_line(line).encode("utf-8") + b"\n")
                    counts.accepted += 1
                    continue
                except ValueError:
                    reasons.append("holds NaN or Infinity, which JSON cannot store")
                except TypeError as exc:
                    reasons.append(f"holds a value JSON cannot store ({exc})")
                except UnicodeEncodeError:
                    reasons.append("holds a lone surrogate (\\ud800-\\udfff), which UTF-8 cannot store")
            counts.rejected += 1
            entry: dict[str, Any] = {"row": index, "line": line_no, "reasons": reasons, "input": as_read()}
            if line_no is None:
                del entry["line"]
            text = json.dumps(entry, ensure_ascii=False, default=str)
            rejected.write(text.encode("utf-8", "backslashreplace") + b"\n")


def _store(work: Path, sha: str, source: str, now_ms: int) -> tuple[list[str], int]:
    """Store the accepted lines in chunks (each named by the input's sha256 and its index); the
    keys written and the lines already stored (the same file imported before)."""
    keys: list[str] = []
    duplicates = 0
    chunk: list[dict[str, Any]] = []
    index = 0
    with (work / "accepted.jsonl").open("rb") as lines:
        for raw in lines:
            chunk.append(json.loads(raw))
            if len(chunk) == CHUNK_ROWS:
                stored = ingest.store_lines(chunk, f"import:{sha}:{index}", source, now_ms)
                keys, duplicates = keys + stored.keys, duplicates + stored.duplicates
                chunk, index = [], index + 1
    if chunk:
        stored = ingest.store_lines(chunk, f"import:{sha}:{index}", source, now_ms)
        keys, duplicates = keys + stored.keys, duplicates + stored.duplicates
    return keys, duplicates


class _Hashing:
    """A writer that hashes (sha256) and counts what passes through it."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        return self.out.write(data)


def _missing(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code")
    return code in ("NoSuchKey", "404", "AccessDenied", "403")


def import_object(key: str, now_ms: int | None = None) -> dict[str, Any]:
    """Import one input object; its outcome {key, status, message?, report?}.

    status: `imported` (report written; rows may have been rejected), `failed` (the file could
    not be read: report written with `error`, nothing stored), `skipped` (a report or hidden
    file), `ignored` (not an input key), `missing` (the object is gone). A storage failure
    writes the report with `error` and raises, so that Lambda retries the invocation.
    """
    from botocore.exceptions import ClientError

    parsed = split_key(key)
    if parsed is None:
        return {"key": key, "status": "ignored", "message": "not imports/date=YYYY-MM-DD/<file>"}
    day, name = parsed
    if is_skipped(name):
        return {"key": key, "status": "skipped", "message": "a report or hidden file (_ or . first)"}
    now = _now() if now_ms is None else now_ms
    source = f"import:{name}"
    report: dict[str, Any] = {
        "file": name,
        "key": key,
        "day": day,
        "format": None,
        "source": source,
        "sha256": None,
        "bytes": None,
        "rows": 0,
        "accepted": 0,
        "duplicates": 0,
        "rejected": 0,
        "objects": [],
        "rejectedFile": rejected_key(key),
        "uploadId": None,
        "startedTime": now,
    }
    known = file_format(name)
    with tempfile.TemporaryDirectory(prefix="expconsole-import-") as tmp:
        work = Path(tmp)
        path = work / "input"
        try:
            with path.open("wb") as out:
                hashing = _Hashing(out)
                metadata = s3.download(key, hashing)
        except ClientError as exc:
            if _missing(exc):
                return {"key": key, "status": "missing", "message": f"cannot read it ({exc})"}
            raise
        report.update(sha256=hashing.sha.hexdigest(), bytes=hashing.size, uploadId=metadata.get(UPLOAD_ID))
        (work / "rejected.jsonl").touch()
        error: str | None = None
        if known is None:
            error = f"{name} is not a supported file: expected {SUPPORTED}"
        else:
            fmt, compressed = known
            report["format"] = fmt + ("+gzip" if compressed else "")
            counts = _Counts()
            try:
                _read(path, fmt, compressed, day, now, work, counts)
            except BadFile as exc:
                error = f"{name} {exc}"
            except Exception as exc:  # any input must give a report, never a crash
                log.warning("import of %s failed while reading", key, exc_info=True)
                error = f"{name} cannot be read after {counts.rows} rows ({type(exc).__name__}: {exc})"
            if error is None:
                report.update(rows=counts.rows, accepted=counts.accepted, rejected=counts.rejected)
        if error is not None:
            (work / "rejected.jsonl").write_bytes(b"")
        with (work / "rejected.jsonl").open("rb") as rejected:
            s3.put_file(rejected_key(key), rejected)
        if error is None:
            try:
                report["objects"], duplicates = _store(work, report["sha256"], source, now)
                report.update(accepted=report["accepted"] - duplicates, duplicates=duplicates)
            except ingest.StoreFailed as exc:
                report["error"] = (
                    f"storing the accepted rows failed ({type(exc.__cause__).__name__}: {exc.__cause__}); "
                    "import the file again: it stores nothing twice"
                )
                _write_report(key, report)
                raise
    if error is not None:
        report["error"] = error
    _write_report(key, report)
    status = "failed" if error is not None else "imported"
    return {"key": key, "status": status, **({"message": error} if error else {}), "report": report}


def _write_report(key: str, report: dict[str, Any]) -> None:
    report["finishedTime"] = _now()
    body = json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8")
    s3.put_file(report_key(key), io.BytesIO(body), content_type="application/json")


# --- notifications -----------------------------------------------------------------------------


def notification_objects(event: Any) -> list[tuple[str, list[str]]]:
    """(bucket, candidate keys) of each object an "Object Created" notification names.

    An EventBridge event carries the key as written; a classic S3 record carries it
    URL-encoded (`+` for a space). Should an EventBridge key turn out to be encoded too, its
    decoded form is the second candidate, tried when the first names no input.
    """
    if not isinstance(event, dict):
        return []
    detail = event.get("detail")
    if event.get("source") == "aws.s3" and isinstance(detail, dict):
        if event.get("detail-type") != "Object Created":
            return []
        bucket = str((detail.get("bucket") or {}).get("name", ""))
        key = str((detail.get("object") or {}).get("key", ""))
        decoded = unquote_plus(key)
        return [(bucket, [key] if decoded == key else [key, decoded])] if key else []
    out: list[tuple[str, list[str]]] = []
    for record in event.get("Records") or []:
        s3_part = record.get("s3") if isinstance(record, dict) else None
        if not isinstance(s3_part, dict):
            continue
        if not str(record.get("eventName", "ObjectCreated")).startswith("ObjectCreated"):
            continue
        bucket = str((s3_part.get("bucket") or {}).get("name", ""))
        key = str((s3_part.get("object") or {}).get("key", ""))
        if key:
            out.append((bucket, [unquote_plus(key)]))
    return out


def handle_notification(event: Any, now_ms: int | None = None) -> list[dict[str, Any]]:
    """Import every object a notification names (only from the events bucket); their outcomes."""
    outcomes: list[dict[str, Any]] = []
    bucket_name = config.events_bucket()
    for bucket, candidates in notification_objects(event):
        if bucket != bucket_name:
            message = f"bucket {bucket!r} is not the events bucket {bucket_name!r}"
            outcomes.append({"key": candidates[0], "status": "ignored", "message": message})
            continue
        for number, key in enumerate(candidates, 1):
            outcome = import_object(key, now_ms)
            if outcome["status"] not in ("ignored", "missing") or number == len(candidates):
                break
        outcomes.append(outcome)
    return outcomes
