"""`expconsole ... | head -1`: a reader that goes away ends the command quietly, as Unix tools do."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

EXPORT = Path(__file__).resolve().parents[1] / "data" / "exports" / "segment"


def test_a_closed_pipe_on_stdout_ends_the_command_quietly_with_the_sigpipe_status(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "expconsole_tools.cli",
                "convert",
                "--from",
                "segment",
                str(EXPORT),
                str(tmp_path),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert list(tmp_path.rglob("*.jsonl")), "the command did its work before it had to print"
