"""Fault injection: storage failing at each step of a create, update, archive, delete, ingest and pulse load.

The promise under test: with DynamoDB or S3 throttling, failing (5xx) or not answering at any
step of a request, the API answers 503 (or succeeds, when a retry within its budget recovers),
never a 500, and the stored state is the old one or the new one, never a mix. A retry of the
same request then leaves the new state.

How faults are injected. moto answers boto3 from a `before-send` hook (BotocoreStubber); the
`storage` fixture wraps it, so a fault is what AWS could answer on the wire: a throttling error,
a 5xx, a read timeout before the request reaches storage, a response lost after storage applied
the request, a refused connection, a cancelled transaction. botocore's own retries (standard
mode with the attempts of `expconsole.aws`) see it as they would in AWS. The attempts of one
logical call share an `amz-sdk-invocation-id`; a `Fault` names an operation, which of its
logical calls fail and how many attempts of each: all (the failure outlasts botocore's retries
and reaches our code) or only the first (a retry recovers). DynamoDB's idempotent
TransactWriteItems (botocore fills in a ClientRequestToken and reuses it on its retries) is
simulated, since moto ignores the token. Backoff sleeps are recorded, not slept.

Each scenario's setup runs once in a base table and bucket; a clean run of the request in a copy
gives the new state and counts the logical calls of every storage operation; then each step
(the n-th call of each operation) fails, in a fresh copy, for each kind of failure (reads only
throttled or timed out: every other kind reaches the same code, and moto is slow enough that
each pairing costs). A pulse load makes ~150 storage calls: every DynamoDB write fails in turn,
and the first, middle and last call of every other operation (`pulse_faults`).

A holdout delete detaches its experiments and deletes itself in one transaction, and a failed
pulse load's history message names no storage internals.
"""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from moto.core.botocore_stubber import BotocoreStubber, MockRawResponse

from expconsole import aws as aws_clients
from expconsole import config, kinds
from expconsole.services import entities, keys
from expconsole.services import ingest as ingest_service
from expconsole.store import dynamo, event_counters, group_stats, pulse_runs, s3
from tests.conftest import LAMBDA_CONTEXT, TEST_KEYS, Caller, http_event

# --- the storage on the wire ----------------------------------------------------------------------

TABLE_PREFIX = "faults-table"
DETAIL = "arn:aws:dynamodb:us-east-1:123456789012:table/faults-table-internal"
# What no error body may contain: table, bucket, ARNs, AWS codes and operation names, exception names.
INTERNALS = (
    TABLE_PREFIX,
    "arn:aws",
    "Traceback",
    "botocore",
    "ClientError",
    "Exception",
    "Throughput",
    "ThrottlingException",
    "SlowDown",
    "InternalServerError",
    "TransactWriteItems",
    "BatchWriteItem",
    "PutItem",
    "PutObject",
    "GetObject",
    "ListObjects",
    "Timeout",
    "endpoint",
)

JSON_10 = {"Content-Type": "application/x-amz-json-1.0"}
DYNAMODB_ERRORS = {
    "throttle": (400, "ProvisionedThroughputExceededException"),
    "throttling": (400, "ThrottlingException"),
    "5xx": (500, "InternalServerError"),
    "unavailable": (503, "ServiceUnavailable"),
}
S3_ERRORS = {
    "throttle": (503, "SlowDown"),
    "throttling": (503, "SlowDown"),
    "5xx": (500, "InternalError"),
    "unavailable": (503, "ServiceUnavailable"),
}
CANCELLATIONS = {"conflict": "TransactionConflict", "cancelled-throttle": "ThrottlingError"}
# Failures that outlast botocore's retries, by kind; `lost`: storage applied the request, the
# response never came back.
FAILURES = ["throttle", "5xx", "timeout", "lost", "connection"]
# Failures of one attempt, which botocore's retry recovers.
TRANSIENT = ["throttle", "throttling", "5xx", "timeout", "lost"]
READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "GetObject", "HeadObject", "ListObjectsV2"})
READ_FAILURES = frozenset({"throttle", "timeout"})


@dataclass(frozen=True)
class Fault:
    op: str  # "<service>.<Operation>", e.g. "dynamodb.TransactWriteItems"
    calls: frozenset[int]  # which logical calls of the operation fail (1-based)
    kind: str
    attempts: int | None = None  # failing attempts of each such call; None: every attempt

    @classmethod
    def at(cls, op: str, call: int, kind: str, attempts: int | None = None) -> Fault:
        return cls(op, frozenset([call]), kind, attempts)


def _header(request: Any, name: str) -> str:
    value = request.headers.get(name)
    return value.decode() if isinstance(value, bytes) else str(value)


def _json_response(request: Any, status: int, body: dict[str, Any]) -> AWSResponse:
    return AWSResponse(request.url, status, JSON_10, MockRawResponse(json.dumps(body)))


