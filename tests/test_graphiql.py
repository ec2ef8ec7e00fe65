"""GraphiQL served whole by the app: it runs offline, and it never stores the human's token.

The page and its files are checked over HTTP; then a real headless Chromium
(Debian's ``chromium``, driven by Playwright) loads the page from ``mneia
serve`` with every request to another origin aborted, types a query and a
bearer header, runs it, and reads the answer in the result pane. The browser
tests skip, saying what is missing, where chromium or playwright is not
installed (``.ci/run`` installs both).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from graphql import parse, validate
from mneia.graphiql import ASSETS, BEARER_HEADER, EXAMPLE, SIGNED_IN_EXAMPLE, STATIC
from mneia.resolvers.root import build_schema
from tests.browser import Offline, chromium, mneia_serving
from tests.graphql import Api, World

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

try:
    from playwright.async_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the browser tests skip (tests.browser), saying so
    PlaywrightTimeout = TimeoutError  # type: ignore[misc,assignment]

QUERY = "{ me { kind name } }"
# Everything the page does that a policy refused, and any script error, kept for the asserts.
WATCH = """
window.__refused = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__refused.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""
DUMP_STORAGE = """() => {
  const dump = (storage) => Object.fromEntries(Object.keys(storage).map((k) => [k, storage.getItem(k)]));
  return JSON.stringify({ local: dump(localStorage), session: dump(sessionStorage) });
}"""


QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
HEADERS_EDITOR = ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"


