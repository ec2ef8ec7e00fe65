"""R19: one person is one identity and at most one human actor per workspace; an agent never has one;
a workspace never learns another workspace's actors or names.

The people here sign in as the server signs them in once it has validated a
provider's ID token (storage.identity: ``mneia_sign_in`` and
``mneia_sign_in_session``, as ``mneia_app``); the provider itself is in
tests/test_oidc.py. Raw SQL runs as the server's role, bound by a token, or
as the owner and the administrator where a guard must bind them too.

Checked by hand once, each in a scratch database: with ``actors_identity_human``
dropped, ``test_r19_an_agent_is_never_linked_to_an_identity`` fails (the owner's
UPDATE goes through); with ``mneia_memberships_of`` reading every human actor
(its ``a.identity_id = person`` removed), ``test_r19_my_memberships_are_the_callers_person_only``
fails (the other person's workspace appears); with ``actor_person`` made ``TO public``,
``test_r19_a_workspace_never_reads_another_workspaces_actors`` fails.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage import identity, token
from mneia.storage.database import transaction
from tests import support
from tests.graphql import Api, Who
from tests.support import (
    CHECK_VIOLATION,
    UNIQUE_VIOLATION,
    as_caller,
    as_nobody,
    assert_human_required,
    constraint_of,
    database_state,
    denied,
    node_engine,
    refused,
    rows,
    sqlstate,
)

ISSUER = "https://idp.example"
INVITE = (
    "mutation($e: String!, $in: Duration) { createInvitation(email: $e, expiresIn: $in) { id email open } }"
)
MEMBERSHIPS = "{ myMemberships { workspace { id name region } actor { id name kind } } }"


@dataclass(frozen=True)
class Person:
    subject: str
    email: str
    name: str


async def invite(api: Api, by: Who, email: str) -> str:
    data = await api.run(by.token, INVITE, e=email)
    return data["createInvitation"]["id"]


async def sign_in(
    engine: AsyncEngine, person: Person, email: str | None = ""
) -> list[identity.MembershipRecord]:
    """As the server once the provider vouched for ``person`` (``email``: the verified one; None: none);
    on Citus (``MNEIA_TEST_CITUS``), in its steps, each acceptance on its workspace's node."""
    verified = person.email if email == "" else email
    if support.ROUTED is not None:
        return await identity.sign_in_routed(support.ROUTED, ISSUER, person.subject, verified, person.name)
    async with transaction(engine) as tx:
        return await identity.sign_in(tx, ISSUER, person.subject, verified, person.name)


async def session(engine: AsyncEngine, person: Person, workspace_id: str, hours: int = 12) -> Who:
    """The person's session token in one workspace, as the sign-in's last step mints it (on Citus,
    on the workspace's node)."""
    if support.ROUTED is not None:
        engine = await support.ROUTED.engine(uuid.UUID(workspace_id))
    async with transaction(engine) as tx:
        opened = await identity.open_session(
            tx, ISSUER, person.subject, uuid.UUID(workspace_id), timedelta(hours=hours)
        )
    assert opened is not None
    secret, _ = opened
    async with transaction(engine) as tx:
        me = await token.authenticate(tx, secret)
    assert me is not None
    return Who(str(me.id), secret)


def fresh(label: str) -> Person:
    tag = uuid.uuid4().hex[:8]
    return Person(f"sub|{uuid.uuid4().hex}", f"{label}-{tag}@example.com", f"{label.title()} {tag}")


@dataclass(frozen=True)
class Two:
    """Pat is a member of W1 and W2; Quinn of W1 and W3; each workspace has a bootstrapped human."""

    w1: str
    w2: str
    w3: str
    admins: dict[str, Who]
    pat: Person
    quinn: Person


@pytest.fixture(scope="module")
async def two(api: Api, engine: AsyncEngine) -> Two:
    pat, quinn = fresh("pat"), fresh("quinn")
    w1, a1 = await api.bootstrap("admin-one")
    w2, a2 = await api.bootstrap("admin-two")
    w3, a3 = await api.bootstrap("admin-three")
    for by, person in ((a1, pat), (a2, pat), (a1, quinn), (a3, quinn)):
        await invite(api, by, person.email)
    assert {m.workspace_id for m in await sign_in(engine, pat)} == {uuid.UUID(w1), uuid.UUID(w2)}
    assert {m.workspace_id for m in await sign_in(engine, quinn)} == {uuid.UUID(w1), uuid.UUID(w3)}
    return Two(w1, w2, w3, {w1: a1, w2: a2, w3: a3}, pat, quinn)


