"""Bucket placement of experiments in layers: which buckets each experiment holds, and whether a new
or changed experiment fits (the rules are in `expconsole.services.layers`' docstring).

Apart from the layers service so that the experiments function, which places experiments, imports
neither the layer models nor the layers CRUD: its cold start creates only what it uses.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from expconsole import kinds
from expconsole.errors import Invalid
from expconsole.services.common import lifecycle
from expconsole.services.entities import Doc
from expconsole.store import dynamo

KIND = kinds.LAYER
BUCKETS = 1000


def members(layer_id: str) -> list[Doc]:
    """Stored experiments placed in the layer, archived ones included."""
    return [e for e in dynamo.list_all(kinds.EXPERIMENT) if e.get("layerID") == layer_id]


# --- placement -------------------------------------------------------------------------------------------


def claim(doc: Doc) -> int:
    """How many buckets an experiment occupies in its layer."""
    buckets = doc.get("userBuckets") or []
    if buckets:
        return len(buckets)
    allocation: float = doc.get("allocation", 100)
    return math.ceil(round(allocation * BUCKETS / 100, 6))


def _ranges(buckets: Iterable[int]) -> str:
    """`[1, 2, 3, 7]` → `1-3, 7`."""
    out: list[str] = []
    ordered = sorted(buckets)
    start = prev = ordered[0]
    for b in [*ordered[1:], None]:
        if b is not None and b == prev + 1:
            prev = b
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if b is not None:
            start = prev = b
    return ", ".join(out)


def held_buckets(doc: Doc) -> list[int]:
    """The buckets an experiment holds in its layer: listed, or taken when it started."""
    if doc.get("userBuckets"):
        return sorted({int(b) for b in doc["userBuckets"]})
    return list((doc.get("_state") or {}).get("layerBuckets") or [])


def take_buckets(doc: Doc) -> None:
    """At its start, a layered experiment without `userBuckets` takes `allocation` x 10 free
    buckets (lowest first) and keeps them (`_state.layerBuckets`), so its units never move when
    other experiments of the layer start, end or leave. A read-then-write, like check_placement."""
    if not doc.get("layerID") or doc.get("userBuckets") or held_buckets(doc):
        return
    taken: set[int] = set()
    for other in members(doc["layerID"]):
        if other["id"] != doc["id"] and not lifecycle.is_archived(other):
            taken.update(held_buckets(other))
    free = [b for b in range(BUCKETS) if b not in taken]
    doc["_state"] = {**doc.get("_state", {}), "layerBuckets": free[: claim(doc)]}


def check_placement(doc: Doc) -> None:
    """An experiment (as it would be stored) fits its layer: 400 naming the field otherwise."""
    layer_id = doc.get("layerID")
    if not layer_id:
        return
    layer = dynamo.get(KIND, layer_id)
    if layer is None:
        raise Invalid.field("layerID", f"layer {layer_id!r} does not exist")
    if doc.get("idType") != layer["idType"]:
        raise Invalid.field(
            "idType",
            f"is {doc.get('idType')!r} but layer {layer_id!r} is for {layer['idType']!r}: "
            "an experiment runs on its layer's id type",
        )
    mine: dict[int, int] = {}
    for index, bucket in enumerate(doc.get("userBuckets") or []):
        if bucket != int(bucket):
            raise Invalid.field(
                f"userBuckets[{index}]", f"must be a whole bucket number (0 to 999) in a layer, not {bucket}"
            )
        if int(bucket) in mine:
            raise Invalid.field(
                f"userBuckets[{index}]", f"repeats userBuckets[{mine[int(bucket)]}] ({int(bucket)})"
            )
        mine[int(bucket)] = index
    others = [e for e in members(layer_id) if e["id"] != doc["id"] and not lifecycle.is_archived(e)]
    for other in others:
        overlap = set(mine) & {int(b) for b in other.get("userBuckets") or []}
        if overlap:
            raise Invalid.field(
                "userBuckets",
                f"overlaps experiment {other['id']!r} in layer {layer_id!r} on bucket(s) {_ranges(overlap)}",
            )
    used = sum(claim(e) for e in others)
    need = claim(doc)
    if used + need > BUCKETS:
        users = ", ".join(f"{e['id']!r} ({claim(e)})" for e in others if claim(e))
        raise Invalid.field(
            "userBuckets" if mine else "allocation",
            f"needs {need} of the {BUCKETS} buckets of layer {layer_id!r} but {BUCKETS - used} are free "
            f"(taken by {users})",
        )
