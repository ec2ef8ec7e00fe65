"""importItems: a batch of keyed items from one source (a transcript, ADRs, a rules file), idempotent.

Every item goes through the same writes as the API's own (``write_assertion``,
``write_supersession``, retirement's rules), so an import can do nothing a
caller could not do by hand, with two differences that are the import's rules:

- Its text is redacted of credentials first (``mneia.secrets``), before the
  digest that decides whether it changed: an import is a write no person
  typed into Mneia, and a secret must not reach memory or the ledger.
- Words from a TRANSCRIPT are not vouched for by whoever imports them: they
  stay unconfirmed, and their replacement of a human's ruling waits for a
  human (``mneia.authority.Source``).

The ledger (``storage.imports``) keeps, per key, a digest of what the key
said and what it wrote. A key seen with the same digest writes nothing; with
another, its new content supersedes what it wrote, for ``editReason``. With
``complete``, ``items`` is a whole document (a rules file): its earlier keys
that are not given any more are paired by place with the new keys given
(``paired``), each pair an edit, and the rest are retired as removed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

import strawberry

from mneia.authority import Source, require_changeable, require_status_change
from mneia.errors import BadInput, HumanRequired, NotFound
from mneia.resolvers.assertion import Assertion, write_assertion, write_assertions
from mneia.resolvers.inputs import deep_link, optional_text, parse_id, redacted_kinds, required_text
from mneia.resolvers.item import changed
from mneia.resolvers.project import project_to_work_in
from mneia.resolvers.request.context import Info
from mneia.resolvers.supersession import Replaced, write_supersession
from mneia.schema.imports import (
    ImportAction,
    ImportInput,
    ImportItemInput,
    ImportOrigin,
    ImportResult,
    ImportSessionInput,
    ImportWrite,
)
from mneia.schema.item import AssertItemInput, Item
from mneia.schema.proposal import Proposal
from mneia.schema.session import Session
from mneia.schema.supersession import SupersedeInput
from mneia.secrets import redact
from mneia.storage import imports, item, session
from mneia.storage.database import Tx
from mneia.storage.imports import Entry
from mneia.storage.item import ItemRecord
from mneia.storage.proposal import ProposalRecord
from mneia.storage.session import SessionRecord
from mneia.vocabulary import ItemStatus

BATCH_LIMIT = 500
"""Items per request: enough that 10,000 ADRs are 20 requests, few enough for one transaction."""

ID_PREFIX = "id:"
REMOVED = "removed:"
"""Marks the digest of a key retired because its document no longer holds it."""


def paired(old: Sequence[str], new: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """The earlier keys of a document against its keys now, in order: (old, new) for an edit in
    place, (old, None) for a removal, (None, new) for an addition; keys in both are left out.

    A rule edited in place sits between the same unchanged neighbours as
    before, so the differ's "replace" blocks are edits, paired in order; what
    a block holds beyond the shorter side was removed or added.
    """
    pairs: list[tuple[str | None, str | None]] = []
    matcher = difflib.SequenceMatcher(a=list(old), b=list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        before, after = list(old[i1:i2]), list(new[j1:j2])
        common = min(len(before), len(after)) if tag == "replace" else 0
        pairs.extend(zip(before[:common], after[:common], strict=True))
        pairs.extend((key, None) for key in before[common:])
        pairs.extend((None, key) for key in after[common:])
    return pairs


@dataclass(slots=True)
class Cleaned:
    """One item as it will be written: its text redacted, and the digest of what it says."""

    given: ImportItemInput
    field: str
    statement: str
    details: str | None
    basis: str | None
    reason: str | None
    retired: str | None
    redacted: tuple[str, ...]
    digest: str = ""

    def __post_init__(self) -> None:
        """What the item says. The source's circumstances are left out: when it said it (saidAt),
        why it replaced another (the reason), its suggestion, and validTo, which an ADR gains when
        a successor appears (that is a supersession, not an edit of the older ADR)."""
        content = {
            "kind": self.given.kind.value,
            "statement": self.statement,
            "details": self.details,
            "basis": self.basis,
            "scope": self.given.scope.value if self.given.scope else None,
            "validFrom": self.given.valid_from.isoformat() if self.given.valid_from else None,
            "confidence": self.given.confidence,
            "decayAfter": self.given.decay_after.total_seconds() if self.given.decay_after else None,
            "supersedes": self.given.supersedes_key,
            "retired": self.retired,
        }
        canonical = json.dumps(content, sort_keys=True, ensure_ascii=False)
        self.digest = hashlib.sha256(canonical.encode()).hexdigest()


def _clean(given: ImportItemInput, field: str, now: datetime) -> Cleaned:
    kinds = list(redacted_kinds(given.redacted, f"{field}.redacted"))

    def cleaned(value: str | None) -> str | None:
        if value is None:
            return None
        result = redact(value)
        kinds.extend(result.kinds)
        return result.text

    if given.said_at is not None and given.said_at > now:
        raise BadInput(f"{field}.saidAt", "is in the future: a source cannot have said it yet")
    statement = cleaned(required_text(given.statement, f"{field}.statement"))
    assert statement is not None
    return Cleaned(
        given=given,
        field=field,
        statement=statement,
        details=cleaned(given.details),
        basis=cleaned(given.basis),
        reason=cleaned(optional_text(given.supersession_reason, f"{field}.supersessionReason")),
        retired=cleaned(optional_text(given.retired_reason, f"{field}.retiredReason")),
        redacted=tuple(dict.fromkeys(kinds)),
    )


def _checked_keys(items: Sequence[ImportItemInput]) -> None:
    if len(items) > BATCH_LIMIT:
        raise BadInput("input.items", f"at most {BATCH_LIMIT} per request, not {len(items)}")
    seen: set[str] = set()
    for index, given in enumerate(items):
        key = required_text(given.key, f"input.items[{index}].key", 500, one_line=True)
        if key in seen:
            raise BadInput(f"input.items[{index}].key", f"{key!r} is given twice")
        seen.add(key)


@dataclass
class Batch:
    """One request's work: the ledger as found, what this request wrote, and the answer's rows."""

    project_id: uuid.UUID
    source: str
    origin: ImportOrigin
    document: str | None
    found: dict[str, Entry]
    session: SessionRecord | None = None
    wrote: dict[str, Entry] = field(default_factory=dict)
    writes: list[ImportWrite] = field(default_factory=list)

    records: dict[uuid.UUID, ItemRecord] = field(default_factory=dict)
    """The items the ledger's entries found name, as the caller sees them (read once)."""

    def entry(self, key: str) -> Entry | None:
        return self.wrote.get(key) or self.found.get(key)

    def record_of(self, entry: Entry) -> ItemRecord | None:
        return self.records.get(entry.item_id) if entry.item_id else None


