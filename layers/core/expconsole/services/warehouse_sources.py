"""Warehouse sources: qualifying event sources and assignment sources.

Both are stored under their `name` (kinds QUALIFYING_EVENT and ASSIGNMENT_SOURCE) and checked
on every write with what can be known without a warehouse (`sql_check`): the SQL is one
read-only query, and every column the source names appears in it as an identifier (or, for a
qualifying event sent with `skip_validation`, in `all_columns`). When the outer query selects
`*` the columns cannot be known from the text: they are accepted and the answer's message
says which were not checked.

Rules chosen where the contract is silent:

- `dryRun` runs every check (a taken name is a 409 too) and answers 200 with the source as it
  would be stored; nothing is written.
- Names never change. A qualifying event's update refuses a different `name` (the contract's
  rule); an assignment source's update and patch refuse one too, because experiments refer to
  it by name (`assignmentSourceName`) and a rename would silently break them: create a source
  under the new name and delete the old one instead.
- Qualifying events: `sourceType` defaults to `query`. A `table` source requires `tableName`,
  and its `sql` must read that table (a FROM or JOIN names it, qualifiers optional: the peer's
  sources are `SELECT * FROM <tableName>`). `tableName` (non-empty) and `datePartitionColumn`
  belong to `table` sources only; switching a source to `query` clears them. A query source
  answers `tableName: ""`, as the peer does. `skip_validation: true` requires `all_columns` and
  `column_types` of equal length and checks the named columns against `all_columns`; the SQL
  must still be one read-only query. Without it, `all_columns` and `column_types` are refused
  and stored ones are dropped (they describe the SQL they were sent with).
- Assignment sources: the timestamp, experiment-id and group-id columns are three different
  columns; `sql` changes only through the full update (the contract's PATCH does not list it).
- Deleting an assignment source that an experiment names in `assignmentSourceName` is a 409
  naming the experiments. No experiment field refers to a qualifying event, so deleting one
  just deletes it.
- A source whose stored JSON would exceed 350,000 bytes is a 413, as for every kind
  (services.common.size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from expconsole import config, context, kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.common import Owner
from expconsole.models.pagination import Page, PageQuery, page_of
from expconsole.models.stored import StoredModel
from expconsole.models.warehouse_sources import (
    AssignmentSource,
    AssignmentSourceCreate,
    AssignmentSourceFields,
    AssignmentSourcePatch,
    AssignmentSourceUpdate,
    IdTypeMapping,
    QualifyingEvent,
    QualifyingEventCreate,
    QualifyingEventFields,
    QualifyingEventUpdate,
    StoredAssignmentSource,
    StoredQualifyingEvent,
)
from expconsole.services import entities, sql_check
from expconsole.services.common import patch as partial
from expconsole.services.common import size
from expconsole.services.entities import Doc, Stored
from expconsole.services.sql_check import Problem
from expconsole.store import dynamo

QE = kinds.QUALIFYING_EVENT
AS = kinds.ASSIGNMENT_SOURCE


Answer = TypeVar("Answer", QualifyingEvent, AssignmentSource)


@dataclass(frozen=True)
class Outcome(Generic[Answer]):
    """A written (or, on a dry run, validated) source and what could not be checked."""

    data: Answer
    dry_run: bool = False
    unchecked: str = ""  # a sentence for the message, or ""


# --- shared checks ------------------------------------------------------------------------------


def _raise(problems: list[Problem]) -> None:
    if problems:
        raise Invalid.fields([p.as_error() for p in problems])


def _mapping_problems(mappings: list[IdTypeMapping]) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for index, mapping in enumerate(mappings):
        unit = mapping.serviceUnitID
        if unit in seen:
            problems.append(
                Problem(
                    f"idTypeMapping[{index}].serviceUnitID",
                    f"{unit!r} is already mapped by idTypeMapping[{seen[unit]}]: map each unit id type once",
                )
            )
        seen.setdefault(unit, index)
    return problems


def _id_columns(mappings: list[IdTypeMapping]) -> list[tuple[str, str]]:
    return [(f"idTypeMapping[{i}].column", m.column) for i, m in enumerate(mappings)]


def _column_checks(
    sql: str, columns: list[tuple[str, str]], listed: list[str] | None
) -> tuple[sql_check.Analysis | None, list[Problem], str]:
    """SQL problems, missing columns, and the sentence saying which columns went unchecked."""
    analysis, problems = sql_check.check_query(sql, "sql")
    unchecked = ""
    if listed is not None:
        problems += sql_check.columns_not_listed(listed, columns)
    elif analysis is not None:
        problems += sql_check.missing_columns(analysis, columns)
        if analysis.star and columns:
            fields = ", ".join(name for name, _ in columns)
            unchecked = (
                f" Not checked: sql selects `*`, so the columns of {fields} can only be confirmed "
                "by the warehouse, which was not queried."
            )
    return analysis, problems, unchecked


def _check_size(source: StoredModel) -> None:
    size.check_stored_size(source.doc(), "source", "Shorten sql, customFieldMapping or all_columns.")


def _refuse_rename(kind: str, name: str, sent: Any) -> None:
    if sent is None or sent == name:
        return
    if kind == QE:
        reason = "a qualifying event source's name cannot change"
    else:
        reason = (
            "an assignment source cannot be renamed, since experiments refer to it by name "
            "(assignmentSourceName); create a source with the new name and delete this one"
        )
    raise Invalid.field("name", f"{reason}: send {name!r} or leave name out (got {sent!r})")


def _preview(
    kind: str, name: str, model: type[Stored], change: Callable[[Stored], None], expected_version: int | None
) -> Doc:
    """What `entities.update_stored` would store, without storing it (dry runs)."""
    current = entities.load(kind, name)
    version = int(current["version"])
    if expected_version is not None and expected_version != version:
        raise Conflict(
            f"{kinds.LABEL[kind]} {name!r} is at version {version}, not {expected_version}: it was "
            "changed since you read it; read it again and retry.",
            [{"field": "version", "message": f"stale: the stored version is {version}"}],
        )
    source = model.read(current)
    change(source)
    doc = source.doc()
    doc["version"] = version + 1
    doc["lastModifiedTime"] = max(entities.now_ms(), int(current["lastModifiedTime"]))
    doc["lastModifierID"] = context.current().key_id
    doc["lastModifierName"] = config.CREATOR_NAME
    doc["lastModifierEmail"] = None
    return doc


def _create(kind: str, source: StoredModel, dry_run: bool) -> Doc:
    _check_size(source)
    doc = source.doc()
    if dry_run:
        if dynamo.get(kind, doc["name"]) is not None:
            raise Conflict(f"{kinds.LABEL[kind]} with name {doc['name']!r} already exists.")
        return doc
    return entities.insert(kind, doc["name"], doc)


def _write(
    kind: str,
    name: str,
    model: type[Stored],
    change: Callable[[Stored], None],
    version: int | None,
    dry_run: bool,
) -> Doc:
    def checked(source: Stored) -> None:
        change(source)
        _check_size(source)

    if dry_run:
        return _preview(kind, name, model, checked, version)
    return entities.update_stored(kind, name, model, checked, version)


# --- qualifying event sources -------------------------------------------------------------------


def _qualifying_event_problems(source: StoredQualifyingEvent, sent: Doc) -> tuple[list[Problem], str]:
    """Check a qualifying event as it would be stored, fixing up the fields that depend on
    `sourceType` and `skip_validation`; `sent` holds the fields this request sent."""
    problems = _mapping_problems(source.idTypeMapping)

    if source.sourceType == "table":
        if not source.tableName:
            problems.append(Problem("tableName", "is required when sourceType is `table`"))
    else:
        for name in ("tableName", "datePartitionColumn"):
            if sent.get(name):
                problems.append(
                    Problem(name, "is only for sources of sourceType `table` (this one is a `query`)")
                )
        source.tableName = ""
        source.datePartitionColumn = None

    keys: dict[str, int] = {}
    for index, mapping in enumerate(source.customFieldMapping):
        if mapping.key in keys:
            problems.append(
                Problem(
                    f"customFieldMapping[{index}].key",
                    f"{mapping.key!r} is already defined by customFieldMapping[{keys[mapping.key]}]",
                )
            )
        keys.setdefault(mapping.key, index)
        problems += sql_check.check_expression(mapping.formula, f"customFieldMapping[{index}].formula")

    listed: list[str] | None = None
    source.all_columns = source.column_types = None
    if sent.get("skip_validation"):
        all_columns, column_types = sent.get("all_columns"), sent.get("column_types")
        for name, value in (("all_columns", all_columns), ("column_types", column_types)):
            if value is None:
                problems.append(Problem(name, "is required when skip_validation is true"))
        if all_columns is not None and column_types is not None:
            if len(all_columns) != len(column_types):
                problems.append(
                    Problem(
                        "column_types",
                        f"has {len(column_types)} entries but all_columns has {len(all_columns)}: "
                        "give one type per column, in the same order",
                    )
                )
            seen: dict[str, int] = {}
            for index, column in enumerate(all_columns):
                if column.lower() in seen:
                    problems.append(
                        Problem(f"all_columns[{index}]", f"repeats all_columns[{seen[column.lower()]}]")
                    )
                seen.setdefault(column.lower(), index)
            source.all_columns, source.column_types = all_columns, column_types
        listed = all_columns
    else:
        for name in ("all_columns", "column_types"):
            if sent.get(name) is not None:
                problems.append(Problem(name, "is only used with skip_validation: true"))

    columns = [("timestampColumn", source.timestampColumn), *_id_columns(source.idTypeMapping)]
    if source.datePartitionColumn:
        columns.append(("datePartitionColumn", source.datePartitionColumn))
    if sent.get("skip_validation") and listed is None:
        columns = []  # nothing to check them against; all_columns is reported missing above
    analysis, column_problems, unchecked = _column_checks(source.sql, columns, listed)
    problems += column_problems

    if source.sourceType == "table" and source.tableName and analysis is not None:
        parts = sql_check.table_parts(source.tableName)
        if parts is None:
            problems.append(
                Problem("tableName", "is not a table name such as `project.dataset.table` or `schema.table`")
            )
        elif not analysis.references_table(parts):
            problems.append(
                Problem(
                    "tableName",
                    f"table {source.tableName!r} is not read by sql (no FROM or JOIN names it): a "
                    f"table source's SQL reads its table, e.g. `SELECT * FROM {source.tableName}`; "
                    f"{sql_check.NOT_QUERIED}",
                )
            )
    return problems, unchecked


def _present_qualifying_event(doc: Doc) -> QualifyingEvent:
    return QualifyingEvent.model_validate(entities.public(doc))


def list_qualifying_events(query: PageQuery) -> Page[QualifyingEvent]:
    return page_of(dynamo.list_all(QE), page=query.page, limit=query.limit).map(_present_qualifying_event)


def get_qualifying_event(name: str) -> QualifyingEvent:
    return _present_qualifying_event(entities.load(QE, name))


# Create fields stored as sent (datePartitionColumn left out when null); the others are stored as
# `create_qualifying_event` and `_qualifying_event_problems` derive them.
_QE_STORED_AS_SENT = frozenset(
    QualifyingEventCreate.model_fields.keys() & QualifyingEventFields.model_fields.keys()
) - {"tableName", "owner", "all_columns", "column_types"}


def create_qualifying_event(body: QualifyingEventCreate) -> Outcome[QualifyingEvent]:
    data = body.model_dump(mode="json")
    source = StoredQualifyingEvent(
        **{field: data[field] for field in _QE_STORED_AS_SENT},
        tableName=body.tableName or "",
        owner=Owner.model_validate(entities.owner_for(data["owner"])),
        **entities.bookkeeping(),
    )
    problems, unchecked = _qualifying_event_problems(source, data)
    _raise(problems)
    return Outcome(_present_qualifying_event(_create(QE, source, body.dryRun)), body.dryRun, unchecked)


def update_qualifying_event(name: str, body: QualifyingEventUpdate) -> Outcome[QualifyingEvent]:
    _refuse_rename(QE, name, body.name)
    sent = body.changes()
    flags = {key: sent.pop(key, None) for key in ("name", "version", "dryRun")}
    request = dict(sent)
    for key in ("skip_validation", "all_columns", "column_types"):
        sent.pop(key, None)
    unchecked = ""

    def change(source: StoredQualifyingEvent) -> None:
        nonlocal unchecked
        changes = dict(sent)
        if "owner" in changes:
            changes["owner"] = entities.owner_for(changes["owner"])
        source.set_fields(changes)  # a null datePartitionColumn clears it (left out when null)
        problems, unchecked = _qualifying_event_problems(source, request)
        _raise(problems)

    dry_run = bool(flags["dryRun"])
    doc = _write(QE, name, StoredQualifyingEvent, change, flags["version"], dry_run)
    return Outcome(_present_qualifying_event(doc), dry_run, unchecked)


def delete_qualifying_event(name: str) -> None:
    doc = entities.load(QE, name)
    entities.remove(QE, name, doc)


# --- assignment sources -------------------------------------------------------------------------


def _assignment_source_problems(source: StoredAssignmentSource) -> tuple[list[Problem], str]:
    problems = _mapping_problems(source.idTypeMapping)
    roles = {
        "timestampColumn": source.timestampColumn,
        "experimentIDColumn": source.experimentIDColumn,
        "groupIDColumn": source.groupIDColumn,
    }
    names = list(roles)
    for later in range(1, len(names)):
        for earlier in range(later):
            if roles[names[later]].lower() == roles[names[earlier]].lower():
                for this, other in ((names[later], names[earlier]), (names[earlier], names[later])):
                    problems.append(
                        Problem(
                            this,
                            f"is {roles[this]!r}, the same column as {other}: the timestamp, "
                            "experiment id and group id need three different columns",
                        )
                    )
    columns = list(roles.items())
    if source.groupNameColumn:
        columns.append(("groupNameColumn", source.groupNameColumn))
    columns += _id_columns(source.idTypeMapping)
    _, column_problems, unchecked = _column_checks(source.sql, columns, None)
    return problems + column_problems, unchecked


def _present_assignment_source(doc: Doc) -> AssignmentSource:
    return AssignmentSource.model_validate(entities.public(doc))


def list_assignment_sources(query: PageQuery) -> Page[AssignmentSource]:
    return page_of(dynamo.list_all(AS), page=query.page, limit=query.limit).map(_present_assignment_source)


def get_assignment_source(name: str) -> AssignmentSource:
    return _present_assignment_source(entities.load(AS, name))


# Create fields stored as sent (groupNameColumn left out when null); the others are stored as
# `create_assignment_source` derives them.
_AS_STORED_AS_SENT = frozenset(
    AssignmentSourceCreate.model_fields.keys() & AssignmentSourceFields.model_fields.keys()
) - {"owner"}


def create_assignment_source(body: AssignmentSourceCreate) -> Outcome[AssignmentSource]:
    data = body.model_dump(mode="json")
    source = StoredAssignmentSource(
        **{field: data[field] for field in _AS_STORED_AS_SENT},
        owner=Owner.model_validate(entities.owner_for(data["owner"])),
        **entities.bookkeeping(),
    )
    problems, unchecked = _assignment_source_problems(source)
    _raise(problems)
    return Outcome(_present_assignment_source(_create(AS, source, body.dryRun)), body.dryRun, unchecked)


def _change_assignment_source(
    name: str, body: AssignmentSourceUpdate | AssignmentSourcePatch
) -> Outcome[AssignmentSource]:
    _refuse_rename(AS, name, body.name)
    sent = body.changes()
    flags = {key: sent.pop(key, None) for key in ("name", "version", "dryRun")}
    if "owner" in sent:
        sent["owner"] = entities.owner_for(sent["owner"])
    unchecked = ""

    def change(source: StoredAssignmentSource) -> None:
        nonlocal unchecked
        source.set_fields(sent)  # a null groupNameColumn clears it (left out when null)
        problems, unchecked = _assignment_source_problems(source)
        _raise(problems)

    dry_run = bool(flags["dryRun"])
    doc = _write(AS, name, StoredAssignmentSource, change, flags["version"], dry_run)
    return Outcome(_present_assignment_source(doc), dry_run, unchecked)


def update_assignment_source(name: str, body: AssignmentSourceUpdate) -> Outcome[AssignmentSource]:
    return _change_assignment_source(name, body)


def patch_assignment_source(name: str, body: AssignmentSourcePatch) -> Outcome[AssignmentSource]:
    _refuse_rename(AS, name, body.name)
    asked = partial.changes_of(body.changes(), frozenset({"name", "dryRun"}))
    stored = partial.unchanged(AS, name, asked, body.version)
    if stored is not None:
        return Outcome(_present_assignment_source(stored), bool(body.dryRun))
    return _change_assignment_source(name, body)


def delete_assignment_source(name: str) -> None:
    doc = entities.load(AS, name)
    users = [e for e in dynamo.list_all(kinds.EXPERIMENT) if e.get("assignmentSourceName") == name]
    if users:
        shown = ", ".join(repr(e.get("id", e.get("name"))) for e in users[:10])
        more = f" and {len(users) - 10} more" if len(users) > 10 else ""
        raise Conflict(
            f"Assignment source {name!r} is used by experiment(s) {shown}{more} "
            "(assignmentSourceName); point them at another source first."
        )
    entities.remove(AS, name, doc)