async def typed_over(page: Page, editor: str, text: str) -> None:
    """Select everything in a GraphiQL editor and type ``text`` over it, as a person would; the
    selection is checked done before typing (a Ctrl-A that lands before the editor has focus selects
    nothing, and the text would be typed after the example the editor opens with)."""
    emptied = f"document.querySelector({json.dumps(editor)}).CodeMirror.getValue() === ''"
    for _ in range(5):
        await page.locator(editor).click()
        await page.keyboard.press("Control+A")
        await page.keyboard.press("Delete")
        try:
            await page.wait_for_function(emptied, timeout=2_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError(f"{editor} could not be emptied")
    await page.keyboard.type(text)


async def page_html(http: httpx.AsyncClient) -> httpx.Response:
    return await http.get("/graphql", headers={"Accept": "text/html"})


def policy(response: httpx.Response) -> dict[str, str]:
    header = response.headers["content-security-policy"]
    return dict(part.split(" ", 1) for part in header.split("; "))


async def test_graphiql_page_names_only_files_of_this_origin(http: httpx.AsyncClient) -> None:
    response = await page_html(http)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    sources = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    assert len(sources) == len(ASSETS)
    assert all(source.startswith("/graphiql/static/") for source in sources), sources
    assert "//" not in response.text, "the page names another origin"
    assert "<script>" not in response.text and "<style>" not in response.text


@pytest.mark.parametrize("example", [EXAMPLE, SIGNED_IN_EXAMPLE])
async def test_issue_26_graphiql_opens_with_a_query_that_runs_as_it_is(
    example: str, http: httpx.AsyncClient, api: Api, world: World
) -> None:
    """The editor's first text is a valid operation of the schema (GraphiQL's own default, comments
    alone, is a syntax error when run), and it answers without errors for a human's token."""

    assert validate(build_schema()._schema, parse(example)) == []
    answer = await api.run(world.human.token, example)
    assert (
        answer["me"]["kind"] == "HUMAN" and {"id": world.project_id, "name": "payments"} in answer["projects"]
    )


async def test_issue_26_graphiql_says_where_the_token_goes(http: httpx.AsyncClient) -> None:
    """On /graphql the example's comments and the headers editor's first text name the Authorization
    header; the page carries both (html-escaped in its meta tags, read by static/page.js)."""
    text = html.unescape((await page_html(http)).text)
    assert EXAMPLE in text and BEARER_HEADER in text
    assert (
        '{"Authorization": "Bearer mneia_..."}' in EXAMPLE and '"Authorization": "Bearer "' in BEARER_HEADER
    )


async def test_graphiql_policy_allows_only_this_origin(http: httpx.AsyncClient) -> None:
    """No CDN, no inline script, no eval; data: for fonts and icons alone; styles by this response's nonce."""
    first, second = await page_html(http), await page_html(http)
    directives = policy(first)
    nonce = re.search(r'nonce="([^"]+)"', first.text)
    assert nonce, "the page hands no nonce to its script"
    assert directives == {
        "default-src": "'none'",
        "script-src": "'self'",
        "style-src": f"'self' 'nonce-{nonce.group(1)}'",
        "font-src": "'self' data:",
        "img-src": "'self' data:",
        "connect-src": "'self'",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }
    assert policy(second)["style-src"] != directives["style-src"], "a nonce must not repeat"


async def test_graphiql_files_are_served_unchanged_and_cached_by_content(http: httpx.AsyncClient) -> None:
    page = (await page_html(http)).text
    for path in ASSETS.values():
        url = re.search(rf'"(/graphiql/static/{re.escape(path)}\?v=[0-9a-f]{{16}})"', page)
        assert url, f"{path} is not named with its digest"
        response = await http.get(url.group(1))
        assert response.status_code == 200, path
        assert response.content == (STATIC / path).read_bytes()
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"


@pytest.fixture(scope="module")
def served(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mneia_serving(admin_url, tmp_path_factory.mktemp("graphiql-serve")) as base:
        yield base


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


class GraphiQLPage(Offline):
    """GraphiQL in a page on which any request to another origin is aborted and recorded."""

    async def open(self) -> None:
        """Load GraphiQL and wait for its editor, or fail saying what the page reached for."""
        await self.page.goto(f"{self.base}/graphql")
        try:
            await self.page.locator(".graphiql-query-editor .CodeMirror").wait_for(timeout=15_000)
        except Exception as error:
            raise AssertionError(
                f"GraphiQL did not load; aborted: {self.elsewhere}; errors: {self.errors}"
            ) from error

    async def run(self, token: str) -> str:
        """Type a bearer header and the query as a person would, run it; the result pane's text."""
        page = self.page
        await self.open()
        await page.get_by_role("button", name="Headers", exact=True).click()
        await typed_over(page, HEADERS_EDITOR, f'{{"Authorization": "Bearer {token}"}}')
        await typed_over(page, QUERY_EDITOR, QUERY)
        # GraphiQL copies the editors into its tab state, and so its history, 500 ms after
        # the last keystroke: pause as a person would, so that the headers reach the history.
        await page.wait_for_timeout(1_000)
        await page.locator(".graphiql-execute-button").click()
        response = page.locator(".graphiql-response")
        await response.get_by_text('"HUMAN"').wait_for(timeout=15_000)
        return await response.inner_text()

    async def refused(self) -> list[str]:
        return list(await self.page.evaluate("window.__refused"))

    async def storage(self) -> str:
        """Everything in this origin's localStorage and sessionStorage, as JSON."""
        return str(await self.page.evaluate(DUMP_STORAGE))


@pytest.fixture
async def offline(browser: Browser, served: str) -> AsyncIterator[Offline]:
    context = await browser.new_context()
    watched = GraphiQLPage(await context.new_page(), served)
    await context.route("**/*", watched.route)
    await context.add_init_script(WATCH)
    try:
        yield watched
    finally:
        await context.close()


async def test_graphiql_runs_a_query_offline_in_chromium(offline: Offline, world: World) -> None:
    """Every request to another origin is aborted, yet the page loads, runs a query and shows its data."""
    shown = await offline.run(world.human.token)
    answer = json.loads(re.sub(r"\s+", " ", shown[shown.index("{") :]))
    assert answer == {"data": {"me": {"kind": "HUMAN", "name": "alice"}}}
    # The documentation (from the schema fetched at load) and a dialog, which adds a <style>.
    await offline.page.get_by_label("Show Documentation Explorer").click()
    await offline.page.locator(".graphiql-doc-explorer-type-name", has_text="Query").first.click()
    await offline.page.locator(".graphiql-doc-explorer-field-name", has_text="me").first.wait_for()
    await offline.page.get_by_label("Open settings dialog").click()
    await offline.page.get_by_text("Clear storage").wait_for()
    assert offline.elsewhere == [], "the page reached for another origin"
    assert await offline.refused() == [], "the page's policy refused something it needed"
    assert offline.errors == []


async def test_issue_26_graphiql_opens_with_the_example_and_the_header_to_complete(offline: Offline) -> None:
    """What a person sees first: the example query in the editor, the Authorization header in the
    headers editor below it."""
    assert isinstance(offline, GraphiQLPage)
    await offline.open()
    query = await offline.page.locator(".graphiql-query-editor .CodeMirror").inner_text()
    assert "me { id name kind }" in query and "Authorization" in query
    headers = offline.page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror")
    assert '"Authorization": "Bearer "' in " ".join((await headers.inner_text()).split())
    assert offline.elsewhere == [] and offline.errors == []


async def test_graphiql_keeps_no_token_in_browser_storage(offline: Offline, world: World) -> None:
    """After a query run with a bearer header, neither storage holds the token, and a reload forgets it.

    GraphiQL's history keeps headers whatever ``shouldPersistHeaders`` says: with
    plain localStorage as its storage, this test fails on ``graphiql:queries``.
    """
    token = world.human.token
    await offline.run(token)
    stored = await offline.storage()
    assert "graphiql:queries" in stored, "GraphiQL's history was not written: nothing was tested"
    assert token not in stored
    await offline.page.reload()
    await offline.page.locator(".graphiql-query-editor .CodeMirror").wait_for()
    assert token not in await offline.page.content()
    assert token not in await offline.storage()


async def test_graphiql_erases_a_token_an_earlier_page_stored(offline: Offline, world: World) -> None:
    """Strawberry's page kept headers in localStorage; the first visit to this one erases them."""
    token = world.human.token
    await offline.page.goto(f"{offline.base}/healthz")  # same origin, so the same localStorage
    earlier = {
        "graphiql:headers": json.dumps({"Authorization": f"Bearer {token}"}),
        "graphiql:shouldPersistHeaders": "true",
        "graphiql:queries": json.dumps({"queries": [{"query": QUERY, "headers": f"Bearer {token}"}]}),
    }
    await offline.page.evaluate(
        "(items) => { for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v); }", earlier
    )
    assert token in await offline.storage()
    await offline.open()
    stored = await offline.storage()
    assert token not in stored
    assert QUERY in stored, "the history itself was kept, only its headers dropped"


OPEN_WEBSOCKET = """(url) => new Promise((resolve) => {
  const socket = new WebSocket(url, "graphql-transport-ws");
  socket.onopen = () => { socket.close(); resolve("open"); };
  socket.onerror = () => resolve("error");
})"""


async def test_graphiql_policy_lets_the_page_reach_only_its_own_websocket(offline: Offline) -> None:
    """Subscriptions work under the page's policy (connect-src 'self'), and another origin is refused."""
    await offline.open()
    own = offline.base.replace("http://", "ws://") + "/graphql"
    assert await offline.page.evaluate(OPEN_WEBSOCKET, own) == "open"
    assert await offline.refused() == []
    elsewhere = "ws://127.0.0.2:9/graphql"  # loopback; refused by the browser before any packet
    assert await offline.page.evaluate(OPEN_WEBSOCKET, elsewhere) == "error"
    assert await offline.refused() == [f"connect-src {elsewhere}"]


async def test_graphiql_of_the_inbox_session_runs_as_its_person_with_no_token_typed(
    offline: Offline, world: World
) -> None:
    """Signed in to the inbox, /inbox/graphiql runs a query as that person: no header typed, the
    session's token out of every script's reach (an HttpOnly cookie), the CSRF token sent for it."""
    page = offline.page
    await page.goto(f"{offline.base}/inbox")
    await page.get_by_label("Token").fill(world.human.token)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_text("Signed in as").wait_for(timeout=15_000)
    await page.goto(f"{offline.base}/inbox/graphiql")
    await page.locator(QUERY_EDITOR).wait_for(timeout=15_000)
    await typed_over(page, QUERY_EDITOR, QUERY)
    await page.locator(".graphiql-execute-button").click()
    response = page.locator(".graphiql-response")
    await response.get_by_text('"HUMAN"').wait_for(timeout=15_000)
    assert world.human.token not in await page.evaluate("document.cookie + JSON.stringify(localStorage)")
    assert offline.elsewhere == [] and offline.errors == []
