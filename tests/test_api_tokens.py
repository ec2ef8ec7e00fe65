"""F14: tokens expire, are listed without their secret, and are revoked through the API (R3).

- ``createActor`` and ``createToken`` may give an expiry (``expiresAt`` or
  ``expiresIn``); after it, the database no longer authenticates the token.
- A human lists and revokes the tokens of the actors it created (and its
  own); an agent its own only; anything else is NOT_FOUND.
- The secret is shown once: a listing carries an id, a short hint and times.
- The database itself decides who may revoke, records who did, at now(), once.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import DEFAULT_REGION, REGION_LENGTH, REGION_PATTERN
from mneia.storage import token
from tests.graphql import Api, Who, World
from tests.support import (
    CHECK_VIOLATION,
    as_caller,
    assert_code,
    assert_human_required,
    database_state,
    refused,
    rows,
    sqlstate,
)

TOKEN_FIELDS = "id hint createdAt expiresAt revokedAt active actor { id } createdBy { id } revokedBy { id }"
CREATE_ACTOR = f"""mutation($k: ActorKind!, $n: String!, $at: DateTime, $in: Duration) {{
  createActor(kind: $k, name: $n, expiresAt: $at, expiresIn: $in) {{
    actor {{ id }} token issued {{ {TOKEN_FIELDS} }} }} }}"""
CREATE_TOKEN = f"""mutation($a: ID!, $at: DateTime, $in: Duration) {{
  createToken(actorId: $a, expiresAt: $at, expiresIn: $in) {{
    actor {{ id }} token issued {{ {TOKEN_FIELDS} }} }} }}"""
TOKENS = f"query($a: ID) {{ tokens(actorId: $a) {{ {TOKEN_FIELDS} }} }}"
REVOKE = f"mutation($i: ID!) {{ revokeToken(id: $i) {{ {TOKEN_FIELDS} }} }}"


async def authenticates(api: Api, token: str) -> bool:
    """Whether ``token`` is accepted; a refusal must say UNAUTHENTICATED (whatever the HTTP status)."""
    response = await api.http.post(
        "/graphql", json={"query": "{ me { id } }"}, headers={"Authorization": f"Bearer {token}"}
    )
    body = response.json()
    if body.get("data"):
        return True
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", body
    return False


async def agent_of(api: Api, world: World, **expiry: str) -> dict[str, Any]:
    data = await api.run(world.human.token, CREATE_ACTOR, k="AGENT", n="bot", **expiry)
    return data["createActor"]


async def token_ids(api: Api, who: Who) -> set[str]:
    return {t["id"] for t in (await api.run(who.token, TOKENS))["tokens"]}


async def test_f14_the_secret_is_shown_once_then_only_an_id_a_hint_and_times(api: Api, world: World) -> None:
    made = await agent_of(api, world)
    issued = made["issued"]
    assert made["token"].startswith(issued["hint"]) and len(issued["hint"]) < 16, made
    assert issued["createdBy"] == {"id": world.human.id} and issued["actor"] == made["actor"]
    assert (issued["expiresAt"], issued["revokedAt"], issued["active"]) == (None, None, True)

    listed = await api.post(world.human.token, TOKENS)
    assert issued in listed["data"]["tokens"], listed
    assert made["token"] not in str(listed), "a listing never carries a secret"
    digests = await rows(api.admin_engine, "SELECT token_hash FROM api_tokens WHERE id = :i", i=issued["id"])
    assert digests[0]["token_hash"] not in str(listed), "nor its digest"


async def test_f14_a_token_expires_by_the_database_clock(api: Api, world: World) -> None:
    """``expiresIn`` counts from the database's now(); once past, the token no longer authenticates."""
    made = await agent_of(api, world, **{"in": "PT1S"})
    assert await authenticates(api, made["token"])
    expires = datetime.fromisoformat(made["issued"]["expiresAt"])
    created = datetime.fromisoformat(made["issued"]["createdAt"])
    assert expires - created == timedelta(seconds=1)
    await asyncio.sleep(1.2)
    assert not await authenticates(api, made["token"])
    (listed,) = [
        t for t in (await api.run(world.human.token, TOKENS))["tokens"] if t["id"] == made["issued"]["id"]
    ]
    assert listed["active"] is False and listed["revokedAt"] is None


async def test_f14_expires_at_keeps_the_token_until_then(api: Api, world: World) -> None:
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    made = await agent_of(api, world, at=later)
    assert datetime.fromisoformat(made["issued"]["expiresAt"]) == datetime.fromisoformat(later)
    assert await authenticates(api, made["token"])


