"""The inbox's endpoints: sign-in and sign-out, the page and its panels, the actions, live updates.

Every page is rendered by Jinja2 with autoescaping on, under a strict
Content-Security-Policy (inbox.assets); item text sits inside ``hx-disable``
so that htmx never acts on markup an agent wrote, even if some escaped.
Every read and every action goes through the API's schema with the signed-in
person's token (inbox.operation): the inbox adds no permission of its own
beyond refusing agents at the door, since it is for people.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from mneia.inbox import cookie, duration, entry
from mneia.inbox.assets import PAGE_HEADERS, urls
from mneia.inbox.operation import (
    CLOSE_SESSION,
    DECIDED,
    DISPUTES,
    HISTORY,
    ITEMS,
    MAX_BULK,
    ME,
    NOTICE,
    ONE_AT_A_TIME,
    OPEN_SESSION,
    PRESENTED,
    PROPOSALS,
    REDACTIONS,
    SHOWN,
    SIGNING_IN,
    Api,
    Outcome,
    Target,
    action_document,
)
from mneia.resolvers.request.context import pasted_token

MAX_FORM_BYTES = 256 * 1024
SIGN_IN = "/inbox/sign-in"
"""Where the sign-in form is sent: the token pasted into it is in its body (http.region reads it)."""
KEEPALIVE_SECONDS = 10.0
STREAM_SECONDS = 20.0
RECONNECT_MILLISECONDS = 1000

templates = Environment(
    loader=PackageLoader("mneia.inbox", "templates"),
    autoescape=True,  # every template, whatever its name: item text is untrusted
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters["duration"] = duration.in_words  # every duration a person reads, in words


class Refused(Exception):
    """The request cannot be served to this browser: answer ``response`` instead."""

    def __init__(self, response: Response) -> None:
        self.response = response


def html(name: str, status: int = 200, **values: Any) -> HTMLResponse:
    return HTMLResponse(
        templates.get_template(name).render(assets=urls(), **values), status_code=status, headers=PAGE_HEADERS
    )


def sign_in_page(request: Request, status: int = 200, problem: str | None = None) -> Response:
    """The sign-in form, with a fresh or the browser's own pre-session CSRF value in its cookie."""
    csrf = cookie.presession(request)
    issuer = getattr(request.app.state, "oidc_issuer", None) if "app" in request.scope else None
    response = html("signin.html", status, csrf=csrf, problem=problem, issuer=issuer)
    cookie.keep(response, request, cookie.PRESESSION, csrf)
    return response


def _session_end(pasted_expires: str | None) -> str:
    """When a session ends: after SESSION_LIFETIME, or when the pasted token expires if that is
    sooner (a sign-in never outlives what signed in)."""
    end = datetime.now(UTC) + cookie.SESSION_LIFETIME
    if pasted_expires is not None:
        end = min(end, datetime.fromisoformat(pasted_expires))
    return end.isoformat()


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=PAGE_HEADERS)


