"""Rows of an export, one at a time, whatever it is packed in.

Amplitude's Export API answers a zip of gzipped JSON-lines files (one or more per hour), Segment's
S3 destination writes gzipped JSON lines, Mixpanel's raw export is plain JSON lines. Rather than
trust names, a file is recognised by its first bytes (zip `PK\\x03\\x04`, gzip `\\x1f\\x8b`), so
an export saved under any name still reads. Everything streams: a zip member or gzip file is
decompressed as it is read and only the current line is held.
"""

from __future__ import annotations

import gzip
import os
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ZIP_MAGIC = b"PK\x03\x04"
GZIP_MAGIC = b"\x1f\x8b"
# In a directory only these are read (other files, a README say, would be rows of noise).
EXPORT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz", ".zip")


class UnreadableInput(Exception):
    """The export (or one of its files) cannot be read: a corrupt zip or gzip, an I/O error."""


@dataclass
class Row:
    """One non-blank line and where it came from (`file:line`, for skip reasons)."""

    where: str
    data: bytes


@dataclass
class Files:
    """What the walk saw, for the summary."""

    read: int = 0
    ignored: list[str] = field(default_factory=list)


def rows(source: Path, files: Files) -> Iterator[Row]:
    """Every non-blank line of the export at `source` (a file or a directory of files)."""
    if source.is_dir():
        paths = _export_files(source, files)
        if not paths:
            raise UnreadableInput(
                f"{source}: no export files in it (looked for {', '.join(EXPORT_SUFFIXES)})"
            )
    else:
        paths = [source]
    for path in paths:
        files.read += 1
        try:
            with path.open("rb") as handle:
                yield from _stream(handle, str(path))
        except OSError as exc:
            raise UnreadableInput(f"{path}: {exc.strerror or exc}") from exc


def _export_files(root: Path, files: Files) -> list[Path]:
    """The export files under `root`, in name order (hourly files sort by time); hidden ones skipped."""
    found: list[Path] = []
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(folder, name)
            if name.lower().endswith(EXPORT_SUFFIXES):
                found.append(path)
            else:
                files.ignored.append(str(path))
    return sorted(found)


def _stream(handle: IO[bytes], where: str) -> Iterator[Row]:
    """Lines of one file: a zip's members in name order, a gzip's content, or the bytes as they are."""
    head = _peek(handle)
    try:
        if head.startswith(ZIP_MAGIC):
            with zipfile.ZipFile(handle) as archive:
                for info in sorted(archive.infolist(), key=lambda i: i.filename):
                    if info.is_dir() or Path(info.filename).name.startswith("."):
                        continue
                    with archive.open(info) as member:
                        yield from _stream(member, f"{where}!{info.filename}")
        elif head.startswith(GZIP_MAGIC):
            with gzip.GzipFile(fileobj=handle, mode="rb") as unzipped:
                yield from _lines(unzipped, where)
        else:
            yield from _lines(handle, where)
    except (zipfile.BadZipFile, gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise UnreadableInput(f"{where}: not a readable zip or gzip file ({exc})") from exc


def _peek(handle: IO[bytes]) -> bytes:
    """The first bytes without consuming them (zip members and files both support peek)."""
    peek = getattr(handle, "peek", None)
    if peek is not None:
        return bytes(peek(4)[:4])
    if handle.seekable():
        position = handle.tell()
        head = handle.read(4)
        handle.seek(position)
        return head
    raise UnreadableInput("cannot inspect the input stream")  # pragma: no cover: files always peek


def _lines(handle: Iterable[bytes], where: str) -> Iterator[Row]:
    """Non-blank lines, numbered from 1 as an editor would show them."""
    for number, line in enumerate(handle, start=1):
        data = line.strip()
        if data:
            yield Row(f"{where}:{number}", data)