async def workspace_name(admin_engine: AsyncEngine, workspace_id: str) -> str:
    (found,) = await rows(
        admin_engine, "SELECT name FROM workspaces WHERE id = CAST(:w AS uuid)", w=workspace_id
    )
    return str(found["name"])


# --- Who an identity can be ----------------------------------------------------------------------


async def test_r19_an_agent_is_never_linked_to_an_identity(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine, two: Two
) -> None:
    """The database refuses an agent's identity for every role: the server's, the owner's, a superuser's."""
    admin = two.admins[two.w1]
    agent = await api.actor(admin.token, "AGENT", "claude-code")
    (pat,) = await rows(
        admin_engine,
        "SELECT identity_id FROM actors WHERE workspace_id = CAST(:w AS uuid) AND identity_id IS NOT NULL"
        " AND name = :n",
        w=two.w1,
        n=two.pat.name,
    )
    link = "UPDATE actors SET identity_id = CAST(:i AS uuid) WHERE id = CAST(:a AS uuid)"
    before = await database_state(admin_engine)
    # The server's role may not change an actor at all, nor create one with an identity.
    async with as_caller(engine, admin) as connection:
        await denied(connection, link, i=str(pat["identity_id"]), a=agent.id)
    async with as_caller(engine, admin) as connection:
        await refused(
            connection,
            "INSERT INTO actors (workspace_id, id, kind, name, identity_id, created_by)"
            " VALUES (CAST(:w AS uuid), CAST(:id AS uuid), 'AGENT', 'linked', CAST(:i AS uuid),"
            " CAST(:by AS uuid))",
            w=two.w1,
            id=str(uuid.uuid4()),
            i=str(pat["identity_id"]),
            by=admin.id,
        )
    # The owner (bound, under its policy actor_erase) and the administrator meet the CHECK: on
    # Citus on W1's node, where the owner's binding verifies.
    at_w1 = await node_engine(admin_engine, admin, admin=True)
    for as_owner in (True, False):
        async with at_w1.connect() as connection:
            await connection.begin()
            if as_owner:
                await connection.execute(text(f"SET LOCAL ROLE {OWNER_ROLE}"))
                await connection.execute(
                    text("SELECT mneia_bind(CAST(:w AS uuid), CAST(:a AS uuid))"),
                    {"w": two.w1, "a": admin.id},
                )
            with pytest.raises(DBAPIError) as caught:
                await connection.execute(text(link), {"i": str(pat["identity_id"]), "a": agent.id})
            assert sqlstate(caught.value) == CHECK_VIOLATION, caught.value
            assert constraint_of(caught.value) == "actors_identity_human"
            await connection.rollback()
    # A new agent with an identity, written by the administrator past every policy.
    async with at_w1.connect() as connection:
        await connection.begin()
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(
                    "INSERT INTO actors (workspace_id, id, kind, name, identity_id)"
                    " VALUES (CAST(:w AS uuid), CAST(:id AS uuid), 'AGENT', 'linked', CAST(:i AS uuid))"
                ),
                {"w": two.w1, "id": str(uuid.uuid4()), "i": str(pat["identity_id"])},
            )
        assert constraint_of(caught.value) == "actors_identity_human"
        await connection.rollback()
    # Control: the same UPDATE of a human's (here, to the identity it already has) passes the CHECK.
    async with admin_engine.connect() as connection:
        await connection.begin()
        changed = await connection.execute(
            text("UPDATE actors SET identity_id = identity_id WHERE identity_id = CAST(:i AS uuid)"),
            {"i": str(pat["identity_id"])},
        )
        assert changed.rowcount == 2  # Pat's actors of W1 and W2
        await connection.rollback()
    assert await database_state(admin_engine) == before
    # And no agent of the whole database has an identity.
    (agents,) = await rows(
        admin_engine, "SELECT count(*) AS n FROM actors WHERE kind = 'AGENT' AND identity_id IS NOT NULL"
    )
    assert agents["n"] == 0


