"""A database's schema as its catalogue records it: compared, and turned into SQL.

``snapshot`` reads every object Mneia declares (storage/sql/*.sql) from a
database: tables and their row-level security, columns, constraints, indexes,
sequences, policies, functions with who may call them, triggers, grants and
the two roles. Each object becomes one entry, keyed by kind and name, whose
value is PostgreSQL's own rendering of it (``pg_get_functiondef``,
``pg_get_constraintdef``, ``pg_policies`` …), so two databases hold the same
schema exactly when their snapshots are equal.

``changes`` writes the SQL that turns one snapshot into another: the start of
a new migration. Run ``python -m scripts.catalog ADMIN_URL`` after
editing a file of storage/sql: it migrates one scratch database, applies the
declared files to another, and prints the upgrade and the downgrade between
them. Functions, policies, triggers, indexes, constraints, grants and
row-level-security flags come out ready to use; a new or changed column or
table comes out as a line to review, since only its author knows how
existing rows should fill it.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from mneia.config import APP_ROLE, OWNER_ROLE, async_url

ROLES = (OWNER_ROLE, APP_ROLE)
IGNORED_TABLES = ("alembic_version",)

Key = tuple[str, ...]
Snapshot = dict[Key, str]

# Every query reads the public schema only, and skips alembic's own table.
_TABLES = """
  SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
         coalesce(array_to_string(c.reloptions, ', '), ''), pg_get_userbyid(c.relowner)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> ALL (:ignored)
"""
_COLUMNS = """
  SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
         coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity::text, a.attgenerated::text
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
    AND c.relname <> ALL (:ignored)
"""
_CONSTRAINTS = """
  SELECT c.relname, k.conname, pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND c.relname <> ALL (:ignored)
"""
# Indexes that back a constraint come with the constraint.
_INDEXES = """
  SELECT t.relname, i.relname, pg_get_indexdef(i.oid)
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
  JOIN pg_namespace n ON n.oid = t.relnamespace
  WHERE n.nspname = 'public' AND t.relname <> ALL (:ignored)
    AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
"""
_SEQUENCES = """
  SELECT c.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, pg_get_userbyid(c.relowner)
  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND NOT EXISTS (
    SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'i')
"""
_POLICIES = """
  SELECT tablename, policyname, permissive, array_to_string(roles, ', '), cmd,
         coalesce(qual, ''), coalesce(with_check, '')
  FROM pg_policies WHERE schemaname = 'public'
