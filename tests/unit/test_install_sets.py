"""What `make serve` installs, and the Makefile's targets: a newcomer's first command must not wait
for the development tools, and every target the Makefile declares must run something."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"
SERVE_EXTRAS = ("local", "stats")
# In the dev extra as the tests' HTTP client, and a dependency of moto's (so of serving) as well;
# moto itself, which the dev extra asks for with its server extra (CloudFormation for the stand-in
# account), whose dependencies serving must not bring (checked below).
SHARED_WITH_SERVING = {"requests", "moto"}
SERVER_EXTRA_ONLY = {"cfn-lint", "openapi-spec-validator", "sympy", "networkx"}

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not on PATH")


def _project() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def _extra(name: str) -> list[Requirement]:
    return [Requirement(text) for text in _project()["optional-dependencies"][name]]


def _closure(requirements: list[Requirement]) -> set[str]:
    """Every distribution these requirements bring, through the installed packages' metadata."""
    seen: set[str] = set()
    pending = [(r, frozenset(r.extras)) for r in requirements]
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        if name == "expconsole":  # the project itself: its runtime dependencies and those extras
            own = [Requirement(text) for text in _project()["dependencies"]]
            own += [r for extra in extras for r in _extra(extra)]
            pending += [(r, frozenset(r.extras)) for r in own]
            continue
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        for text in metadata.requires(requirement.name) or []:
            child = Requirement(text)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if child.marker is None or any(child.marker.evaluate(env) for env in environments):
                pending.append((child, frozenset(child.extras)))
    return {key.partition("[")[0] for key in seen}


def test_the_serving_set_brings_none_of_the_development_tools() -> None:
    serving = _closure([Requirement(f"expconsole[{','.join(SERVE_EXTRAS)}]")])
    dev_tools = {canonicalize_name(r.name) for r in _extra("dev")} - {"expconsole"} - SHARED_WITH_SERVING
    assert {"moto", "duckdb", "scipy", "flask"} <= serving  # the closure was walked
    assert not serving & dev_tools, f"make serve would install {sorted(serving & dev_tools)}"
    assert not serving & SERVER_EXTRA_ONLY, f"make serve would install {sorted(serving & SERVER_EXTRA_ONLY)}"
    # The development install is the serving one plus the tools: the tests run what serving runs.
    itself = [set(r.extras) for r in _extra("dev") if canonicalize_name(r.name) == "expconsole"]
    assert itself == [set(SERVE_EXTRAS)]


def _dry_run(target: str) -> list[str]:
    """What `make -n -B <target>` would run (every prerequisite remade, nothing executed)."""
    result = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


def _installs(lines: list[str]) -> list[str]:
    """The requirement sets the commands install into the venv (`-e '.[...]'`), each command's once
    (a command names its set for uv, and again for pip should uv fail)."""
    return [m for line in lines for m in dict.fromkeys(re.findall(r"-e '(\.\[[^\]]*\])'", line))]


@needs_make
def test_make_serve_installs_the_serving_set_only() -> None:
    lines = _dry_run("serve")
    assert _installs(lines) == [f".[{','.join(SERVE_EXTRAS)}]"], lines
    assert not any("[dev]" in line for line in lines), lines


@needs_make
def test_make_test_installs_the_serving_set_then_the_development_tools() -> None:
    assert _installs(_dry_run("test")) == [f".[{','.join(SERVE_EXTRAS)}]", ".[dev]"]


def _phony_and_rules() -> tuple[list[str], set[str]]:
    text = MAKEFILE.read_text().replace("\\\n", " ")
    phony = [name for line in re.findall(r"^\.PHONY:(.*)$", text, re.MULTILINE) for name in line.split()]
    rules: set[str] = set()
    for line in text.splitlines():
        match = re.match(r"^([^\s:=#][^:=]*?)\s*::?(?![=])", line)
        if match and not line.startswith("\t"):
            rules.update(match.group(1).split())
    return phony, rules


def test_every_phony_target_has_a_rule_and_every_command_target_is_phony() -> None:
    phony, rules = _phony_and_rules()
    assert len(phony) == len(set(phony)), "a target is named twice in .PHONY"
    assert set(phony) - rules == set(), f".PHONY names targets without a rule: {sorted(set(phony) - rules)}"
    # Rules that make no file of their name (no path, no variable) are commands: each must be
    # phony, or a file of that name in the checkout would make it silently do nothing.
    commands = {r for r in rules if re.fullmatch(r"[a-z][a-z0-9-]*", r)}
    assert commands - set(phony) == set(), f"not in .PHONY: {sorted(commands - set(phony))}"
