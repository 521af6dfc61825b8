"""The SDK spec document: every gate, config, experiment, layer, holdout and segment, as the
Statsig server SDKs evaluate them (their `download_config_specs` v1 JSON).

`build(snapshot)` is pure: stored entity documents in, the document out. How each kind maps:

- **Gates** → `feature_gates[]`, entity `feature_gate`, spec salt = the gate id, rules in order,
  each with its own id as salt (ids are kept across updates, so a unit's pass/fail is stable).
  A rule limited to `environments` gets an `environment_field tier any [...]` condition. A
  disabled gate is served without rules (the Rust core would evaluate them anyway); a launched
  gate is one public rule `launched`. Holdouts holding the gate come first as rules that fail
  held-out units.
- **Segments** → gates named `segment:<id>` (entity `segment`), as the SDKs expect: rule-based
  segments keep their rules; id lists are one `unit_id in_segment_list <segment id>` rule.
  `passes_segment`/`fails_segment` become `pass_gate`/`fail_gate` on them.
- **Holdouts** → gates named `holdout:<id>` (entity `holdout`): `passPercentage` percent of the
  units (of the targeting gate's, when set) are held out. Gates, experiments, configs and layers
  they hold (`gateIDs`, `experimentIDs`, `layerIDs`, the entity's own `holdoutIDs`; a global
  holdout holds every gate and experiment created after it) start with a rule sending held-out
  units to the default, so every exposure carries the holdout check as a secondary exposure.
- **Dynamic configs** → `dynamic_configs[]`, entity `dynamic_config`; a rule with variants is
  one rule per variant, the variant picked by `user_bucket` on the rule's salt (cumulative
  sizes), all sharing the rule's salt so the pass percentage decides alike.
- **Experiments** → `dynamic_configs[]`, entity `experiment`. Only an `active` experiment
  assigns: holdout rules, `layerAssignment` (units outside its buckets of the layer, or of its
  own allocation), `targetingGate`, `inlineTargeting`, then one rule per group, id = the group
  id, `user_bucket < cumulative size x 10` on the experiment's salt. A disabled group's rule
  sends its units to the default under `<group id>:disabled`. `setup` serves `prestart`, a
  decided experiment its launched group (`launchedGroup`) to everyone, an abandoned one
  `abandoned`; archived ones are left out.
- **Layers** → `layer_configs[]`, entity `layer`, default = the parameters' defaults; one rule
  per experiment holding buckets, delegating (`configDelegate`) to it; `layers` lists members.

Archived entities are left out: an SDK treats an unknown name as false / the default.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from expconsole.services.common.lifecycle import is_archived
from expconsole.services.entities import Doc

BUCKETS = 1000
SEGMENT_PREFIX = "segment:"
HOLDOUT_PREFIX = "holdout:"
TARGETING_PREFIX = "targeting:"
DEFAULT_ENVIRONMENT = "production"

# Our condition type → (Statsig condition type, field).
USER_FIELDS: dict[str, tuple[str, str | None]] = {
    "public": ("public", None),
    "user_id": ("user_field", "userID"),
    "email": ("user_field", "email"),
    "app_version": ("user_field", "appVersion"),
    "locale": ("user_field", "locale"),
    "ip_address": ("user_field", "ip"),
    "url": ("user_field", "url"),
    "device_model": ("user_field", "deviceModel"),
    "browser_name": ("ua_based", "browser_name"),
    "browser_version": ("ua_based", "browser_version"),
    "os_name": ("ua_based", "os_name"),
    "os_version": ("ua_based", "os_version"),
    "country": ("ip_based", "country"),
    "environment_tier": ("environment_field", "tier"),
    "time": ("current_time", None),
    "target_app": ("target_app", None),
}


@dataclass
class Snapshot:
    """The stored documents a build reads, by kind (archived ones included; the build skips them)."""

    gates: list[Doc] = field(default_factory=list)
    segments: list[Doc] = field(default_factory=list)
    configs: list[Doc] = field(default_factory=list)
    experiments: list[Doc] = field(default_factory=list)
    layers: list[Doc] = field(default_factory=list)
    holdouts: list[Doc] = field(default_factory=list)


# --- conditions and rules -----------------------------------------------------------------------


def condition(cond: Doc, id_type: str) -> Doc:
    """One of our conditions as a Statsig condition."""
    ctype = cond["type"]
    target = cond.get("targetValue")
    if ctype in ("passes_segment", "fails_segment"):
        kind = "pass_gate" if ctype == "passes_segment" else "fail_gate"
        return {"type": kind, "targetValue": SEGMENT_PREFIX + str(target), "idType": id_type}
    if ctype in ("passes_gate", "fails_gate"):
        kind = "pass_gate" if ctype == "passes_gate" else "fail_gate"
        return {"type": kind, "targetValue": str(target), "idType": id_type}
    if ctype == "custom_field":
        stype, field_name = "user_field", cond.get("field")
    elif ctype == "unit_id":
        return {
            "type": "unit_id",
            "targetValue": target,
            "operator": cond.get("operator"),
            "field": None,
            "additionalValues": {},
            "idType": cond.get("customID") or id_type,
        }
    else:
        stype, field_name = USER_FIELDS[ctype]
    out: Doc = {
        "type": stype,
        "targetValue": None if ctype == "public" else target,
        "operator": cond.get("operator"),
        "field": field_name,
        "additionalValues": {},
        "idType": id_type,
    }
    return out


def _environments(envs: list[str] | None, id_type: str) -> list[Doc]:
    if envs is None:
        return []
    return [
        {
            "type": "environment_field",
            "targetValue": list(envs),
            "operator": "any",
            "field": "tier",
            "additionalValues": {},
            "idType": id_type,
        }
    ]


def _public(id_type: str) -> Doc:
    return {
        "type": "public",
        "targetValue": None,
        "operator": None,
        "field": None,
        "additionalValues": {},
        "idType": id_type,
    }


def _gate_condition(kind: str, gate: str, id_type: str) -> Doc:
    return {
        "type": kind,
        "targetValue": gate,
        "operator": None,
        "field": None,
        "additionalValues": {},
        "idType": id_type,
    }


def _bucket(operator: str, target: Any, salt: str, id_type: str) -> Doc:
    return {
        "type": "user_bucket",
        "targetValue": target,
        "operator": operator,
        "field": None,
        "additionalValues": {"salt": salt},
        "idType": id_type,
    }


def _rule(
    rule_id: str,
    conditions: list[Doc],
    id_type: str,
    *,
    pass_percentage: float = 100,
    return_value: Any = True,
    salt: str | None = None,
    group_name: str | None = None,
    experiment_group: bool | None = None,
    delegate: str | None = None,
) -> Doc:
    out: Doc = {
        "name": rule_id,
        "id": rule_id,
        "salt": salt or rule_id,
        "passPercentage": pass_percentage,
        "conditions": conditions,
        "returnValue": return_value,
        "idType": id_type,
        "groupName": group_name,
    }
    if experiment_group is not None:
        out["isExperimentGroup"] = experiment_group
    if delegate is not None:
        out["configDelegate"] = delegate
    return out


def stored_rule(rule: Doc, id_type: str, return_value: Any = True) -> Doc:
    """A stored rule (gate, segment, config without variants) as a Statsig rule."""
    conditions = [condition(c, id_type) for c in rule.get("conditions", [])]
    conditions += _environments(rule.get("environments"), id_type)
    return _rule(
        rule["id"],
        conditions,
        id_type,
        pass_percentage=rule["passPercentage"],
        return_value=return_value,
        group_name=rule.get("name"),
    )


def _spec(
    name: str, kind: str, entity: str, id_type: str, rules: list[Doc], *, enabled: bool, default: Any
) -> Doc:
    return {
        "name": name,
        "type": kind,
        "entity": entity,
        "salt": name,
        "enabled": enabled,
        "defaultValue": default,
        "idType": id_type,
        "rules": rules,
        "isDeviceBased": False,
    }


# --- holdouts -----------------------------------------------------------------------------------


@dataclass
class Holding:
    """Which holdouts hold which entities (both sides of the links, and global holdouts)."""

    gates: dict[str, list[str]] = field(default_factory=dict)
    experiments: dict[str, list[str]] = field(default_factory=dict)
    layers: dict[str, list[str]] = field(default_factory=dict)
    configs: dict[str, list[str]] = field(default_factory=dict)  # only their own holdoutIDs
    global_ones: list[tuple[int, str]] = field(default_factory=list)  # (createdTime, id)
    live: set[str] = field(default_factory=set)

    def of(self, kind: str, doc: Doc) -> list[str]:
        """Live holdouts holding `doc`, in a stable order."""
        held = set(getattr(self, kind).get(doc["id"], [])) | set(doc.get("holdoutIDs") or [])
        if kind in ("gates", "experiments"):
            created = int(doc.get("createdTime") or 0)
            held |= {hid for when, hid in self.global_ones if when <= created}
        return sorted(h for h in held if h in self.live)


def _holding(holdouts: Iterable[Doc]) -> Holding:
    out = Holding()
    for h in holdouts:
        if is_archived(h) or not h.get("isEnabled", True):
            continue
        hid = h["id"]
        out.live.add(hid)
        for key, target in (
            ("gateIDs", out.gates),
            ("experimentIDs", out.experiments),
            ("layerIDs", out.layers),
        ):
            for entity_id in h.get(key) or []:
                target.setdefault(entity_id, []).append(hid)
        if h.get("isGlobal"):
            out.global_ones.append((int(h.get("createdTime") or 0), hid))
    return out


def holdout_spec(h: Doc) -> Doc:
    id_type = h.get("idType") or "userID"
    rules: list[Doc] = []
    if h.get("targetingGateID"):
        rules.append(
            _rule(
                "targetingGate",
                [_gate_condition("fail_gate", h["targetingGateID"], id_type)],
                id_type,
                pass_percentage=0,
            )
        )
    rules.append(_rule(h["id"], [_public(id_type)], id_type, pass_percentage=h.get("passPercentage", 0)))
    return _spec(
        HOLDOUT_PREFIX + h["id"], "feature_gate", "holdout", id_type, rules, enabled=True, default=False
    )


def _holdout_rules(holdouts: list[str], id_type: str, gate: bool, default: Any) -> list[Doc]:
    """Rules that send held-out units to the default (a gate: fail), one per holdout."""
    return [
        _rule(
            HOLDOUT_PREFIX + hid,
            [_gate_condition("pass_gate", HOLDOUT_PREFIX + hid, id_type)],
            id_type,
            pass_percentage=0 if gate else 100,
            return_value=True if gate else default,
        )
        for hid in holdouts
    ]


# --- gates, segments, configs --------------------------------------------------------------------


def gate_spec(gate: Doc, holding: Holding) -> Doc:
    id_type = gate.get("idType") or "userID"
    state = gate.get("_state") or {}
    rules = _holdout_rules(holding.of("gates", gate), id_type, gate=True, default=False)
    if state.get("launched"):
        rules.append(_rule("launched", [_public(id_type)], id_type))
        return _spec(gate["id"], "feature_gate", "feature_gate", id_type, rules, enabled=True, default=False)
    if not gate.get("isEnabled"):
        return _spec(gate["id"], "feature_gate", "feature_gate", id_type, [], enabled=False, default=False)
    rules += [stored_rule(r, id_type) for r in gate.get("rules", [])]
    return _spec(gate["id"], "feature_gate", "feature_gate", id_type, rules, enabled=True, default=False)


def segment_spec(seg: Doc) -> Doc:
    id_type = seg.get("idType") or "userID"
    if seg.get("type") == "id_list":
        cond = {
            "type": "unit_id",
            "targetValue": seg["id"],
            "operator": "in_segment_list",
            "field": None,
            "additionalValues": {},
            "idType": id_type,
        }
        rules = [_rule("id_list", [cond], id_type)]
    else:
        rules = [stored_rule(r, id_type) for r in seg.get("rules") or []]
    enabled = seg.get("isEnabled", True)
    return _spec(
        SEGMENT_PREFIX + seg["id"],
        "feature_gate",
        "segment",
        id_type,
        rules if enabled else [],
        enabled=enabled,
        default=False,
    )


def _cumulative_rules(
    items: list[tuple[str, float, Any, str | None]], base: list[Doc], salt: str, id_type: str, **kw: Any
) -> list[Doc]:
    """One rule per (id, size %, value, name): `user_bucket < cumulative x 10` on `salt`."""
    rules = []
    total = 0.0
    for item_id, size, value, name in items:
        total += size
        bound = round(total * BUCKETS / 100, 6)
        conds = [*base, _bucket("lt", bound, salt, id_type)]
        rules.append(_rule(item_id, conds, id_type, return_value=value, group_name=name, **kw))
    return rules


def config_spec(cfg: Doc, holding: Holding) -> Doc:
    id_type = cfg.get("idType") or "userID"
    default = cfg.get("defaultValue") or {}
    if not cfg.get("isEnabled", True):  # served without rules: the Rust core would evaluate them
        return _spec(
            cfg["id"], "dynamic_config", "dynamic_config", id_type, [], enabled=False, default=default
        )
    rules = _holdout_rules(holding.of("configs", cfg), id_type, gate=False, default=default)
    for rule in cfg.get("rules", []):
        variants = rule.get("variants") or []
        if not variants:
            rules.append(stored_rule(rule, id_type, rule.get("returnValue") or {}))
            continue
        conds = [condition(c, id_type) for c in rule.get("conditions", [])]
        conds += _environments(rule.get("environments"), id_type)
        items = [(v["id"], v["passPercentage"], v.get("returnValue") or {}, v.get("name")) for v in variants]
        for r in _cumulative_rules(items, conds, rule["id"], id_type):
            r["salt"] = rule["id"]  # one pass decision for the rule, whichever variant
            r["passPercentage"] = rule["passPercentage"]
            rules.append(r)
    return _spec(
        cfg["id"],
        "dynamic_config",
        "dynamic_config",
        id_type,
        rules,
        enabled=True,
        default=default,
    )


# --- experiments and layers ----------------------------------------------------------------------


HOLDING_BUCKETS = ("active", "decision_made")


def layer_buckets(layer_id: str, members: list[Doc]) -> dict[str, list[int]]:
    """The buckets of the layer each running or decided experiment holds.

    Listed `userBuckets`, or the buckets it took at its start (`_state.layerBuckets`, see
    services.layer_buckets.take_buckets). An experiment started before buckets were kept takes
    `allocation` x 10 of the buckets left, in the order the experiments started.
    """
    holders = [e for e in members if e.get("status") in HOLDING_BUCKETS]
    taken: set[int] = set()
    out: dict[str, list[int]] = {}
    for e in holders:
        kept = e.get("userBuckets") or (e.get("_state") or {}).get("layerBuckets")
        if kept:
            out[e["id"]] = sorted({int(b) for b in kept})
            taken.update(out[e["id"]])
    order = sorted(
        (e for e in holders if e["id"] not in out),
        key=lambda e: (e.get("startTime") or math.inf, e.get("createdTime") or 0, e["id"]),
    )
    free = [b for b in range(BUCKETS) if b not in taken]
    for e in order:
        n = math.ceil(round(float(e.get("allocation", 100)) * BUCKETS / 100, 6))
        out[e["id"]], free = free[:n], free[n:]
    return out


def _own_buckets(exp: Doc) -> list[int]:
    """Buckets of an experiment outside any layer: listed, else the first allocation x 10."""
    if exp.get("userBuckets"):
        return sorted({int(b) for b in exp["userBuckets"]})
    n = math.ceil(round(float(exp.get("allocation", 100)) * BUCKETS / 100, 6))
    return list(range(n))


def allocation_salt(exp: Doc) -> str:
    return exp["layerID"] if exp.get("layerID") else f"layer:{exp['id']}"


def inline_targeting_spec(exp: Doc) -> Doc | None:
    """An experiment's inline targeting rules as a gate of their own (`targeting:<id>`)."""
    rules = exp.get("inlineTargetingRules") or []
    if not rules:
        return None
    id_type = exp.get("idType") or "userID"
    specs = [stored_rule(r, id_type) for r in rules]
    return _spec(
        TARGETING_PREFIX + exp["id"], "feature_gate", "segment", id_type, specs, enabled=True, default=False
    )