async def test_f14_r14_a_bad_expiry_is_bad_input_and_writes_nothing(api: Api, world: World) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    before = await database_state(api.admin_engine)
    for variables, field in (({"at": past}, "expiresAt"), ({"at": future, "in": "P1D"}, "expiresIn")):
        error = await api.fail(world.human.token, CREATE_ACTOR, k="AGENT", n="bot", **variables)
        assert_code(error, "BAD_USER_INPUT")
        assert error["message"].startswith(field), error
        error = await api.fail(world.human.token, CREATE_TOKEN, a=world.agent.id, **variables)
        assert_code(error, "BAD_USER_INPUT")
    assert await database_state(api.admin_engine) == before


async def test_f14_a_human_revokes_a_token_of_an_actor_it_created(api: Api, world: World) -> None:
    made = await agent_of(api, world)
    revoked = (await api.run(world.human.token, REVOKE, i=made["issued"]["id"]))["revokeToken"]
    assert revoked["revokedBy"] == {"id": world.human.id} and revoked["active"] is False, revoked
    assert not await authenticates(api, made["token"])
    # Revoking again changes nothing: the time of a revocation never moves.
    again = (await api.run(world.human.token, REVOKE, i=made["issued"]["id"]))["revokeToken"]
    assert again["revokedAt"] == revoked["revokedAt"]
    assert await authenticates(api, world.agent.token), "the agent's other token is untouched"


async def test_f14_create_token_mints_another_token_for_an_actor_it_created(api: Api, world: World) -> None:
    second = (await api.run(world.human.token, CREATE_TOKEN, a=world.agent.id, **{"in": "P7D"}))[
        "createToken"
    ]
    assert second["actor"] == {"id": world.agent.id} and second["issued"]["expiresAt"] is not None
    assert await authenticates(api, second["token"])
    assert second["issued"]["id"] in await token_ids(api, Who(world.agent.id, world.agent.token))
    assert_human_required(await api.fail(world.agent.token, CREATE_TOKEN, a=world.agent.id))


async def test_f14_r3_an_agent_sees_and_revokes_its_own_tokens_only(api: Api, world: World) -> None:
    own = await token_ids(api, world.agent)
    human = await token_ids(api, world.human)
    assert own and own < human, "the human who created the agent sees its tokens too"
    (human_own,) = human - own
    error = await api.fail(world.agent.token, REVOKE, i=human_own)
    assert_code(error, "NOT_FOUND")
    assert await authenticates(api, world.human.token)

    (mine,) = own
    revoked = (await api.run(world.agent.token, REVOKE, i=mine))["revokeToken"]
    assert revoked["revokedBy"] == {"id": world.agent.id}, revoked
    assert not await authenticates(api, world.agent.token)


async def test_f14_r3_a_human_cannot_see_or_revoke_tokens_of_actors_it_did_not_create(
    api: Api, world: World
) -> None:
    bob = await api.actor(world.human.token, "HUMAN", "bob")
    bobs = await token_ids(api, bob)
    everything = await token_ids(api, world.human)
    assert len(bobs) == 1 and bobs < everything, "bob sees his own; the human who created bob sees it too"
    for token_id in everything - bobs:  # the human's own and its agent's
        assert_code(await api.fail(bob.token, REVOKE, i=token_id), "NOT_FOUND")
    assert_code(await api.fail(bob.token, REVOKE, i=str(uuid.uuid4())), "NOT_FOUND")
    assert await authenticates(api, world.human.token) and await authenticates(api, world.agent.token)


async def test_f14_the_database_records_who_revoked_at_now_once(
    api: Api, world: World, engine: AsyncEngine
) -> None:
    """Guards of authority.sql and visibility.sql, as raw SQL of the server's role bound to a caller."""
    made = await agent_of(api, world)
    token_id = made["issued"]["id"]
    revoke = "UPDATE api_tokens SET revoked_at = now(), revoked_by = :by WHERE id = :i"

    async with as_caller(engine, world.human) as connection:  # not by someone else's name
        await refused(connection, revoke, by=world.agent.id, i=token_id)
    async with as_caller(engine, world.human) as connection:  # not at a time of one's choosing
        await refused(
            connection,
            "UPDATE api_tokens SET revoked_at = now() - interval '1 day', revoked_by = :by WHERE id = :i",
            by=world.human.id,
            i=token_id,
        )
    bob = await api.actor(world.human.token, "HUMAN", "bob")
    async with as_caller(engine, bob) as connection:  # nobody else's token: the policy hides it
        changed = await connection.execute(text(revoke), {"by": bob.id, "i": token_id})
        assert changed.rowcount == 0
    async with as_caller(engine, world.human) as connection:  # the control: the human may
        # Left out, the revoker is filled in: the actor making the request.
        await connection.execute(
            text("UPDATE api_tokens SET revoked_at = now() WHERE id = :i"), {"i": token_id}
        )
        await connection.commit()
    (row,) = await rows(api.admin_engine, "SELECT revoked_by FROM api_tokens WHERE id = :i", i=token_id)
    assert str(row["revoked_by"]) == world.human.id
    async with as_caller(engine, world.human) as connection:  # and never again, not even to undo it
        await refused(connection, "UPDATE api_tokens SET revoked_at = NULL WHERE id = :i", i=token_id)
    assert not await authenticates(api, made["token"])


