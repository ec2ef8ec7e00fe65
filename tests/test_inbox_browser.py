"""The review inbox in a real headless Chromium, against ``mneia serve``.

Debian's ``chromium`` driven by Playwright (``executable_path``: Playwright's
own browser download is not reachable), every request to another origin
aborted. A person accepts a proposal and resolves a dispute by mouse, and
again by keyboard alone; an agent's token cannot sign in; a script an agent
wrote into a statement stays text; axe-core finds no violation on any tab;
and a screenshot of each tab is kept in ``tests/artifacts/inbox/`` (ignored
by git; ``MNEIA_TEST_ARTIFACTS`` moves it). Where chromium, playwright or
axe-core (tests/clients, installed with npm) is missing, the tests skip and
say which.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.browser import Offline, mneia_serving
from tests.browser import chromium as offline_chromium
from tests.graphql import Api, World
from tests.inbox import ASSERT, DISPUTES, PROPOSALS, RENDERED, Review, review
from tests.live import CLIENTS, node_clients

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

ARTIFACTS = Path(os.environ.get("MNEIA_TEST_ARTIFACTS", Path(__file__).parent / "artifacts")) / "inbox"
AXE = CLIENTS / "node_modules" / "axe-core" / "axe.min.js"
INJECTED = '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'img\'">'
HTMX_INJECTED = '<div hx-get="/inbox/panel" hx-trigger="load" hx-target="body">hx</div>'
WATCH = """
window.__refused = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__refused.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""
AXE_RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""