class Storage:
    """Counts the logical storage calls of a request and fails the ones a Fault names."""

    def __init__(self) -> None:
        self.armed = False
        self.faults: list[Fault] = []
        self.counts: Counter[str] = Counter()
        self.injected: list[tuple[str, int, int, str]] = []
        self.sleeps: list[float] = []
        self._calls: dict[str, tuple[str, int]] = {}
        self._attempts: Counter[str] = Counter()
        self._applied_tokens: set[str] = set()

    def arm(self, *faults: Fault) -> None:
        self.faults = list(faults)
        self.counts.clear()
        self.injected.clear()
        self.sleeps.clear()
        self._calls.clear()
        self._attempts.clear()
        self.armed = True

    def disarm(self) -> None:
        self.armed = False
        self.faults = []

    def handle(self, real: Callable[..., Any], stubber: Any, event_name: str, request: Any, **kw: Any) -> Any:
        op = event_name.removeprefix("before-send.")

        def send() -> Any:
            return self._send(op, real, stubber, event_name, request, **kw)

        if not self.armed:
            return send()
        invocation = _header(request, "amz-sdk-invocation-id")
        if invocation not in self._calls:
            self.counts[op] += 1
            self._calls[invocation] = (op, self.counts[op])
        index = self._calls[invocation][1]
        self._attempts[invocation] += 1
        attempt = self._attempts[invocation]
        for fault in self.faults:
            if (
                fault.op == op
                and index in fault.calls
                and (fault.attempts is None or attempt <= fault.attempts)
            ):
                self.injected.append((op, index, attempt, fault.kind))
                return self._fail(fault.kind, op, request, send)
        return send()

    def _send(
        self, op: str, real: Callable[..., Any], stubber: Any, event_name: str, request: Any, **kw: Any
    ) -> Any:
        """moto's answer, with DynamoDB's idempotency of TransactWriteItems by ClientRequestToken."""
        token = None
        if op == "dynamodb.TransactWriteItems":
            token = json.loads(request.body).get("ClientRequestToken")
            if token in self._applied_tokens:
                return _json_response(request, 200, {})
        response = real(stubber, event_name, request, **kw)
        if token and response is not None and response.status_code == 200:
            self._applied_tokens.add(token)
        return response

    def _fail(self, kind: str, op: str, request: Any, send: Callable[[], Any]) -> Any:
        service = op.partition(".")[0]
        if kind == "timeout":
            raise ReadTimeoutError(endpoint_url=request.url)
        if kind == "connection":
            raise EndpointConnectionError(endpoint_url=request.url)
        if kind == "lost":
            send()
            raise ReadTimeoutError(endpoint_url=request.url)
        message = f"Rate exceeded or failure for table {TABLE_PREFIX}-internal ({DETAIL})"
        if kind in CANCELLATIONS:
            assert op == "dynamodb.TransactWriteItems", f"{kind} is a transaction's answer, not {op}'s"
            items = json.loads(request.body)["TransactItems"]
            reasons = [{"Code": CANCELLATIONS[kind], "Message": "held by another transaction"}]
            reasons += [{"Code": "None"}] * (len(items) - 1)
            return _json_response(
                request,
                400,
                {
                    "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                    "Message": f"Transaction cancelled [{CANCELLATIONS[kind]}]",
                    "CancellationReasons": reasons,
                },
            )
        if service == "dynamodb":
            status, code = DYNAMODB_ERRORS[kind]
            return _json_response(
                request, status, {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
            )
        status, code = S3_ERRORS[kind]
        body = f"<Error><Code>{code}</Code><Message>{message}</Message><RequestId>r</RequestId></Error>"
        return AWSResponse(request.url, status, {"Content-Type": "application/xml"}, MockRawResponse(body))


@pytest.fixture
def storage(aws: None, monkeypatch: pytest.MonkeyPatch) -> Storage:
    st = Storage()
    real = BotocoreStubber.__call__

    def call(stubber: Any, event_name: str, request: Any, **kw: Any) -> Any:
        return st.handle(real, stubber, event_name, request, **kw)

    monkeypatch.setattr(BotocoreStubber, "__call__", call)
    monkeypatch.setattr(time, "sleep", st.sleeps.append)
    return st


# --- tables, buckets and what they hold -----------------------------------------------------------


class Ids:
    """Deterministic ids for rules and groups, so two runs of a request store the same documents."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self, length: int = 22) -> str:
        self.next += 1
        return f"R{self.next:0{length - 1}d}"


@dataclass
class State:
    items: dict[tuple[str, str], dict[str, Any]]
    objects: dict[str, bytes]
    reads: dict[str, tuple[int, Any]] = field(default_factory=dict)


class Env:
    """A table and bucket per run (copies of a base), a fixed clock, fixed ids and callers."""

    def __init__(self, storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
        self.storage = storage
        self.monkeypatch = monkeypatch
        self._names = itertools.count()
        self.now = int(dt.datetime(2026, 3, 10, 6, tzinfo=dt.UTC).timestamp() * 1000)
        self.ids = Ids()
        self.callers: dict[str, Caller] = {}
        monkeypatch.setattr(entities, "now_ms", lambda: self.now)
        monkeypatch.setattr(entities, "new_id", self.ids)
        # A warm sandbox, whose key check answers from its cache for the whole test: the faults
        # go to the request's own storage calls (a failing key read: tests/functional/test_auth.py).
        monkeypatch.setenv("KEY_CACHE_SECONDS", "86400")
        keys.reset_cache()
        assert keys.cache().resolve(TEST_KEYS["console"]) and keys.cache().resolve(TEST_KEYS["server"])

    def call(self, function: str, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        if function not in self.callers:
            self.callers[function] = Caller(function)
        return self.callers[function](method, path, body, **kw)

    def use(self, name: str) -> None:
        self.monkeypatch.setenv("TABLE_NAME", f"{TABLE_PREFIX}-{name}")
        self.monkeypatch.setenv("EVENTS_BUCKET", f"{TABLE_PREFIX}-{name}-events")

    def new_store(self) -> str:
        name = str(next(self._names))
        self.use(name)
        dynamo.create_table()
        s3.create_bucket()
        return name

    def copy_of(self, source: str) -> str:
        """A new table and bucket holding what `source`'s hold; it becomes the one in use."""
        self.use(source)
        items = list(_scan())
        objects = _objects()
        name = self.new_store()
        ddb = aws_clients.client("dynamodb")
        for start in range(0, len(items), 25):
            chunk = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
            assert not ddb.batch_write_item(RequestItems={config.table_name(): chunk}).get("UnprocessedItems")
        for key, body in objects.items():
            s3.put_object(key, body)
        return name

    def state(self, reads: tuple[tuple[str, str], ...] = ()) -> State:
        items = {(i["PK"]["S"], i["SK"]["S"]): i for i in _scan()}
        out = State(items, _objects())
        for function, path in reads:
            status, body = self.call(function, "GET", path)
            out.reads[f"{function} {path}"] = (status, body.get("data") if status == 200 else None)
        return out


def _scan() -> Iterator[dict[str, Any]]:
    for page in aws_clients.client("dynamodb").get_paginator("scan").paginate(TableName=config.table_name()):
        yield from page["Items"]


def _objects() -> dict[str, bytes]:
    return {key: s3.get(key) for key in s3.keys("")}


@pytest.fixture
def env(storage: Storage, monkeypatch: pytest.MonkeyPatch) -> Env:
    return Env(storage, monkeypatch)


def assert_safe_503(status: int, body: Any, where: str) -> None:
    assert status == 503, f"{where}: answered {status} {body}"
    assert isinstance(body, dict) and body.get("status") == 503 and body.get("message"), f"{where}: {body}"
    assert set(body) <= {"status", "message", "errors"}, f"{where}: {body}"
    text = json.dumps(body)
    leaked = [word for word in INTERNALS if word.lower() in text.lower()]
    assert not leaked, f"{where}: the error body names {leaked}: {body}"


# --- entities: create, update, archive, delete --------------------------------------------------------

GATES = "/console/v1/gates"
EXPERIMENTS = "/console/v1/experiments"
HOLDOUTS = "/console/v1/holdouts"
RULES = [{"name": "beta", "passPercentage": 10, "conditions": [{"type": "public"}]}]


@dataclass
class Scenario:
    id: str
    function: str
    method: str
    path: str
    body: Any = None
    setup: list[tuple[str, str, str, Any]] = field(default_factory=list)  # (function, method, path, body)
    reads: tuple[tuple[str, str], ...] = ()  # API reads compared between the old and new state

    def prepare(self, env: Env) -> str:
        base = env.new_store()
        for function, method, path, body in self.setup:
            status, out = env.call(function, method, path, body)
            assert status in (200, 201), (self.id, path, out)
        return base


def _gate(gate_id: str) -> tuple[str, str, str, Any]:
    return ("gates", "POST", GATES, {"name": gate_id, "id": gate_id, "rules": RULES})


def _experiment(exp_id: str, **fields: Any) -> tuple[str, str, str, Any]:
    return ("experiments", "POST", EXPERIMENTS, {"name": exp_id, "id": exp_id, **fields})


def _reads(function: str, base: str, *ids: str) -> tuple[tuple[str, str], ...]:
    return tuple((function, f"{base}/{i}{suffix}") for i in ids for suffix in ("", "/versions"))


HOLDOUT_READS = _reads("holdouts", HOLDOUTS, "hold1") + _reads("experiments", EXPERIMENTS, "exp1", "exp2")
ENTITY_SCENARIOS = [
    Scenario(
        "gate-create",
        "gates",
        "POST",
        GATES,
        {"name": "gate1", "rules": RULES},
        reads=_reads("gates", GATES, "gate1"),
    ),
    Scenario(
        "gate-update",
        "gates",
        "PATCH",
        f"{GATES}/gate1",
        {"version": 2, "description": "changed", "rules": [*RULES, {**RULES[0], "name": "second"}]},
        setup=[_gate("gate1"), ("gates", "PUT", f"{GATES}/gate1/disable", None)],
        reads=_reads("gates", GATES, "gate1"),
    ),
    Scenario(
        "gate-archive",
        "gates",
        "PUT",
        f"{GATES}/gate1/archive",
        {"archiveReason": "done"},
        setup=[_gate("gate1")],
        reads=_reads("gates", GATES, "gate1"),
    ),
    Scenario(
        "gate-delete",
        "gates",
        "DELETE",
        f"{GATES}/gate1",
        setup=[_gate("gate1"), ("gates", "PUT", f"{GATES}/gate1/disable", None), _gate("gate2")],
        reads=_reads("gates", GATES, "gate1", "gate2"),
    ),
    Scenario(
        "experiment-create",
        "experiments",
        "POST",
        EXPERIMENTS,
        {"name": "exp1", "targetingGateID": "gate1", "hypothesis": "h"},
        setup=[_gate("gate1")],
        reads=_reads("experiments", EXPERIMENTS, "exp1"),
    ),
    Scenario(
        "experiment-update",
        "experiments",
        "PATCH",
        f"{EXPERIMENTS}/exp1",
        {"version": 1, "description": "changed", "tags": ["web"]},
        setup=[_experiment("exp1")],
        reads=_reads("experiments", EXPERIMENTS, "exp1"),
    ),
    Scenario(
        "experiment-archive",
        "experiments",
        "PUT",
        f"{EXPERIMENTS}/exp1/archive",
        {"archiveReason": "done"},
        setup=[_experiment("exp1")],
        reads=_reads("experiments", EXPERIMENTS, "exp1"),
    ),
    Scenario(
        "experiment-delete",
        "experiments",
        "DELETE",
        f"{EXPERIMENTS}/exp1",
        setup=[_experiment("exp1"), ("experiments", "PATCH", f"{EXPERIMENTS}/exp1", {"description": "v2"})],
        reads=_reads("experiments", EXPERIMENTS, "exp1"),
    ),
    Scenario(
        "holdout-create-linking-experiments",
        "holdouts",
        "POST",
        HOLDOUTS,
        {"name": "hold1", "experimentIDs": ["exp1", "exp2"]},
        setup=[_experiment("exp1"), _experiment("exp2")],
        reads=HOLDOUT_READS,
    ),
    Scenario(
        "holdout-archive-detaching-experiments",
        "holdouts",
        "PUT",
        f"{HOLDOUTS}/hold1/archive",
        {"archiveReason": "done"},
        setup=[
            _experiment("exp1"),
            _experiment("exp2"),
            ("holdouts", "POST", HOLDOUTS, {"name": "hold1", "experimentIDs": ["exp1", "exp2"]}),
        ],
        reads=HOLDOUT_READS,
    ),
    Scenario(
        "experiment-update-joining-a-holdout",
        "experiments",
        "PATCH",
        f"{EXPERIMENTS}/exp2",
        {"version": 1, "holdoutIDs": ["hold1"]},
        setup=[
            _experiment("exp1"),
            _experiment("exp2"),
            ("holdouts", "POST", HOLDOUTS, {"name": "hold1", "experimentIDs": ["exp1"]}),
        ],
        reads=HOLDOUT_READS,
    ),
]
HOLDOUT_DELETE = Scenario(
    "holdout-delete-detaching-experiments",
    "holdouts",
    "DELETE",
    f"{HOLDOUTS}/hold1",
    setup=[
        _experiment("exp1"),
        _experiment("exp2"),
        ("holdouts", "POST", HOLDOUTS, {"name": "hold1", "experimentIDs": ["exp1", "exp2"]}),
    ],
    reads=HOLDOUT_READS,
)


@dataclass
class Run:
    status: int
    body: Any
    state: State
    counts: Counter[str]
    injected: list[tuple[str, int, int, str]]
    sleeps: list[float]


class Runner:
    """Runs one scenario's request in copies of its base store, clean or with faults."""

    def __init__(self, env: Env, scenario: Scenario) -> None:
        self.env = env
        self.scenario = scenario
        self.base = scenario.prepare(env)
        self.first_id = env.ids.next
        env.copy_of(self.base)
        self.old = env.state(scenario.reads)
        self.clean = self.run()
        assert self.clean.status in (200, 201, 202), (scenario.id, self.clean.body)
        self.new = self.clean.state
        assert self.new.items != self.old.items, scenario.id

    def run(self, *faults: Fault, copy: bool = False) -> Run:
        env, sc = self.env, self.scenario
        if copy:
            env.copy_of(self.base)
        env.ids.next = self.first_id
        env.storage.arm(*faults)
        try:
            status, body = env.call(sc.function, sc.method, sc.path, sc.body)
        finally:
            st = env.storage
            counts, injected, sleeps = Counter(st.counts), list(st.injected), list(st.sleeps)
            st.disarm()
        return Run(status, body, env.state(sc.reads), counts, injected, sleeps)

    def steps(self, kind: str) -> Iterator[tuple[str, int]]:
        """Every logical call of the clean run; reads only for READ_FAILURES (they reach the same
        code whichever way they fail, and moto is slow enough to make every pairing costly)."""
        for op, count in sorted(self.clean.counts.items()):
            if op.partition(".")[2] in READS and kind not in READ_FAILURES:
                continue
            for index in range(1, count + 1):
                yield op, index

    def which(self, state: State) -> str | None:
        if state.items == self.old.items and state.reads == self.old.reads:
            return "old"
        if state.items == self.new.items and state.reads == self.new.reads:
            return "new"
        return None

    def describe_mix(self, state: State) -> str:
        changed = sorted(
            k for k in set(state.items) | set(self.old.items) if state.items.get(k) != self.old.items.get(k)
        )
        unlike_new = sorted(
            k for k in set(state.items) | set(self.new.items) if state.items.get(k) != self.new.items.get(k)
        )
        reads = {k: v[0] for k, v in state.reads.items()}
        return f"items changed from old: {changed}; differing from new: {unlike_new}; reads: {reads}"


def check_failed_step(runner: Runner, fault: Fault) -> list[str]:
    """A step failing past botocore's retries: a 503, old or new state, and a retry that ends new."""
    where = f"{runner.scenario.id}: {fault.op} call {min(fault.calls)} failing ({fault.kind})"
    run = runner.run(fault, copy=True)
    problems = []
    if not run.injected:
        return [f"{where}: the step was never reached (calls: {dict(run.counts)})"]
    try:
        assert_safe_503(run.status, run.body, where)
    except AssertionError as exc:
        problems.append(str(exc))
    seen = runner.which(run.state)
    if seen is None:
        problems.append(f"{where}: a mix of the old and new state: {runner.describe_mix(run.state)}")
    again = runner.run()
    if again.status >= 500 or runner.which(again.state) != "new":
        problems.append(
            f"{where}: the retry answered {again.status} {again.body} and left "
            f"{runner.which(again.state) or runner.describe_mix(again.state)}"
        )
    elif again.status >= 300 and seen != "new":
        problems.append(f"{where}: the retry answered {again.status} {again.body} though nothing was applied")
    return problems


@pytest.mark.parametrize("kind", FAILURES)
@pytest.mark.parametrize("scenario", ENTITY_SCENARIOS, ids=[s.id for s in ENTITY_SCENARIOS])
def test_an_entity_write_failing_at_any_step_is_a_503_that_leaves_the_old_or_the_new_state(
    env: Env, scenario: Scenario, kind: str
) -> None:
    runner = Runner(env, scenario)
    problems = []
    for op, index in runner.steps(kind):
        problems += check_failed_step(runner, Fault.at(op, index, kind))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", ["throttle", "timeout"])
def test_a_holdout_delete_failing_at_any_step_leaves_the_old_or_the_new_state(env: Env, kind: str) -> None:
    runner = Runner(env, HOLDOUT_DELETE)
    problems = []
    for op, index in runner.steps(kind):
        problems += check_failed_step(runner, Fault.at(op, index, kind))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("scenario", ENTITY_SCENARIOS, ids=[s.id for s in ENTITY_SCENARIOS])
def test_a_failure_that_a_retry_within_the_budget_recovers_is_invisible(env: Env, scenario: Scenario) -> None:
    """One failed attempt at any step: botocore retries it, the request succeeds, the state is new."""
    runner = Runner(env, scenario)
    problems = []
    for kind in TRANSIENT:
        for op, index in runner.steps(kind):
            run = runner.run(Fault.at(op, index, kind, attempts=1), copy=True)
            where = f"{scenario.id}: {op} call {index}, one attempt failing ({kind})"
            if (run.status, run.body) != (runner.clean.status, runner.clean.body):
                problems.append(f"{where}: answered {run.status} {run.body}")
            elif runner.which(run.state) != "new":
                problems.append(f"{where}: left {runner.describe_mix(run.state)}")
            if sum(run.sleeps) > 3:
                problems.append(f"{where}: backed off {sum(run.sleeps):.1f} s")
    assert not problems, "\n".join(problems)


# --- transaction conflicts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scenario", [s for s in ENTITY_SCENARIOS if s.method != "DELETE"], ids=lambda s: s.id
)
@pytest.mark.parametrize("cancellation", ["conflict", "cancelled-throttle"])
def test_a_cancelled_transaction_is_retried_then_a_503(
    env: Env, scenario: Scenario, cancellation: str
) -> None:
    """TransactionConflict (another transaction held an item) and throttling inside a transaction
    cancel it whole; the store retries a few times with backoff, then answers 503, nothing applied."""
    runner = Runner(env, scenario)
    op = "dynamodb.TransactWriteItems"
    assert runner.clean.counts[op] == 1, runner.clean.counts
    for times in (1, 2):
        run = runner.run(Fault(op, frozenset(range(1, times + 1)), cancellation), copy=True)
        assert (run.status, run.body) == (runner.clean.status, runner.clean.body), (times, run.body)
        assert runner.which(run.state) == "new"
        assert run.counts[op] == times + 1
    budget = dynamo.CONFLICT_RETRIES + 1
    run = runner.run(Fault(op, frozenset(range(1, 100)), cancellation), copy=True)
    assert_safe_503(run.status, run.body, f"{scenario.id} after {budget} cancelled transactions")
    assert run.counts[op] == budget
    assert runner.which(run.state) == "old"
    assert sum(run.sleeps) < 2, run.sleeps


