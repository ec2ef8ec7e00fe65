"""importItems: what capture sends (a batch of keyed items from one source) and what it wrote."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from mneia.schema.enums import ItemKind, Scope
from mneia.schema.item import Item
from mneia.schema.proposal import Proposal
from mneia.schema.scalars import Duration
from mneia.schema.session import ClientInput, Session


@strawberry.enum(description="Where an import's words come from, which decides the authority they carry.")
class ImportOrigin(Enum):
    TRANSCRIPT = strawberry.enum_value(
        "TRANSCRIPT",
        description="A client's session: what was said there stays unconfirmed, whoever imports it.",
    )
    DOCUMENT = strawberry.enum_value(
        "DOCUMENT",
        description="A file the importer vouches for (an ADR, a CLAUDE.md): a person's import is theirs,"
        " human-confirmed, as if they had typed it; an agent's stays agent-asserted.",
    )


@strawberry.enum(description="What an import did with one key.")
class ImportAction(Enum):
    ASSERTED = strawberry.enum_value("ASSERTED", description="It was written as a new item.")
    SUPERSEDED = strawberry.enum_value(
        "SUPERSEDED", description="It replaced an earlier item (an edited rule, a superseding ADR)."
    )
    PROPOSED = strawberry.enum_value(
        "PROPOSED", description="Its replacement of a human's ruling waits for a human (R7)."
    )
    RETIRED = strawberry.enum_value(
        "RETIRED", description="Imported and retired (a rejected ADR), or removed from its document."
    )
    UNCHANGED = strawberry.enum_value("UNCHANGED", description="Imported before as it is: nothing written.")
    SKIPPED = strawberry.enum_value(
        "SKIPPED",
        description="Not applied; the note says why (the item it would change is no longer"
        " ACTIVE, or is a human's to change).",
    )


@strawberry.input(description="The session a transcript records; found again by client tool and externalId.")
class ImportSessionInput:
    client: ClientInput = strawberry.field(description="The tool whose transcript it is.")
    external_id: str | None = strawberry.field(
        default=None,
        description="The client's own session id; with the client's tool it finds the session again on the"
        " next import.",
    )
    deep_link: str | None = strawberry.field(
        default=None, description="A link or resume command back to the original conversation."
    )
    task: str | None = strawberry.field(default=None, description="What the session set out to do.")
    started_at: datetime | None = strawberry.field(
        default=None, description="When the transcript says the session started."
    )
    ended_at: datetime | None = strawberry.field(default=None, description="The transcript's last time.")


@strawberry.input(description="One keyed item of an import.")
class ImportItemInput:
    key: str = strawberry.field(
        description="The source's own identity for it (a tool-call id, an ADR's path, a rule's text), unique"
        " in the project: importing a key again writes nothing unless its content changed."
    )
    kind: ItemKind = strawberry.field(description="What the item is.")
    statement: str = strawberry.field(description="The claim itself; not empty.")
    details: str | None = strawberry.field(default=None, description="More text behind the statement.")
    basis: str | None = strawberry.field(default=None, description="On what basis it is asserted.")
    confidence: float | None = strawberry.field(default=None, description="The extractor's confidence, 0..1.")
    scope: Scope | None = strawberry.field(
        default=Scope.PROJECT, description="Who may see it (R2). Default: PROJECT."
    )
    valid_from: datetime | None = strawberry.field(
        default=None, description="When it started to be true of the project."
    )
    valid_to: datetime | None = strawberry.field(
        default=None, description="When it stopped being true of the project; not before validFrom."
    )
    decay_after: Duration | None = strawberry.field(
        default=None, description="How long after it was last checked it goes stale. Null: never."
    )
    said_at: datetime | None = strawberry.field(
        default=None, description="When the source said it; not after now."
    )
    suggest_load_bearing: bool | None = strawberry.field(
        default=False, description="True: suggest that it is load-bearing, for a human to settle (R5)."
    )
    supersedes_key: str | None = strawberry.field(
        default=None,
        description="What it replaces: the key of an item imported before or earlier in this batch, or"
        ' "id:" and an item\'s id.',
    )
    supersession_reason: str | None = strawberry.field(
        default=None, description="Why it replaces the item supersedesKey names."
    )
    retired_reason: str | None = strawberry.field(
        default=None, description="Import it RETIRED, for this reason (a rejected or deprecated ADR)."
    )
    redacted: list[str] | None = strawberry.field(
        default=None, description="Kinds of credential the client already removed from its text."
    )


@strawberry.input(description="A batch of keyed items from one source, as mneia import sends it.")
class ImportInput:
    project_id: strawberry.ID = strawberry.field(
        description="The project to import into; you must be a member of it."
    )
    source: str = strawberry.field(description='What was read, as the importer names it (e.g. "CLAUDE.md").')
    origin: ImportOrigin = strawberry.field(
        description="Where the words come from, which decides the authority they carry."
    )
    items: list[ImportItemInput] = strawberry.field(description="At most 500 per request.")
    session: ImportSessionInput | None = strawberry.field(
        default=None, description="The transcript's session: its items are asserted in it."
    )
    document: str | None = strawberry.field(
        default=None,
        description="A namespace of keys (e.g. rules:CLAUDE.md) that items belong to. With complete, items"
        " is the whole document: an earlier item of it that is not in items was edited (paired by place"
        " with a new one, which supersedes it) or removed (retired).",
    )
    complete: bool | None = strawberry.field(
        default=False,
        description="True: items is the whole document, so an earlier item of it not in items was edited or"
        " removed.",
    )
    edit_reason: str | None = strawberry.field(
        default=None, description='Why an edited item is superseded (default: "edited in SOURCE").'
    )
    removal_reason: str | None = strawberry.field(
        default=None, description='Why a removed item is retired (default: "removed from SOURCE").'
    )


@strawberry.type(description="What an import did with one key.")
class ImportWrite:
    key: str = strawberry.field(description="The key, as given.")
    action: ImportAction = strawberry.field(description="What was done with it.")
    item: Item | None = strawberry.field(description="The item written or changed, as you may see it.")
    proposal: Proposal | None = strawberry.field(
        default=None, description="The proposal that waits for a human, when action is PROPOSED."
    )
    note: str | None = strawberry.field(
        default=None, description="Why, when nothing was applied (SKIPPED) or more needs saying."
    )


@strawberry.type(description="What an import wrote, key by key.")
class ImportResult:
    session: Session | None = strawberry.field(
        description="The transcript's session; null when the import had none."
    )
    writes: list[ImportWrite] = strawberry.field(
        description="One per key given, in order, and one per earlier item of a complete document removed."
    )
    written: int = strawberry.field(description="How many keys wrote something.")
    unchanged: int = strawberry.field(
        description="How many keys were imported before as they are, so wrote nothing."
    )
