"""Signing in to the inbox with an OpenID provider (R19), beside the token sign-in.

On only when configured (``config.Oidc``). The flow:

1. ``/auth/login`` sends the browser to the provider with a state, a nonce
   and a PKCE challenge (Authlib). They are kept in the database, each taken
   once (``mneia_sign_in_keep``/``_take``), so any server process can finish
   the sign-in and none can finish it twice; a cookie of its own
   (``mneia_auth``, signed, ``SameSite=Lax`` so that the provider's redirect
   carries it, ``Path=/auth``, ten minutes) ties the callback to the browser
   that began it.
2. ``/auth/callback``: Authlib exchanges the code and validates the ID token
   (signature, issuer, audience, expiry, nonce); the audience must name this
   client, even beside an ``azp``. The person is found by issuer and subject,
   never by email; an open invitation to the email the provider verified
   (``email_verified: true``) is accepted first, once.
3. One workspace: signed in. Several: the person picks one (``/auth/pick``,
   a single-use ticket). None: refused, saying why.

A process serving several regions (``MNEIA_REGIONS``, http.region) signs in
at its default region's application, which looks for the person in every
region it serves, each in its own database: the memberships of all of them
are offered, and the session is opened in the chosen workspace's region,
whose token names it. A region whose database cannot be reached is left
out, and the page says so; nothing is written in a region where the person
has neither an identity nor an invitation.

With the regions' directory (``MNEIA_DIRECTORY_URL``, storage.directory), a
server also finds the person's workspaces in the regions it does not serve,
each served by servers of its own (``mneia serve --region``): it records what
it found in its own regions (the person by a keyed digest of issuer and
subject), and offers a link to sign in at each other region where the person
has workspaces or an open invitation of their verified email (recorded by the
server that created it), at the address that region's servers recorded. The
person signs in there again, with the same provider; names of workspaces in
another region are never shown, as the directory holds none. A directory that
cannot be read leaves those regions out, and the page says so.

Signing in mints a session token for that one actor, exactly as the token
sign-in does (``inbox.cookie``: 12 hours at most, in ``mneia_inbox``), and
the page then moves to the inbox by a ``Refresh`` of its own: a redirect
would still count as the provider's navigation, which a browser does not
send a ``SameSite=Strict`` cookie with. An agent never signs in: no identity
can be linked to one (the database refuses it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
from authlib.integrations.starlette_client import OAuth, OAuthError
from joserfc.errors import JoseError
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from mneia.config import DEFAULT_REGION, Oidc
from mneia.inbox import cookie
from mneia.inbox.page import Refused, form_of, html
from mneia.storage import failures, identity
from mneia.storage.database import transaction
from mneia.storage.directory import Directory, Elsewhere
from mneia.storage.node import Nodes

log = logging.getLogger("mneia.oidc")

PATH = "/auth"
COOKIE = "mneia_auth"
STEP_SECONDS = 600
"""How long a sign-in may take between its steps (the provider's page, the pick)."""
SCOPE = "openid email profile"
_NAME_LIMIT = 200
_PICK = "mneia_pick"
try:  # Authlib's client speaks httpx2 when it is installed, else httpx: either may raise
    import httpx2

    UNREACHABLE: tuple[type[Exception], ...] = (httpx.HTTPError, httpx2.HTTPError)
except ImportError:  # pragma: no cover - depends on what else is installed
    UNREACHABLE = (httpx.HTTPError,)
"""The provider's transport failing (unreachable, refused, timed out): a page that says so, never a 500."""
UNLISTED = "The directory of the other regions could not be reached: their workspaces are not listed."


class _Kept:
    """Authlib's cache for the state, nonce and PKCE verifier: the database, each value taken once."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def get(self, key: str) -> str | None:
        async with transaction(self.engine) as tx:
            return await identity.take(tx, key)

    async def set(self, key: str, value: str, expires: int | None = None) -> None:
        async with transaction(self.engine) as tx:
            await identity.keep(tx, key, value, min(int(expires or STEP_SECONDS), STEP_SECONDS))

    async def delete(self, key: str) -> None:
        await self.get(key)


def _name(claims: dict[str, Any]) -> str:
    """What the person is called: the provider's name, else their username or email's local part."""
    email = claims.get("email")
    for candidate in (
        claims.get("name"),
        claims.get("preferred_username"),
        email.split("@")[0] if isinstance(email, str) else None,
    ):
        if isinstance(candidate, str):
            text = "".join(char for char in " ".join(candidate.split()) if char.isprintable())
            if text:
                return text[:_NAME_LIMIT]
    return "Person"


def _verified_email(claims: dict[str, Any]) -> str | None:
    """The email, only when the provider says it verified it; an invitation is accepted by nothing less."""
    email = claims.get("email")
    if claims.get("email_verified") is True and isinstance(email, str) and email.strip():
        return email.strip().lower()
    return None


def _page(status: int = 200, **values: Any) -> Response:
    values.setdefault("problem", None)
    values.setdefault("memberships", [])
    values.setdefault("csrf", "")
    values.setdefault("signed_in", False)
    values.setdefault("away", None)
    values.setdefault("elsewhere", [])
    values.setdefault("unlisted", None)
    return html("oidc.html", status, **values)


def directory_key(settings: Oidc) -> bytes:
    """The key of the regions' directory's digests (storage.directory.Directory): derived from the
    client's secret, which every region's servers share (one provider client) and the directory's
    database does not hold. A new client secret makes new digests: each person is found again once
    they have signed in at each region with it, and open invitations of before are not found from
    other regions."""
    return hmac.new(settings.client_secret.encode(), b"mneia directory v1", hashlib.sha256).digest()


class SignIn:
    def __init__(
        self,
        settings: Oidc,
        engine: AsyncEngine,
        region: str = DEFAULT_REGION,
        regions: Mapping[str, AsyncEngine] | None = None,
        directory: Directory | None = None,
        nodes: Mapping[str, Nodes] | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.region = region
        self.directory = directory
        # Each region served here that is a Citus cluster: where its workspaces live. The caller's
        # own map, which gains a region found to be a cluster once its database answers.
        self.nodes = nodes if nodes is not None else {}
        # Where a person may have workspaces: this server's region first, then every other served.
        self.regions = {region: engine, **{name: e for name, e in (regions or {}).items() if name != region}}
        oauth = OAuth(cache=_Kept(engine))
        self.client: Any = oauth.register(
            name="mneia",
            client_id=settings.client_id,
            client_secret=settings.client_secret,
            server_metadata_url=settings.issuer.rstrip("/") + "/.well-known/openid-configuration",
            client_kwargs={"scope": SCOPE, "code_challenge_method": "S256"},
        )

    async def login(self, request: Request) -> Response:
        try:
            response: Response = await self.client.authorize_redirect(request, self.settings.redirect_uri)
        except UNREACHABLE:
            return _page(503, problem="The sign-in provider could not be reached; try again.")
        return response

    async def callback(self, request: Request) -> Response:
        claims_options = {
            "iss": {"essential": True, "value": self.settings.issuer},
            "aud": {"essential": True, "value": self.settings.client_id},
        }
        try:
            token = await self.client.authorize_access_token(request, claims_options=claims_options)
        except OAuthError as error:
            if error.error == "mismatching_state":
                problem = "That sign-in was finished already, or took too long; sign in again."
            else:
                problem = f"The provider did not sign you in ({error.error}); sign in again."
            return _page(400, problem=problem)
        except JoseError as error:
            return _page(401, problem=f"The provider's answer cannot be trusted ({error}); sign in again.")
        except UNREACHABLE:
            return _page(503, problem="The sign-in provider could not be reached; try again.")
        claims = token.get("userinfo")
        if not claims:
            return _page(401, problem="The provider sent no ID token; sign in again.")
        issuer, subject = str(claims["iss"]), str(claims["sub"])
        verified = _verified_email(claims)
        found, away = await self._memberships(issuer, subject, verified, _name(claims))
        elsewhere, unlisted = await self._elsewhere(issuer, subject, verified, found, away)
        if not found:
            if elsewhere:
                return _page(elsewhere=elsewhere, away=_away(away) if away else None)
            if away:
                return _page(503, problem=f"{_away(away)} Try again.")
            return _page(
                403,
                problem="No workspace knows you yet. Ask one of its people to invite the email address"
                " your provider verified, then sign in again." + (f" {unlisted}" if unlisted else ""),
            )
        regions = {str(m.workspace_id): region for region, held in found.items() for m in held}
        if len(regions) == 1 and not away and not elsewhere:
            ((workspace_id, region),) = regions.items()
            return await self._open(request, issuer, subject, uuid.UUID(workspace_id), region)
        ticket = secrets.token_urlsafe(32)
        chosen = {"issuer": issuer, "subject": subject, "workspaces": regions}
        async with transaction(self.engine) as tx:
            await identity.keep(tx, f"pick:{ticket}", json.dumps(chosen), STEP_SECONDS)
        request.session[_PICK] = ticket
        memberships = [m for held in found.values() for m in held]
        return _page(
            memberships=memberships,
            csrf=cookie.csrf_for(ticket),
            away=_away(away) if away else None,
            elsewhere=elsewhere,
            unlisted=unlisted,
        )

    async def _elsewhere(
        self,
        issuer: str,
        subject: str,
        verified_email: str | None,
        found: Mapping[str, list[identity.MembershipRecord]],
        away: list[str],
    ) -> tuple[list[Elsewhere], str | None]:
        """Through the directory, if there is one: record the person's memberships in the regions
        served here that answered, and find their workspaces and the open invitations of their
        verified email in the regions not served here; with what the page says when the directory
        could not be reached."""
        if self.directory is None:
            return [], None
        answered = {
            region: [m.workspace_id for m in found.get(region, [])]
            for region in self.regions
            if region not in away
        }
        try:
            return await self.directory.seen(issuer, subject, verified_email, answered, self.regions), None
        except Exception as error:
            # Never a failed sign-in for the directory's sake: away, or not what this server expects
            # (a directory `mneia migrate` has not upgraded), its regions are not listed.
            if not (failures.unavailable(error) or isinstance(error, (OSError, SQLAlchemyError))):
                raise
            log.warning("the regions' directory could not be read at a sign-in: %s", error)
            return [], UNLISTED

    async def _memberships(
        self, issuer: str, subject: str, email: str | None, name: str
    ) -> tuple[dict[str, list[identity.MembershipRecord]], list[str]]:
        """The person's memberships in each region served here that has any, and the regions whose
        database could not be asked."""
        found: dict[str, list[identity.MembershipRecord]] = {}
        away = []
        for region, engine in self.regions.items():
            try:
                if (nodes := self.nodes.get(region)) is not None:
                    held = await identity.sign_in_routed(nodes, issuer, subject, email, name)
                else:
                    async with transaction(engine) as tx:
                        held = await identity.sign_in(tx, issuer, subject, email, name)
            except Exception as error:
                if not failures.unavailable(error):
                    raise
                away.append(region)
                continue
            if held:
                found[region] = held
        return found, away

    async def pick(self, request: Request) -> Response:
        try:
            form = dict(await form_of(request))
        except Refused as refused:
            return refused.response
        ticket = request.session.pop(_PICK, None)
        if not isinstance(ticket, str) or not cookie.sent_with(request, form, cookie.csrf_for(ticket)):
            return _page(403, problem="The form expired or came from another site; sign in again.")
        async with transaction(self.engine) as tx:
            kept = await identity.take(tx, f"pick:{ticket}")
        if kept is None:
            return _page(400, problem="That choice was made already, or took too long; sign in again.")
        chosen = json.loads(kept)
        region = chosen["workspaces"].get(form.get("workspace"))
        if region not in self.regions:
            return _page(400, problem="workspace: choose one of the workspaces listed.")
        issuer, subject = chosen["issuer"], chosen["subject"]
        return await self._open(request, issuer, subject, uuid.UUID(form["workspace"]), region)

    async def _open(
        self, request: Request, issuer: str, subject: str, workspace_id: uuid.UUID, region: str
    ) -> Response:
        """Signed in: a session token for the person's actor of the workspace, minted in its region's
        database and naming that region, in the inbox's cookie."""
        try:
            engine = self.regions[region]
            if (nodes := self.nodes.get(region)) is not None:
                engine = await nodes.engine(workspace_id)  # the token is minted where it binds
            async with transaction(engine) as tx:
                opened = await identity.open_session(
                    tx, issuer, subject, workspace_id, cookie.SESSION_LIFETIME, region
                )
        except Exception as error:
            if not isinstance(error, DBAPIError) and not failures.unavailable(error):
                raise
            opened = None
        if opened is None:
            return _page(403, problem="You cannot sign in to that workspace; sign in again.")
        secret, token_id = opened
        response = _page(signed_in=True)
        # A page of this origin moves on, not a redirect (see the module's docstring).
        response.headers["Refresh"] = f"0; url={cookie.PATH}"
        cookie.keep(response, request, cookie.SESSION, cookie.session_value(secret, str(token_id)))
        return response


def _away(regions: list[str]) -> str:
    named = ", ".join(regions)
    return f"The workspaces of region {named} could not be reached and are not listed."


def _session_secret(settings: Oidc) -> str:
    """Signs ``mneia_auth``: the same in every process, known only to whoever knows the client's secret."""
    return hmac.new(settings.client_secret.encode(), b"mneia oidc session v1", hashlib.sha256).hexdigest()


def routes(
    settings: Oidc | None,
    engine: AsyncEngine,
    region: str = DEFAULT_REGION,
    regions: Mapping[str, AsyncEngine] | None = None,
    directory: Directory | None = None,
    nodes: Mapping[str, Nodes] | None = None,
) -> list[BaseRoute]:
    """``/auth/login``, ``/auth/callback`` and ``/auth/pick``; none when sign-in is not configured.
    ``region``: the server's; ``regions``: every region this process serves, by name, where the
    person is looked for too (http.region.serving); ``directory``: the regions' directory,
    through which the person's workspaces in other regions are found; ``nodes``: of each region
    served here that is a Citus cluster (this one's included), where each of its workspaces lives
    (its invitations are accepted and its session tokens minted there)."""
    if settings is None:
        return []
    sign_in = SignIn(settings, engine, region, regions, directory, nodes)
    return [
        Mount(
            PATH,
            routes=[
                Route("/login", sign_in.login, methods=["GET"]),
                Route("/callback", sign_in.callback, methods=["GET"]),
                Route("/pick", sign_in.pick, methods=["POST"]),
            ],
            middleware=[
                Middleware(
                    SessionMiddleware,
                    secret_key=_session_secret(settings),
                    session_cookie=COOKIE,
                    max_age=STEP_SECONDS,
                    path=PATH,
                    same_site="lax",
                    https_only=settings.public_url.startswith("https://"),
                )
            ],
        )
    ]