async def test_r19_a_person_is_one_human_actor_per_workspace(admin_engine: AsyncEngine, two: Two) -> None:
    (pat,) = await rows(
        admin_engine,
        "SELECT identity_id FROM actors WHERE workspace_id = CAST(:w AS uuid) AND name = :n",
        w=two.w1,
        n=two.pat.name,
    )
    # On Citus, on W1's node: a shard's refusal relayed by another node does not name its constraint.
    at_w1 = await node_engine(admin_engine, two.admins[two.w1], admin=True)
    async with at_w1.connect() as connection:
        await connection.begin()
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(
                    "INSERT INTO actors (workspace_id, id, kind, name, identity_id)"
                    " VALUES (CAST(:w AS uuid), CAST(:id AS uuid), 'HUMAN', 'again', CAST(:i AS uuid))"
                ),
                {"w": two.w1, "id": str(uuid.uuid4()), "i": str(pat["identity_id"])},
            )
        assert sqlstate(caught.value) == UNIQUE_VIOLATION
        assert constraint_of(caught.value) == "actors_identity"
        await connection.rollback()
    # One identity per issuer and subject.
    async with at_w1.connect() as connection:
        await connection.begin()
        with pytest.raises(DBAPIError) as caught:
            await connection.execute(
                text(
                    "INSERT INTO identities (id, display_name, issuer, subject) VALUES (:i, 'x', :iss, :sub)"
                ),
                {"i": uuid.uuid4(), "iss": ISSUER, "sub": two.pat.subject},
            )
        assert constraint_of(caught.value) == "identities_oidc"
        await connection.rollback()


# --- What a workspace learns ---------------------------------------------------------------------


async def test_r19_my_memberships_are_the_callers_person_only(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine, two: Two
) -> None:
    names = {w: await workspace_name(admin_engine, w) for w in (two.w1, two.w2, two.w3)}
    pat_in_w1 = await session(engine, two.pat, two.w1)
    data = await api.run(pat_in_w1.token, MEMBERSHIPS)
    seen = {(m["workspace"]["id"], m["workspace"]["name"], m["actor"]["name"]) for m in data["myMemberships"]}
    assert seen == {(two.w1, names[two.w1], two.pat.name), (two.w2, names[two.w2], two.pat.name)}
    assert {m["workspace"]["region"] for m in data["myMemberships"]} == {"local"}
    assert {m["actor"]["kind"] for m in data["myMemberships"]} == {"HUMAN"}
    assert pat_in_w1.id in {m["actor"]["id"] for m in data["myMemberships"]}
    # Quinn, in W1 too, sees W3, never W2; Pat never W3.
    quinn_in_w1 = await session(engine, two.quinn, two.w1)
    theirs = await api.run(quinn_in_w1.token, MEMBERSHIPS)
    assert {m["workspace"]["id"] for m in theirs["myMemberships"]} == {two.w1, two.w3}
    assert names[two.w3] not in str(data) and two.quinn.name not in str(data)
    # The same through the function itself, as the server's role bound by Pat's token.
    async with as_caller(engine, pat_in_w1) as connection:
        found = await connection.execute(text("SELECT workspace_id, actor_name FROM mneia_my_memberships()"))
        assert {(str(row.workspace_id), row.actor_name) for row in found} == {
            (two.w1, two.pat.name),
            (two.w2, two.pat.name),
        }
    # Without a context, nobody: nothing.
    async with as_nobody(engine) as connection:
        assert (
            await connection.execute(text("SELECT count(*) FROM mneia_my_memberships()"))
        ).scalar_one() == 0


async def test_r19_memberships_of_an_unlinked_human_or_an_agent_are_their_own(
    api: Api, engine: AsyncEngine, two: Two
) -> None:
    admin = two.admins[two.w1]
    agent = await api.actor(admin.token, "AGENT", "codex")
    for who, kind in ((admin, "HUMAN"), (agent, "AGENT")):
        data = await api.run(who.token, MEMBERSHIPS)
        assert [
            (m["workspace"]["id"], m["actor"]["id"], m["actor"]["kind"]) for m in data["myMemberships"]
        ] == [(two.w1, who.id, kind)]


