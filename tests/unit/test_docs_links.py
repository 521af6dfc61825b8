"""The documentation points only at things that exist, and only inside the repository.

A reader follows a link or a path from a page or a docstring and must find it: a renamed file or a
heading rewritten breaks the pointer silently, so these tests read every pointer and resolve it.

(a) Links and paths resolve:

- every relative link of every Markdown file (`[text](target)`, `![alt](target)`, `[id]: target`;
  not inside fenced code blocks or code spans) names an existing file or directory, resolved from
  the page's folder; a `#anchor` into a Markdown file (or the page itself) names one of its
  headings, slugged as GitHub does (lower case; letters, digits, `-`, `_` and spaces kept, spaces
  as `-`; a repeated heading gets `-1`, `-2`, ...), or an `id`/`name` of an HTML anchor there;
- every *repository path* in a code span of a Markdown file, or of a Python docstring or comment,
  exists. A code span is a repository path when it has no whitespace, contains a `/`, and its
  first segment is a directory of the repository where paths are read from: a top-level one
  (`tests/unit`, `layers/core/Makefile`, `events/<sample>.json`), one of a package root
  (`services/quality.py`, `web/vendor/`, `local/server.py`), or one beside the file naming it or
  a folder above that file. So the names of S3 prefixes and keys (`sdk/`, `pulse/athena/`), of
  folders inside a built artifact (`python/`) and of routes are not read as paths. Not paths
  either: spans starting with `/`, `~`, `-` or `$` (routes, system paths, options), or containing
  `://` (URLs), `=` (S3 partition keys such as `events/date=YYYY-MM-DD/`), `...` or `…`
  (elisions), `@`, `:` or `|`. Placeholders (`<kind>`, `{id}`, `*`) are wildcards:
  `events/<kind>_list.json` must match at least one file. A path resolves from the repository
  root, from a package root (`layers/core/`, `layers/core/expconsole/`, `tools/expconsole_tools/`)
  or from a folder above the file naming it, so `services/quality.py` names
  `layers/core/expconsole/services/quality.py`. Paths that `.gitignore` ignores
  (`tests/artifacts/`) are made by the tools and are not checked.

- every pointer to a section, written `docs/<page>.md, 'Heading'` (as docstrings cite the docs),
  names an existing page and one of its headings.

(b) Nothing refers outside the repository: no text file names the design notes, statistics
notes or API contract that once lived beside the repository, nor the peer's OpenAPI document, and
no Markdown link climbs above the repository root.

README.md is checked like every other page.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import subprocess
import tokenize
import unicodedata
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOTS = (ROOT / "layers/core", ROOT / "layers/core/expconsole", ROOT / "tools/expconsole_tools")
# Written apart so that this file does not name them itself.
OUTSIDE = tuple(
    a + b
    for a, b in [
        ("../", "shared"),
        ("STATS", ".md"),
        ("DESIGN", ".md"),
        ("console-api", ".md"),
        ("peer-console", "-openapi"),
    ]
)
BINARY_SUFFIXES = {".png", ".jpg", ".gif", ".ico", ".gz", ".zip", ".parquet", ".woff", ".woff2", ".pyc"}
SKIPPED_DIRS = {".git", "node_modules", "__pycache__"}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
PLACEHOLDER = re.compile(r"<[^<>/]*>|\{[^{}/]*\}")
NOT_A_PATH = re.compile(r"://|=|\.\.\.|…|[@:|]")
SECTION_POINTER = re.compile(r"(docs/[\w/.-]+\.md),\s+(['\"])(.+?)\2")
LINE_BREAK = re.compile(r"\s*\n[ \t]*(?:#[ \t]*)?")


# --- the repository's files ---------------------------------------------------------------------


@cache
def repository_files() -> tuple[Path, ...]:
    """Tracked and new (not ignored) files: git's view when there is one, else a walk."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        names = [n for n in out.decode().split("\0") if n]
        return tuple(sorted(ROOT / n for n in names if (ROOT / n).is_file()))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for path in ROOT.rglob("*"):
            rel = path.relative_to(ROOT)
            if path.is_file() and not ignored(rel.as_posix()) and not SKIPPED_DIRS & set(rel.parts):
                found.append(path)
        return tuple(sorted(found))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def markdown_files() -> list[Path]:
    return [p for p in repository_files() if p.suffix == ".md"]


def python_files() -> list[Path]:
    return [p for p in repository_files() if p.suffix == ".py"]


@cache
def gitignore_patterns() -> tuple[str, ...]:
    text = (ROOT / ".gitignore").read_text(encoding="utf-8") if (ROOT / ".gitignore").exists() else ""
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def ignored(path: str) -> bool:
    """Whether .gitignore ignores the path or a folder above it (its patterns are names and prefixes)."""
    parts = path.strip("/").split("/")
    for pattern in gitignore_patterns():
        anchored = "/" in pattern.rstrip("/")
        pat = pattern.rstrip("/")
        if anchored:
            prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
            if any(fnmatch.fnmatchcase(p, pat) for p in prefixes):
                return True
        elif any(fnmatch.fnmatchcase(part, pat) for part in parts):
            return True
    return False


