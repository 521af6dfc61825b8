"""Load: N concurrent clients against the local server, then a check that nothing was lost.

Each client is a thread with its own HTTP session. For a bounded time it picks operations by
weight (`--mix reads=50,writes=30,ingest=20`):

- reads: `get` one gate / experiment / dynamic config, `list` a page of them (filtered on
  this run's tag), or read an event name's `summary`;
- writes: `create` one (a unique id; the 201 is recorded), `update` one (`PATCH` of its
  description, with the `version` last seen about 3 times in 4, on a small hot set half of
  the time so that clients collide), or `create-dup` (a create of an id that exists: 409);
- ingest: `POST /v1/webhooks/event_webhook` of 1 to `--max-batch` events, each carrying a
  unique marker in its metadata, or `ingest-retry`: the same bytes again, either an earlier
  batch (one possibly still in flight) or a new batch sent twice at once; it must store
  nothing twice.

A 409 where it is an outcome of the protocol (an update whose version moved on, a duplicate
create) is counted apart and is not an error. Errors are 5xx, transport errors and any other
unexpected status. Before measuring, a warm-up has every client run each kind of request at
the same time (one sandbox per client and function, as the server starts them on demand), so
that the figures leave cold starts out (`--no-warmup` keeps them in); what it writes is checked
like the rest.

Afterwards, with the clients stopped, it checks the stored state against what was
acknowledged:

- every acknowledged create is readable, and listed exactly once (pages followed through);
- per entity, the version history is 1..N without gap or repeat, each acknowledged update is
  the snapshot of the version its response gave (two acknowledged updates never share one),
  N is 1 + the acknowledged updates (none applied twice, none invented), and the current
  document is the last version;
- every acknowledged event is listed exactly once in the catalogue (`GET
  /console/v1/events/{name}`, every page), retried batches included; events of requests
  whose outcome is unknown (transport error, 5xx) at most once; and each name's counter
  (`.../summary`) equals the events listed;
- during the run, no read returned a version older than one already acknowledged.

Prints figures per operation and overall (requests/s, p50/p99 ms, outcomes), the checks and a
verdict. Exit 1 when a check fails or there was any error; 2 when the server did not start.
Timings depend on the machine: nothing here asserts them.

    .venv/bin/python bench/load.py                        # 8 clients, 30 s, its own server
    .venv/bin/python bench/load.py --clients 16 --seconds 60 --max-concurrency 20
    .venv/bin/python bench/load.py --server http://127.0.0.1:3000 --api-key console-… --server-secret secret-…
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import secrets
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]

KINDS = ("gates", "experiments", "dynamic_configs")
CONSOLE = "/console/v1"
INGEST = "/v1/webhooks/event_webhook"
EVENT_NAMES = 4  # event names per run: every client logs all of them, so their counters are shared
HOT = 3  # entities per kind that half of the updates aim at, so that clients collide
TIMEOUT_S = 60.0
SAMPLES = 5  # unexpected responses kept as evidence, per operation

# Within a category of --mix: how its operations are shared.
OPS: dict[str, tuple[tuple[str, float], ...]] = {
    "reads": (("get", 0.6), ("list", 0.3), ("summary", 0.1)),
    "writes": (("create", 0.35), ("update", 0.6), ("create-dup", 0.05)),
    "ingest": (("ingest", 0.85), ("ingest-retry", 0.15)),
}
OP_ORDER = [op for ops in OPS.values() for op, _ in ops]
WARMUP_TIMEOUT_S = 600.0


# --- what was sent and acknowledged -------------------------------------------------------------


@dataclass
class Entity:
    kind: str
    id: str
    description: str
    created: str = "pending"  # "acked" (201), "unknown" (no answer or a 5xx), "refused"
    acked: list[tuple[int, str]] = field(default_factory=list)  # (version answered, description sent)
    unknown: list[str] = field(default_factory=list)  # descriptions of updates with no clear answer


@dataclass
class Batch:
    body: bytes
    markers: dict[str, str]  # marker -> event name
    acked: bool = False  # some send of these bytes was answered 202 with every event accepted
    sends: int = 0
    unknown: bool = False  # some send had no clear answer (a 5xx or none)
    in_flight: int = 0
    overlapped: int = 0  # sends that started while another send of the same bytes was in flight


@dataclass
class OpStats:
    latencies_ms: list[float] = field(default_factory=list)
    ok: int = 0
    expected: int = 0  # 409 where the protocol allows it
    unexpected: int = 0  # any other status below 500
    server: int = 0  # 5xx
    transport: int = 0
    samples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return self.ok + self.expected + self.unexpected + self.server + self.transport

    @property
    def errors(self) -> int:
        return self.unexpected + self.server + self.transport

    def merge(self, other: OpStats) -> None:
        self.latencies_ms.extend(other.latencies_ms)
        self.ok += other.ok
        self.expected += other.expected
        self.unexpected += other.unexpected
        self.server += other.server
        self.transport += other.transport


class State:
    """Everything the clients share; one lock, held only to read or record."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.tag = f"load-{run}"
        self.event_names = [f"load_{run}_{k}" for k in range(EVENT_NAMES)]
        self.lock = threading.Lock()
        self.entities: dict[tuple[str, str], Entity] = {}
        self.pools: dict[str, list[str]] = {kind: [] for kind in KINDS}  # acknowledged creates
        self.seen_version: dict[tuple[str, str], int] = {}  # highest version any 2xx answered
        self.batches: list[Batch] = []
        self.names_logged: set[str] = set()
        self.stale_reads: list[str] = []
        self.crashes: list[str] = []
        self.stats: dict[str, OpStats] = {op: OpStats() for op in OP_ORDER}  # measured
        self.warmup: dict[str, OpStats] = {op: OpStats() for op in OP_ORDER}
        self.measuring = False
        self.measured_start = 0.0
        self.finished: list[float] = []  # when each measured request ended, from measured_start

    def saw(self, kind: str, entity_id: str, version: Any) -> None:
        if isinstance(version, int):
            key = (kind, entity_id)
            with self.lock:
                if version > self.seen_version.get(key, 0):
                    self.seen_version[key] = version


