"""A Mneia server's GraphQL API from the client-side commands: synchronous, on ``urllib`` alone.

The hooks must start in milliseconds and finish within a second, so this
client imports nothing but the standard library and ``mneia.secrets``
(stdlib and ``re`` only): no httpx, no event loop. The importers and
``mneia sync`` use it too.

Configured as ``mneia mcp`` is (``mcp.stdio``): ``MNEIA_URL`` (the server,
default ``http://127.0.0.1:8000``), ``MNEIA_TOKEN`` (an agent's token) and
``MNEIA_PROJECT`` (a project's id or name; optional when the token works
in one project only).

Importing it is cheap (``json`` and ``os``): urllib and ``mneia.secrets``
are imported by the first request. What must stay true: every string among the variables is redacted of
credentials (``mneia.secrets.redacted_values``) before it is sent; a
refused operation raises ``RemoteError`` with the contract's code
(``extensions.code``); a server that cannot be reached, does not answer in
time or answers something that is not GraphQL raises it with the code
``UNREACHABLE``, never an ``OSError`` or a traceback.
"""

from __future__ import annotations

import json
import os

from mneia import __version__

TYPE_CHECKING = False  # not typing's: importing typing costs the hooks 4 ms
if TYPE_CHECKING:
    import urllib.error
    from collections.abc import Mapping
    from typing import Any

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT = 30.0
UNREACHABLE = "UNREACHABLE"

PROJECTS = "{ projects { id name } }"


class RemoteError(Exception):
    """A refused or failed operation: the contract's code (or ``UNREACHABLE``) and a message; ``reason``
    is ``extensions.reason`` (e.g. ``HUMAN_REQUIRED``), or for ``UNREACHABLE`` the cause alone."""

    def __init__(self, code: str, message: str, reason: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reason = reason


class Unconfigured(Exception):
    """The environment does not say enough to talk to a server (no ``MNEIA_TOKEN``)."""


class Settings:
    """Where the server is, whose token, which project (as configured: an id, a name, or None)."""

    __slots__ = ("url", "token", "project")

    def __init__(self, url: str, token: str, project: str | None) -> None:
        self.url = url
        self.token = token
        self.project = project

    def __repr__(self) -> str:  # never the token
        return f"Settings(url={self.url!r}, project={self.project!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        token = (env.get("MNEIA_TOKEN") or "").strip()
        if not token:
            raise Unconfigured("MNEIA_TOKEN is not set: give the agent's token")
        return cls(url=url_from(env), token=token, project=project_from(env))

    def remote(self, timeout: float = TIMEOUT) -> Remote:
        return Remote(self.url, self.token, timeout=timeout)


def url_from(env: Mapping[str, str]) -> str:
    return (env.get("MNEIA_URL") or "").strip() or DEFAULT_URL


def project_from(env: Mapping[str, str]) -> str | None:
    return (env.get("MNEIA_PROJECT") or "").strip() or None


class Remote:
    """``url``'s ``/graphql`` with one bearer token."""

    def __init__(self, url: str, token: str, *, timeout: float = TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.endpoint = self.url + "/graphql"
        self.timeout = timeout
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"mneia/{__version__}",
        }

    def run(
        self, document: str, variables: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """The operation's ``data``; ``RemoteError`` when it was refused or the server did not answer.

        ``timeout`` (seconds, default the client's) bounds the connection and each read."""
        # Imported here, not above: ``mneia hook`` reads this module's settings on paths that never
        # send anything (a session's end), and urllib.request alone costs tens of milliseconds.
        import http.client
        import urllib.error
        import urllib.request

        from mneia.secrets import redacted_values

        cleaned = redacted_values(dict(variables or {}))
        body = json.dumps({"query": document, "variables": cleaned}).encode()
        request = urllib.request.Request(self.endpoint, data=body, headers=self._headers, method="POST")
        wait = self.timeout if timeout is None else max(timeout, 0.001)
        try:
            with urllib.request.urlopen(request, timeout=wait) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:  # 401 carries a GraphQL error too
            status, raw = error.code, _body(error)
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
            why = _why(error)
            raise RemoteError(UNREACHABLE, f"cannot reach {self.endpoint}: {why}", why) from None
        return _data(self.endpoint, status, raw)


def _body(error: urllib.error.HTTPError) -> bytes:
    import http.client

    try:
        return error.read()
    except (OSError, http.client.HTTPException):
        return b""
    finally:
        error.close()


def _why(error: BaseException) -> str:
    import urllib.error

    if isinstance(error, urllib.error.URLError) and not isinstance(error, urllib.error.HTTPError):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, TimeoutError):
        return "no answer in time"
    return str(error).strip() or type(error).__name__


def _data(endpoint: str, status: int, raw: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not ("data" in answer or "errors" in answer):
        raise RemoteError(
            UNREACHABLE, f"{endpoint} answered {status}, not GraphQL", f"HTTP {status}, not GraphQL"
        )
    errors = answer.get("errors")
    if errors:
        first = errors[0] if isinstance(errors, list) and isinstance(errors[0], dict) else {}
        extensions = first.get("extensions") or {}
        raise RemoteError(
            str(extensions.get("code") or "INTERNAL_SERVER_ERROR"),
            str(first.get("message") or "the operation failed"),
            extensions.get("reason"),
        )
    data = answer.get("data")
    return data if isinstance(data, dict) else {}


def project_id(
    remote: Remote, hint: str | None, setting: str = "MNEIA_PROJECT", timeout: float | None = None
) -> tuple[str, str]:
    """The project to work in, as (id, name): ``hint`` (an id or a name), else the caller's only one.

    ``BAD_USER_INPUT`` when the hint names none or several, or when there is no hint and the
    caller works in several projects (the message lists them), as ``mneia mcp`` says it."""
    projects = remote.run(PROJECTS, timeout=timeout).get("projects") or []
    names = ", ".join(f"{p['name']} ({p['id']})" for p in projects) or "none"
    if hint:
        matches = [p for p in projects if hint in (p["id"], p["name"])]
        if len(matches) != 1:
            problem = "names no project" if not matches else "names several projects"
            raise RemoteError("BAD_USER_INPUT", f"{setting} {problem} you work in: {hint!r}; yours: {names}")
        return str(matches[0]["id"]), str(matches[0]["name"])
    if len(projects) == 1:
        return str(projects[0]["id"]), str(projects[0]["name"])
    raise RemoteError("BAD_USER_INPUT", f"set {setting} to the project to work in; yours: {names}")
