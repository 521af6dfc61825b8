"""Cold-start cost of each function against its bare dependencies.

A Lambda cold start includes importing the handler module, and for the CRUD functions that cost is
part of the product (docs/architecture.md, 'Cold start'): each must import within 1.2x of
`import boto3, pydantic, aws_lambda_powertools` alone, and must never pull in numpy, scipy, pyarrow or
duckdb.

`--first-request` measures what a caller waits for on a cold sandbox instead: the import plus
the first invocation (the function's sample event from events/, against DynamoDB and S3 in a
moto server), beside a baseline that imports the same three packages, creates the DynamoDB
client the same way and makes one read. Work a function defers from its import to its first
request (a client, a patch, a parsed document) counts there, so neither figure can be
improved by moving work between the two.

`--instructions` counts instead of timing: the instructions the import executes, under
valgrind's cachegrind, once per target. On a shared machine one fresh import takes 20-30% more
or less time than the next, so timed ratios near the budget need many runs; the count is the
same from one run to the next (to a few parts in ten thousand), so it settles whether a function
is over the budget, and by how much, in one run. It leaves out what time adds to the same
instructions (cache misses, page faults on first reads), which falls on baseline and functions
alike.

Timings depend on the machine, so this prints figures and exits 0; `--check` turns the budget
into an exit status for whoever wants to gate on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
EVENTS = ROOT / "events"
TEMPLATE = ROOT / "template.yaml"
BUDGET = 1.2
RESAMPLES = 2000  # bootstrap resamples for the ratio's interval
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

# The same, then the first invocation: the import's time and the whole (import + first request).
REQUEST_PROBE = """\
import json, os, sys, time
{setup}
class Context:
    function_name = "expconsole-bench"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:expconsole-bench"
    memory_limit_in_mb = 1024
    aws_request_id = "00000000-0000-0000-0000-000000000000"
    log_group_name = "/aws/lambda/expconsole-bench"
    log_stream_name = "bench"
    def get_remaining_time_in_millis(self):
        return 29000
event = json.loads({event!r})
start = time.perf_counter()
{statement}
imported = time.perf_counter()
{invoke}
done = time.perf_counter()
print(json.dumps({{"ms": (done - start) * 1000, "import_ms": (imported - start) * 1000,
                  "heavy": [m for m in {heavy!r} if m in sys.modules], "answer": answer}}))
"""
# The baseline's first request: the client as expconsole.aws creates it, and one read of the table.
BASELINE_REQUEST = """\
from botocore.config import Config
ddb = boto3.client("dynamodb", config=Config(retries={"total_max_attempts": 4, "mode": "standard"},
                                             max_pool_connections=50))
answer = ddb.get_item(TableName=os.environ["TABLE_NAME"], Key={"PK": {"S": "bench"}, "SK": {"S": "bench"}})
answer = answer["ResponseMetadata"]["HTTPStatusCode"]
"""

ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "expconsole-bench",
    "EVENTS_BUCKET": "expconsole-bench-events",
    "POWERTOOLS_SERVICE_NAME": "expconsole",
    "PYDANTIC_DISABLE_PLUGINS": "__all__",  # as template.yaml's Globals set it
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
    # --first-request: the code that invokes it (sets `answer`), its event, and the import's share.
    invoke: str = ""
    event: str = "{}"
    import_ms: list[float] = field(default_factory=list)
    logical_id: str = ""
    handler: str = "lambda_handler"

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)


@dataclass(frozen=True)
class Interpreter:
    """How the probes run: the venv's Python on the source tree, or the runtime's on the build."""

    command: tuple[str, ...] = (sys.executable, "-P")
    env: tuple[tuple[str, str], ...] = ()
    first_request: bool = False


def built_targets(build_dir: Path) -> tuple[Interpreter, list[Target]]:
    """The built stack as Lambda imports it (see expconsole_tools.local.artifact): python3.12, isolated,
    no site-packages, no bytecode written (Lambda's /var/task and /opt are read-only, so only the
    .pyc files the build shipped count); each function's code folder and layers before the
    standard library, the runtime's boto3 after it. The baseline imports the same three packages
    from the core layer and the runtime's folder."""
    from expconsole_tools.local.artifact import built_template, open_artifact
    from expconsole_tools.local.template import load_functions

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
                f"import {function.module_file.stem} as function",
                crud=name not in NOT_CRUD,
                logical_id=logical_id,
                handler=function.handler_name,
            )
        )
    return interpreter, out