# --- Markdown -------------------------------------------------------------------------------------


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
        elif fence is not None and match and closes(match.group(1), fence):
            fence = None
        elif fence is None:
            out.append((number, line))
    return out


def closes(marker: str, fence: str) -> bool:
    """Whether a fence line closes the block `fence` opened: the same character, at least as many."""
    return marker[0] == fence[0] and len(marker) >= len(fence)


def prose(text: str) -> str:
    """The text outside fenced code blocks, blank lines where the fences were (lines keep their numbers)."""
    lines = text.splitlines()
    kept = dict(prose_lines(text))
    return "\n".join(kept.get(i, "") for i in range(1, len(lines) + 1))


def without_code_spans(text: str) -> str:
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), text)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: rendered text, lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "-_ " or category[0] in ("L", "N") or category == "Mn":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file offers: its headings' slugs (with -1, -2 for repeats) and HTML anchors."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    text = path.read_text(encoding="utf-8")
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            found.add(slug if count == 0 else f"{slug}-{count}")
            seen[slug] = count + 1
    found.update(HTML_ANCHOR.findall(text))
    return frozenset(found)


def markdown_links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and reference definition outside code."""
    text = without_code_spans(prose(path.read_text(encoding="utf-8")))
    found = []
    for pattern in (INLINE_LINK, REFERENCE_DEF):
        for match in pattern.finditer(text):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return sorted(found)


def link_problem(page: Path, target: str) -> str | None:
    """Why a link target does not resolve, or None when it does (external links are not followed)."""
    if SCHEME.match(target) or target.startswith("//"):
        return None
    file_part, _, anchor = target.partition("#")
    file_part = re.sub(r"\?.*$", "", file_part)
    resolved = (page.parent / file_part).resolve() if file_part else page
    if not resolved.is_relative_to(ROOT):
        return "climbs above the repository root"
    if not resolved.exists():
        return "no such file or directory"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"no heading with the anchor #{anchor} in {rel(resolved)}"
    return None


def markdown_code_spans(path: Path) -> list[tuple[int, str]]:
    text = prose(path.read_text(encoding="utf-8"))
    return [(text.count("\n", 0, m.start()) + 1, m.group(2).strip()) for m in CODE_SPAN.finditer(text)]


# --- Python docstrings and comments ---------------------------------------------------------------


def python_code_spans(path: Path) -> list[tuple[int, str]]:
    """(line, span) of the code spans in the file's docstrings (every string statement) and comments."""
    source = path.read_text(encoding="utf-8")
    texts: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(getattr(node.value, "value", None), str):
            texts.append((node.lineno, node.value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            texts.append((token.start[0], token.string))
    spans = []
    for line, text in texts:
        for match in CODE_SPAN.finditer(text):
            spans.append((line + text.count("\n", 0, match.start()), match.group(2).strip()))
    return spans


# --- repository paths -----------------------------------------------------------------------------


def path_bases(mentioned_in: Path) -> list[Path]:
    """Where a path is read from: the repository root, the package roots, the folders above the file."""
    return [ROOT, *PACKAGE_ROOTS, *(p for p in mentioned_in.parents if p.is_relative_to(ROOT))]


def is_repository_path(span: str, mentioned_in: Path) -> bool:
    """Whether a code span names a repository path (the rule in the module docstring)."""
    if not span or any(ch.isspace() for ch in span) or "/" not in span:
        return False
    if span[0] in "/~-$" or NOT_A_PATH.search(span):
        return False
    first = span.split("/", 1)[0]
    if not first or PLACEHOLDER.sub("", first) != first or "*" in first or first in (".", ".."):
        return False
    return any((base / first).is_dir() for base in path_bases(mentioned_in))


def path_resolves(span: str, mentioned_in: Path) -> bool:
    pattern = PLACEHOLDER.sub("*", span).rstrip("/")
    if ignored(pattern):
        return True
    for base in path_bases(mentioned_in):
        if "*" in pattern or "?" in pattern or "[" in pattern:
            if any(base.glob(pattern)):
                return True
        elif (base / pattern).exists():
            return True
    return False


def broken_paths(files: list[Path], spans_of: Callable[[Path], list[tuple[int, str]]]) -> list[str]:
    broken = []
    for path in files:
        for line, span in spans_of(path):
            if is_repository_path(span, path) and not path_resolves(span, path):
                broken.append(f"{rel(path)}:{line}: `{span}`")
    return broken


# --- the tests ------------------------------------------------------------------------------------


def test_every_relative_link_in_markdown_resolves() -> None:
    broken = []
    for page in markdown_files():
        for line, target in markdown_links(page):
            problem = link_problem(page, target)
            if problem:
                broken.append(f"{rel(page)}:{line}: ({target}) {problem}")
    assert broken == [], "links that lead nowhere:\n" + "\n".join(broken)


def test_every_path_named_in_markdown_exists() -> None:
    broken = broken_paths(markdown_files(), markdown_code_spans)
    assert broken == [], "paths named in Markdown that do not exist:\n" + "\n".join(broken)


def test_every_path_named_in_a_docstring_or_comment_exists() -> None:
    broken = broken_paths(python_files(), python_code_spans)
    assert broken == [], "paths named in docstrings and comments that do not exist:\n" + "\n".join(broken)


def section_pointers(path: Path) -> list[tuple[str, str]]:
    """(page, heading) of each `docs/<page>.md, 'Heading'` in the file, wrapped lines and comments joined."""
    text = LINE_BREAK.sub(" ", path.read_text(encoding="utf-8"))
    return [(m.group(1), m.group(3)) for m in SECTION_POINTER.finditer(text)]


def test_every_pointer_to_a_section_names_a_heading() -> None:
    broken = []
    for path in [*markdown_files(), *python_files()]:
        for page, heading in section_pointers(path):
            target = ROOT / page
            if not target.is_file():
                broken.append(f"{rel(path)}: {page} does not exist")
            elif github_slug(heading) not in anchors(target):
                broken.append(f"{rel(path)}: no heading '{heading}' in {page}")
    assert broken == [], "pointers to sections that do not exist:\n" + "\n".join(broken)


def test_nothing_refers_outside_the_repository() -> None:
    found = []
    for path in repository_files():
        if path.suffix in BINARY_SUFFIXES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for name in OUTSIDE:
                if name in line:
                    found.append(f"{rel(path)}:{number}: {name}")
    assert found == [], "references to files outside the repository:\n" + "\n".join(found)


# --- the rules themselves -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Getting started", "getting-started"),
        ("Cold start: `cold_start.py`", "cold-start-cold_startpy"),
        ("Events: ingestion and catalogue", "events-ingestion-and-catalogue"),
        ("Release pipelines, prompts and segments", "release-pipelines-prompts-and-segments"),
        ("Bonferroni / Benjamini\u2013Hochberg", "bonferroni--benjaminihochberg"),
        ("[SDKs](sdks.md) and CUPED", "sdks-and-cuped"),
    ],
)
def test_headings_are_slugged_as_github_does(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ("layers/core/expconsole/services/experiments.py", True),
        ("services/quality.py", True),
        ("events/<kind>_list.json", True),
        ("bench/", True),
        ("tests/unit", True),
        ("layers/core/Makefile", True),
        ("/console/v1/gates", False),
        ("events/date=YYYY-MM-DD/<hash>.jsonl.gz", False),
        ("s3://bucket/sdk/", False),
        ("sdk/specs/v1.json.gz", False),
        ("python/", False),
        ("tests/e2e/client.py", True),
        ("tests/e2e/sdk_clients.users", True),
        ("<base>/v1/log_event", False),
        ("make serve", False),
        ("x̄_t/x̄_c", False),
        ("application/json", False),
        ("passes_gate/fails_gate", False),
        ("~/.pyenv/versions/3.12.*", False),
        (".../summary", False),
    ],
)
def test_what_counts_as_a_repository_path(span: str, expected: bool) -> None:
    assert is_repository_path(span, ROOT / "docs/README.md") is expected


