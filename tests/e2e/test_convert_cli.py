"""`python -m expconsole_tools.cli convert --from <tool> IN OUT` as a user runs it, on each sample export.

No server is needed: the command only reads the export and writes files. What it must write
is worked out from the sample input (tests/unit/convert_reference.py).
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from expconsole.models.events import check_event
from tests.unit.convert_reference import (
    EXPORTS,
    TOOLS,
    amplitude_zip,
    expected,
    read_days,
    read_jsonl,
    sample_files,
)

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "expconsole_tools.cli", "convert", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def export_as_downloaded(tool: str, tmp_path: Path) -> Path:
    """Amplitude: the Export API's zip; Segment: its S3 gzip objects in a folder; Mixpanel: the JSONL."""
    if tool == "amplitude":
        return amplitude_zip(tmp_path / "amplitude-export.zip")
    if tool == "segment":
        folder = tmp_path / "segment-logs" / "src-1" / "1709510400000"
        folder.mkdir(parents=True)
        for path in sample_files("segment"):
            (folder / f"{path.stem}.gz").write_bytes(gzip.compress(path.read_bytes()))
        return tmp_path / "segment-logs"
    return EXPORTS / "mixpanel"


@pytest.mark.parametrize("tool", TOOLS)
def test_convert_sample_export_to_day_directories(tool: str, tmp_path: Path) -> None:
    want = expected(tool)
    out = tmp_path / "days"
    done = cli("--from", tool, export_as_downloaded(tool, tmp_path), out)
    assert done.returncode == 0, done.stderr
    assert f"converted {len(want.events)} events, skipped {want.skipped} rows" in done.stdout
    # the first few skip reasons, each naming file and line
    reasons = [line for line in done.stderr.splitlines() if line.startswith("skipped ")]
    assert len(reasons) == min(want.skipped, 5)
    assert all(re.match(r"skipped \S+:\d+: \S", line) for line in reasons), reasons

    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        f"{day}/{tool}.jsonl" for day in sorted(want.days())
    ]
    got = read_days(out, tool)
    assert got == want.days()
    now = int(time.time() * 1000)
    for day, events in got.items():
        for index, event in enumerate(events):
            errors: list[dict[str, str]] = []
            assert check_event(index, event, now, errors) == event, errors
            assert time.strftime("%Y-%m-%d", time.gmtime(event["timestamp"] / 1000)) == day


@pytest.mark.parametrize("tool", TOOLS)
def test_convert_sample_export_to_one_file(tool: str, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    done = cli("--from", tool, EXPORTS / tool, out)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(out) == expected(tool).events


def test_convert_exit_codes(tmp_path: Path) -> None:
    missing = cli("--from", "mixpanel", tmp_path / "nope.jsonl", tmp_path / "out")
    assert missing.returncode == 2 and "no such file" in missing.stderr

    corrupt = tmp_path / "export.zip"
    corrupt.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    unreadable = cli("--from", "amplitude", corrupt, tmp_path / "out")
    assert unreadable.returncode == 1 and "cannot read the export" in unreadable.stderr
    assert not (tmp_path / "out").exists()

    wrong_tool = cli("--from", "mixpanel", EXPORTS / "segment", tmp_path / "out.jsonl")
    assert wrong_tool.returncode == 1 and "really an export from mixpanel" in wrong_tool.stderr

    bad_choice = cli("--from", "heap", EXPORTS / "segment", tmp_path / "out")
    assert bad_choice.returncode == 2 and "invalid choice" in bad_choice.stderr