async def test_r19_a_workspace_never_reads_another_workspaces_actors(
    engine: AsyncEngine, admin_engine: AsyncEngine, two: Two
) -> None:
    """Raw SQL as the server's role: Pat in W1 counts W1's actors and workspace only, even naming
    Pat's identity in the settings the owner's functions use (those policies are the owner's)."""
    pat_in_w1 = await session(engine, two.pat, two.w1)
    (pat,) = await rows(
        admin_engine, "SELECT identity_id FROM actors WHERE id = CAST(:a AS uuid)", a=pat_in_w1.id
    )
    (w1_actors,) = await rows(
        admin_engine, "SELECT count(*) AS n FROM actors WHERE workspace_id = CAST(:w AS uuid)", w=two.w1
    )
    forge = (
        "SELECT set_config('mneia.person_identity', :i, true), set_config('mneia.person_issuer', :iss, true),"
        " set_config('mneia.person_subject', :sub, true), set_config('mneia.person_email', :e, true),"
        " set_config('mneia.person_identities', :all, true), set_config('mneia.person_workspaces', :ws, true)"
    )
    (everyone,) = await rows(admin_engine, "SELECT array_agg(id)::text AS ids FROM identities")
    both = "{" + ",".join([two.w1, two.w2]) + "}"
    async with as_caller(engine, pat_in_w1) as connection:
        await connection.execute(
            text(forge),
            {
                "i": str(pat["identity_id"]),
                "iss": ISSUER,
                "sub": two.pat.subject,
                "e": two.pat.email,
                "all": everyone["ids"],
                "ws": both,
            },
        )
        actors = (await connection.execute(text("SELECT workspace_id, name FROM actors"))).all()
        assert {str(row.workspace_id) for row in actors} == {two.w1}
        assert len(actors) == w1_actors["n"]
        workspaces = (await connection.execute(text("SELECT id FROM workspaces"))).all()
        assert [str(row.id) for row in workspaces] == [two.w1]
        # The invitations Pat and Quinn accepted elsewhere stay there.
        invited = (await connection.execute(text("SELECT DISTINCT workspace_id FROM invitations"))).all()
        assert {str(row.workspace_id) for row in invited} == {two.w1}
        # Identities: none read directly, every id named in the settings notwithstanding (the
        # owner's policies); through mneia_identities_of, those of W1's actors only.
        direct = (await connection.execute(text("SELECT count(*) FROM identities"))).scalar_one()
        assert direct == 0
        actor_ids = [row.id for row in await connection.execute(text("SELECT id FROM actors"))]
        linked = (
            await connection.execute(
                text("SELECT count(DISTINCT identity_id) FROM mneia_identities_of(CAST(:a AS uuid[]))"),
                {"a": actor_ids},
            )
        ).scalar_one()
    (w1_linked,) = await rows(
        admin_engine,
        "SELECT count(DISTINCT a.identity_id) AS n FROM actors a JOIN identities i ON i.id = a.identity_id"
        " WHERE a.workspace_id = CAST(:w AS uuid) AND i.issuer IS NOT NULL",
        w=two.w1,
    )
    assert linked == w1_linked["n"] > 0
    # Nor through a sign-in's states, which are the owner's alone.
    async with as_caller(engine, pat_in_w1) as connection:
        await denied(connection, "SELECT * FROM sign_in_states")


