"""The examples of every Markdown page run as written, so the docs cannot rot.

For each page (README.md, docs/**/*.md) with runnable blocks: a fresh local server of its own
(`expconsole serve --ephemeral`), then the page's `sh` and `python` fenced blocks, in page order,
joined into one bash script (`set -euo pipefail`) run from the repository root, as a reader would
paste them into one terminal: a variable or function from an earlier block is there in a later
one, and a `python` block runs as `.venv/bin/python` at its place in the script. The environment
holds what `make serve` prints on its `Shell:` line: `CONSOLE` (base URL), `KEY` (console key),
`SECRET` (server secret). A block right after `<!-- doctest: skip -->` is not run (AWS deploys,
`make serve` itself). The blocks are read with a Markdown parser (markdown-it-py, CommonMark), so
what is run is exactly what a renderer shows as a code block.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

import pytest
from markdown_it import MarkdownIt

from expconsole_tools.local.process import ServeProcess

REPO = Path(__file__).resolve().parents[2]
RUN = frozenset({"sh", "python"})
SKIP = "<!-- doctest: skip"
OUTPUT = "output"
PAGE_TIMEOUT = 300
PY_END = "__DOCTEST_PYTHON_END__"
MARK = "__DOCTEST_BLOCK_END__"


@dataclass(frozen=True)
class Block:
    """A runnable fenced block: its language, text, first line (1-based) in the page, and the
    `output` block that follows it, if any (what it must print)."""

    lang: str
    text: str
    line: int
    output: str | None = None


def blocks(markdown: str) -> list[Block]:
    """The page's runnable blocks in order, the skipped ones left out."""
    found: list[Block] = []
    skip_next = False
    last: Block | None = None  # the runnable block just before, while nothing else came between
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "html_block" and token.content.lstrip().startswith(SKIP):
            skip_next, last = True, None
            continue
        if token.type in ("fence", "code_block"):
            lang = token.info.strip().split(" ")[0] if token.type == "fence" else ""
            if lang == OUTPUT and last is not None:
                found[-1] = last = Block(last.lang, last.text, last.line, token.content)
                last = None
            elif lang in RUN and not skip_next:
                line = token.map[0] + 1 if token.map else 0
                last = Block(lang, token.content, line)
                found.append(last)
            else:
                last = None
            skip_next = False
        elif token.level == 0:
            skip_next, last = False, None  # text between: the marker or the output is not for it
    return found


def script(page: Path, runnable: list[Block]) -> str:
    """One bash script of the blocks, each preceded by a comment naming its place in the page and
    followed by a line that marks the end of its output on stdout."""
    parts = ["set -euo pipefail"]
    for block in runnable:
        parts.append(f"# --- {page.relative_to(REPO)}:{block.line} ({block.lang})")
        if block.lang == "sh":
            parts.append(block.text)
        else:
            assert PY_END not in block.text
            parts.append(f".venv/bin/python - <<'{PY_END}'\n{block.text}{PY_END}")
        parts.append(f"printf '\\n{MARK}\\n'")
    return "\n".join(parts) + "\n"


