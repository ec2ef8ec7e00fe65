"""GraphiQL, served whole by the app: the page at GET /graphql, its files under /graphiql/static.

What must stay true: the page loads nothing from another origin (its
Content-Security-Policy allows this origin only, so a browser refuses
anything else), and it never writes the request headers, which hold a
human's bearer token, to the browser's storage (``static/page.js``).

GraphiQL and React are vendored, unchanged, from the npm registry at the
versions pinned in ``scripts/vendor.sh``, which re-fetches them and
checks npm's sha512 for each. Each file's URL carries its content's digest,
so a browser may keep it for a year and still never runs a stale one.
"""

from __future__ import annotations

import hashlib
import html
import os
import secrets
from pathlib import Path
from string import Template

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Scope

PREFIX = "/graphiql/static"
STATIC = Path(__file__).parent / "static"
# The page's files, by the name page.html gives them.
ASSETS = {
    "graphiql_css": "graphiql@4.1.2/graphiql.min.css",
    "graphiql_js": "graphiql@4.1.2/graphiql.min.js",
    "react_js": "react@18.3.1/react.production.min.js",
    "react_dom_js": "react-dom@18.3.1/react-dom.production.min.js",
    "page_css": "page.css",
    "page_js": "page.js",
}
# This origin only. GraphiQL's stylesheet embeds its fonts and icons as data:
# URLs; its editors set styles through the DOM (allowed without 'unsafe-inline');
# nothing it runs needs 'unsafe-eval'. Its dialogs add one <style> element, which
# carries this response's nonce (static/page.js hands it over). connect-src 'self'
# covers the websocket to this host too.
CONTENT_SECURITY_POLICY = Template(
    "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self' 'nonce-$nonce'",
            "font-src 'self' data:",
            "img-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )
)
CACHE_FOR_A_YEAR = "public, max-age=31536000, immutable"


def _url(path: str) -> str:
    digest = hashlib.sha256((STATIC / path).read_bytes()).hexdigest()[:16]
    return f"{PREFIX}/{path}?v={digest}"


_PAGE = Template(
    Template((Path(__file__).parent / "page.html").read_text()).safe_substitute(
        {name: _url(path) for name, path in ASSETS.items()}
    )
)


EXAMPLE = """# Mneia's GraphiQL: the whole API, with its documentation in the Docs pane.
#
# Every request needs a token. Put yours in the Headers tab below:
#   {"Authorization": "Bearer mneia_..."}
# `mneia admin bootstrap` prints a workspace's first human's token;
# createActor and createToken mint others. Then run this query
# (Ctrl-Enter, or the run button):

{
  me { id name kind }
  projects { id name }
}
"""
"""What the editor opens with on /graphql: a query that runs as it is, once a token is given.
Anonymous: GraphiQL sends the operation name it last parsed, and a name would outlive a query typed
over it quickly."""

SIGNED_IN_EXAMPLE = """# Mneia's GraphiQL, as the person signed in to the inbox: no token to give,
# the session is yours. The whole API is here, documented in the Docs pane.
# Run this query (Ctrl-Enter, or the run button):

{
  me { id name kind }
  projects { id name }
}
"""
"""What the editor opens with on /inbox/graphiql."""

BEARER_HEADER = '{\n  "Authorization": "Bearer "\n}'
"""What the headers editor opens with on /graphql: where the token goes, to be completed."""


def page(_: Request) -> Response:
    """The GraphiQL page with a fresh nonce; never cached, so that it always names the current files."""
    return page_for("/graphql", "")


def page_for(endpoint: str, csrf: str) -> Response:
    """The page, sending its operations to ``endpoint`` (with ``csrf`` as ``X-Mneia-CSRF`` when given:
    the inbox's session GraphiQL, inbox.session_graphql, which needs no header)."""
    nonce = secrets.token_urlsafe(18)
    example, headers = (SIGNED_IN_EXAMPLE, "") if csrf else (EXAMPLE, BEARER_HEADER)
    return HTMLResponse(
        _PAGE.substitute(
            nonce=nonce,
            endpoint=html.escape(endpoint),
            csrf=html.escape(csrf),
            example=html.escape(example),
            headers=html.escape(headers),
        ),
        headers={
            "Content-Security-Policy": CONTENT_SECURITY_POLICY.substitute(nonce=nonce),
            "Cache-Control": "no-cache",
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
        },
    )


class ImmutableFiles(StaticFiles):
    """The vendored and own files, each cached for a year: its URL changes with its content."""

    def file_response(
        self, full_path: PathLike, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = CACHE_FOR_A_YEAR
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


assets = Mount(PREFIX, app=ImmutableFiles(directory=STATIC), name="graphiql-static")
