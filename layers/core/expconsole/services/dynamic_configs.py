"""Dynamic configs: gates whose rules return JSON values.

Create, read, list, full and partial update, delete, enable/disable, archive/unarchive, rules
and versions work as they do for gates (`services.gates`); rules are stored top-level in the
document (`rules[].conditions`), where the gates' reference lists look for them.

Rules chosen where the contract is silent (see also `json_values` for the value rules):

- `status` is derived on every read: `Archived` when archived, else `Enabled` when
  `isEnabled`, else `Disabled`. Archive is soft and keeps `isEnabled`; unarchive restores the
  status the config had. Any change to an archived config other than unarchive and delete is a
  400 (unarchive it first), as for gates. Archiving an archived config, or unarchiving one that
  is not archived, is a 400.
- `forceArchive` and `archiveReason` are accepted as for gates. Nothing in the console refers
  to a dynamic config (experiments, gates, holdouts and pipelines name gates, not configs), so
  no reference can block an archive or a delete and `forceArchive` has nothing to override.
- Values: `defaultValue` and each rule's and variant's `returnValue` are JSON objects, each
  also answered as JSON5 text (`...Json5`). Either or both may be sent; both must denote the
  same value. JSON5 text sent is kept as sent (comments and all); text for a value sent only as
  an object is generated. A config created without a default has `{}`; a new rule or variant
  without a value returns `{}`. A rule or variant sent back with its `id` and without a value
  keeps its stored value (and a rule its variants when `variants` is left out), so changing a
  rule's percentage cannot drop its value by accident; `variants: []` removes the variants.
- `schema` / `schemaJson5`: a JSON Schema; `schema` is answered as compact JSON, `schemaJson5`
  as sent (generated when only `schema` was sent). With a schema, every value (the default,
  each rule's and each variant's `returnValue`) must validate, whenever the schema or a value
  changes: a violation is a 400 naming the value's path (`rules[1].returnValue.timeout: 5 is
  not of type 'string'`). Paths index the request body where the values were sent in it, the
  stored rules otherwise (a schema change re-validating stored values). `null` for both removes
  the schema.
- Variants: unique names, `passPercentage` (0 to 100, two decimals) summing to 100 within
  0.01, at most 100; ids are assigned by the service (a variant sent with an id must be one of
  that rule's variants, as a rule sent with an id must be one of the config's rules).
- `releasePipelineID` must name an existing release pipeline; conditions `passes_gate` /
  `fails_gate` an existing gate, `passes_segment` / `fails_segment` an existing segment.
- Templates (`isTemplate: true`, set at creation) are left out of the list unless asked for
  with `isTemplate=true`, which lists only templates.
- `targetApps` is accepted as an array or a comma-separated string and answered as one
  comma-separated string (the contract types it as a string); `schema`, `schemaJson5`,
  `releasePipelineID`, `team` and `teamID` are left out of answers when unset.
- `GET /rules` answers as the peer does: `data: [{rules: [...]}]` with pagination.
- Size: each JSON5 or schema text is at most 100,000 characters (400); a config is at most
  350,000 bytes as stored (a DynamoDB item holds 400 KB), and a request carrying more JSON5 and
  schema text than that is refused before any of it is parsed (413).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from expconsole import kinds
from expconsole.errors import Invalid, TooLarge
from expconsole.models.dynamic_configs import (
    DynamicConfig,
    DynamicConfigCreate,
    DynamicConfigFields,
    DynamicConfigListQuery,
    DynamicConfigPatch,
    DynamicConfigRule,
    DynamicConfigRuleOut,
    DynamicConfigRulePatch,
    DynamicConfigUpdate,
    RulesOfConfig,
    StoredDynamicConfig,
    Variant,
    VariantOut,
)
from expconsole.models.pagination import DEFAULT_LIMIT, Page, page_of
from expconsole.models.stored import ArchiveState
from expconsole.services import entities, json_values
from expconsole.services.common import lifecycle, size
from expconsole.services.common import patch as partial
from expconsole.services.common import rules as rules_common
from expconsole.services.entities import Doc
from expconsole.store import dynamo

KIND = kinds.DYNAMIC_CONFIG
MAX_STORED_BYTES = size.MAX_STORED_BYTES
VALUE_KEYS = ("returnValue", "returnValueJson5", "variants")
_UNSENT = object()


# --- derived fields ---------------------------------------------------------------------------


def status_of(config: StoredDynamicConfig) -> str:
    if lifecycle.entity_is_archived(config):
        return "Archived"
    return "Enabled" if config.isEnabled else "Disabled"


def present(config: StoredDynamicConfig) -> DynamicConfig:
    """The config as the API returns it: stored fields plus the derived ones (the optional fields
    answered only when set, `targetApps` as one string: models.dynamic_configs)."""
    return DynamicConfig.model_validate(
        {
            **entities.public(config.doc()),
            "targetApps": ",".join(config.targetApps),
            "status": status_of(config),
            "permalink": entities.permalink(KIND, config.id),
        }
    )


# --- values and rules ---------------------------------------------------------------------------


def _value(
    sent: DynamicConfigRule | DynamicConfigRulePatch | Variant,
    existing: DynamicConfigRuleOut | VariantOut | None,
    where: str,
) -> tuple[dict[str, Any], str]:
    """A rule's or variant's value from what was sent; else the stored one; else `{}`."""
    p = rules_common.prefix(where)
    resolved = json_values.resolve_object(
        sent.returnValue, sent.returnValueJson5, f"{p}returnValue", f"{p}returnValueJson5"
    )
    if resolved is not None:
        return resolved
    if existing is not None:
        return existing.returnValue, existing.returnValueJson5
    return {}, "{}"


def _variants(
    sent: list[Variant] | None, existing_rule: DynamicConfigRuleOut | None, where: str
) -> list[Doc]:
    """A rule's variants as stored: those sent (ids kept as a rule's are), else the stored ones."""
    stored = (existing_rule.variants if existing_rule else None) or []
    if sent is None:
        return [v.model_dump(mode="json", exclude_unset=True) for v in stored]
    field = f"{rules_common.prefix(where)}variants"
    ids = rules_common.assign_ids((v.id for v in sent), stored, field, "rule", what="variant")
    out: list[Doc] = []
    for index, (variant, (variant_id, _, match)) in enumerate(zip(sent, ids, strict=True)):
        value, text = _value(variant, match, f"{field}[{index}]")
        out.append(
            {
                "id": variant_id,
                "name": variant.name,
                "passPercentage": variant.passPercentage,
                "returnValue": value,
                "returnValueJson5": text,
            }
        )
    return out


def _values(
    sent: DynamicConfigRule | DynamicConfigRulePatch, existing: DynamicConfigRuleOut | None, where: str
) -> Doc:
    """A rule's own keys (services.common.rules.RuleKind.values): its value and variants, from
    what was sent, else as the rule it continues stored them."""
    out: Doc = {}
    out["returnValue"], out["returnValueJson5"] = _value(sent, existing, where)
    variants = _variants(sent.variants, existing, where)
    if variants:
        out["variants"] = variants
    return out


RULES: rules_common.RuleKind[DynamicConfigRule, DynamicConfigRulePatch, DynamicConfigRuleOut] = (
    rules_common.RuleKind(
        owner="dynamic config",
        label="Dynamic config",
        stored=DynamicConfigRuleOut,
        own=VALUE_KEYS,
        values=_values,
    )
)


def _rule_sites(rule: DynamicConfigRuleOut, where: str) -> Iterator[tuple[str, Any]]:
    p = rules_common.prefix(where)
    yield f"{p}returnValue", rule.returnValue
    for index, variant in enumerate(rule.variants or []):
        yield f"{p}variants[{index}].returnValue", variant.returnValue


def _all_sites(config: StoredDynamicConfig, rules: list[DynamicConfigRuleOut]) -> Iterator[tuple[str, Any]]:
    yield "defaultValue", config.defaultValue
    for index, rule in enumerate(rules):
        yield from _rule_sites(rule, f"rules[{index}]")


def _validate(config: StoredDynamicConfig, sites: Iterable[tuple[str, Any]]) -> None:
    """Values against the config's schema, if it has one."""
    if config.schema_ is None:
        return
    validator = json_values.compile_schema(json.loads(config.schema_))
    json_values.validate_all(validator, sites)