def experiment_spec(exp: Doc, layer: Doc | None, buckets: list[int] | None, holding: Holding) -> Doc:
    id_type = exp.get("idType") or "userID"
    layer_defaults = {p["name"]: p.get("defaultValue") for p in (layer or {}).get("parameters", [])}
    groups = exp.get("groups") or []
    explicit = sorted({k for g in groups for k in (g.get("parameterValues") or {})})
    status = exp.get("status")

    def value_of(group: Doc) -> Doc:
        return {**layer_defaults, **(group.get("parameterValues") or {})}

    default: Doc = dict(layer_defaults)
    held = holding.of("experiments", exp)
    if layer is not None:
        held = sorted(set(held) | set(holding.of("layers", layer)))
    rules = _holdout_rules(held, id_type, gate=False, default=default)
    if status == "active":
        own = buckets if buckets is not None else _own_buckets(exp)
        if len(own) < BUCKETS:
            rules.append(
                _rule(
                    "layerAssignment",
                    [_bucket("none", own, allocation_salt(exp), id_type)],
                    id_type,
                    return_value=default,
                    experiment_group=False,
                )
            )
        if exp.get("targetingGateID"):
            cond = _gate_condition("fail_gate", exp["targetingGateID"], id_type)
            rules.append(
                _rule("targetingGate", [cond], id_type, return_value=default, experiment_group=False)
            )
        if exp.get("inlineTargetingRules"):
            cond = _gate_condition("fail_gate", TARGETING_PREFIX + exp["id"], id_type)
            rules.append(
                _rule("inlineTargeting", [cond], id_type, return_value=default, experiment_group=False)
            )
        items = [
            (
                g["id"] + (":disabled" if g.get("disabled") else ""),
                float(g.get("size", 0)),
                default if g.get("disabled") else value_of(g),
                g.get("name"),
            )
            for g in groups
        ]
        for r, g in zip(_cumulative_rules(items, [], exp["id"], id_type), groups, strict=True):
            r["isExperimentGroup"] = not g.get("disabled")
            rules.append(r)
    elif status == "decision_made" and exp.get("launchedGroupID"):
        launched = next((g for g in groups if g["id"] == exp["launchedGroupID"]), None)
        if launched is not None:
            rules.append(
                _rule(
                    "launchedGroup",
                    [_public(id_type)],
                    id_type,
                    return_value=value_of(launched),
                    group_name=launched.get("name"),
                    experiment_group=False,
                )
            )
    elif status == "setup":
        rules.append(
            _rule("prestart", [_public(id_type)], id_type, return_value=default, experiment_group=False)
        )
    else:
        rules.append(
            _rule("abandoned", [_public(id_type)], id_type, return_value=default, experiment_group=False)
        )
    spec = _spec(exp["id"], "dynamic_config", "experiment", id_type, rules, enabled=True, default=default)
    spec["isActive"] = status == "active"
    spec["hasSharedParams"] = layer is not None
    spec["isInLayer"] = layer is not None
    spec["explicitParameters"] = explicit
    return spec


