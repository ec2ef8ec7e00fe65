"""rehydrate: the slice of a project's memory a stated task needs, under a token budget (R11).

Anyone who sees the project may ask; the slice holds only what the caller
could read with ``item(id:)`` (every candidate is read under the caller's
row-level security). The project's team function supplies the default kind
weights and quotas (rehydration.profile); the call's ``quotas`` override
them kind by kind. ``asOf`` rehydrates what was believed then: the slice is
read in that moment's view, like ``items(asOf:)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated

import strawberry

from mneia.errors import BadInput, NotFound
from mneia.rehydration import profile, slice, tokens
from mneia.rehydration.packing import Packed
from mneia.resolvers.inputs import parse_id, required_text
from mneia.resolvers.reading import View
from mneia.resolvers.request.context import Info
from mneia.schema.enums import InclusionReason, OmissionReason
from mneia.schema.item import Item
from mneia.schema.slice import (
    KindCount,
    KindQuota,
    KindShare,
    Omission,
    RehydrateInput,
    Slice,
    SliceEntry,
)
from mneia.schema.supersession import SupersessionNote
from mneia.storage.project import ProjectRecord
from mneia.vocabulary import ItemKind
from mneia.vocabulary import OmissionReason as Why

KINDS = list(ItemKind)
REASONS = list(Why)


def overrides(quotas: list[KindQuota] | None) -> dict[ItemKind, float]:
    """The call's quotas by kind: each share within 0..1, each kind once."""
    chosen: dict[ItemKind, float] = {}
    for index, quota in enumerate(quotas or []):
        if not 0.0 <= quota.max_share <= 1.0:
            raise BadInput(f"input.quotas[{index}].maxShare", "must be between 0 and 1")
        kind = ItemKind(quota.kind)
        if kind in chosen:
            raise BadInput(f"input.quotas[{index}].kind", f"{kind} is given twice")
        chosen[kind] = quota.max_share
    return chosen


async def rehydrate(
    info: Info,
    input: Annotated[
        RehydrateInput,
        strawberry.argument(description="The project, the task, the token budget and any quotas."),
    ],
) -> Slice:
    """The slice for a task: every active load-bearing constraint you can see, what was ruled out
    recently, then the most valuable items per token within the kinds' quotas."""
    project_key = parse_id(input.project_id, "input.projectId")
    task = required_text(input.task, "input.task")
    budget = token_budget(input.token_budget)
    chosen = overrides(input.quotas)
    await visible_project(info, project_key, input.project_id)
    recent = input.recent if input.recent is not None else slice.RECENT
    return await slice_for(info, project_key, task, budget, chosen, recent, input.as_of)


def token_budget(given: int, field: str = "input.tokenBudget") -> int:
    if given < 1:
        raise BadInput(field, "must be at least 1")
    return given


async def visible_project(info: Info, project_key: uuid.UUID, given: object) -> ProjectRecord:
    found: ProjectRecord | None = await info.context.loaders.project.load(project_key)
    if found is None:
        raise NotFound("project", given)
    return found


async def slice_for(
    info: Info,
    project_key: uuid.UUID,
    task: str,
    budget: int,
    chosen: Mapping[ItemKind, float] | None = None,
    recent: timedelta = slice.RECENT,
    as_of: datetime | None = None,
    shown: frozenset[uuid.UUID] = frozenset(),
) -> Slice:
    """The slice of a visible project for ``task`` under ``budget`` tokens (``rehydrate``, and the
    slice of ``resume`` with what its handoff left of the budget, which may be 0, less the items
    the handoff ``shown`` already: slice.Ask)."""
    context = info.context
    found = await visible_project(info, project_key, project_key)
    team = await context.loaders.team.load(found.team_id) if found.team_id is not None else None
    fitting = profile.profile_for(team.function if team is not None else None)
    given = chosen or {}
    quotas = {kind: given.get(kind, fitting.quotas[kind]) for kind in ItemKind}
    ask = slice.Ask(
        project_id=project_key,
        task=task,
        budget=budget,
        quotas=quotas,
        weights=fitting.weights,
        recent=recent,
        as_of=as_of,
        shown=shown,
    )
    view = context.view(as_of)
    packed = await slice.assemble(context.tx, ask, view)
    return _answer(packed, task, ask, fitting, view)


def _answer(packed: Packed, task: str, ask: slice.Ask, fitting: profile.Profile, view: View) -> Slice:
    return Slice(
        task=task,
        token_budget=ask.budget,
        tokens_used=packed.tokens_used,
        over_budget=packed.over_budget,
        encoding=tokens.ENCODING,
        entries=[
            SliceEntry(
                item=Item.of(entry.piece.record, view),
                reason=InclusionReason(entry.reason),
                score=entry.piece.score,
                tokens=entry.piece.tokens,
            )
            for entry in packed.entries
        ],
        supersessions=[
            SupersessionNote(
                previous=Item.of(note.previous, view),
                replacement=Item.of(note.replacement, view),
                reason=note.reason,
                at=note.at,
            )
            for note in packed.notes
        ],
        omitted=[KindCount(kind=kind, count=packed.omitted[kind]) for kind in ItemKind],
        left_out=[
            Omission(kind=kind, reason=OmissionReason(why), count=count)
            for (kind, why), count in sorted(
                packed.left_out.items(), key=lambda pair: (KINDS.index(pair[0][0]), REASONS.index(pair[0][1]))
            )
        ],
        supersessions_left_out=packed.notes_left_out,
        rendered=packed.rendered,
        profile=fitting.name,
        quotas=[
            KindShare(kind=kind, max_share=ask.quotas[kind], weight=ask.weights.get(kind, 1.0))
            for kind in ItemKind
        ],
        as_of=ask.as_of,
    )
