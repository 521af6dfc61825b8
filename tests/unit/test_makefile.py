"""Every target the Makefile declares `.PHONY` has a rule: `make <name>` of a phony target without
one does nothing and succeeds, so a documented command that lost its rule would pass silently."""

from __future__ import annotations

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
# A rule's first line: targets, one colon (`::` too), prerequisites; not `:=`/`::=` assignments.
RULE = re.compile(r"^(?P<targets>[^\s#=:][^#=:]*?)\s*(?:::|:)(?![:=])")


def _logical_lines(text: str) -> list[str]:
    """The Makefile's lines with backslash continuations joined; recipe lines (tab) left out."""
    lines: list[str] = []
    pending = ""
    in_recipe = False  # a recipe line continued with a backslash: its next line is recipe too
    for raw in text.splitlines():
        if in_recipe or (not pending and raw.startswith("\t")):
            in_recipe = raw.endswith("\\")
            continue
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        lines.append(line)
    return lines


def phony_and_ruled(text: str) -> tuple[set[str], set[str]]:
    """(the .PHONY names, the names some rule defines)."""
    phony: set[str] = set()
    ruled: set[str] = set()
    for line in _logical_lines(text):
        if line.startswith(".PHONY:"):
            phony.update(line.removeprefix(".PHONY:").split("#", 1)[0].split())
            continue
        match = RULE.match(line)
        if match:
            ruled.update(match["targets"].split())
    return phony, ruled


def test_every_phony_target_has_a_rule() -> None:
    phony, ruled = phony_and_ruled(MAKEFILE.read_text(encoding="utf-8"))
    assert phony, "the Makefile declares no .PHONY targets"
    assert sorted(phony - ruled) == [], "declared .PHONY without a rule"


def test_the_parser_tells_rules_from_assignments_and_recipes() -> None:
    text = (
        ".PHONY: a b \\\n\tc d\n"
        "X := 1\nY ?= $(X)\nZ ::= 2\n"
        "a: b\n\t@echo c: d \\\n  e: f\n"
        "b c:\n"
        "$(X)/.stamp: a\n"
        "# d: a comment\n"
    )
    phony, ruled = phony_and_ruled(text)
    assert phony == {"a", "b", "c", "d"}
    assert ruled == {"a", "b", "c", "$(X)/.stamp"}
    assert phony - ruled == {"d"}
