"""Warehouse sources: qualifying event sources and assignment sources (request bodies and
response shapes).

Limits the contract leaves open (chosen here, enforced by these models):

| field | limit |
|---|---|
| name | 3 to 100 characters: letters, digits, underscore, hyphen, period, space |
| description | at most 1000 characters |
| tags | each 1 to 100 characters |
| sql | 1 to 50,000 characters |
| column names (`timestampColumn`, ...) | 1 to 300 characters, no surrounding whitespace or controls |
| idTypeMapping | 1 to 100 entries; `serviceUnitID` 1 to 100 characters, unique |
| tableName | at most 500 characters |
| customFieldMapping | at most 100 entries; `key` 1 to 100 characters (unique), `formula` 1 to 10,000 |
| all_columns, column_types | 1 to 1000 entries each; a type 1 to 100 characters |
| scheduledReloadHour | integer 0 to 23, or null |

Each kind's fields are declared once, in `QualifyingEventFields` and `AssignmentSourceFields`, in
the order the table holds them (the keys a source stores only when set come last, left out
rather than null): the stored source (`StoredQualifyingEvent`, `StoredAssignmentSource`) and the
answer (`QualifyingEvent`, `AssignmentSource`, its stored public fields as they are) both are
those fields.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, field_validator
from pydantic.config import JsonDict, JsonValue
from pydantic_core import PydanticCustomError

from expconsole.models.base import Description, EntityName, PatchModel, RequestModel, ResponseModel, Tag
from expconsole.models.common import Owner, OwnerIn
from expconsole.models.pagination import Pagination
from expconsole.models.stored import StoredModel

MAX_SQL = 50_000
MAX_COLUMN = 300
MAX_MAPPINGS = 100
MAX_COLUMNS = 1000


def _column_name(value: str) -> str:
    if value != value.strip():
        raise PydanticCustomError("column_name", "must not start or end with whitespace")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise PydanticCustomError("column_name", "must not contain control characters")
    return value


ColumnName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_COLUMN),
    AfterValidator(_column_name),
    Field(description="A column of the source: 1 to 300 characters, no surrounding whitespace."),
]
Sql = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_SQL),
    Field(
        description="One read-only query (SELECT or WITH), 1 to 50,000 characters. Checked from "
        "its text: one statement, no writing keywords outside literals and comments, and the "
        "named columns appear in it. The warehouse is not queried."
    ),
]
UnitType = Annotated[str, StringConstraints(min_length=1, max_length=100)]
TableName = Annotated[
    str,
    StringConstraints(max_length=500),
    Field(description="For `table` sources (required there): the table the SQL reads. Empty for queries."),
]
ColumnType = Annotated[str, StringConstraints(min_length=1, max_length=100)]
ReloadHour = Annotated[int, Field(ge=0, le=23, description="UTC hour, 0 to 23.")]
SourceType = Literal["table", "query"]


class IdTypeMappingIn(RequestModel):
    serviceUnitID: UnitType = Field(description="A unit id type, e.g. `userID`.")
    column: ColumnName


class CustomFieldMappingIn(RequestModel):
    key: Annotated[str, StringConstraints(min_length=1, max_length=100)]
    formula: Annotated[str, StringConstraints(min_length=1, max_length=10_000)] = Field(
        description="A SQL expression over the source's columns (one expression, read-only)."
    )


IdTypeMappings = Annotated[list[IdTypeMappingIn], Field(min_length=1, max_length=MAX_MAPPINGS)]
CustomFieldMappings = Annotated[list[CustomFieldMappingIn], Field(max_length=100)]
ColumnList = Annotated[list[ColumnName], Field(min_length=1, max_length=MAX_COLUMNS)]
ColumnTypeList = Annotated[list[ColumnType], Field(min_length=1, max_length=MAX_COLUMNS)]

_DRY_RUN = "Validate and answer with the result without storing anything."
_SKIP = (
    "Check the named columns against `all_columns` instead of the SQL text (the SQL must still "
    "be one read-only query). Requires `all_columns` and `column_types` of equal length."
)
_VERSION = "Optimistic lock: the version this change is based on."


# --- qualifying event sources -------------------------------------------------------------------


_USER_ID: list[JsonValue] = [{"serviceUnitID": "userID", "column": "user_id"}]


class QualifyingEventCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "checkout_page_views",
                    "description": "Users count from their first view of the checkout page.",
                    "sql": "SELECT user_id, viewed_at FROM analytics.page_views WHERE page = 'checkout'",
                    "timestampColumn": "viewed_at",
                    "idTypeMapping": _USER_ID,
                    "tags": ["checkout"],
                }
            ]
        }
    )

    name: EntityName
    sql: Sql
    timestampColumn: ColumnName
    idTypeMapping: IdTypeMappings
    description: Description = ""
    tags: list[Tag] = Field(default_factory=list)
    timestampAsDay: bool = False
    sourceType: SourceType = "query"
    tableName: TableName | None = None
    datePartitionColumn: ColumnName | None = Field(None, description="For `table` sources only.")
    customFieldMapping: CustomFieldMappings = Field(default_factory=list)
    isReadOnly: bool = False
    isVerified: bool = False
    disableCURE: bool = False
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    dryRun: bool = Field(False, description=_DRY_RUN)
    skip_validation: bool = Field(False, description=_SKIP)
    all_columns: ColumnList | None = None
    column_types: ColumnTypeList | None = None


class QualifyingEventUpdate(PatchModel):
    """Full update (POST .../qualifying_events/{name}): `sql`, `timestampColumn` and
    `idTypeMapping` are required; optional fields left out keep their value."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sql": "SELECT user_id, viewed_at FROM analytics.page_views "
                    "WHERE page IN ('cart', 'checkout')",
                    "timestampColumn": "viewed_at",
                    "idTypeMapping": _USER_ID,
                    "description": "Users count from their first view of the cart or the checkout page.",
                }
            ]
        }
    )

    NULLABLE = frozenset({"name", "team", "teamID", "datePartitionColumn"})

    name: Any = Field(None, description="Cannot change: if sent, it must be the name in the path.")
    sql: Sql
    timestampColumn: ColumnName
    idTypeMapping: IdTypeMappings
    description: Description | None = None
    tags: list[Tag] | None = None
    timestampAsDay: bool | None = None
    sourceType: SourceType | None = None
    tableName: TableName | None = None
    datePartitionColumn: ColumnName | None = Field(None, description="For `table` sources; null clears it.")
    customFieldMapping: CustomFieldMappings | None = None
    isReadOnly: bool | None = None
    isVerified: bool | None = None
    disableCURE: bool | None = None
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    dryRun: bool | None = Field(None, description=_DRY_RUN)
    skip_validation: bool | None = Field(None, description=_SKIP)
    all_columns: ColumnList | None = None
    column_types: ColumnTypeList | None = None
    version: int | None = Field(None, ge=1, description=_VERSION)


