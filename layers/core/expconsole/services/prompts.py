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
from expconsole.models.prompts import (
    Prompt,
    PromptCreate,
    PromptFields,
    PromptListQuery,
    PromptPatch,
    StoredPrompt,
)
from expconsole.models.stored import ArchiveState
from expconsole.services import entities
from expconsole.services.common import lifecycle
from expconsole.services.common import patch as partial
from expconsole.store import dynamo

KIND = kinds.PROMPT
LABEL = "Prompt"


def present(prompt: StoredPrompt) -> Prompt:
    return Prompt.model_validate(
        {**entities.public(prompt.doc()), "isArchived": lifecycle.entity_is_archived(prompt)}
    )


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(PromptCreate.model_fields.keys() & PromptFields.model_fields.keys()) - {
    "displayName",
    "owner",
    "creatorID",
    "creatorEmail",
}


def create(body: PromptCreate) -> Prompt:
    prompt_id = entities.id_from_name(body.name)
    if len(prompt_id) < 3:
        raise Invalid.field("name", "must have at least 3 characters that are not white space")
    prompt = StoredPrompt(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=prompt_id,
        displayName=body.displayName or body.name,
        idType="userID",
        holdoutIDs=[],
        owner=entities.owner(body.owner),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
        state=ArchiveState(archived=False),
    )
    return present(entities.insert(prompt))


def get(prompt_id: str) -> Prompt:
    return present(entities.load(StoredPrompt, prompt_id))


def list_prompts(q: PromptListQuery) -> Page[Prompt]:
    stored = [StoredPrompt.read(d) for d in dynamo.list_all(KIND)]
    shown = [p for p in stored if q.includeArchived or not lifecycle.entity_is_archived(p)]
    return page_of(shown, page=q.page, limit=q.limit).map(present)


def patch(prompt_id: str, body: PromptPatch) -> Prompt:
    """Apply the fields sent; an empty body changes nothing (no new version: services.common.patch)."""
    prompt = entities.load(StoredPrompt, prompt_id)
    if not partial.asks_change(body):
        return present(prompt)
    lifecycle.refuse_if_archived(prompt, LABEL)
    prompt.set_sent(body, frozenset(PromptPatch.model_fields))
    return present(entities.replace(prompt))


def archive(prompt_id: str, reason: str | None) -> Prompt:
    return present(lifecycle.archive(StoredPrompt, prompt_id, reason, label=LABEL))


def unarchive(prompt_id: str) -> Prompt:
    return present(lifecycle.unarchive(StoredPrompt, prompt_id, label=LABEL))
