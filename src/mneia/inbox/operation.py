"""The inbox's GraphQL: every read and every action is an operation of the API's own schema, run in-process.

What must stay true: the inbox writes no SQL and checks no permission of its
own. Each operation runs through ``schema.execute`` with a ``Context`` that
carries the signed-in person's token, exactly as an HTTP request to
``/graphql`` would: one transaction, authenticated by the database, bound by
row-level security, committed only when the operation produced no error
(resolvers/request/extension.py). What a person may see and do in the inbox is
therefore what the API lets that token see and do, nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mneia.resolvers.request.context import Context
from mneia.resolvers.request.inprocess import InProcess
from mneia.storage.database import Tx
from mneia.storage.notification import Hub

# What every entry shows of an item: its rendered line (R4) and its provenance (R13).
ENTRY = """
fragment Entry on Item {
  id kind statement details rendered authority status loadBearing loadBearingSuggested confidence
  stale assertedAt lastVerifiedAt decayAfter
  provenance {
    assertedBy { name kind } basis partial missing
    session { client { tool version } deepLink }
  }
}
"""

ME = "query InboxMe { me { id name kind } projects { id name } currentToken { id createdAt expiresAt } }"
# Who signs in, and when the pasted token expires: a sign-in's own token lasts no longer (inbox.cookie).
SIGNING_IN = "query InboxSigningIn { me { id name kind } currentToken { expiresAt } }"
OPEN_SESSION = """mutation InboxSignIn($me: ID!, $until: DateTime!) {
  createToken(actorId: $me, expiresAt: $until) { token issued { id } } }"""
CLOSE_SESSION = "mutation InboxSignOut($id: ID!) { revokeToken(id: $id) { id } }"
PRESENTED = "query InboxPresented { currentToken { id } }"

PROPOSALS = (
    """
query InboxProposals($project: ID!) {
  proposals(projectId: $project, status: PENDING) {
    id kind reason proposedAt replacementStatement proposedBy { name kind }
    target { ...Entry }
  }
}
"""
    + ENTRY
)

DISPUTES = (
    """
query InboxDisputes($project: ID!) {
  disputes(projectId: $project, status: OPEN) {
    id reason raisedAt raisedBy { name kind }
    item { ...Entry }
    contested { ...Entry }
  }
}
"""
    + ENTRY
)

# The Unconfirmed and Stale tabs, filtered, ordered and counted by the API (items' filter and
# orderBy): each reads the entries it shows (``$unconfirmedFirst`` / ``$staleFirst``, 1 when the
# tab is not open) and its count, never the project's other items.
ITEMS = (
    """
query InboxItems($project: ID!, $unconfirmedFirst: Int!, $staleFirst: Int!) {
  unconfirmed: items(
    projectId: $project, filter: { statuses: [ACTIVE], authorities: [AGENT_ASSERTED] }
    orderBy: SUGGESTED_THEN_CONFIDENCE, first: $unconfirmedFirst
  ) { totalCount nodes { ...Entry } }
  stale: items(
    projectId: $project, filter: { statuses: [ACTIVE], stale: true }
    orderBy: LONGEST_UNCHECKED, first: $staleFirst
  ) { totalCount nodes { ...Entry } }
}
"""
    + ENTRY
)
SHOWN = 100  # entries a tab shows at most; also the schema's alias limit

# The Redactions tab (R16): what the retention policies will blank within the notice window.
NOTICE = "P30D"
REDACTIONS = (
    """
