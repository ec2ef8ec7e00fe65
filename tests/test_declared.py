"""The declared schema (storage/sql) is the migrated schema, and the code agrees with both.

- The migrations arrive at exactly what storage/sql declares: policies,
  function definitions and privileges, triggers, columns, constraints,
  indexes, grants (scripts.catalog compares them object by object).
- storage/tables.py, the SQLAlchemy view of the tables, has the migrated
  database's columns, with their nullability (information_schema).
- The vocabulary (mneia.vocabulary) is what the CHECK constraints allow.
- mneia_app may call exactly the functions it needs, and nothing that seals
  a context.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

import pytest
from scripts import catalog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia import vocabulary
from mneia.storage.tables import metadata
from tests.support import rows

# Tables of the database that the application never queries (the owner's key; a sign-in's
# single-use states, reached through mneia_sign_in_keep and _take).
OWNER_ONLY = {"seal_keys", "sign_in_states", "identity_links", "invitation_emails"}


@pytest.fixture(scope="module")
async def declared(server: str) -> catalog.Snapshot:
    """The catalogue of a scratch database built from storage/sql alone."""
    return await catalog.declared_snapshot(server)


async def test_the_migrations_arrive_at_the_declared_schema(
    admin_url: str, declared: catalog.Snapshot
) -> None:
    migrated = await catalog.snapshot_of(admin_url)
    assert catalog.differences(migrated, declared) == []
    # Not vacuous: every kind of object is there.
    kinds = {key[0] for key in declared}
    assert {"table", "column", "constraint", "index", "policy", "function", "trigger", "grant"} <= kinds


async def test_a_changed_policy_is_a_difference_and_the_catalog_writes_its_migration(
    declared: catalog.Snapshot,
) -> None:
    """The comparison is sharp: one policy changed in the declared schema shows up, with the SQL to fix it."""
    key = ("policy", "items", "item_read")
    widened = {**declared, key: declared[key].replace("scope = 'WORKSPACE'", "true")}
    assert catalog.differences(declared, widened) != []
    upgrade = catalog.changes(declared, widened)
    assert "DROP POLICY item_read ON items;" in upgrade
    assert widened[key] in upgrade


async def test_tables_py_has_the_migrated_columns(admin_engine: AsyncEngine) -> None:
    found = await rows(
        admin_engine,
        "SELECT table_name, column_name, is_nullable = 'YES' AS nullable FROM information_schema.columns"
        " WHERE table_schema = 'public' AND table_name <> 'alembic_version'",
    )
    in_database: dict[str, dict[str, bool]] = {}
    for row in found:
        in_database.setdefault(row["table_name"], {})[row["column_name"]] = row["nullable"]
    in_code = {
        table.name: {
            column.name: bool(column.nullable) and not column.primary_key for column in table.columns
        }
        for table in metadata.sorted_tables
    }
    # The generated full-text column is the database's own business.
    in_database["items"].pop("search")
    assert set(in_database) - OWNER_ONLY == set(in_code)
    for name, columns in in_code.items():
        assert columns == in_database[name], name


def check_values(definition: str) -> set[str]:
    return set(re.findall(r"'([A-Z_]+)'::text", definition))


@pytest.mark.parametrize(
    ("table", "column", "words"),
    [
        ("actors", "kind", vocabulary.ActorKind),
        ("items", "kind", vocabulary.ItemKind),
        ("items", "status", vocabulary.ItemStatus),
        ("items", "scope", vocabulary.Scope),
        ("proposals", "kind", vocabulary.ProposalKind),
        ("proposals", "status", vocabulary.ProposalStatus),
        ("disputes", "status", vocabulary.DisputeStatus),
        ("item_events", "event", vocabulary.ItemEventKind),
    ],
)
async def test_the_vocabulary_is_what_the_database_allows(
    admin_engine: AsyncEngine, table: str, column: str, words: type[StrEnum]
) -> None:
    (found,) = await rows(
        admin_engine,
        "SELECT pg_get_constraintdef(k.oid) AS definition FROM pg_constraint k"
        " WHERE k.conrelid = CAST(:table AS regclass) AND k.conname = :name",
        table=table,
        name=f"{table}_{column}_check",
    )
    assert check_values(found["definition"]) == {word.value for word in words}


# What mneia_app may call: the accessors the policies use, the helpers the guards use, the way in.
CALLABLE_BY_THE_SERVER = {
    "mneia_authenticate",
    "mneia_channel",
    "mneia_sealed",
    "mneia_context_field",
    "mneia_workspace",
    "mneia_actor",
    "mneia_actor_is_human",
    "mneia_member_projects",
    "mneia_member_teams",
    "mneia_team_projects",
    "mneia_token_expires",
    "mneia_trusted_session",
    "mneia_refuse",
    "mneia_disallow",
    "mneia_require_human",
    "mneia_require_now",
    "mneia_has_successor",
    "mneia_open_disputes",
    "mneia_kept_by_resolution",
    "mneia_replacement_matches",
    "mneia_keeps_audience",
    "mneia_uuid7",
    # R16-R18 (privacy.sql): whether an item is held (the redaction guard asks), a human's erasure.
    "mneia_held",
    "mneia_erase_actor",
    # R19 (identity.sql): an invitation, one person's memberships, and the steps of a sign-in.
    "mneia_invite",
    "mneia_my_memberships",
    "mneia_identities_of",
    "mneia_sign_in",
    "mneia_sign_in_invitations",
    "mneia_sign_in_accept",
    "mneia_sign_in_memberships",
    "mneia_sign_in_session",
    "mneia_sign_in_keep",
    "mneia_sign_in_take",
}


async def test_the_server_role_may_call_only_what_it_needs(admin_engine: AsyncEngine) -> None:
    found = await rows(
        admin_engine,
        "SELECT p.proname, has_function_privilege('mneia_app', p.oid, 'EXECUTE') AS callable"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = 'public' AND p.proname LIKE 'mneia\\_%'",
    )
    callable_ = {row["proname"] for row in found if row["callable"]}
    assert callable_ == CALLABLE_BY_THE_SERVER
    assert {"mneia_context_seal", "mneia_bind", "mneia_bootstrap"} <= {row["proname"] for row in found}


async def test_the_server_role_creates_nothing(admin_engine: AsyncEngine) -> None:
    (found,) = await rows(
        admin_engine,
        "SELECT has_schema_privilege('mneia_app', 'public', 'CREATE') AS in_schema,"
        " has_database_privilege('mneia_app', current_database(), 'CREATE') AS schemas",
    )
    assert found == {"in_schema": False, "schemas": False}


async def test_no_function_is_planned_anew_by_every_statement_that_calls_it(
    admin_engine: AsyncEngine,
) -> None:
    """A SQL-language function with its own search_path is never inlined: every
    statement that calls it parses and plans its body again (mneia_uuid7 cost
    27 µs a call so, 6 µs in PL/pgSQL, which keeps its plans per connection)."""
    found = await rows(
        admin_engine,
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " JOIN pg_language l ON l.oid = p.prolang"
        " WHERE n.nspname = 'public' AND l.lanname = 'sql' AND p.proconfig IS NOT NULL",
    )
    assert [row["proname"] for row in found] == []
    (plpgsql,) = await rows(
        admin_engine,
        "SELECT count(*) AS n FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
        " WHERE p.pronamespace = 'public'::regnamespace AND l.lanname = 'plpgsql'",
    )
    assert plpgsql["n"] > 20  # the query above looks where the functions are


async def test_declared_files_name_no_unqualified_table_in_a_function_body() -> None:
    """Inside every function body, the tables are named with their schema (public.x)."""
    from mneia.storage import declared

    tables = {table.name for table in metadata.sorted_tables} | OWNER_ONLY
    bodies = []
    for name in declared.FILES:
        bodies += re.findall(r"\$\$(.*?)\$\$", declared.read(name), flags=re.S)
    unqualified = {
        f"{keyword} {table}"
        for body in bodies
        for keyword, table in re.findall(r"\b(FROM|JOIN|INTO|UPDATE)\s+([a-z_]+)\b", body)
        if table in tables
    }
    assert unqualified == set()


def test_the_vocabulary_imports_nothing_of_the_project() -> None:
    source = Path(vocabulary.__file__).read_text(encoding="utf-8")
    assert "import mneia" not in source and "from mneia" not in source


POLICIES_READING_ANOTHER_TABLE: set[tuple[str, str]] = set()
"""Policies that read another table (``EXISTS (SELECT … FROM …)``): none since migration 0036 (issue
25). On a cluster distributed by workspace a policy may read its own row only (docs/scale-out.md);
the last two, which showed a person's identities and workspaces, now show what the owner's
function naming the person listed beside it. The set may only stay empty."""


async def test_r1_no_policy_reads_another_table_but_those_listed(admin_engine: AsyncEngine) -> None:
    async with admin_engine.connect() as connection:
        found = await connection.execute(
            text(
                "SELECT tablename, policyname, coalesce(qual, '') || ' ' || coalesce(with_check, '')"
                " FROM pg_policies WHERE schemaname = 'public'"
            )
        )
        policies = {(table, name): expression for table, name, expression in found}
    reading = {key for key, expression in policies.items() if re.search(r"\bFROM\b", expression)}
    assert reading == POLICIES_READING_ANOTHER_TABLE
    # The accessors' scalar sub-selects read no table, and are everywhere (the control).
    assert sum("( SELECT mneia_workspace()" in expression for expression in policies.values()) > 30
