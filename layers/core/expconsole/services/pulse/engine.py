"""The pulse engine's DuckDB connection and the local copies of the objects it reads.

DuckDB runs in the function (and in the local server) with bounded memory: `memory_limit`
(PULSE_MEMORY_LIMIT, default 60% of the Lambda's memory or 2GB) and a temp directory on the
ephemeral storage (`/tmp` in Lambda) where it spills what does not fit. It never downloads an
extension (JSON and Parquet ship in the wheel) and never reaches the network: objects come from
S3 through boto3 (moto's S3 locally), spilled to a run's temporary directory (`Spill`) which
DuckDB reads like any local files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb

from expconsole.store import s3

MEMORY_ENV = "PULSE_MEMORY_LIMIT"
# How a shared query (written in DuckDB's dialect, checked as Trino) is turned into what DuckDB
# runs: as written. tests/functional/test_pulse_sql.py sets it to the Trino round trip.
TRANSFORM: Callable[[str], str] | None = None


def dialect(sql: str) -> str:
    return sql if TRANSFORM is None else TRANSFORM(sql)


THREADS_ENV = "PULSE_THREADS"


def memory_limit() -> str:
    if os.environ.get(MEMORY_ENV):
        return os.environ[MEMORY_ENV]
    lambda_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
    if lambda_mb and lambda_mb.isdigit():
        return f"{int(int(lambda_mb) * 0.6)}MB"
    return "2GB"


def connect(temp_dir: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory database that spills to `temp_dir` and loads nothing from the network."""
    config: dict[str, Any] = {
        "memory_limit": memory_limit(),
        "temp_directory": str(temp_dir),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "preserve_insertion_order": False,
    }
    threads = os.environ.get(THREADS_ENV)
    if threads:
        config["threads"] = int(threads)
    return duckdb.connect(":memory:", config=config)


def literal(text: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def file_list(paths: Iterable[Path | str]) -> str:
    """A SQL list of file paths, for read_json / read_parquet."""
    return "[" + ", ".join(literal(str(p)) for p in paths) + "]"


class Spill:
    """A run's temporary directory: S3 objects downloaded once, DuckDB's spill files, outputs.

    A run fetches the next day's objects in a thread while DuckDB works on the current day, so
    the map of local copies is guarded by a lock (its downloads never touch the same keys)."""

    def __init__(self) -> None:
        base = Path(os.environ.get("PULSE_TMP") or tempfile.gettempdir())
        base.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="pulse-", dir=base))
        self.objects = self.root / "objects"
        self.duckdb = self.root / "duckdb"
        self.objects.mkdir()
        self.duckdb.mkdir()
        self._fetched: dict[str, Path] = {}
        self._lock = threading.Lock()

    def path(self, key: str) -> Path:
        """Where the object `key` is (or goes) on local disk."""
        return self.objects / key

    def fetch(self, keys: list[str], workers: int = 16) -> list[Path]:
        """Local copies of the objects (concurrent gets; each object fetched once per run)."""
        with self._lock:
            missing = [k for k in keys if k not in self._fetched]

        def get(key: str) -> None:
            target = self.path(key)
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                s3.download(key, out)
            with self._lock:
                self._fetched[key] = target

        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=min(workers, len(missing))) as pool:
                list(pool.map(get, missing))
        elif missing:
            get(missing[0])
        with self._lock:
            return [self._fetched[k] for k in keys]

    def adopt(self, key: str) -> Path:
        """Note that the object `key` was written from its local copy (no need to fetch it)."""
        with self._lock:
            self._fetched[key] = self.path(key)
            return self._fetched[key]

    def forget(self, keys: Iterable[str]) -> None:
        """Drop local copies no longer needed (bounded disk over a long run)."""
        for key in keys:
            with self._lock:
                path = self._fetched.pop(key, None)
            if path is not None:
                path.unlink(missing_ok=True)

    def forget_under(self, prefix: str) -> None:
        with self._lock:
            keys = [k for k in self._fetched if k.startswith(prefix)]
        self.forget(keys)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