query InboxRedactions($project: ID!, $within: Duration!) {
  redactionsDue(projectId: $project, within: $within) {
    dueAt policy { after project { id } } item { ...Entry }
  }
}
"""
    + ENTRY
)


DECIDED = """
query InboxDecided($project: ID!) {
  proposals(projectId: $project) {
    id kind status reason decisionNote decidedAt decidedBy { name kind } proposedBy { name kind }
    replacementStatement target { id statement rendered }
  }
  disputes(projectId: $project, status: RESOLVED) {
    id resolvedAt resolvedBy { name kind } resolutionNote
    keptItem { id }
    item { id statement rendered }
    contested { id statement rendered }
  }
}
"""

# The decisions in the items' logs, newest first, from the project's log (``events``), not item by item.
HISTORY = """
query InboxHistory($project: ID!) {
  events(
    projectId: $project, first: 200
    kinds: [
      CONFIRMED, LOAD_BEARING_SET, LOAD_BEARING_CLEARED, LOAD_BEARING_DECLINED, VERIFIED, STATUS_CHANGED
    ]
  ) {
    nodes { kind at reason toStatus actor { name kind } item { id statement rendered } }
  }
}
"""

CHANGES = """
subscription InboxDisputes($project: ID) { disputeRaised(projectId: $project) { id } }
"""
PROPOSED = """
subscription InboxProposals($project: ID) { proposalRaised(projectId: $project) { id } }
"""

# The actions, one field each; a bulk action repeats its field under aliases in one
# operation, so that it is one transaction: all of it happens, or none of it (R14).
ACTIONS: dict[str, tuple[str, str]] = {
    "confirm": ("confirmItem(id: $id{n}) { id }", "$id{n}: ID!"),
    "load-bearing": ("setLoadBearing(id: $id{n}, loadBearing: true) { id }", "$id{n}: ID!"),
    "not-load-bearing": ("setLoadBearing(id: $id{n}, loadBearing: false) { id }", "$id{n}: ID!"),
    "accept": (
        "decideProposal(id: $id{n}, accept: true, note: $note{n}) { id }",
        "$id{n}: ID!, $note{n}: String",
    ),
    "reject": (
        "decideProposal(id: $id{n}, accept: false, note: $note{n}) { id }",
        "$id{n}: ID!, $note{n}: String",
    ),
    "resolve": (
        "resolveDispute(id: $id{n}, keepItemId: $keep{n}, note: $note{n}) { id }",
        "$id{n}: ID!, $keep{n}: ID!, $note{n}: String",
    ),
    "verify": ("verifyItem(id: $id{n}) { id }", "$id{n}: ID!"),
    "retire": ("retireItem(id: $id{n}, reason: $note{n}) { id }", "$id{n}: ID!, $note{n}: String!"),
}
# What a person does one item at a time: a confirmation or an acceptance gives authority,
# so each is read and decided on its own.
ONE_AT_A_TIME = frozenset({"confirm", "accept"})
MAX_BULK = 100  # the schema's alias limit


@dataclass(frozen=True)
class Target:
    """One object an action applies to, with what it needs besides the id."""

    id: str
    note: str | None = None
    keep: str | None = None


def action_document(action: str, targets: Sequence[Target]) -> tuple[str, dict[str, str | None]]:
    """The mutation of ``action`` over ``targets`` (aliases ``a0``, ``a1``…) and its variables.

    The document is built from the fixed fields above; what the person typed
    travels only in variables.
    """
    selection, declared = ACTIONS[action]
    fields: list[str] = []
    declarations: list[str] = []
    variables: dict[str, str | None] = {}
    for n, target in enumerate(targets):
        fields.append(f"a{n}: " + selection.replace("{n}", str(n)))
        declarations.append(declared.replace("{n}", str(n)))
        variables[f"id{n}"] = target.id
        if "$note" in declared:
            variables[f"note{n}"] = target.note
        if "$keep" in declared:
            variables[f"keep{n}"] = target.keep
    return f"mutation Inbox({', '.join(declarations)}) {{ {' '.join(fields)} }}", variables


@dataclass(frozen=True)
class Outcome:
    data: dict[str, Any] | None
    errors: list[dict[str, Any]]

    @property
    def ok(self) -> bool:
        return not self.errors

    def codes(self) -> set[str]:
        return {str(error.get("extensions", {}).get("code")) for error in self.errors}


class Api(InProcess):
    """The application's schema, run in-process for one person's token (``resolvers.request.inprocess``)."""

    hub: Hub

    async def run(self, token: str, query: str, variables: dict[str, Any] | None = None) -> Outcome:
        data, errors = await self.execute(token, query, variables)
        return Outcome(data, errors)

    async def raised(self, token: str, project: str | None) -> AsyncGenerator[str, None]:
        """``ready`` once both subscriptions listen, then ``dispute`` or ``proposal`` each time one is
        raised that this token can see (R15), until a subscription ends (the token revoked, the
        subscriber fallen behind).

        Whatever was raised before ``ready`` is not announced: a page reads its panel again then.
        """
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        context = _Listening(engine=self.engine, bearer=token, hub=self.hub, nodes=self.nodes)

        async def follow(document: str, kind: str) -> None:
            try:
                stream = await self.schema.subscribe(
                    document, variable_values={"project": project}, context_value=context
                )
                if not isinstance(stream, AsyncGenerator):
                    return  # refused before it started
                async with aclosing(stream):
                    async for result in stream:
                        if result.errors:
                            return
                        await queue.put(kind)
            finally:
                await queue.put(None)

        async def ready() -> None:
            await context.listening.wait()
            await queue.put("ready")

        tasks = [
            asyncio.create_task(follow(CHANGES, "dispute")),
            asyncio.create_task(follow(PROPOSED, "proposal")),
            asyncio.create_task(ready()),
        ]
        try:
            while (kind := await queue.get()) is not None:
                yield kind
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class _Listening(Context):
    """A context that tells when both of its subscriptions listen.

    A subscription joins the notification hub inside its first authenticated
    transaction and waits for announcements as soon as that transaction ends
    (resolvers/subscription.py), so once two transactions have ended, both
    listen. Later transactions (each event's reading) change nothing.
    """

    listening: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: int = 0

    @asynccontextmanager
    async def authenticated(self, read: bool = False) -> AsyncIterator[Tx]:
        async with super().authenticated(read) as tx:
            yield tx
        self._ended += 1
        if self._ended >= 2:
            self.listening.set()
