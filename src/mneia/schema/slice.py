"""A slice: what a task needs from the project's memory, under a token budget (R11).

Types only; ``resolvers.rehydration`` builds them and ``mneia.rehydration``
chooses what they hold.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.enums import InclusionReason, ItemKind, OmissionReason
from mneia.schema.item import Item
from mneia.schema.scalars import Duration
from mneia.schema.supersession import SupersessionNote


@strawberry.input(description="The share of the budget SCORED entries of one kind may use, 0..1.")
class KindQuota:
    kind: ItemKind = strawberry.field(description="The kind the quota is for.")
    max_share: float = strawberry.field(
        description="The share of the budget its SCORED entries may use, 0..1."
    )


@strawberry.input(description="What a slice is for: the project, the task and the token budget.")
class RehydrateInput:
    project_id: strawberry.ID = strawberry.field(description="The project to rehydrate from.")
    task: str = strawberry.field(
        description="The task the slice is for; items are scored by their relevance to it."
    )
    token_budget: int = strawberry.field(description="Tokens (cl100k_base) the slice may use; at least 1.")
    quotas: list[KindQuota] | None = strawberry.field(
        default=None,
        description="Override the team function's default quota of each kind given (see Slice.quotas).",
    )
    as_of: datetime | None = strawberry.field(
        default=None, description="Rehydrate what was believed at this moment."
    )
    recent: Duration | None = strawberry.field(
        default=None,
        description="How far back a supersession counts as recent (default P30D): those are listed in"
        " Slice.supersessions.",
    )


@strawberry.type(description="An item in the slice, why it is there, its score and what its line costs.")
class SliceEntry:
    item: Item = strawberry.field(description="The item.")
    reason: InclusionReason = strawberry.field(
        description="GUARANTEED: an active load-bearing constraint, whatever the budget."
        " RECENT_SUPERSESSION: it replaced an item listed in supersessions."
        " SCORED: taken by score per token within its kind's maxShare."
        " FILL: taken with what the quotas left once every kind had its share: a candidate past its"
        " kind's share, or an item sharing no word with the task (score 0)."
    )
    score: float = strawberry.field(
        description="Relevance x kind weight x authority x freshness, x 0.25 when DISPUTED (README)."
    )
    tokens: int = strawberry.field(
        description="Tokens of the entry's line in Slice.rendered, its newline included."
    )


@strawberry.type(description="A number of items of one kind.")
class KindCount:
    kind: ItemKind = strawberry.field(description="The kind.")
    count: int = strawberry.field(description="How many.")


@strawberry.type(
    description="Candidates of one kind the slice considered and left out for one reason:"
    " BUDGET (it matched the task and did not fit in what was left), QUOTA (it matched, was passed"
    " over while its kind was at its maxShare, and no longer fitted once the quotas lifted; or its"
    " kind's maxShare is 0), NO_MATCH (it shares no word with the task: read to fill the budget the"
    " matches left, and did not fit)."
)
class Omission:
    kind: ItemKind = strawberry.field(description="The kind of the candidates left out.")
    reason: OmissionReason = strawberry.field(description="Why they were left out.")
    count: int = strawberry.field(description="How many were left out.")


@strawberry.type(description="A kind's quota as this slice applied it.")
class KindShare:
    kind: ItemKind = strawberry.field(description="The kind.")
    max_share: float = strawberry.field(
        description="The share of the budget its SCORED entries could use, 0..1."
    )
    weight: float = strawberry.field(description="What the kind's relevance was multiplied by.")


@strawberry.type(description="What a task needs from a project's memory, under a token budget (R11).")
class Slice:
    task: str = strawberry.field(description="The task it was chosen for.")
    token_budget: int = strawberry.field(description="The tokens it could use.")
    tokens_used: int = strawberry.field(description="Tokens of rendered.")
    over_budget: bool = strawberry.field(
        description="Only the guaranteed constraints may push it over: then the slice holds nothing else."
    )
    encoding: str = strawberry.field(description="The tiktoken encoding that counted the tokens.")
    entries: list[SliceEntry] = strawberry.field(
        description="The items chosen, each with why, its score and its tokens."
    )
    supersessions: list[SupersessionNote] = strawberry.field(
        description="Replacements made recently: what was ruled out, by what and why."
    )
    omitted: list[KindCount] = strawberry.field(
        description="Per kind, the candidates (items sharing a word with the task, or recently replacing"
        " one) that were considered and left out, for the budget or the kind's quota (leftOut says which)."
    )
    left_out: list[Omission] = strawberry.field(
        description="Every candidate considered and left out, once, by kind and why; those sharing no"
        " word with the task (NO_MATCH) included. Only the pairs that occur, by kind then reason."
    )
    supersessions_left_out: int = strawberry.field(
        description="Recent supersessions considered and not listed in supersessions: only ever for the"
        " budget, which then could not hold one more."
    )
    rendered: str = strawberry.field(
        description="Ready to paste into an agent's context: grouped by kind, every entry opening with its"
        " authority, disputed ones flagged, then the options ruled out recently with their reasons."
    )
    profile: str = strawberry.field(
        description="The team function's profile that supplied the default weights and quotas."
    )
    quotas: list[KindShare] = strawberry.field(
        description="Each kind's quota and weight as this slice applied them."
    )
    as_of: datetime | None = strawberry.field(description="The moment it was rehydrated at; null: now.")