def targets() -> list[Target]:
    from expconsole_tools.local.template import load_functions

    by_folder = {f.module_file.parent.resolve(): (lid, f) for lid, f in load_functions(TEMPLATE).items()}
    baseline = Target(BASELINE, "", BASELINE_IMPORT, crud=False)
    functions = []
    for app in sorted(FUNCTIONS.glob("*/app.py")):
        logical_id, function = by_folder.get(app.parent.resolve(), ("", None))
        functions.append(
            Target(
                app.parent.name,
                f"sys.path.insert(0, {str(app.parent)!r})",
                "import app as function",
                crud=app.parent.name not in NOT_CRUD,
                logical_id=logical_id,
                handler=function.handler_name if function else "lambda_handler",
            )
        )
    return [baseline, *functions]


def sample_events(template: Path) -> dict[str, dict[str, Any]]:
    """Each function's first request: a sample event of events/ for it (a GET where it has one).

    Functions only EventBridge invokes (pulse loads, imports) have none here: they are not
    request-serving, and their first invocation is a run, not a request."""
    from expconsole_tools.local.template import load_api

    api = load_api(template)
    owners = {route.route_key: route.function.logical_id for route in api.routes}
    streams = [function.logical_id for function in api.stream_functions]
    chosen: dict[str, dict[str, Any]] = {}
    for path in sorted(EVENTS.glob("*.json")):
        event = json.loads(path.read_text())
        if "Records" in event:
            owner = streams[0] if streams else ""
        else:
            owner = owners.get(event.get("routeKey", ""), "")
        if not owner:
            continue
        is_get = event.get("requestContext", {}).get("http", {}).get("method") == "GET"
        if owner not in chosen or is_get:
            chosen[owner] = event
    return chosen


@contextlib.contextmanager
def storage(events: dict[str, dict[str, Any]]) -> Iterator[dict[str, str]]:
    """A moto server holding the stack's table and bucket, with what the sample events need: the
    keys they present (registered, so each first request includes the key's lookup, as in AWS)
    and built SDK documents. Yields the probes' environment."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stdout
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}"}
    saved = {k: os.environ.get(k) for k in {**ENV, **env}}
    os.environ.update({**ENV, **env})
    os.environ.pop("LAMBDA_TASK_ROOT")  # the set-up below runs as the local server does, untraced
    try:
        from expconsole import aws
        from expconsole.services import keys
        from expconsole.services.sdk import documents
        from expconsole.store import dynamo

        aws.reset()
        dynamo.create_table()
        aws.client("s3").create_bucket(Bucket=ENV["EVENTS_BUCKET"])
        for event in events.values():
            for name in ("service-api-key", "statsig-api-key"):
                presented = (event.get("headers") or {}).get(name)
                if presented:
                    keys.create_key(
                        "console" if presented.startswith("console-") else "server", key=presented
                    )
        documents.rebuild()
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


FUNCTION_REQUEST = """\
answer = function.{handler}(event, Context())
if isinstance(answer, dict):
    answer = answer.get("statusCode", 200)
else:
    answer = 200
"""


def with_first_requests(
    interpreter: Interpreter,
    all_targets: list[Target],
    template: Path,
    env: dict[str, str],
    events: dict[str, dict[str, Any]],
) -> tuple[Interpreter, list[Target]]:
    """The targets that have a first request, each with its event and invocation."""
    out = []
    for target in all_targets:
        if target.name == BASELINE:
            target.invoke = BASELINE_REQUEST
        elif target.logical_id in events:
            target.event = json.dumps(events[target.logical_id])
            target.invoke = FUNCTION_REQUEST.format(handler=target.handler)
        else:
            continue
        out.append(target)
    first = Interpreter(interpreter.command, (*interpreter.env, *env.items()), first_request=True)
    return first, out


def probe_environment(interpreter: Interpreter) -> dict[str, str]:
    """The probe's environment. On the source tree, without PYTHONDONTWRITEBYTECODE (which some
    shells and CI images set): the unmeasured first import must write our modules' bytecode, as
    pip wrote the installed packages', or every measured import would compile them from source
    (docs/performance.md, 'Cold start'). The built stack's
    interpreter runs with -B anyway: the build ships the bytecode, as Lambda's read-only code
    folders need."""
    env = {**os.environ, **ENV, **dict(interpreter.env)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(target: Target, interpreter: Interpreter) -> None:
    """Import the target once in a new interpreter and record the time or the error."""
    if interpreter.first_request:
        code = REQUEST_PROBE.format(
            setup=target.setup,
            statement=target.statement,
            invoke=target.invoke,
            event=target.event,
            heavy=HEAVY,
        )
    else:
        code = PROBE.format(setup=target.setup, statement=target.statement, heavy=HEAVY)
    # -P (or -I): no script directory or cwd on sys.path, so only the directories we add are searched.
    result = subprocess.run(
        [*interpreter.command, "-c", code],
        cwd=ROOT,
        env=probe_environment(interpreter),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        target.error = lines[-1] if lines else f"exit status {result.returncode}"
        return
    report = json.loads(result.stdout.strip().splitlines()[-1])
    answer = report.get("answer", 200)
    if not isinstance(answer, int) or answer >= 500:
        target.error = f"the first request failed: {answer}"
        return
    target.times_ms.append(report["ms"])
    target.import_ms.append(report.get("import_ms", report["ms"]))
    target.heavy.update(report["heavy"])


_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(command: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Instructions a process executes, counted by cachegrind (no cache simulation: the count
    alone), with its exit output; -1 when it failed."""
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={scratch}/out",
                *command,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    found = _I_REFS.search(result.stderr)
    if result.returncode != 0 or not found:
        return -1, result.stdout, result.stderr
    return int(found.group(1).replace(",", "")), result.stdout, result.stderr


