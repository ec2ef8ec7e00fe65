"""The inbox's files (vendored htmx, its own script and stylesheet) and the headers of its pages.

htmx is vendored, unchanged, from the npm registry at the version pinned in
``scripts/vendor.sh``, which re-fetches it and checks npm's sha512. Each
file's URL carries its content's digest, so a browser may keep it for a year
and still never runs a stale one (as GraphiQL's files, mneia.graphiql).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from starlette.routing import Mount

from mneia.graphiql import ImmutableFiles

PREFIX = "/inbox/static"
STATIC = Path(__file__).parent / "static"
HTMX = "htmx.org@2.0.11/htmx.min.js"
ASSETS = {"htmx_js": HTMX, "inbox_js": "inbox.js", "inbox_css": "inbox.css"}

# Item text is written by agents, so it is untrusted: this origin's files only, no inline
# script or style, no eval (htmx runs with allowEval off), no plugin, no <base>, no framing,
# forms posted only here. connect-src 'self' covers htmx's requests and the live updates.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    # A page lists a person's work and carries their CSRF token: never kept by a cache.
    "Cache-Control": "no-store",
    # Not no-referrer: under it a browser sends "Origin: null" with the page's own forms, and the
    # origin check (inbox.cookie) could not tell them from another site's.
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


@cache
def urls() -> dict[str, str]:
    """Each file's URL, named with its content's digest."""
    named = {}
    for name, path in ASSETS.items():
        digest = hashlib.sha256((STATIC / path).read_bytes()).hexdigest()[:16]
        named[name] = f"{PREFIX}/{path}?v={digest}"
    return named


assets = Mount(PREFIX, app=ImmutableFiles(directory=STATIC), name="inbox-static")