class IdTypeMapping(ResponseModel):
    serviceUnitID: str
    column: str


class CustomFieldMapping(ResponseModel):
    key: str
    formula: str


def _absent(value: object) -> bool:
    """`exclude_if` of the keys a source stores only when set: the stored item and the answer
    leave them out rather than hold null."""
    return value is None


class QualifyingEventFields(ResponseModel):
    """What a qualifying event source stores and answers alike, in the order it stores them."""

    name: str
    description: str
    tags: list[str]
    sql: str
    timestampColumn: str
    timestampAsDay: bool
    idTypeMapping: list[IdTypeMapping]
    sourceType: SourceType
    tableName: str = Field(description="Empty for `query` sources.")
    customFieldMapping: list[CustomFieldMapping]
    isReadOnly: bool
    isVerified: bool
    disableCURE: bool
    owner: Owner
    team: str | None
    teamID: str | None
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int
    datePartitionColumn: str | None = Field(None, exclude_if=_absent, description="Left out when unset.")
    all_columns: list[str] | None = Field(
        None, exclude_if=_absent, description="Left out unless stored with skip_validation."
    )
    column_types: list[str] | None = Field(
        None, exclude_if=_absent, description="Left out unless stored with skip_validation."
    )


class StoredQualifyingEvent(StoredModel, QualifyingEventFields):
    """A qualifying event source as the table holds it (no internal state of its own)."""


# A qualifying event source as the API answers it: its stored public fields. (A docstring would
# become the schema's description in openapi.json.)
class QualifyingEvent(QualifyingEventFields):
    pass


class QualifyingEventEnvelope(ResponseModel):
    message: str
    data: QualifyingEvent


class QualifyingEventListEnvelope(ResponseModel):
    message: str
    data: list[QualifyingEvent]
    pagination: Pagination


# --- assignment sources -------------------------------------------------------------------------


_ASSIGNMENTS: JsonDict = {
    "sql": "SELECT user_id, assigned_at, experiment_id, group_id FROM warehouse.ab_assignments",
    "timestampColumn": "assigned_at",
    "experimentIDColumn": "experiment_id",
    "groupIDColumn": "group_id",
    "idTypeMapping": _USER_ID,
}


