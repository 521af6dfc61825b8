"""Cold-start import cost of each function against its bare dependencies.

A Lambda cold start includes importing the handler module, and for the CRUD functions that
cost is part of the product (DESIGN.md): each must import within 1.2x of `import boto3,
pydantic, aws_lambda_powertools` alone, and must never pull in numpy, scipy, pyarrow or duckdb.
Timings depend on the machine, so this prints figures and exits 0; `--check` turns the budget
into an exit status for whoever wants to gate on it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
BUDGET = 1.2
NOT_CRUD = frozenset({"results", "pulse", "import", "imports"})
HEAVY = ("numpy", "scipy", "pyarrow", "duckdb")
BASELINE = "baseline"
BASELINE_IMPORT = "import boto3, pydantic, aws_lambda_powertools"

# Runs in a fresh interpreter; the function's directory goes on sys.path before the clock
# starts, as Lambda puts /var/task there before it imports the handler module.
PROBE = """\
import json, sys, time
{setup}
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
print(json.dumps({{"ms": elapsed * 1000, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""

ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "expconsole-bench",
    "EVENTS_BUCKET": "expconsole-bench-events",
    "POWERTOOLS_SERVICE_NAME": "expconsole",
    # Inside Lambda (LAMBDA_TASK_ROOT set) Powertools' Tracer is on: it imports the X-Ray SDK and
    # patches botocore at import, and that is part of every function's cold start.
    "LAMBDA_TASK_ROOT": str(FUNCTIONS),
    "AWS_LAMBDA_FUNCTION_NAME": "expconsole-bench",
}


@dataclass
class Target:
    """One thing to import in a fresh interpreter: the baseline or a function's `app`."""

    name: str
    setup: str
    statement: str
    crud: bool
    times_ms: list[float] = field(default_factory=list)
    heavy: set[str] = field(default_factory=set)
    error: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)


@dataclass(frozen=True)
class Interpreter:
    """How the probes run: the venv's Python on the source tree, or the runtime's on the build."""

    command: tuple[str, ...] = (sys.executable, "-P")
    env: tuple[tuple[str, str], ...] = ()


def built_targets(build_dir: Path) -> tuple[Interpreter, list[Target]]:
    """The built stack as Lambda imports it (see expconsole.local.artifact): python3.12, isolated,
    no site-packages, no bytecode written (Lambda's /var/task and /opt are read-only, so only the
    .pyc files the build shipped count); each function's code folder and layers before the
    standard library, the runtime's boto3 after it. The baseline imports the same three packages
    from the core layer and the runtime's folder."""
    from expconsole.local.artifact import built_template, open_artifact
    from expconsole.local.template import load_functions

    functions = load_functions(built_template(build_dir))
    artifact = open_artifact(build_dir, {f.runtime for f in functions.values()})
    interpreter = Interpreter((artifact.python, "-I", "-S", "-B"))

    def setup(before: list[str], after: list[str]) -> str:
        return f"sys.path[:0] = {before!r}; sys.path.extend({after!r})"

    core = functions["GatesFunction"]
    core_before, runtime = artifact.import_path(core)
    out = [Target(BASELINE, setup(core_before[1:], runtime), BASELINE_IMPORT, crud=False)]
    for logical_id, function in sorted(functions.items()):
        before, after = artifact.import_path(function)
        env = ";".join(f"os.environ[{k!r}] = {v!r}" for k, v in artifact.environment(function).items())
        name = logical_id.removesuffix("Function").lower()
        out.append(
            Target(
                name,
                f"import os; {env}; {setup(before, after)}",
                f"import {function.module_file.stem}",
                crud=name not in NOT_CRUD,
            )
        )
    return interpreter, out


def targets() -> list[Target]:
    baseline = Target(BASELINE, "", BASELINE_IMPORT, crud=False)
    functions = [
        Target(
            app.parent.name,
            f"sys.path.insert(0, {str(app.parent)!r})",
            "import app",
            crud=app.parent.name not in NOT_CRUD,
        )
        for app in sorted(FUNCTIONS.glob("*/app.py"))
    ]
    return [baseline, *functions]


def measure(target: Target, interpreter: Interpreter) -> None:
    """Import the target once in a new interpreter and record the time or the error."""
    code = PROBE.format(setup=target.setup, statement=target.statement, heavy=HEAVY)
    # -P (or -I): no script directory or cwd on sys.path, so only the directories we add are searched.
    result = subprocess.run(
        [*interpreter.command, "-c", code],
        cwd=ROOT,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        target.error = lines[-1] if lines else f"exit status {result.returncode}"
        return
    report = json.loads(result.stdout.strip().splitlines()[-1])
    target.times_ms.append(report["ms"])
    target.heavy.update(report["heavy"])


def run(repeat: int, build_dir: Path | None = None) -> list[Target]:
    """Measure every target `repeat` times, interleaved so that drift hits all of them alike."""
    interpreter, all_targets = built_targets(build_dir) if build_dir else (Interpreter(), targets())
    # An unmeasured first import writes the function's bytecode cache, as the baseline's
    # packages already have theirs in site-packages (from a build, -B: nothing is written, and
    # this run only warms the file cache).
    for target in all_targets:
        measure(target, interpreter)
        target.times_ms.clear()
    for _ in range(repeat):
        for target in all_targets:
            if not target.error:
                measure(target, interpreter)
    return all_targets


def verdict(target: Target, baseline_ms: float) -> str:
    if target.error:
        return "ERROR"
    if not target.crud:
        return "-"
    return "PASS" if target.median <= BUDGET * baseline_ms else "FAIL"


def report(all_targets: list[Target], repeat: int) -> bool:
    """Print the table; True when every import worked and every CRUD function is within budget and light."""
    baseline = all_targets[0]
    if baseline.error:
        print(f"baseline import failed: {baseline.error}")
        return False
    base_ms = baseline.median
    print(f"Import time in a fresh interpreter, {repeat} runs each; CRUD budget: {BUDGET}x baseline")
    print(f"baseline = `{BASELINE_IMPORT}`\n")
    header = (
        f"{'target':<20} {'kind':<5} {'median ms':>10} {'min ms':>8} {'x base':>7}  {'budget':<6} "
        "numpy/scipy/pyarrow/duckdb"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for target in all_targets:
        kind = "-" if target.name == BASELINE else ("CRUD" if target.crud else "stats")
        status = verdict(target, base_ms)
        if target.error:
            print(f"{target.name:<20} {kind:<5} {'import failed: ' + target.error}")
            ok = False
            continue
        heavy = ", ".join(sorted(target.heavy)) or "none"
        ratio = target.median / base_ms
        print(
            f"{target.name:<20} {kind:<5} {target.median:>10.1f} {min(target.times_ms):>8.1f} "
            f"{ratio:>7.2f}  {status:<6} {heavy}"
        )
        if target.crud and (status == "FAIL" or target.heavy):
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh-interpreter runs per target (default 7)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if a CRUD function is over budget, loads numpy/scipy/pyarrow/duckdb, or fails to import",
    )
    parser.add_argument(
        "--build-dir",
        type=Path,
        help="measure the built stack (`make build`; e.g. .aws-sam/build) as Lambda imports it, "
        "instead of the source tree",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.build_dir is not None:
        print(f"Built stack: {args.build_dir} (the runtime's interpreter, as Lambda imports each function)")
    ok = report(run(args.repeat, args.build_dir), args.repeat)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
