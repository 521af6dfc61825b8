"""Feature gates: /console/v1/gates. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole import kinds
from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.models.common import ArchiveBody, Message, UnarchiveBody
from expconsole.models.gates import (
    Gate,
    GateCreate,
    GateEnvelope,
    GateListEnvelope,
    GateListQuery,
    GatePatch,
    GateRule,
    GateRulesAdd,
    GateRulesEnvelope,
    GateRulesUpdate,
    GateRuleUpdate,
    GateUpdate,
    ReferencesQuery,
)
from expconsole.models.list_envelopes import AnyListEnvelope
from expconsole.services import gates

router = new_router()
BASE = "/console/v1/gates"
ONE = f"{BASE}/<id>"
TAGS = ["Gates"]


def _updated(gate: Gate) -> GateEnvelope:
    return GateEnvelope(message="Gate updated successfully.", data=gate)


@router.post(BASE, tags=TAGS, summary="Create a gate", responses=responses(201, GateEnvelope, "Created", 409))
def create_gate(body: GateCreate) -> tuple[GateEnvelope, int]:
    return GateEnvelope(message="Gate created successfully.", data=gates.create(body)), 201


@router.get(
    BASE, tags=TAGS, summary="List gates", responses=responses(200, GateListEnvelope, "A page of gates")
)
def list_gates(query: Annotated[GateListQuery, Query()]) -> GateListEnvelope:
    page = gates.list_gates(query)
    return GateListEnvelope.model_validate(paged("Gates listed successfully.", page, router))


@router.get(ONE, tags=TAGS, summary="Read a gate", responses=responses(200, GateEnvelope, "The gate", 404))
def get_gate(id: str) -> GateEnvelope:
    return GateEnvelope(message="Gate read successfully.", data=gates.get(id))


@router.post(
    ONE, tags=TAGS, summary="Fully update a gate", responses=responses(200, GateEnvelope, "Updated", 404, 409)
)
def update_gate(id: str, body: GateUpdate) -> GateEnvelope:
    return _updated(gates.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update a gate",
    responses=responses(200, GateEnvelope, "Updated", 404, 409),
)
def patch_gate(id: str, body: GatePatch) -> GateEnvelope:
    return _updated(gates.patch(id, body))


@router.delete(
    ONE, tags=TAGS, summary="Delete a gate", responses=responses(200, Message, "Deleted", 404, 409)
)
def delete_gate(id: str) -> Message:
    gates.delete(id)
    return Message(message="Gate deleted successfully.")


@router.put(
    f"{ONE}/enable",
    tags=TAGS,
    summary="Enable a gate",
    responses=responses(200, GateEnvelope, "Enabled", 404, 409),
)
def enable_gate(id: str) -> GateEnvelope:
    return _updated(gates.enable(id))


@router.put(
    f"{ONE}/disable",
    tags=TAGS,
    summary="Disable a gate",
    responses=responses(200, GateEnvelope, "Disabled", 404, 409),
)
def disable_gate(id: str) -> GateEnvelope:
    return _updated(gates.disable(id))


@router.put(
    f"{ONE}/launch",
    tags=TAGS,
    summary="Launch a gate (everyone passes)",
    responses=responses(200, GateEnvelope, "Launched", 404, 409),
)
def launch_gate(id: str) -> GateEnvelope:
    return _updated(gates.launch(id))


@router.put(
    f"{ONE}/archive",
    tags=TAGS,
    summary="Archive a gate",
    responses=responses(200, GateEnvelope, "Archived", 404, 409),
)
def archive_gate(id: str, body: ArchiveBody | None = None) -> GateEnvelope:
    body = body or ArchiveBody()
    return _updated(gates.archive(id, body.forceArchive, body.archiveReason))


@router.put(
    f"{ONE}/unarchive",
    tags=TAGS,
    summary="Unarchive a gate",
    responses=responses(200, GateEnvelope, "Unarchived", 404, 409),
)
def unarchive_gate(id: str, body: UnarchiveBody | None = None) -> GateEnvelope:
    return _updated(gates.unarchive(id))


@router.get(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Read a gate's rules",
    responses=responses(200, GateRulesEnvelope, "The rules", 404),
)
def get_rules(id: str) -> GateRulesEnvelope:
    return GateRulesEnvelope(message="Gate rules read successfully.", data={"rules": gates.get_rules(id)})


@router.post(
    f"{ONE}/rule",
    tags=TAGS,
    summary="Add one rule",
    responses=responses(200, GateEnvelope, "Rule added", 404, 409),
)
def add_rule(id: str, body: GateRule) -> GateEnvelope:
    return GateEnvelope(message="Gate rules added successfully.", data=gates.add_rules(id, [body]))


@router.post(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Add several rules",
    responses=responses(200, GateEnvelope, "Rules added", 404, 409),
)
def add_rules(id: str, body: GateRulesAdd) -> GateEnvelope:
    return GateEnvelope(message="Gate rules added successfully.", data=gates.add_rules(id, body.rules))


@router.patch(
    f"{ONE}/rules",
    tags=TAGS,
    summary="Update listed rules by id",
    responses=responses(200, GateEnvelope, "Rules updated", 404, 409),
)
def update_rules(id: str, body: GateRulesUpdate) -> GateEnvelope:
    return _updated(gates.update_rules(id, body.rules))


@router.patch(
    f"{ONE}/rules/<ruleID>",
    tags=TAGS,
    summary="Update one rule",
    responses=responses(200, GateEnvelope, "Rule updated", 404, 409),
)
def update_rule(id: str, ruleID: str, body: GateRuleUpdate) -> GateEnvelope:
    return _updated(gates.update_rule(id, ruleID, body))


@router.delete(
    f"{ONE}/rules/<ruleID>",
    tags=TAGS,
    summary="Delete one rule",
    responses=responses(200, GateEnvelope, "Rule deleted", 404, 409),
)
def delete_rule(id: str, ruleID: str) -> GateEnvelope:
    return _updated(gates.delete_rule(id, ruleID))


@router.get(
    f"{ONE}/versions",
    tags=TAGS,
    summary="List a gate's versions, newest first",
    responses=responses(200, GateListEnvelope, "Versions", 404),
)
def list_versions(id: str, query: Annotated[PageQuery, Query()]) -> GateListEnvelope:
    versions = gates.versions(id, query.page, query.limit)
    return GateListEnvelope.model_validate(paged("Gate versions listed successfully.", versions, router))


def _references(kind: str, id: str, query: ReferencesQuery, message: str) -> AnyListEnvelope:
    page = gates.list_references(kind, id, query.page, query.limit)
    return AnyListEnvelope.model_validate(paged(message, page, router))


@router.get(
    f"{ONE}/gate_references",
    tags=TAGS,
    summary="Gates that reference this gate",
    responses=responses(200, GateListEnvelope, "Referencing gates", 404),
)
def gate_references(id: str, query: Annotated[ReferencesQuery, Query()]) -> GateListEnvelope:
    page = gates.gate_references(id, query.page, query.limit)
    return GateListEnvelope.model_validate(paged("Gates listed successfully.", page, router))


@router.get(
    f"{ONE}/experiment_references",
    tags=TAGS,
    summary="Experiments that reference this gate",
    responses=responses(200, AnyListEnvelope, "Referencing experiments", 404),
)
def experiment_references(id: str, query: Annotated[ReferencesQuery, Query()]) -> AnyListEnvelope:
    return _references(kinds.EXPERIMENT, id, query, "Experiments listed successfully.")


@router.get(
    f"{ONE}/dynamic_config_references",
    tags=TAGS,
    summary="Dynamic configs that reference this gate",
    responses=responses(200, AnyListEnvelope, "Referencing dynamic configs", 404),
)
def dynamic_config_references(id: str, query: Annotated[ReferencesQuery, Query()]) -> AnyListEnvelope:
    return _references(kinds.DYNAMIC_CONFIG, id, query, "Dynamic configs listed successfully.")


app, lambda_handler = build(router, key_kind="console")
