"""The v1 `download_config_specs` document in the v2 shape that `statsig-python-core` reads.

The Rust core accepts only v2 JSON: `feature_gates`, `dynamic_configs` and `layer_configs` as
maps keyed by name, each rule's conditions as keys into one top-level `condition_map`, and
`experiment_to_layer`. The content is the v1 document's, with two adjustments so that the core
answers like the pure-Python SDK:

- a disabled spec is served without rules (the core 0.24 evaluates a disabled spec's rules and
  only names the fall-through "disabled"; the pure SDK never looks at them);
- fields the core requires but v1 may omit get the pure SDK's defaults (rule `name` = its id,
  condition `idType` = "userID").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

_SPEC_SECTIONS = ("feature_gates", "dynamic_configs", "layer_configs")


def condition_key(condition: Mapping[str, Any]) -> str:
    """A content hash, so equal conditions share one `condition_map` entry across specs."""
    canonical = json.dumps(condition, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def v1_to_v2(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Convert a v1 document; top-level fields other than the spec lists pass through."""
    out: dict[str, Any] = {key: value for key, value in doc.items() if key not in (*_SPEC_SECTIONS, "layers")}
    condition_map: dict[str, dict[str, Any]] = {}
    for section in _SPEC_SECTIONS:
        specs: dict[str, Any] = {}
        for spec in doc.get(section, []):
            converted = {key: value for key, value in spec.items() if key != "rules"}
            rules = spec.get("rules", []) if spec.get("enabled", False) else []
            converted["rules"] = [_rule(rule, condition_map) for rule in rules]
            specs[spec["name"]] = converted
        out[section] = specs
    out["condition_map"] = condition_map
    out["experiment_to_layer"] = {
        experiment: layer
        for layer, experiments in doc.get("layers", {}).items()
        for experiment in experiments
    }
    out.setdefault("has_updates", True)
    return out


def _rule(rule: Mapping[str, Any], condition_map: dict[str, dict[str, Any]]) -> dict[str, Any]:
    converted = {key: value for key, value in rule.items() if key != "conditions"}
    converted.setdefault("name", rule.get("id", ""))
    keys = []
    for condition in rule.get("conditions", []):
        full = {"idType": "userID", **condition}
        key = condition_key(full)
        condition_map[key] = full
        keys.append(key)
    converted["conditions"] = keys
    return converted
