"""The single DynamoDB table.

Key plan (docs/architecture.md, 'Data: one DynamoDB table'):

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

Deleting is all or nothing too, as every reader sees it: the current item and every snapshot go
in one transaction when they fit (100 items); a longer history is first hidden in one
transaction (the current item becomes a tombstone: no `doc`, no GSI keys, so `get`, lists and
`versions` see nothing), then purged. A purge cut short by a failure leaves an invisible
tombstone with some snapshots, which the next create of the same id purges before taking it.
A transaction cancelled by a conflict with another one, or by throttling, is retried with
backoff (`is_transient_cancellation`); every other failure is raised as the store's own error
or botocore's.
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


class StoreUnavailable(Exception):
    """DynamoDB kept part of a batch unprocessed (throttling) past our retries: retry later."""


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
    code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code", "")
    if code == "ConditionalCheckFailedException":
        return True
    if code == "TransactionCanceledException":
        reasons = (getattr(exc, "response", None) or {}).get("CancellationReasons") or []
        return any(r.get("Code") == "ConditionalCheckFailed" for r in reasons) or not reasons
    return False


def _create_put(
    table: str, kind: str, entity_id: str, doc: dict[str, Any], over_tombstone: bool = False
) -> dict[str, Any]:
    put: dict[str, Any] = {"TableName": table, "Item": _current_item(kind, entity_id, doc)}
    if over_tombstone:  # replaces a purged tombstone (module docstring), atomically
        put.update(ConditionExpression="attribute_exists(#t)", ExpressionAttributeNames={"#t": TOMBSTONE})
    else:
        put["ConditionExpression"] = "attribute_not_exists(PK)"
    return {"Put": put}


def _replace_put(table: str, kind: str, entity_id: str, doc: dict[str, Any], expected: int) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": table,
            "Item": _current_item(kind, entity_id, doc),
            "ConditionExpression": "#v = :expected",
            "ExpressionAttributeNames": {"#v": "version"},
            "ExpressionAttributeValues": {":expected": _n(expected)},
        }
    }


def _snapshot_put(table: str, kind: str, entity_id: str, doc: dict[str, Any]) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": _snapshot_item(kind, entity_id, doc)}}


def _replace_items(
    table: str, replaces: Sequence[tuple[str, str, dict[str, Any], int]]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for kind, entity_id, doc, expected in replaces:
        items += [
            _replace_put(table, kind, entity_id, doc, expected),
            _snapshot_put(table, kind, entity_id, doc),
        ]
    return items


def create(kind: str, entity_id: str, doc: dict[str, Any]) -> None:
    """Store version 1 of a new entity; StoreConflict if the id is taken."""
    write_many(creates=[(kind, entity_id, doc)])


def replace(kind: str, entity_id: str, doc: dict[str, Any], expected_version: int) -> None:
    """Store a new version, only if the stored one is still `expected_version`."""
    write_many(replaces=[(kind, entity_id, doc, expected_version)])


MAX_ENTITIES_PER_TRANSACTION = 50  # each entity write is two items; DynamoDB allows 100
MAX_TRANSACTION_ITEMS = 100


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
    if not creates and not replaces:
        return
    table = config.table_name()

    def items(over: set[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, entity_id, doc in creates:
            pk = _pk(kind, entity_id)
            out += [
                _create_put(table, kind, entity_id, doc, pk in over),
                _snapshot_put(table, kind, entity_id, doc),
            ]
        return out + _replace_items(table, replaces)

    try:
        _transact(items(set()))
    except StoreConflict:
        # An id still held by the tombstone of an interrupted delete: purge it, then take it.
        tombstones = {pk for kind, entity_id, _ in creates if _is_tombstone(pk := _pk(kind, entity_id))}
        if not tombstones:
            raise
        for pk in tombstones:
            _purge(pk, keep_tombstone=True)
        _transact(items(tombstones))


def _transact(items: list[dict[str, Any]]) -> None:
    from botocore.exceptions import ClientError

    for attempt in range(CONFLICT_RETRIES + 1):
        try:
            _ddb().transact_write_items(TransactItems=items)
            return
        except ClientError as exc:
            if is_transient_cancellation(exc) and attempt < CONFLICT_RETRIES:
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
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = response.get("CancellationReasons") or []
    codes = {r.get("Code") for r in reasons}
    return "TransactionConflict" in codes and "ConditionalCheckFailed" not in codes


def is_transient_cancellation(exc: Exception) -> bool:
    """A transaction cancelled whole for a reason a retry can clear: a conflict with another
    transaction (is_transaction_conflict), or throttling of one of its items (a cancellation
    botocore does not retry). Nothing of it was applied."""
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    codes = {r.get("Code") for r in response.get("CancellationReasons") or []}
    return bool(codes & aws.TRANSIENT_CANCELLATIONS) and "ConditionalCheckFailed" not in codes


def conflict_pause(attempt: int) -> None:
    """Jittered exponential backoff: 10 ms, 20 ms, 40 ms... (full jitter)."""
    import random
    import time

    time.sleep(random.uniform(0, 0.01 * 2**attempt))


def _is_too_large(exc: Exception) -> bool:
    error = (getattr(exc, "response", None) or {}).get("Error", {})
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
    return json.loads(item["doc"]["S"]) if item and "doc" in item else None


def _is_tombstone(pk: str) -> bool:
    response = _ddb().get_item(
        TableName=config.table_name(), Key={"PK": _s(pk), "SK": _s(CURRENT)}, ConsistentRead=True
    )
    return TOMBSTONE in (response.get("Item") or {})


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
    """Every stored snapshot of an entity, newest first ([] when it does not exist).

    One query of the entity's items: the snapshots (`V#...`, newest first) and then its current
    item, which must be there and not a tombstone (snapshots left by an interrupted delete are
    not shown)."""
    items = list(
        _query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": _s(_pk(kind, entity_id))},
            ScanIndexForward=False,
            ConsistentRead=True,
        )
    )
    if not any(item["SK"]["S"] == CURRENT and "doc" in item for item in items):
        return []
    return [json.loads(item["doc"]["S"]) for item in items if item["SK"]["S"].startswith("V#")]


TOMBSTONE = "deletedAt"
BATCH_RETRIES = 8


def delete(
    kind: str,
    entity_id: str,
    expected_version: int,
    replaces: Sequence[tuple[str, str, dict[str, Any], int]] = (),
) -> None:
    """Delete an entity and its snapshots; StoreConflict if it changed since it was read.

    `replaces` (as in write_many) change other entities in the same transaction, e.g. a holdout's
    experiments losing their link to it. All or nothing, as every reader sees it (module
    docstring): one transaction when the items fit, else a tombstone in one transaction, then the
    purge.
    """
    if len(replaces) >= MAX_ENTITIES_PER_TRANSACTION:
        raise ValueError(f"at most {MAX_ENTITIES_PER_TRANSACTION - 1} entities change with a delete")
    table = config.table_name()
    pk = _pk(kind, entity_id)
    current = {"PK": _s(pk), "SK": _s(CURRENT)}
    on_version = {
        "ConditionExpression": "#v = :expected",
        "ExpressionAttributeNames": {"#v": "version"},
        "ExpressionAttributeValues": {":expected": _n(expected_version)},
    }
    others = _replace_items(table, replaces)
    snapshots = [key for key in _keys(pk) if key["SK"]["S"] != CURRENT]
    if len(others) + 1 + len(snapshots) <= MAX_TRANSACTION_ITEMS:
        _transact(
            [
                *others,
                {"Delete": {"TableName": table, "Key": current, **on_version}},
                *({"Delete": {"TableName": table, "Key": key}} for key in snapshots),
            ]
        )
        return
    import time

    tombstone = {**current, TOMBSTONE: _n(int(time.time() * 1000))}
    _transact([*others, {"Put": {"TableName": table, "Item": tombstone, **on_version}}])
    _purge(pk)


def _keys(pk: str) -> list[dict[str, Any]]:
    return [
        {"PK": item["PK"], "SK": item["SK"]}
        for item in _query(
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": _s(pk)},
            ProjectionExpression="PK, SK",
            ConsistentRead=True,
        )
    ]


def _purge(pk: str, keep_tombstone: bool = False) -> None:
    """Remove the snapshots a tombstone hides, then (unless kept for a create) the tombstone."""
    from botocore.exceptions import ClientError

    _batch_delete([key for key in _keys(pk) if key["SK"]["S"] != CURRENT])
    if keep_tombstone:
        return
    try:
        _ddb().delete_item(
            TableName=config.table_name(),
            Key={"PK": _s(pk), "SK": _s(CURRENT)},
            ConditionExpression="attribute_exists(#t)",
            ExpressionAttributeNames={"#t": TOMBSTONE},
        )
    except ClientError as exc:
        if not _is_condition_failure(exc):  # gone already, or the id was taken again meanwhile
            raise


def _batch_delete(keys: list[dict[str, Any]]) -> None:
    """Delete items 25 a request, retrying unprocessed ones with backoff; StoreUnavailable past that."""
    import time

    table = config.table_name()
    for start in range(0, len(keys), 25):
        pending = [{"DeleteRequest": {"Key": key}} for key in keys[start : start + 25]]
        for attempt in range(BATCH_RETRIES):
            response = _ddb().batch_write_item(RequestItems={table: pending})
            pending = (response.get("UnprocessedItems") or {}).get(table) or []
            if not pending:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise StoreUnavailable(f"{len(pending)} deletes left unprocessed after {BATCH_RETRIES} attempts")


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
