"""The root types and the schema. Each field's resolver lives in the module of its noun."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import strawberry
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from graphql import GraphQLError
from mneia.errors import MneiaError
from mneia.resolvers import actor as actor_resolvers
from mneia.resolvers import assertion as assertion_resolvers
from mneia.resolvers import dispute as dispute_resolvers
from mneia.resolvers import event as event_resolvers
from mneia.resolvers import handoff as handoff_resolvers
from mneia.resolvers import identity as identity_resolvers
from mneia.resolvers import imports as import_resolvers
from mneia.resolvers import item as item_resolvers
from mneia.resolvers import privacy as privacy_resolvers
from mneia.resolvers import project as project_resolvers
from mneia.resolvers import rehydration as rehydration_resolvers
from mneia.resolvers import resumption as resumption_resolvers
from mneia.resolvers import session as session_resolvers
from mneia.resolvers import subscription as subscription_resolvers
from mneia.resolvers import supersession as supersession_resolvers
from mneia.resolvers import team as team_resolvers
from mneia.resolvers import token as token_resolvers
from mneia.resolvers import workspace as workspace_resolvers
from mneia.resolvers.request import permission
from mneia.resolvers.request.document import DocumentCache, Documents
from mneia.resolvers.request.execution import Execution
from mneia.resolvers.request.extension import Transaction
from mneia.resolvers.request.limit import LIMITS
from mneia.resolvers.request.permission import HUMAN_ONLY
from mneia.schema.actor import Actor, Workspace
from mneia.schema.dispute import Dispute
from mneia.schema.handoff import Handoff, HandoffPage, Resumption
from mneia.schema.imports import ImportResult
from mneia.schema.invitation import Invitation
from mneia.schema.item import Item, ItemEventPage, ItemPage
from mneia.schema.membership import Membership
from mneia.schema.privacy import LegalHold, RedactionNotice, RetentionPolicy
from mneia.schema.project import Project
from mneia.schema.proposal import Proposal
from mneia.schema.scalars import SCALARS
from mneia.schema.session import Session, SessionPage
from mneia.schema.slice import Slice
from mneia.schema.supersession import SupersedeResult
from mneia.schema.team import Team
from mneia.schema.token import ActorWithToken, Token


def human_only(resolver: Any) -> Any:
    """A mutation for humans: agents are refused before the resolver runs (R3), the schema says so."""
    return strawberry.mutation(resolver=resolver, description=HUMAN_ONLY, extensions=permission.human_only())


@strawberry.type(
    description="What a client reads. Every read sees only what the caller's workspace and scopes allow:"
    " what it may not see is NOT_FOUND or absent, never FORBIDDEN."
)
class Query:
    me: Actor = strawberry.field(
        resolver=actor_resolvers.me, description="The actor your bearer token identifies."
    )
    workspace: Workspace = strawberry.field(
        resolver=workspace_resolvers.current_workspace, description="The workspace you are in."
    )
    project: Project | None = strawberry.field(
        resolver=project_resolvers.get_project,
        description="A project by id; null when there is none in your workspace.",
    )
    projects: list[Project] = strawberry.field(
        resolver=project_resolvers.list_projects, description="The projects of your workspace."
    )
    session: Session | None = strawberry.field(
        resolver=session_resolvers.get_session,
        description="A session by id; null when there is none you can see.",
    )
    sessions: SessionPage = strawberry.field(
        resolver=session_resolvers.list_sessions,
        description="A project's sessions, newest first; with externalId, those a client knows by its own"
        " session id (an imported transcript's, a hook's).",
    )
    item: Item | None = strawberry.field(
        resolver=item_resolvers.get_item,
        description="An item by id, or with asOf the item as it stood then, with everything reached from"
        " it (R9); null when there is none you can see.",
    )
    items: ItemPage = strawberry.field(
        resolver=item_resolvers.list_items,
        description="A page of the project's items you can see: filtered, ordered, and read now or as"
        " believed at asOf (R9).",
    )
    events: ItemEventPage = strawberry.field(
        resolver=event_resolvers.list_events,
        description="The log of the project's items you can see, newest first, across items: who changed"
        " what, when and why (R6). With kinds, only those (e.g. the decisions people made).",
    )
    rehydrate: Slice = strawberry.field(
        resolver=rehydration_resolvers.rehydrate,
        description="The slice of the project's memory a task needs under a token budget: every active"
        " load-bearing constraint you can see, what was ruled out recently, then the most valuable items"
        " per token within each kind's quota.",
    )
    handoff: Handoff | None = strawberry.field(
        resolver=handoff_resolvers.get_handoff,
        description="A handoff by id, as you may see it; null when there is none you can see.",
    )
    handoffs: HandoffPage = strawberry.field(
        resolver=handoff_resolvers.list_handoffs,
        description="A project's handoffs you can see, newest first (at most 100 a page).",
    )
    latest_handoff: Handoff | None = strawberry.field(
        resolver=handoff_resolvers.latest_handoff,
        description="The project's newest handoff you can see, as you may see it.",
    )
    resume: Resumption = strawberry.field(
        resolver=resumption_resolvers.resume,
        description="Resume work on a new task: the newest handoff you can see, then a slice for the task"
        " in what the handoff left of the token budget. The guaranteed constraints are always in it.",
    )
    retention_policies: list[RetentionPolicy] = strawberry.field(
        resolver=privacy_resolvers.retention_policies,
        description="The retention policies in force (R16): the workspace's defaults and, with projectId,"
        " that project's own. No policy: everything is kept.",
    )
    redactions_due: list[RedactionNotice] = strawberry.field(
        resolver=privacy_resolvers.redactions_due,
        description="What the policies will redact within the given time (or are overdue), soonest first;"
        " an item under a legal hold is never due.",
    )
    legal_holds: list[LegalHold] = strawberry.field(
        resolver=privacy_resolvers.legal_holds, description="A project's legal holds, newest first (R17)."
    )
    disputes: list[Dispute] = strawberry.field(
        resolver=dispute_resolvers.list_disputes, description="A project's disputes, newest first."
    )
    proposals: list[Proposal] = strawberry.field(
        resolver=supersession_resolvers.list_proposals, description="A project's proposals, newest first."
    )
    tokens: list[Token] = strawberry.field(
        resolver=token_resolvers.list_tokens,
        description="Tokens you may see and revoke, newest first: your own, and a human's also those"
        " of the actors it created. Never their secret.",
    )
    current_token: Token = strawberry.field(
        resolver=token_resolvers.current_token,
        description="The token this request presents: its id (to revoke it), hint and expiry.",
    )
    my_memberships: list[Membership] = strawberry.field(
        resolver=identity_resolvers.my_memberships,
        description="For a person signed in with OpenID: their actor in each workspace where they are a"
        " human (R19). For anyone else, only their own actor here.",
    )
    invitations: list[Invitation] = strawberry.field(
        resolver=identity_resolvers.list_invitations,
        description="The workspace's invitations, newest first (at most 200). Only humans see them.",
    )


@strawberry.type(
    description="What a client writes. Each mutation is one transaction: one refused writes nothing."
)
class Mutation:
    create_team: Team = human_only(team_resolvers.create_team)
    create_project: Project = human_only(project_resolvers.create_project)
    create_actor: ActorWithToken = human_only(actor_resolvers.create_actor)
    add_project_member: Project = human_only(project_resolvers.add_project_member)
    add_team_member: Team = human_only(team_resolvers.add_team_member)
    create_token: ActorWithToken = human_only(token_resolvers.create_token)
    create_invitation: Invitation = human_only(identity_resolvers.create_invitation)
    revoke_token: Token = strawberry.mutation(
        resolver=token_resolvers.revoke_token,
        description="Revoke a token: an actor its own, a human also those of the actors it created.",
    )
    start_session: Session = strawberry.mutation(
        resolver=session_resolvers.start_session,
        description="Start a session in a project you are a member of, recording the client's provenance"
        " (R13); what the client does not give is listed as missing, never guessed.",
    )
    end_session: Session = strawberry.mutation(
        resolver=session_resolvers.end_session,
        description="End a session without a handoff. Only its actor or a human may end it.",
    )
    assert_item: Item = strawberry.mutation(
        resolver=assertion_resolvers.assert_item,
        description="Assert one item. A human's is human-confirmed, an agent's agent-asserted. With"
        " contradicts naming an ACTIVE item, it is stored DISPUTED and a dispute opens (R8).",
    )
    assert_items: list[Item] = strawberry.mutation(
        resolver=assertion_resolvers.assert_items,
        description="Assert up to 1,000 items in one request and one transaction, each exactly as"
        " assertItem would (same checks, authority, events and notifications), in the order given."
        " One bad item refuses them all, its error naming input[k]; nothing is written.",
    )
    confirm_item: Item = human_only(item_resolvers.confirm_item)
    set_load_bearing: Item = human_only(item_resolvers.set_load_bearing)
    suggest_load_bearing: Proposal = strawberry.mutation(
        resolver=item_resolvers.suggest_load_bearing,
        description="Suggest that an item is load-bearing: a LOAD_BEARING proposal for a human to decide"
        " (R5): loadBearingSuggested becomes true, loadBearing waits for that human.",
    )
    retire_item: Item = strawberry.mutation(
        resolver=item_resolvers.retire_item,
        description="Retire an item. Retiring a human-confirmed item is for humans only.",
    )
    verify_item: Item = strawberry.mutation(
        resolver=item_resolvers.verify_item,
        description="Record that somebody checked the item and it still holds: sets lastVerifiedAt, so"
        " it is fresh again (R10).",
    )
    supersede_item: SupersedeResult = strawberry.mutation(
        resolver=supersession_resolvers.supersede_item,
        description="Replace an item. An agent replacing a human-confirmed item gets PendingConfirmation.",
    )
    decide_proposal: Proposal = human_only(supersession_resolvers.decide_proposal)
    dispute_item: Dispute = strawberry.mutation(
        resolver=dispute_resolvers.dispute_item,
        description="Open a dispute: the item id contradicts the ACTIVE item contestedId. The first"
        " becomes DISPUTED, the contested item is untouched, and only a human resolves it (R8).",
    )
    resolve_dispute: Dispute = human_only(dispute_resolvers.resolve_dispute)
    set_retention_policy: RetentionPolicy = human_only(privacy_resolvers.set_retention_policy)
    remove_retention_policy: RetentionPolicy = human_only(privacy_resolvers.remove_retention_policy)
    place_legal_hold: LegalHold = human_only(privacy_resolvers.place_legal_hold)
    release_legal_hold: LegalHold = human_only(privacy_resolvers.release_legal_hold)
    erase_actor: Actor = human_only(privacy_resolvers.erase_actor)
    import_items: ImportResult = strawberry.mutation(
        resolver=import_resolvers.import_items,
        description="Import a batch of keyed items from one source (a transcript, ADRs, a rules file), as"
        " mneia import does: credentials redacted first; a key imported before writes nothing unless its"
        " content changed, which supersedes what it wrote; a TRANSCRIPT's words stay unconfirmed.",
    )
    checkpoint: Handoff = strawberry.mutation(
        resolver=handoff_resolvers.checkpoint,
        description="Stop work: write the session's last items (as assertItem, supersedeItem), end the"
        " session and leave its Handoff. Safe to retry with the same idempotencyKey.",
    )


@strawberry.type(
    description="Notifications over graphql-transport-ws, only of projects the subscriber can see (R15)."
)
class Subscription:
    dispute_raised: AsyncGenerator[Dispute, None] = strawberry.subscription(
        resolver=subscription_resolvers.dispute_raised,
        description="Disputes as they are raised, in one project or every project you can see.",
    )
    proposal_raised: AsyncGenerator[Proposal, None] = strawberry.subscription(
        resolver=subscription_resolvers.proposal_raised,
        description="Proposals as they are raised, in one project or every project you can see.",
    )


class MneiaSchema(strawberry.Schema):
    def __init__(self, documents: DocumentCache, **options: Any) -> None:
        super().__init__(**options)
        self.documents = documents
        """The valid documents its authenticated callers sent, kept for reuse (resolvers.request.document)."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Expected failures are answers, not incidents: log only the unexpected ones (in errors.present)."""
        del errors, execution_context


def build_schema() -> MneiaSchema:
    documents = DocumentCache(LIMITS.cache_bytes)
    return MneiaSchema(
        documents,
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        # Transaction first: it presents every error, so its on_operation must close last;
        # Documents' on_execute then runs inside the transaction, once the caller authenticated.
        extensions=[Transaction, lambda: Documents(documents)],
        config=StrawberryConfig(scalar_map=SCALARS),
        execution_context_class=Execution,
    )


__all__ = ["MneiaError", "build_schema"]
