"""The review inbox over HTTP: sign-in, the cookie, CSRF, what each tab lists, and what each action writes.

Every action goes through the API's schema with the person's token, so what
it may do is what the API lets that token do: these tests check the answers
through the API itself and, where a refusal must write nothing, the whole
database. The browser tests (tests/test_inbox_browser.py) drive the same
page in a real Chromium.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import escape
from sqlalchemy.ext.asyncio import AsyncEngine

from graphql import parse
from mneia.app import create_app
from mneia.inbox import duration, entry
from mneia.inbox import page as inbox_page
from mneia.inbox.assets import CONTENT_SECURITY_POLICY
from mneia.inbox.cookie import csrf_for
from mneia.inbox.operation import DECIDED, HISTORY, ITEMS, SHOWN, Target, action_document
from mneia.inbox.operation import DISPUTES as DISPUTES_READ
from mneia.inbox.operation import PROPOSALS as PROPOSALS_READ
from mneia.resolvers.request.cost import measure
from mneia.resolvers.request.limit import LIMITS, refusals
from mneia.resolvers.root import build_schema
from tests.graphql import Api, World
from tests.inbox import DISPUTES, PROPOSALS, RENDERED, Browser, review
from tests.live import uvicorn_serving
from tests.support import RETIRE_ITEM, SUPERSEDE, changed_tables, database_state, supersession
from tests.test_api_tokens import CREATE_TOKEN


@pytest.fixture
async def browser(engine: AsyncEngine) -> AsyncIterator[Browser]:
    """A fresh cookie jar on the application, as one person's browser."""
    app = create_app(engine, dispose_engine=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mneia.test") as client:
        yield Browser(client)


def set_cookie(response: httpx.Response, name: str) -> str:
    (header,) = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")]
    return header


async def test_inbox_sign_in_page_is_strict(browser: Browser) -> None:
    """The page names only this origin's files, under a policy without inline script, eval or framing."""
    page = await browser.client.get("/inbox")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY and "'unsafe-eval'" not in CONTENT_SECURITY_POLICY
    assert page.headers["cache-control"] == "no-store"
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(source.startswith("/inbox/static/") for source in sources), sources
    assert "<script>" not in page.text and "<style" not in page.text and " style=" not in page.text
    for source in sources:
        served = await browser.client.get(source)
        assert served.status_code == 200, source
        assert served.headers["cache-control"] == "public, max-age=31536000, immutable"


TOKENS = "query($me: ID!) { tokens(actorId: $me) { id expiresAt revokedAt active } }"


async def test_r3_a_human_token_opens_a_session_of_its_own_in_an_httponly_strict_cookie(
    browser: Browser, api: Api, world: World
) -> None:
    """The pasted token signs in and is not kept: the cookie holds a token minted for the session,
    the person's own, expiring after SESSION_LIFETIME."""
    before = {t["id"] for t in (await api.run(world.human.token, TOKENS, me=world.human.id))["tokens"]}
    signed = await browser.sign_in(world.human.token)
    assert signed.status_code == 303 and signed.headers["location"] == "/inbox"
    session = set_cookie(signed, "mneia_inbox")
    for attribute in ("httponly", "samesite=strict", "path=/inbox"):
        assert attribute in session.lower(), session
    assert world.human.token not in session, "the pasted token never reaches the browser"
    secret, token_id = session_of(browser)
    assert (await api.run(secret, "{ me { id } }"))["me"]["id"] == world.human.id
    tokens = {t["id"]: t for t in (await api.run(world.human.token, TOKENS, me=world.human.id))["tokens"]}
    assert set(tokens) - before == {token_id}
    lasts = datetime.fromisoformat(tokens[token_id]["expiresAt"]) - datetime.now(UTC)
    assert timedelta(hours=11) < lasts <= timedelta(hours=12), lasts
    page = await browser.client.get("/inbox")
    assert page.status_code == 200
    assert "Signed in as <strong>alice</strong>" in page.text
    assert world.human.token not in page.text and secret not in page.text, "no token returns in a page"
    assert csrf_for(secret) in page.text


def session_of(browser: Browser) -> tuple[str, str]:
    """The session token's secret and id, from the browser's cookie."""
    value = browser.client.cookies.get("mneia_inbox", domain="mneia.test", path="/inbox")
    assert value, "signed in"
    secret, _, token_id = value.strip('"').rpartition(".")
    return secret, token_id


async def test_r3_signing_out_revokes_the_sessions_token_and_not_the_pasted_one(
    browser: Browser, api: Api, world: World
) -> None:
    """A copy of the cookie taken before sign-out opens nothing after it; the person's own token,
    pasted to sign in, still works everywhere."""
    await browser.sign_in(world.human.token)
    copied = browser.client.cookies.get("mneia_inbox", domain="mneia.test", path="/inbox")
    secret, _ = session_of(browser)
    signed_out = await browser.post("/inbox/sign-out", {"csrf": await browser.csrf()})
    assert signed_out.status_code == 303
    refused = await api.post(secret, "{ me { id } }")
    assert refused["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert copied is not None
    browser.client.cookies.set("mneia_inbox", copied, domain="mneia.test", path="/inbox")
    page = await browser.client.get("/inbox")
    assert page.status_code == 401 and "Signed in as" not in page.text
    assert (await api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id


async def test_r3_an_agent_token_cannot_sign_in(browser: Browser, world: World) -> None:
    """Actor kind comes from the record (R3): an agent's valid token is refused at the door."""
    refused = await browser.sign_in(world.agent.token)
    assert refused.status_code == 403
    assert "belongs to an agent (claude-code)" in refused.text
    assert not [h for h in refused.headers.get_list("set-cookie") if h.startswith("mneia_inbox=")]
    assert "Signed in as" not in (await browser.client.get("/inbox")).text


async def test_r3_an_agent_cookie_set_by_hand_is_refused_and_dropped(browser: Browser, world: World) -> None:
    browser.client.cookies.set("mneia_inbox", world.agent.token, domain="mneia.test", path="/inbox")
    page = await browser.client.get("/inbox")
    assert page.status_code == 403 and "belongs to an agent" in page.text
    assert (
        'mneia_inbox=""' in set_cookie(page, "mneia_inbox")
        or "max-age=0" in set_cookie(page, "mneia_inbox").lower()
    )


async def test_issue_21_a_persons_api_token_set_as_the_cookie_opens_nothing(
    browser: Browser, api: Api, world: World
) -> None:
    """A human's raw API token worked as the inbox cookie, and signing out then revoked nothing.
    Only a token a sign-in minted, under its own id, opens a session; the cookie is dropped."""
    spare = (await api.run(world.human.token, CREATE_TOKEN, a=world.human.id))["createToken"]
    for value in (world.human.token, f"{world.human.token}.{spare['issued']['id']}", spare["token"]):
        browser.client.cookies.set("mneia_inbox", value, domain="mneia.test", path="/inbox")
        page = await browser.client.get("/inbox")
        assert page.status_code == 401 and "holds no inbox session" in page.text, value
        assert "Signed in as" not in page.text
        assert (
            'mneia_inbox=""' in set_cookie(page, "mneia_inbox")
            or "max-age=0" in set_cookie(page, "mneia_inbox").lower()
        )
    assert (await api.run(world.human.token, "{ me { id } }"))["me"]["id"] == world.human.id


async def test_issue_21_signing_out_revokes_exactly_the_token_the_cookie_holds(
    browser: Browser, api: Api, world: World
) -> None:
    """Sign-out revoked the token id written in the cookie, not the token it authenticates with: a
    cookie naming another of the person's tokens revoked that one and left the session's alive."""
    await browser.sign_in(world.human.token)
    secret, _ = session_of(browser)
    spare = (await api.run(world.human.token, CREATE_TOKEN, a=world.human.id))["createToken"]
    forged = f"{secret}.{spare['issued']['id']}"
    browser.client.cookies.set("mneia_inbox", forged, domain="mneia.test", path="/inbox")
    signed_out = await browser.post("/inbox/sign-out", {"csrf": csrf_for(secret)})
    assert signed_out.status_code == 303
    refused = await api.post(secret, "{ me { id } }")
    assert refused["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await api.run(spare["token"], "{ me { id } }"))["me"]["id"] == world.human.id


async def test_inbox_unknown_token_and_missing_csrf_are_refused(browser: Browser, world: World) -> None:
    assert (await browser.sign_in("mneia_not-a-token")).status_code == 401
    csrf = await browser.csrf()
    forged = await browser.post("/inbox/sign-in", {"csrf": "guess", "token": world.human.token})
    assert forged.status_code == 403
    elsewhere = await browser.post(
        "/inbox/sign-in", {"csrf": csrf, "token": world.human.token}, Origin="https://evil.example"
    )
    assert elsewhere.status_code == 403
    cross_site = await browser.post(
        "/inbox/sign-in", {"csrf": csrf, "token": world.human.token}, **{"Sec-Fetch-Site": "cross-site"}
    )
    assert cross_site.status_code == 403
    assert "Signed in as" not in (await browser.client.get("/inbox")).text


async def test_r14_an_action_without_its_csrf_token_writes_nothing(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    before = await database_state(admin_engine)
    form = {"tab": "unconfirmed", "project": world.project_id, "action": f"confirm:{made.sure}"}
    assert (await browser.post("/inbox/act", {**form, "csrf": "0" * 64})).status_code == 403
    assert (await browser.post("/inbox/act", form)).status_code == 403
    other_site = await browser.post(
        "/inbox/act", {**form, "csrf": await browser.csrf()}, Origin="https://evil.example"
    )
    assert other_site.status_code == 403
    assert changed_tables(before, await database_state(admin_engine)) == set()


async def test_r4_every_entry_shows_its_rendered_line(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """Each tab shows an item's authority exactly as the API's ``rendered`` does (R4)."""
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    expected = {
        "proposals": [made.ruling, made.suggested],
        "disputes": [made.contested, made.contradiction],
        "unconfirmed": [made.suggested, made.sure, made.unsure],
        "stale": [made.stale],
    }
    for tab, ids in expected.items():
        page = await browser.client.get(f"/inbox?tab={tab}&project={world.project_id}")
        assert page.status_code == 200, tab
        for ident in ids:
            rendered = (await api.run(world.human.token, RENDERED, i=ident))["item"]["rendered"]
            assert f"<code>{escape(rendered)}</code>" in page.text, (tab, rendered)
    unconfirmed = (await browser.client.get(f"/inbox?tab=unconfirmed&project={world.project_id}")).text
    assert "[agent-asserted · claude-code 1.0.98 ·" in html.unescape(unconfirmed)
    assert "[human-confirmed" not in html.unescape(unconfirmed), "an agent's guess never renders as a ruling"


async def test_inbox_unconfirmed_lists_load_bearing_suggestions_first_then_by_confidence(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=unconfirmed&project={world.project_id}")).text
    order = re.findall(r'data-entry="([^"]+)"', page)
    # The suggested constraint (0.5), then 0.9, 0.7 (the dispute's side is DISPUTED, not listed), 0.4.
    assert order == [made.suggested, made.sure, made.unsure]


async def test_inbox_proposals_show_a_diff_and_a_token_cost(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=proposals&project={world.project_id}")).text
    diff = page.split('<dl class="diff">')[1].split("</dl>")[0]
    now, proposed = re.findall(r"<dd>(.*?)</dd>", diff)
    assert now == "Deploys happen on Tuesdays after the 10:00 stand-up"
    assert proposed == "Deploys happen on Tuesdays <ins>and Thursdays </ins>after the 10:00 stand-up"
    assert "Reason: two deploy days halve the queue" in page
    rendered = (await api.run(world.human.token, RENDERED, i=made.suggested))["item"]["rendered"]
    assert f"Costs <strong>{entry.slice_cost(rendered)} tokens</strong> (cl100k_base) in every slice" in page


SUGGEST = "mutation($i: ID!, $r: String) { suggestLoadBearing(id: $i, reason: $r) { id } }"


async def test_r5_a_suggestion_without_a_reason_shows_no_reason_line(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """A load-bearing suggestion (R5) made without a reason says nothing of one; one with a reason says it."""
    made = await review(api, admin_engine, world)
    reasoned = await api.assert_item(
        world.agent.token, projectId=world.project_id, kind="CONSTRAINT", statement="Refunds are idempotent"
    )
    said = await api.run(world.agent.token, SUGGEST, i=reasoned["id"], r="double refunds cost money")
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=proposals&project={world.project_id}")).text
    articles = {
        found.group(1): found.group(0)
        for found in re.finditer(r'<article class="entry"[^>]*data-entry="([^"]+)".*?</article>', page, re.S)
    }
    assert 'class="reason"' not in articles[made.suggestion]
    assert "Reason: double refunds cost money" in articles[said["suggestLoadBearing"]["id"]]
    assert "Reason: two deploy days halve the queue" in articles[made.supersession]
    assert "none given" not in page


async def test_r5_r7_accepting_a_proposal_with_a_note_goes_through_the_api(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    done = await browser.act(
        "proposals",
        world.project_id,
        f"accept:{made.supersession}",
        **{f"note:{made.supersession}": "agreed in standup"},
    )
    assert done.status_code == 200 and "Accepted." in done.text
    assert 'id="tabs"' in done.text and 'hx-swap-oob="true"' in done.text, "the counts come along"
    proposals = {
        p["id"]: p for p in (await api.run(world.human.token, PROPOSALS, p=world.project_id))["proposals"]
    }
    assert proposals[made.supersession]["status"] == "ACCEPTED"
    assert proposals[made.supersession]["decisionNote"] == "agreed in standup"
    assert (await api.run(world.human.token, RENDERED, i=made.ruling))["item"]["status"] == "SUPERSEDED"


async def test_inbox_confirmations_and_acceptances_are_one_at_a_time(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    before = await database_state(admin_engine)
    csrf = await browser.csrf()
    bulk = [
        ("csrf", csrf),
        ("tab", "unconfirmed"),
        ("project", world.project_id),
        ("action", "confirm-selected"),
        ("selected", made.sure),
        ("selected", made.unsure),
    ]
    refused = await browser.post("/inbox/act", bulk, **{"HX-Request": "true"})
    assert "Nothing was done: confirm one at a time." in refused.text
    accept = [(k, "accept-selected" if k == "action" else v) for k, v in bulk]
    assert "one at a time" in (await browser.post("/inbox/act", accept, **{"HX-Request": "true"})).text
    assert changed_tables(before, await database_state(admin_engine)) == set()


async def test_r8_a_dispute_has_no_default_side_and_resolves_only_with_one_chosen(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=disputes&project={world.project_id}")).text
    assert page.count('type="radio"') == 2 and "checked" not in re.sub(r'id="shortcuts" checked', "", page)
    before = await database_state(admin_engine)
    unchosen = await browser.act("disputes", world.project_id, f"resolve:{made.dispute}")
    assert "choose which side to keep" in unchosen.text
    assert changed_tables(before, await database_state(admin_engine)) == set()
    done = await browser.act(
        "disputes", world.project_id, f"resolve:{made.dispute}", **{f"keep:{made.dispute}": made.contested}
    )
    assert "Resolved." in done.text
    (dispute,) = (await api.run(world.human.token, DISPUTES, p=world.project_id))["disputes"]
    assert dispute["status"] == "RESOLVED" and dispute["keptItem"]["id"] == made.contested
    assert (await api.run(world.human.token, RENDERED, i=made.contradiction))["item"]["status"] == "RETIRED"


async def test_r14_a_bulk_action_is_one_transaction(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """Retiring three where one is another workspace's (NOT_FOUND to this person) retires none."""
    made = await review(api, admin_engine, world)
    stranger = await api.world()
    elsewhere = await api.assert_item(stranger.human.token, projectId=stranger.project_id, statement="theirs")
    await browser.sign_in(world.human.token)
    before = await database_state(admin_engine)
    csrf = await browser.csrf()
    form = [
        ("csrf", csrf),
        ("tab", "stale"),
        ("project", world.project_id),
        ("action", "retire-selected"),
        ("bulk-note", "out of date"),
        ("selected", made.stale),
        ("selected", made.sure),
        ("selected", elsewhere["id"]),
    ]
    failed = await browser.post("/inbox/act", form, **{"HX-Request": "true"})
    assert "Nothing was done:" in failed.text and f"item {elsewhere['id']} not found" in failed.text
    assert changed_tables(before, await database_state(admin_engine)) == set()
    done = await browser.post("/inbox/act", form[:-1], **{"HX-Request": "true"})
    assert "Retired: 2 entries." in done.text
    for ident in (made.stale, made.sure):
        assert (await api.run(world.human.token, RENDERED, i=ident))["item"]["status"] == "RETIRED"


async def test_inbox_verify_in_bulk_and_retire_needs_a_reason(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    before = await database_state(admin_engine)
    csrf = await browser.csrf()
    base = [("csrf", csrf), ("tab", "stale"), ("project", world.project_id), ("selected", made.stale)]
    unreasoned = await browser.post(
        "/inbox/act", [*base, ("action", "retire-selected")], **{"HX-Request": "true"}
    )
    assert "reason: say why" in unreasoned.text
    assert changed_tables(before, await database_state(admin_engine)) == set()
    verified = await browser.post(
        "/inbox/act", [*base, ("action", "verify-selected")], **{"HX-Request": "true"}
    )
    assert "Verified." in verified.text and "Nothing has gone stale." in verified.text
    assert (await api.run(world.human.token, RENDERED, i=made.stale))["item"]["lastVerifiedAt"] is not None


async def test_r10_the_stale_tab_says_the_decay_in_words(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """A stale item (R10) says after how long it goes stale as a person says it, not as ISO-8601."""
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=stale&project={world.project_id}")).text
    assert made.stale in page
    assert "Goes stale 7 days after it was last checked: never verified." in page
    assert "P7D" not in page


@pytest.mark.parametrize(
    ("iso", "said"),
    [
        ("PT1S", "1 second"),
        ("P7D", "7 days"),
        ("P1D", "1 day"),
        ("PT2H30M", "2 hours 30 minutes"),
        ("P1DT4H", "1 day 4 hours"),
        ("P1DT1M", "1 day 1 minute"),
        ("P2DT3H4M5S", "2 days 3 hours 4 minutes 5 seconds"),
        ("PT36H", "1 day 12 hours"),
        ("P400D", "400 days"),
        ("PT0S", "0 seconds"),
        ("PT0.25S", "less than a second"),
        ("PT1.5S", "1 second"),
        ("P1M", "P1M"),  # no fixed length: the API never sends one; shown as it is
        ("soon", "soon"),
    ],
)
def test_inbox_durations_read_in_words(iso: str, said: str) -> None:
    assert duration.in_words(iso) == said


def test_inbox_duration_words_take_a_timedelta_too() -> None:
    assert duration.in_words(timedelta(hours=2, minutes=30)) == "2 hours 30 minutes"
    assert duration.in_words(timedelta(0)) == "0 seconds"
    assert duration.in_words(-timedelta(days=1)) == "minus 1 day"


async def test_r2_another_workspace_sees_none_of_it(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """Row-level security, through the inbox: a human of another workspace lists nothing of this one."""
    made = await review(api, admin_engine, world)
    stranger = await api.world()
    await browser.sign_in(stranger.human.token)
    for tab in entry.TABS:
        page = (await browser.client.get(f"/inbox?tab={tab}&project={world.project_id}")).text
        for ident in (made.ruling, made.suggested, made.contested, made.sure, made.stale):
            assert ident not in page, tab
    done = await browser.act("unconfirmed", stranger.project_id, f"confirm:{made.sure}")
    assert f"item {made.sure} not found" in done.text


async def test_inbox_history_lists_decisions_newest_first(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    await browser.act("unconfirmed", world.project_id, f"confirm:{made.sure}")
    await browser.act(
        "proposals", world.project_id, f"reject:{made.suggestion}", **{f"note:{made.suggestion}": "not ours"}
    )
    page = html.unescape((await browser.client.get(f"/inbox?tab=history&project={world.project_id}")).text)
    assert "<form" not in page.split('id="panel"')[1].split("</section>")[0], "history is read-only"
    rejected = page.index("rejected claude-code's load-bearing suggestion")
    confirmed = page.index("alice</strong> confirmed")
    assert rejected < confirmed, "newest first"
    assert "Note: not ours" in page


def test_inbox_operations_stay_within_the_api_limits() -> None:
    """The inbox's largest reads are documents any client could send: within every limit."""
    schema = build_schema()._schema
    widest = {"project": "x", "unconfirmedFirst": SHOWN, "staleFirst": SHOWN}
    for document in (ITEMS, HISTORY, DECIDED, PROPOSALS_READ, DISPUTES_READ):
        found = measure(schema, parse(document), None, widest, LIMITS.list_size)
        assert refusals(found) == [], (document, found)


def test_inbox_bulk_document_carries_text_only_in_variables() -> None:
    note = '") { id } evil: retireItem(id: "x'
    document, variables = action_document("retire", [Target("a", note=note), Target("b", note="ok")])
    assert note not in document
    assert document.startswith("mutation Inbox($id0: ID!, $note0: String!, $id1: ID!, $note1: String!)")
    assert variables == {"id0": "a", "note0": note, "id1": "b", "note1": "ok"}


words = st.lists(
    st.sampled_from(
        ["deploy", "on", "Tuesdays", "and", "Thursdays,", "(Thursdays)", ".", "50%", "—", " ", "\n", "é"]
    ),
    max_size=12,
)


@given(old=words.map("".join), new=words.map("".join))
def test_inbox_diff_rebuilds_both_statements(old: str, new: str) -> None:
    """A diff loses nothing: what it keeps and removes is the old text as written, what it keeps and adds
    the new, punctuation and all."""
    pieces = entry.diff(old, new)
    assert "".join(p.before for p in pieces if p.op != "added") == old
    assert "".join(p.after for p in pieces if p.op != "removed") == new
    assert all(p.after == "" for p in pieces if p.op == "removed")
    assert all(p.before == "" for p in pieces if p.op == "added")


def test_inbox_diff_compares_words_without_their_punctuation() -> None:
    """A comma, full stop, bracket or quote around a word does not change the word; each side keeps it."""
    assert entry.diff("Refunds go through the PSP", "Refunds, always, go through the PSP.") == [
        entry.Piece("same", "Refunds", "Refunds,"),
        entry.Piece("added", "", " always,"),
        entry.Piece("same", " go through the PSP", " go through the PSP."),
    ]
    assert entry.diff('Use the PSP (Adyen) for "refunds".', "Use the PSP, Adyen, for refunds") == [
        entry.Piece("same", 'Use the PSP (Adyen) for "refunds".', "Use the PSP, Adyen, for refunds")
    ]
    assert entry.diff("on Tuesdays\nonly", "on Tuesdays only") == [
        entry.Piece("same", "on Tuesdays\nonly", "on Tuesdays only")
    ]


def test_inbox_diff_still_marks_what_changes_a_word() -> None:
    """Only sentence punctuation, brackets and quotes are set aside: ``50%`` is not ``50``, a dash alone is
    compared as itself, and a change of case is a change."""
    assert entry.diff("Cap at 50% now", "Cap at 50 now") == [
        entry.Piece("same", "Cap at ", "Cap at "),
        entry.Piece("removed", "50%", ""),
        entry.Piece("added", "", "50"),
        entry.Piece("same", " now", " now"),
    ]
    assert [p.op for p in entry.diff("a - b", "a — b")] == ["same", "removed", "added", "same"]
    assert [p.op for p in entry.diff("refunds.", "Refunds.")] == ["removed", "added"]
    assert [p.op for p in entry.diff("done.", "done?")] == ["same"]


async def test_r7_a_replacements_diff_marks_words_not_their_punctuation(
    browser: Browser, api: Api, world: World
) -> None:
    """An agent's replacement of a ruling (R7), as the Proposals tab compares it: a comma or full stop
    added after a word leaves the word unmarked and is shown as written."""
    ruling = await api.assert_item(
        world.human.token,
        projectId=world.project_id,
        kind="CONSTRAINT",
        statement="Refunds go through the PSP",
    )
    await api.run(
        world.agent.token,
        SUPERSEDE,
        **supersession(world.project_id, ruling["id"], "Refunds, always, go through the PSP.", "be explicit"),
    )
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=proposals&project={world.project_id}")).text
    now, proposed = re.findall(r"<dd>(.*?)</dd>", page.split('<dl class="diff">')[1].split("</dl>")[0])
    assert now == "Refunds go through the PSP"
    assert proposed == "Refunds,<ins> always,</ins> go through the PSP."


async def test_r15_the_event_stream_says_ready_then_raised_and_ends_on_its_own(
    engine: AsyncEngine, api: Api, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live updates: ``ready`` once both subscriptions listen, ``raised`` for a dispute raised then,
    and the stream ends after STREAM_SECONDS (so a stopping server never waits on an open inbox)."""
    monkeypatch.setattr(inbox_page, "STREAM_SECONDS", 3.0)
    app = create_app(engine, dispose_engine=False)
    async with uvicorn_serving(app) as port, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        visitor = Browser(client)
        assert (await client.get("/inbox/events")).status_code == 401
        await visitor.sign_in(world.human.token)
        lines: list[str] = []
        async with client.stream("GET", f"/inbox/events?project={world.project_id}") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                lines.append(line)
                if line == "event: ready":
                    fact = await api.assert_item(world.human.token, projectId=world.project_id, statement="A")
                    await api.run(
                        world.agent.token,
                        "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }",
                        i={
                            "projectId": world.project_id,
                            "kind": "FACT",
                            "statement": "B",
                            "contradicts": [fact["id"]],
                        },
                    )
    assert lines[0] == "retry: 1000"
    assert lines.index("event: ready") < lines.index("event: raised")
    assert lines[lines.index("event: raised") + 1] == "data: dispute"


SLICE = """query($p: ID!) { rehydrate(input: {projectId: $p, task: "x", tokenBudget: 1}) {
  entries { item { id } reason tokens } } }"""


async def test_r11_a_load_bearing_suggestion_costs_what_its_settled_line_costs_in_a_slice(
    api: Api, world: World
) -> None:
    """The cost the proposal shows is what the rehydration counts for the item once settled (R11.1, R11.7)."""
    made = await api.assert_item(
        world.agent.token,
        projectId=world.project_id,
        kind="CONSTRAINT",
        statement="Card numbers never reach the logs",
        suggestLoadBearing=True,
    )
    rendered = (await api.run(world.human.token, RENDERED, i=made["id"]))["item"]["rendered"]
    shown = entry.slice_cost(rendered)
    await api.run(
        world.human.token,
        "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id } }",
        i=made["id"],
    )
    sliced = await api.run(world.human.token, SLICE, p=world.project_id)
    (guaranteed,) = [e for e in sliced["rehydrate"]["entries"] if e["item"]["id"] == made["id"]]
    assert guaranteed["reason"] == "GUARANTEED" and guaranteed["tokens"] == shown


async def test_inbox_a_long_tab_shows_its_first_entries_and_counts_them_all(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = await review(api, admin_engine, world)
    monkeypatch.setattr(inbox_page, "SHOWN", 2)
    await browser.sign_in(world.human.token)
    page = (await browser.client.get(f"/inbox?tab=unconfirmed&project={world.project_id}")).text
    assert re.findall(r'data-entry="([^"]+)"', page) == [made.suggested, made.sure]
    assert "Showing the first 2; 1 more follow once these are done." in page
    assert re.search(r'Unconfirmed <span class="count">3</span>', page)


async def test_inbox_signing_out_forgets_the_cookie_and_needs_the_form(
    browser: Browser, world: World
) -> None:
    await browser.sign_in(world.human.token)
    assert (await browser.post("/inbox/sign-out", {"csrf": "forged"})).status_code == 403
    assert "Signed in as" in (await browser.client.get("/inbox")).text
    out = await browser.post("/inbox/sign-out", {"csrf": await browser.csrf()})
    assert out.status_code == 303
    assert "Signed in as" not in (await browser.client.get("/inbox")).text


async def test_r3_a_revoked_token_ends_the_session_at_once(browser: Browser, api: Api, world: World) -> None:
    """The session's token is authenticated again by the database on every request: revoked from
    anywhere (``revokeToken``, as from another device), the session ends with it."""
    await browser.sign_in(world.human.token)
    assert "Signed in as" in (await browser.client.get("/inbox")).text
    _, token_id = session_of(browser)
    await api.run(world.human.token, "mutation($i: ID!) { revokeToken(id: $i) { id } }", i=token_id)
    ended = await browser.client.get("/inbox")
    assert ended.status_code == 401 and "unknown, revoked or expired" in ended.text
    assert "Signed in as" not in ended.text


async def test_inbox_a_person_in_two_projects_moves_between_them(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    made = await review(api, admin_engine, world)
    other = await api.project(world.human.token, name="search")
    await browser.sign_in(world.human.token)
    first = (await browser.client.get(f"/inbox?tab=unconfirmed&project={world.project_id}")).text
    assert 'aria-label="Projects"' in first and ">search</a>" in first and made.sure in first
    second = (await browser.client.get(f"/inbox?tab=unconfirmed&project={other}")).text
    assert "Project <strong>search</strong>" in second and made.sure not in second
    assert "No agent's assertion waits for confirmation." in second


async def test_r3_a_session_never_outlives_the_token_that_opened_it(
    browser: Browser, api: Api, world: World
) -> None:
    """Signed in with a token expiring within the hour, the session's token expires with it."""
    made = await api.run(
        world.human.token,
        "mutation($a: ID!) { createToken(actorId: $a, expiresIn: PT1H) { token issued { id expiresAt } } }",
        a=world.human.id,
    )
    pasted = made["createToken"]
    await browser.sign_in(pasted["token"])
    _, token_id = session_of(browser)
    tokens = {t["id"]: t for t in (await api.run(world.human.token, TOKENS, me=world.human.id))["tokens"]}
    ends = datetime.fromisoformat(tokens[token_id]["expiresAt"])
    assert ends <= datetime.fromisoformat(pasted["issued"]["expiresAt"]), (ends, pasted)
    assert ends > datetime.now(UTC) + timedelta(minutes=59)


async def test_an_action_sent_without_htmx_is_said_on_the_page_it_lands_on_once(
    browser: Browser, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """A form a browser sends itself (no script yet, or none at all) redirects to the tab, which
    says what happened, once; a failure is said as one too."""
    made = await review(api, admin_engine, world)
    await browser.sign_in(world.human.token)
    form = {"csrf": await browser.csrf(), "tab": "unconfirmed", "project": world.project_id}
    done = await browser.post("/inbox/act", {**form, "action": f"confirm:{made.sure}"})
    assert done.status_code == 303 and done.headers["location"].startswith("/inbox?")
    landed = await browser.client.get(done.headers["location"])
    assert '<p id="said" class="said" role="status" tabindex="-1">Confirmed.</p>' in landed.text
    assert "Confirmed." not in (await browser.client.get(done.headers["location"])).text, "said once"
    refused = await browser.post("/inbox/act", {**form, "action": "resolve-chosen"})
    assert refused.status_code == 303
    landed = await browser.client.get(refused.headers["location"])
    failed = '<p id="said" class="said failed" role="alert" tabindex="-1">Nothing was done: select'
    assert failed in landed.text, landed.text


async def test_r16_the_redactions_tab_gives_notice_and_a_hold_keeps_an_item_out(
    browser: Browser, api: Api, world: World
) -> None:
    """What retention will blank within 30 days, with its day; a held item is not due (R17)."""
    await api.run(
        world.human.token,
        'mutation { setRetentionPolicy(input: {statuses: [RETIRED], after: "P30D"}) { id } }',
    )
    due = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="staging host is db-7"
    )
    held = await api.assert_item(
        world.agent.token, projectId=world.project_id, statement="audit bucket is logs-2"
    )
    for made in (due, held):
        await api.run(world.agent.token, RETIRE_ITEM, i=made["id"], r="moved")
    await api.run(
        world.human.token,
        'mutation($i: ID!) { placeLegalHold(itemId: $i, reason: "audit") { id } }',
        i=held["id"],
    )
    await browser.sign_in(world.human.token)
    page = html.unescape((await browser.client.get(f"/inbox?tab=redactions&project={world.project_id}")).text)
    panel = page.split('id="panel"')[1].split("</section>")[0]
    assert "Redactions due" in page and due["id"] in panel and held["id"] not in panel
    assert "the workspace's policy" in panel and "<form" not in panel
    assert "30 days after its status changed" in panel and "P30D" not in panel, "a duration, in words"


async def test_r3_graphiql_runs_as_the_inbox_session_with_its_csrf_token_only(
    browser: Browser, world: World
) -> None:
    """/inbox/graphiql: the signed-in person's GraphiQL. Its operations go to /inbox/graphql with the
    session's own token (never in a script's reach), and only with the page's CSRF token; whatever
    Authorization the browser adds is dropped (R3: the session is one actor's)."""
    me = '{"query": "{ me { id kind } }"}'
    assert (await browser.client.get("/inbox/graphiql")).text.count("Sign in") >= 1
    signed_out = await browser.client.post(
        "/inbox/graphql", content=me, headers={"Content-Type": "application/json"}
    )
    assert (
        signed_out.status_code == 401
        and signed_out.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    )

    await browser.sign_in(world.human.token)
    page = (await browser.client.get("/inbox/graphiql")).text
    found = re.search(r'<meta name="mneia-csrf" content="([^"]+)"', page)
    assert found and '<meta name="mneia-endpoint" content="/inbox/graphql"' in page
    json_headers = {"Content-Type": "application/json", "Origin": browser.origin}
    without = await browser.client.post("/inbox/graphql", content=me, headers=json_headers)
    assert without.status_code == 403 and without.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    forged = await browser.client.post(
        "/inbox/graphql", content=me, headers={**json_headers, "X-Mneia-CSRF": "not-the-token"}
    )
    assert forged.status_code == 403
    asked = await browser.client.post(
        "/inbox/graphql",
        content=me,
        headers={
            **json_headers,
            "X-Mneia-CSRF": found.group(1),
            "Authorization": f"Bearer {world.agent.token}",
        },
    )
    assert asked.status_code == 200, asked.text
    assert asked.json()["data"]["me"] == {"id": world.human.id, "kind": "HUMAN"}
