"""A real headless Chromium for the browser tests (GraphiQL, the inbox), offline.

Debian's ``chromium`` driven by Playwright with ``executable_path``
(Playwright's own browser download is not reachable). Where chromium or
playwright is missing, the tests that ask for ``chromium()`` skip and say which.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.live import cli_env, serving

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Route

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = not CHROMIUM.exists()


@contextmanager
def mneia_serving(admin_url: str, logs: Path) -> Iterator[str]:
    """``mneia serve`` on the test run's database, as a person would start it; yields its base URL."""
    with serving([], cli_env(logs, DATABASE_URL=admin_url), logs) as (_, base):
        yield base


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless Chromium, or the test skips saying what is missing."""
    if CHROMIUM_MISSING:
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium")
    playwright_api = pytest.importorskip(
        "playwright.async_api", reason="playwright is missing: pip install -e '.[test]'"
    )
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


class Offline:
    """A page on which any request to another origin is aborted and recorded, with its script errors."""

    def __init__(self, page: Page, base: str) -> None:
        self.page = page
        self.base = base
        self.elsewhere: list[str] = []
        self.errors: list[str] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    async def route(self, route: Route) -> None:
        if route.request.url.startswith(f"{self.base}/"):
            await route.continue_()
        else:
            self.elsewhere.append(route.request.url)
            await route.abort()