async def test_r19_actor_identity_shows_the_link_and_the_issuer_never_across_workspaces(
    api: Api, engine: AsyncEngine, two: Two
) -> None:
    pat_in_w1 = await session(engine, two.pat, two.w1)
    pat_in_w2 = await session(engine, two.pat, two.w2)
    query = "{ me { id identity { id displayName issuer } } }"
    one = (await api.run(pat_in_w1.token, query))["me"]["identity"]
    other = (await api.run(pat_in_w2.token, query))["me"]["identity"]
    assert one["issuer"] == other["issuer"] == ISSUER
    assert one["displayName"] == other["displayName"] == two.pat.name
    assert one["id"] != other["id"], "two workspaces must not match a person by id"
    # The bootstrapped human of W1 and an agent: no identity to show.
    admin = two.admins[two.w1]
    agent = await api.actor(admin.token, "AGENT", "cursor")
    for who in (admin, agent):
        assert (await api.run(who.token, query))["me"]["identity"] is None
    # W1's human sees that Pat is linked (through any actor field), and no subject or email.
    data = await api.run(
        admin.token,
        "{ invitations { email acceptedBy { id name identity { issuer } } } }",
    )
    accepted = {i["email"]: i["acceptedBy"] for i in data["invitations"]}
    assert accepted[two.pat.email] == {
        "id": pat_in_w1.id,
        "name": two.pat.name,
        "identity": {"issuer": ISSUER},
    }
    assert two.pat.subject not in str(data)
    # In Pat's memberships, the actor of W2 shows as nobody W1 can link.
    memberships = await api.run(pat_in_w1.token, "{ myMemberships { actor { id identity { id } } } }")
    shown = {m["actor"]["id"]: m["actor"]["identity"] for m in memberships["myMemberships"]}
    assert shown[pat_in_w1.id] == {"id": one["id"]}
    assert shown[pat_in_w2.id] is None


# --- Invitations and sign-in ---------------------------------------------------------------------


async def test_r19_an_invitation_is_accepted_once_then_the_person_is_found_by_subject(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine
) -> None:
    ws, admin = await api.bootstrap("admin")
    robin = fresh("robin")
    invitation = await invite(api, admin, robin.email.upper())  # stored as the address, lower case
    assert await sign_in(engine, robin, email=None) == [], "an unverified email accepts nothing"
    (joined,) = await sign_in(engine, robin)
    assert (str(joined.workspace_id), joined.actor_name) == (ws, robin.name)
    (stored,) = await rows(
        admin_engine,
        "SELECT email, accepted_at IS NOT NULL AS accepted, accepted_actor_id FROM invitations WHERE id = :i",
        i=uuid.UUID(invitation),
    )
    assert stored == {"email": robin.email, "accepted": True, "accepted_actor_id": joined.actor_id}
    # A second invitation of the same address, then a sign-in whose email changed: the same actor,
    # found by issuer and subject; the new invitation stays open (no second actor).
    await invite(api, admin, robin.email)
    again = await sign_in(engine, robin, email="robin-new@example.org")
    assert again == [joined]
    (kept,) = await rows(
        admin_engine,
        "SELECT count(*) AS actors FROM actors WHERE workspace_id = CAST(:w AS uuid) AND name = :n",
        w=ws,
        n=robin.name,
    )
    assert kept["actors"] == 1
    listed = await api.run(admin.token, "{ invitations { email open acceptedAt invitedBy { id } } }")
    assert [(i["email"], i["open"]) for i in listed["invitations"]] == [
        (robin.email, True),
        (robin.email, False),
    ]
    assert {i["invitedBy"]["id"] for i in listed["invitations"]} == {admin.id}
    # Nobody the database knows, with nothing to accept: no membership.
    assert await sign_in(engine, fresh("stranger")) == []