@dataclass
class Reply:
    status: int | None  # None: transport error
    body: Any
    outcome: str  # ok, expected, unexpected, server, transport

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def unknown(self) -> bool:
        """No clear answer: the request may or may not have taken effect."""
        return self.outcome in ("server", "transport")


def _has_version(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("data"), dict) and "version" in body["data"]


# --- one client ----------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    api_key: str
    server_secret: str


class Client(threading.Thread):
    def __init__(self, index: int, server: Server, state: State, mix: dict[str, float], args: Any) -> None:
        super().__init__(name=f"load-client-{index}", daemon=True)
        self.index = index
        self.server = server
        self.state = state
        self.rng = random.Random(f"{args.seed}/{index}")
        self.categories = [c for c in OPS if mix.get(c, 0) > 0]
        self.weights = [mix[c] for c in self.categories]
        self.max_batch = args.max_batch
        self.deadline = 0.0
        self.barrier: threading.Barrier | None = None
        self.seq = 0
        self.session = requests.Session()
        self.twin_session = requests.Session()  # for the second of two identical sends at once

    # the loop
    def run(self) -> None:
        try:
            if self.barrier is not None:
                for step in WARMUP_STEPS:
                    step(self)
                    self.barrier.wait(WARMUP_TIMEOUT_S)
                self.barrier.wait(WARMUP_TIMEOUT_S)  # the main thread sets the deadline, then lets us go
            while time.monotonic() < self.deadline:
                category = self.rng.choices(self.categories, self.weights)[0]
                ops, shares = zip(*OPS[category], strict=True)
                op = self.rng.choices(ops, shares)[0]
                getattr(self, "op_" + op.replace("-", "_"))()
        except Exception as exc:  # a bug of this script, or a warm-up that never ended: the run fails
            if self.barrier is not None:
                self.barrier.abort()
            with self.state.lock:
                self.state.crashes.append(f"{self.name}: {type(exc).__name__}: {exc}")
        finally:
            self.session.close()
            self.twin_session.close()

    def next_id(self) -> str:
        self.seq += 1
        return f"{self.state.tag}-c{self.index}-{self.seq}"

    # HTTP with bookkeeping
    def call(
        self,
        op: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, Any] | None = None,
        ok: Iterable[int] = (200,),
        expected: Iterable[int] = (),
        secret: bool = False,
        raw: bytes | None = None,
        accept: Callable[[Any], bool] | None = None,
        session: requests.Session | None = None,
    ) -> Reply:
        """Send, time and count one request under `op`. A status in `ok` whose body `accept`
        refuses counts as unexpected."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"SERVICE-API-KEY": self.server.server_secret if secret else self.server.api_key}
        if data is not None:
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        measured = self.state.measuring
        status: int | None = None
        text = ""
        try:
            response = (session or self.session).request(
                method, self.server.url + path, data=data, params=params, headers=headers, timeout=TIMEOUT_S
            )
            status, text = response.status_code, response.text
        except requests.RequestException as exc:
            text = f"{type(exc).__name__}: {exc}"
        elapsed_ms = (time.monotonic() - started) * 1000
        parsed: Any = None
        if status is not None:
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = None
        if status is None:
            outcome = "transport"
        elif status in set(ok) and (accept is None or accept(parsed)):
            outcome = "ok"
        elif status in set(expected):
            outcome = "expected"
        elif status >= 500:
            outcome = "server"
        else:
            outcome = "unexpected"
        with self.state.lock:
            stats = (self.state.stats if measured else self.state.warmup)[op]
            stats.latencies_ms.append(elapsed_ms)
            if measured:
                self.state.finished.append(time.monotonic() - self.state.measured_start)
            setattr(stats, outcome, getattr(stats, outcome) + 1)
            if outcome not in ("ok", "expected") and len(stats.samples) < SAMPLES:
                stats.samples.append(
                    {
                        "request": f"{method} {path}" + (f" {params}" if params else ""),
                        "body": (data or b"").decode(errors="replace")[:300],
                        "status": status,
                        "response": text[:500],
                    }
                )
        return Reply(status, parsed, outcome)

    def pick_entity(self, hot: bool) -> tuple[str, str] | None:
        kind = self.rng.choice(KINDS)
        with self.state.lock:
            pool = self.state.pools[kind]
            if not pool:
                return None
            entity_id = self.rng.choice(pool[:HOT] if hot else pool)
        return kind, entity_id

    # reads
    def op_get(self) -> None:
        picked = self.pick_entity(hot=self.rng.random() < 0.3)
        if picked is None:
            return self.op_create()
        kind, entity_id = picked
        with self.state.lock:
            floor = self.state.seen_version.get(picked, 0)
        reply = self.call("get", "GET", f"{CONSOLE}/{kind}/{entity_id}", accept=_has_version)
        if reply.ok:
            version = reply.body["data"]["version"]
            if version < floor:
                with self.state.lock:
                    self.state.stale_reads.append(
                        f"GET {kind}/{entity_id} answered version {version}; {floor} was acknowledged before"
                    )
            self.state.saw(kind, entity_id, version)
        return None

    def op_list(self) -> None:
        kind = self.rng.choice(KINDS)
        with self.state.lock:
            known = len(self.state.pools[kind])
        limit = 50
        page = self.rng.randint(1, max(1, math.ceil(known / limit)))
        self.call(
            "list", "GET", f"{CONSOLE}/{kind}", params={"tags": self.state.tag, "limit": limit, "page": page}
        )

    def op_summary(self) -> None:
        with self.state.lock:
            names = sorted(self.state.names_logged)
        if not names:
            return self.op_get()
        self.call("summary", "GET", f"{CONSOLE}/events/{self.rng.choice(names)}/summary")
        return None

    # writes
    def op_create(self, kind: str | None = None) -> None:
        kind = kind or self.rng.choice(KINDS)
        entity_id = self.next_id()
        description = f"created by client {self.index}"
        body: dict[str, Any] = {
            "name": f"load {entity_id}",
            "id": entity_id,
            "description": description,
            "tags": [self.state.tag],
        }
        if kind == "dynamic_configs":
            body["defaultValue"] = {"marker": description}
        entity = Entity(kind, entity_id, description)
        with self.state.lock:
            self.state.entities[(kind, entity_id)] = entity
        reply = self.call("create", "POST", f"{CONSOLE}/{kind}", body, ok=(201,), accept=_has_version)
        with self.state.lock:
            if reply.ok:
                entity.created = "acked"
                self.state.pools[kind].append(entity_id)
            else:
                entity.created = "unknown" if reply.unknown else "refused"
        if reply.ok:
            self.state.saw(kind, entity_id, reply.body["data"]["version"])

    def op_create_dup(self) -> None:
        picked = self.pick_entity(hot=False)
        if picked is None:
            return self.op_create()
        kind, entity_id = picked
        body: dict[str, Any] = {"name": f"dup {entity_id}", "id": entity_id, "tags": [self.state.tag]}
        self.call("create-dup", "POST", f"{CONSOLE}/{kind}", body, ok=(), expected=(409,))
        return None

    def op_update(self) -> None:
        picked = self.pick_entity(hot=self.rng.random() < 0.5)
        if picked is None:
            return self.op_create()
        kind, entity_id = picked
        self.seq += 1
        description = f"update {self.index}.{self.seq}"
        body: dict[str, Any] = {"description": description}
        if kind == "dynamic_configs":
            body["defaultValue"] = {"marker": description}
        if self.rng.random() < 0.75:
            with self.state.lock:
                body["version"] = self.state.seen_version.get(picked, 1)
        reply = self.call(
            "update", "PATCH", f"{CONSOLE}/{kind}/{entity_id}", body, expected=(409,), accept=_has_version
        )
        entity = self.state.entities[picked]
        with self.state.lock:
            if reply.ok:
                entity.acked.append((reply.body["data"]["version"], description))
            elif reply.unknown or reply.outcome == "unexpected":
                entity.unknown.append(description)
        if reply.ok:
            self.state.saw(kind, entity_id, reply.body["data"]["version"])
        return None

    # ingestion
    def op_ingest(self) -> None:
        self.send_batch("ingest", self.new_batch())

    def new_batch(self) -> Batch:
        now = int(time.time() * 1000)
        self.seq += 1
        markers: dict[str, str] = {}
        events = []
        for i in range(self.rng.randint(1, self.max_batch)):
            marker = f"{self.state.run}.{self.index}.{self.seq}.{i}"
            name = self.rng.choice(self.state.event_names)
            markers[marker] = name
            events.append(
                {
                    "event": name,
                    "user": {"userID": f"user-{self.rng.randrange(1000)}"},
                    "timestamp": now,
                    "metadata": {"marker": marker, "client": self.index},
                    "value": self.rng.randrange(100),
                }
            )
        batch = Batch(json.dumps(events).encode(), markers)
        with self.state.lock:
            self.state.batches.append(batch)  # before sending: a retry may race the first send
        return batch

    def op_ingest_retry(self) -> None:
        """Half the time an earlier batch again; otherwise a new one sent twice at once."""
        if self.rng.random() < 0.5:
            with self.state.lock:
                recent = self.state.batches[-8:]  # the latest: some may still be in flight
                batch = self.rng.choice(recent) if recent else None
            if batch is None:
                return self.op_ingest()
            self.send_batch("ingest-retry", batch)
            return None
        batch = self.new_batch()
        twin = threading.Thread(target=self.send_batch, args=("ingest-retry", batch, self.twin_session))
        twin.start()
        self.send_batch("ingest-retry", batch)
        twin.join()
        return None

    def send_batch(self, op: str, batch: Batch, session: requests.Session | None = None) -> None:
        with self.state.lock:
            batch.sends += 1
            batch.overlapped += batch.in_flight > 0
            batch.in_flight += 1
        reply = self.call(
            op,
            "POST",
            INGEST,
            raw=batch.body,
            ok=(202,),
            secret=True,
            session=session,
            accept=lambda answer: (
                isinstance(answer, dict)
                and answer.get("accepted", 0) + answer.get("duplicates", 0) == len(batch.markers)
            ),
        )
        with self.state.lock:
            batch.in_flight -= 1
            batch.unknown |= reply.unknown
        if reply.ok:
            with self.state.lock:
                batch.acked = True
                self.state.names_logged.update(batch.markers.values())


# Before measuring, every client runs each step at the same time as the others (a barrier between
# steps), so that each function has a warm sandbox per client: figures without cold starts.
WARMUP_STEPS: tuple[Callable[[Client], None], ...] = (
    *(lambda client, kind=kind: client.op_create(kind) for kind in KINDS),
    Client.op_ingest,
    Client.op_summary,
)


# --- checks (pure: tested without a server) ------------------------------------------------------


@dataclass
class Check:
    name: str
    checked: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def check_listing(kind: str, entities: Iterable[Entity], listed: Counter[str]) -> Check:
    """Each acknowledged create listed once; an unknown one at most once; nothing else of ours."""
    check = Check(f"{kind}: listed exactly once")
    ours = {e.id: e for e in entities if e.kind == kind}
    for entity_id, entity in ours.items():
        seen = listed.get(entity_id, 0)
        if entity.created == "acked":
            check.checked += 1
            if seen != 1:
                check.failures.append(f"{entity_id}: acknowledged (201), listed {seen} times")
        elif seen > 1 or (entity.created == "refused" and seen):
            check.failures.append(f"{entity_id}: create {entity.created}, listed {seen} times")
    for entity_id, seen in listed.items():
        if entity_id not in ours:
            check.failures.append(f"{entity_id}: listed {seen} times, never created by this run")
    return check


def check_entity(entity: Entity, current: dict[str, Any] | None, history: list[dict[str, Any]]) -> list[str]:
    """What is wrong with one entity's stored state, given what was acknowledged about it.

    `current` is the GET by id (None for a 404), `history` its versions (any order).
    """
    where = f"{entity.kind}/{entity.id}"
    if current is None:
        return [f"{where}: acknowledged (201) but GET by id is a 404"] if entity.created == "acked" else []
    problems: list[str] = []
    versions = Counter(snapshot["version"] for snapshot in history)
    top = max(versions, default=0)
    repeated = sorted(v for v, n in versions.items() if n > 1)
    missing = sorted(set(range(1, top + 1)) - set(versions))
    if repeated or missing:
        problems.append(
            f"{where}: version history {sorted(versions)} (repeated {repeated}, missing {missing})"
        )
    if current["version"] != top:
        problems.append(f"{where}: current version {current['version']}, history ends at {top}")
    by_version = {s["version"]: s for s in history}
    if current.get("description") != by_version.get(top, {}).get("description"):
        problems.append(f"{where}: current description differs from the snapshot of version {top}")
    first = by_version.get(1)
    if first is not None and first.get("description") != entity.description:
        problems.append(f"{where}: version 1 has description {first.get('description')!r}")
    answered = Counter(version for version, _ in entity.acked)
    shared = sorted(v for v, n in answered.items() if n > 1)
    if shared:
        problems.append(
            f"{where}: several acknowledged updates answered the same version {shared} (lost update)"
        )
    for version, description in entity.acked:
        stored = by_version.get(version, {}).get("description")
        if stored != description:
            problems.append(
                f"{where}: update acknowledged as version {version} with {description!r}; that version "
                f"holds {stored!r}"
            )
        if entity.kind == "dynamic_configs" and stored == description:
            value = by_version[version].get("defaultValue")
            if value != {"marker": description}:
                problems.append(f"{where}: version {version} defaultValue {value!r}, sent {{'marker': ...}}")
    expected = 1 + len(entity.acked)
    if not entity.unknown and top != expected:
        problems.append(
            f"{where}: {len(entity.acked)} acknowledged updates and none unanswered, but {top} versions "
            f"(expected {expected})"
        )
    elif entity.unknown and not expected <= top <= expected + len(entity.unknown):
        problems.append(
            f"{where}: {top} versions; expected {expected} to {expected + len(entity.unknown)} "
            f"({len(entity.unknown)} updates unanswered)"
        )
    if entity.acked and not entity.unknown:
        last_version, last_description = max(entity.acked)
        if current["version"] == last_version and current.get("description") != last_description:
            problems.append(
                f"{where}: the last acknowledged update ({last_description!r}) is not what is stored"
            )
    return problems


def check_events(batches: Iterable[Batch], listed: Counter[str]) -> tuple[Check, Check]:
    """Acknowledged events listed exactly once; others at most once: (acknowledged, the others)."""
    acked = Check("events: each acknowledged event listed exactly once")
    other = Check("events: unacknowledged batches stored at most once")
    retried = 0
    for batch in batches:
        if batch.sends > 1:
            retried += 1
        check = acked if batch.acked else other
        for marker in batch.markers:
            check.checked += 1
            seen = listed.get(marker, 0)
            if (batch.acked and seen != 1) or seen > 1:
                state = "acknowledged" if batch.acked else "not acknowledged"
                check.failures.append(f"event {marker} ({state}, sent {batch.sends}x): listed {seen} times")
    known = {marker for batch in batches for marker in batch.markers}
    for marker, seen in listed.items():
        if marker not in known:
            acked.failures.append(f"event {marker}: listed {seen} times, never sent")
    return acked, other


# --- after the run: read everything back --------------------------------------------------------


class Reader:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.local = threading.local()

    def get(self, path: str, params: dict[str, Any] | None = None) -> requests.Response:
        session = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = requests.Session()
            session.headers["SERVICE-API-KEY"] = self.server.api_key
        for attempt in range(3):
            try:
                return session.get(self.server.url + path, params=params, timeout=TIMEOUT_S * 2)
            except requests.RequestException:
                if attempt == 2:
                    raise
                time.sleep(1)
        raise AssertionError("unreachable")

    def pages(self, path: str, params: dict[str, Any], limit: int) -> tuple[list[dict[str, Any]], list[str]]:
        """Every item of a list, following pages; and what is wrong with the pagination."""
        items: list[dict[str, Any]] = []
        problems: list[str] = []
        page, total = 1, None
        while True:
            response = self.get(path, {**params, "limit": limit, "page": page})
            if response.status_code != 200:
                problems.append(f"GET {path} page {page}: {response.status_code} {response.text[:300]}")
                return items, problems
            body = response.json()
            items.extend(body["data"])
            pagination = body["pagination"]
            if total is None:
                total = pagination["totalItems"]
            elif pagination["totalItems"] != total:
                problems.append(f"GET {path}: totalItems moved from {total} to {pagination['totalItems']}")
            if not pagination["nextPage"]:
                break
            page += 1
        if total != len(items):
            problems.append(f"GET {path}: totalItems {total}, {len(items)} items over {page} pages")
        return items, problems


def verify(server: Server, state: State, workers: int, page_size: int) -> list[Check]:
    reader = Reader(server)
    checks: list[Check] = []
    entities = list(state.entities.values())
    for kind in KINDS:
        items, problems = reader.pages(f"{CONSOLE}/{kind}", {"tags": state.tag}, page_size)
        check = check_listing(kind, entities, Counter(item["id"] for item in items))
        check.failures[:0] = problems
        checks.append(check)

    stored = Check("entities: acknowledged writes stored once, last version wins")

    def one(entity: Entity) -> list[str]:
        response = reader.get(f"{CONSOLE}/{entity.kind}/{entity.id}")
        if response.status_code == 404:
            return check_entity(entity, None, [])
        if response.status_code != 200:
            return [f"GET {entity.kind}/{entity.id}: {response.status_code} {response.text[:300]}"]
        history, problems = reader.pages(f"{CONSOLE}/{entity.kind}/{entity.id}/versions", {}, 1000)
        return problems + check_entity(entity, response.json()["data"], history)

    targets = [e for e in entities if e.created in ("acked", "unknown")]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for problems in pool.map(one, targets):
            stored.checked += 1
            stored.failures.extend(problems)
    checks.append(stored)

    listed: Counter[str] = Counter()
    counters = Check("events: each name's counter equals the events listed")
    pagination_problems: list[str] = []
    for name in state.event_names:
        items, problems = reader.pages(f"{CONSOLE}/events/{name}", {}, 1000)
        pagination_problems.extend(problems)
        listed.update(item["metadata"].get("marker", "") for item in items)
        response = reader.get(f"{CONSOLE}/events/{name}/summary")
        counted = response.json()["data"]["totalCount"] if response.status_code == 200 else 0
        counters.checked += 1
        if counted != len(items):
            counters.failures.append(f"{name}: summary totalCount {counted}, {len(items)} events listed")
    acked, other = check_events(state.batches, listed)
    acked.failures[:0] = pagination_problems
    checks += [acked, other, counters]

    reads = Check("reads: no version older than one already acknowledged")
    reads.checked = state.stats["get"].requests
    reads.failures = list(state.stale_reads)
    checks.append(reads)
    return checks


# --- figures -------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def timeline(finished: list[float], seconds: float, slices: int = 6) -> list[float]:
    """Requests per second in each of `slices` equal parts of the measured time."""
    width = seconds / slices
    counts = Counter(min(slices - 1, int(t / width)) for t in finished if t >= 0)
    return [counts.get(i, 0) / width for i in range(slices)]


def table(stats: dict[str, OpStats], seconds: float) -> list[str]:
    head = (
        f"{'operation':<13} {'requests':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'2xx':>7} {'409 exp':>7} {'unexp':>6} {'5xx':>5} {'transport':>9}"
    )
    lines = [head, "-" * len(head)]
    total = OpStats()

    def row(name: str, s: OpStats) -> str:
        p50, p99 = percentile(s.latencies_ms, 0.5) or 0.0, percentile(s.latencies_ms, 0.99) or 0.0
        return (
            f"{name:<13} {s.requests:>8} {s.requests / seconds:>8.1f} {p50:>8.1f} {p99:>8.1f} "
            f"{s.ok:>7} {s.expected:>7} {s.unexpected:>6} {s.server:>5} {s.transport:>9}"
        )

    for op in OP_ORDER:
        if stats[op].requests:
            lines.append(row(op, stats[op]))
            total.merge(stats[op])
    lines += ["-" * len(head), row("all", total)]
    return lines


def parse_mix(text: str) -> dict[str, float]:
    mix: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in OPS:
            raise argparse.ArgumentTypeError(f"unknown category {key!r} (reads, writes, ingest)")
        try:
            mix[key] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{key}: {value!r} is not a number") from None
        if mix[key] < 0:
            raise argparse.ArgumentTypeError(f"{key}: weights are not negative")
    if not any(mix.values()):
        raise argparse.ArgumentTypeError("at least one weight must be positive")
    return mix


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured time (default: %(default)s)")
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="measure from the first request, sandbox cold starts included (default: warm up first)",
    )
    parser.add_argument(
        "--mix",
        type=parse_mix,
        default=parse_mix("reads=50,writes=30,ingest=20"),
        help="weights of reads, writes and ingest (default: reads=50,writes=30,ingest=20)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed of the clients' choices (default: %(default)s)"
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        default=50,
        help="events per ingestion request, at most (default: %(default)s)",
    )
    parser.add_argument(
        "--page-size", type=int, default=100, help="page size of the list checks (default: %(default)s)"
    )
    parser.add_argument("--server", help="URL of a running server (default: start one, --ephemeral)")
    parser.add_argument("--api-key", help="its console key (with --server)")
    parser.add_argument("--server-secret", help="its server secret (with --server)")
    parser.add_argument(
        "--max-concurrency",
        type=int,
        help="sandboxes per function of the server this starts (its default: 10)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=10.0,
        help="the server this starts stops sandboxes idle this long (its default: 120); the "
        "workers and memory are printed after the burst and after that idle time (default: %(default)s)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures and checks to this file")
    args = parser.parse_args(argv)
    if args.server and not (args.api_key and args.server_secret):
        parser.error("--server needs --api-key and --server-secret")
    if args.clients < 1 or args.seconds <= 0 or not 1 <= args.max_batch <= 2000:
        parser.error("--clients ≥ 1, --seconds > 0, --max-batch 1 to 2000")
    return args


def load(args: argparse.Namespace, server: Server, state: State) -> float:
    """Run the clients (after the warm-up unless --no-warmup) for --seconds; the time measured."""
    clients = [Client(i, server, state, args.mix, args) for i in range(args.clients)]
    barrier = None if args.no_warmup else threading.Barrier(args.clients + 1)
    if barrier is None:
        state.measured_start, state.measuring = time.monotonic(), True
    for client in clients:
        client.barrier = barrier
        client.deadline = state.measured_start + args.seconds  # set again after a warm-up
        client.start()
    if barrier is not None:
        started = time.monotonic()
        try:
            for _ in range(len(WARMUP_STEPS)):
                barrier.wait(WARMUP_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass  # a client failed: it is reported as a crash
        print(f"warm-up: {time.monotonic() - started:.1f} s", flush=True)
        state.measured_start, state.measuring = time.monotonic(), True
        for client in clients:
            client.deadline = state.measured_start + args.seconds
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(WARMUP_TIMEOUT_S)  # go
    for client in clients:
        client.join()
    return time.monotonic() - state.measured_start


def summary(state: State, elapsed: float, checks: list[Check]) -> dict[str, Any]:
    """The figures and the checks, as --json writes them."""
    measured, warmup = OpStats(), OpStats()
    for op in OP_ORDER:
        measured.merge(state.stats[op])
        warmup.merge(state.warmup[op])
    errors = measured.errors + warmup.errors + len(state.crashes)
    failed = [c.name for c in checks if not c.passed]
    return {
        "run": state.run,
        "seconds": elapsed,
        "requests_per_second": measured.requests / elapsed,
        "p50_ms": percentile(measured.latencies_ms, 0.5),
        "p99_ms": percentile(measured.latencies_ms, 0.99),
        "timeline_requests_per_second": timeline(state.finished, elapsed),
        "operations": {
            op: {
                "requests": s.requests,
                "p50_ms": percentile(s.latencies_ms, 0.5),
                "p99_ms": percentile(s.latencies_ms, 0.99),
                "ok": s.ok,
                "expected_409": s.expected,
                "unexpected": s.unexpected,
                "5xx": s.server,
                "transport": s.transport,
            }
            for op, s in state.stats.items()
        },
        "errors": errors,
        "error_kinds": {
            "unexpected": measured.unexpected + warmup.unexpected,
            "5xx": measured.server + warmup.server,
            "transport": measured.transport + warmup.transport,
            "client_crashes": len(state.crashes),
        },
        "expected_409": measured.expected + warmup.expected,
        "warmup_requests": warmup.requests,
        "samples": [
            {"operation": op, **sample}
            for stats in (state.stats, state.warmup)
            for op, s in stats.items()
            for sample in s.samples
        ],
        "acknowledged": {
            "creates": sum(e.created == "acked" for e in state.entities.values()),
            "updates": sum(len(e.acked) for e in state.entities.values()),
            "events": sum(len(b.markers) for b in state.batches if b.acked),
            "batches": sum(b.acked for b in state.batches),
            "batches_sent_more_than_once": sum(b.sends > 1 for b in state.batches),
            "sends_overlapping_another": sum(b.overlapped for b in state.batches),
        },
        "unanswered": {
            "creates": sum(e.created == "unknown" for e in state.entities.values()),
            "updates": sum(len(e.unknown) for e in state.entities.values()),
            "batches": sum(b.unknown and not b.acked for b in state.batches),
        },
        "checks": [{"name": c.name, "checked": c.checked, "failures": c.failures[:100]} for c in checks],
        "verdict": "FAIL" if failed or errors else "PASS",
    }


def run(args: argparse.Namespace, server: Server, describe: str) -> int:
    state = State(secrets.token_hex(4))
    mix_text = ",".join(f"{k}={v:g}" for k, v in args.mix.items())
    print(
        f"load: {args.clients} clients, {args.seconds:g} s{'' if args.no_warmup else ' after a warm-up'}, "
        f"mix {mix_text}, seed {args.seed}, run {state.run}, {describe}",
        flush=True,
    )
    elapsed = load(args, server, state)
    print()
    for line in table(state.stats, elapsed):
        print(line)
    figures = summary(state, elapsed, [])
    slices = timeline(state.finished, elapsed)
    print(f"\nreq/s over time ({elapsed / len(slices):.0f} s slices): {' '.join(f'{r:.1f}' for r in slices)}")
    kinds, done = figures["error_kinds"], figures["acknowledged"]
    print(
        f"\nmeasured {elapsed:.1f} s (+{figures['warmup_requests']} warm-up requests); errors "
        f"{figures['errors']} (unexpected {kinds['unexpected']}, 5xx {kinds['5xx']}, transport "
        f"{kinds['transport']}, client crashes {kinds['client_crashes']}); 409 as expected "
        f"{figures['expected_409']}"
    )
    print(
        f"acknowledged: {done['creates']} creates, {done['updates']} updates, {done['events']} events in "
        f"{done['batches']} batches ({done['batches_sent_more_than_once']} sent more than once, "
        f"{done['sends_overlapping_another']} re-sends while an earlier send was in flight); "
        "unanswered (a 5xx or no answer): "
        + ", ".join(f"{n} {what}" for what, n in figures["unanswered"].items()),
        flush=True,
    )
    for sample in figures["samples"]:
        print(f"  {sample['operation']}: {sample['request']} {sample['body'][:120]}")
        print(f"    -> {sample['status']} {sample['response'][:300]}")
    for crash in state.crashes:
        print(f"  client crash: {crash}")

    print("\nverifying (clients stopped)...", flush=True)
    started = time.monotonic()
    checks = verify(server, state, max(4, args.clients), args.page_size)
    for check in checks:
        mark = "ok  " if check.passed else "FAIL"
        print(f"  {mark} {check.name}: {check.checked} checked, {len(check.failures)} failures")
        for failure in check.failures[:10]:
            print(f"         {failure}")
    print(f"  ({time.monotonic() - started:.1f} s)")
    figures = summary(state, elapsed, checks)
    failed = [c.name for c in checks if not c.passed]
    if figures["verdict"] == "FAIL":
        reasons = [f"{figures['errors']} errors"] if figures["errors"] else []
        reasons += [f"failed: {name}" for name in failed]
        print(f"\nverdict: FAIL ({'; '.join(reasons)})")
    else:
        rate, p50, p99 = figures["requests_per_second"], figures["p50_ms"] or 0, figures["p99_ms"] or 0
        print(
            f"\nverdict: PASS ({rate:.1f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms, 0 errors; "
            "every acknowledged write and event stored exactly once)"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if figures["verdict"] == "FAIL" else 0


def _children(pid: int) -> list[int]:
    """Direct child processes of `pid` (Linux /proc): the server's sandboxes."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _rss_mib(pids: Iterable[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def footprint(server_pid: int, idle_seconds: float) -> None:
    """Workers (sandbox processes) and resident memory after the burst, then after the idle time
    the server reaps them at; server and workers together. Linux only (/proc)."""
    if not Path("/proc/self/stat").exists():
        print("\nworkers and memory: not measured (needs Linux /proc)")
        return
    workers = _children(server_pid)
    busy = (len(workers), _rss_mib([server_pid, *workers]))
    wait = idle_seconds + min(5.0, idle_seconds / 4) + 2.0
    print(f"\nworkers after the burst: {busy[0]}, resident memory {busy[1]:.0f} MiB; idling {wait:.0f} s...")
    time.sleep(wait)
    workers = _children(server_pid)
    idle = (len(workers), _rss_mib([server_pid, *workers]))
    ratio = idle[1] / busy[1] if busy[1] else 0.0
    print(
        f"workers after {wait:.0f} s idle: {idle[0]}, resident memory {idle[1]:.0f} MiB "
        f"({ratio:.2f} of the burst's)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.server:
        server = Server(args.server.rstrip("/"), args.api_key, args.server_secret)
        return run(args, server, f"server {server.url}")

    sys.path.insert(0, str(ROOT / "layers" / "core"))
    from expconsole_tools.local.process import ServeProcess

    serve_args = ["--ephemeral", "--port", "0", "--quiet", "--idle-seconds", f"{args.idle_seconds:g}"]
    if args.max_concurrency:
        serve_args += ["--max-concurrency", str(args.max_concurrency)]
    with tempfile.TemporaryDirectory(prefix="expconsole-load-") as tmp:
        log = Path(tmp) / "serve.log"
        process = ServeProcess(*serve_args, cwd=ROOT, stderr=log)
        try:
            process.start()
        except RuntimeError as exc:
            print(f"load: {exc}", file=sys.stderr)
            return 2
        try:
            concurrency = args.max_concurrency or "10 (default)"
            status = run(
                args,
                Server(process.url, process.api_key, process.server_secret),
                f"own server {process.url} (--max-concurrency {concurrency})",
            )
            footprint(process.pid, args.idle_seconds)
        finally:
            process.stop()
        text = log.read_text(errors="replace")
        if "Traceback" in text:
            print("\nserver log (tracebacks):")
            print(text[-4000:])
        return status


if __name__ == "__main__":
    sys.exit(main())