def _rule_texts(rules: Iterable[DynamicConfigRule | DynamicConfigRulePatch] | None) -> Iterator[str | None]:
    for rule in rules or []:
        yield rule.returnValueJson5
        for variant in rule.variants or []:
            yield variant.returnValueJson5


def _check_text_budget(texts: Iterable[str | None]) -> None:
    """Refuse, before parsing any of it, more text than a stored config could hold."""
    total = sum(len(text) for text in texts if text)
    if total > MAX_STORED_BYTES:
        raise TooLarge(
            f"The request carries {total} characters of JSON5 and schema text; a dynamic config "
            f"holds at most {MAX_STORED_BYTES} bytes as stored."
        )


def _check_size(config: StoredDynamicConfig) -> None:
    size.check_stored_size(config.doc(), "dynamic config", "Shorten its values, schema or rules.")


def _resolve_schema(schema: Any, schema_json5: Any) -> tuple[str | None, str | None]:
    """The stored `(schema, schemaJson5)` from what an update sent (`_UNSENT` when left out)."""
    sent = {k: v for k, v in (("schema", schema), ("schemaJson5", schema_json5)) if v is not _UNSENT}
    if all(v is None for v in sent.values()):
        return None, None
    if any(v is None for v in sent.values()):
        nulled = next(k for k, v in sent.items() if v is None)
        other = "schemaJson5" if nulled == "schema" else "schema"
        raise Invalid.field(
            nulled, f"cannot be null while {other} sets a schema; send null for both to remove it"
        )
    resolved = json_values.resolve_schema(sent.get("schema"), sent.get("schemaJson5"))
    assert resolved is not None
    return resolved[1], resolved[2]