def test_a_path_resolves_from_a_package_root_or_as_a_pattern() -> None:
    here = ROOT / "docs/README.md"
    assert path_resolves("services/quality.py", here)
    assert path_resolves("events/<sample>.json", here)
    assert path_resolves("functions/<group>/app.py", here)
    assert path_resolves(".expconsole/journal.jsonl", here)  # made by the local server, ignored by git
    assert not path_resolves("services/no_such_module.py", here)
    assert not path_resolves("events/<x>.yaml", here)


def test_a_link_is_checked_down_to_its_anchor() -> None:
    page = ROOT / "README.md"
    assert link_problem(page, "https://example.com/nowhere") is None
    assert link_problem(page, "no-such-page.md") == "no such file or directory"
    assert link_problem(page, "../../etc/passwd") == "climbs above the repository root"
    assert link_problem(page, "README.md#no-such-heading-anywhere") is not None


def test_a_section_pointer_may_wrap_across_comment_lines(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "# the control (docs/statistics.md,\n# 'Holdouts: topline') and docs/pulse.md, \"Engines\"\n"
    )
    assert section_pointers(source) == [
        ("docs/statistics.md", "Holdouts: topline"),
        ("docs/pulse.md", "Engines"),
    ]


def test_links_and_spans_inside_code_blocks_are_not_read() -> None:
    text = "see [a](a.md) and `b/c.py`\n```sh\n[x](y.md) `z/w.py`\n```\n`` `q` ``\n"
    assert without_code_spans(prose(text)).count("](") == 1
    spans = [m.group(2).strip() for m in CODE_SPAN.finditer(prose(text))]
    assert spans == ["b/c.py", "`q`"]
