"""Segments: create, read, list, delete, archive, rules (rule_based) and ids (id_list).

- The type is fixed at creation. Rules are for `rule_based` segments (on create or with
  `set_rules`), ids for `id_list` ones; the other type's endpoint is a 400 saying which to use.
- Rule ids are assigned by the service and kept when a rule is sent back with its `id`, as
  for gates. Segment conditions may name other segments (`passes_segment`/`fails_segment`),
  which must exist, must not be the segment itself and must not form a cycle; gate conditions
  are refused (segments are what gates are built from, not the other way round).
- Ids live outside the segment's document (store/segment_ids.py), so a list is not bound by
  the 400 KB item limit. A request adds or removes 1 to 1000 ids; repeats count once, adding
  an id already there or removing one that is not changes nothing. The document keeps `count`,
  recounted after each change; reading the list pages through the stored ids in sort order.
  A change that leaves the list as it was does not make a new version.
- Users: gates, dynamic configs, experiments (inline targeting), release pipelines (phase
  rules), holdouts and other segments whose conditions name the segment. Deleting a used
  segment is a 409 naming them (archived ones included: they could be unarchived); archiving
  is a 409 naming its unarchived users unless `forceArchive` is true.
- Archive is soft: archived segments leave the list unless `includeArchived=true`, answer
  reads (ids included), and refuse changes (400). Deleting a segment removes its ids too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from expconsole import config, kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.pagination import Page, page_of
from expconsole.models.rules import referenced_ids
from expconsole.models.segments import (
    IdList,
    Segment,
    SegmentCreate,
    SegmentFields,
    SegmentListQuery,
    SegmentRule,
    SegmentState,
    StoredSegment,
)
from expconsole.services import entities
from expconsole.services.common import lifecycle, references, size
from expconsole.services.common import rules as rules_common
from expconsole.services.entities import Doc
from expconsole.store import dynamo, segment_ids

KIND = kinds.SEGMENT
LABEL = "Segment"
RULE_BASED = "rule_based"
ID_LIST = "id_list"
SEGMENT_REFERENCE_TYPES = rules_common.SEGMENT_CONDITIONS
REFUSED_CONDITION_TYPES = rules_common.GATE_CONDITIONS


def present(doc: Doc) -> Segment:
    return Segment.model_validate({**entities.public(doc), "isArchived": lifecycle.is_archived(doc)})


def _path(segment_id: str, action: str = "") -> str:
    return f"{config.CONSOLE_PREFIX}/segments/{segment_id}{action}"


# --- rules ---------------------------------------------------------------------------------------


def _refuse_gate_conditions(index: int, rule: SegmentRule, field: str) -> None:
    for c_index, cond in enumerate(rule.conditions):
        if cond.type in REFUSED_CONDITION_TYPES:
            raise Invalid.field(
                f"{field}[{index}].conditions[{c_index}].type",
                f"condition type {cond.type!r} is not allowed in a segment; gates may use segments, "
                "segments may not use gates",
            )


def _stored_rules(given: Iterable[SegmentRule], existing: list[Doc], field: str) -> list[Doc]:
    """Rules as stored: a rule sent with an `id` keeps that rule's ids, one without gets new ones.

    `field` is where the rules are in the body: `rules` on create, `` for the bare array.
    """
    given = list(given)
    ids = rules_common.assign_ids(
        (r.id for r in given), existing, field, "segment", "; leave it out for a new one"
    )
    out: list[Doc] = []
    for index, rule in enumerate(given):
        _refuse_gate_conditions(index, rule, field)
        rule_id, base_id, _ = next(ids)
        out.append(rules_common.rule_doc(rule.model_dump(mode="json"), rule_id, base_id))
    return out


def _check_references(segment_id: str, rules: list[Doc], field: str) -> None:
    """Segment conditions name existing segments other than this one, without a cycle."""
    where: dict[str, str] = {}  # the first condition naming each segment
    for r_index, rule in enumerate(rules):
        for c_index, cond in enumerate(rule["conditions"]):
            if cond["type"] not in SEGMENT_REFERENCE_TYPES:
                continue
            target, here = cond["targetValue"], f"{field}[{r_index}].conditions[{c_index}].targetValue"
            if target == segment_id:
                raise Invalid.field(here, "a segment cannot depend on itself")
            entities.require_exists(KIND, target, here)
            where.setdefault(target, here)
    if not where:
        return
    graph = {
        s["id"]: referenced_ids(s.get("rules") or [], SEGMENT_REFERENCE_TYPES) for s in dynamo.list_all(KIND)
    }
    graph[segment_id] = set(where)
    path = rules_common.cycle_from(segment_id, graph)
    if path:
        raise Invalid.field(where[path[1]], "segment conditions would form a cycle: " + " -> ".join(path))


def _check_size(segment: StoredSegment) -> None:
    size.check_stored_size(
        segment.doc(), "segment", "Use fewer rules or condition values, or an id_list segment."
    )


def _rule_docs(segment: StoredSegment) -> list[Doc]:
    """The segment's rules as stored, the shape services.common.rules works on."""
    return [rule.model_dump(mode="json", exclude_unset=True) for rule in segment.rules or []]


def _set_rules(segment: StoredSegment, rules: list[Doc], field: str) -> None:
    """Rules checked (references, stored size) and set; `field` is where they are in the body."""
    _check_references(segment.id, rules, field)
    segment.set_fields({"rules": rules})
    _check_size(segment)