def count_instructions(target: Target, interpreter: Interpreter) -> None:
    """The import's instructions: a process that sets up and imports, less one that only sets up
    (the interpreter's own start-up is the same in both and is not the function's). With
    --first-request, also a process that imports and invokes: the import and the first request."""
    env = probe_environment(interpreter)
    bare = PROBE.format(setup=target.setup, statement="pass", heavy=HEAVY)
    imported = PROBE.format(setup=target.setup, statement=target.statement, heavy=HEAVY)
    runs = [bare, imported]
    if interpreter.first_request:
        runs.append(
            REQUEST_PROBE.format(
                setup=target.setup,
                statement=target.statement,
                invoke=target.invoke,
                event=target.event,
                heavy=HEAVY,
            )
        )
    counts, stdout, stderr = [], "", ""
    for code in runs:
        count, stdout, stderr = instructions([*interpreter.command, "-c", code], env)
        if count < 0:
            lines = [line for line in stderr.strip().splitlines() if not line.startswith("==")]
            target.error = lines[-1] if lines else "the count failed"
            return
        counts.append(count)
    report = json.loads(stdout.strip().splitlines()[-1])
    answer = report.get("answer", 200)
    if not isinstance(answer, int) or answer >= 500:
        target.error = f"the first request failed: {answer}"
        return
    # Millions of instructions, in the timing slots: the whole, and the import's share.
    target.times_ms.append((counts[-1] - counts[0]) / 1e6)
    target.import_ms.append((counts[1] - counts[0]) / 1e6)
    target.heavy.update(report["heavy"])


def run_instructions(build_dir: Path | None, first_request: bool = False) -> list[Target]:
    """Count every target once; two at a time per core is fine, since the count is not a time."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    interpreter, all_targets = built_targets(build_dir) if build_dir else (Interpreter(), targets())
    if not first_request:
        return _count_all(interpreter, all_targets)
    from expconsole_tools.local.artifact import built_template

    template = built_template(build_dir) if build_dir else TEMPLATE
    events = sample_events(template)
    with storage(events) as env:
        interpreter, all_targets = with_first_requests(interpreter, all_targets, template, env, events)
        return _count_all(interpreter, all_targets)


def _count_all(interpreter: Interpreter, all_targets: list[Target]) -> list[Target]:
    for target in all_targets:  # as in _measure_all: the first import writes the bytecode cache
        measure(target, interpreter)
        target.times_ms.clear()
        target.import_ms.clear()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda target: count_instructions(target, interpreter), all_targets))
    return all_targets


def report_instructions(all_targets: list[Target], first_request: bool = False) -> bool:
    """The table of counts; True when every import worked and every CRUD function is within budget."""
    baseline = all_targets[0]
    if baseline.error:
        print(f"baseline import failed: {baseline.error}")
        return False
    base = baseline.times_ms[0]
    what = "the import and the first request" if first_request else "the import"
    print(f"Instructions executed by {what} (cachegrind), once each; CRUD budget: {BUDGET}x baseline")
    if first_request:
        print(f"baseline = `{BASELINE_IMPORT}`, a DynamoDB client, one GetItem\n")
    else:
        print(f"baseline = `{BASELINE_IMPORT}`\n")
    header = (
        f"{'target':<20} {'kind':<5} {'M instr':>9} {'x base':>7}  {'budget':<6} "
        + ("import M  " if first_request else "")
        + "numpy/scipy/pyarrow/duckdb"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for target in all_targets:
        kind = "-" if target.name == BASELINE else ("CRUD" if target.crud else "stats")
        if target.error:
            print(f"{target.name:<20} {kind:<5} {'failed: ' + target.error}")
            ok = False
            continue
        count = target.times_ms[0]
        status = verdict(target, base)
        heavy = ", ".join(sorted(target.heavy)) or "none"
        share = f"{target.import_ms[0]:>8.1f}  " if first_request else ""
        print(f"{target.name:<20} {kind:<5} {count:>9.1f} {count / base:>7.3f}  {status:<6} {share}{heavy}")
        if target.crud and (status == "FAIL" or target.heavy):
            ok = False
    return ok


def run(repeat: int, build_dir: Path | None = None, first_request: bool = False) -> list[Target]:
    """Measure every target `repeat` times, interleaved so that drift hits all of them alike."""
    interpreter, all_targets = built_targets(build_dir) if build_dir else (Interpreter(), targets())
    if not first_request:
        return _measure_all(interpreter, all_targets, repeat)
    from expconsole_tools.local.artifact import built_template

    template = built_template(build_dir) if build_dir else TEMPLATE
    events = sample_events(template)
    with storage(events) as env:
        interpreter, all_targets = with_first_requests(interpreter, all_targets, template, env, events)
        return _measure_all(interpreter, all_targets, repeat)


def _measure_all(interpreter: Interpreter, all_targets: list[Target], repeat: int) -> list[Target]:
    # An unmeasured first import writes the function's bytecode cache, as the baseline's
    # packages already have theirs in site-packages (from a build, -B: nothing is written, and
    # this run only warms the file cache).
    for target in all_targets:
        measure(target, interpreter)
        target.times_ms.clear()
        target.import_ms.clear()
    for _ in range(repeat):
        for target in all_targets:
            if not target.error:
                measure(target, interpreter)
    return all_targets


def ratio_interval(times: list[float], base: list[float], seed: int = 0) -> tuple[float, float]:
    """A 95% bootstrap interval of median(times) / median(base).

    On a shared machine one fresh interpreter's import time varies by 20-30% from the next
    (CPU time as much as wall time), so a ratio of medians over a few runs moves by several
    hundredths between runs; the interval says whether a ratio near the budget is over it or
    only noise. Resampled with a fixed seed, so one run's table is reproducible from its runs."""
    if len(times) < 2 or len(base) < 2:
        ratio = statistics.median(times) / statistics.median(base)
        return ratio, ratio
    rng = random.Random(seed)

    def resampled_median(values: list[float]) -> float:
        return statistics.median(rng.choices(values, k=len(values)))

    ratios = sorted(resampled_median(times) / resampled_median(base) for _ in range(RESAMPLES))
    return ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


