"""Issue 21: a request body has a limit, enforced while it streams in, before authentication.

One POST of 200 MB with no token took 9.9 s to answer 401 and left the
server 400 MB larger. Now a body past ``MNEIA_MAX_BODY_BYTES`` (4 MiB by
default) is answered 413 with the JSON refusal every client parses, whether
it declared its length or streamed without one, on every route; a body within
the limit is read as before. The last test sends 100 MB to a real ``mneia
serve`` and reads its memory afterwards.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.app import create_app
from mneia.config import DEFAULT_MAX_BODY_BYTES, Settings
from tests.graphql import Api, World
from tests.live import cli_env, serving

LIMIT = 64 * 1024


@pytest.fixture(scope="module")
async def limited(engine: AsyncEngine) -> AsyncIterator[httpx.AsyncClient]:
    settings = dataclasses.replace(Settings.from_env(), max_body_bytes=LIMIT)
    app = create_app(engine, dispose_engine=False, settings=settings)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as client:
        yield client


def padded(size: int) -> bytes:
    """A GraphQL request of exactly ``size`` bytes."""
    head, tail = b'{"query": "{ me { id } }", "extensions": {"pad": "', b'"}}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def chunks(body: bytes, size: int = 8192) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


async def streamed(body: bytes, size: int = 8192) -> AsyncIterator[bytes]:
    """Sent without a Content-Length (chunked)."""
    for chunk in chunks(body, size):
        yield chunk


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["errors"][0]
    assert error["extensions"] == {"code": "PAYLOAD_TOO_LARGE", "limit": LIMIT}
    assert str(LIMIT) in error["message"]


@pytest.mark.parametrize("path", ["/graphql", "/mcp", "/inbox/sign-in"])
async def test_a_declared_body_past_the_limit_is_refused_413_before_authentication(
    limited: httpx.AsyncClient, path: str
) -> None:
    """No token, so a body within the limit would be 401 (or the route's own answer): the size
    is refused first, on every route."""
    response = await limited.post(
        path, content=padded(LIMIT + 1), headers={"content-type": "application/json"}
    )
    assert_refused(response)


async def test_a_streamed_body_is_counted_as_it_arrives_and_refused_when_it_passes_the_limit(
    limited: httpx.AsyncClient,
) -> None:
    body = streamed(padded(10 * LIMIT))
    response = await limited.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_refused(response)


async def test_a_body_at_the_limit_is_read_as_before(limited: httpx.AsyncClient) -> None:
    for body in (padded(LIMIT), streamed(padded(LIMIT))):
        response = await limited.post("/graphql", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 401, response.text  # read, parsed, then refused for the token
        assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


def test_the_limit_is_configured_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEIA_MAX_BODY_BYTES", raising=False)
    assert Settings.from_env().max_body_bytes == DEFAULT_MAX_BODY_BYTES == 4 * 1024 * 1024
    monkeypatch.setenv("MNEIA_MAX_BODY_BYTES", "1024")
    assert Settings.from_env().max_body_bytes == 1024
    monkeypatch.setenv("MNEIA_MAX_BODY_BYTES", "lots")
    with pytest.raises(ValueError, match="MNEIA_MAX_BODY_BYTES"):
        Settings.from_env()


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc")
def test_100_mb_without_a_token_leaves_the_servers_memory_as_it_was(admin_url: str, tmp_path: Path) -> None:
    """The reproduction: 100 MB, no token, to ``mneia serve``. Refused 413, quickly, and the
    server's resident memory grows by less than 20 MiB (it grew by 400 MB for 200 MB)."""
    with serving([], cli_env(tmp_path, DATABASE_URL=admin_url), tmp_path) as (process, base):
        with httpx.Client(base_url=base, timeout=120) as client:
            client.post("/graphql", json={"query": "{ me { id } }"})  # warm: the first request's imports
            before = resident_mib(process.pid)
            started = time.monotonic()
            response = client.post(
                "/graphql",
                content=chunks(b"x" * (100 * 1024 * 1024), 1 << 20),
                headers={"content-type": "application/json"},
            )
            took = time.monotonic() - started
            after = resident_mib(process.pid)
            assert response.status_code == 413
            assert after - before < 20, (before, after)
            light = client.post("/graphql", json={"query": "{ me { id } }"})
            assert light.status_code == 401  # still answering; no token
        print(f"100 MB refused in {took:.2f} s; resident {before:.0f} -> {after:.0f} MiB")


async def test_an_answer_past_the_response_limit_is_an_error_never_a_truncated_body(
    engine: AsyncEngine, api: Api, world: World
) -> None:
    """The backstop behind the cost rule (issue 21): an answer over ``MNEIA_MAX_RESPONSE_BYTES`` is
    not sent; the client gets RESPONSE_TOO_LARGE with the size and the limit, and a small answer
    passes."""
    for n in range(20):
        await api.assert_item(
            world.human.token, projectId=world.project_id, statement=f"Fact {n} " + "x" * 200
        )
    settings = dataclasses.replace(Settings.from_env(), max_response_bytes=4000)
    app = create_app(engine, dispose_engine=False, settings=settings)
    page = {
        "query": "query($p: ID!) { items(projectId: $p) { nodes { statement } } }",
        "variables": {"p": world.project_id},
    }
    headers = {"Authorization": f"Bearer {world.human.token}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as client:
        plain = await client.post("/graphql", json=page, headers=headers)
        assert plain.status_code == 200 and plain.json()["data"] is None
        (error,) = plain.json()["errors"]
        assert error["extensions"]["code"] == "RESPONSE_TOO_LARGE" and error["extensions"]["limit"] == 4000
        assert error["extensions"]["value"] > 4000
        strict = await client.post(
            "/graphql", json=page, headers={**headers, "Accept": "application/graphql-response+json"}
        )
        assert strict.status_code == 400 and "data" not in strict.json()
        small = await client.post("/graphql", json={"query": "{ me { id } }"}, headers=headers)
        assert small.json() == {"data": {"me": {"id": world.human.id}}}