# --- deleting an entity with more versions than one transaction holds ------------------------------------


def _entity(state: State, pk: str) -> tuple[dict[str, Any] | None, list[int]]:
    current = state.items.get((pk, "CURRENT"))
    snapshots = sorted(int(sk[2:]) for p, sk in state.items if p == pk and sk.startswith("V#"))
    return current, snapshots


VERSIONS = 100  # more than the 99 snapshots that fit one transaction with the current item


def test_deleting_a_long_history_failing_at_any_step_leaves_it_whole_or_gone(env: Env) -> None:
    """More than 99 snapshots do not fit one transaction with the current item: whatever step
    fails, the API shows the gate whole (every version) or gone (404, no versions), and creating
    the id again starts a fresh history."""
    base = env.new_store()
    env.call("gates", "POST", GATES, {"name": "gate1", "rules": RULES})
    first = dynamo.get(kinds.GATE, "gate1")
    assert first is not None
    history = [{**first, "version": v, "description": f"v{v}"} for v in range(2, VERSIONS + 1)]
    items = [dynamo._snapshot_item(kinds.GATE, "gate1", doc) for doc in history]
    items.append(dynamo._current_item(kinds.GATE, "gate1", history[-1]))
    for start in range(0, len(items), 25):
        chunk = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        aws_clients.client("dynamodb").batch_write_item(RequestItems={config.table_name(): chunk})
    reads = _reads("gates", GATES, "gate1")
    env.copy_of(base)
    old = env.state(reads)
    assert len(old.reads[f"gates {GATES}/gate1/versions"][1]) == 100  # the first page
    env.storage.arm()
    status, _ = env.call("gates", "DELETE", f"{GATES}/gate1")
    counts = Counter(env.storage.counts)
    env.storage.disarm()
    assert status == 200, _
    gone = env.state(reads)
    assert not [k for k in gone.items if k[0] == "GATE#gate1"]
    problems = []
    for op, count in sorted(counts.items()):
        for index in range(1, count + 1):
            for kind in ("throttle", "timeout"):
                if kind == "timeout" and op.partition(".")[2] in READS:
                    continue  # a timed-out read reaches the same code as a throttled one
                where = f"{op} call {index} ({kind})"
                env.copy_of(base)
                env.storage.arm(Fault.at(op, index, kind))
                status, body = env.call("gates", "DELETE", f"{GATES}/gate1")
                env.storage.disarm()
                try:
                    assert_safe_503(status, body, where)
                except AssertionError as exc:
                    problems.append(str(exc))
                after = env.state(reads)
                if after.reads != old.reads and after.reads != gone.reads:
                    problems.append(f"{where}: the API shows {[(k, v[0]) for k, v in after.reads.items()]}")
                current, snapshots = _entity(after, "GATE#gate1")
                if current is not None and "doc" in current and snapshots != list(range(1, VERSIONS + 1)):
                    problems.append(f"{where}: the gate is whole but holds snapshots {snapshots[:3]}...")
                status, body = env.call("gates", "POST", GATES, {"name": "gate1", "rules": RULES})
                if after.reads == gone.reads:
                    versions = env.call("gates", "GET", f"{GATES}/gate1/versions")[1]["data"]
                    numbers = [v["version"] for v in versions]
                    if status != 201 or numbers != [1]:
                        problems.append(f"{where}: created again: {status}, versions {numbers[:5]}")
    assert not problems, "\n".join(problems)