"""
_FUNCTIONS = """
  SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
         pg_get_functiondef(p.oid), pg_get_function_result(p.oid), pg_get_userbyid(p.proowner)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE n.nspname = 'public' AND p.prokind = 'f' AND NOT EXISTS (
    SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
"""
_STATISTICS = """
  SELECT s.stxname, pg_get_statisticsobjdef(s.oid) FROM pg_statistic_ext s
  JOIN pg_namespace n ON n.oid = s.stxnamespace WHERE n.nspname = 'public'
"""
# The extensions: by name (their members are theirs, not the schema's).
_EXTENSIONS = """
  SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
  WHERE e.extname <> 'plpgsql'
"""
_TRIGGERS = """
  SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = 'public' AND NOT t.tgisinternal
"""
# Privileges: of tables and sequences, of columns, of functions; NULL acls are the defaults.
_GRANTS = """
  SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.relname::text, '',
         CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(g.grantee) END, g.privilege_type
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
       aclexplode(coalesce(c.relacl, acldefault(CAST(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END AS "char"),
                                                c.relowner))) g
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') AND c.relname <> ALL (:ignored)
    AND g.grantee <> c.relowner
  UNION ALL
  SELECT 'COLUMN', c.relname::text, a.attname::text,
         CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(g.grantee) END, g.privilege_type
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace,
       aclexplode(a.attacl) g
  WHERE n.nspname = 'public' AND a.attacl IS NOT NULL AND c.relname <> ALL (:ignored)
  UNION ALL
  SELECT 'FUNCTION', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', '',
         CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(g.grantee) END, g.privilege_type
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
       aclexplode(coalesce(p.proacl, acldefault(CAST('f' AS "char"), p.proowner))) g
  WHERE n.nspname = 'public' AND p.prokind = 'f' AND g.grantee <> p.proowner AND NOT EXISTS (
    SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
  UNION ALL
  SELECT 'SCHEMA', 'public', '', pg_get_userbyid(g.grantee), g.privilege_type
  FROM pg_namespace n, aclexplode(n.nspacl) g
  WHERE n.nspname = 'public' AND pg_get_userbyid(g.grantee) = ANY (:roles)
"""
# Default privileges of the two roles, in every schema or in public.
_DEFAULT_ACLS = """
  SELECT pg_get_userbyid(d.defaclrole), d.defaclobjtype::text, coalesce(n.nspname, ''),
         coalesce(array_to_string(d.defaclacl, ','), '')
  FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace
  WHERE pg_get_userbyid(d.defaclrole) = ANY (:roles) AND coalesce(n.nspname, 'public') = 'public'
"""
_ROLES = """
  SELECT rolname, rolsuper, rolbypassrls, rolcanlogin, rolcreatedb, rolcreaterole, rolinherit
  FROM pg_roles WHERE rolname = ANY (:roles)
"""


async def snapshot(connection: AsyncConnection) -> Snapshot:
    """Every declared object of the database, keyed by kind and name."""

    async def rows(query: str) -> list[tuple[object, ...]]:
        result = await connection.execute(
            text(query), {"ignored": list(IGNORED_TABLES), "roles": list(ROLES)}
        )
        return [tuple(row) for row in result]

    found: Snapshot = {}
    for table, rls, force, options, owner in await rows(_TABLES):
        found[("table", str(table))] = f"rls={rls} force={force} options=[{options}] owner={owner}"
    for table, column, type_, not_null, default, identity, generated in await rows(_COLUMNS):
        found[("column", str(table), str(column))] = _column(
            str(type_), bool(not_null), str(default), str(identity), str(generated)
        )
    for table, name, definition in await rows(_CONSTRAINTS):
        found[("constraint", str(table), str(name))] = str(definition)
    for table, name, definition in await rows(_INDEXES):
        found[("index", str(table), str(name))] = str(definition)
    for name, type_, start, increment, owner in await rows(_SEQUENCES):
        found[("sequence", str(name))] = f"AS {type_} START {start} INCREMENT {increment} owner={owner}"
    for table, name, permissive, roles, command, using, check in await rows(_POLICIES):
        found[("policy", str(table), str(name))] = _policy(
            str(table), str(name), str(permissive), str(roles), str(command), str(using), str(check)
        )
    for signature, definition, result, owner in await rows(_FUNCTIONS):
        found[("function", str(signature))] = str(definition)
        found[("function result", str(signature))] = str(result)
        found[("owner", "FUNCTION", str(signature))] = str(owner)
    for name, definition in await rows(_STATISTICS):
        found[("statistics", str(name))] = str(definition)
    for name, schema in await rows(_EXTENSIONS):
        found[("extension", str(name))] = f"SCHEMA {schema}"
    for table, name, definition in await rows(_TRIGGERS):
        found[("trigger", str(table), str(name))] = str(definition)
    for kind, name, column, grantee, privilege in await rows(_GRANTS):
        found[("grant", str(kind), str(name), str(column), str(grantee), str(privilege))] = "granted"
    for role, object_type, schema, acl in await rows(_DEFAULT_ACLS):
        found[("default privileges", str(role), str(object_type), str(schema))] = str(acl)
    for name, *attributes in await rows(_ROLES):
        found[("role", str(name))] = " ".join(str(value) for value in attributes)
    return found


def _column(type_: str, not_null: bool, default: str, identity: str, generated: str) -> str:
    parts = [type_]
    if generated == "s":
        parts.append(f"GENERATED ALWAYS AS ({default}) STORED")
    elif default:
        parts.append(f"DEFAULT {default}")
    if identity in ("a", "d"):
        parts.append(
            "GENERATED ALWAYS AS IDENTITY" if identity == "a" else "GENERATED BY DEFAULT AS IDENTITY"
        )
    if not_null:
        parts.append("NOT NULL")
    return " ".join(parts)


def _policy(table: str, name: str, permissive: str, roles: str, command: str, using: str, check: str) -> str:
    statement = f"CREATE POLICY {name} ON {table} AS {permissive} FOR {command} TO {roles}"
    if using:
        statement += f" USING ({using})"
    if check:
        statement += f" WITH CHECK ({check})"
    return statement + ";"


def differences(left: Snapshot, right: Snapshot) -> list[str]:
    """One readable line per object that the two snapshots disagree on."""
    lines = []
    for key in sorted(left.keys() | right.keys()):
        if left.get(key) != right.get(key):
            lines.append(f"{' '.join(key)}:\n  - {left.get(key)}\n  + {right.get(key)}")
    return lines


# --- SQL that turns one snapshot into another -----------------------------------------------------


@dataclass(frozen=True)
class _Diff:
    current: Snapshot
    wanted: Snapshot

    def of(self, kind: str) -> tuple[list[Key], list[Key], list[Key]]:
        """Keys of ``kind`` that are removed, added and changed."""
        have = {key for key in self.current if key[0] == kind}
        want = {key for key in self.wanted if key[0] == kind}
        changed = sorted(key for key in have & want if self.current[key] != self.wanted[key])
        return sorted(have - want), sorted(want - have), changed


def _grant(key: Key, grant: bool) -> str:
    _, kind, name, column, grantee, privilege = key
    target = {
        "TABLE": name,
        "SEQUENCE": f"SEQUENCE {name}",
        "FUNCTION": f"FUNCTION {name}",
        "SCHEMA": f"SCHEMA {name}",
        "COLUMN": name,
    }[kind]
    what = f"{privilege} ({column})" if kind == "COLUMN" else privilege
    if grant:
        return f"GRANT {what} ON {target} TO {grantee};"
    return f"REVOKE {what} ON {target} FROM {grantee};"


def changes(current: Snapshot, wanted: Snapshot) -> list[str]:
    """The statements that turn ``current`` into ``wanted``, in an order that respects dependencies."""
    diff = _Diff(current, wanted)
    out: list[str] = ["SET LOCAL check_function_bodies = off;"]
    gone_triggers, new_triggers, changed_triggers = diff.of("trigger")
    gone_policies, new_policies, changed_policies = diff.of("policy")
    gone_functions, new_functions, changed_functions = diff.of("function")
    retyped = {
        key
        for key in changed_functions
        if current.get(("function result", key[1])) != wanted.get(("function result", key[1]))
    }

    out += [f"DROP TRIGGER {key[2]} ON {key[1]};" for key in gone_triggers + changed_triggers]
    out += [f"DROP POLICY {key[2]} ON {key[1]};" for key in gone_policies + changed_policies]
    out += [f"DROP FUNCTION {key[1]};" for key in gone_functions + sorted(retyped)]

    gone_sequences, new_sequences, changed_sequences = diff.of("sequence")
    out += [f"CREATE SEQUENCE {key[1]};" for key in new_sequences]
    out += [f"-- review: sequence {key[1]} changed to {wanted[key]}" for key in changed_sequences]
    gone_tables, new_tables, changed_tables = diff.of("table")
    out += [f"-- review: create table {key[1]} as storage/sql declares it" for key in new_tables]
    for key in changed_tables:
        out += _security_flags(key[1], current[key], wanted[key])
    gone_columns, new_columns, changed_columns = diff.of("column")
    new_table_names = {key[1] for key in new_tables}
    out += [
        f"ALTER TABLE {key[1]} ADD COLUMN {key[2]} {wanted[key]};  -- review: how existing rows fill it"
        for key in new_columns
        if key[1] not in new_table_names
    ]
    out += [
        f"-- review: column {key[1]}.{key[2]} was {current[key]}, is {wanted[key]}" for key in changed_columns
    ]
    gone_constraints, new_constraints, changed_constraints = diff.of("constraint")
    gone_table_names = {key[1] for key in gone_tables}
    out += [
        f"ALTER TABLE {key[1]} DROP CONSTRAINT {key[2]};"
        for key in gone_constraints + changed_constraints
        if key[1] not in gone_table_names
    ]
    out += [
        f"ALTER TABLE {key[1]} ADD CONSTRAINT {key[2]} {wanted[key]};"
        for key in new_constraints + changed_constraints
        if key[1] not in new_table_names
    ]
    gone_indexes, new_indexes, changed_indexes = diff.of("index")
    out += [
        f"DROP INDEX {key[2]};" for key in gone_indexes + changed_indexes if key[1] not in gone_table_names
    ]
    out += [f"{wanted[key]};" for key in new_indexes + changed_indexes if key[1] not in new_table_names]

    out += [wanted[key].rstrip() + ";" for key in new_functions + changed_functions]
    out += [wanted[key] for key in new_policies + changed_policies]
    out += [f"{wanted[key]};" for key in new_triggers + changed_triggers]

    out += [
        f"ALTER TABLE {key[1]} DROP COLUMN {key[2]};  -- review"
        for key in gone_columns
        if key[1] not in gone_table_names
    ]
    out += [f"DROP TABLE {key[1]};  -- review" for key in gone_tables]
    out += [f"DROP SEQUENCE {key[1]};" for key in gone_sequences]

    revoked, granted, _ = diff.of("grant")
    gone = {key[1] for key in gone_functions + gone_sequences + gone_tables}
    out += [_grant(key, grant=False) for key in revoked if key[2] not in gone]
    # A new function starts with the default privileges, which may include
    # PUBLIC: take them away unless they are wanted.
    out += [
        f"REVOKE ALL ON FUNCTION {key[1]} FROM PUBLIC;"
        for key in new_functions
        if ("grant", "FUNCTION", key[1], "", "PUBLIC", "EXECUTE") not in wanted
    ]
    out += [_grant(key, grant=True) for key in granted]
    gone_defaults, new_defaults, changed_defaults = diff.of("default privileges")
    out += [
        f"-- review: default privileges of {key[1]} on {key[2]}: {wanted.get(key, 'none')}"
        for key in gone_defaults + new_defaults + changed_defaults
    ]
    out += [f"-- review: role {key[1]} is {wanted.get(key)}" for key in _changed(diff, "role")]
    return out


def _changed(diff: _Diff, kind: str) -> Iterable[Key]:
    gone, new, changed = diff.of(kind)
    return gone + new + changed


def _security_flags(table: str, was: str, wanted: str) -> list[str]:
    statements = []
    for flag, on, off in (
        ("rls=", "ENABLE ROW LEVEL SECURITY", "DISABLE ROW LEVEL SECURITY"),
        ("force=", "FORCE ROW LEVEL SECURITY", "NO FORCE ROW LEVEL SECURITY"),
    ):
        before, after = _flag(was, flag), _flag(wanted, flag)
        if before != after:
            statements.append(f"ALTER TABLE {table} {on if after else off};")
    if _part(was, "options=") != _part(wanted, "options="):
        statements.append(f"-- review: storage options of {table}: {_part(wanted, 'options=')}")
    return statements


def _part(described: str, name: str) -> str:
    return described.split(name, 1)[1].split(" owner=", 1)[0] if name in described else ""


def _flag(described: str, name: str) -> bool:
    return _part(described, name).split(" ", 1)[0] == "True"


# --- the command: python -m scripts.catalog ADMIN_URL ------------------------------------


@asynccontextmanager
async def scratch_database(server_url: str, prefix: str = "mneia_catalog") -> AsyncIterator[str]:
    """A new empty database ``<prefix>_<random>`` on the server (its admin URL), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    maintenance = create_async_engine(async_url(server_url), isolation_level="AUTOCOMMIT")
    try:
        async with maintenance.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(async_url(server_url)).set(database=name).render_as_string(hide_password=False)
        finally:
            async with maintenance.connect() as connection:
                await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await maintenance.dispose()


async def snapshot_of(url: str) -> Snapshot:
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as connection:
            return await snapshot(connection)
    finally:
        await engine.dispose()


async def declared_snapshot(server_url: str) -> Snapshot:
    """The snapshot of a scratch database built from storage/sql."""
    from mneia.storage import declared

    async with scratch_database(server_url) as url:
        engine = create_async_engine(async_url(url))
        try:
            async with engine.begin() as connection:
                await declared.apply(connection)
        finally:
            await engine.dispose()
        return await snapshot_of(url)


async def migrated_snapshot(server_url: str) -> Snapshot:
    """The snapshot of a scratch database migrated to the newest revision."""
    from mneia.storage import migration

    async with scratch_database(server_url) as url:
        await asyncio.to_thread(migration.upgrade, url)
        return await snapshot_of(url)


async def _main(server_url: str) -> int:
    migrated = await migrated_snapshot(server_url)
    wanted = await declared_snapshot(server_url)
    if migrated == wanted:
        print("-- the migrations arrive at the declared schema: nothing to do")
        return 0
    print("-- upgrade: from the newest migration to storage/sql")
    print("\n".join(changes(migrated, wanted)))
    print("\n-- downgrade: back again")
    print("\n".join(changes(wanted, migrated)))
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m scripts.catalog ADMIN_URL  (a server where databases may be created)")
    sys.exit(asyncio.run(_main(sys.argv[1])))