async def test_r19_r18_an_erased_actor_takes_its_workspace_out_of_the_persons_memberships(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine
) -> None:
    """A person's workspaces are read from their links (``identity_links``, migration 0037): one
    written with each actor a sign-in links, and removed when a human of the workspace erases
    the actor (R18), so that neither ``myMemberships`` nor a sign-in offers that workspace again,
    and its invitations may be accepted anew. The control: the other workspace stays; and a
    link left behind by hand shows nothing, each actor being read by its key as well."""
    kept, kept_admin = await api.bootstrap("kept-admin")
    left, left_admin = await api.bootstrap("left-admin")
    sam = fresh("sam")
    for by in (kept_admin, left_admin):
        await invite(api, by, sam.email)
    joined = {str(m.workspace_id): m for m in await sign_in(engine, sam)}
    assert set(joined) == {kept, left}
    sam_in_kept = await session(engine, sam, kept)
    mine = await api.run(sam_in_kept.token, MEMBERSHIPS)
    assert {m["workspace"]["id"] for m in mine["myMemberships"]} == {kept, left}
    erase = 'mutation($a: ID!) { eraseActor(id: $a, reason: "left") { id erased } }'
    await api.run(left_admin.token, erase, a=str(joined[left].actor_id))
    mine = await api.run(sam_in_kept.token, MEMBERSHIPS)
    assert {m["workspace"]["id"] for m in mine["myMemberships"]} == {kept}
    assert {str(m.workspace_id) for m in await sign_in(engine, sam)} == {kept}
    links = await rows(
        admin_engine,
        "SELECT l.workspace_id FROM identity_links l JOIN identities i ON i.id = l.identity_id"
        " WHERE i.subject = :s",
        s=sam.subject,
    )
    assert {str(row["workspace_id"]) for row in links} == {kept}
    async with as_caller(engine, sam_in_kept) as connection:  # the owner's alone
        await denied(connection, "SELECT count(*) FROM identity_links")
    # A link put back by hand to the erased actor: read by its key, the actor is erased, so nothing.
    (person,) = await rows(admin_engine, "SELECT id FROM identities WHERE subject = :s", s=sam.subject)
    async with (await node_engine(admin_engine, left_admin, admin=True)).begin() as connection:
        await connection.execute(
            text("INSERT INTO identity_links (identity_id, workspace_id, actor_id) VALUES (:i, :w, :a)"),
            {"i": person["id"], "w": uuid.UUID(left), "a": joined[left].actor_id},
        )
    mine = await api.run(sam_in_kept.token, MEMBERSHIPS)
    assert {m["workspace"]["id"] for m in mine["myMemberships"]} == {kept}
    # Invited again, Sam joins again: a new actor, whose link replaces the one left behind.
    await invite(api, left_admin, sam.email)
    again = {str(m.workspace_id): m for m in await sign_in(engine, sam)}
    assert set(again) == {kept, left} and again[left].actor_id != joined[left].actor_id


async def test_r19_an_open_invitations_email_is_kept_beside_it_until_it_is_accepted(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine
) -> None:
    """A sign-in finds a person's invitations by their email in ``invitation_emails`` (migration
    0038), written beside each invitation by ``mneia_invite``, the server's one way to invite, and
    removed when the invitation is accepted; the owner's alone, and ``mneia_app`` may no longer
    insert an invitation itself."""
    ws, admin = await api.bootstrap("admin")
    tess = fresh("tess")
    invitation = await invite(api, admin, tess.email)
    query = "SELECT email, workspace_id FROM invitation_emails WHERE invitation_id = CAST(:i AS uuid)"
    assert await rows(admin_engine, query, i=invitation) == [
        {"email": tess.email, "workspace_id": uuid.UUID(ws)}
    ]
    async with as_caller(engine, admin) as connection:
        await denied(connection, "SELECT count(*) FROM invitation_emails")
    async with as_caller(engine, admin) as connection:
        await denied(
            connection,
            "INSERT INTO invitations (workspace_id, id, email, invited_by, expires_at)"
            " VALUES (CAST(:w AS uuid), CAST(:i AS uuid), 'x@example.com', CAST(:a AS uuid),"
            " now() + interval '1 day')",
            w=ws,
            i=str(uuid.uuid4()),
            a=admin.id,
        )
    # mneia_invite called by hand holds its invitation's policy: nobody, or an agent, invites nobody.
    agent = await api.actor(admin.token, "AGENT", "claude-code")
    before = await database_state(admin_engine)
    raw = "SELECT id FROM mneia_invite('raw@example.com', interval '1 day')"
    async with as_nobody(engine, near=admin) as connection:
        # Refused by the policy on one server; on Citus first by Citus itself (no workspace).
        with pytest.raises(DBAPIError):
            await connection.execute(text(raw))
    async with as_caller(engine, agent) as connection:
        await refused(connection, raw)
    assert await database_state(admin_engine) == before
    (joined,) = await sign_in(engine, tess)
    assert str(joined.workspace_id) == ws
    assert await rows(admin_engine, query, i=invitation) == []