# --- ingestion -----------------------------------------------------------------------------------------

INGEST = "/v1/webhooks/event_webhook"
DAY_MS = 86_400_000


def _batch(now: int) -> list[dict[str, Any]]:
    """Events on three UTC days (three objects), two event names each day."""
    out = []
    for day in range(3):
        for i, name in enumerate(["buy", "view", "view"]):
            ts = now - day * DAY_MS - (i + 1) * 60_000
            out.append(
                {"event": name, "user": {"userID": f"u{i}"}, "timestamp": ts, "metadata": {"k": str(i)}}
            )
    return out


def _ingest_state() -> tuple[dict[str, list[dict[str, Any]]], dict[tuple[str, str], int], set[str]]:
    """(events per object, count per (day, name), counted object markers)."""
    objects = {
        key: [json.loads(line) for line in gzip.decompress(body).decode().splitlines()]
        for key, body in _objects().items()
    }
    counts: dict[tuple[str, str], int] = {}
    markers = set()
    for item in _scan():
        pk, sk = item["PK"]["S"], item["SK"]["S"]
        if pk.startswith("EVENTS#"):
            counts[(pk.removeprefix("EVENTS#"), sk)] = int(item["count"]["N"])
        elif pk.startswith("EVENTOBJ#"):
            markers.add(s3.object_key(pk.removeprefix("EVENTOBJ#"), sk.rsplit("#", 1)[0]))
    return objects, counts, markers