class AssignmentSourceCreate(RequestModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "legacy_assignments",
                    "description": "Assignments of the in-house experiment tool, loaded nightly.",
                    **_ASSIGNMENTS,
                    "scheduledReloadHour": 6,
                }
            ]
        }
    )

    name: EntityName
    sql: Sql
    timestampColumn: ColumnName
    experimentIDColumn: ColumnName
    groupIDColumn: ColumnName
    groupNameColumn: ColumnName | None = None
    idTypeMapping: IdTypeMappings
    description: Description = ""
    tags: list[Tag] = Field(default_factory=list)
    isVerified: bool = False
    isReadOnly: bool = False
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    scheduledReloadHour: ReloadHour | None = None
    dryRun: bool = Field(False, description=_DRY_RUN)


class _AssignmentSourceChanges(PatchModel):
    NULLABLE = frozenset({"team", "teamID", "scheduledReloadHour", "groupNameColumn", "sql"})

    name: EntityName | None = Field(
        None,
        description="Renaming is refused (experiments refer to the source by name): if sent, it "
        "must be the name in the path.",
    )
    description: Description | None = None
    isVerified: bool | None = None
    tags: list[Tag] | None = None
    timestampColumn: ColumnName | None = None
    experimentIDColumn: ColumnName | None = None
    groupIDColumn: ColumnName | None = None
    groupNameColumn: ColumnName | None = Field(None, description="null clears it.")
    idTypeMapping: IdTypeMappings | None = None
    isReadOnly: bool | None = None
    owner: OwnerIn | None = None
    team: str | None = None
    teamID: str | None = None
    scheduledReloadHour: ReloadHour | None = None
    dryRun: bool | None = Field(None, description=_DRY_RUN)
    version: int | None = Field(None, ge=1, description=_VERSION)


class AssignmentSourceUpdate(_AssignmentSourceChanges):
    """Full update (POST .../assignment_source/{name}): the SQL and its columns are required."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    **_ASSIGNMENTS,
                    "sql": "SELECT user_id, assigned_at, experiment_id, group_id, group_name "
                    "FROM warehouse.ab_assignments WHERE assigned_at >= DATE '2024-01-01'",
                    "groupNameColumn": "group_name",
                }
            ]
        }
    )

    sql: Sql
    timestampColumn: ColumnName
    experimentIDColumn: ColumnName
    groupIDColumn: ColumnName
    idTypeMapping: IdTypeMappings


class AssignmentSourcePatch(_AssignmentSourceChanges):
    """Partial update (PATCH): only the fields sent change; the SQL changes only by a full update."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"isVerified": True, "scheduledReloadHour": 4, "tags": ["nightly"]}]}
    )

    sql: Any = Field(
        None,
        json_schema_extra={"readOnly": True},
        description="Read-only here: the SQL changes only through the full update (POST).",
    )

    @field_validator("sql")
    @classmethod
    def _sql_is_read_only(cls, value: Any) -> Any:
        raise PydanticCustomError(
            "read_only",
            "cannot be changed by PATCH: send a full update (POST to the same path) with the SQL "
            "and its columns",
        )


class AssignmentSourceFields(ResponseModel):
    """What an assignment source stores and answers alike, in the order it stores them."""

    name: str
    description: str
    tags: list[str]
    sql: str
    timestampColumn: str
    experimentIDColumn: str
    groupIDColumn: str
    idTypeMapping: list[IdTypeMapping]
    isVerified: bool
    isReadOnly: bool
    owner: Owner
    team: str | None
    teamID: str | None
    scheduledReloadHour: int | None
    creatorID: str | None
    creatorName: str
    creatorEmail: str | None
    createdTime: int
    lastModifierID: str | None
    lastModifierName: str | None
    lastModifierEmail: str | None
    lastModifiedTime: int
    version: int
    groupNameColumn: str | None = Field(None, exclude_if=_absent, description="Left out when unset.")


class StoredAssignmentSource(StoredModel, AssignmentSourceFields):
    """An assignment source as the table holds it (no internal state of its own)."""


# An assignment source as the API answers it: its stored public fields. (A docstring would become
# the schema's description in openapi.json.)
class AssignmentSource(AssignmentSourceFields):
    pass


class AssignmentSourceEnvelope(ResponseModel):
    message: str
    data: AssignmentSource


class AssignmentSourceListEnvelope(ResponseModel):
    message: str
    data: list[AssignmentSource]
    pagination: Pagination