async def test_r19_an_expired_invitation_accepts_nobody(api: Api, engine: AsyncEngine) -> None:
    _, admin = await api.bootstrap("admin")
    late = fresh("late")
    await api.run(admin.token, INVITE, e=late.email, **{"in": "PT1S"})
    async with as_nobody(engine) as connection:
        await connection.execute(text("SELECT pg_sleep(1.1)"))
    assert await sign_in(engine, late) == []


async def test_r19_invitations_are_for_humans(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine, two: Two
) -> None:
    admin = two.admins[two.w3]
    agent = await api.actor(admin.token, "AGENT", "claude-code")
    before = await database_state(admin_engine)
    assert_human_required(await api.fail(agent.token, INVITE, e="someone@example.com"))
    for email in ("", "not-an-address", "a@b@c"):
        error = await api.fail(admin.token, INVITE, e=email)
        assert error["extensions"]["code"] == "BAD_USER_INPUT" and error["extensions"]["field"] == "email"
    error = await api.fail(admin.token, INVITE, e="someone@example.com", **{"in": "P31D"})
    assert error["extensions"]["field"] == "expiresIn"
    error = await api.fail(admin.token, INVITE, e="someone@example.com", **{"in": "PT0S"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"  # no Duration at all (schema.scalars)
    assert await database_state(admin_engine) == before
    # An agent lists none; raw SQL as the agent writes none (the policy: invited by a human).
    assert (await api.run(agent.token, "{ invitations { id } }"))["invitations"] == []
    async with as_caller(engine, agent) as connection:
        await refused(
            connection,
            "INSERT INTO invitations (workspace_id, id, email, invited_by, expires_at)"
            " VALUES (CAST(:w AS uuid), CAST(:i AS uuid), 'x@example.com', CAST(:a AS uuid),"
            " now() + interval '1 day')",
            w=two.w3,
            i=str(uuid.uuid4()),
            a=agent.id,
        )
    # The server's role never writes an acceptance itself.
    async with as_caller(engine, admin) as connection:
        await denied(connection, "UPDATE invitations SET accepted_at = now()")


async def test_r19_a_session_token_lasts_at_most_twelve_hours_and_is_the_persons(
    api: Api, engine: AsyncEngine, admin_engine: AsyncEngine, two: Two
) -> None:
    long = await session(engine, two.pat, two.w2, hours=48)
    (made,) = await rows(
        admin_engine,
        "SELECT expires_at - created_at AS lasts, created_by, actor_id FROM api_tokens WHERE token_hash = :d",
        d=token.digest(long.token),
    )
    assert made["lasts"] == timedelta(hours=12)
    assert str(made["created_by"]) == str(made["actor_id"]) == long.id
    # A workspace where the person has no actor opens no session; an unknown subject neither.
    async with transaction(engine) as tx:
        assert (
            await identity.open_session(tx, ISSUER, two.pat.subject, uuid.UUID(two.w3), timedelta(hours=1))
            is None
        )
        assert (
            await identity.open_session(tx, ISSUER, "nobody", uuid.UUID(two.w1), timedelta(hours=1)) is None
        )


async def test_r19_a_sign_in_state_is_taken_once(engine: AsyncEngine) -> None:
    key = f"test:{uuid.uuid4()}"
    async with transaction(engine) as tx:
        await identity.keep(tx, key, "kept", 60)
    async with transaction(engine) as tx:
        assert await identity.take(tx, key) == "kept"
    async with transaction(engine) as tx:
        assert await identity.take(tx, key) is None
        await identity.keep(tx, key + "-short", "soon gone", 1)
    async with as_nobody(engine) as connection:
        await connection.execute(text("SELECT pg_sleep(1.1)"))
    async with transaction(engine) as tx:
        assert await identity.take(tx, key + "-short") is None


async def test_workspace_region_is_the_rows_not_the_configuration(
    api: Api, two: Two, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workspace.region reads the workspace's row, fixed when it was created (0029): a server started
    with another MNEIA_REGION shows the same region."""
    admin = two.admins[two.w1]
    assert (await api.run(admin.token, "{ workspace { region } }"))["workspace"]["region"] == "local"
    monkeypatch.setenv("MNEIA_REGION", "eu-west-1")
    assert (await api.run(admin.token, "{ workspace { region } }"))["workspace"]["region"] == "local"