# --- create, read, list ---------------------------------------------------------------------------


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(
    DynamicConfigCreate.model_fields.keys() & DynamicConfigFields.model_fields.keys()
) - {
    "id",
    "rules",
    "defaultValue",
    "defaultValueJson5",
    "schema_",
    "schemaJson5",
    "owner",
    "creatorID",
    "creatorEmail",
}


def create(body: DynamicConfigCreate) -> DynamicConfig:
    config_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(config_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    _check_text_budget([body.defaultValueJson5, body.schema_, body.schemaJson5, *_rule_texts(body.rules)])
    default = json_values.resolve_object(
        body.defaultValue, body.defaultValueJson5, "defaultValue", "defaultValueJson5"
    ) or ({}, "{}")
    resolved_schema = json_values.resolve_schema(body.schema_, body.schemaJson5)
    schema, schema_json5 = resolved_schema[1:] if resolved_schema else (None, None)
    rules = rules_common.stored_rules(RULES, body.rules, [], "rules")
    rules_common.check_conditions(rules_common.placed(rules, "rules"))
    if body.releasePipelineID:
        entities.require_exists(kinds.RELEASE_PIPELINE, body.releasePipelineID, "releasePipelineID")
    config = StoredDynamicConfig(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=config_id,
        rules=rules,
        defaultValue=default[0],
        defaultValueJson5=default[1],
        schema_=schema,
        schemaJson5=schema_json5,
        checksPerHour=0,
        holdoutIDs=[],
        owner=entities.owner(body.owner),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        state=ArchiveState(archived=False),
    )
    _validate(config, _all_sites(config, rules))
    _check_size(config)
    return present(entities.insert(config))


def get(config_id: str) -> DynamicConfig:
    return present(entities.load(StoredDynamicConfig, config_id))


def _rollout_rate(rules: list[DynamicConfigRuleOut]) -> str | None:
    """The gates' rolloutRate (imported here: only this filter needs the gates service)."""
    from expconsole.services.gates import rules_rollout_rate

    return rules_rollout_rate(rules)


def _matches(config: StoredDynamicConfig, q: DynamicConfigListQuery) -> bool:
    checks = [
        q.includeArchived or not lifecycle.entity_is_archived(config),
        config.isTemplate == bool(q.isTemplate),
        q.idType is None or config.idType in q.idType,
        q.rolloutRate is None or _rollout_rate(config.rules) in q.rolloutRate,
        q.releasePipelineID is None or config.releasePipelineID == q.releasePipelineID,
        q.teamID is None or config.teamID == q.teamID,
        q.targetAppID is None or q.targetAppID in config.targetApps,
        q.creatorName is None or config.creatorName == q.creatorName,
        q.creatorID is None or config.creatorID == q.creatorID,
        q.tags is None or bool(set(q.tags) & set(config.tags)),
    ]
    return all(checks)


def list_configs(q: DynamicConfigListQuery) -> Page[DynamicConfig]:
    stored = [StoredDynamicConfig.read(doc) for doc in dynamo.list_all(KIND)]
    matching = [config for config in stored if _matches(config, q)]
    return page_of(matching, page=q.page, limit=q.limit).map(present)


def versions(config_id: str, page: int, limit: int) -> Page[DynamicConfig]:
    snapshots = dynamo.versions(KIND, config_id)
    if not snapshots:
        entities.load(StoredDynamicConfig, config_id)  # 404 when the config does not exist
    return page_of(snapshots, page=page, limit=limit).map(lambda s: present(StoredDynamicConfig.read(s)))


# --- updates -----------------------------------------------------------------------------------


def _refuse_if_archived(config: StoredDynamicConfig) -> None:
    lifecycle.refuse_if_archived(config, "Dynamic config")


# Update fields stored as sent (the others: `_apply_changes`).
_SET_AS_SENT = frozenset(DynamicConfigPatch.model_fields) - {
    "version",
    "rules",
    "defaultValue",
    "defaultValueJson5",
    "schema_",
    "schemaJson5",
    "owner",
}


def _apply_changes(config: StoredDynamicConfig, body: DynamicConfigPatch | DynamicConfigUpdate) -> None:
    """The fields the client sent, checked and set on the stored config."""
    _refuse_if_archived(config)
    sent = body.model_fields_set
    _check_text_budget([body.defaultValueJson5, body.schema_, body.schemaJson5, *_rule_texts(body.rules)])
    if sent & {"defaultValue", "defaultValueJson5"}:
        resolved = json_values.resolve_object(
            body.defaultValue, body.defaultValueJson5, "defaultValue", "defaultValueJson5"
        )
        assert resolved is not None
        config.defaultValue, config.defaultValueJson5 = resolved
    if sent & {"schema_", "schemaJson5"}:
        config.schema_, config.schemaJson5 = _resolve_schema(
            body.schema_ if "schema_" in sent else _UNSENT,
            body.schemaJson5 if "schemaJson5" in sent else _UNSENT,
        )
    if body.rules is not None:
        rules = rules_common.stored_rules(RULES, body.rules, config.rules, "rules")
        rules_common.check_conditions(rules_common.placed(rules, "rules"))
        config.rules = rules
    if body.releasePipelineID:
        entities.require_exists(kinds.RELEASE_PIPELINE, body.releasePipelineID, "releasePipelineID")
    config.set_sent(body, _SET_AS_SENT)
    if body.owner is not None:
        config.owner = entities.owner(body.owner)
    _validate(config, _all_sites(config, config.rules))
    _check_size(config)


def full_update(config_id: str, body: DynamicConfigUpdate) -> DynamicConfig:
    config = entities.current(StoredDynamicConfig, config_id, body.version)
    _apply_changes(config, body)
    return present(entities.replace(config))


def patch(config_id: str, body: DynamicConfigPatch) -> DynamicConfig:
    config = entities.current(StoredDynamicConfig, config_id, body.version)
    if not partial.asks_change(body):
        return present(config)
    _apply_changes(config, body)
    return present(entities.replace(config))


def _set_enabled(config_id: str, enabled: bool) -> DynamicConfig:
    config = entities.load(StoredDynamicConfig, config_id)
    _refuse_if_archived(config)
    config.isEnabled = enabled
    return present(entities.replace(config))


def enable(config_id: str) -> DynamicConfig:
    return _set_enabled(config_id, True)


def disable(config_id: str) -> DynamicConfig:
    return _set_enabled(config_id, False)


def archive(config_id: str, force: bool, reason: str | None) -> DynamicConfig:
    """Archive (soft). `force` is accepted for the peer's sake: nothing refers to a config."""
    return present(lifecycle.archive(StoredDynamicConfig, config_id, reason, label="Dynamic config"))


def unarchive(config_id: str) -> DynamicConfig:
    return present(lifecycle.unarchive(StoredDynamicConfig, config_id, label="Dynamic config"))


def delete(config_id: str) -> None:
    entities.remove(entities.load(StoredDynamicConfig, config_id))


# --- rule endpoints ----------------------------------------------------------------------------


def get_rules(config_id: str) -> Page[RulesOfConfig]:
    """The peer's shape: one item `{rules}` in a paginated list."""
    rules = entities.load(StoredDynamicConfig, config_id).rules
    return page_of([RulesOfConfig(rules=rules)], page=1, limit=DEFAULT_LIMIT)


def get_rule(config_id: str, rule_id: str) -> DynamicConfigRuleOut:
    config = entities.load(StoredDynamicConfig, config_id)
    return rules_common.rule_in(RULES, config.rules, config_id, rule_id)


def add_rules(config_id: str, rules: list[DynamicConfigRule], one: bool = False) -> DynamicConfig:
    """Append rules; each gets a new id. `one`: the body is a single rule (POST /rule)."""
    rules_common.refuse_ids(rules, one)
    _check_text_budget(_rule_texts(rules))

    def edit(existing: list[DynamicConfigRuleOut]) -> Changed:
        new = rules_common.added(RULES, rules, one)
        return [*existing, *new], [("", new[0])] if one else rules_common.placed(new, "rules")

    return _change_rules(config_id, edit)


def update_rules(config_id: str, updates: list[DynamicConfigRulePatch]) -> DynamicConfig:
    """Change the listed rules, matched by id; rules not listed stay as they are."""
    _check_text_budget(_rule_texts(updates))
    return _change_rules(config_id, lambda existing: rules_common.updated(RULES, existing, updates))


def update_rule(config_id: str, rule_id: str, update: DynamicConfigRulePatch) -> DynamicConfig:
    _check_text_budget(_rule_texts([update]))

    def edit(existing: list[DynamicConfigRuleOut]) -> Changed:
        rules, changed = rules_common.updated_one(RULES, existing, config_id, rule_id, update)
        return rules, [("", changed)]

    return _change_rules(config_id, edit)


def delete_rule(config_id: str, rule_id: str) -> DynamicConfig:
    return _change_rules(
        config_id, lambda existing: (rules_common.without(RULES, existing, config_id, rule_id), [])
    )


# The rules after an edit, and each rule it added or changed with its place in the body.
Changed = tuple[list[DynamicConfigRuleOut], list[tuple[str, DynamicConfigRuleOut]]]


def _change_rules(config_id: str, edit: Callable[[list[DynamicConfigRuleOut]], Changed]) -> DynamicConfig:
    """The config with `edit` applied to its rules; the rules it added or changed are checked
    (conditions, values against the schema) by their place in the body."""

    config = entities.load(StoredDynamicConfig, config_id)
    _refuse_if_archived(config)
    rules, changed = edit(config.rules)
    if changed:
        rules_common.check_conditions(changed)
        _validate(config, (site for where, rule in changed for site in _rule_sites(rule, where)))
    config.rules = rules
    _check_size(config)
    return present(entities.replace(config))