def verdict(target: Target, baseline_ms: float) -> str:
    if target.error:
        return "ERROR"
    if not target.crud:
        return "-"
    return "PASS" if target.median <= BUDGET * baseline_ms else "FAIL"


def report(all_targets: list[Target], repeat: int, first_request: bool = False) -> bool:
    """Print the table; True when every import worked and every CRUD function is within budget and light."""
    baseline = all_targets[0]
    if baseline.error:
        print(f"baseline import failed: {baseline.error}")
        return False
    base_ms = baseline.median
    if first_request:
        print(
            f"Import + first request, fresh interpreter, {repeat} runs each; CRUD budget: {BUDGET}x baseline"
        )
        print(f"baseline = `{BASELINE_IMPORT}`, a DynamoDB client, one GetItem")
    else:
        print(f"Import time in a fresh interpreter, {repeat} runs each; CRUD budget: {BUDGET}x baseline")
        print(f"baseline = `{BASELINE_IMPORT}`")
    print("x base: median / baseline's median; 95% CI: bootstrap interval of that ratio\n")
    header = (
        f"{'target':<20} {'kind':<5} {'median ms':>10} {'min ms':>8} {'x base':>7} {'95% CI':>11}  "
        f"{'budget':<6} " + ("import ms  " if first_request else "") + "numpy/scipy/pyarrow/duckdb"
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
        low, high = ratio_interval(target.times_ms, baseline.times_ms)
        interval = f"{low:.2f}-{high:.2f}"
        share = f"{statistics.median(target.import_ms):>9.1f}  " if first_request else ""
        print(
            f"{target.name:<20} {kind:<5} {target.median:>10.1f} {min(target.times_ms):>8.1f} "
            f"{ratio:>7.2f} {interval:>11}  {status:<6} {share}{heavy}"
        )
        if target.crud and (status == "FAIL" or target.heavy):
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat", type=int, default=15, help="fresh-interpreter runs per target (default 15)"
    )
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
    parser.add_argument(
        "--first-request",
        action="store_true",
        help="measure the import plus the first invocation of each function's sample event (events/), "
        "against a moto server, beside a baseline that also creates a DynamoDB client and reads once",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions each import (with --first-request: and first request) executes "
        "(valgrind's cachegrind, one run each) instead of timing it",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.build_dir is not None:
        print(f"Built stack: {args.build_dir} (the runtime's interpreter, as Lambda imports each function)")
    if args.instructions:
        counted = run_instructions(args.build_dir, args.first_request)
        ok = report_instructions(counted, args.first_request)
        return 1 if args.check and not ok else 0
    ok = report(run(args.repeat, args.build_dir, args.first_request), args.repeat, args.first_request)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
