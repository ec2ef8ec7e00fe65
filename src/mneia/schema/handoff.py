"""Handoff and Resumption: the artifact left when work stops, and what resuming reads (R12).

Types only; ``resolvers.handoff`` builds them, each for the one reader who
asked: everything a handoff shows is read under that reader's row-level
security, so two readers of one handoff may see different lists and text.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.dispute import Dispute
from mneia.schema.item import AssertItemInput, Item
from mneia.schema.page import PageInfo
from mneia.schema.project import Project
from mneia.schema.proposal import Proposal
from mneia.schema.session import Session
from mneia.schema.slice import Slice
from mneia.schema.supersession import SupersedeInput, SupersessionNote


@strawberry.input(
    description="Where the work stopped: the session's items are written as assertItem writes them,"
    " its replacements as supersedeItem makes them, then the session ends and the handoff is stored."
)
class CheckpointInput:
    session_id: strawberry.ID = strawberry.field(
        description="The session to end; an ended session is CONFLICT, except for a retry with the same"
        " idempotencyKey."
    )
    summary: str = strawberry.field(
        description="What was being done and where it stopped; at most 4,000 characters."
    )
    next_steps: list[str] | None = strawberry.field(default=None, description="What to do next, in order.")
    open_questions: list[str] | None = strawberry.field(default=None, description="What is still unanswered.")
    items: list[AssertItemInput] | None = strawberry.field(
        default=None,
        description="Asserted as assertItem would, tied to the session (sessionId may be omitted; any other"
        " session is refused).",
    )
    supersessions: list[SupersedeInput] | None = strawberry.field(
        default=None,
        description="Replacements, made as supersedeItem would (after the items), tied to the session: an"
        " agent's replacement of a human ruling becomes a pending proposal.",
    )
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="A retry with the same key and the same input returns the same Handoff and writes"
        " nothing; the same key with another input is CONFLICT. Keys are per actor.",
    )
    draft: bool | None = strawberry.field(
        default=False,
        description="The summary was written by the client's model (a compact summary kept by a hook),"
        " not by whoever checkpoints: the handoff says so wherever it is rendered.",
    )


@strawberry.type(
    description="What a session left for whoever resumes the work. It keeps references: each reader sees"
    " the items, proposals and disputes it names that the reader may see, as they are now."
)
class Handoff:
    id: strawberry.ID = strawberry.field(description="The handoff's id.")
    session: Session = strawberry.field(description="The session it ended.")
    project: Project = strawberry.field(description="The project of that session.")
    created_by: Actor = strawberry.field(description="The actor who made the checkpoint.")
    created_at: datetime = strawberry.field(description="When the checkpoint was made.")
    summary: str = strawberry.field(description="What was being done and where it stopped.")
    next_steps: list[str] = strawberry.field(
        description="What to do next, in order, as the checkpoint listed it."
    )
    open_questions: list[str] = strawberry.field(description="What was still unanswered at the checkpoint.")
    items_asserted: list[Item] = strawberry.field(
        description="The items asserted in the session (the checkpoint's and earlier ones), oldest first."
    )
    supersessions: list[SupersessionNote] = strawberry.field(
        description="The replacements made in the session: what was ruled out, why, and by what."
    )
    pending_confirmations: list[Proposal] = strawberry.field(
        description="The project's proposals pending at the checkpoint (the newest 20), each with its status"
        " now; proposals(projectId) lists them all."
    )
    disputes: list[Dispute] = strawberry.field(
        description="The project's disputes open at the checkpoint (the newest 20), each with its status now;"
        " disputes(projectId) lists them all."
    )
    rendered: str = strawberry.field(
        description="Compact Markdown an agent reads first on resume: the task, where it stopped, next"
        " steps, open questions, new items with their authority, what was ruled out and why, what awaits"
        " a human."
    )
    tokens: int = strawberry.field(description="Tokens of rendered, counted with encoding.")
    encoding: str = strawberry.field(description="The tiktoken encoding that counted the tokens.")
    idempotency_key: str | None = strawberry.field(
        description="The key the checkpoint was made with; null when it had none."
    )
    draft: bool = strawberry.field(
        description="The summary was written by the client's model at compaction (agent-asserted), not in"
        " a checkpoint call."
    )
    shown: strawberry.Private[frozenset[uuid.UUID]]
    """The items whose lines ``rendered`` shows: a resumption's slice leaves them out."""


@strawberry.type(description="A page of a project's handoffs, newest first.")
class HandoffPage:
    nodes: list[Handoff] = strawberry.field(description="The handoffs of this page, newest first.")
    page_info: PageInfo = strawberry.field(
        description="Whether another page follows, and the cursor to ask for it."
    )


@strawberry.input(description="The project, the new task and the token budget to resume with.")
class ResumeInput:
    project_id: strawberry.ID = strawberry.field(description="The project to resume work in.")
    task: str = strawberry.field(description="The task about to start; the slice is chosen for it.")
    token_budget: int = strawberry.field(
        description="Tokens (cl100k_base) the handoff and the slice together may use; at least 1."
    )


@strawberry.type(
    description="The newest handoff you can see and a slice for the new task, under one token budget."
)
class Resumption:
    handoff: Handoff | None = strawberry.field(description="Null when the project has no handoff you see.")
    slice: Slice = strawberry.field(
        description="Rehydrated for the task with what the handoff left of the budget (Slice.tokenBudget):"
        " every load-bearing constraint you can see is in it, whatever is left."
    )
    rendered: str = strawberry.field(
        description="The handoff's rendered, a heading naming the task, then the slice's; the slice's alone"
        " when there is no handoff."
    )
    token_budget: int = strawberry.field(description="The budget asked for.")
    tokens_used: int = strawberry.field(description="Tokens of rendered.")
    over_budget: bool = strawberry.field(
        description="Only the handoff and the guaranteed constraints may push it over: then the slice holds"
        " nothing else."
    )
    encoding: str = strawberry.field(description="The tiktoken encoding that counted the tokens.")
