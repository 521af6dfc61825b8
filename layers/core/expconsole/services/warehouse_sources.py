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
from typing import Any

from expconsole import config, context, kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.pagination import Page, PageQuery, page_of
from expconsole.models.warehouse_sources import (
    AssignmentSourceCreate,
    AssignmentSourcePatch,
    AssignmentSourceUpdate,
    QualifyingEventCreate,
    QualifyingEventUpdate,
)
from expconsole.services import entities, sql_check
from expconsole.services.common import patch as partial
from expconsole.services.common import size
from expconsole.services.entities import Doc
from expconsole.services.sql_check import Problem
from expconsole.store import dynamo

QE = kinds.QUALIFYING_EVENT
AS = kinds.ASSIGNMENT_SOURCE


@dataclass(frozen=True)
class Outcome:
    """A written (or, on a dry run, validated) source and what could not be checked."""

    data: Doc
    dry_run: bool = False
    unchecked: str = ""  # a sentence for the message, or ""


# --- shared checks ------------------------------------------------------------------------------


def _raise(problems: list[Problem]) -> None:
    if problems:
        raise Invalid.fields([p.as_error() for p in problems])


def _mapping_problems(mappings: list[Doc]) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for index, mapping in enumerate(mappings):
        unit = mapping["serviceUnitID"]
        if unit in seen:
            problems.append(
                Problem(
                    f"idTypeMapping[{index}].serviceUnitID",
                    f"{unit!r} is already mapped by idTypeMapping[{seen[unit]}]: map each unit id type once",
                )
            )
        seen.setdefault(unit, index)
    return problems


def _id_columns(doc: Doc) -> list[tuple[str, str]]:
    return [(f"idTypeMapping[{i}].column", m["column"]) for i, m in enumerate(doc["idTypeMapping"])]


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


def _check_size(doc: Doc) -> None:
    size.check_stored_size(doc, "source", "Shorten sql, customFieldMapping or all_columns.")


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


def _preview(kind: str, name: str, change: Callable[[Doc], None], expected_version: int | None) -> Doc:
    """What `entities.update` would store, without storing it (dry runs)."""
    current = entities.load(kind, name)
    version = int(current["version"])
    if expected_version is not None and expected_version != version:
        raise Conflict(
            f"{kinds.LABEL[kind]} {name!r} is at version {version}, not {expected_version}: it was "
            "changed since you read it; read it again and retry.",
            [{"field": "version", "message": f"stale: the stored version is {version}"}],
        )
    doc = {**current}
    change(doc)
    doc["version"] = version + 1
    doc["lastModifiedTime"] = max(entities.now_ms(), int(current["lastModifiedTime"]))
    doc["lastModifierID"] = context.current().key_id
    doc["lastModifierName"] = config.CREATOR_NAME
    doc["lastModifierEmail"] = None
    return doc


def _create(kind: str, doc: Doc, dry_run: bool) -> Doc:
    _check_size(doc)
    if dry_run:
        if dynamo.get(kind, doc["name"]) is not None:
            raise Conflict(f"{kinds.LABEL[kind]} with name {doc['name']!r} already exists.")
        return doc
    return entities.insert(kind, doc["name"], doc)


def _write(kind: str, name: str, change: Callable[[Doc], None], version: int | None, dry_run: bool) -> Doc:
    def checked(doc: Doc) -> None:
        change(doc)
        _check_size(doc)

    if dry_run:
        return _preview(kind, name, checked, version)
    return entities.update(kind, name, checked, version)


def _listing(kind: str, query: PageQuery) -> Page[Doc]:
    items = [entities.public(doc) for doc in dynamo.list_all(kind)]
    return page_of(items, page=query.page, limit=query.limit)


# --- qualifying event sources -------------------------------------------------------------------


