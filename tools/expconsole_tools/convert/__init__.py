"""`expconsole convert --from amplitude|mixpanel|segment IN OUT`: other tools' exports → events.

The contract's Events part: events from other analytics tools are converted to the model before
ingestion. This reads an export row by row (reading.py), maps each row (mapping.py), checks the
result with the very validator ingestion uses (`models.events.check_event`, so whatever is written
will be accepted by `expconsole import`), and writes it (output.py). A row that cannot be
converted is skipped and counted, never fatal: one bad line must not lose a day of export.
Memory stays flat: one line is held at a time, plus one open file per day being written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from expconsole.models.events import check_event
from expconsole_tools.convert.mapping import MAPPERS, Skip
from expconsole_tools.convert.output import Sink, day_of
from expconsole_tools.convert.reading import Files, UnreadableInput, rows

SHOWN_REASONS = 5


@dataclass
class Summary:
    """What a conversion did: counts, the days written and the first few skip reasons."""

    converted: int = 0
    skipped: int = 0
    not_events: int = 0
    days: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)
    files: Files = field(default_factory=Files)

    def skip(self, where: str, reason: str) -> None:
        self.skipped += 1
        if len(self.reasons) < SHOWN_REASONS:
            self.reasons.append(f"{where}: {reason}")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def convert(tool: str, source: Path, output: Path, now_ms: int | None = None) -> Summary:
    """Convert the export at `source` to `output`; raises UnreadableInput (output left untouched)."""
    mapper = MAPPERS[tool]()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    summary = Summary()
    sink = Sink(output, tool)
    try:
        for row in rows(source, summary.files):
            try:
                raw = json.loads(row.data, parse_constant=_no_constants)
            except (ValueError, UnicodeDecodeError) as exc:
                summary.skip(row.where, f"not JSON ({exc})")
                continue
            if not isinstance(raw, dict):
                summary.skip(row.where, "not a JSON object")
                continue
            try:
                event = mapper(raw)
            except Skip as exc:
                summary.skip(row.where, str(exc))
                continue
            if event is None:
                summary.not_events += 1
                continue
            errors: list[dict[str, str]] = []
            line = check_event(0, event, now, errors)
            if line is None:
                reason = "; ".join(f"{e['field'].removeprefix('events[0].')}: {e['message']}" for e in errors)
                summary.skip(row.where, f"not a valid event: {reason}")
                continue
            sink.write(
                day_of(line["timestamp"]), json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n"
            )
            summary.converted += 1
    except BaseException:
        sink.abort()
        raise
    sink.commit()
    summary.days = sink.days
    return summary


def run(args: argparse.Namespace) -> int:
    """The CLI command: 0 done, 1 unreadable input or nothing convertible, 2 IN missing."""
    source, output = Path(args.input), Path(args.output)
    if not source.exists():
        print(f"expconsole convert: {source}: no such file or directory", file=sys.stderr)
        return 2
    try:
        summary = convert(args.tool, source, output)
    except UnreadableInput as exc:
        print(f"expconsole convert: cannot read the export: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"expconsole convert: {exc}", file=sys.stderr)
        return 1
    _report(summary, args.tool, output, sys.stdout, sys.stderr)
    if summary.skipped and not summary.converted:
        print(
            f"expconsole convert: no row could be converted; is {source} really an export from {args.tool}?",
            file=sys.stderr,
        )
        return 1
    return 0


def _report(summary: Summary, tool: str, output: Path, out: TextIO, err: TextIO) -> None:
    for reason in summary.reasons:
        print(f"skipped {reason}", file=err)
    if summary.skipped > len(summary.reasons):
        print(f"... and {summary.skipped - len(summary.reasons)} more skipped rows", file=err)
    if summary.files.ignored:
        example = summary.files.ignored[0]
        print(f"ignored {len(summary.files.ignored)} files that are not exports, e.g. {example}", file=err)
    days = sorted(summary.days)
    span = f" ({days[0]} to {days[-1]})" if len(days) > 1 else f" ({days[0]})" if days else ""
    extra = f", {summary.not_events} user or group updates (not events)" if summary.not_events else ""
    print(
        f"{tool}: converted {summary.converted} events, skipped {summary.skipped} rows{extra}; "
        f"{len(days)} days{span} -> {output}",
        file=out,
    )
