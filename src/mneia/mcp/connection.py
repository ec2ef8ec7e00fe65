"""One MCP connection's place in Mneia: its project, and the session it writes into (R13).

The session is started the first time the connection needs one (``resume``,
an assertion, a checkpoint), by the caller's own token, with the client's
``clientInfo`` from the MCP handshake as ``client.tool`` and
``client.version``, Claude Code's session id (``CLAUDE_CODE_SESSION_ID`` for
``mneia mcp``, the ``X-Claude-Code-Session-Id`` header over HTTP), where the
client gave it, as ``externalId`` and, for Claude Code, its resume command
as ``deepLink``. A
client that gave no name or version gets none: the session reports the part
as missing; a version a client sends whatever its release (Cursor's
constant ``1.0.0``) is recorded as sent, and the session flags it
(``storage.session.PLACEHOLDER_VERSIONS``). ``checkpoint`` ends the session;
the connection's next write starts another.

The project comes from the configuration (``MNEIA_PROJECT``, or the
``X-Mneia-Project`` header over HTTP), by id or by name, so the model never
has to guess it; without one, the single project the caller works in.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Hashable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from mneia.mcp import operations
from mneia.mcp.api import Api, ApiError

PROJECT_HEADER = "x-mneia-project"
RETRIES_KEPT = 16
"""Idempotency keys remembered per connection, with the session each checkpoint ended."""
CLIENT_LIMIT = 200
"""The longest client name or version recorded (the API's own limit for them)."""

_current: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar("mneia_mcp_request", default=None)


async def remember_request(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: the request being handled, for handlers the SDK gives no context (resources)."""
    token = _current.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _current.reset(token)


def current() -> ServerRequestContext[Any, Any]:
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError("no MCP request is being handled")
    return ctx


def header(name: str) -> str | None:
    """A header of the HTTP request carrying the current message; None over stdio."""
    headers = getattr(current().request, "headers", None)
    value = headers.get(name) if headers is not None else None
    return value.strip() or None if isinstance(value, str) else None


def client_info() -> tuple[str | None, str | None]:
    """The client's name and version from the handshake; None for what it did not give."""
    params = current().session.client_params
    info = params.client_info if params is not None else None
    if info is None:
        return None, None
    return _given(info.name), _given(info.version)


def _given(value: str | None) -> str | None:
    """What a client said of itself, as the API can store it: one line of printable characters (a NUL or
    a lone surrogate would make the API refuse every write of the connection), at most ``CLIENT_LIMIT``."""
    if not isinstance(value, str):
        return None
    value = " ".join("".join(ch if ch.isprintable() else " " for ch in value).split())
    return value[:CLIENT_LIMIT] or None


def deep_link(tool: str | None, external_id: str | None) -> str | None:
    """A command that reopens the conversation, where the client has one and named its session."""
    if tool == "claude-code" and external_id:
        return f"claude --resume {external_id}"
    return None


@dataclass
class Place:
    """What one connection has settled: its project and its open Mneia session."""

    project_id: str | None = None
    session_id: str | None = None
    checkpointed: dict[str, str] = field(default_factory=dict)
    """The session each recent checkpoint's idempotency key ended: a retry checkpoints it again."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def forget(self, session: str) -> None:
        """``session`` ended elsewhere: the next write starts a new one."""
        if self.session_id == session:
            self.session_id = None

    def ended(self, session: str, key: str | None) -> None:
        """``session`` was checkpointed: the next write starts a new one; a retry of ``key`` finds it."""
        self.forget(session)
        if key:
            self.checkpointed[key] = session
            while len(self.checkpointed) > RETRIES_KEPT:
                del self.checkpointed[next(iter(self.checkpointed))]


class Places:
    """Each connection's ``Place``, the least recently used forgotten past ``limit``."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._places: OrderedDict[Hashable, Place] = OrderedDict()

    def of(self, key: Hashable) -> Place:
        place = self._places.get(key)
        if place is None:
            place = self._places[key] = Place()
            while len(self._places) > self.limit:
                self._places.popitem(last=False)
        self._places.move_to_end(key)
        return place


async def project_id(api: Api, place: Place, hint: str | None, setting: str) -> str:
    """The project this connection works in: ``hint`` (an id or a name), else the caller's only one."""
    if place.project_id is not None:
        return place.project_id
    projects = (await api.run(operations.PROJECTS))["projects"]
    names = ", ".join(f"{p['name']} ({p['id']})" for p in projects) or "none"
    if hint:
        matches = [p for p in projects if hint in (p["id"], p["name"])]
        if len(matches) != 1:
            problem = "names no project" if not matches else "names several projects"
            raise ApiError("BAD_USER_INPUT", f"{setting} {problem} you work in: {hint!r}; yours: {names}")
        place.project_id = str(matches[0]["id"])
    elif len(projects) == 1:
        place.project_id = str(projects[0]["id"])
    else:
        raise ApiError("BAD_USER_INPUT", f"set {setting} to the project to work in; yours: {names}")
    return place.project_id


async def session_id(
    api: Api, place: Place, project: str, *, task: str | None, external_id: str | None
) -> str:
    """The connection's open session, started now (with the handshake's client) when it has none."""
    async with place.lock:
        if place.session_id is None:
            tool, version = client_info()
            session: dict[str, Any] = {"projectId": project, "task": task}
            if tool or version:
                session["client"] = {"tool": tool, "version": version}
            if external_id:
                session["externalId"] = external_id
            link = deep_link(tool, external_id)
            if link:
                session["deepLink"] = link
            place.session_id = str(
                (await api.run(operations.START_SESSION, {"input": session}))["startSession"]["id"]
            )
        return place.session_id