async def _session(info: Info, batch: Batch, given: ImportSessionInput) -> SessionRecord:
    """The caller's open session for this transcript, or a new one: a transcript that grew after
    its session ended (resumed in the client) is a new run, with the same externalId."""
    tx = info.context.tx
    tool = optional_text(given.client.tool, "input.session.client.tool", 200, one_line=True)
    external_id = optional_text(given.external_id, "input.session.externalId", 500, one_line=True)
    if external_id is not None:
        found, _ = await session.page(
            tx,
            batch.project_id,
            external_id=external_id,
            tool=tool,
            actor_id=info.context.actor.id,
            first=1,
            after=None,
        )
        if found and found[0].ended_at is None:
            if given.ended_at is None:
                return found[0]
            await session.transcript_grew(tx, found[0].id, given.ended_at)
            grown = await session.get(tx, found[0].id)
            assert grown is not None
            return grown
    return await session.start(
        tx,
        batch.project_id,
        task=optional_text(given.task, "input.session.task", 2_000),
        tool=tool,
        version=optional_text(given.client.version, "input.session.client.version", 200, one_line=True),
        external_id=external_id,
        deep_link=deep_link(given.deep_link, "input.session.deepLink"),
        transcript_started_at=given.started_at,
        transcript_ended_at=given.ended_at,
    )


