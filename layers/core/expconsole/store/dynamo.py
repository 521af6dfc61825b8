"""The single DynamoDB table.

Key plan (see README, "Data"):

| item               | PK                    | SK            | GSI1PK          | GSI1SK               |
|--------------------|-----------------------|---------------|-----------------|----------------------|
| current entity     | `<KIND>#<id>`         | `CURRENT`     | `TYPE#<KIND>`   | `<created ms>#<id>`  |
| version snapshot   | `<KIND>#<id>`         | `V#<version>` |                 |                      |
| API key (hash)     | `KEY#<sha256>`        | `KEY`         | `TYPE#KEY`      | `<created ms>#<id>`  |

Entities are stored as one JSON document (`doc`) plus the attributes the keys and the
optimistic lock need (`version`). Writing JSON text rather than DynamoDB maps keeps numbers
exact (no Decimal round trip) and keeps this module small. Every write of an entity puts the
current item, conditional on the version the caller read, and the snapshot of the new version
in one transaction: a stale write fails as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from expconsole import aws, config

CURRENT = "CURRENT"
GSI1 = "GSI1"

TABLE_SCHEMA: dict[str, Any] = {
    "AttributeDefinitions": [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "GSI1PK", "AttributeType": "S"},
        {"AttributeName": "GSI1SK", "AttributeType": "S"},
    ],
    "KeySchema": [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": GSI1,
            "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
TTL_ATTRIBUTE = "expiresAt"


class StoreConflict(Exception):
    """A conditional write failed: the item exists already, or its version moved on."""


class StoreTooLarge(Exception):
    """DynamoDB refused an item over its 400 KB limit (nothing was written)."""


class StoreMissing(Exception):
    """The item a write was conditional on does not exist."""


def _ddb() -> Any:
    return aws.client("dynamodb")


def _pk(kind: str, entity_id: str) -> str:
    return f"{kind}#{entity_id}"


def _vsk(version: int) -> str:
    return f"V#{version:010d}"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _current_item(kind: str, entity_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "PK": _s(_pk(kind, entity_id)),
        "SK": _s(CURRENT),
        "GSI1PK": _s(f"TYPE#{kind}"),
        "GSI1SK": _s(f"{int(doc.get('createdTime', 0)):013d}#{entity_id}"),
        "version": _n(int(doc["version"])),
        "doc": _s(json.dumps(doc, separators=(",", ":"))),
    }


def _snapshot_item(kind: str, entity_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "PK": _s(_pk(kind, entity_id)),
        "SK": _s(_vsk(int(doc["version"]))),
        "version": _n(int(doc["version"])),
        "doc": _s(json.dumps(doc, separators=(",", ":"))),
    }


def _is_condition_failure(exc: Exception) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    if code == "ConditionalCheckFailedException":
        return True
    if code == "TransactionCanceledException":
        reasons = getattr(exc, "response", {}).get("CancellationReasons") or []
        return any(r.get("Code") == "ConditionalCheckFailed" for r in reasons) or not reasons
    return False


def create(kind: str, entity_id: str, doc: dict[str, Any]) -> None:
    """Store version 1 of a new entity; StoreConflict if the id is taken."""
    _transact(
        [
            {
                "Put": {
                    "TableName": config.table_name(),
                    "Item": _current_item(kind, entity_id, doc),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {"Put": {"TableName": config.table_name(), "Item": _snapshot_item(kind, entity_id, doc)}},
        ]
    )


def replace(kind: str, entity_id: str, doc: dict[str, Any], expected_version: int) -> None:
    """Store a new version, only if the stored one is still `expected_version`."""
    _transact(
        [
            {
                "Put": {
                    "TableName": config.table_name(),
                    "Item": _current_item(kind, entity_id, doc),
                    "ConditionExpression": "#v = :expected",
                    "ExpressionAttributeNames": {"#v": "version"},
                    "ExpressionAttributeValues": {":expected": _n(expected_version)},
                }
            },
            {"Put": {"TableName": config.table_name(), "Item": _snapshot_item(kind, entity_id, doc)}},
        ]
    )


MAX_ENTITIES_PER_TRANSACTION = 50  # each entity write is two items; DynamoDB allows 100


def write_many(
    creates: Sequence[tuple[str, str, dict[str, Any]]] = (),
    replaces: Sequence[tuple[str, str, dict[str, Any], int]] = (),
) -> None:
    """Create and replace several entities in one transaction: all of it happens, or none.

    For links kept on both sides (a holdout's experimentIDs and each experiment's holdoutIDs):
    `creates` are (kind, id, doc) that must not exist yet; `replaces` are (kind, id, doc,
    expected_version) that must still be at the version read. StoreConflict otherwise.
    """
    if len(creates) + len(replaces) > MAX_ENTITIES_PER_TRANSACTION:
        raise ValueError(f"at most {MAX_ENTITIES_PER_TRANSACTION} entities change in one transaction")
    table = config.table_name()
    items: list[dict[str, Any]] = []
    for kind, entity_id, doc in creates:
        items.append(
            {
                "Put": {
                    "TableName": table,
                    "Item": _current_item(kind, entity_id, doc),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            }
        )
        items.append({"Put": {"TableName": table, "Item": _snapshot_item(kind, entity_id, doc)}})
    for kind, entity_id, doc, expected in replaces:
        items.append(
            {
                "Put": {
                    "TableName": table,
                    "Item": _current_item(kind, entity_id, doc),
                    "ConditionExpression": "#v = :expected",
                    "ExpressionAttributeNames": {"#v": "version"},
                    "ExpressionAttributeValues": {":expected": _n(expected)},
                }
            }
        )
        items.append({"Put": {"TableName": table, "Item": _snapshot_item(kind, entity_id, doc)}})
    if items:
        _transact(items)


def _transact(items: list[dict[str, Any]]) -> None:
    from botocore.exceptions import ClientError

    for attempt in range(CONFLICT_RETRIES + 1):
        try:
            _ddb().transact_write_items(TransactItems=items)
            return
        except ClientError as exc:
            if is_transaction_conflict(exc) and attempt < CONFLICT_RETRIES:
                conflict_pause(attempt)
                continue
            if _is_condition_failure(exc):
                raise StoreConflict(str(exc)) from exc
            if _is_too_large(exc):
                raise StoreTooLarge("item over 400 KB") from exc
            raise


CONFLICT_RETRIES = 6


def is_transaction_conflict(exc: Exception) -> bool:
    """Another transaction held one of the items (DynamoDB cancels rather than waits): retry.

    moto never raises it; real DynamoDB does when two requests write the same entity or counter at
    once. A retry re-evaluates the conditions, so the loser of a race still gets its 409.
    """
    response = getattr(exc, "response", {})
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = response.get("CancellationReasons") or []
    codes = {r.get("Code") for r in reasons}
    return "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes


def conflict_pause(attempt: int) -> None:
    """Jittered exponential backoff: 10 ms, 20 ms, 40 ms... (full jitter)."""
    import random
    import time

    time.sleep(random.uniform(0, 0.01 * 2**attempt))


def _is_too_large(exc: Exception) -> bool:
    error = getattr(exc, "response", {}).get("Error", {})
    message = str(error.get("Message", "")).lower()
    return error.get("Code") in ("ValidationException", "TransactionCanceledException") and (
        "size" in message and ("exceed" in message or "maximum" in message)
    )


def get(kind: str, entity_id: str) -> dict[str, Any] | None:
    response = _ddb().get_item(
        TableName=config.table_name(),
        Key={"PK": _s(_pk(kind, entity_id)), "SK": _s(CURRENT)},
        ConsistentRead=True,
    )
    item = response.get("Item")
    return json.loads(item["doc"]["S"]) if item else None


def _query(**kwargs: Any) -> Iterator[dict[str, Any]]:
    paginator = _ddb().get_paginator("query")
    for page in paginator.paginate(TableName=config.table_name(), **kwargs):
        yield from page.get("Items", [])


def list_all(kind: str) -> list[dict[str, Any]]:
    """Every current entity of a kind, oldest first (lists filter and page in memory)."""
    items = _query(
        IndexName=GSI1,
        KeyConditionExpression="GSI1PK = :pk",
        ExpressionAttributeValues={":pk": _s(f"TYPE#{kind}")},
    )
    return [json.loads(item["doc"]["S"]) for item in items]


def versions(kind: str, entity_id: str) -> list[dict[str, Any]]:
    """Every stored snapshot of an entity, newest first."""
    items = _query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :v)",
        ExpressionAttributeValues={":pk": _s(_pk(kind, entity_id)), ":v": _s("V#")},
        ScanIndexForward=False,
        ConsistentRead=True,
    )
    return [json.loads(item["doc"]["S"]) for item in items]


def delete(kind: str, entity_id: str, expected_version: int) -> None:
    """Delete an entity and its snapshots; StoreConflict if it changed since it was read."""
    from botocore.exceptions import ClientError

    table = config.table_name()
    try:
        _ddb().delete_item(
            TableName=table,
            Key={"PK": _s(_pk(kind, entity_id)), "SK": _s(CURRENT)},
            ConditionExpression="#v = :expected",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":expected": _n(expected_version)},
        )
    except ClientError as exc:
        if _is_condition_failure(exc):
            raise StoreConflict(str(exc)) from exc
        raise
    keys = [
        {"PK": item["PK"], "SK": item["SK"]}
        for item in _query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": _s(_pk(kind, entity_id))},
            ProjectionExpression="PK, SK",
        )
    ]
    for start in range(0, len(keys), 25):
        requests = [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]
        pending: dict[str, Any] = {table: requests}
        while pending:
            pending = _ddb().batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


# --- API keys -------------------------------------------------------------------------------


def put_key(key_hash: str, record: dict[str, Any]) -> None:
    """Store a key record (hash only); StoreConflict on the astronomically unlikely repeat."""
    from botocore.exceptions import ClientError

    item = {
        "PK": _s(f"KEY#{key_hash}"),
        "SK": _s("KEY"),
        "GSI1PK": _s("TYPE#KEY"),
        "GSI1SK": _s(f"{int(record['createdTime']):013d}#{record['keyId']}"),
        "doc": _s(json.dumps(record, separators=(",", ":"))),
    }
    try:
        _ddb().put_item(
            TableName=config.table_name(), Item=item, ConditionExpression="attribute_not_exists(PK)"
        )
    except ClientError as exc:
        if _is_condition_failure(exc):
            raise StoreConflict("key exists") from exc
        raise


def get_key(key_hash: str) -> dict[str, Any] | None:
    response = _ddb().get_item(
        TableName=config.table_name(), Key={"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY")}
    )
    item = response.get("Item")
    return json.loads(item["doc"]["S"]) if item else None


def set_key_active(key_hash: str, active: bool) -> None:
    record = get_key(key_hash)
    if record is None:
        raise StoreMissing(key_hash)
    record["active"] = active
    _ddb().update_item(
        TableName=config.table_name(),
        Key={"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY")},
        UpdateExpression="SET doc = :doc",
        ExpressionAttributeValues={":doc": _s(json.dumps(record, separators=(",", ":")))},
    )


def list_keys() -> list[dict[str, Any]]:
    items = _query(
        IndexName=GSI1,
        KeyConditionExpression="GSI1PK = :pk",
        ExpressionAttributeValues={":pk": _s("TYPE#KEY")},
    )
    return [json.loads(item["doc"]["S"]) for item in items]


def create_table(table_name: str | None = None) -> None:
    """Create the table as template.yaml declares it (local backend and tests)."""
    from botocore.exceptions import ClientError

    name = table_name or config.table_name()
    try:
        _ddb().create_table(TableName=name, **TABLE_SCHEMA)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceInUseException":
            raise
        return
    _ddb().update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
    )


def set_internal(kind: str, entity_id: str, field: str, value: Any, attempts: int = 5) -> bool:
    """Set a field the service keeps beside an entity's data (`_health`), without a new version.

    A conditional put on the unchanged version: a concurrent user update wins and this retries
    on the new version. False when the entity is gone.
    """
    for _ in range(attempts):
        doc = get(kind, entity_id)
        if doc is None:
            return False
        doc[field] = value
        try:
            _ddb().put_item(
                TableName=config.table_name(),
                Item=_current_item(kind, entity_id, doc),
                ConditionExpression="#v = :expected",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={":expected": _n(int(doc["version"]))},
            )
            return True
        except Exception as exc:
            if not _is_condition_failure(exc):
                raise
    raise StoreConflict(f"{kind} {entity_id} kept changing while its {field} was written")
