"""R19 through a real OpenID provider: signing in to the inbox with OIDC, end to end.

The provider (tests/oidc.py) serves in a thread of this process over real
HTTP; Mneia runs in process (httpx.ASGITransport) with its sign-in configured
for it, and its Authlib client talks to the provider over the network as it
would to any. Each test follows the redirects itself, hop by hop, with the
client of the host each one names, as a browser would.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import Oidc, Settings
from mneia.inbox import cookie
from mneia.storage.node import Nodes
from tests.graphql import Api, Who
from tests.inbox import CSRF, Browser
from tests.oidc import (
    CLIENT_ID,
    MNEIA,
    QUIET,
    Provider,
    follow,
    person,
    provider,
    session_token,
    set_cookies,
    sign_in,
)
from tests.support import rows

pytestmark = pytest.mark.filterwarnings(QUIET)

INVITE = "mutation($e: String!) { createInvitation(email: $e) { id } }"


@pytest.fixture(scope="module")
def idp() -> Iterator[Provider]:
    with provider() as served:
        yield served


@asynccontextmanager
async def mneia_for(
    engine: AsyncEngine, issuer: str, nodes: Nodes | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """Mneia with sign-in through ``issuer``, and a browser's cookie jar on it; ``nodes``: on Citus
    (``MNEIA_TEST_CITUS``), routed as ``mneia serve`` routes there."""
    oidc = Oidc(issuer=issuer, client_id=CLIENT_ID, client_secret="s3cret", public_url=MNEIA)
    app = create_app(
        engine,
        dispose_engine=False,
        settings=dataclasses.replace(Settings.from_env(), oidc=oidc),
        nodes=nodes,
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=MNEIA) as client:
        yield client


@pytest.fixture
async def mneia(engine: AsyncEngine, idp: Provider, nodes: Nodes | None) -> AsyncIterator[httpx.AsyncClient]:
    async with mneia_for(engine, idp.url, nodes) as client:
        yield client


async def people(admin_engine: AsyncEngine) -> tuple[int, int]:
    (found,) = await rows(
        admin_engine, "SELECT (SELECT count(*) FROM identities) AS i, (SELECT count(*) FROM actors) AS a"
    )
    return found["i"], found["a"]


# --- Signing in --------------------------------------------------------------------------------


async def test_r19_sign_in_end_to_end_through_an_invitation_then_by_subject(
    api: Api, admin_engine: AsyncEngine, idp: Provider, mneia: httpx.AsyncClient
) -> None:
    ws, admin = await api.bootstrap("admin")
    subject, email = person(idp, "robin", name="Robin Reviewer")
    await api.run(admin.token, INVITE, e=email)

    done = await sign_in(mneia, subject)
    assert done.status_code == 200, done.text
    assert done.headers["refresh"] == "0; url=/inbox"
    (header,) = [h for h in done.headers.get_list("set-cookie") if h.startswith(f"{cookie.SESSION}=")]
    assert (
        "httponly" in header.lower()
        and "samesite=strict" in header.lower()
        and "path=/inbox" in header.lower()
    )
    token = session_token(done)
    # The session is the person's new human actor of the workspace, for 12 hours at most.
    me = await api.run(
        token,
        "{ me { id name kind identity { issuer displayName } } workspace { id }"
        " currentToken { createdAt expiresAt } }",
    )
    assert me["me"]["kind"] == "HUMAN" and me["me"]["name"] == "Robin Reviewer"
    assert me["me"]["identity"] == {"issuer": idp.url, "displayName": "Robin Reviewer"}
    assert me["workspace"]["id"] == ws
    # The inbox opens with that cookie.
    inbox = await mneia.get("/inbox")
    assert inbox.status_code == 200 and "Signed in as <strong>Robin Reviewer</strong>" in inbox.text
    # Signing out revokes the session's token, as for the token sign-in.
    browser = Browser(mneia)
    signed_out = await browser.post("/inbox/sign-out", {"csrf": await browser.csrf()})
    assert signed_out.status_code == 303
    assert (await api.post(token, "{ me { id } }"))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    # The provider now gives another email: the same person is found by issuer and subject.
    idp.person(subject, email="robin@elsewhere.example", email_verified=True, name="Robin Reviewer")
    again = await sign_in(mneia, subject)
    assert again.status_code == 200, again.text
    second = await api.run(session_token(again), "{ me { id } }")
    assert second["me"]["id"] == me["me"]["id"]
    (invitation,) = await rows(
        admin_engine,
        "SELECT accepted_actor_id FROM invitations WHERE workspace_id = CAST(:w AS uuid)",
        w=ws,
    )
    assert str(invitation["accepted_actor_id"]) == me["me"]["id"]


async def test_r19_no_invitation_no_sign_in(
    api: Api, admin_engine: AsyncEngine, idp: Provider, mneia: httpx.AsyncClient
) -> None:
    _, admin = await api.bootstrap("admin")
    before = await people(admin_engine)
    stranger, _ = person(idp, "stranger")
    refused = await sign_in(mneia, stranger)
    assert refused.status_code == 403 and "No workspace knows you yet" in refused.text
    assert cookie.SESSION not in set_cookies(refused)
    # An invitation to an email the provider did not verify accepts nobody either.
    unverified, email = person(idp, "unverified", email_verified=False)
    await api.run(admin.token, INVITE, e=email)
    refused = await sign_in(mneia, unverified)
    assert refused.status_code == 403 and cookie.SESSION not in set_cookies(refused)
    assert await people(admin_engine) == before


async def test_r19_an_id_token_for_another_audience_is_refused(
    api: Api, admin_engine: AsyncEngine, idp: Provider, mneia: httpx.AsyncClient
) -> None:
    _, admin = await api.bootstrap("admin")
    subject, email = person(idp, "aud")
    await api.run(admin.token, INVITE, e=email)
    before = await people(admin_engine)
    # Issued to another client with us as the authorized party beside it (Authlib alone lets that
    # through: its own check is the azp's); then to another client alone.
    for tampered in ({"aud": ["another-client"], "azp": CLIENT_ID}, {"aud": "another-client"}):
        idp.tamper = tampered
        try:
            refused = await sign_in(mneia, subject)
        finally:
            idp.tamper = {}
        assert refused.status_code == 401 and "cannot be trusted" in refused.text, refused.text
        assert "aud" in refused.text
        assert cookie.SESSION not in set_cookies(refused)
    # Another issuer's token, signed with the provider's key, is refused too.
    idp.tamper = {"iss": "https://impostor.example"}
    try:
        refused = await sign_in(mneia, subject)
    finally:
        idp.tamper = {}
    assert refused.status_code == 401 and "iss" in refused.text
    assert await people(admin_engine) == before
    # Control: untampered, the same person signs in.
    assert (await sign_in(mneia, subject)).status_code == 200


async def test_r19_an_expired_id_token_is_refused(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine, nodes: Nodes | None
) -> None:
    with provider(max_age=timedelta(minutes=-10)) as stale:
        _, admin = await api.bootstrap("admin")
        subject, email = person(stale, "late")
        await api.run(admin.token, INVITE, e=email)
        before = await people(admin_engine)
        async with mneia_for(engine, stale.url, nodes) as mneia:
            refused = await sign_in(mneia, subject)
        assert refused.status_code == 401 and "exp" in refused.text, refused.text
        assert cookie.SESSION not in set_cookies(refused)
        assert await people(admin_engine) == before


async def test_r19_a_replayed_state_is_refused_before_the_provider_is_asked(
    api: Api, idp: Provider, mneia: httpx.AsyncClient
) -> None:
    _, admin = await api.bootstrap("admin")
    subject, email = person(idp, "replay")
    await api.run(admin.token, INVITE, e=email)
    form = await follow(mneia, await mneia.get("/auth/login"))
    async with httpx.AsyncClient() as outside:
        approved = await outside.post(str(form.url), data={"sub": subject})
    callback = approved.headers["location"]
    jar = httpx.Cookies(mneia.cookies)  # the browser's cookies before the callback: a copy to replay with
    asked = len(idp.token_requests)
    assert (await mneia.get(callback)).status_code == 200
    assert len(idp.token_requests) == asked + 1
    # The same callback again, from this browser, and from a copy of its cookies taken before.
    mneia.cookies.delete(cookie.SESSION)
    for cookies in (mneia.cookies, jar):
        mneia.cookies = httpx.Cookies(cookies)
        replayed = await mneia.get(callback)
        assert replayed.status_code == 400 and "finished already" in replayed.text
        assert cookie.SESSION not in set_cookies(replayed)
    assert len(idp.token_requests) == asked + 1, "a replayed state never reaches the provider"
    # A callback in a browser that did not start the sign-in: refused as well.
    async with mneia_for_same(mneia) as other:
        assert (await other.get(callback)).status_code == 400


@asynccontextmanager
async def mneia_for_same(mneia: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """Another browser (an empty cookie jar) on the same application."""
    async with httpx.AsyncClient(transport=mneia._transport, base_url=MNEIA) as client:
        yield client


async def test_r19_one_person_in_two_workspaces_picks_one_and_each_session_is_bound_to_its_actor(
    api: Api, admin_engine: AsyncEngine, idp: Provider, mneia: httpx.AsyncClient
) -> None:
    w1, admin1 = await api.bootstrap("ada-one")
    w2, admin2 = await api.bootstrap("bea-two")
    w3, _ = await api.bootstrap("cy-three")
    names = {}
    for ws in (w1, w2, w3):
        (found,) = await rows(admin_engine, "SELECT name FROM workspaces WHERE id = CAST(:w AS uuid)", w=ws)
        names[ws] = found["name"]
    subject, email = person(idp, "sam")
    for admin in (admin1, admin2):
        await api.run(admin.token, INVITE, e=email)
    # W2's own people, whose names W1 must never learn.
    await api.actor(admin2.token, "AGENT", "w2-secret-agent")

    sessions: dict[str, Who] = {}
    for chosen in (w2, w1):
        picking = await sign_in(mneia, subject)
        assert picking.status_code == 200 and cookie.SESSION not in set_cookies(picking)
        assert names[w1] in picking.text and names[w2] in picking.text and names[w3] not in picking.text
        csrf = CSRF.search(picking.text)
        assert csrf
        form = {"csrf": csrf.group(1), "workspace": chosen}
        headers = {"Origin": MNEIA, "Sec-Fetch-Site": "same-origin"}
        # Not a workspace of the list: refused, and the pick is spent.
        if chosen == w2:
            wrong = await mneia.post("/auth/pick", data={**form, "workspace": w3}, headers=headers)
            assert wrong.status_code == 400 and cookie.SESSION not in set_cookies(wrong)
            picking = await sign_in(mneia, subject)
            csrf = CSRF.search(picking.text)
            assert csrf
            form["csrf"] = csrf.group(1)
        # Another site's form is refused.
        forged = await mneia.post("/auth/pick", data=form, headers={"Origin": "https://evil.example"})
        assert forged.status_code == 403
        picking = await sign_in(mneia, subject)
        csrf = CSRF.search(picking.text)
        assert csrf
        form["csrf"] = csrf.group(1)
        picked = await mneia.post("/auth/pick", data=form, headers=headers)
        assert picked.status_code == 200, picked.text
        token = session_token(picked)
        me = await api.run(token, "{ me { id } workspace { id } }")
        assert me["workspace"]["id"] == chosen
        sessions[chosen] = Who(me["me"]["id"], token)
        # The same pick again: spent.
        assert (await mneia.post("/auth/pick", data=form, headers=headers)).status_code == 403

    assert sessions[w1].id != sessions[w2].id
    # Each session is its actor's, and workspace W1 never learns W2's actors or names.
    w1_reads = await api.run(
        sessions[w1].token,
        "{ me { id name } workspace { name } invitations { email invitedBy { name } acceptedBy { name } } }",
    )
    assert w1_reads["me"]["id"] == sessions[w1].id
    assert (
        "bea-two" not in str(w1_reads)
        and "w2-secret-agent" not in str(w1_reads)
        and names[w2] not in str(w1_reads)
    )
    assert sessions[w2].id not in str(w1_reads)
    # The person's own memberships name both, and only both.
    mine = await api.run(sessions[w1].token, "{ myMemberships { workspace { id name } actor { id } } }")
    assert {(m["workspace"]["id"], m["actor"]["id"]) for m in mine["myMemberships"]} == {
        (w1, sessions[w1].id),
        (w2, sessions[w2].id),
    }


async def test_a_provider_that_cannot_be_reached_is_said_so_not_an_error(
    engine: AsyncEngine, nodes: Nodes | None
) -> None:
    """Sign-in through a provider nobody answers for (a closed port): a page saying so (503), as
    Authlib raises it from httpx2 or httpx, whichever it found (``oidc.UNREACHABLE``); it was an
    internal error with httpx2 installed."""
    async with mneia_for(engine, "http://127.0.0.1:9", nodes) as mneia:
        login = await mneia.get("/auth/login")
    assert login.status_code == 503 and "could not be reached" in login.text, login.text


async def test_sign_in_with_a_provider_is_off_unless_configured(http: httpx.AsyncClient) -> None:
    """The shared application (no MNEIA_OIDC_* in the environment): no /auth routes, no link."""
    assert (await http.get("/auth/login")).status_code == 404
    page = await http.get("/inbox")
    assert page.status_code == 200 and "/auth/login" not in page.text


async def test_the_sign_in_page_offers_the_provider_when_configured(
    idp: Provider, mneia: httpx.AsyncClient
) -> None:
    page = await mneia.get("/inbox")
    assert re.search(r'href="/auth/login"', page.text) and idp.url in page.text
