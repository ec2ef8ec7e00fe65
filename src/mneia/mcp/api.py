"""The GraphQL API as the MCP tools call it: over HTTP here (``mneia mcp``), in the serving process
in ``mcp.http`` (``LocalApi``).

Both send a document and its variables with the caller's bearer token and
answer the operation's ``data``, or raise ``ApiError`` with the contract's
error code and message. This module imports nothing of the server, so that
``mneia mcp`` starts without loading the schema.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx

from mneia.secrets import redacted_values

TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class ApiError(Exception):
    """A refused or failed operation: the contract's code (``extensions.code``) and message."""

    def __init__(self, code: str, message: str, reason: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reason = reason


def raise_errors(errors: list[dict[str, Any]] | None) -> None:
    if not errors:
        return
    first = errors[0]
    extensions = first.get("extensions") or {}
    raise ApiError(
        str(extensions.get("code") or "INTERNAL_SERVER_ERROR"),
        str(first.get("message") or "the operation failed"),
        extensions.get("reason"),
    )


class Api(Protocol):
    async def run(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]: ...


class Redacting:
    """An API whose variables are redacted of credentials before they leave (mneia.secrets)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def run(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        cleaned = redacted_values(variables or {})
        assert isinstance(cleaned, dict)
        return await self.api.run(document, cleaned)


class RemoteApi:
    """``MNEIA_URL``'s ``/graphql``, with one token, over one pooled HTTP client."""

    def __init__(self, url: str, token: str, client: httpx.AsyncClient | None = None) -> None:
        self.endpoint = url.rstrip("/") + "/graphql"
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.client = client or httpx.AsyncClient(timeout=TIMEOUT)

    async def run(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = await self.client.post(
                self.endpoint, json={"query": document, "variables": variables or {}}, headers=self.headers
            )
        except httpx.HTTPError as error:
            raise ApiError("SERVICE_UNAVAILABLE", f"cannot reach Mneia at {self.endpoint}: {error}") from None
        try:
            answer = response.json()
        except ValueError:
            raise ApiError(
                "SERVICE_UNAVAILABLE", f"{self.endpoint} answered {response.status_code}, not GraphQL"
            ) from None
        if not isinstance(answer, dict):
            raise ApiError(
                "SERVICE_UNAVAILABLE", f"{self.endpoint} answered {response.status_code}, not GraphQL"
            )
        raise_errors(answer.get("errors"))
        data: dict[str, Any] = answer.get("data") or {}
        return data

    async def aclose(self) -> None:
        await self.client.aclose()
