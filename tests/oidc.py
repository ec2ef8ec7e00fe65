"""An OpenID provider for the tests, and a browser's way through a sign-in with it.

The provider is ``oidc-provider-mock`` (Authlib's own authorization server on
Flask) serving in a thread of this process over real HTTP; Mneia runs in
process (httpx.ASGITransport) with its sign-in configured for it. ``follow``
takes each redirect to the host it names, as a browser would. The provider
can be told to sign the next ID tokens with other claims (``Provider.tamper``),
with its own key, as a provider that issued them to someone else would.
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import flask
import httpx
import werkzeug.serving
from joserfc import jwt
from joserfc.jwk import RSAKey

from mneia.inbox import cookie

with warnings.catch_warnings():  # the provider imports Authlib's deprecated authlib.jose
    warnings.simplefilter("ignore", DeprecationWarning)
    import oidc_provider_mock

QUIET = "ignore:get_jwt_config:DeprecationWarning"
"""The provider's server side still uses Authlib's older hooks (Mneia's client side uses none of
them): the filter a test module using it marks itself with."""

MNEIA = "http://mneia.test"
CLIENT_ID = "mneia-inbox"


@dataclass
class Provider:
    url: str
    tamper: dict[str, Any] = field(default_factory=dict)
    """Claims the next ID tokens carry instead of the provider's own."""
    token_requests: list[str] = field(default_factory=list)

    def person(self, subject: str, **claims: Any) -> None:
        answer = httpx.put(f"{self.url}/users/{subject}", json=claims)
        assert answer.status_code == 204, answer.text


@contextmanager
def provider(max_age: timedelta = timedelta(hours=1)) -> Iterator[Provider]:
    """An OpenID provider on 127.0.0.1; ``max_age`` is its ID tokens' lifetime (negative: born expired)."""
    app = oidc_provider_mock.app(require_nonce=True, access_token_max_age=max_age)
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    served = Provider(f"http://127.0.0.1:{server.server_port}")

    @app.after_request
    def resign(response: flask.Response) -> flask.Response:
        if flask.request.path != "/oauth2/token" or response.status_code != 200:
            return response
        served.token_requests.append(flask.request.form.get("code", ""))
        if served.tamper:
            key = RSAKey.import_key(flask.g.oidc_provider_mock_storage.jwk.as_dict(is_private=True))
            body = response.get_json()
            issued = jwt.decode(body["id_token"], key)
            body["id_token"] = jwt.encode(issued.header, {**issued.claims, **served.tamper}, key)
            response.set_data(flask.json.dumps(body))
        return response

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


async def follow(mneia: httpx.AsyncClient, response: httpx.Response) -> httpx.Response:
    """Follow redirects as a browser does, each hop to its host: Mneia in process (at ``mneia``'s base
    URL), the provider over TCP."""
    async with httpx.AsyncClient() as outside:
        while response.is_redirect:
            target = str(response.url.join(response.headers["location"]))
            if urlsplit(target).netloc == mneia.base_url.netloc.decode():
                response = await mneia.get(target)
            else:
                response = await outside.get(target)
    return response


async def sign_in(mneia: httpx.AsyncClient, subject: str) -> httpx.Response:
    """/auth/login, the provider's page where the person approves as ``subject``, back to the callback."""
    form = await follow(mneia, await mneia.get("/auth/login"))
    assert form.status_code == 200 and "oauth2/authorize" in str(form.url), form.text
    async with httpx.AsyncClient() as outside:
        approved = await outside.post(str(form.url), data={"sub": subject})
    assert approved.status_code == 302, approved.text
    assert approved.headers["location"].startswith(str(mneia.base_url).rstrip("/") + "/auth/callback?"), (
        approved.headers
    )
    return await follow(mneia, approved)


def session_token(response: httpx.Response) -> str:
    """The token the inbox's cookie holds, from a response that set it."""
    (header,) = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{cookie.SESSION}=")]
    value = header.split(";")[0].split("=", 1)[1]
    return value.rpartition(".")[0]


def set_cookies(response: httpx.Response) -> list[str]:
    return [h.split("=")[0] for h in response.headers.get_list("set-cookie")]


def person(idp: Provider, label: str, **claims: Any) -> tuple[str, str]:
    """A person the provider knows: their subject and email (verified unless told otherwise)."""
    subject, email = f"sub-{uuid.uuid4().hex}", f"{label}-{uuid.uuid4().hex[:6]}@example.com"
    idp.person(subject, **{"email": email, "email_verified": True, "name": label.title(), **claims})
    return subject, email