def _qualifying_event_problems(doc: Doc, sent: Doc) -> tuple[list[Problem], str]:
    """Check a qualifying event as it would be stored, fixing up the fields that depend on
    `sourceType` and `skip_validation`; `sent` holds the fields this request sent."""
    problems = _mapping_problems(doc["idTypeMapping"])

    if doc["sourceType"] == "table":
        if not doc.get("tableName"):
            problems.append(Problem("tableName", "is required when sourceType is `table`"))
    else:
        for name in ("tableName", "datePartitionColumn"):
            if sent.get(name):
                problems.append(
                    Problem(name, "is only for sources of sourceType `table` (this one is a `query`)")
                )
        doc["tableName"] = ""
        doc.pop("datePartitionColumn", None)

    keys: dict[str, int] = {}
    for index, mapping in enumerate(doc["customFieldMapping"]):
        if mapping["key"] in keys:
            problems.append(
                Problem(
                    f"customFieldMapping[{index}].key",
                    f"{mapping['key']!r} is already defined by customFieldMapping[{keys[mapping['key']]}]",
                )
            )
        keys.setdefault(mapping["key"], index)
        problems += sql_check.check_expression(mapping["formula"], f"customFieldMapping[{index}].formula")

    listed: list[str] | None = None
    doc.pop("all_columns", None)
    doc.pop("column_types", None)
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
            doc["all_columns"], doc["column_types"] = all_columns, column_types
        listed = all_columns
    else:
        for name in ("all_columns", "column_types"):
            if sent.get(name) is not None:
                problems.append(Problem(name, "is only used with skip_validation: true"))

    columns = [("timestampColumn", doc["timestampColumn"]), *_id_columns(doc)]
    if doc.get("datePartitionColumn"):
        columns.append(("datePartitionColumn", doc["datePartitionColumn"]))
    if sent.get("skip_validation") and listed is None:
        columns = []  # nothing to check them against; all_columns is reported missing above
    analysis, column_problems, unchecked = _column_checks(doc["sql"], columns, listed)
    problems += column_problems

    if doc["sourceType"] == "table" and doc.get("tableName") and analysis is not None:
        parts = sql_check.table_parts(doc["tableName"])
        if parts is None:
            problems.append(
                Problem("tableName", "is not a table name such as `project.dataset.table` or `schema.table`")
            )
        elif not analysis.references_table(parts):
            problems.append(
                Problem(
                    "tableName",
                    f"table {doc['tableName']!r} is not read by sql (no FROM or JOIN names it): a "
                    f"table source's SQL reads its table, e.g. `SELECT * FROM {doc['tableName']}`; "
                    f"{sql_check.NOT_QUERIED}",
                )
            )
    return problems, unchecked


def list_qualifying_events(query: PageQuery) -> Page[Doc]:
    return _listing(QE, query)


def get_qualifying_event(name: str) -> Doc:
    return entities.public(entities.load(QE, name))


def create_qualifying_event(body: QualifyingEventCreate) -> Outcome:
    data = body.model_dump(mode="json")
    doc: Doc = {
        "name": body.name,
        "description": body.description,
        "tags": body.tags,
        "sql": body.sql,
        "timestampColumn": body.timestampColumn,
        "timestampAsDay": body.timestampAsDay,
        "idTypeMapping": data["idTypeMapping"],
        "sourceType": body.sourceType,
        "tableName": body.tableName or "",
        "customFieldMapping": data["customFieldMapping"],
        "isReadOnly": body.isReadOnly,
        "isVerified": body.isVerified,
        "disableCURE": body.disableCURE,
        "owner": entities.owner_for(data["owner"]),
        "team": body.team,
        "teamID": body.teamID,
        **entities.bookkeeping(),
    }
    if body.datePartitionColumn is not None:
        doc["datePartitionColumn"] = body.datePartitionColumn
    problems, unchecked = _qualifying_event_problems(doc, data)
    _raise(problems)
    return Outcome(entities.public(_create(QE, doc, body.dryRun)), body.dryRun, unchecked)


def update_qualifying_event(name: str, body: QualifyingEventUpdate) -> Outcome:
    _refuse_rename(QE, name, body.name)
    sent = body.changes()
    flags = {key: sent.pop(key, None) for key in ("name", "version", "dryRun")}
    request = dict(sent)
    for key in ("skip_validation", "all_columns", "column_types"):
        sent.pop(key, None)
    unchecked = ""

    def change(doc: Doc) -> None:
        nonlocal unchecked
        changes = dict(sent)
        if "owner" in changes:
            changes["owner"] = entities.owner_for(changes["owner"])
        if "datePartitionColumn" in changes and changes["datePartitionColumn"] is None:
            changes.pop("datePartitionColumn")
            doc.pop("datePartitionColumn", None)
        doc.update(changes)
        problems, unchecked = _qualifying_event_problems(doc, request)
        _raise(problems)

    dry_run = bool(flags["dryRun"])
    doc = _write(QE, name, change, flags["version"], dry_run)
    return Outcome(entities.public(doc), dry_run, unchecked)


