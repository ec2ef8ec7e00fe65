"""``mneia mcp``: the MCP server a client launches, over stdio, calling a Mneia server's GraphQL API.

Configured by the environment the client gives it: ``MNEIA_URL`` (the
server, default ``http://127.0.0.1:8000``), ``MNEIA_TOKEN`` (an agent's
token) and ``MNEIA_PROJECT`` (a project's id or name; optional when the
agent works in one project only). ``CLAUDE_CODE_SESSION_ID``, which Claude
Code sets for the servers it launches, becomes the session's ``externalId``.

Before it serves, the token is checked: a missing, unknown or human token
stops the command with one line on stderr (exit status 2), since a human's
token would let a model act with a human's authority. So is ``MNEIA_PROJECT``,
when set: one that names no project of the agent's stops it the same way.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import anyio

from mneia.mcp import connection, operations, server
from mneia.mcp.api import Api, ApiError, RemoteApi

DEFAULT_URL = "http://127.0.0.1:8000"


class Refused(Exception):
    """The configuration cannot serve: printed as one line by the CLI, exit status 2."""


@dataclass(frozen=True)
class Settings:
    url: str
    token: str
    project: str | None
    external_id: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        token = (env.get("MNEIA_TOKEN") or "").strip()
        if not token:
            raise Refused("MNEIA_TOKEN is not set: give the agent's token (mneia mcp refuses a human's)")
        return cls(
            url=(env.get("MNEIA_URL") or "").strip() or DEFAULT_URL,
            token=token,
            project=(env.get("MNEIA_PROJECT") or "").strip() or None,
            external_id=" ".join((env.get("CLAUDE_CODE_SESSION_ID") or "").split())[:500] or None,
        )


class StdioBackend:
    """One process, one client: one connection, one token, the environment's project."""

    project_setting = "MNEIA_PROJECT"

    def __init__(self, settings: Settings, api: Api) -> None:
        self.settings = settings
        self._api = api

    def api(self) -> Api:
        return self._api

    def connection(self) -> Hashable:
        return "stdio"

    def project_hint(self) -> str | None:
        return self.settings.project

    def external_id(self) -> str | None:
        return self.settings.external_id


async def check_agent(api: Api, url: str) -> None:
    """Refuse to serve for a token that is not an agent's."""
    try:
        me = (await api.run(operations.ME))["me"]
    except ApiError as error:
        if error.code == "UNAUTHENTICATED":
            raise Refused(f"MNEIA_TOKEN is not a valid token at {url}: {error.message}") from None
        raise Refused(f"cannot ask {url} who MNEIA_TOKEN is: {error.message}") from None
    if me["kind"] != "AGENT":
        raise Refused(
            f"MNEIA_TOKEN belongs to {me['name']}, a human: an MCP client is driven by a model, "
            "so mneia mcp takes an agent's token only (create one with createActor(kind: AGENT))"
        )


async def check_project(api: Api, settings: Settings) -> None:
    """Refuse to serve for an MNEIA_PROJECT that names no project of the agent's (or several): said
    now, not at the first tool call. Unset, the project is settled at the first call that needs one."""
    if settings.project is None:
        return
    try:
        await connection.project_id(api, connection.Place(), settings.project, StdioBackend.project_setting)
    except ApiError as error:
        raise Refused(error.message) from None


async def serve(env: Mapping[str, str] | None = None) -> None:
    settings = Settings.from_env(os.environ if env is None else env)
    api = RemoteApi(settings.url, settings.token)
    try:
        await check_agent(api, settings.url)
        await check_project(api, settings)
        await server.build(StdioBackend(settings, api)).run_stdio_async()
    finally:
        await api.aclose()


def main() -> None:
    anyio.run(serve)