@pytest.fixture(scope="module")
def served(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with mneia_serving(admin_url, tmp_path_factory.mktemp("inbox-serve")) as base:
        yield base


@pytest.fixture
async def chromium() -> AsyncIterator[Browser]:
    async with offline_chromium() as launched:
        yield launched


class Person(Offline):
    """One person's browser on the inbox; requests to another origin are aborted and recorded."""

    async def sign_in(self, token: str) -> None:
        await self.page.goto(f"{self.base}/inbox")
        await self.page.get_by_label("Your bearer token").fill(token)
        await self.page.get_by_role("button", name="Sign in").click()

    async def live(self) -> None:
        """Wait until the page listens for what is raised, and has read its panel again since."""
        await self.page.locator("body[data-live=ready]").wait_for(state="attached")

    async def tab(self, name: str, project: str) -> None:
        await self.page.goto(f"{self.base}/inbox?tab={name}&project={project}")
        await self.live()

    async def refused(self) -> list[str]:
        return list(await self.page.evaluate("window.__refused"))

    async def clean(self) -> None:
        """Nothing left the origin, the policy refused nothing, no script failed."""
        assert self.elsewhere == [], "the page reached for another origin"
        assert await self.refused() == [], "the page's policy refused something it needed"
        assert self.errors == []


@pytest.fixture
async def person(chromium: Browser, served: str) -> AsyncIterator[Person]:
    context = await chromium.new_context(viewport={"width": 1100, "height": 900})
    someone = Person(await context.new_page(), served)
    await context.route("**/*", someone.route)
    await context.add_init_script(WATCH)
    try:
        yield someone
    finally:
        await context.close()


@pytest.fixture
async def made(api: Api, admin_engine: AsyncEngine, world: World) -> Review:
    return await review(api, admin_engine, world)


async def status_of(api: Api, made: Review) -> tuple[str, str]:
    """The supersession proposal's status and the dispute's, through the API."""
    human, project = made.world.human.token, made.world.project_id
    proposals = {p["id"]: p for p in (await api.run(human, PROPOSALS, p=project))["proposals"]}
    (dispute,) = (await api.run(human, DISPUTES, p=project))["disputes"]
    return proposals[made.supersession]["status"], dispute["status"]


async def test_inbox_a_human_accepts_and_resolves_by_mouse(person: Person, made: Review, api: Api) -> None:
    """R7, R8 in a browser: a note, Accept; a side, Resolve; each answered in place."""
    page, project = person.page, made.world.project_id
    await person.sign_in(made.world.human.token)
    await person.live()
    await person.tab("proposals", project)
    entry = page.locator(f'[data-entry="{made.supersession}"]')
    await entry.get_by_label("Note (optional)").fill("agreed at stand-up")
    await entry.get_by_role("button", name="Accept").click()
    await page.get_by_role("status").filter(has_text="Accepted.").wait_for()
    await page.get_by_role("link", name="Disputes").click()
    await person.live()
    dispute = page.locator(f'[data-entry="{made.dispute}"]')
    await dispute.get_by_label("Keep 1: The item contested").check()
    await dispute.get_by_role("button", name="Resolve").click()
    await page.get_by_text("Resolved.").wait_for()
    assert await status_of(api, made) == ("ACCEPTED", "RESOLVED")
    proposals = (await api.run(made.world.human.token, PROPOSALS, p=project))["proposals"]
    assert {p["id"]: p["decisionNote"] for p in proposals}[made.supersession] == "agreed at stand-up"
    await person.clean()


async def keyboard_to(page: Page, entry_id: str) -> None:
    """Press j until the entry is focused (as a person would look down the list)."""
    for _ in range(20):
        await page.keyboard.press("j")
        if await page.evaluate("document.activeElement.dataset.entry") == entry_id:
            return
    raise AssertionError(f"j never reached {entry_id}")


async def tab_to(page: Page, text: str) -> None:
    """Press Tab until the focused element's text starts with ``text``."""
    for _ in range(60):
        await page.keyboard.press("Tab")
        focused = await page.evaluate("(document.activeElement.innerText || '').trim()")
        if focused.startswith(text):
            return
    raise AssertionError(f"Tab never reached {text!r}")


async def test_inbox_a_human_accepts_and_resolves_by_keyboard_alone(
    person: Person, made: Review, api: Api
) -> None:
    """Sign-in, a note, acceptance, the Disputes tab, a side and resolution: no mouse at all (WCAG 2.1.1)."""
    page = person.page
    await page.goto(f"{person.base}/inbox")
    await tab_to(page, "")  # the token field is the first to take focus
    await page.keyboard.type(made.world.human.token)
    await page.keyboard.press("Enter")
    await person.live()
    await keyboard_to(page, made.supersession)
    await page.keyboard.press("n")
    await page.keyboard.type("two days are fine")
    await page.keyboard.press("Escape")
    await page.keyboard.press("a")
    await page.get_by_role("status").filter(has_text="Accepted.").wait_for()
    await tab_to(page, "Disputes")
    await page.keyboard.press("Enter")
    await page.locator("#panel[data-tab=disputes]").wait_for()
    await person.live()
    await keyboard_to(page, made.dispute)
    await page.keyboard.press("2")
    await page.keyboard.press("e")
    await page.get_by_text("Resolved.").wait_for()
    assert await status_of(api, made) == ("ACCEPTED", "RESOLVED")
    human = made.world.human.token
    assert (await api.run(human, RENDERED, i=made.contradiction))["item"]["status"] == "ACTIVE"
    assert (await api.run(human, RENDERED, i=made.contested))["item"]["status"] == "RETIRED"
    await person.clean()


async def test_inbox_shortcuts_can_be_switched_off(person: Person, made: Review, api: Api) -> None:
    """WCAG 2.1.4: with single-key shortcuts off, a key typed by mistake does nothing; the choice is kept."""
    page = person.page
    await person.sign_in(made.world.human.token)
    await person.live()
    await page.get_by_label("Single-key shortcuts").uncheck()
    await page.reload()
    await person.live()
    assert not await page.get_by_label("Single-key shortcuts").is_checked()
    await page.locator(f'[data-entry="{made.supersession}"]').focus()
    await page.keyboard.press("a")
    await page.keyboard.press("j")
    assert await page.evaluate("document.activeElement.dataset.entry") == made.supersession
    assert await page.locator("#said").count() == 0
    assert (await status_of(api, made))[0] == "PENDING"
    await person.clean()


async def test_r3_an_agent_token_cannot_sign_in_in_a_browser(person: Person, world: World) -> None:
    await person.sign_in(world.agent.token)
    await person.page.get_by_role("alert").filter(has_text="belongs to an agent").wait_for()
    cookies = await person.page.context.cookies()
    assert [c["name"] for c in cookies if c["name"] == "mneia_inbox"] == []
    await person.page.goto(f"{person.base}/inbox")
    assert await person.page.get_by_text("Signed in as").count() == 0
    await person.clean()


async def test_inbox_session_cookie_is_out_of_scripts_reach(person: Person, world: World) -> None:
    await person.sign_in(world.human.token)
    await person.page.get_by_text("Signed in as").wait_for()
    (session,) = [c for c in await person.page.context.cookies() if c["name"] == "mneia_inbox"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/inbox"
    assert world.human.token not in await person.page.evaluate("document.cookie")


async def test_inbox_a_script_injected_in_a_statement_stays_text(
    person: Person, api: Api, admin_engine: AsyncEngine, world: World
) -> None:
    """Item text is untrusted: autoescaped, inside hx-disable, under a policy without inline script."""
    statement = f"Cache for 5 minutes {INJECTED} {HTMX_INJECTED}"
    made = await review(api, admin_engine, world, statement=statement)
    await person.sign_in(world.human.token)
    await person.tab("unconfirmed", world.project_id)
    entry = person.page.locator(f'[data-entry="{made.unsure}"]')
    shown = await entry.locator("code").inner_text()
    assert INJECTED in shown and HTMX_INJECTED in shown, "the markup is shown as the text it is"
    assert await person.page.evaluate("window.__pwned") is None
    assert await entry.locator("script, img, [hx-get]").count() == 0
    assert await entry.locator("[hx-disable]").count() >= 1
    config = "[htmx.config.allowEval, htmx.config.allowScriptTags, htmx.config.selfRequestsOnly]"
    assert await person.page.evaluate(config) == [False, False, True]
    await person.clean()


async def test_inbox_updates_live_when_a_dispute_is_raised(person: Person, made: Review, api: Api) -> None:
    """R15 through the page: an agent raises a dispute elsewhere; the open Disputes tab shows it."""
    page, world = person.page, made.world
    await person.sign_in(world.human.token)
    await person.tab("disputes", world.project_id)
    await page.locator(f'[data-entry="{made.dispute}"]').wait_for()
    raised = await api.run(
        world.agent.token,
        ASSERT,
        i={
            "projectId": world.project_id,
            "kind": "FACT",
            "statement": "The API runs PostgreSQL 16",
            "contradicts": [made.sure],
        },
    )
    new = raised["assertItem"]["disputes"][0]["id"]
    await page.locator(f'[data-entry="{new}"]').wait_for(timeout=10_000)
    await page.get_by_text("A dispute was just raised.").wait_for()
    await person.clean()


async def axe_violations(page: Page, source: str) -> list[dict[str, Any]]:
    await page.evaluate(source)
    return list(await page.evaluate(AXE_RUN))


async def decide_everything(person: Person, made: Review) -> None:
    """By mouse: a confirmation, an acceptance with a note, a resolution, a verification."""
    page, project = person.page, made.world.project_id
    steps = [
        ("unconfirmed", made.sure, "Confirm", "Confirmed."),
        ("proposals", made.supersession, "Accept", "Accepted."),
        ("stale", made.stale, "Verify", "Verified."),
    ]
    for tab, ident, button, said in steps:
        await person.tab(tab, project)
        entry = page.locator(f'[data-entry="{ident}"]')
        if tab == "proposals":
            await entry.get_by_label("Note (optional)").fill("agreed at stand-up")
        await entry.get_by_role("button", name=button).click()
        await page.locator("#said").filter(has_text=said).wait_for()
    await person.tab("disputes", project)
    dispute = page.locator(f'[data-entry="{made.dispute}"]')
    await dispute.get_by_label("Keep 1: The item contested").check()
    await dispute.get_by_role("button", name="Resolve").click()
    await page.locator("#said").filter(has_text="Resolved.").wait_for()


@pytest.fixture
def axe() -> str:
    """axe-core's source (tests/clients), and the screenshots' directory made."""
    if not AXE.is_file():
        node_clients()  # installs tests/clients, or skips saying what is missing
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return AXE.read_text()


async def test_inbox_every_tab_has_no_axe_violations_and_is_photographed(
    person: Person, made: Review, axe: str
) -> None:
    """axe-core (WCAG 2.x A and AA rules and best practices) on the sign-in page and every tab."""
    source = axe
    page = person.page
    await page.goto(f"{person.base}/inbox")
    found = {"sign-in": await axe_violations(page, source)}
    await page.screenshot(path=ARTIFACTS / "sign-in.png", full_page=True)
    await person.sign_in(made.world.human.token)
    await person.live()
    for name in ("proposals", "disputes", "unconfirmed", "stale", "history"):
        if name == "history":  # decisions of each kind, so that the history lists them
            await decide_everything(person, made)
        await person.tab(name, made.world.project_id)
        assert await page.locator(".entry").count() > 0, f"{name} lists nothing: nothing was checked"
        found[name] = await axe_violations(page, source)
        await page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)
    assert {name: violations for name, violations in found.items() if violations} == {}
    assert {f"{name}.png" for name in found} <= {path.name for path in ARTIFACTS.glob("*.png")}
    await person.clean()
