"""A function's import builds no validator of ours: every model defers its build to its first use
(models/base.py), so a cold start pays only for what its first request validates.

Checked in a fresh interpreter that imports every function's module as Lambda would, because the
test process itself has long since built them all."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """\
import importlib.util, json, sys
from pydantic import BaseModel
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("app_" + path.split("/")[-2], path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, path.rsplit("/", 1)[0])
    spec.loader.exec_module(module)
seen, stack = [], [BaseModel]
while stack:
    for sub in stack.pop().__subclasses__():
        seen.append(sub)
        stack.append(sub)
built = sorted({f"{c.__module__}.{c.__qualname__}" for c in seen
                if c.__module__.startswith("expconsole") and c.__dict__.get("__pydantic_complete__")})
print(json.dumps(built))
"""


def test_model_modules_keep_their_annotations_evaluated() -> None:
    """Without PEP 563 strings, pydantic need not compile and eval each field's annotation."""
    models = ROOT / "layers" / "core" / "expconsole" / "models"
    future = re.compile(r"^from __future__ import annotations$", re.MULTILINE)
    postponed = [p.name for p in sorted(models.glob("*.py")) if future.search(p.read_text())]
    assert not postponed, f"models/base.py says why these should not postpone annotations: {postponed}"


def test_importing_the_functions_builds_none_of_our_models() -> None:
    apps = [str(app) for app in sorted((ROOT / "functions").glob("*/app.py"))]
    assert len(apps) > 10
    result = subprocess.run(
        [sys.executable, "-P", "-c", PROBE, *apps], cwd=ROOT, capture_output=True, text=True, check=True
    )
    built = json.loads(result.stdout.strip().splitlines()[-1])
    assert built == [], f"built at import (give them defer_build=True): {built}"


REQUESTS_PROBE = """\
import importlib.util, json, sys
sys.path.insert(0, sys.argv[1])
import app
from pydantic import BaseModel
def ours():
    seen, stack = set(), [BaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            seen.add(f"{sub.__module__}.{sub.__qualname__}")
            stack.append(sub)
    return sorted(name for name in seen if name.startswith("expconsole.models.experiments_requests."))
at_import = ours()
app.requests.ExperimentCreate  # what resolving a write route reads
print(json.dumps({"at_import": at_import, "after": ours()}))
"""


def test_the_experiments_function_creates_its_request_models_only_when_a_request_needs_them() -> None:
    """The experiments' request bodies (~30 classes; their cost: docs/performance.md, 'Cold
    start') are created by the first request that sends one; a sandbox serving reads never
    creates them (models/experiments_requests.py)."""
    result = subprocess.run(
        [sys.executable, "-P", "-c", REQUESTS_PROBE, str(ROOT / "functions" / "experiments")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["at_import"] == []
    assert "expconsole.models.experiments_requests.ExperimentCreate" in found["after"]
    assert len(found["after"]) > 20
