"""Dynamic configs: /console/v1/dynamic_configs. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.models.common import ArchiveBody, Message, UnarchiveBody
from expconsole.models.dynamic_configs import (
    DynamicConfig,
    DynamicConfigCreate,
    DynamicConfigEnvelope,
    DynamicConfigListEnvelope,
    DynamicConfigListQuery,
    DynamicConfigPatch,
    DynamicConfigRule,
    DynamicConfigRuleEnvelope,
    DynamicConfigRulePatch,
    DynamicConfigRulesAdd,
    DynamicConfigRulesEnvelope,
    DynamicConfigRulesUpdate,
    DynamicConfigUpdate,
)
from expconsole.services import dynamic_configs

router = new_router()
BASE = "/console/v1/dynamic_configs"
ONE = f"{BASE}/<id>"
RULE = f"{ONE}/rule/<ruleId>"
TAGS = ["Dynamic configs"]


def _answer(message: str, config: DynamicConfig) -> DynamicConfigEnvelope:
    return DynamicConfigEnvelope(message=message, data=config)


def _updated(config: DynamicConfig) -> DynamicConfigEnvelope:
    return _answer("Dynamic config updated successfully.", config)


def _rules_updated(config: DynamicConfig) -> DynamicConfigEnvelope:
    return _answer("Dynamic Config rules updated successfully.", config)


@router.post(
    BASE,
    tags=TAGS,
    summary="Create a dynamic config",
    responses=responses(201, DynamicConfigEnvelope, "Created", 409),
)
def create_config(body: DynamicConfigCreate) -> tuple[DynamicConfigEnvelope, int]:
    return _answer("Dynamic Config created successfully.", dynamic_configs.create(body)), 201


@router.get(
    BASE,
    tags=TAGS,
    summary="List dynamic configs (templates only with isTemplate=true)",
    responses=responses(200, DynamicConfigListEnvelope, "A page of dynamic configs"),
)
def list_configs(query: Annotated[DynamicConfigListQuery, Query()]) -> DynamicConfigListEnvelope:
    page = dynamic_configs.list_configs(query)
    listed = paged("Dynamic Configs listed successfully.", page, router)
    return DynamicConfigListEnvelope.model_validate(listed)


@router.get(
    ONE,
    tags=TAGS,
    summary="Read a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "The dynamic config", 404),
)
def get_config(id: str) -> DynamicConfigEnvelope:
    return _answer("Dynamic config read successfully.", dynamic_configs.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Fully update a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Updated", 404, 409),
)
def update_config(id: str, body: DynamicConfigUpdate) -> DynamicConfigEnvelope:
    return _updated(dynamic_configs.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Updated", 404, 409),
)
def patch_config(id: str, body: DynamicConfigPatch) -> DynamicConfigEnvelope:
    return _updated(dynamic_configs.patch(id, body))


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a dynamic config and its versions",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_config(id: str) -> Message:
    dynamic_configs.delete(id)
    return Message(message="Dynamic Config deleted successfully.")


@router.put(
    f"{ONE}/enable",
    tags=TAGS,
    summary="Enable a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Enabled", 404, 409),
)
def enable_config(id: str) -> DynamicConfigEnvelope:
    return _updated(dynamic_configs.enable(id))


@router.put(
    f"{ONE}/disable",
    tags=TAGS,
    summary="Disable a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Disabled", 404, 409),
)
def disable_config(id: str) -> DynamicConfigEnvelope:
    return _updated(dynamic_configs.disable(id))


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Archived", 404, 409),
)
def archive_config(id: str, body: ArchiveBody | None = None) -> DynamicConfigEnvelope:
    body = body or ArchiveBody()
    return _updated(dynamic_configs.archive(id, body.forceArchive, body.archiveReason))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive a dynamic config",
    responses=responses(200, DynamicConfigEnvelope, "Unarchived", 404, 409),
)
def unarchive_config(id: str, body: UnarchiveBody | None = None) -> DynamicConfigEnvelope:
    return _updated(dynamic_configs.unarchive(id))


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List a dynamic config's versions, newest first",
    responses=responses(200, DynamicConfigListEnvelope, "Versions", 404),
)
def list_versions(id: str, query: Annotated[PageQuery, Query()]) -> DynamicConfigListEnvelope:
    page = dynamic_configs.versions(id, query.page, query.limit)
    return DynamicConfigListEnvelope.model_validate(
        paged("Dynamic Config versions listed successfully.", page, router)
    )


@router.get(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Read a dynamic config's rules",
    responses=responses(200, DynamicConfigRulesEnvelope, "The rules, as `[{rules}]`", 404),
)
def get_rules(id: str) -> DynamicConfigRulesEnvelope:
    page = dynamic_configs.get_rules(id)
    listed = paged("Dynamic Config rules read successfully.", page, router)
    return DynamicConfigRulesEnvelope.model_validate(listed)


@router.post(
    f"{ONE}/rule",
    tags=TAGS,
    summary="Add one rule",
    responses=responses(200, DynamicConfigEnvelope, "Rule added", 404, 409),
)
def add_rule(id: str, body: DynamicConfigRule) -> DynamicConfigEnvelope:
    config = dynamic_configs.add_rules(id, [body], one=True)
    return _answer("Dynamic Config rules added successfully.", config)


@router.post(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Add several rules",
    responses=responses(200, DynamicConfigEnvelope, "Rules added", 404, 409),
)
def add_rules(id: str, body: DynamicConfigRulesAdd) -> DynamicConfigEnvelope:
    return _answer("Dynamic Config rules added successfully.", dynamic_configs.add_rules(id, body.rules))


@router.patch(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Update listed rules by id",
    responses=responses(200, DynamicConfigEnvelope, "Rules updated", 404, 409),
)
def update_rules(id: str, body: DynamicConfigRulesUpdate) -> DynamicConfigEnvelope:
    return _rules_updated(dynamic_configs.update_rules(id, body.rules))


@router.get(
    RULE,
    tags=TAGS,
    summary="Read one rule",
    responses=responses(200, DynamicConfigRuleEnvelope, "The rule", 404),
)
def get_rule(id: str, ruleId: str) -> DynamicConfigRuleEnvelope:
    rule = dynamic_configs.get_rule(id, ruleId)
    return DynamicConfigRuleEnvelope(message="Dynamic Config rules read successfully.", data=rule)


@router.patch(
    RULE,
    tags=TAGS,
    summary="Update one rule",
    responses=responses(200, DynamicConfigEnvelope, "Rule updated", 404, 409),
)
def update_rule(id: str, ruleId: str, body: DynamicConfigRulePatch) -> DynamicConfigEnvelope:
    return _rules_updated(dynamic_configs.update_rule(id, ruleId, body))


@router.delete(
    RULE,
    tags=TAGS,
    summary="Delete one rule",
    responses=responses(200, DynamicConfigEnvelope, "Rule deleted", 404, 409),
)
def delete_rule(id: str, ruleId: str) -> DynamicConfigEnvelope:
    return _answer("Dynamic Config rule deleted successfully.", dynamic_configs.delete_rule(id, ruleId))


app, lambda_handler = build(router, key_kind="console")