def delete_qualifying_event(name: str) -> None:
    doc = entities.load(QE, name)
    entities.remove(QE, name, doc)


# --- assignment sources -------------------------------------------------------------------------


def _assignment_source_problems(doc: Doc) -> tuple[list[Problem], str]:
    problems = _mapping_problems(doc["idTypeMapping"])
    roles = ["timestampColumn", "experimentIDColumn", "groupIDColumn"]
    for later in range(1, len(roles)):
        for earlier in range(later):
            if doc[roles[later]].lower() == doc[roles[earlier]].lower():
                for this, other in ((roles[later], roles[earlier]), (roles[earlier], roles[later])):
                    problems.append(
                        Problem(
                            this,
                            f"is {doc[this]!r}, the same column as {other}: the timestamp, "
                            "experiment id and group id need three different columns",
                        )
                    )
    columns = [(role, doc[role]) for role in roles]
    if doc.get("groupNameColumn"):
        columns.append(("groupNameColumn", doc["groupNameColumn"]))
    columns += _id_columns(doc)
    _, column_problems, unchecked = _column_checks(doc["sql"], columns, None)
    return problems + column_problems, unchecked


def list_assignment_sources(query: PageQuery) -> Page[Doc]:
    return _listing(AS, query)


def get_assignment_source(name: str) -> Doc:
    return entities.public(entities.load(AS, name))


def create_assignment_source(body: AssignmentSourceCreate) -> Outcome:
    data = body.model_dump(mode="json")
    doc: Doc = {
        "name": body.name,
        "description": body.description,
        "tags": body.tags,
        "sql": body.sql,
        "timestampColumn": body.timestampColumn,
        "experimentIDColumn": body.experimentIDColumn,
        "groupIDColumn": body.groupIDColumn,
        "idTypeMapping": data["idTypeMapping"],
        "isVerified": body.isVerified,
        "isReadOnly": body.isReadOnly,
        "owner": entities.owner_for(data["owner"]),
        "team": body.team,
        "teamID": body.teamID,
        "scheduledReloadHour": body.scheduledReloadHour,
        **entities.bookkeeping(),
    }
    if body.groupNameColumn is not None:
        doc["groupNameColumn"] = body.groupNameColumn
    problems, unchecked = _assignment_source_problems(doc)
    _raise(problems)
    return Outcome(entities.public(_create(AS, doc, body.dryRun)), body.dryRun, unchecked)


def _change_assignment_source(name: str, body: AssignmentSourceUpdate | AssignmentSourcePatch) -> Outcome:
    _refuse_rename(AS, name, body.name)
    sent = body.changes()
    flags = {key: sent.pop(key, None) for key in ("name", "version", "dryRun")}
    if "owner" in sent:
        sent["owner"] = entities.owner_for(sent["owner"])
    unchecked = ""

    def change(doc: Doc) -> None:
        nonlocal unchecked
        changes = dict(sent)
        if "groupNameColumn" in changes and changes["groupNameColumn"] is None:
            changes.pop("groupNameColumn")
            doc.pop("groupNameColumn", None)
        doc.update(changes)
        problems, unchecked = _assignment_source_problems(doc)
        _raise(problems)

    dry_run = bool(flags["dryRun"])
    doc = _write(AS, name, change, flags["version"], dry_run)
    return Outcome(entities.public(doc), dry_run, unchecked)


def update_assignment_source(name: str, body: AssignmentSourceUpdate) -> Outcome:
    return _change_assignment_source(name, body)


def patch_assignment_source(name: str, body: AssignmentSourcePatch) -> Outcome:
    _refuse_rename(AS, name, body.name)
    asked = partial.changes_of(body.changes(), frozenset({"name", "dryRun"}))
    stored = partial.unchanged(AS, name, asked, body.version)
    if stored is not None:
        return Outcome(entities.public(stored), bool(body.dryRun))
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