def _assertion(batch: Batch, one: Cleaned) -> AssertItemInput:
    given = one.given
    return AssertItemInput(
        project_id=strawberry.ID(str(batch.project_id)),
        kind=given.kind,
        statement=one.statement,
        details=one.details,
        basis=one.basis,
        session_id=strawberry.ID(str(batch.session.id)) if batch.session else None,
        confidence=given.confidence,
        scope=given.scope,
        valid_from=given.valid_from,
        valid_to=given.valid_to,
        decay_after=given.decay_after,
        suggest_load_bearing=given.suggest_load_bearing,
    )


async def _target(info: Info, batch: Batch, wanted: str, field: str) -> ItemRecord:
    """What ``supersedesKey`` names: an id, or the item a key imported before or earlier in the
    batch wrote (never followed along its chain: what replaced it since is somebody else's)."""
    tx = info.context.tx
    if wanted.startswith(ID_PREFIX):
        target = await item.get(tx, parse_id(wanted[len(ID_PREFIX) :], field))
        if target is None:
            raise NotFound("item", wanted[len(ID_PREFIX) :])
        return target
    entry = batch.entry(wanted)
    if entry is None or entry.item_id is None:
        raise BadInput(field, f"no item was imported with the key {wanted!r} in this project")
    target = await item.get(tx, entry.item_id)
    if target is None:
        raise NotFound("item", entry.item_id)
    return target


def _write(
    key: str,
    action: ImportAction,
    info: Info,
    record: ItemRecord | None = None,
    pending: ProposalRecord | None = None,
    note: str | None = None,
) -> ImportWrite:
    view = info.context.view()
    return ImportWrite(
        key=key,
        action=action,
        item=Item.of(record, view) if record else None,
        proposal=Proposal.of(pending, view) if pending else None,
        note=note,
    )


async def _replace(
    info: Info, batch: Batch, one: Cleaned, target: ItemRecord, reason: str, source: Source
) -> tuple[ImportAction, ItemRecord | None, ProposalRecord | None, str | None]:
    if target.status != ItemStatus.ACTIVE:
        head = await item.head(info.context.tx, target.id)
        why = f"the item it replaces, {target.id}, is {target.status} (the chain's head is {head.id})"
        return ImportAction.SKIPPED, None, None, why
    change = SupersedeInput(
        target_id=strawberry.ID(str(target.id)), replacement=_assertion(batch, one), reason=reason
    )
    done = await write_supersession(info, change, one.field, source)
    if isinstance(done, Replaced):
        return ImportAction.SUPERSEDED, done.replacement, None, None
    return ImportAction.PROPOSED, None, done, None


async def _retire(info: Info, record: ItemRecord, reason: str) -> tuple[ImportAction, ItemRecord, str | None]:
    try:
        require_changeable(record, "retire")
        require_status_change(info.context.actor, record, "retire")
    except HumanRequired:
        return ImportAction.SKIPPED, record, "a human confirmed it: only a human retires it"
    except Exception as refused:  # Conflict: already SUPERSEDED or RETIRED
        return ImportAction.SKIPPED, record, str(refused)
    return (
        ImportAction.RETIRED,
        changed(await item.retire(info.context.tx, record.id, reason), "retire"),
        None,
    )


def _earlier(batch: Batch, one: Cleaned, edited: Entry | None) -> tuple[Entry | None, Entry | None]:
    """What the key wrote before (``known``), and the entry an edit of it replaces (``earlier``)."""
    known = batch.entry(one.given.key)
    earlier = edited if known is None or known.digest.startswith(REMOVED) else known
    return known, earlier


def _unchanged(known: Entry | None, one: Cleaned) -> bool:
    return known is not None and known.digest == one.digest


def _asserted_anew(batch: Batch, one: Cleaned, edited: Entry | None) -> bool:
    """Whether the item is a new assertion that replaces nothing: those are written in batches."""
    known, earlier = _earlier(batch, one, edited)
    if _unchanged(known, one) or one.given.supersedes_key is not None:
        return False
    return earlier is None or earlier.item_id is None


