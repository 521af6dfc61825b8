"""Holdouts: create, read, list, update, delete, archive, and the holdout-experiment link.

The link is stored on both sides, a holdout's `experimentIDs` and each experiment's
`holdoutIDs`, and kept so that `h in e.holdoutIDs` exactly when `e in h.experimentIDs`:

- Every write that changes the link, from either side, writes the holdout and every
  experiment whose side changes in ONE DynamoDB transaction (`dynamo.write_many`), each item
  conditional on the version this request read. A concurrent edit of any of them (another
  link change, or an ordinary update of one of the experiments) cancels the whole transaction:
  nothing changes. The request then re-reads everything and tries again, up to `ATTEMPTS`
  times in all, and answers 409 if it keeps losing. With `version` in the body, a re-read that
  finds another version is a 409 at once (the client's change was based on an older one).
- Writes that do not touch the link (an experiment's description, say) are ordinary
  conditional writes of one entity: they keep the link fields as read, and if a link change
  landed in between, their version condition fails and they answer 409.
- Experiment side (`expconsole.services.experiments`): creating an experiment with
  `holdoutIDs`, or changing them in an update, goes through `insert_experiment` /
  `update_experiment` below. Deleting an experiment that any holdout lists is a 409 (remove it
  from the holdouts first); that check reads the experiment's own `holdoutIDs`, and the delete
  is conditional on the version read, so a holdout adding it concurrently makes one of the two
  fail.
- Deleting a holdout first detaches its experiments (one transaction: the holdout at its next
  version with no experiments, and each experiment without it), then deletes the holdout on
  the condition that it is still at that version; a change in between (someone adding an
  experiment again) makes it start over. The link is consistent after each step.
- Archiving detaches the experiments in the same transaction that archives the holdout, so an
  archived holdout holds no experiments (its last version before the archive, in the version
  history, says which it held). Unarchive does not re-attach them. While archived, a holdout
  cannot be changed (400) and no experiment can join it (400); it can be deleted.

Rules where the contract is silent: references must exist (gates, layers, experiments, the
targeting gate; an empty `targetingGateID` means none) and appear once per list; an archived
experiment cannot join a holdout but can leave one; one request adds or removes at most 49
experiments (49 + the holdout = the 50 entities one transaction holds), and a holdout holds at
most 49, so that delete and archive can always detach them in one go. `passPercentage` is 0 to
100 with at most two decimals (the issue's bound; the peer documents 0 to 10). Ids default to
the name in lower case with spaces as underscores; a duplicate id is a 409.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence

from expconsole import config, context, kinds
from expconsole.errors import Conflict, Invalid, TooLarge
from expconsole.models.holdouts import (
    MAX_EXPERIMENTS,
    Holdout,
    HoldoutCreate,
    HoldoutFields,
    HoldoutListQuery,
    HoldoutPatch,
    HoldoutUpdate,
    StoredHoldout,
)
from expconsole.models.pagination import Page, page_of
from expconsole.models.stored import ArchiveState
from expconsole.services import entities
from expconsole.services.common import lifecycle
from expconsole.services.common import patch as partial
from expconsole.services.common.size import stored_bytes
from expconsole.services.entities import Doc
from expconsole.store import dynamo

KIND = kinds.HOLDOUT
ATTEMPTS = 4
MAX_TRANSACTION_BYTES = 4_000_000  # DynamoDB: 4 MB per transaction (each entity is written twice)

Replace = tuple[str, str, Doc, int]


# --- shared helpers -------------------------------------------------------------------------------


def stamp(doc: Doc, current: Doc) -> Doc:
    """Make `doc` the next version of `current`, modified now by the calling key."""
    doc["version"] = int(current["version"]) + 1
    doc["lastModifiedTime"] = max(entities.now_ms(), int(current["lastModifiedTime"]))
    doc["lastModifierID"] = context.current().key_id
    doc["lastModifierName"] = config.CREATOR_NAME
    doc["lastModifierEmail"] = None
    return doc


def _linked(kind: str, current: Doc, field: str, values: list[str]) -> Replace:
    """`current` with `field` set to `values`, as the next version, conditional on the one read."""
    doc = stamp({**current, field: values}, current)
    return (kind, current["id"], doc, int(current["version"]))


def _no_repeats(values: Sequence[str], field: str) -> None:
    seen: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in seen:
            raise Invalid.field(f"{field}[{index}]", f"repeats {field}[{seen[value]}] ({value!r})")
        seen[value] = index


def _commit(creates: Sequence[tuple[str, str, Doc]], replaces: Sequence[Replace]) -> None:
    """One all-or-nothing transaction; dynamo.StoreConflict when any version moved on."""
    size = sum(2 * stored_bytes(w[2]) for w in (*creates, *replaces))
    if size > MAX_TRANSACTION_BYTES:
        raise TooLarge(
            f"The entities this change links would take {size} bytes in one transaction; at most "
            f"{MAX_TRANSACTION_BYTES} fit. Link fewer experiments per request."
        )
    dynamo.write_many(creates, replaces)


def _busy(kind: str, entity_id: str) -> Conflict:
    return Conflict(
        f"{kinds.LABEL[kind]} {entity_id!r} or an entity it links was changed by other requests "
        f"{ATTEMPTS} times while this one was applied; nothing was changed. Read it again and retry."
    )


def _stale(kind: str, entity_id: str, sent: int, stored: int) -> Conflict:
    return Conflict(
        f"{kinds.LABEL[kind]} {entity_id!r} is at version {stored}, not {sent}: it was changed since "
        "you read it; read it again and retry.",
        [{"field": "version", "message": f"stale: the stored version is {stored}"}],
    )


def _too_many(field: str, count: int, what: str) -> Invalid:
    return Invalid.field(
        field,
        f"would add or remove {count} {what} in one request; at most {MAX_EXPERIMENTS} change at once "
        "(they change together with this entity in one transaction): split the change",
    )


# --- the link, holdout side ---------------------------------------------------------------------------


def _experiment_writes(holdout_id: str, before: Iterable[str], after: Sequence[str]) -> list[Replace]:
    """The experiment writes that make each experiment's `holdoutIDs` agree with the holdout's
    `experimentIDs` going from `before` to `after`. Added experiments must exist and not be
    archived (400 naming `experimentIDs[i]`)."""
    before = list(before)
    added = [(i, e) for i, e in enumerate(after) if e not in before]
    removed = [e for e in before if e not in after]
    if len(added) + len(removed) > MAX_EXPERIMENTS:
        raise _too_many("experimentIDs", len(added) + len(removed), "experiments")
    writes: list[Replace] = []
    for index, exp_id in added:
        field = f"experimentIDs[{index}]"
        exp = dynamo.get(kinds.EXPERIMENT, exp_id)
        if exp is None:
            raise Invalid.field(field, f"experiment {exp_id!r} does not exist")
        if lifecycle.is_archived(exp):
            raise Invalid.field(field, f"experiment {exp_id!r} is archived: unarchive it first")
        ids = list(exp.get("holdoutIDs") or [])
        if holdout_id not in ids:
            writes.append(_linked(kinds.EXPERIMENT, exp, "holdoutIDs", [*ids, holdout_id]))
    for exp_id in removed:
        exp = dynamo.get(kinds.EXPERIMENT, exp_id)
        ids = list((exp or {}).get("holdoutIDs") or [])
        if exp is not None and holdout_id in ids:
            writes.append(_linked(kinds.EXPERIMENT, exp, "holdoutIDs", [h for h in ids if h != holdout_id]))
    return writes


# --- the link, experiment side (hook of expconsole.services.experiments) -------------------------------


def _holdout_writes(exp_id: str, before: Iterable[str], after: Sequence[str]) -> list[Replace]:
    """The holdout writes that make each holdout's `experimentIDs` agree with the experiment's
    `holdoutIDs` going from `before` to `after`. Added holdouts must exist and not be archived
    (400 naming `holdoutIDs[i]`)."""
    before = list(before)
    _no_repeats(after, "holdoutIDs")
    added = [(i, h) for i, h in enumerate(after) if h not in before]
    removed = [h for h in before if h not in after]
    if len(added) + len(removed) > MAX_EXPERIMENTS:
        raise _too_many("holdoutIDs", len(added) + len(removed), "holdouts")
    writes: list[Replace] = []
    for index, holdout_id in added:
        field = f"holdoutIDs[{index}]"
        holdout = dynamo.get(KIND, holdout_id)
        if holdout is None:
            raise Invalid.field(field, f"holdout {holdout_id!r} does not exist")
        if lifecycle.is_archived(holdout):
            raise Invalid.field(field, f"holdout {holdout_id!r} is archived: unarchive it first")
        ids = list(holdout["experimentIDs"])
        if exp_id not in ids:
            if len(ids) >= MAX_EXPERIMENTS:
                raise Invalid.field(
                    field, f"holdout {holdout_id!r} holds {len(ids)} experiments already, the most it may"
                )
            writes.append(_linked(KIND, holdout, "experimentIDs", [*ids, exp_id]))
    for holdout_id in removed:
        holdout = dynamo.get(KIND, holdout_id)
        ids = list((holdout or {}).get("experimentIDs") or [])
        if holdout is not None and exp_id in ids:
            writes.append(_linked(KIND, holdout, "experimentIDs", [e for e in ids if e != exp_id]))
    return writes


def insert_experiment(doc: Doc) -> Doc:
    """Create an experiment whose `holdoutIDs` are set, adding it to those holdouts atomically."""
    exp_id = doc["id"]
    for _attempt in range(ATTEMPTS):
        writes = _holdout_writes(exp_id, [], doc.get("holdoutIDs") or [])
        try:
            _commit([(kinds.EXPERIMENT, exp_id, doc)], writes)
            return doc
        except dynamo.StoreConflict:
            if dynamo.get(kinds.EXPERIMENT, exp_id) is not None:
                raise Conflict(f"Experiment with id {exp_id!r} already exists.") from None
    raise _busy(kinds.EXPERIMENT, exp_id)


def update_experiment(exp_id: str, change: Callable[[Doc], None], expected_version: int | None) -> Doc:
    """Apply `change` to the experiment as `entities.update` would, and make the holdouts it
    joins or leaves (its `holdoutIDs` before and after) agree, all in one transaction."""
    for _attempt in range(ATTEMPTS):
        current = entities.load(kinds.EXPERIMENT, exp_id)
        version = int(current["version"])
        if expected_version is not None and expected_version != version:
            raise _stale(kinds.EXPERIMENT, exp_id, expected_version, version)
        doc = copy.deepcopy(current)
        change(doc)
        stamp(doc, current)
        writes = _holdout_writes(exp_id, current.get("holdoutIDs") or [], doc.get("holdoutIDs") or [])
        try:
            _commit([], [(kinds.EXPERIMENT, exp_id, doc, version), *writes])
            return doc
        except dynamo.StoreConflict:
            continue
    raise _busy(kinds.EXPERIMENT, exp_id)


# --- reading -----------------------------------------------------------------------------------------


def present(holdout: StoredHoldout) -> Holdout:
    """The holdout as the API returns it: stored fields plus `isArchived` and `permalink`."""
    return Holdout.model_validate(
        {
            **entities.public(holdout.doc()),
            "isArchived": lifecycle.entity_is_archived(holdout),
            "permalink": entities.permalink(KIND, holdout.id),
        }
    )


def get(holdout_id: str) -> Holdout:
    return present(entities.load(StoredHoldout, holdout_id))


def _matches(holdout: StoredHoldout, q: HoldoutListQuery) -> bool:
    checks = [
        q.includeArchived or not lifecycle.entity_is_archived(holdout),
        q.creatorName is None or holdout.creatorName == q.creatorName,
        q.creatorID is None or holdout.creatorID == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(holdout.tags)),
    ]
    return all(checks)


def list_holdouts(q: HoldoutListQuery) -> Page[Holdout]:
    stored = [StoredHoldout.read(doc) for doc in dynamo.list_all(KIND)]
    matching = [holdout for holdout in stored if _matches(holdout, q)]
    return page_of(matching, page=q.page, limit=q.limit).map(present)


# --- writing ------------------------------------------------------------------------------------------


def _check_references(holdout: StoredHoldout, fields: Iterable[str]) -> None:
    """References among `fields` must exist and appear once (experiments: `_experiment_writes`)."""
    fields = set(fields)
    for field, kind, refs in (
        ("gateIDs", kinds.GATE, holdout.gateIDs),
        ("layerIDs", kinds.LAYER, holdout.layerIDs),
    ):
        if field in fields:
            _no_repeats(refs, field)
            for index, ref in enumerate(refs):
                entities.require_exists(kind, ref, f"{field}[{index}]")
    if "experimentIDs" in fields:
        _no_repeats(holdout.experimentIDs, "experimentIDs")
    if "targetingGateID" in fields and holdout.targetingGateID:
        entities.require_exists(kinds.GATE, holdout.targetingGateID, "targetingGateID")


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(HoldoutCreate.model_fields.keys() & HoldoutFields.model_fields.keys()) - {
    "id",
    "owner",
    "creatorID",
    "creatorEmail",
}


def create(body: HoldoutCreate) -> Holdout:
    holdout_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(holdout_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    holdout = StoredHoldout(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=holdout_id,
        owner=entities.owner(body.owner),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        state=ArchiveState(archived=False),
    )
    _check_references(holdout, ("gateIDs", "layerIDs", "experimentIDs", "targetingGateID"))
    doc = holdout.doc()
    for _attempt in range(ATTEMPTS):
        writes = _experiment_writes(holdout_id, [], holdout.experimentIDs)
        try:
            _commit([(KIND, holdout_id, doc)], writes)
            return present(holdout)
        except dynamo.StoreConflict:
            if dynamo.get(KIND, holdout_id) is not None:
                raise Conflict(f"Holdout with id {holdout_id!r} already exists.") from None
    raise _busy(KIND, holdout_id)


def _write(
    holdout_id: str, change: Callable[[StoredHoldout], None], expected_version: int | None = None
) -> StoredHoldout:
    """Read, change, and store the holdout as its next version with the experiment side of any
    link change, at once; on a conflict read it again and apply `change` to that (up to
    `ATTEMPTS` times)."""
    for _attempt in range(ATTEMPTS):
        holdout = entities.current(StoredHoldout, holdout_id, expected_version)
        before = list(holdout.experimentIDs)
        change(holdout)
        version = entities.stamp(holdout)
        writes = _experiment_writes(holdout_id, before, holdout.experimentIDs)
        try:
            _commit([], [(KIND, holdout_id, holdout.doc(), version), *writes])
            return holdout
        except dynamo.StoreConflict:
            continue
    raise _busy(KIND, holdout_id)


# Update fields stored as sent (`owner` is stored as `entities.owner` makes it).
_SET_AS_SENT = frozenset(HoldoutPatch.model_fields) - {"owner", "version"}


def _update(holdout_id: str, body: HoldoutUpdate | HoldoutPatch) -> Holdout:
    def change(holdout: StoredHoldout) -> None:
        lifecycle.refuse_if_archived(holdout, "Holdout")
        holdout.set_sent(body, _SET_AS_SENT)
        if body.owner is not None:
            holdout.owner = entities.owner(body.owner)
        _check_references(holdout, body.model_fields_set)

    return present(_write(holdout_id, change, body.version))


def full_update(holdout_id: str, body: HoldoutUpdate) -> Holdout:
    return _update(holdout_id, body)


def patch(holdout_id: str, body: HoldoutPatch) -> Holdout:
    if not partial.asks_change(body):
        return present(entities.current(StoredHoldout, holdout_id, body.version))
    return _update(holdout_id, body)


def archive(holdout_id: str, reason: str | None) -> Holdout:
    """Archive, detaching its experiments (with their side of the link, in one transaction)."""

    def change(holdout: StoredHoldout) -> None:
        lifecycle.refuse_archiving_twice(holdout, "Holdout")
        holdout.experimentIDs = []
        holdout.state = lifecycle.archived_state(holdout.state, reason)

    return present(_write(holdout_id, change))


def unarchive(holdout_id: str) -> Holdout:
    def change(holdout: StoredHoldout) -> None:
        lifecycle.refuse_unless_archived(holdout, "Holdout")
        holdout.state = lifecycle.unarchived_state(holdout.state)

    return present(_write(holdout_id, change))


def delete(holdout_id: str) -> None:
    for _attempt in range(ATTEMPTS):
        holdout = entities.load(StoredHoldout, holdout_id)
        # Detaching the experiments and deleting the holdout is one transaction: a failure leaves
        # both as they were, never a detached holdout that still exists.
        writes = _experiment_writes(holdout_id, holdout.experimentIDs, [])
        try:
            dynamo.delete(KIND, holdout_id, expected_version=holdout.version, replaces=writes)
            return
        except dynamo.StoreConflict:
            continue
    raise _busy(KIND, holdout_id)
