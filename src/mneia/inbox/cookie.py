"""Who is signed in to the inbox, and the proof that a form was sent from its own page.

What must stay true:

- The token a person pastes is used once, to sign in, and never stored in
  the browser. Signing in mints a token of the person's own for the
  session (``createToken``, expiring after ``SESSION_LIFETIME`` or with the
  pasted token, whichever comes first), and the
  session cookie holds that one: ``HttpOnly`` (no script reads it, so an
  injected one could not steal it), ``SameSite=Strict`` (no other site's
  page or link sends it) and ``Path=/inbox``; ``Secure`` when the page is
  served over https. A copy of the cookie is worth what its token is worth
  until it expires or the person signs out, which revokes it; the pasted
  token is not exposed by it. Every request authenticates the session's
  token again in the database, so a revoked or expired one ends the session
  at once, and nothing about sessions is kept by the server process.
- Every form carries a CSRF token: before sign-in, a random value that must
  equal the one in a ``SameSite=Strict`` cookie (double submit); once signed
  in, an HMAC of a fixed label keyed by the session's token, which only a
  page that knows the token could compute, and which reveals nothing of it.
  A state-changing request must also come from this origin when the browser
  says where it comes from (``Sec-Fetch-Site``, ``Origin``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from urllib.parse import quote, unquote, urlsplit

from starlette.requests import Request
from starlette.responses import Response

SESSION = "mneia_inbox"
PRESESSION = "mneia_inbox_csrf"
SAID = "mneia_inbox_said"
"""What an action said, for the page a form sent without htmx lands on (once)."""
SAID_LIMIT = 1000
PATH = "/inbox"
SESSION_LIFETIME = timedelta(hours=12)
"""How long a sign-in lasts at most (a working day); never longer than the token pasted to sign in."""
_LABEL = b"mneia inbox csrf v1"
_SEPARATOR = "."  # in neither a token (URL-safe base64 after "mneia_") nor a UUID


def session_value(secret: str, token_id: str) -> str:
    """The session cookie: the session token's secret, and its id (to revoke it at sign-out)."""
    return f"{secret}{_SEPARATOR}{token_id}"


def signed_in(request: Request) -> tuple[str, str | None] | None:
    """The session's token and its id (None for a cookie that names none), or None."""
    value = request.cookies.get(SESSION)
    if not value:
        return None
    secret, separator, token_id = value.rpartition(_SEPARATOR)
    return (secret, token_id or None) if separator and secret else (value, None)


def csrf_for(token: str) -> str:
    """The CSRF token of a session: an HMAC keyed by its bearer token, so it cannot be forged without it."""
    return hmac.new(token.encode(), _LABEL, hashlib.sha256).hexdigest()


def presession(request: Request) -> str:
    """The sign-in form's CSRF value: the one already in the browser's cookie, else a new one."""
    return request.cookies.get(PRESESSION) or secrets.token_urlsafe(24)


def same_origin(request: Request) -> bool:
    """False when the browser says the request came from another site or origin.

    ``Origin``'s host is compared with ``Host`` (not the scheme, which a proxy
    that ends TLS changes); a browser that sends neither header is left to
    the CSRF token and ``SameSite``.
    """
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def sent_with(request: Request, form: dict[str, str], expected: str | None) -> bool:
    """Whether a form's ``csrf`` field is the expected value, sent from this origin."""
    given = form.get("csrf", "")
    return bool(expected) and same_origin(request) and hmac.compare_digest(given, expected or "")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def keep(response: Response, request: Request, name: str, value: str) -> None:
    response.set_cookie(
        name, value, path=PATH, httponly=True, samesite="strict", secure=_secure(request), max_age=None
    )


def forget(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(name, path=PATH, httponly=True, samesite="strict", secure=_secure(request))


def say(response: Response, request: Request, said: str, failed: bool) -> None:
    """Keep what an action said for the next page this browser reads (a plain form's redirect)."""
    text = said if len(said) <= SAID_LIMIT else said[: SAID_LIMIT - 1] + "…"
    keep(response, request, SAID, ("1" if failed else "0") + quote(text))


def said(request: Request) -> tuple[str, bool] | None:
    """What the last action said, if this browser has not been shown it yet: (text, failed)."""
    value = request.cookies.get(SAID)
    if not value or value[0] not in "01":
        return None
    return unquote(value[1:]), value[0] == "1"
