"""Evaluation for callers without an SDK: the served spec document, our evaluator, SDK exposures.

The evaluator (services.sdk.evaluator) is built from the same document the SDKs download (S3,
never the table) and the id-list files they download, and rebuilt only when either changes. Each
answer logs the exposure an SDK would log for it, through the SDK events path
(services.sdk.log_event), so pulse counts these units like the SDKs' units.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from expconsole.errors import Invalid, NotFound, Unavailable
from expconsole.services.sdk import documents, log_event
from expconsole.services.sdk.evaluator import ConfigEvaluation, Evaluator, GateEvaluation, LayerEvaluation


@dataclass
class _Cached:
    key: tuple[Any, ...]
    evaluator: Evaluator
    names: dict[str, set[str]]


SECTIONS = {"gate": "feature_gates", "config": "dynamic_configs", "experiment": "dynamic_configs",
            "layer": "layer_configs"}  # fmt: skip


_CACHE: list[_Cached] = []


def _id_list_members(index: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, entry in index.items():
        found = documents.id_list_bytes(name, entry["fileID"], 0)
        text = found[0].decode("ascii") if found else ""
        members: set[str] = set()
        for line in text.splitlines():
            if line.startswith("+"):
                members.add(line[1:])
            elif line.startswith("-"):
                members.discard(line[1:])
        out[name] = members
    return out


def evaluator() -> Evaluator:
    """The evaluator of the current document (and id lists), built once per change."""
    return _current().evaluator


def _current() -> _Cached:
    document = documents.current(1)
    if document is None:
        raise Unavailable("The spec document is being built for the first time; retry in a few seconds.")
    index = documents.id_lists()
    key = (document.etag, tuple(sorted((n, e["fileID"]) for n, e in index.items())))
    if _CACHE and _CACHE[0].key == key:
        return _CACHE[0]
    spec = documents.current_spec()
    assert spec is not None
    names = {kind: {s["name"] for s in spec.get(section, [])} for kind, section in SECTIONS.items()}
    for config in spec.get("dynamic_configs", []):
        (names["experiment"] if config.get("entity") == "experiment" else names["config"]).add(config["name"])
    names["config"] -= {c["name"] for c in spec.get("dynamic_configs", []) if c.get("entity") == "experiment"}
    names["experiment"] &= {
        c["name"] for c in spec.get("dynamic_configs", []) if c.get("entity") == "experiment"
    }
    built = _Cached(key, Evaluator(spec, _id_list_members(index)), names)
    _CACHE[:] = [built]
    return built


def _user(ev: Evaluator, user: dict[str, Any]) -> Any:
    try:
        return ev.user(user)
    except ValueError as exc:
        field, _, rule = str(exc).partition(": ")
        raise Invalid.field(field, rule or str(exc)) from None


def _log(ev: Evaluator, user: Any, results: list[Any], parameters: list[str] | None = None) -> None:
    now = int(time.time() * 1000)
    events = [e for r in results for e in ev.exposure_events(user, r, parameters, time_ms=now)]
    mapped = log_event.map_events(events, log_event.Groups.of(documents.current_spec()), now)
    if not mapped.lines:
        return
    seed = "eval:" + hashlib.sha256(json.dumps(events, sort_keys=True, default=str).encode()).hexdigest()
    log_event.store(mapped.lines, seed, now)


def _known(name: str, kind: str, field: str) -> None:
    if name not in _current().names[kind]:
        raise NotFound(f"No {kind} named {name!r} is served to SDKs ({field}); archived ones are not.")


def gate_answer(r: GateEvaluation) -> dict[str, Any]:
    return {
        "name": r.name,
        "value": r.value,
        "rule_id": r.rule_id,
        "group_name": r.group_name,
        "id_type": r.id_type,
    }


def config_answer(r: ConfigEvaluation | LayerEvaluation) -> dict[str, Any]:
    return {
        "name": r.name,
        "value": r.value,
        "rule_id": r.rule_id,
        "group_name": r.group_name,
        "id_type": r.id_type,
        "is_experiment_group": r.is_experiment_group,
    }


def check_gates(user: dict[str, Any], names: list[str], *, several: bool) -> list[dict[str, Any]]:
    """`several`: the caller sent `gateNames` (an unknown name is named by its index there)."""
    ev = evaluator()
    normal = _user(ev, user)
    for index, name in enumerate(names):
        _known(name, "gate", f"gateNames[{index}]" if several else "gateName")
    results = [ev.check_gate(normal, name) for name in names]
    _log(ev, normal, results)
    return [gate_answer(r) for r in results]


def get_config(user: dict[str, Any], name: str, kind: str) -> dict[str, Any]:
    ev = evaluator()
    normal = _user(ev, user)
    _known(name, kind, f"{kind}Name")
    result = ev.get_config(normal, name)
    _log(ev, normal, [result])
    return config_answer(result)


def get_layer(user: dict[str, Any], name: str) -> dict[str, Any]:
    ev = evaluator()
    normal = _user(ev, user)
    _known(name, "layer", "layerName")
    result = ev.get_layer(normal, name)
    _log(ev, normal, [result])  # every parameter read, as `layer.get` of each would log
    return {
        **config_answer(result),
        "allocated_experiment_name": result.allocated_experiment or None,
        "explicit_parameters": result.explicit_parameters,
    }