def _source(batch: Batch, one: Cleaned) -> Source:
    return Source(
        vouched=batch.origin == ImportOrigin.DOCUMENT, said_at=one.given.said_at, redacted=one.redacted
    )


async def _one(
    info: Info, batch: Batch, one: Cleaned, position: int, edited: Entry | None, edit_reason: str
) -> None:
    """Write one item that is not a new assertion: unchanged, or an edit of what its key (or the
    key it is paired with) wrote, or a replacement of what ``supersedesKey`` names."""
    given = one.given
    source = _source(batch, one)
    known, earlier = _earlier(batch, one, edited)
    if _unchanged(known, one):
        assert known is not None
        batch.writes.append(_write(given.key, ImportAction.UNCHANGED, info, batch.record_of(known)))
        if known.position != position and batch.document:
            batch.wrote[given.key] = Entry(
                given.key, batch.document, position, known.digest, known.item_id, known.proposal_id
            )
        return
    record: ItemRecord | None
    pending: ProposalRecord | None = None
    note: str | None = None
    if earlier is not None and earlier.item_id is not None and given.supersedes_key is None:
        target = await _target(info, batch, f"{ID_PREFIX}{earlier.item_id}", f"{one.field}.key")
        action, record, pending, note = await _replace(info, batch, one, target, edit_reason, source)
        if action == ImportAction.SKIPPED:
            record, note = batch.record_of(earlier), f"the edit was not applied: {note}"
    else:
        assert given.supersedes_key is not None, "a new assertion is written in a batch (_asserted)"
        target = await _target(info, batch, given.supersedes_key, f"{one.field}.supersedesKey")
        reason = one.reason or edit_reason
        action, record, pending, note = await _replace(info, batch, one, target, reason, source)
        if action == ImportAction.SKIPPED and earlier is None:
            # What the source decided is memory all the same: asserted, outside the chain.
            record = await write_assertion(info, _assertion(batch, one), one.field, source)
            action, note = ImportAction.ASSERTED, f"asserted without replacing anything: {note}"
    await _settled(info, batch, one, position, edited, (action, record, pending, note))


async def _asserted(info: Info, batch: Batch, run: Sequence[tuple[Cleaned, int, Entry | None]]) -> None:
    """Write a run of consecutive new assertions in one batch (resolvers.assertion), then settle
    each in order: the answer's rows and the ledger come out as if written one by one."""
    written = await write_assertions(
        info,
        [Assertion(_assertion(batch, one), one.field, _source(batch, one)) for one, _, _ in run],
    )
    for (one, position, edited), record in zip(run, written, strict=True):
        await _settled(info, batch, one, position, edited, (ImportAction.ASSERTED, record, None, None))


async def _settled(
    info: Info,
    batch: Batch,
    one: Cleaned,
    position: int,
    edited: Entry | None,
    done: tuple[ImportAction, ItemRecord | None, ProposalRecord | None, str | None],
) -> None:
    """What follows an item's write: its retirement if the source retired it, its row in the
    answer, and its ledger entry."""
    given = one.given
    known, earlier = _earlier(batch, one, edited)
    action, record, pending, note = done
    if one.retired is not None and record is not None and action != ImportAction.SKIPPED:
        action, record, note = await _retire(info, record, one.retired)
    batch.writes.append(_write(given.key, action, info, record, pending, note))
    if action == ImportAction.SKIPPED and earlier is not None:
        return  # the ledger keeps what the key wrote; a later import tries again
    written_id = record.id if record is not None else None
    if written_id is None and pending is None:
        return
    if edited is not None and known is None:
        # The key it replaces leaves the document: its place is this key's now.
        batch.wrote[edited.key] = Entry(
            edited.key, None, edited.position, edited.digest, edited.item_id, edited.proposal_id
        )
    batch.wrote[given.key] = Entry(
        given.key, batch.document, position, one.digest, written_id, pending.id if pending else None
    )