async def test_f14_an_expiry_before_creation_is_refused_by_the_database(
    world: World, engine: AsyncEngine
) -> None:
    mint = (
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash, created_by, expires_at)"
        " VALUES (:w, :i, :a, :h, :by, now() + :after)"
    )
    values = {"w": world.workspace_id, "a": world.agent.id, "by": world.human.id}
    async with as_caller(engine, world.human) as connection:  # the control
        await connection.execute(
            text(mint), {**values, "i": uuid.uuid4(), "h": "x" * 64, "after": timedelta(1)}
        )
    async with as_caller(engine, world.human) as connection:
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(mint), {**values, "i": uuid.uuid4(), "h": "y" * 64, "after": -timedelta(seconds=1)}
            )
        assert sqlstate(caught.value) == CHECK_VIOLATION, caught.value


CURRENT = f"{{ currentToken {{ {TOKEN_FIELDS} }} }}"


async def test_f14_current_token_is_the_one_presented(api: Api, world: World) -> None:
    """Each token answers with itself (so a client can show its expiry, or revoke it), never a sibling."""
    first = (await api.run(world.human.token, CREATE_TOKEN, a=world.human.id, **{"in": "PT2H"}))[
        "createToken"
    ]
    second = (await api.run(world.human.token, CREATE_TOKEN, a=world.human.id))["createToken"]
    assert (await api.run(first["token"], CURRENT))["currentToken"] == first["issued"]
    assert (await api.run(second["token"], CURRENT))["currentToken"] == second["issued"]
    agent = (await api.run(world.agent.token, CURRENT))["currentToken"]
    assert agent["actor"] == {"id": world.agent.id} and agent["id"] not in {
        first["issued"]["id"],
        second["issued"]["id"],
    }


async def test_issue_21_an_expiring_token_mints_nothing_that_outlives_it(api: Api, world: World) -> None:
    """A 60-second token minted a token with ``expiresAt: null``, and an agent whose token never
    expired. Now what it mints expires with it at the latest: by default, and a later expiry asked
    for is BAD_USER_INPUT naming the field, with nothing written."""
    short = (await api.run(world.human.token, CREATE_TOKEN, a=world.human.id, **{"in": "PT60S"}))[
        "createToken"
    ]
    ends = datetime.fromisoformat(short["issued"]["expiresAt"])

    minted = (await api.run(short["token"], CREATE_TOKEN, a=world.agent.id))["createToken"]
    assert datetime.fromisoformat(minted["issued"]["expiresAt"]) == ends
    actor = (await api.run(short["token"], CREATE_ACTOR, k="AGENT", n="bot"))["createActor"]
    assert datetime.fromisoformat(actor["issued"]["expiresAt"]) == ends
    sooner = (await api.run(short["token"], CREATE_TOKEN, a=world.agent.id, **{"in": "PT10S"}))["createToken"]
    assert datetime.fromisoformat(sooner["issued"]["expiresAt"]) < ends

    before = await database_state(api.admin_engine)
    later = (ends + timedelta(days=1)).isoformat()
    for variables, field in (({"in": "P1D"}, "expiresIn"), ({"at": later}, "expiresAt")):
        for document, extra in (
            (CREATE_TOKEN, {"a": world.agent.id}),
            (CREATE_ACTOR, {"k": "AGENT", "n": "bot"}),
        ):
            error = await api.fail(short["token"], document, **extra, **variables)
            assert_code(error, "BAD_USER_INPUT")
            assert error["extensions"]["field"] == field and "may not outlast" in error["message"], error
    assert await database_state(api.admin_engine) == before
    # A token without an expiry mints as before: what it is asked for, or nothing that expires.
    assert (await api.run(world.human.token, CREATE_TOKEN, a=world.agent.id))["createToken"]["issued"][
        "expiresAt"
    ] is None


# Tokens name their workspace (issue 25): the lookup states workspace_id = X, as every query does.

TOKEN_TEXT = re.compile(r"mneia_[A-Za-z0-9_-]{65}")


