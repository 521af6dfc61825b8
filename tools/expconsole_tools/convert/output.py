"""Where converted events go: one JSON-lines file, or a tree of day directories.

Every file is first written under a hidden temporary name beside its final one and renamed only
when the whole export has converted, so a failed run leaves no half-written day that
`expconsole import` would then load (and a re-run replaces the files rather than appending).
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal

# Day files kept open at once in the directory layout; beyond this the least recently used is
# closed and reopened for appending when its day comes round again (exports are mostly in
# time order, so this rarely happens, but an export spanning years must not run out of handles).
MAX_OPEN_DAYS = 32


def is_single_file(output: Path) -> bool:
    """OUT ending in .jsonl (or .jsonl.gz) is one file; anything else is a directory of days."""
    name = output.name.lower()
    return name.endswith(".jsonl") or name.endswith(".jsonl.gz")


def day_of(timestamp_ms: int) -> str:
    """The event's UTC day, as the day directories and the event store partition it."""
    return datetime.fromtimestamp(timestamp_ms // 1000, UTC).date().isoformat()


def _temporary(final: Path) -> Path:
    return final.with_name(f".{final.name}.part")


class Sink:
    """Writes lines to their final files on `commit`, or removes every trace on `abort`."""

    def __init__(self, output: Path, tool: str) -> None:
        self.output = output
        self.tool = tool
        self.single = is_single_file(output)
        if self.single:
            if output.is_dir():
                raise NotADirectoryError(f"{output} is a directory; a .jsonl output must be a file")
        elif output.exists() and not output.is_dir():
            raise NotADirectoryError(
                f"{output} exists and is not a directory (name a .jsonl to write one file)"
            )
        self.days: set[str] = set()
        self._open: OrderedDict[str, IO[str]] = OrderedDict()
        self._written: dict[Path, Path] = {}  # temporary → final
        self._made_dirs: list[Path] = []

    def write(self, day: str, text: str) -> None:
        """Append one JSON line (with its newline) to the file for `day`."""
        self.days.add(day)
        key = "" if self.single else day
        handle = self._open.get(key)
        if handle is None:
            handle = self._open_for(key)
        else:
            self._open.move_to_end(key)
        handle.write(text)

    def _open_for(self, key: str) -> IO[str]:
        final = self.output if self.single else self.output / key / f"{self.tool}.jsonl"
        self._make_dir(final.parent)
        temporary = _temporary(final)
        mode: Literal["at", "wt"] = "at" if temporary in self._written else "wt"
        self._written[temporary] = final
        if len(self._open) >= MAX_OPEN_DAYS:
            self._open.popitem(last=False)[1].close()
        if final.name.lower().endswith(".gz"):
            # Kept open across writes and closed in _close: a with block cannot span them.
            handle: IO[str] = gzip.open(temporary, mode, encoding="utf-8")  # noqa: SIM115
        else:
            handle = temporary.open(mode, encoding="utf-8")
        self._open[key] = handle
        return handle

    def _make_dir(self, folder: Path) -> None:
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
        self._made_dirs.extend(missing)

    def _close(self) -> None:
        while self._open:
            self._open.popitem()[1].close()

    def commit(self) -> None:
        """Move every written file to its final name (an empty single-file OUT is still written)."""
        if self.single and not self._written:
            self._open_for("")
        elif not self.single:
            self.output.mkdir(parents=True, exist_ok=True)
        self._close()
        for temporary, final in self._written.items():
            os.replace(temporary, final)
        self._written.clear()

    def abort(self) -> None:
        """Remove the temporary files and the directories this run created."""
        self._close()
        for temporary in self._written:
            temporary.unlink(missing_ok=True)
        for folder in sorted(self._made_dirs, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty: something else lives there too
                folder.rmdir()