def layer_spec(layer: Doc, members: list[Doc], buckets: dict[str, list[int]], holding: Holding) -> Doc:
    id_type = layer.get("idType") or "userID"
    default = {p["name"]: p.get("defaultValue") for p in layer.get("parameters", [])}
    rules = _holdout_rules(holding.of("layers", layer), id_type, gate=False, default=default)
    for exp in members:
        held = buckets.get(exp["id"])
        if not held:
            continue
        rules.append(
            _rule(
                f"layerAssignment:{exp['id']}",
                [_bucket("any", held, layer["id"], id_type)],
                id_type,
                return_value={},
                delegate=exp["id"],
            )
        )
    return _spec(layer["id"], "dynamic_config", "layer", id_type, rules, enabled=True, default=default)


# --- the document ---------------------------------------------------------------------------------


def build(snap: Snapshot, time_ms: int) -> Doc:
    """The v1 document for a snapshot of the stored entities, stamped `time_ms`."""
    holding = _holding(snap.holdouts)
    live = [h for h in snap.holdouts if h["id"] in holding.live]
    gates = [gate_spec(g, holding) for g in snap.gates if not is_archived(g)]
    gates += [segment_spec(s) for s in snap.segments if not is_archived(s)]
    gates += [holdout_spec(h) for h in live]
    configs = [config_spec(c, holding) for c in snap.configs if not is_archived(c)]

    layers_by_id = {layer["id"]: layer for layer in snap.layers}
    experiments = [e for e in snap.experiments if not is_archived(e) and e.get("status") != "archived"]
    members: dict[str, list[Doc]] = {}
    for exp in experiments:
        if exp.get("layerID") in layers_by_id:
            members.setdefault(exp["layerID"], []).append(exp)
    buckets = {lid: layer_buckets(lid, exps) for lid, exps in members.items()}
    for exp in experiments:
        layer = layers_by_id.get(exp.get("layerID") or "")
        own = buckets[layer["id"]].get(exp["id"], []) if layer is not None else None
        configs.append(experiment_spec(exp, layer, own, holding))
        targeting = inline_targeting_spec(exp)
        if targeting is not None:
            gates.append(targeting)
    layer_configs = [
        layer_spec(layer, members.get(layer["id"], []), buckets.get(layer["id"], {}), holding)
        for layer in snap.layers
    ]
    return {
        "time": time_ms,
        "has_updates": True,
        "feature_gates": gates,
        "dynamic_configs": configs,
        "layer_configs": layer_configs,
        "layers": {lid: [e["id"] for e in exps] for lid, exps in members.items()},
        "default_environment": DEFAULT_ENVIRONMENT,
        "id_lists": {
            s["id"]: True for s in snap.segments if s.get("type") == "id_list" and not is_archived(s)
        },
    }
