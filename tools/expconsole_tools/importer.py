"""`expconsole import DIR`: upload a tree of day directories of event files and report what became of them.

`DIR/YYYY-MM-DD/<path>` is uploaded to `imports/date=YYYY-MM-DD/<path>` in the events bucket
(sub-directories of a day directory are kept in the key). Hidden and `_` files and directories
are skipped (the `_rejected.*` copies this command writes among them), and so are files of
other types (each named). A directory under DIR whose name is not a date is an error, before
anything is uploaded.

Who imports: with --aws, the bucket's notification runs the import function, and this waits
for each file's report, recognised by the upload id put in the object's metadata (the
function copies it into the report), until --timeout. Locally there is no notification, so
this process does what it would: it runs the same service (services.imports.import_object)
for each uploaded key, against the backend of the server running on the data dir (or the
data dir's own). Either way re-running stores nothing twice: the event objects are named
from each file's content.

Output: a line per file and the totals on stdout. Each file's rejected rows are copied beside
it as `_rejected.<file>.jsonl` (and stay in the bucket beside the input, with its report).
Exit status 1 when a file could not be imported at all, or its report did not come in time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
POLL_SECONDS = 2.0


@dataclass(frozen=True)
class _File:
    path: Path
    day: str
    name: str  # below the day directory, with `/`

    @property
    def key(self) -> str:
        return f"imports/date={self.day}/{self.name}"

    @property
    def shown(self) -> str:
        return f"{self.day}/{self.name}"

    @property
    def rejected_copy(self) -> Path:
        return self.path.with_name(f"_rejected.{self.path.name}.jsonl")


def is_day(name: str) -> bool:
    if not _DAY.fullmatch(name):
        return False
    try:
        date.fromisoformat(name)
    except ValueError:
        return False
    return True


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def walk(root: Path) -> tuple[list[_File], list[str], list[str], list[str]]:
    """(files to import, directories that are not days, files outside a day, unsupported files)."""
    from expconsole.services.imports import file_format

    files: list[_File] = []
    not_days: list[str] = []
    loose: list[str] = []
    unsupported: list[str] = []
    for child in sorted(root.iterdir()):
        if _hidden(child.name):
            continue
        if not child.is_dir():
            loose.append(child.name)
            continue
        if not is_day(child.name):
            not_days.append(child.name)
            continue
        for path in sorted(child.rglob("*")):
            relative = path.relative_to(child)
            if any(_hidden(part) for part in relative.parts) or not path.is_file():
                continue
            item = _File(path, child.name, relative.as_posix())
            if file_format(item.name):
                files.append(item)
            else:
                unsupported.append(item.shown)
    return files, not_days, loose, unsupported


def _note(message: str) -> None:
    print(f"expconsole import: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Upload, have each file imported, print the reports' totals; the exit status."""
    from expconsole.services.imports import SUPPORTED
    from expconsole_tools.local.command_backend import backend_context

    root = Path(args.dir)
    if not root.is_dir():
        _note(f"{root} is not a directory")
        return 1
    files, not_days, loose, unsupported = walk(root)
    if not_days:
        _note(
            f"these directories of {root} are not days (YYYY-MM-DD): {', '.join(not_days)}; every directory "
            "under DIR holds one UTC day of events (DIR/2026-01-31/events.parquet). Nothing was uploaded."
        )
        return 1
    for name in loose:
        _note(f"skipped {name}: not in a day directory (DIR/YYYY-MM-DD/{name})")
    for name in unsupported:
        _note(f"skipped {name}: not {SUPPORTED}")
    if not files:
        hint = "; DIR is itself a day directory: pass its parent" if is_day(root.name) else ""
        _note(f"no files to import under {root}/YYYY-MM-DD/{hint}")
        return 1

    progress = not args.no_progress and sys.stderr.isatty()
    with backend_context(args) as where:
        from expconsole import config

        bucket = config.events_bucket()
        upload_id = uuid.uuid4().hex
        _upload(files, upload_id, progress)
        if args.aws:
            reports = _wait_for_reports(files, upload_id, args.timeout, progress)
        else:
            reports = _import_here(files, progress)
        copies = _copy_rejected(files, reports)
    return _print(files, reports, copies, where, bucket, args.timeout)


def _bar(progress: bool, **kwargs: Any) -> Any:
    from tqdm import tqdm

    return tqdm(disable=not progress, file=sys.stderr, dynamic_ncols=True, **kwargs)