def _counted_by_markers(
    objects: dict[str, list[dict[str, Any]]], markers: set[str]
) -> dict[tuple[str, str], int]:
    out: Counter[tuple[str, str]] = Counter()
    for key in markers:
        day = key.split("date=")[1][:10]
        for line in objects.get(key, []):
            out[(day, line["event"])] += 1
    return dict(out)


@pytest.mark.parametrize("kind", FAILURES)
def test_ingestion_failing_at_any_step_counts_nothing_unstored_and_a_retry_stores_once(
    env: Env, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(ingest_service.time, "time", lambda: env.now / 1000)  # receivedTime
    body = _batch(env.now)
    base = env.new_store()
    env.copy_of(base)
    env.storage.arm()
    status, out = env.call("ingest", "POST", INGEST, body, key_kind="server")
    counts = Counter(env.storage.counts)
    env.storage.disarm()
    assert status == 202 and out["accepted"] == 9, out
    assert counts == {"s3.PutObject": 3, "dynamodb.TransactWriteItems": 3}, counts
    new = _ingest_state()
    problems = []
    for op, count in sorted(counts.items()):
        for index in range(1, count + 1):
            where = f"ingest: {op} call {index} ({kind})"
            env.copy_of(base)
            env.storage.arm(Fault.at(op, index, kind))
            status, out = env.call("ingest", "POST", INGEST, body, key_kind="server")
            env.storage.disarm()
            try:
                assert_safe_503(status, out, where)
                assert "Retry" in out["message"], out
            except AssertionError as exc:
                problems.append(str(exc))
            objects, counters, markers = _ingest_state()
            if not markers <= set(objects):
                problems.append(f"{where}: counted objects that are not stored: {markers - set(objects)}")
            if counters != _counted_by_markers(objects, markers):
                problems.append(f"{where}: counters {counters} are not the stored objects' events")
            if op == "s3.PutObject" and kind != "lost" and markers:
                problems.append(f"{where}: counted before every object was stored")
            status, out = env.call("ingest", "POST", INGEST, body, key_kind="server")
            if status != 202 or _ingest_state() != new:
                problems.append(f"{where}: the retry answered {status} and stored {_ingest_state()[1]}")
    assert not problems, "\n".join(problems)


def test_ingestion_recovers_from_one_failed_attempt_at_any_step(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_service.time, "time", lambda: env.now / 1000)
    body = _batch(env.now)
    base = env.new_store()
    env.copy_of(base)
    env.call("ingest", "POST", INGEST, body, key_kind="server")
    new = _ingest_state()
    problems = []
    for kind in [*TRANSIENT, "conflict"]:
        ops = (
            ["dynamodb.TransactWriteItems"]
            if kind == "conflict"
            else ["s3.PutObject", "dynamodb.TransactWriteItems"]
        )
        for op in ops:
            for index in (1, 3):
                env.copy_of(base)
                env.storage.arm(Fault.at(op, index, kind, attempts=1))
                status, _ = env.call("ingest", "POST", INGEST, body, key_kind="server")
                env.storage.disarm()
                if status != 202 or _ingest_state() != new:
                    problems.append(
                        f"{op} call {index}, one attempt ({kind}): {status}, {_ingest_state()[1]}"
                    )
    assert not problems, "\n".join(problems)


def test_ingestion_counter_conflicts_past_the_budget_are_a_503_and_the_retry_counts_once(env: Env) -> None:
    body = _batch(env.now)
    env.new_store()
    op = "dynamodb.TransactWriteItems"
    env.storage.arm(Fault(op, frozenset(range(1, 100)), "conflict"))
    status, out = env.call("ingest", "POST", INGEST, body, key_kind="server")
    assert env.storage.counts[op] == dynamo.CONFLICT_RETRIES + 1
    env.storage.disarm()
    assert_safe_503(status, out, "counter conflicts")
    objects, counters, markers = _ingest_state()
    assert len(objects) == 3 and not counters and not markers
    assert env.call("ingest", "POST", INGEST, body, key_kind="server")[0] == 202
    objects, counters, markers = _ingest_state()
    assert counters == _counted_by_markers(objects, markers) and sum(counters.values()) == 9
    assert event_counters.for_event("view")[0]["count"] == 2


# --- pulse loads ----------------------------------------------------------------------------------------

PULSE_START = int(dt.datetime(2026, 3, 10, 6, tzinfo=dt.UTC).timestamp() * 1000)
FIRST_LOAD = PULSE_START + 2 * DAY_MS + 6 * 3_600_000
SECOND_LOAD = FIRST_LOAD + DAY_MS
PULSE_METRICS = [{"name": "purchase", "type": "event_count"}, {"name": "view", "type": "event_dau"}]


def _pulse_events(exp: dict[str, Any], until: int, seed: int) -> list[dict[str, Any]]:
    groups = [g["id"] for g in exp["groups"]]
    out = []
    for u in range(24):
        user = {"userID": f"u{u}"}
        exposed = PULSE_START + (u % 5) * 7_200_000 + seed
        out.append(
            {
                "event": "console::experiment_exposure",
                "user": user,
                "timestamp": exposed,
                "metadata": {"experiment": exp["id"], "group": groups[u % 2]},
            }
        )
        for k in range(1 + (u * seed) % 4):
            ts = exposed - 3 * DAY_MS + k * 21_600_000 * (1 + seed % 3)
            if ts < until:
                out.append(
                    {"event": "view" if k % 2 else "purchase", "user": user, "timestamp": ts, "metadata": {}}
                )
    return out


def _results() -> dict[str, list[dict[str, Any]]]:
    """Every day index of the experiment with the records it points at."""
    out = {}
    for day in group_stats.days(kinds.EXPERIMENT, "pexp"):
        records = group_stats.read_day(kinds.EXPERIMENT, "pexp", day.ds)
        out[day.ds] = sorted(
            (r.model_dump(exclude={"metricName"}) for r in records),
            key=lambda r: (r["metricID"], r["groupID"]),
        )
        assert len(records) == day.records, (
            f"day {day.ds} indexes {day.records} records, holds {len(records)}"
        )
    return out


class PulseRunner:
    """An experiment with one completed load and new events; the request under test is a second load."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.base = env.new_store()
        env.now = PULSE_START - 3_600_000
        status, exp = env.call(
            "experiments",
            "POST",
            EXPERIMENTS,
            {"name": "pexp", "id": "pexp", "primaryMetrics": PULSE_METRICS},
        )
        assert status == 201, exp
        env.now = PULSE_START
        status, exp = env.call("experiments", "PUT", f"{EXPERIMENTS}/pexp/start")
        assert status == 200, exp
        control, test = (g["id"] for g in exp["data"]["groups"])
        self.query = f"control={control}&test={test}"
        ingest_service.ingest(json.dumps(_pulse_events(exp["data"], FIRST_LOAD, 1)), now_ms=FIRST_LOAD)
        env.now = FIRST_LOAD
        status, out = env.call("pulse", "POST", f"{EXPERIMENTS}/pexp/load_pulse", {})
        assert status == 200 and out["data"]["finishedState"] == "success", out
        ingest_service.ingest(json.dumps(_pulse_events(exp["data"], SECOND_LOAD, 2)), now_ms=SECOND_LOAD)
        env.now = SECOND_LOAD
        env.copy_of(self.base)
        self.old = self.snapshot()
        self.clean = self.load()
        assert self.clean.status == 200, self.clean.body
        self.new = self.snapshot()
        assert self.new["results"] != self.old["results"]

    def snapshot(self) -> dict[str, Any]:
        env = self.env
        status, body = env.call("results", "GET", f"{EXPERIMENTS}/pexp/pulse_results", query=self.query)
        history = pulse_runs.list_runs(kinds.EXPERIMENT, "pexp")
        health = (dynamo.get(kinds.EXPERIMENT, "pexp") or {}).get("_health")
        return {
            "results": _results(),
            "api": (status, body.get("data")),
            "history": history,
            "health": health,
        }

    def load(self, *faults: Fault, copy: bool = False) -> Run:
        env = self.env
        if copy:
            env.copy_of(self.base)
        env.storage.arm(*faults)
        try:
            status, body = env.call("pulse", "POST", f"{EXPERIMENTS}/pexp/load_pulse", {})
        finally:
            st = env.storage
            counts, injected, sleeps = Counter(st.counts), list(st.injected), list(st.sleeps)
            st.disarm()
        return Run(status, body, State({}, {}), counts, injected, sleeps)


def _sample(count: int) -> list[int]:
    return sorted({1, (count + 1) // 2, count})


def pulse_faults(counts: Counter[str]) -> Iterator[Fault]:
    """Throttling at every DynamoDB write (the history, each day's statistics and day index, the
    health) and at the first, middle and last call of every other operation; a read timeout at
    the first and last call of every write."""
    for op, count in sorted(counts.items()):
        name = op.partition(".")[2]
        every = name in ("PutItem", "BatchWriteItem")
        for index in range(1, count + 1) if every else _sample(count):
            yield Fault.at(op, index, "throttle")
        if name not in READS:
            for index in sorted({1, count}):
                yield Fault.at(op, index, "timeout")


def check_failed_load(runner: PulseRunner, fault: Fault) -> list[str]:
    count = runner.clean.counts[fault.op]
    index = min(fault.calls)
    where = f"pulse: {fault.op} call {index} of {count} ({fault.kind})"
    run = runner.load(fault, copy=True)
    if not run.injected:
        return [f"{where}: never reached"]
    try:
        after = runner.snapshot()
    except AssertionError as exc:
        return [f"{where}: {exc}"]
    old, new = runner.old, runner.new
    problems = []
    if run.status == 200:
        # Only deleting statistics that no day index points at any more failed (it is retried by
        # the next write of the day): the load completed.
        if (after["results"], after["api"], after["health"]) != (new["results"], new["api"], new["health"]):
            problems.append(f"{where}: answered 200 but the results or health are not the new ones")
        if after["history"][0]["finishedState"] != "success":
            problems.append(f"{where}: answered 200, the history says {after['history'][0]['finishedState']}")
        return problems
    try:
        assert_safe_503(run.status, run.body, where)
    except AssertionError as exc:
        problems.append(str(exc))
    for ds, records in after["results"].items():
        if records not in (old["results"].get(ds), new["results"].get(ds)):
            problems.append(f"{where}: day {ds} mixes records of the old and the new load")
    if after["api"][0] != 200 or after["api"] not in (old["api"], new["api"]):
        problems.append(f"{where}: the results API answers {after['api'][0]}")
    if after["health"] not in (old["health"], new["health"]):
        problems.append(f"{where}: the health is neither the old nor the new one")
    # The history record is written first (PutItem call 1) and last (call `count`): a failure
    # before the first leaves none, a failure of the last leaves it `running`.
    history_put = "dynamodb.PutItem"
    before_history = run.counts[history_put] == 0 or (fault.op == history_put and index == 1)
    if len(after["history"]) == len(old["history"]) + 1:
        state = after["history"][0]["finishedState"]
        last_put = fault.op == history_put and index == runner.clean.counts[history_put]
        if state != "failure" and not (last_put and state is None):
            problems.append(f"{where}: the history says {state}")
    elif not before_history:
        problems.append(f"{where}: {len(after['history'])} history records")
    return problems


def test_a_pulse_load_failing_at_any_step_keeps_every_result_day_whole(env: Env) -> None:
    """A load that fails at any storage step (S3 list/get of events and aggregates, puts of
    aggregates, the records' BatchWriteItem, the day index, the health, the history): a 503; every
    day index points at complete records, each day's records all from the old load or all from the
    new one; the results API answers the old or the new results; the health is the old or the new
    one; the history says the load failed."""
    runner = PulseRunner(env)
    problems = []
    for fault in pulse_faults(runner.clean.counts):
        problems += check_failed_load(runner, fault)
    assert not problems, "\n".join(problems)


def test_a_pulse_load_recovers_from_one_failed_attempt_at_any_step(env: Env) -> None:
    """One failed attempt of the first call of every operation (throttled writes, timed-out reads):
    botocore's retry recovers it and the load completes as if nothing happened."""
    runner = PulseRunner(env)
    problems = []
    for op in sorted(runner.clean.counts):
        kind = "timeout" if op.partition(".")[2] in READS else "throttle"
        run = runner.load(Fault.at(op, 1, kind, attempts=1), copy=True)
        after = runner.snapshot()
        if run.status != 200 or after["results"] != runner.new["results"]:
            problems.append(f"{op} call 1, one attempt ({kind}): {run.status} {run.body}")
    assert not problems, "\n".join(problems)


def test_a_failed_load_s_history_names_no_internals(env: Env) -> None:
    runner = PulseRunner(env)
    run = runner.load(Fault.at("s3.PutObject", 1, "throttle"), copy=True)
    assert run.status == 503
    status, body = env.call("pulse", "GET", f"{EXPERIMENTS}/pexp/pulse_load_history")
    assert status == 200 and body["data"][0]["finishedState"] == "failure"
    text = json.dumps(body["data"][0])
    assert not [word for word in INTERNALS if word.lower() in text.lower()], body["data"][0]["message"]


# --- what counts as "storage unavailable", and how long a call may take ------------------------------------


def _client_error(code: str, status: int = 400, reasons: list[str] | None = None) -> Exception:
    from botocore.exceptions import ClientError

    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": DETAIL},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    if reasons is not None:
        response["CancellationReasons"] = [{"Code": r} for r in reasons]
    return ClientError(response, "TransactWriteItems")


def test_which_storage_errors_are_a_503() -> None:
    from botocore.exceptions import (
        ConnectionClosedError,
        ConnectTimeoutError,
        NoCredentialsError,
        ParamValidationError,
        ResponseStreamingError,
    )

    url = "https://dynamodb.us-east-1.amazonaws.com/"
    unavailable = [
        _client_error("ProvisionedThroughputExceededException"),
        _client_error("ThrottlingException"),
        _client_error("RequestLimitExceeded"),
        _client_error("SlowDown", 503),
        _client_error("InternalServerError", 500),
        _client_error("SomethingNew", 502),
        _client_error("TransactionCanceledException", 400, ["None", "TransactionConflict"]),
        _client_error("TransactionCanceledException", 400, ["ThrottlingError", "None"]),
        ReadTimeoutError(endpoint_url=url),
        ConnectTimeoutError(endpoint_url=url),
        EndpointConnectionError(endpoint_url=url),
        ConnectionClosedError(endpoint_url=url),
        ResponseStreamingError(error="reset"),
    ]
    answers_or_bugs = [
        _client_error("ConditionalCheckFailedException"),
        _client_error("TransactionCanceledException", 400, ["ConditionalCheckFailed", "TransactionConflict"]),
        _client_error("ValidationException"),
        _client_error("AccessDeniedException"),
        _client_error("ResourceNotFoundException"),
        ParamValidationError(report="bad"),
        NoCredentialsError(),
        RuntimeError("boom"),
    ]
    assert [aws_clients.describe(e) for e in unavailable if not aws_clients.is_transient(e)] == []
    assert [aws_clients.describe(e) for e in answers_or_bugs if aws_clients.is_transient(e)] == []
    assert (
        aws_clients.describe(unavailable[0]) == "TransactWriteItems: ProvisionedThroughputExceededException"
    )


def test_a_storage_call_that_keeps_failing_gives_up_within_the_function_timeout(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ATTEMPTS x (connect + read time limit) plus the backoff, within the API functions'
    29 s; against the local moto server botocore's generous defaults stay."""
    aws_clients.reset()
    config_ = aws_clients.client("dynamodb").meta.config
    assert config_.retries == {"total_max_attempts": aws_clients.ATTEMPTS, "mode": "standard"}
    worst_backoff = sum(min(2**i, 20) for i in range(aws_clients.ATTEMPTS - 1))  # throttled: 1 s scale
    limits = config_.connect_timeout + config_.read_timeout
    assert aws_clients.ATTEMPTS * limits + 0.05 * worst_backoff < 29
    assert aws_clients.ATTEMPTS * 0.5 + worst_backoff < 29  # throttled answers (~0.5 s each at worst)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    aws_clients.reset()
    assert aws_clients.client("s3").meta.config.read_timeout == 60
    aws_clients.reset()


def test_a_read_while_storage_is_throttled_is_a_503_with_retry_after(env: Env) -> None:
    env.new_store()
    env.storage.arm(Fault("dynamodb.Query", frozenset(range(1, 10)), "throttle"))
    response = Caller("gates").module.lambda_handler(http_event("GET", GATES), LAMBDA_CONTEXT)
    env.storage.disarm()
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"] == "1"
    body = json.loads(response["body"])
    assert_safe_503(503, body, "GET gates")
    assert body["message"].startswith("Storage is unavailable right now") and "Retry" in body["message"]
    assert sum(env.storage.sleeps) < 8, env.storage.sleeps  # botocore's backoff, throttled


def test_a_storage_error_that_is_no_outage_stays_a_500(env: Env) -> None:
    env.new_store()
    env.storage.arm()

    def denied(**_: Any) -> None:
        raise _client_error("AccessDeniedException")

    aws_clients.client("dynamodb").meta.events.register("before-call.dynamodb.Query", denied)
    status, body = env.call("gates", "GET", GATES)
    aws_clients.client("dynamodb").meta.events.unregister("before-call.dynamodb.Query", denied)
    assert status == 500 and "Internal error" in body["message"], body


# --- a delete that changes other entities in the same transaction (for holdouts) ------------------------


def test_a_delete_with_replaces_is_one_transaction(env: Env) -> None:
    env.new_store()
    holdout = {"id": "hold1", "version": 1, "createdTime": 1, "experimentIDs": ["exp1"]}
    exp = {"id": "exp1", "version": 1, "createdTime": 1, "holdoutIDs": ["hold1"]}
    dynamo.create(kinds.HOLDOUT, "hold1", holdout)
    dynamo.create(kinds.EXPERIMENT, "exp1", exp)
    detached = {**exp, "version": 2, "holdoutIDs": []}
    with pytest.raises(dynamo.StoreConflict):  # the experiment moved on: nothing happens
        dynamo.delete(kinds.HOLDOUT, "hold1", 1, replaces=[(kinds.EXPERIMENT, "exp1", detached, 5)])
    env.storage.arm(Fault.at("dynamodb.TransactWriteItems", 1, "throttle"))
    with pytest.raises(Exception, match="ProvisionedThroughputExceeded"):
        dynamo.delete(kinds.HOLDOUT, "hold1", 1, replaces=[(kinds.EXPERIMENT, "exp1", detached, 1)])
    env.storage.disarm()
    assert dynamo.get(kinds.HOLDOUT, "hold1") == holdout and dynamo.get(kinds.EXPERIMENT, "exp1") == exp
    dynamo.delete(kinds.HOLDOUT, "hold1", 1, replaces=[(kinds.EXPERIMENT, "exp1", detached, 1)])
    assert dynamo.get(kinds.HOLDOUT, "hold1") is None and dynamo.versions(kinds.HOLDOUT, "hold1") == []
    assert dynamo.get(kinds.EXPERIMENT, "exp1") == detached
    assert [v["version"] for v in dynamo.versions(kinds.EXPERIMENT, "exp1")] == [2, 1]


# --- results: a day read while its previous generation is deleted ---------------------------------------


def test_a_results_day_read_during_a_rewrite_is_read_again(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from expconsole.models.results import GroupStatistics

    env.new_store()

    def record(metric: str, n: int) -> GroupStatistics:
        return GroupStatistics(
            entityKind="EXPERIMENT", entityID="e", ds="2026-03-01", metricID=metric, groupID="g",
            metricName=metric, metricType="sum", directionality="increase", kind="mean",
            n=n, means=[1.0], comoments=[[0.5]], preNonzero=None,
        )  # fmt: skip

    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", [record("a::sum", 3), record("b::sum", 3)])
    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", [record("a::sum", 4)])  # carries b over
    assert [(r.metricID, r.n) for r in group_stats.read_day("EXPERIMENT", "e", "2026-03-01")] == [
        ("a::sum", 4),
        ("b::sum", 3),
    ]
    items = [i for i in _scan() if i["SK"]["S"].startswith("G#")]
    assert len(items) == 2  # the replaced generation is gone
    # Generations no index points at (an interrupted write, the loser of a race) go once an hour old.
    now = int(time.time() * 1000)
    ddb, table = aws_clients.client("dynamodb"), config.table_name()
    for age, generation in ((2 * 3_600_000, "old"), (60_000, "young")):
        sk = f"G#2026-03-01#{now - age:013d}{generation}#a::sum#g"
        ddb.put_item(TableName=table, Item={**items[0], "SK": {"S": sk}})
    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", [record("a::sum", 5)])
    left = sorted(i["SK"]["S"].split("#")[2][13:] for i in _scan() if i["SK"]["S"].startswith("G#"))
    assert left.count("young") == 1 and "old" not in left
    assert len(left) == 3  # the young orphan and the new generation's two records
    real = group_stats._records
    reads = []

    def racing(*args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        out = list(real(*args, **kwargs))
        reads.append(len(out))
        return iter(out[:1] if len(reads) == 1 else out)  # the first read lost a record to a cleanup

    monkeypatch.setattr(group_stats, "_records", racing)
    assert len(group_stats.read_day("EXPERIMENT", "e", "2026-03-01")) == 2 and len(reads) == 2
    monkeypatch.setattr(group_stats, "_records", lambda *a, **k: iter([]))
    with pytest.raises(dynamo.StoreUnavailable):
        group_stats.read_day("EXPERIMENT", "e", "2026-03-01")


def test_a_results_day_rewritten_in_several_batches_reads_whole_when_a_batch_fails(env: Env) -> None:
    """30 records take two BatchWriteItem requests: a rewrite failing at either leaves the day
    reading all old records (never the first 25 new ones beside 5 old ones), and the results
    API keeps answering."""
    from expconsole.models.results import GroupStatistics

    env.new_store()

    def records(n: int) -> list[GroupStatistics]:
        return [
            GroupStatistics(
                entityKind="EXPERIMENT",
                entityID="e",
                ds="2026-03-01",
                metricID=f"m{i:02d}::sum",
                groupID="g",
                metricName=f"m{i:02d}",
                metricType="sum",
                directionality="increase",
                kind="mean",
                n=n,
                means=[1.0],
                comoments=[[0.5]],
                preNonzero=None,
            )
            for i in range(30)
        ]

    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", records(3))
    for call in (1, 2):
        for kind in ("throttle", "timeout"):
            env.storage.arm(Fault.at("dynamodb.BatchWriteItem", call, kind))
            with pytest.raises(Exception):  # noqa: B017 - botocore's error, whichever it is
                group_stats.put_day("EXPERIMENT", "e", "2026-03-01", records(4))
            env.storage.disarm()
            assert {r.n for r in group_stats.read_day("EXPERIMENT", "e", "2026-03-01")} == {3}
            assert len(group_stats.read_day("EXPERIMENT", "e", "2026-03-01")) == 30
    group_stats.put_day("EXPERIMENT", "e", "2026-03-01", records(4))
    assert {r.n for r in group_stats.read_day("EXPERIMENT", "e", "2026-03-01")} == {4}