async def form_of(request: Request) -> list[tuple[str, str]]:
    """An ``application/x-www-form-urlencoded`` body, as its pairs; anything else is refused."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise Refused(Response("a form is sent urlencoded", status_code=415))
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise Refused(Response("the form is too large", status_code=413))
    try:
        return parse_qsl(body.decode(), keep_blank_values=True, max_num_fields=2 * MAX_BULK + 50)
    except (UnicodeDecodeError, ValueError):
        raise Refused(Response("the form could not be read", status_code=400)) from None


@dataclass
class Person:
    token: str
    me: dict[str, Any]
    projects: list[dict[str, Any]]
    csrf: str = field(init=False)

    def __post_init__(self) -> None:
        self.csrf = cookie.csrf_for(self.token)

    def project(self, wanted: str | None) -> dict[str, Any] | None:
        for project in self.projects:
            if project["id"] == wanted:
                return project
        return self.projects[0] if self.projects else None


class Inbox:
    def __init__(self, api: Api) -> None:
        self.api = api

    # --- who is here ------------------------------------------------------------------------------

    async def person(self, request: Request) -> Person:
        """The signed-in human, or Refused with the sign-in page (the cookie dropped when it is no good)."""
        session = cookie.signed_in(request)
        if session is None:
            raise Refused(sign_in_page(request))
        token, named = session
        answer = await self.api.run(token, ME)
        refusal = self._refusal(answer) or self._not_a_session(answer, named)
        if refusal is not None:
            response = sign_in_page(request, *refusal)
            cookie.forget(response, request, cookie.SESSION)
            raise Refused(response)
        assert answer.data is not None
        return Person(token, answer.data["me"], answer.data["projects"])

    @staticmethod
    def _not_a_session(answer: Outcome, named: str | None) -> tuple[int, str] | None:
        """Why the cookie is not an inbox session (issue 21), or None: the cookie holds only the token
        a sign-in minted, under its own id, and that lasts at most ``SESSION_LIFETIME``. A person's
        API token set as the cookie by hand is refused, so that a copy of the cookie is never worth
        a long-lived token and signing out always revokes what the cookie holds."""
        assert answer.data is not None
        current = answer.data.get("currentToken") or {}
        expires = current.get("expiresAt")
        created = current.get("createdAt")
        lasts = (
            datetime.fromisoformat(expires) - datetime.fromisoformat(created) if expires and created else None
        )
        # A minute of slack: the sign-in names the end by this process's clock, the database the start.
        if (
            named != current.get("id")
            or lasts is None
            or lasts > cookie.SESSION_LIFETIME + timedelta(minutes=1)
        ):
            return 401, "That cookie holds no inbox session; sign in with your token."
        return None

    @staticmethod
    def _refusal(answer: Outcome) -> tuple[int, str] | None:
        """Why this answer to ``me`` lets nobody in (the status to answer, what to say), or None."""
        if "UNAUTHENTICATED" in answer.codes():
            return 401, "That token is unknown, revoked or expired."
        if not answer.ok or answer.data is None:
            return 503, "The token could not be checked; try again."
        if answer.data["me"]["kind"] != "HUMAN":
            name = answer.data["me"]["name"]
            return 403, (
                f"That token belongs to an agent ({name}). The inbox is for people: only a human"
                " confirms, settles and decides."
            )
        return None

    # --- sign-in and sign-out ---------------------------------------------------------------------

    async def sign_in(self, request: Request) -> Response:
        try:
            form = dict(await form_of(request))
        except Refused as refused:
            return refused.response
        if not cookie.sent_with(request, form, request.cookies.get(cookie.PRESESSION)):
            return sign_in_page(request, 403, "The form expired or came from another site; sign in again.")
        token = pasted_token(form.get("token", ""))
        if not token:
            return sign_in_page(request, 400, "token: paste your bearer token.")
        answer = await self.api.run(token, SIGNING_IN)
        refusal = self._refusal(answer)
        if refusal is not None:
            return sign_in_page(request, *refusal)
        assert answer.data is not None
        until = _session_end(answer.data["currentToken"]["expiresAt"])
        opened = await self.api.run(token, OPEN_SESSION, {"me": answer.data["me"]["id"], "until": until})
        if not opened.ok or opened.data is None:
            return sign_in_page(request, 503, "The session could not be opened; try again.")
        made = opened.data["createToken"]
        response = see_other(cookie.PATH)
        cookie.keep(
            response, request, cookie.SESSION, cookie.session_value(made["token"], made["issued"]["id"])
        )
        cookie.forget(response, request, cookie.PRESESSION)
        return response

    async def sign_out(self, request: Request) -> Response:
        try:
            form = dict(await form_of(request))
        except Refused as refused:
            return refused.response
        session = cookie.signed_in(request)
        if session is None or not cookie.sent_with(request, form, cookie.csrf_for(session[0])):
            return Response("the form expired or came from another site", status_code=403)
        token = session[0]
        # The session's token ends with the session: a copy of the cookie is worth nothing now.
        # Exactly the token the cookie authenticates with, whatever id the cookie names.
        presented = await self.api.run(token, PRESENTED)
        if presented.ok and presented.data is not None:
            await self.api.run(token, CLOSE_SESSION, {"id": presented.data["currentToken"]["id"]})
        response = see_other(cookie.PATH)
        cookie.forget(response, request, cookie.SESSION)
        return response

    # --- reading ----------------------------------------------------------------------------------

    async def tabs(self, person: Person, project: dict[str, Any] | None, tab: str) -> dict[str, Any]:
        """What the page shows: every tab's count, the chosen tab's entries, and what failed."""
        if project is None:
            return {"counts": {}, "entries": [], "problems": [], "more": 0}
        token, variables = person.token, {"project": project["id"]}
        listed = {
            "unconfirmedFirst": SHOWN if tab == "unconfirmed" else 1,
            "staleFirst": SHOWN if tab == "stale" else 1,
        }
        reads = [
            self.api.run(token, PROPOSALS, variables),
            self.api.run(token, DISPUTES, variables),
            self.api.run(token, ITEMS, {**variables, **listed}),
            self.api.run(token, REDACTIONS, {**variables, "within": NOTICE}),
        ]
        if tab == "history":
            reads += [self.api.run(token, DECIDED, variables), self.api.run(token, HISTORY, variables)]
        outcomes = await asyncio.gather(*reads)
        problems = [error["message"] for outcome in outcomes for error in outcome.errors]
        if problems:
            return {"counts": {}, "entries": [], "problems": problems, "more": 0}
        proposals_of, disputes_of, items_of, due_of = (outcome.data or {} for outcome in outcomes[:4])
        lists = {
            "proposals": entry.proposals(proposals_of),
            "disputes": entry.disputes(disputes_of),
            "unconfirmed": entry.unconfirmed(items_of["unconfirmed"]["nodes"]),
            "stale": entry.stale(items_of["stale"]["nodes"]),
            "redactions": entry.redactions(due_of),
        }
        counts = {name: len(found) for name, found in lists.items()}
        counts.update(
            unconfirmed=items_of["unconfirmed"]["totalCount"], stale=items_of["stale"]["totalCount"]
        )
        if tab == "history":
            lists["history"] = entry.history({**(outcomes[4].data or {}), **(outcomes[5].data or {})})
        chosen = lists.get(tab, [])
        if tab in ("unconfirmed", "stale"):
            more = max(0, counts[tab] - len(chosen))  # the API counted them all, and listed SHOWN
        else:
            more = max(0, len(chosen) - SHOWN)
        return {"counts": counts, "entries": chosen, "problems": problems, "more": more}

    def _values(self, person: Person, tab: str | None, project_id: str | None) -> dict[str, Any]:
        chosen = tab if tab in entry.TABS else entry.TABS[0]
        project = person.project(project_id)
        here = {"tab": chosen, "project": project["id"]} if project else {"tab": chosen}
        return {
            "person": person,
            "project": project,
            "tab": chosen,
            "tabs": entry.TABS,
            "titles": entry.TITLES,
            "notice": NOTICE,
            "query": lambda **changes: urlencode({**here, **changes}),
        }

    async def page(self, request: Request) -> Response:
        try:
            person = await self.person(request)
        except Refused as refused:
            return refused.response
        values = self._values(person, request.query_params.get("tab"), request.query_params.get("project"))
        shown = await self.tabs(person, values["project"], values["tab"])
        told = cookie.said(request)  # a plain form's action, redirected here: say it, once
        said, failed = told if told is not None else (None, False)
        response = html("inbox.html", **values, **shown, said=said, failed=failed, oob=False)
        if told is not None:
            cookie.forget(response, request, cookie.SAID)
        return response

    async def panel(self, request: Request) -> Response:
        """The chosen tab alone (and its counts, out of band): what htmx swaps in after a change."""
        try:
            person = await self.person(request)
        except Refused:
            return Response(status_code=401, headers={"HX-Redirect": cookie.PATH})
        values = self._values(person, request.query_params.get("tab"), request.query_params.get("project"))
        shown = await self.tabs(person, values["project"], values["tab"])
        return html("panel.html", **values, **shown, said=None, failed=False, oob=True)

    # --- acting -----------------------------------------------------------------------------------

    async def act(self, request: Request) -> Response:
        try:
            person = await self.person(request)
            form = await form_of(request)
        except Refused as refused:
            if request.headers.get("hx-request"):
                return Response(status_code=401, headers={"HX-Redirect": cookie.PATH})
            return refused.response
        fields = dict(form)
        values = self._values(person, fields.get("tab"), fields.get("project"))
        if not cookie.sent_with(request, fields, person.csrf):
            return Response("the form expired or came from another site; reload the page", status_code=403)
        said, failed = await self._perform(person, form, fields)
        if not request.headers.get("hx-request"):
            # A form sent without htmx (no script yet, or none at all): the page it lands on says it.
            response = see_other(f"{cookie.PATH}?{values['query']()}")
            cookie.say(response, request, said, failed)
            return response
        shown = await self.tabs(person, values["project"], values["tab"])
        return html("panel.html", **values, **shown, said=said, failed=failed, oob=True)

    async def _perform(
        self, person: Person, form: list[tuple[str, str]], fields: dict[str, str]
    ) -> tuple[str, bool]:
        """Run the action the pressed button names: ``verb:id`` for one, ``verb-selected`` for the chosen."""
        pressed = fields.get("action", "")
        verb, _, one = pressed.partition(":")
        if one:
            targets = [self._target(verb, one, fields)]
        elif verb.endswith("-selected") or verb == "resolve-chosen":
            verb = verb.removesuffix("-selected").removesuffix("-chosen")
            targets = self._chosen(verb, form, fields)
        else:
            return "Nothing was done: no action was named.", True
        if verb not in ACTION_WORDS:
            return f"Nothing was done: unknown action {pressed!r}.", True
        if not targets:
            return "Nothing was done: select at least one entry first.", True
        if len(targets) > 1 and verb in ONE_AT_A_TIME:
            return f"Nothing was done: {ACTION_WORDS[verb][0]} one at a time.", True
        if len(targets) > MAX_BULK:
            return f"Nothing was done: at most {MAX_BULK} at once.", True
        if verb == "retire" and not all(target.note for target in targets):
            return "Nothing was done: reason: say why they are retired.", True
        if verb == "resolve" and not all(target.keep for target in targets):
            return "Nothing was done: choose which side to keep.", True
        document, variables = action_document(verb, targets)
        outcome = await self.api.run(person.token, document, variables)
        if not outcome.ok:
            messages = "; ".join(error["message"] for error in outcome.errors)
            return f"Nothing was done: {messages}", True
        done = ACTION_WORDS[verb][1]
        return (f"{done}." if len(targets) == 1 else f"{done}: {len(targets)} entries."), False

    @staticmethod
    def _target(verb: str, ident: str, fields: dict[str, str]) -> Target:
        note = fields.get(f"note:{ident}", "").strip() or None
        return Target(ident, note=note, keep=fields.get(f"keep:{ident}") or None)

    def _chosen(self, verb: str, form: list[tuple[str, str]], fields: dict[str, str]) -> list[Target]:
        if verb == "resolve":
            chosen = [
                name.removeprefix("keep:") for name, value in form if name.startswith("keep:") and value
            ]
        else:
            chosen = [value for name, value in form if name == "selected"]
        note = fields.get("bulk-note", "").strip() or None
        targets = []
        for ident in dict.fromkeys(chosen):
            own = self._target(verb, ident, fields)
            targets.append(Target(ident, note=own.note or note, keep=own.keep))
        return targets

    # --- live -------------------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        """Server-sent events: ``ready`` once listening, then ``raised`` each time a dispute or proposal
        this person can see is raised.

        A stream ends after ``STREAM_SECONDS`` and the browser opens another (``retry``): a server
        that stops waits for open responses to finish, and would otherwise wait for every open
        inbox. The page reads its panel again at each ``ready``, so what was raised between two
        streams is not missed.
        """
        try:
            person = await self.person(request)
        except Refused:
            return Response(status_code=401)
        project = person.project(request.query_params.get("project"))

        async def stream() -> AsyncIterator[str]:
            yield f"retry: {RECONNECT_MILLISECONDS}\n\n"
            raised = self.api.raised(person.token, project["id"] if project else None)
            clock = asyncio.get_running_loop()
            deadline = clock.time() + STREAM_SECONDS
            waiting: asyncio.Future[str] | None = None
            try:
                while (left := deadline - clock.time()) > 0:
                    waiting = waiting or asyncio.ensure_future(anext(raised))
                    done, _ = await asyncio.wait({waiting}, timeout=min(KEEPALIVE_SECONDS, left))
                    if not done:
                        yield ": still here\n\n"
                        continue
                    try:
                        kind = waiting.result()
                    except StopAsyncIteration:
                        return
                    waiting = None
                    yield (
                        "event: ready\ndata: \n\n" if kind == "ready" else f"event: raised\ndata: {kind}\n\n"
                    )
            finally:
                if waiting is not None:
                    waiting.cancel()
                    await asyncio.gather(waiting, return_exceptions=True)
                await raised.aclose()

        headers = {**PAGE_HEADERS, "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


# verb: (how a person says it should be done, what the page says once it is)
ACTION_WORDS = {
    "confirm": ("confirm", "Confirmed"),
    "load-bearing": ("settle", "Made load-bearing"),
    "not-load-bearing": ("settle", "Settled as not load-bearing"),
    "accept": ("accept", "Accepted"),
    "reject": ("reject", "Rejected"),
    "resolve": ("resolve", "Resolved"),
    "verify": ("verify", "Verified"),
    "retire": ("retire", "Retired"),
}
