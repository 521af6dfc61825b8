"""The experiment state diagram: drawn from the service's table, edge for allowed move, and every
Mermaid copy of it in the repository's Markdown pages equal to the drawing.

The service keeps to the same table: tests/functional/test_experiment_states.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from expconsole.models.experiments import STATUSES
from expconsole.services.experiments import (
    ALLOWED_FROM,
    ARCHIVED_FROM,
    DELETED,
    LEADS_TO,
    NEW_EXPERIMENT,
    UNCHANGED,
)
from expconsole_tools.state_diagram import experiment_state_diagram

REPO = Path(__file__).resolve().parents[2]
EDGE = re.compile(r"    (\S+) --> (\S+): (.+)")
NOT_A_STATE = (ARCHIVED_FROM, NEW_EXPERIMENT, DELETED, UNCHANGED)


def _edges(diagram: str) -> list[tuple[str, str, str]]:
    header, *lines = diagram.splitlines()
    assert header == "stateDiagram-v2"
    edges = []
    for line in lines:
        match = EDGE.fullmatch(line)
        assert match, f"not an edge: {line!r}"
        edges.append((match[1], match[2], match[3]))
    return edges


DRAWN = _edges(experiment_state_diagram())


def test_the_table_covers_every_action_with_a_known_target() -> None:
    assert set(LEADS_TO) == set(ALLOWED_FROM)
    for action, to in LEADS_TO.items():
        assert to in STATUSES or to in NOT_A_STATE, (action, to)
        assert ALLOWED_FROM[action] <= set(STATUSES), action


def test_each_edge_is_a_move_the_table_allows() -> None:
    for src, dst, label in DRAWN:
        if src == "[*]":  # a new experiment: created, or restarted from another one
            assert dst == "setup"
            assert set(label.split(" / ")) == {"create"} | {
                a for a, to in LEADS_TO.items() if to == NEW_EXPERIMENT
            }
            continue
        action = label.split(" ")[0]
        assert src in ALLOWED_FROM[action], (src, dst, label)
        to = LEADS_TO[action]
        if to == ARCHIVED_FROM:
            assert dst in ALLOWED_FROM["archive"] and label == f"{action} (was {dst})"
        elif to == DELETED:
            assert dst == "[*]"
        else:
            assert (dst, label) == (to, action)
    assert len(set(DRAWN)) == len(DRAWN), "an edge drawn twice"


def test_each_move_the_table_allows_is_an_edge() -> None:
    states = {s for src, dst, _ in DRAWN for s in (src, dst)} - {"[*]"}
    # The states drawn are those an experiment can be in: created in setup, or led to by an action.
    assert states == {"setup"} | {to for to in LEADS_TO.values() if to not in NOT_A_STATE}
    edges = set(DRAWN)
    for action, to in LEADS_TO.items():
        if to in (UNCHANGED, NEW_EXPERIMENT):
            continue
        for src in ALLOWED_FROM[action] & states:
            if to == ARCHIVED_FROM:
                expected = {(src, back, f"{action} (was {back})") for back in ALLOWED_FROM["archive"]}
            else:
                expected = {(src, "[*]" if to == DELETED else to, action)}
            assert expected <= edges, (action, src)


def _experiment_diagrams(root: Path = REPO) -> list[tuple[str, int, str]]:
    """(page, line, body) of each ```mermaid block in README.md and docs/ drawing the experiment
    states (a stateDiagram-v2 naming decision_made), found by content: pages come and go."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    found = []
    for page in (p for p in pages if p.is_file()):
        for token in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
            if token.type != "fence" or token.info.strip().split(" ")[0] != "mermaid":
                continue
            if "stateDiagram-v2" in token.content and "decision_made" in token.content:
                line = token.map[0] + 1 if token.map else 0
                found.append((str(page.relative_to(root)), line, token.content))
    return found


def test_each_experiment_state_diagram_in_the_docs_is_the_generated_one() -> None:
    generated = experiment_state_diagram()
    differing = [f"{page}:{line}" for page, line, body in _experiment_diagrams() if body != generated]
    assert differing == [], (
        f"experiment state diagrams that differ from the service's table: {', '.join(differing)}; "
        "paste the output of `python -m expconsole_tools.state_diagram` instead"
    )


def test_the_page_scan_finds_a_diagram_by_its_content(tmp_path: Path) -> None:
    """A mermaid state diagram naming decision_made is found, in README.md or under docs/; a
    flowchart or a non-mermaid block naming the same words is not."""
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    diagram = "stateDiagram-v2\n    a --> decision_made: b\n"
    (tmp_path / "README.md").write_text(f"# x\n\n```mermaid\n{diagram}```\n")
    flowchart = "```mermaid\nflowchart LR\n  decision_made --> x\n```\n"
    text = "```text\nstateDiagram-v2 decision_made\n```\n"
    (tmp_path / "docs" / "guide" / "page.md").write_text(f"{flowchart}\n{text}\n~~~mermaid\n{diagram}~~~\n")
    assert _experiment_diagrams(tmp_path) == [("README.md", 3, diagram), ("docs/guide/page.md", 10, diagram)]