# --- create, read, list --------------------------------------------------------------------------


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(SegmentCreate.model_fields.keys() & SegmentFields.model_fields.keys()) - {
    "id",
    "creatorID",
    "creatorEmail",
}


def create(body: SegmentCreate) -> Segment:
    segment_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(segment_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    data = body.model_dump(mode="json")
    segment = StoredSegment(
        **{field: data[field] for field in _STORED_AS_SENT},
        id=segment_id,
        isEnabled=True,
        targetApps=[],
        holdoutIDs=[],
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        state=SegmentState(archived=False),
    )
    if body.type == RULE_BASED:
        _set_rules(segment, _stored_rules(body.rules or [], [], "rules"), "rules")
    else:
        if body.rules:
            raise Invalid.field("rules", "only rule_based segments have rules; an id_list segment holds ids")
        segment.count = 0
        segment.state = SegmentState(archived=False, idListKey=entities.new_id(12))
    return present(entities.insert(KIND, segment_id, segment.doc()))


def get(segment_id: str) -> Segment:
    return present(entities.load(KIND, segment_id))


def list_segments(q: SegmentListQuery) -> Page[Segment]:
    docs = [d for d in dynamo.list_all(KIND) if q.includeArchived or not lifecycle.is_archived(d)]
    return page_of(docs, page=q.page, limit=q.limit).map(present)


# --- users, delete, archive ------------------------------------------------------------------------


def users(segment_id: str) -> list[Doc]:
    """Stored entities whose conditions name the segment, archived or not (the kinds and fields
    are services.common.references')."""
    return references.users(KIND, segment_id)


_describe = references.describe


def delete(segment_id: str) -> None:
    doc = entities.load(KIND, segment_id)
    found = users(segment_id)
    if found:
        raise Conflict(
            f"{LABEL} {segment_id!r} is used by {_describe(found)}; remove those conditions first."
        )
    entities.remove(KIND, segment_id, doc)
    list_key = StoredSegment.read(doc).state.idListKey
    if list_key:
        segment_ids.purge(segment_id, list_key)


def archive(segment_id: str, force: bool, reason: str | None) -> Segment:
    def in_use(doc: Doc) -> None:
        if not force:
            active = [u for u in users(segment_id) if not lifecycle.is_archived(u)]
            if active:
                raise Conflict(
                    f"{LABEL} {segment_id!r} is still used by {_describe(active)}; remove those "
                    "conditions or archive with forceArchive: true."
                )

    return present(lifecycle.archive(KIND, segment_id, reason, label=LABEL, check=in_use))


# --- rules and ids ---------------------------------------------------------------------------------


def _update(segment_id: str, change: Callable[[StoredSegment], None]) -> Segment:
    """The next version of the segment, `change` applied to its stored model."""
    return present(entities.update_stored(KIND, segment_id, StoredSegment, change))


def _require_type(segment: StoredSegment, wanted: str, action: str) -> None:
    if segment.type == wanted:
        return
    if segment.type == ID_LIST:
        hint = f"change its ids with PATCH or DELETE {_path(segment.id, '/id_list')}"
    else:
        hint = f"set its rules with POST {_path(segment.id, '/conditional')}"
    article = "an" if segment.type == ID_LIST else "a"
    raise Invalid(f"{LABEL} {segment.id!r} is {article} {segment.type} segment: it cannot {action}; {hint}.")


def _refuse_if_archived(segment: StoredSegment) -> None:
    lifecycle.refuse_if_archived(segment.doc(), LABEL, "it cannot be changed")


def set_rules(segment_id: str, rules: list[SegmentRule]) -> Segment:
    def change(segment: StoredSegment) -> None:
        _require_type(segment, RULE_BASED, "have rules")
        _refuse_if_archived(segment)
        _set_rules(segment, _stored_rules(rules, _rule_docs(segment), ""), "")

    return _update(segment_id, change)


def _id_list(segment_id: str, action: str) -> tuple[StoredSegment, str]:
    segment = StoredSegment.read(entities.load(KIND, segment_id))
    _require_type(segment, ID_LIST, action)
    list_key = segment.state.idListKey
    assert list_key is not None, "an id_list segment gets its list's key when created"
    return segment, list_key


def get_ids(segment_id: str, page: int, limit: int) -> tuple[IdList, Page[str]]:
    """The list's name and size with one page of its ids, and that page (for its links)."""
    segment, list_key = _id_list(segment_id, "list ids")
    ids = segment_ids.all_ids(segment_id, list_key)
    one = page_of(ids, page=page, limit=limit)
    return IdList(name=segment.name, count=len(ids), ids=one.items), one


def _change_ids(segment_id: str, ids: list[str], adding: bool) -> Segment:
    segment, list_key = _id_list(segment_id, "hold ids")
    _refuse_if_archived(segment)
    distinct = list(dict.fromkeys(ids))
    if adding:
        segment_ids.add(segment_id, list_key, distinct)
    else:
        segment_ids.remove(segment_id, list_key, distinct)
    count = segment_ids.count(segment_id, list_key)
    if count == segment.count:
        return present(segment.doc())  # the set is as it was: nothing to record

    def change(current: StoredSegment) -> None:
        current.count = count

    return _update(segment_id, change)


def add_ids(segment_id: str, ids: list[str]) -> Segment:
    return _change_ids(segment_id, ids, adding=True)


def remove_ids(segment_id: str, ids: list[str]) -> Segment:
    return _change_ids(segment_id, ids, adding=False)
