"""The MCP server: Mneia's tools, resources and prompts over a ``Backend`` (stdio or HTTP).

Few tools, each a thin wrapper over the contract's operations, each answering
text only: the API's ``rendered`` lines, an item's id after its line (the
authority always opens it, R4), within ``budget.OUTPUT_CAP`` tokens. What
an author wrote beside a line (a basis, a reason, details) passes through
``render.clean`` as the handoff's text does, so it cannot forge a tag. Clients
show a structured result to the model instead of its text, so no tool
declares one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from functools import wraps
from typing import Annotated, Any, Literal, ParamSpec, Protocol

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from mneia.mcp import argument, budget, operations
from mneia.mcp.api import Api, ApiError, Redacting
from mneia.mcp.connection import Place, Places, current, project_id, remember_request, session_id
from mneia.rehydration.render import clean

Kind = Literal["CONSTRAINT", "DECISION", "FACT", "PREFERENCE", "QUESTION", "TASK"]
Status = Literal["ACTIVE", "SUPERSEDED", "DISPUTED", "RETIRED"]
Scope = Literal["PRIVATE", "PROJECT", "TEAM", "WORKSPACE"]
Text = Annotated[str, Field(min_length=1, max_length=20_000)]
SliceBudget = Annotated[int, Field(ge=1, le=budget.MAX_SLICE_BUDGET)]
Confidence = Annotated[float, Field(ge=0, le=1)]
SUMMARY_LIMIT = 4_000
"""A checkpoint's summary, at most (the API's ``resolvers.handoff.SUMMARY_LIMIT``; a test holds them equal,
and this module does not import the server's resolvers, so that ``mneia mcp`` starts quickly)."""

INSTRUCTIONS = """\
Mneia is this project's memory, shared by the people and agents who work on it.
Start with `resume` (your task): the last handoff and the constraints and decisions the task needs.
Record what the work must not lose with `assert_item`; replace what changed with `supersede_item`
(a human's ruling is never overwritten: your replacement waits for a human); contest with `dispute_item`.
End with `checkpoint`: a summary, next steps and open questions for whoever resumes.
Lines open with their authority: [human-confirmed …] is a ruling, [agent-asserted … unconfirmed] a guess.
Find an item's id with `search_items`; each line ends with it."""

# Every optional argument also takes null: models asked for strict function schemas (every argument
# required, the optional ones nullable) send null for what they leave out.
NOTHING = "Nothing in this project's memory for the task yet (no handoff, no item)."

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

P = ParamSpec("P")


class Backend(Protocol):
    """Where a request's API, connection and settings come from: stdio's process or an HTTP request."""

    project_setting: str
    """How the user names the project (``MNEIA_PROJECT``, the ``X-Mneia-Project`` header)."""

    def api(self) -> Api: ...

    def connection(self) -> Hashable: ...

    def project_hint(self) -> str | None: ...

    def external_id(self) -> str | None: ...


class NewItem(BaseModel):
    """An item a checkpoint records (asserted in the session, like ``assert_item``)."""

    kind: Kind
    statement: Text
    details: str | None = None
    basis: str | None = None
    confidence: Confidence | None = None
    suggest_load_bearing: bool | None = False


def line(node: dict[str, Any]) -> str:
    """An item as the API renders it, its id after it (the authority opens the line, R4)."""
    return f"{node['rendered']} — id {node['id']}"


def slice_input(project: str, task: str, token_budget: int | None) -> dict[str, Any]:
    budget_ = token_budget or budget.DEFAULT_SLICE_BUDGET
    return {"input": {"projectId": project, "task": task, "tokenBudget": budget_}}


def opened(dispute: str, item: dict[str, Any], contested: dict[str, Any]) -> str:
    return f"Dispute {dispute} opened; a human resolves it.\n{line(item)}\ncontests: {line(contested)}"