def _upload(files: list[_File], upload_id: str, progress: bool) -> None:
    from expconsole.services.imports import UPLOAD_ID
    from expconsole.store import s3

    total = sum(f.path.stat().st_size for f in files)
    with _bar(progress, total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="upload") as bar:
        for f in files:
            bar.set_postfix_str(f.shown, refresh=False)
            s3.upload(str(f.path), f.key, {UPLOAD_ID: upload_id}, bar.update)


def _import_here(files: list[_File], progress: bool) -> dict[str, dict[str, Any]]:
    """What the notification would do in AWS: import each uploaded key, in this process."""
    from botocore.exceptions import BotoCoreError, ClientError

    from expconsole.services import imports, ingest

    reports: dict[str, dict[str, Any]] = {}
    with _bar(progress, total=len(files), unit="file", desc="import") as bar:
        for f in files:
            bar.set_postfix_str(f.shown, refresh=False)
            try:
                outcome = imports.import_object(f.key)
            except (ingest.StoreFailed, BotoCoreError, ClientError) as exc:
                cause = exc.__cause__ or exc
                outcome = {"message": f"storage failed ({type(cause).__name__}: {cause}); run it again"}
            reports[f.key] = outcome.get("report") or {"error": outcome.get("message", "not imported")}
            bar.update(1)
    return reports


def _wait_for_reports(
    files: list[_File], upload_id: str, timeout: int, progress: bool
) -> dict[str, dict[str, Any]]:
    """Poll each file's report until it is this upload's (its uploadId), or the time is up."""
    from expconsole.services import imports
    from expconsole.store import s3

    reports: dict[str, dict[str, Any]] = {}
    pending = {f.key for f in files}
    deadline = time.monotonic() + timeout
    with _bar(progress, total=len(files), unit="file", desc="import") as bar:
        while pending:
            for key in sorted(pending):
                body = s3.get_or_none(imports.report_key(key))
                report = json.loads(body) if body else None
                if report and report.get("uploadId") == upload_id and "finishedTime" in report:
                    reports[key] = report
                    pending.discard(key)
                    bar.update(1)
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    return reports


def _copy_rejected(files: list[_File], reports: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Copy each file's rejected rows beside it; where each copy is (or why there is none)."""
    from expconsole.store import s3

    copies: dict[str, str] = {}
    for f in files:
        report = reports.get(f.key)
        if not report or "error" in report:
            continue
        try:
            if report.get("rejected"):
                f.rejected_copy.write_bytes(s3.get(report["rejectedFile"]))
                copies[f.key] = str(f.rejected_copy)
            elif f.rejected_copy.is_file():
                f.rejected_copy.unlink()  # ours, from an earlier run of a version with rejected rows
        except OSError as exc:
            _note(f"cannot write {f.rejected_copy} ({exc}); the rows are in the bucket")
    return copies


def _print(
    files: list[_File],
    reports: dict[str, dict[str, Any]],
    copies: dict[str, str],
    where: str,
    bucket: str,
    timeout: int,
) -> int:
    totals = {"rows": 0, "accepted": 0, "duplicates": 0, "rejected": 0}
    failed = 0
    for f in files:
        report = reports.get(f.key)
        if report is None:
            failed += 1
            print(f"{f.shown}: no report within {timeout}s (the import function may still be running)")
            continue
        if "error" in report:
            failed += 1
            print(f"{f.shown}: FAILED, nothing stored: {report['error']}")
            continue
        for name in totals:
            totals[name] += int(report.get(name) or 0)
        counts = (
            f"{report['rows']} rows, {report['accepted']} accepted, "
            f"{report.get('duplicates') or 0} duplicates (already stored), {report['rejected']} rejected"
        )
        line = f"{f.shown}: {counts}"
        if f.key in copies:
            line += f" (see {copies[f.key]})"
        print(line)
    print(
        f"Totals: {len(files)} files, {failed} failed; {totals['rows']} rows, {totals['accepted']} accepted, "
        f"{totals['duplicates']} duplicates (already stored), {totals['rejected']} rejected; into {where}."
    )
    if totals["rejected"]:
        print(
            "Rejected rows, with their row numbers and reasons: _rejected.<file>.jsonl beside each file, and "
            f"beside each input in s3://{bucket}/imports/date=YYYY-MM-DD/ with its _report.<file>.json."
        )
    return 1 if failed else 0