@given(st.uuids())
def test_r1_a_token_names_its_workspace_after_its_secret(workspace_id: uuid.UUID) -> None:
    minted = token.mint(workspace_id)
    assert TOKEN_TEXT.fullmatch(minted), minted
    assert token.workspace_of(minted) == workspace_id


@given(st.text(max_size=80) | st.text(alphabet="mneia_-ABCxyz0189", min_size=60, max_size=75))
def test_r1_any_text_names_a_workspace_or_none_and_never_raises(presented: str) -> None:
    named = token.workspace_of(presented)
    assert named is None or (
        presented.startswith(token.PREFIX)
        and (len(presented) == 71 or token.region_of(presented) is not None)
    )
    assert token.region_of(presented) is None or presented.startswith(token.PREFIX)


# Tokens name their region (issue 25, regions): a server routes by it without reading anything.

REGIONS = st.from_regex(rf"\A{REGION_PATTERN}\Z").filter(lambda name: len(name) <= REGION_LENGTH)


@given(st.uuids(), REGIONS)
def test_r1_a_token_names_its_region_before_its_secret_and_its_workspace_after(
    workspace_id: uuid.UUID, region: str
) -> None:
    """The round trip: minted for a region, a token reads back that region (none for the default
    region, whose tokens keep the form of 0024) and its workspace; its hint is 10 characters."""
    minted = token.mint(workspace_id, region)
    assert token.workspace_of(minted) == workspace_id
    if region == DEFAULT_REGION:
        assert TOKEN_TEXT.fullmatch(minted) and token.region_of(minted) is None
    else:
        assert minted.startswith(f"mneia_{region}_") and token.region_of(minted) == region
    assert token.hint(minted).startswith(token.PREFIX) and len(token.hint(minted)) == token.HINT_LENGTH


@given(st.uuids(), REGIONS, REGIONS)
def test_r1_the_digest_covers_the_region(workspace_id: uuid.UUID, region: str, other: str) -> None:
    """A token made to name another region is another token: its digest differs, so it is unknown."""
    minted = token.mint(workspace_id, region)
    moved = token.PREFIX + ("" if other == DEFAULT_REGION else other + "_") + minted[-65:]
    assert token.region_of(moved) == (None if other == DEFAULT_REGION else other)
    assert (token.digest(moved) == token.digest(minted)) == (moved == minted)


def test_r1_tokens_of_the_old_forms_name_no_region() -> None:
    """Before 0024 (43 characters of secret) and from 0024 (and the workspace): no region, read as the
    default's, even when the secret's first characters look like one (``ab_``)."""
    for body in ("ab_" + "x" * 40, "eu_" + "y" * 62, secrets.token_urlsafe(32)):
        assert token.region_of(token.PREFIX + body) is None
    assert token.region_of("mneia_EU_" + "z" * 65) is None  # no region's name: no token at all
    assert token.workspace_of("mneia_EU_" + "z" * 65) is None


async def test_r1_a_token_authenticates_only_in_the_workspace_it_names(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    """The digest of a token naming workspace A, stored as a token of workspace B's human, finds
    nothing: the lookup is ``workspace_id = A AND token_hash = …``. Stored under A, it works."""
    other_workspace, other = await api.bootstrap("olga")
    forged = token.mint(uuid.UUID(world.workspace_id))
    insert = text(
        "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash)"
        " VALUES (CAST(:ws AS uuid), gen_random_uuid(), CAST(:actor AS uuid), :digest)"
    )
    async with admin_engine.begin() as connection:
        await connection.execute(
            insert, {"ws": other_workspace, "actor": other.id, "digest": token.digest(forged)}
        )
    assert not await authenticates(api, forged)

    honest = token.mint(uuid.UUID(world.workspace_id))
    async with admin_engine.begin() as connection:
        await connection.execute(
            insert, {"ws": world.workspace_id, "actor": world.human.id, "digest": token.digest(honest)}
        )
    assert await authenticates(api, honest)  # control


async def test_r1_a_token_of_the_old_form_is_found_by_its_digest_alone(
    api: Api, world: World, admin_engine: AsyncEngine
) -> None:
    """Minted before 0024, a token names no workspace; it keeps working."""
    old = token.PREFIX + secrets.token_urlsafe(32)
    assert token.workspace_of(old) is None
    async with admin_engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO api_tokens (workspace_id, id, actor_id, token_hash)"
                " VALUES (CAST(:ws AS uuid), gen_random_uuid(), CAST(:actor AS uuid), :digest)"
            ),
            {"ws": world.workspace_id, "actor": world.human.id, "digest": token.digest(old)},
        )
    assert await authenticates(api, old)
    assert not await authenticates(api, old[:-1])  # control
