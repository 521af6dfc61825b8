"""Prompts (AI configs): create, read, list, partial update, archive and unarchive.

- The id derives from the name (lower case, spaces to underscores), as a gate's does when
  none is sent; a second prompt with the same id is a 409.
- `displayName` defaults to the name; `idType` is `userID`; `team`/`teamID` are null when
  unset (the peer types them nullable); `holdoutIDs` starts empty.
- Every change (patch, archive, unarchive) bumps `version` and `lastModifiedTime`.
- Archive is soft: archived prompts leave the list unless `includeArchived=true`, answer
  reads, and refuse a PATCH (400) until unarchived. `isArchived` says which.
"""

from __future__ import annotations

from expconsole import kinds
from expconsole.errors import Invalid
from expconsole.models.pagination import Page, page_of
from expconsole.models.prompts import PromptCreate, PromptListQuery, PromptPatch
from expconsole.services import entities
from expconsole.services.common import lifecycle
from expconsole.services.common import patch as partial
from expconsole.services.entities import Doc
from expconsole.store import dynamo

KIND = kinds.PROMPT
LABEL = "Prompt"


def present(doc: Doc) -> Doc:
    out = entities.public(doc)
    out["isArchived"] = lifecycle.is_archived(doc)
    return out


def create(body: PromptCreate) -> Doc:
    prompt_id = entities.id_from_name(body.name)
    if len(prompt_id) < 3:
        raise Invalid.field("name", "must have at least 3 characters that are not white space")
    data = body.model_dump(mode="json")
    doc: Doc = {
        "id": prompt_id,
        "name": body.name,
        "displayName": body.displayName or body.name,
        "description": body.description,
        "idType": "userID",
        "tags": body.tags,
        "targetApps": body.targetApps,
        "holdoutIDs": [],
        "team": body.team,
        "teamID": body.teamID,
        "owner": entities.owner_for(data["owner"]),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        "_state": {"archived": False},
    }
    return present(entities.insert(KIND, prompt_id, doc))


def get(prompt_id: str) -> Doc:
    return present(entities.load(KIND, prompt_id))


def list_prompts(q: PromptListQuery) -> Page[Doc]:
    shown = [present(d) for d in dynamo.list_all(KIND) if q.includeArchived or not lifecycle.is_archived(d)]
    return page_of(shown, page=q.page, limit=q.limit)


def patch(prompt_id: str, body: PromptPatch) -> Doc:
    """Apply the fields sent; an empty body changes nothing (no new version: services.common.patch)."""
    stored = partial.unchanged(KIND, prompt_id, partial.changes_of(body.changes()), None)
    if stored is not None:
        return present(stored)

    def change(doc: Doc) -> None:
        lifecycle.refuse_if_archived(doc, LABEL)
        doc.update(body.changes())

    return present(entities.update(KIND, prompt_id, change))


def archive(prompt_id: str, reason: str | None) -> Doc:
    return present(lifecycle.archive(KIND, prompt_id, reason, label=LABEL))


def unarchive(prompt_id: str) -> Doc:
    return present(lifecycle.unarchive(KIND, prompt_id, label=LABEL))