def refusals(tool: Callable[P, Awaitable[str]]) -> Callable[P, Awaitable[str]]:
    """The API's refusal as the tool's error (``CODE: message``); the answer held to the output cap."""

    @wraps(tool)
    async def answered(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return budget.fit(await tool(*args, **kwargs))
        except ApiError as error:
            raise ToolError(str(error)) from None

    return answered


class Mneia:
    """The tools of one server, sharing its backend and each connection's ``Place``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.places = Places()

    def place(self) -> Place:
        return self.places.of(self.backend.connection())

    def api(self) -> Api:
        """The backend's API, with every string an agent sends redacted of credentials first: what a
        tool writes comes from a transcript, never typed by a person into Mneia (mneia.secrets)."""
        return Redacting(self.backend.api())

    async def project(self, api: Api) -> str:
        return await project_id(api, self.place(), self.backend.project_hint(), self.backend.project_setting)

    async def session(self, api: Api, project: str, task: str | None = None) -> str:
        return await session_id(api, self.place(), project, task=task, external_id=self.backend.external_id())

    async def in_session(
        self, api: Api, project: str, write: Callable[[str], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """``write`` into the connection's session; into a new one when that session was ended elsewhere
        (a human's ``endSession``, a checkpoint through the API), since the API refuses writes to it."""
        session = await self.session(api, project)
        try:
            return await write(session)
        except ApiError as error:
            if error.code != "BAD_USER_INPUT" or ".sessionId: has ended" not in error.message:
                raise
        self.place().forget(session)
        return await write(await self.session(api, project))

    def assertion(
        self,
        project: str,
        session: str,
        kind: str,
        statement: str,
        *,
        details: str | None = None,
        basis: str | None = None,
        confidence: float | None = None,
        suggest_load_bearing: bool | None = False,
        scope: str | None = None,
        decay_after: str | None = None,
        contradicts: list[str] | None = None,
    ) -> dict[str, Any]:
        given = {
            "details": details,
            "basis": basis,
            "confidence": confidence,
            "scope": scope,
            "decayAfter": decay_after,
            "contradicts": contradicts or None,
        }
        return {
            "projectId": project,
            "sessionId": session,
            "kind": kind,
            "statement": statement,
            "suggestLoadBearing": bool(suggest_load_bearing),
            **{name: value for name, value in given.items() if value is not None},
        }

    # --- tools -----------------------------------------------------------------------------------

    async def resume(self, task: Text, token_budget: SliceBudget | None = budget.DEFAULT_SLICE_BUDGET) -> str:
        """Start work on a task: the latest handoff of the project and what the task needs from its memory
        (every load-bearing constraint, what was ruled out recently, the most relevant items) as text."""
        api = self.api()
        project = await self.project(api)
        await self.session(api, project, task)
        data = await api.run(operations.RESUME, slice_input(project, task, token_budget))
        return budget.fit_resumption(str(data["resume"]["rendered"])) or NOTHING

    async def rehydrate(
        self, task: Text, token_budget: SliceBudget | None = budget.DEFAULT_SLICE_BUDGET
    ) -> str:
        """What a task needs from the project's memory under a token budget, without the handoff."""
        api = self.api()
        project = await self.project(api)
        data = await api.run(operations.REHYDRATE, slice_input(project, task, token_budget))
        return str(data["rehydrate"]["rendered"]) or NOTHING

    async def checkpoint(
        self,
        summary: Annotated[str, Field(min_length=1, max_length=SUMMARY_LIMIT)],
        next_steps: list[str] | None = None,
        open_questions: list[str] | None = None,
        items: list[NewItem] | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        """End this session with a handoff for whoever resumes: a summary, next steps, open questions and
        items to record. Answers the handoff as they will read it. A retry with the same idempotency_key
        returns the same handoff."""
        api = self.api()
        project = await self.project(api)
        place = self.place()
        retried = place.checkpointed.get(idempotency_key) if idempotency_key else None
        session = retried or await self.session(api, project)
        checkpoint: dict[str, Any] = {"sessionId": session, "summary": summary}
        if next_steps:
            checkpoint["nextSteps"] = next_steps
        if open_questions:
            checkpoint["openQuestions"] = open_questions
        if items:
            checkpoint["items"] = [
                self.assertion(project, session, **item.model_dump(exclude_none=True)) for item in items
            ]
        if idempotency_key:
            checkpoint["idempotencyKey"] = idempotency_key
        data = await api.run(operations.CHECKPOINT, {"input": checkpoint})
        async with place.lock:
            place.ended(session, idempotency_key)
        return str(data["checkpoint"]["rendered"])

    async def assert_item(
        self,
        kind: Kind,
        statement: Text,
        details: str | None = None,
        basis: str | None = None,
        confidence: Confidence | None = None,
        suggest_load_bearing: bool | None = False,
        scope: Scope | None = "PROJECT",
        decay_after: str | None = None,
    ) -> str:
        """Record an item of project memory (a constraint, decision, fact, preference, question or task),
        asserted by you in this session: unconfirmed until a human confirms it. suggest_load_bearing asks a
        human to rule that the work goes wrong without it. decay_after (ISO-8601, e.g. P90D) for facts that
        go stale on their own."""
        api = self.api()
        project = await self.project(api)

        async def write(session: str) -> dict[str, Any]:
            new = self.assertion(
                project,
                session,
                kind,
                statement,
                details=details,
                basis=basis,
                confidence=confidence,
                suggest_load_bearing=suggest_load_bearing,
                scope=scope,
                decay_after=decay_after,
            )
            return await api.run(operations.ASSERT, {"input": new})

        return line((await self.in_session(api, project, write))["assertItem"])

    async def supersede_item(
        self,
        target_id: str,
        statement: Text,
        reason: Text,
        kind: Kind | None = None,
        details: str | None = None,
        basis: str | None = None,
        scope: Scope | None = None,
    ) -> str:
        """Replace an item with a new statement, saying why. The old item stays, marked superseded, so
        nobody proposes it again. A human's ruling is not replaced by you: the replacement waits, pending,
        for a human to confirm. kind and scope default to the target's (a replacement is never seen by
        fewer people than what it replaces)."""
        api = self.api()
        project = await self.project(api)
        if kind is None or scope is None:
            target = (await api.run(operations.KIND, {"id": target_id}))["item"]
            if target is None:
                raise ApiError("NOT_FOUND", f"item {target_id} not found")
            kind = kind or target["kind"]
            scope = scope or target["scope"]

        async def write(session: str) -> dict[str, Any]:
            replacement = self.assertion(
                project, session, str(kind), statement, details=details, basis=basis, scope=scope
            )
            change = {"targetId": target_id, "replacement": replacement, "reason": reason}
            return await api.run(operations.SUPERSEDE, {"input": change})

        result = (await self.in_session(api, project, write))["supersedeItem"]
        if result["__typename"] == "Superseded":
            return f"Replaced.\nnow: {line(result['replacement'])}\nwas: {line(result['previous'])}"
        proposal = result["proposal"]
        return (
            f"Pending: {line(proposal['target'])} is a human's ruling, so nothing was replaced; "
            f"proposal {proposal['id']} waits for a human to accept or reject "
            f"the replacement: {clean(str(proposal['replacementStatement']))}"
        )

    async def dispute_item(
        self,
        contested_id: str,
        reason: Text,
        statement: str | None = None,
        kind: Kind | None = None,
        item_id: str | None = None,
    ) -> str:
        """Contest an item without replacing it: either a new statement that contradicts it (recorded as
        disputed, in this session) or an existing item (item_id) that does. Only a human resolves a dispute;
        the contested item is untouched meanwhile."""
        api = self.api()
        if (statement is None) == (item_id is None):
            raise ApiError("BAD_USER_INPUT", "statement or item_id: give exactly one")
        if item_id is None:
            project = await self.project(api)
            if kind is None:
                contested = (await api.run(operations.KIND, {"id": contested_id}))["item"]
                if contested is None:
                    raise ApiError("NOT_FOUND", f"item {contested_id} not found")
                kind = contested["kind"]

            async def write(session: str) -> dict[str, Any]:
                new = self.assertion(
                    project, session, str(kind), str(statement), basis=reason, contradicts=[contested_id]
                )
                return await api.run(operations.ASSERT, {"input": new})

            item = (await self.in_session(api, project, write))["assertItem"]
            disputes = [d for d in item["disputes"] if d["contested"]["id"] == contested_id]
            if not disputes:
                return line(item)
            return opened(disputes[0]["id"], item, disputes[0]["contested"])
        data = await api.run(operations.DISPUTE, {"id": item_id, "contested": contested_id, "reason": reason})
        dispute = data["disputeItem"]
        return opened(dispute["id"], dispute["item"], dispute["contested"])

    async def search_items(
        self,
        text: str | None = None,
        kinds: list[Kind] | None = None,
        statuses: list[Status] | None = None,
        limit: Annotated[int, Field(ge=1, le=budget.MAX_SEARCH_LIMIT)] | None = budget.DEFAULT_SEARCH_LIMIT,
    ) -> str:
        """Items of the project matching words of text (all items without it), newest first, one line each
        with its id. kinds and statuses narrow it (every status by default)."""
        api = self.api()
        project = await self.project(api)
        filter_: dict[str, Any] = {}
        if text:
            filter_["text"] = text
        if kinds:
            filter_["kinds"] = kinds
        if statuses:
            filter_["statuses"] = statuses
        first = limit or budget.DEFAULT_SEARCH_LIMIT
        page = (await api.run(operations.SEARCH, {"project": project, "filter": filter_, "first": first}))[
            "items"
        ]
        lines = [line(node) for node in page["nodes"]]
        shown = f"{len(lines)} of {page['totalCount']} item(s)"
        return "\n".join([shown, *lines]) if lines else "No item matches."

    async def get_item(self, id: str) -> str:
        """One item: its line, details, basis, where it came from, its supersede chain and disputes."""
        return await self.item_text(self.api(), id)

    async def item_text(self, api: Api, item_id: str) -> str:
        item = (await api.run(operations.GET, {"id": item_id}))["item"]
        if item is None:
            raise ApiError("NOT_FOUND", f"item {item_id} not found")
        parts = [line(item)]
        provenance = item["provenance"]
        if provenance["basis"]:
            parts.append(f"basis: {clean(provenance['basis'])}")
        session = provenance["session"]
        if session:
            client = session["client"] or {}
            said = " ".join(filter(None, (client.get("tool"), client.get("version")))) or "an unnamed client"
            parts.append(
                f"from: session {session['id']} of {said}"
                + (f" ({session['deepLink']})" if session["deepLink"] else "")
            )
        if provenance["partial"]:
            parts.append(f"provenance partial, missing: {', '.join(provenance['missing'])}")
        if item["supersessionReason"]:
            parts.append(f"replaced its predecessor because: {clean(item['supersessionReason'])}")
        if len(item["chain"]) > 1:
            parts.append("chain, oldest first:")
            parts += [f"- {line(link)}" for link in item["chain"]]
        for dispute in item["disputes"]:
            parts.append(
                f"dispute {dispute['id']} ({dispute['status'].lower()}): {dispute['item']['id']} contests "
                f"{dispute['contested']['id']}"
                + (f" because: {clean(dispute['reason'])}" if dispute["reason"] else "")
            )
        if item["details"]:
            # Quoted, without brackets, like a handoff's summary: no text an author wrote can pass
            # for an item's authority tag (R4).
            parts.append("details:")
            parts += [f"> {clean(text)}" for text in str(item["details"]).splitlines() if text.strip()]
        return "\n".join(parts)

    async def item_action(
        self, id: str, action: Literal["verify", "retire"], reason: str | None = None
    ) -> str:
        """verify: you checked the item still holds (it stays fresh). retire: it no longer holds (give a
        reason); nothing is deleted, and a human's ruling is retired by a human only."""
        api = self.api()
        if action == "verify":
            item = (await api.run(operations.VERIFY, {"id": id}))["verifyItem"]
            return f"Verified: {line(item)}"
        if not reason or not reason.strip():
            raise ApiError("BAD_USER_INPUT", "reason: needed to retire an item")
        item = (await api.run(operations.RETIRE, {"id": id, "reason": reason}))["retireItem"]
        return f"Retired: {line(item)}"

    # --- resources -------------------------------------------------------------------------------

    async def latest_handoff(self) -> str:
        api = self.api()
        project = await self.project(api)
        handoff = (await api.run(operations.LATEST_HANDOFF, {"project": project}))["latestHandoff"]
        return budget.fit(str(handoff["rendered"]) if handoff else "No handoff yet in this project.")

    async def constraints(self) -> str:
        api = self.api()
        project = await self.project(api)
        page = (
            await api.run(operations.CONSTRAINTS, {"project": project, "first": budget.CONSTRAINTS_PAGE})
        )["items"]
        lines = [line(node) for node in page["nodes"]]
        if page["totalCount"] > len(lines):
            lines.append(f"… and {page['totalCount'] - len(lines)} more (search_items kinds=[CONSTRAINT])")
        return budget.fit("\n".join(lines) if lines else "No load-bearing constraint in this project.")

    async def item(self, id: str) -> str:
        return budget.fit(await self.item_text(self.api(), id))


def _resource(read: Callable[..., Awaitable[str]]) -> Callable[..., Awaitable[str]]:
    @wraps(read)
    async def answered(*args: Any, **kwargs: Any) -> str:
        current()  # only within a request
        try:
            return await read(*args, **kwargs)
        except ApiError as error:
            refused = ResourceNotFoundError if error.code == "NOT_FOUND" else ResourceError
            raise refused(str(error)) from None

    return answered


class _Server(MCPServer[Any]):
    """The SDK's server, with the one change that arguments failing a tool's signature are refused as the
    API refuses bad input (``argument.refusal``), not with pydantic's report. The tool never ran: nothing
    was written."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash, whatever its cause: the SDK masks and logs it
        except ToolError as error:
            # The SDK's refusal of the arguments is the one ToolError caused by a ValidationError (what a
            # tool raises arrives as the cause of its own). Worded as the SDK words a tool's error, and
            # with pydantic's error still the cause, so that the SDK logs the fields only, not the values.
            if not isinstance(error.__cause__, ValidationError):
                raise
            refused = argument.refusal(error.__cause__)
            raise ToolError(f"Error executing tool {name}: {refused}") from error.__cause__


def build(backend: Backend, **settings: Any) -> MCPServer[Any]:
    """The MCP server for ``backend``; ``settings`` go to ``MCPServer`` (the HTTP mode's token verifier)."""
    from mneia import __version__

    server: MCPServer[Any] = _Server(
        "mneia",
        title="Mneia project memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        website_url=None,
        log_level="WARNING",  # the SDK configures logging only where nothing did before: quietly
        middleware=[remember_request],
        **settings,
    )
    mneia = Mneia(backend)
    tools: list[tuple[Callable[..., Awaitable[str]], ToolAnnotations]] = [
        (mneia.resume, WRITE),
        (mneia.rehydrate, READ),
        (mneia.checkpoint, WRITE),
        (mneia.assert_item, WRITE),
        (mneia.supersede_item, WRITE),
        (mneia.dispute_item, WRITE),
        (mneia.search_items, READ),
        (mneia.get_item, READ),
        (mneia.item_action, WRITE),
    ]
    for tool, hints in tools:
        description = " ".join((tool.__doc__ or "").split())
        server.add_tool(refusals(tool), description=description, annotations=hints, structured_output=False)
    server.resource(
        "mneia://handoff/latest",
        name="latest-handoff",
        description="The project's latest handoff, as the next actor reads it.",
        mime_type="text/plain",
    )(_resource(mneia.latest_handoff))
    server.resource(
        "mneia://constraints",
        name="guaranteed-constraints",
        description="Every active load-bearing constraint of the project: what every slice includes.",
        mime_type="text/plain",
    )(_resource(mneia.constraints))
    server.resource(
        "mneia://items/{id}",
        name="item",
        description="One item: its line, details, provenance, chain and disputes.",
        mime_type="text/plain",
    )(_resource(mneia.item))

    @server.prompt(name="resume", description="Resume work on a task from the project's memory.")
    def resume_prompt(task: str) -> list[UserMessage]:
        return [
            UserMessage(
                f"Resume work on this task: {task}\n"
                "Call the mneia `resume` tool with it first. Treat every [human-confirmed …] line as a "
                "ruling and every load-bearing constraint as binding; do not propose again what is listed "
                "as ruled out. Record what you learn with `assert_item` as you go."
            )
        ]

    @server.prompt(name="checkpoint", description="Hand the work over: a checkpoint for whoever resumes.")
    def checkpoint_prompt() -> list[UserMessage]:
        return [
            UserMessage(
                "Stop here and hand over. Call the mneia `checkpoint` tool with a summary of what was "
                "done, next_steps, open_questions, and as items the constraints, decisions and facts the "
                "next actor must not lose (each a statement that stands on its own). Then show me the "
                "handoff it answers."
            )
        ]

    return server