def mismatches(runnable: list[Block], stdout: str) -> list[str]:
    """Each `output` block that differs from what its block printed (trailing blanks ignored)."""
    printed = stdout.split(f"\n{MARK}\n")
    wrong = []
    for block, out in zip(runnable, printed, strict=False):
        if block.output is not None and _lines(out) != _lines(block.output):
            wrong.append(f"line {block.line}: printed\n{out.strip()}\nwhere the page shows\n{block.output}")
    return wrong


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def pages() -> list[Path]:
    candidates = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [page for page in candidates if blocks(page.read_text())]


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_page_examples_run_as_written(page: Path, tmp_path: Path) -> None:
    bash = script(page, blocks(page.read_text()))
    log = tmp_path / "server.log"
    with ServeProcess("--ephemeral", "--port", "0", "--no-warm", cwd=REPO, stderr=log) as server:
        env = {**os.environ, "CONSOLE": server.url, "KEY": server.api_key, "SECRET": server.server_secret}
        # Its own session, so that a page stuck past the timeout is stopped with all it started.
        run = subprocess.Popen(
            ["bash", "-c", bash],
            cwd=REPO,
            env=env,
            stdout=PIPE,
            stderr=PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = run.communicate(timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            stdout, stderr = run.communicate()
    runnable = blocks(page.read_text())
    assert run.returncode == 0, (
        f"{page.relative_to(REPO)}: the examples failed (exit {run.returncode}; -9: still running after "
        f"{PAGE_TIMEOUT} s)\n--- stdout (end)\n{stdout[-4000:]}\n--- stderr (end)\n{stderr[-4000:]}\n"
        f"--- server log (end)\n{log.read_text()[-3000:]}"
    )
    wrong = mismatches(runnable, stdout)
    assert not wrong, f"{page.relative_to(REPO)}: output blocks that are no longer true:\n" + "\n".join(wrong)


# --- the reader of the blocks -------------------------------------------------------------------


def test_blocks_are_the_sh_and_python_fences_in_order_without_the_skipped_ones() -> None:
    page = "\n".join(
        [
            "# Title",
            "```sh",
            "echo one",
            "```",
            "<!-- doctest: skip -->",
            "```sh",
            "make serve",
            "```",
            "```json",
            '{"not": "run"}',
            "```",
            "Text.",
            "",
            "```python",
            "print(2)",
            "```",
            "<!-- doctest: skip (needs AWS) -->",
            "",
            "```sh",
            "sam deploy",
            "```",
            "    indented code is not run",
            "~~~sh",
            "echo three",
            "~~~",
        ]
    )
    assert blocks(page) == [
        Block("sh", "echo one\n", 2),
        Block("python", "print(2)\n", 14),
        Block("sh", "echo three\n", 23),
    ]


def test_a_marker_skips_only_the_block_right_after_it() -> None:
    page = "<!-- doctest: skip -->\n\nSome text.\n\n```sh\necho runs\n```\n"
    assert blocks(page) == [Block("sh", "echo runs\n", 5)]


def test_an_output_block_right_after_a_block_is_what_it_must_print() -> None:
    page = "```sh\necho 1\n```\n\n```output\n1\n```\n\nText.\n\n```output\nnot after a block\n```\n"
    assert blocks(page) == [Block("sh", "echo 1\n", 1, "1\n")]


def test_outputs_are_compared_block_by_block() -> None:
    runnable = [Block("sh", "echo a", 1, "a\n"), Block("sh", "echo b", 5), Block("sh", "echo c", 9, "C\n")]
    stdout = f"a\n\n{MARK}\nb\n{MARK}\n\nc\n\n{MARK}\n"
    (wrong,) = mismatches(runnable, stdout)
    assert wrong.startswith("line 9: printed\nc\n")


def test_the_script_keeps_state_across_blocks_and_runs_python_with_the_venv(tmp_path: Path) -> None:
    runnable = [
        Block("sh", "GREETING=hello\n", 1),
        Block(
            "python",
            "import os, pathlib, sys\nprint(os.environ['CONSOLE'], pathlib.Path(sys.prefix).resolve())\n",
            5,
        ),
        Block("sh", 'echo "$GREETING"\nfalse\necho never\n', 9),
    ]
    bash = script(REPO / "README.md", runnable)
    done = subprocess.run(
        ["bash", "-c", bash],
        cwd=REPO,
        env={**os.environ, "CONSOLE": "http://x"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = [line for line in done.stdout.splitlines() if line and line != MARK]
    assert done.returncode == 1 and lines[-1] == "hello" and "never" not in done.stdout
    assert lines[0].startswith("http://x ") and lines[0].endswith(str((REPO / ".venv").resolve()))