async def import_items(
    info: Info,
    input: Annotated[ImportInput, strawberry.argument(description="The batch to import.")],
) -> ImportResult:
    tx: Tx = info.context.tx
    place = await project_to_work_in(tx, input.project_id, "input.projectId")
    source_name = required_text(input.source, "input.source", 500, one_line=True)
    document = optional_text(input.document, "input.document", 500, one_line=True)
    if input.complete and document is None:
        raise BadInput("input.complete", "needs input.document: the namespace the items complete")
    _checked_keys(input.items)
    # The database's clock, which said_at is checked against (items_said_before_recorded).
    now = await imports.recorded_at(tx)
    cleaned = [_clean(given, f"input.items[{index}]", now) for index, given in enumerate(input.items)]
    edit_reason = optional_text(input.edit_reason, "input.editReason") or f"edited in {source_name}"
    removal_reason = (
        optional_text(input.removal_reason, "input.removalReason") or f"removed from {source_name}"
    )

    batch = Batch(place.project.id, source_name, input.origin, document, {})
    earlier_document: list[Entry] = []
    if input.complete and document is not None:
        earlier_document = [
            entry
            for entry in await imports.of_document(tx, batch.project_id, document)
            if entry.item_id is not None
        ]
    keys = [one.given.key for one in cleaned]
    targets = [
        wanted
        for one in cleaned
        if (wanted := one.given.supersedes_key) is not None and not wanted.startswith(ID_PREFIX)
    ]
    batch.found = await imports.by_keys(tx, batch.project_id, list(dict.fromkeys(keys + targets)))
    batch.found.update({entry.key: entry for entry in earlier_document})
    named = [entry.item_id for entry in batch.found.values() if entry.item_id is not None]
    batch.records = await item.by_ids(tx, named) if named else {}

    edits: dict[str, Entry] = {}
    removed: list[Entry] = []
    if input.complete:
        earlier_keys = [entry.key for entry in earlier_document]
        by_key = {entry.key: entry for entry in earlier_document}
        for old, new in paired(earlier_keys, keys):
            if old is not None and new is not None and new not in batch.found:
                edits[new] = by_key[old]
            elif old is not None and (new is None or new in batch.found):
                removed.append(by_key[old])

    changes = [
        one
        for one in cleaned
        if (known := batch.found.get(one.given.key)) is None or known.digest != one.digest
    ]
    if input.session is not None and (changes or removed):
        batch.session = await _session(info, batch, input.session)

    run: list[tuple[Cleaned, int, Entry | None]] = []
    for position, one in enumerate(cleaned):
        edited = edits.get(one.given.key)
        if _asserted_anew(batch, one, edited):
            run.append((one, position, edited))
            continue
        if run:
            await _asserted(info, batch, run)
            run = []
        await _one(info, batch, one, position, edited, edit_reason)
    if run:
        await _asserted(info, batch, run)
    for entry in removed:
        assert entry.item_id is not None
        record = await item.get(tx, entry.item_id)
        if record is None:
            continue
        action, done, note = await _retire(info, record, removal_reason)
        batch.writes.append(_write(entry.key, action, info, done, None, note))
        if action == ImportAction.RETIRED:
            # Out of the document; given again later, the key is asserted anew.
            batch.wrote[entry.key] = Entry(
                entry.key, None, entry.position, REMOVED + entry.digest, done.id, None
            )

    await imports.record(tx, batch.project_id, list(batch.wrote.values()))
    if batch.session is None and input.session is not None and input.session.external_id:
        found, _ = await session.page(
            tx,
            batch.project_id,
            external_id=input.session.external_id,
            first=1,
            after=None,
            actor_id=info.context.actor.id,
        )
        batch.session = found[0] if found else None
    unchanged = sum(1 for write in batch.writes if write.action == ImportAction.UNCHANGED)
    written = sum(
        1 for write in batch.writes if write.action not in (ImportAction.UNCHANGED, ImportAction.SKIPPED)
    )
    return ImportResult(
        session=Session.of(batch.session) if batch.session else None,
        writes=batch.writes,
        written=written,
        unchanged=unchanged,
    )
