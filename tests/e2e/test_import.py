"""End-to-end: `expconsole import DIR` against a running local server, checked through the HTTP API.

The server runs on a data dir of its own (not --ephemeral): the command finds the running
server's backend through that data dir, as a user's would, and imports into it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.e2e.client import ApiClient
from tests.e2e.conftest import REPO

TOTALS = re.compile(
    r"(\d+) files, (\d+) failed; (\d+) rows, (\d+) accepted, (\d+) duplicates \(already stored\), "
    r"(\d+) rejected"
)


def run_import(root: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "expconsole_tools.cli",
            "import",
            str(root),
            "--data-dir",
            str(data_dir),
            "--no-progress",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def totals(output: str) -> dict[str, int]:
    match = TOTALS.search(output)
    assert match, output
    return dict(
        zip(
            ("files", "failed", "rows", "accepted", "duplicates", "rejected"),
            map(int, match.groups()),
            strict=True,
        )
    )


def records(api: ApiClient, name: str) -> list[dict[str, Any]]:
    resp = api.get(f"/console/v1/events/{name}", params={"limit": 1000})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["pagination"]["totalItems"] == len(body["data"])
    return body["data"]


def summary(api: ApiClient, name: str) -> dict[str, Any]:
    resp = api.get(f"/console/v1/events/{name}/summary")
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def write_tree(root: Path, day: str, start: int, names: dict[str, str]) -> dict[str, list[int]]:
    """A day directory with a Parquet, a JSON lines and a CSV file, each with 3 good rows and a
    rejected one; the timestamps each file's good rows carry."""
    folder = root / day
    folder.mkdir(parents=True)
    good = {kind: [start + 3_600_000 * (i + 1) + n for i in range(3)] for n, kind in enumerate(names)}

    table = pa.table(
        {
            "event": [names["parquet"]] * 4,
            "timestamp": pa.array(good["parquet"] + [start - 1], pa.int64()),  # the last: the day before
            "user": pa.array(
                [{"userID": f"p{i}", "country": "FR"} for i in range(4)],
                pa.struct([("userID", pa.string()), ("country", pa.string())]),
            ),
            "metadata": ['{"plan": "pro"}'] * 4,
            "value": [1.5, 2.5, 3.5, 4.5],
        }
    )
    pq.write_table(table, folder / "events.parquet")

    lines = [
        json.dumps(
            {"event": names["jsonl"], "user": {"userID": f"j{i}"}, "timestamp": ts, "metadata": {"k": i}}
        )
        for i, ts in enumerate(good["jsonl"])
    ]
    lines.insert(1, '{"event": "broken", ')
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")

    rows = ["event,timestamp,userID,value,metadata.source"]
    rows += [f"{names['csv']},{ts},c{i},{10 + i},shop" for i, ts in enumerate(good["csv"])]
    rows.append(f"{names['csv']},{start + 60_000},,11,shop")  # no userID nor stableID
    (folder / "events.csv").write_text("\n".join(rows) + "\n")
    return good


def test_import_a_day_directory_of_each_format(tmp_path: Path, data_dir: Path, console: ApiClient) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {"parquet": f"imp_pq_{suffix}", "jsonl": f"imp_jl_{suffix}", "csv": f"imp_csv_{suffix}"}
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    start = int(datetime(yesterday.year, yesterday.month, yesterday.day, tzinfo=UTC).timestamp() * 1000)
    root = tmp_path / "export"
    good = write_tree(root, yesterday.isoformat(), start, names)
    files = {"parquet": "events.parquet", "jsonl": "events.jsonl", "csv": "events.csv"}

    result = run_import(root, data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert totals(result.stdout) == {
        "files": 3,
        "failed": 0,
        "rows": 12,
        "accepted": 9,
        "duplicates": 0,
        "rejected": 3,
    }
    for file in files.values():
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"{yesterday}/{file}:"))
        assert "4 rows, 3 accepted, 0 duplicates (already stored), 1 rejected" in line, line
        (rejected,) = [
            json.loads(r)
            for r in (root / str(yesterday) / f"_rejected.{file}.jsonl").read_text().splitlines()
        ]
        assert rejected["reasons"], rejected
    parquet_rejection = json.loads((root / str(yesterday) / "_rejected.events.parquet.jsonl").read_text())
    assert parquet_rejection["row"] == 3 and str(yesterday) in parquet_rejection["reasons"][0]

    for kind, name in names.items():
        listed = records(console, name)
        assert sorted(int(r["timestamp"]) for r in listed) == sorted(good[kind])
        assert {r["source"] for r in listed} == {f"import:{files[kind]}"}
        assert summary(console, name)["totalCount"] == 3
    by_value = {r["value"]: r for r in records(console, names["csv"])}
    assert set(by_value) == {"10", "11", "12"}  # CSV text: the column is not declared :number
    assert by_value["10"]["metadata"] == {"source": "shop"} and by_value["10"]["userID"] == "c0"
    parquet_record = records(console, names["parquet"])[0]
    assert parquet_record["metadata"] == {"plan": "pro"} and parquet_record["value"] in {"1.5", "2.5", "3.5"}

    again = run_import(root, data_dir)
    assert again.returncode == 0, again.stdout + again.stderr
    # the same files again: nothing new is stored, and the totals say so
    assert totals(again.stdout) == {**totals(result.stdout), "accepted": 0, "duplicates": 9}
    for kind, name in names.items():
        assert sorted(int(r["timestamp"]) for r in records(console, name)) == sorted(good[kind])
        assert summary(console, name)["totalCount"] == 3


def test_a_directory_that_is_not_a_day_is_named_and_nothing_is_uploaded(
    tmp_path: Path, data_dir: Path, console: ApiClient
) -> None:
    name = f"imp_never_{uuid.uuid4().hex[:8]}"
    today = datetime.now(UTC).date()
    ts = int(datetime(today.year, today.month, today.day, tzinfo=UTC).timestamp() * 1000)
    root = tmp_path / "export"
    (root / str(today)).mkdir(parents=True)
    line = {"event": name, "user": {"userID": "u"}, "timestamp": ts, "metadata": {}}
    (root / str(today) / "a.jsonl").write_text(json.dumps(line) + "\n")
    (root / "January").mkdir()
    result = run_import(root, data_dir)
    assert result.returncode == 1
    assert "January" in result.stderr
    assert records(console, name) == []
