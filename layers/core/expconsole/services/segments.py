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

from expconsole import config, kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.pagination import Page, page_of
from expconsole.models.rules import RulePatch
from expconsole.models.segments import (
    IdList,
    Segment,
    SegmentCreate,
    SegmentFields,
    SegmentListQuery,
    SegmentRule,
    SegmentRuleOut,
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


def present(segment: StoredSegment) -> Segment:
    return Segment.model_validate(
        {**entities.public(segment.doc()), "isArchived": lifecycle.entity_is_archived(segment)}
    )


def _path(segment_id: str, action: str = "") -> str:
    return f"{config.CONSOLE_PREFIX}/segments/{segment_id}{action}"


# --- rules ---------------------------------------------------------------------------------------


def _refuse_gate_conditions(rule: SegmentRule, where: str) -> None:
    for c_index, cond in enumerate(rule.conditions):
        if cond.type in rules_common.GATE_CONDITIONS:
            raise Invalid.field(
                f"{where}.conditions[{c_index}].type",
                f"condition type {cond.type!r} is not allowed in a segment; gates may use segments, "
                "segments may not use gates",
            )


RULES: rules_common.RuleKind[SegmentRule, RulePatch, SegmentRuleOut] = rules_common.RuleKind(
    owner="segment",
    label=LABEL,
    stored=SegmentRuleOut,
    hint="; leave it out for a new one",
    vet=_refuse_gate_conditions,
    entity=KIND,
)


def _check_size(segment: StoredSegment) -> None:
    size.check_stored_size(
        segment.doc(), "segment", "Use fewer rules or condition values, or an id_list segment."
    )


def _set_rules(segment: StoredSegment, rules: list[SegmentRuleOut], field: str) -> None:
    """Rules checked (conditions, stored size) and set; `field` is where they are in the body."""
    rules_common.check_conditions(rules_common.placed(rules, field), RULES, segment.id)
    segment.rules = rules
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
    segment = StoredSegment(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=segment_id,
        isEnabled=True,
        targetApps=[],
        holdoutIDs=[],
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        state=SegmentState(archived=False),
    )
    if body.type == RULE_BASED:
        _set_rules(segment, rules_common.stored_rules(RULES, body.rules or [], [], "rules"), "rules")
    else:
        if body.rules:
            raise Invalid.field("rules", "only rule_based segments have rules; an id_list segment holds ids")
        segment.count = 0
        segment.state = SegmentState(archived=False, idListKey=entities.new_id(12))
    return present(entities.insert(segment))


def get(segment_id: str) -> Segment:
    return present(entities.load(StoredSegment, segment_id))


def list_segments(q: SegmentListQuery) -> Page[Segment]:
    stored = [StoredSegment.read(d) for d in dynamo.list_all(KIND)]
    shown = [s for s in stored if q.includeArchived or not lifecycle.entity_is_archived(s)]
    return page_of(shown, page=q.page, limit=q.limit).map(present)


# --- users, delete, archive ------------------------------------------------------------------------


def users(segment_id: str) -> list[Doc]:
    """Stored entities whose conditions name the segment, archived or not (the kinds and fields
    are services.common.references')."""
    return references.users(KIND, segment_id)


_describe = references.describe


def delete(segment_id: str) -> None:
    segment = entities.load(StoredSegment, segment_id)
    found = users(segment_id)
    if found:
        raise Conflict(
            f"{LABEL} {segment_id!r} is used by {_describe(found)}; remove those conditions first."
        )
    entities.remove(segment)
    list_key = segment.state.idListKey
    if list_key:
        segment_ids.purge(segment_id, list_key)


def archive(segment_id: str, force: bool, reason: str | None) -> Segment:
    segment = entities.load(StoredSegment, segment_id)
    lifecycle.refuse_archiving_twice(segment, LABEL)
    if not force:
        active = [u for u in users(segment_id) if not lifecycle.is_archived(u)]
        if active:
            raise Conflict(
                f"{LABEL} {segment_id!r} is still used by {_describe(active)}; remove those "
                "conditions or archive with forceArchive: true."
            )
    segment.state = lifecycle.archived_state(segment.state, reason)
    return present(entities.replace(segment))


# --- rules and ids ---------------------------------------------------------------------------------


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
    lifecycle.refuse_if_archived(segment, LABEL, "it cannot be changed")


def set_rules(segment_id: str, rules: list[SegmentRule]) -> Segment:
    segment = entities.load(StoredSegment, segment_id)
    _require_type(segment, RULE_BASED, "have rules")
    _refuse_if_archived(segment)
    _set_rules(segment, rules_common.stored_rules(RULES, rules, segment.rules or [], ""), "")
    return present(entities.replace(segment))


def _id_list(segment_id: str, action: str) -> tuple[StoredSegment, str]:
    segment = entities.load(StoredSegment, segment_id)
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
        return present(segment)  # the set is as it was: nothing to record
    current = entities.load(StoredSegment, segment_id)  # as it is now, the ids changed
    current.count = count
    return present(entities.replace(current))


def add_ids(segment_id: str, ids: list[str]) -> Segment:
    return _change_ids(segment_id, ids, adding=True)


def remove_ids(segment_id: str, ids: list[str]) -> Segment:
    return _change_ids(segment_id, ids, adding=False)
