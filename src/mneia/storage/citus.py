"""The declared schema on a Citus cluster: what ``mneia migrate`` does on a coordinator.

A Citus database is always built new from ``storage/sql`` (``declared.FILES``), never by
replaying the migrations, then stamped at alembic's head (docs/scale-out.md). The same files
serve both engines; this module adds the Citus steps around their statements:

- the roles are committed first, and the owner may log in: Citus creates objects on the
  workers over connections as the current role;
- each table is distributed right after its CREATE TABLE: by ``workspace_id``, colocated
  with ``workspaces`` (distributed by ``id``); ``identities``, ``identity_links``,
  ``invitation_emails`` and ``sign_in_states``, read across workspaces, are reference
  tables; ``seal_keys`` stays a plain table, created on every node, holding the same key
  (a policy on a shard may read no Citus table);
- each policy comes in two variants from its one definition: the shards keep Mneia's text
  (each accessor in a scalar sub-select), the shell tables on the coordinator and on every
  worker carry plain calls (Citus refuses sub-selects there), all created with DDL
  propagation off. A policy that reads another table cannot be carried by either and is left
  out (what it alone admitted is refused), each one named in a warning;
- triggers are allowed (``citus.enable_unsafe_triggers``): they read their own workspace's
  colocated shards only.

What must stay true: a node never holds a distributed table without both policy variants, and
never a Citus table that reads the key; the plain-PostgreSQL path (``declared.apply`` and the
alembic migrations) is untouched by anything here.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import OWNER_ROLE
from mneia.storage import declared
from mneia.storage.database import Tx, lone_engine

# Belong to no workspace: one row serves every node (identities: one person across
# workspaces, referenced by actors; sign_in_states: a sign-in's steps, taken on any node).
REFERENCE_TABLES = frozenset({"identities", "sign_in_states", "identity_links", "invitation_emails"})
# A plain table on every node, never a Citus table: the key the shards' policies read.
LOCAL_TABLES = frozenset({"seal_keys"})
FIRST = "workspaces"  # distributed by id; every other tenant table is colocated with it
DISTRIBUTION_COLUMN = {FIRST: "id"}  # the others: workspace_id

IS_CITUS = "SELECT 1 FROM pg_extension WHERE extname = 'citus'"

_CREATE_TABLE = re.compile(r"CREATE TABLE (\w+)", re.IGNORECASE)
_CREATE_POLICY = re.compile(r"CREATE POLICY (\w+) ON (\w+)\b(.*)", re.IGNORECASE | re.DOTALL)
# An accessor in its scalar sub-select, e.g. (SELECT mneia_workspace()) or (SELECT mneia_person('email')).
_ACCESSOR = re.compile(r"\(SELECT (mneia_\w+\((?:'\w*')?\))\)")
_SUBSELECT = re.compile(r"\(\s*SELECT\b", re.IGNORECASE)  # what is left after the accessors


class CitusError(RuntimeError):
    """The Citus steps failed on some node: the message names it and quotes the node's error."""


def statements(sql: str) -> Iterator[str]:
    """The statements of a script, each without its final ``;`` (comments kept inside, dropped between).

    Knows what PostgreSQL's own scanner must to find a statement's end: quoted strings and
    identifiers, dollar quotes, line and block comments.
    """
    start = position = 0
    length = len(sql)
    while position < length:
        char = sql[position]
        if sql.startswith("--", position):
            end = sql.find("\n", position)
            position = length if end < 0 else end + 1
        elif sql.startswith("/*", position):
            position = sql.index("*/", position) + 2
        elif char in "'\"":
            position = sql.index(char, position + 1) + 1
            while sql.startswith(char, position):  # '' inside a string, "" inside an identifier
                position = sql.index(char, position + 1) + 1
        elif char == "$" and (tag := re.match(r"\$(?:[A-Za-z_]\w*)?\$", sql[position:])):
            position = sql.index(tag.group(), position + len(tag.group())) + len(tag.group())
        elif char == ";":
            statement = _without_comments_around(sql[start:position])
            if statement:
                yield statement
            start = position = position + 1
        else:
            position += 1
    statement = _without_comments_around(sql[start:])
    if statement:
        yield statement


def _without_comments_around(text: str) -> str:
    lines = text.strip().splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    return "\n".join(lines).strip()


@dataclass(frozen=True)
class Policy:
    """A policy of storage/sql, with the variant each layer of a Citus table carries."""

    name: str
    table: str
    text: str  # as declared: the shards' variant (the table name aside)
    body: str  # what follows "ON table"

    @property
    def shell(self) -> str | None:
        """The variant for the shell tables: plain calls; None if the policy reads another table."""
        body = _ACCESSOR.sub(r"\1", self.body)
        if _SUBSELECT.search(body):
            return None
        return f"CREATE POLICY {self.name} ON {self.table}{body}"

    def on_shard(self) -> str:
        """The declared text, for ``run_command_on_shards``: its ``format`` names the shard (``%1$s``)."""
        return f"CREATE POLICY {self.name} ON %1$s{self.body.replace('%', '%%')}"


def policy(statement: str) -> Policy | None:
    found = _CREATE_POLICY.match(statement)
    if found is None:
        return None
    return Policy(found.group(1), found.group(2), statement, found.group(3))


@dataclass
class Plan:
    """What the schema phase leaves for the later ones."""

    distributed: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    policies: list[Policy] = field(default_factory=list)
    local: list[str] = field(default_factory=list)  # statements that make a local table, for each worker

    @property
    def left_out(self) -> list[Policy]:
        return [p for p in self.policies if p.shell is None]

    @property
    def shells(self) -> list[str]:
        """The shell tables' variants of the policies carried (every one but ``left_out``)."""
        return [p.shell for p in self.policies if p.shell is not None]


def _quoted(statement: str) -> str:
    """``statement`` dollar-quoted with a tag it does not contain."""
    number = 0
    while f"$q{number}$" in statement:
        number += 1
    return f"$q{number}${statement}$q{number}$"


def _step(statement: str, once: bool) -> str:
    """``statement`` as a step of a DO block; ``once``: a table or policy it creates is created only
    where it is missing (every other statement of the build's per-node phases may run again)."""
    run = f"EXECUTE {_quoted(statement)};"
    if not once:
        return f"  {run}"
    found, table = policy(statement), _CREATE_TABLE.match(statement)
    if found is not None:
        missing = (
            "NOT EXISTS (SELECT FROM pg_catalog.pg_policies WHERE schemaname = 'public'"
            f" AND tablename = {_quoted(found.table)} AND policyname = {_quoted(found.name)})"
        )
    elif table is not None:
        missing = f"to_regclass({_quoted('public.' + table.group(1))}) IS NULL"
    else:
        return f"  {run}"
    return f"  IF {missing} THEN {run} END IF;"


def _do_block(statements_: list[str], once: bool = False) -> str:
    """One DO block running ``statements_`` in order with DDL propagation off, atomically on its node
    (``once``: see ``_step``)."""
    if any("$body$" in s for s in statements_):
        raise ValueError("a statement contains $body$, the DO block's own quote")
    body = "\n".join(_step(s, once) for s in statements_)
    return (
        "DO $body$\nBEGIN\n"
        "  PERFORM set_config('citus.enable_ddl_propagation', 'off', true);\n"
        "  PERFORM set_config('search_path', 'public, pg_catalog, pg_temp', true);\n"
        f"{body}\nEND\n$body$"
    )


_WORKERS = "SELECT count(*) FROM pg_dist_node WHERE groupid <> 0"


async def _checked(connection: asyncpg.Connection, query: str, *args: object, where: str) -> None:
    """A ``run_command_on_*`` call: every node (or shard) must have succeeded."""
    rows = await connection.fetch(query, *args)
    failed = [dict(row) for row in rows if not row["success"]]
    if not rows or failed:
        raise CitusError(f"{where}: {failed or 'no node answered'}")


async def on_workers(
    connection: asyncpg.Connection, statements_: list[str], where: str, once: bool = False
) -> None:
    """``statements_`` on every worker; nothing when the coordinator is the cluster's one node
    (it holds the shards itself: the Citus stage's run of the test suites). ``once``: see ``_step``."""
    if not await connection.fetchval(_WORKERS):
        return
    await _checked(
        connection,
        "SELECT nodename, nodeport, success, result FROM run_command_on_workers($1)",
        _do_block(statements_, once),
        where=where,
    )


async def roles(connection: asyncpg.Connection) -> None:
    """roles.sql on the coordinator (Citus propagates roles and grants), then on each worker
    (what it does to pg_catalog's own functions is per node); the owner made able to log in."""
    async with connection.transaction():
        await connection.execute(declared.SAFE_SEARCH_PATH)
        await connection.execute(declared.read(declared.FILES[0]))
        await connection.execute(f"ALTER ROLE {OWNER_ROLE} LOGIN")
    await _roles_on_workers(connection)


async def _roles_on_workers(connection: asyncpg.Connection) -> None:
    """roles.sql on each worker: every statement of it may run again."""
    sql = declared.read(declared.FILES[0])
    await on_workers(connection, list(statements(sql)), "roles.sql on the workers")


async def schema(connection: asyncpg.Connection, told: Callable[[str], None]) -> Plan:
    """Every file after roles.sql, as the owner, in one transaction: each table distributed as
    it is created, the policies of Citus tables kept for ``policies``."""
    plan = Plan()
    async with connection.transaction():
        await connection.execute(declared.SAFE_SEARCH_PATH)
        # Shards were created in this transaction; what follows must use one connection per node.
        await connection.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")
        await connection.execute("SET LOCAL citus.enable_unsafe_triggers = on")
        # A new table referencing a reference table (actors -> identities) stays a plain table
        # until it is distributed, rather than becoming a Citus local table that then may not
        # reference a distributed one.
        await connection.execute("SET LOCAL citus.enable_local_reference_table_foreign_keys = off")
        await connection.execute(f"SET LOCAL ROLE {OWNER_ROLE}")
        for name in declared.FILES[1:]:
            for statement in statements(declared.read(name)):
                await _statement(connection, statement, plan)
            told(f"Citus: {name} applied")
        await connection.execute("RESET ROLE")
    return plan


def _kept(statement: str, plan: Plan) -> bool:
    """Note in ``plan`` what a later phase needs of a declared statement: a Citus table's policy
    (kept for ``policies``, not run now: True), or a statement making a local table (run now too)."""
    found = policy(statement)
    if found is not None and found.table not in LOCAL_TABLES:
        plan.policies.append(found)
        return True
    if (found is not None and found.table in LOCAL_TABLES) or _touches_local(statement):
        plan.local.append(statement)
    return False


def declared_plan() -> Plan:
    """What the build's later phases read from storage/sql (the policies, the local tables' statements),
    read from the files alone: for a database built already."""
    plan = Plan()
    for name in declared.FILES[1:]:
        for statement in statements(declared.read(name)):
            _kept(statement, plan)
    return plan


async def _statement(connection: asyncpg.Connection, statement: str, plan: Plan) -> None:
    if _kept(statement, plan):
        return
    try:
        await connection.execute(statement)
    except asyncpg.PostgresError as exc:
        raise CitusError(f"{exc.__class__.__name__}: {exc} in:\n{statement[:500]}") from exc
    created = _CREATE_TABLE.match(statement)
    if created is None or created.group(1) in LOCAL_TABLES:
        return
    table = created.group(1)
    if table in REFERENCE_TABLES:
        await connection.execute("SELECT create_reference_table($1)", table)
        plan.reference.append(table)
    elif table == FIRST:
        await connection.execute("SELECT create_distributed_table($1, $2)", table, DISTRIBUTION_COLUMN[table])
        plan.distributed.append(table)
    else:
        await connection.execute(
            "SELECT create_distributed_table($1, 'workspace_id', colocate_with := $2)", table, FIRST
        )
        plan.distributed.append(table)


def _touches_local(statement: str) -> bool:
    """CREATE TABLE or ALTER TABLE of a local table (its policies are caught as policies)."""
    found = re.match(r"(?:CREATE|ALTER) TABLE (\w+)", statement, re.IGNORECASE)
    return found is not None and found.group(1) in LOCAL_TABLES


async def policies(connection: asyncpg.Connection, plan: Plan) -> None:
    """Both variants of every carried policy: the shells (coordinator, then each worker), the shards."""
    carried = [p for p in plan.policies if p.shell is not None]
    async with connection.transaction():
        await connection.execute("SET LOCAL citus.enable_ddl_propagation = off")
        for shell in plan.shells:
            await connection.execute(shell)
    await on_workers(connection, plan.shells, "the shell tables' policies on the workers")
    for table in [*plan.distributed, *plan.reference]:
        mine = [p.on_shard() for p in carried if p.table == table]
        if not mine:
            continue
        # A reference table has a placement on every node; run_command_on_shards reaches only one.
        function = "run_command_on_placements" if table in plan.reference else "run_command_on_shards"
        await _checked(
            connection,
            f"SELECT success, result FROM {function}($1, $2)",
            table,
            _do_block(mine),
            where=f"the policies of {table}'s shards",
        )


# The key row as the coordinator holds it, as an upsert for another node (bytea in hex literals).
_KEY_UPSERT = """
SELECT format('INSERT INTO public.seal_keys (id, inner_pad, outer_pad, channel_salt, rotated_at)'
              ' VALUES (1, %L, %L, %L, %L) ON CONFLICT (id) DO UPDATE SET inner_pad = excluded.inner_pad,'
              ' outer_pad = excluded.outer_pad, channel_salt = excluded.channel_salt,'
              ' rotated_at = excluded.rotated_at',
              k.inner_pad, k.outer_pad, k.channel_salt, k.rotated_at)
FROM public.seal_keys k WHERE k.id = 1
"""


async def seal_keys(connection: asyncpg.Connection, plan: Plan, once: bool = False) -> None:
    """The key table on each worker, as context.sql declares it, holding the coordinator's key."""
    upsert = await connection.fetchval(_KEY_UPSERT)
    if upsert is None:
        raise CitusError("the coordinator holds no sealing key")
    await on_workers(
        connection,
        [*plan.local, *(f"ALTER TABLE {t} OWNER TO {OWNER_ROLE}" for t in sorted(LOCAL_TABLES)), upsert],
        "the sealing key on the workers",
        once,
    )


async def refresh_workers(admin_url: str, told: Callable[[str], None]) -> None:
    """What the build writes on each worker beside what Citus carries there itself, written again
    where it is missing: roles.sql's part of each node, the shell tables' policies, the key table
    and the coordinator's key. For a database built already: a worker added to the cluster since
    (``citus_add_node``) has none of them, and refuses every request until ``mneia migrate`` has
    run again. What a node holds already is left as it is (the key is written again).

    The reference tables are copied to such a worker first (nothing to do when every node has
    them): Citus moves no shard to a node that lacks them, so ``move`` could not use the new
    worker before. Copied as the administrator, whom row-level security does not hold back."""
    plan = declared_plan()
    async with _driver(admin_url) as connection:
        try:
            await connection.execute("SELECT replicate_reference_tables('block_writes')")
            await _roles_on_workers(connection)
            await on_workers(connection, plan.shells, "the shell tables' policies on the workers", once=True)
            await seal_keys(connection, plan, once=True)
        except asyncpg.PostgresError as exc:
            raise CitusError(f"{exc.__class__.__name__}: {exc}") from exc
    told(
        "Citus: every worker holds the reference tables, the roles' settings, the shell tables'"
        " policies and the sealing key"
    )


async def spread_seal_key(tx: Tx) -> None:
    """The key as this transaction holds it on the coordinator, written to every worker; nothing
    off Citus. After ``mneia_rotate_seal_key``, which writes its own node only.

    Each worker commits on its own connection, before the coordinator does: should the
    coordinator's transaction then fail, the workers keep the new key (requests run there) and
    the next rotation writes every node again.
    """
    if not (await tx.execute(text(IS_CITUS))).scalar():
        return
    upsert = (await tx.execute(text(_KEY_UPSERT))).scalar()
    if upsert is None:
        raise CitusError("the coordinator holds no sealing key")
    rows = await tx.execute(
        text("SELECT nodename, nodeport, success, result FROM run_command_on_workers(:command)"),
        {"command": _do_block([upsert])},
    )
    failed = [f"{row.nodename}:{row.nodeport}: {row.result}" for row in rows if not row.success]
    if failed:
        raise CitusError(f"the sealing key on the workers: {'; '.join(failed)}")


NODE_OF = text(
    "SELECT n.nodename, n.nodeport, p.shardid FROM pg_dist_placement p"
    " JOIN pg_dist_node n ON n.groupid = p.groupid"
    " WHERE p.shardid = get_shard_id_for_distribution_column('workspaces', CAST(:id AS uuid))"
    " AND p.shardstate = 1 AND n.isactive ORDER BY n.nodeid LIMIT 1"
)
"""The node holding the workspace's (active) placement of the shard of ``workspaces``, which every
other tenant table is colocated with (readable by every role: Citus's catalogue)."""
SHARDS_OF = text(
    "SELECT c.relname AS name, c.relname || '_' || get_shard_id_for_distribution_column("
    "p.logicalrelid, CAST(:id AS uuid)) AS shard"
    " FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid"
    " WHERE c.relnamespace = 'public'::regnamespace AND p.partmethod = 'h' AND p.colocationid ="
    " (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'public.workspaces'::regclass)"
)
"""Each table colocated with ``workspaces`` and the name of its shard holding the workspace (Citus
names a shard by its table and its id; Mneia's table names are far too short to be shortened)."""
_NODE_OF_BY_NUMBER = str(NODE_OF).replace("CAST(:id AS uuid)", "CAST($1 AS uuid)")
"""The same, for the driver (a numbered parameter)."""


async def home(admin_engine: AsyncEngine, workspace_id: uuid.UUID) -> str | None:
    """The administrator's URL on the node that holds (or will hold) the workspace; None off Citus.

    A workspace's rows are written on their node: through the coordinator the bound context
    stays behind, and the shards' policies refuse the rows (docs/scale-out.md).
    """
    async with admin_engine.connect() as connection:
        if not (await connection.execute(text(IS_CITUS))).scalar():
            return None
        row = (await connection.execute(NODE_OF, {"id": str(workspace_id)})).one()
    url = admin_engine.url.set(host=row.nodename, port=row.nodeport)
    return url.render_as_string(hide_password=False)


# The cluster's other primaries, as the node asked sees them (the coordinator is group 0).
_OTHER_NODES = (
    "SELECT nodename, nodeport FROM pg_catalog.pg_dist_node WHERE isactive AND noderole = 'primary'"
    " AND groupid <> (SELECT groupid FROM pg_catalog.pg_dist_local_group) ORDER BY nodeid"
)


async def other_nodes(connection: asyncpg.Connection, url: str) -> list[str]:
    """``url`` (its user, password and database) at each other primary node of the cluster that
    ``connection`` (made with ``url``) is a node of, from ``pg_dist_node``; none off Citus.

    Whatever ``mneia_app`` runs on a node (its triggers' NOTIFYs among it) happens there: a
    process that must hear every node connects to each (storage.notification).
    """
    if not await connection.fetchval(IS_CITUS):
        return []
    base = make_url(url)
    return [
        base.set(host=row["nodename"], port=row["nodeport"]).render_as_string(hide_password=False)
        for row in await connection.fetch(_OTHER_NODES)
    ]


async def move(admin_url: str, workspace_id: uuid.UUID, host: str, port: int) -> tuple[str, int]:
    """Move the shard group holding the workspace (and every workspace hashed with it) to the node
    at ``host``:``port``, as the coordinator's administrator; the node it left.

    Citus copies each shard as the table's owner, and under forced row-level security the owner,
    bound to no workspace, reads none of most tables: a plain move failed on a foreign key
    (item_counts' project missing from the copied projects), and a table without one would have
    lost its rows silently. So the owner bypasses row-level security for the move only, on every
    node (Citus propagates the role), and never after it, whatever the move's outcome.
    ``block_writes``: the group is copied with writes to it blocked, without logical replication
    (the nodes need no ``wal_level = logical``). The moved shards get the shells' policies (plain
    calls, the same checks) and their triggers from Citus; the server finds the new node when a
    token first binds nobody on the old one (storage.node).
    """
    async with _driver(admin_url) as connection:
        row = await connection.fetchrow(_NODE_OF_BY_NUMBER, str(workspace_id))
        if row is None:
            raise CitusError(f"no placement holds workspace {workspace_id}")
        await _copied_whole(
            connection,
            f"moving workspace {workspace_id}'s shards",
            "SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode := 'block_writes')",
            row["shardid"],
            row["nodename"],
            row["nodeport"],
            host,
            port,
        )
    return (row["nodename"], row["nodeport"])


async def _copied_whole(connection: asyncpg.Connection, what: str, statement: str, *args: Any) -> None:
    """A statement that makes Citus copy shards, run with the owner past row-level security for
    its time only (``move``'s docstring says why), then the copies' leftovers cleaned up."""
    await connection.execute(f"ALTER ROLE {OWNER_ROLE} BYPASSRLS")
    try:
        await connection.execute(statement, *args)
    except asyncpg.PostgresError as exc:
        raise CitusError(f"{what}: {exc}") from exc
    finally:
        await connection.execute(f"ALTER ROLE {OWNER_ROLE} NOBYPASSRLS")
    await connection.execute("CALL citus_cleanup_orphaned_resources()")


async def rebalance(admin_url: str) -> int:
    """Spread the shard groups evenly over the workers, as the coordinator's administrator, with
    Citus's rebalancer in the foreground (``rebalance_table_shards``, ``block_writes``): how many
    shards it moved. For a worker just added, after ``mneia migrate`` (``refresh_workers``).

    Run as Citus's documentation says (``citus_rebalance_start``), the rebalancer never finishes on
    these tables: it copies each shard as the table's owner, whom forced row-level security shows
    none of most tables, so the copy of ``item_counts`` failed on its foreign key (its projects
    copied empty) and was retried without end (tried on the local cluster); a table without a
    foreign key would have been copied empty. So, as for ``move``, the owner bypasses row-level
    security for the rebalance only, and never after it, whatever its outcome."""
    async with _driver(admin_url) as connection:
        if not await connection.fetchval(IS_CITUS):
            raise CitusError("not a Citus coordinator's database: there is nothing to rebalance")
        planned = await connection.fetchval("SELECT count(*) FROM get_rebalance_table_shards_plan()")
        await _copied_whole(
            connection, "rebalancing", "SELECT rebalance_table_shards(shard_transfer_mode := 'block_writes')"
        )
    return int(planned)


async def build(admin_url: str, told: Callable[[str], None], warn: Callable[[str], None]) -> Plan:
    """The declared schema in the empty database of a Citus coordinator (as its administrator).

    Not one transaction: the roles must be committed before the owner's DDL, and the shards
    before ``run_command_on_*`` reaches them over connections of their own. A database left
    half-built by a failure is dropped and created again (a Citus database is always new).
    """
    async with _driver(admin_url) as connection:
        try:
            if await connection.fetchval("SELECT to_regclass('public.workspaces') IS NOT NULL"):
                raise CitusError("the database already holds tables of Mneia's: on Citus it is built new")
            await roles(connection)
            told("Citus: the roles on every node (mneia_owner may log in: Citus connects to workers as it)")
            plan = await schema(connection, told)
            await _every_table_placed(connection)
            for left in plan.left_out:
                warn(
                    f"on Citus the policy {left.name} on {left.table} is left out (it reads another table):"
                    " what it alone admitted is refused"
                )
            await policies(connection, plan)
            tables = len(plan.distributed) + len(plan.reference)
            told(f"Citus: the policies on the shells and shards of {tables} tables")
            await seal_keys(connection, plan)
            told("Citus: the sealing key on every node")
        except asyncpg.PostgresError as exc:
            raise CitusError(f"{exc.__class__.__name__}: {exc}") from exc
    return plan


async def _every_table_placed(connection: asyncpg.Connection) -> None:
    """Each table of the schema is a Citus table or one of LOCAL_TABLES: none was missed."""
    missed = await connection.fetchval(
        "SELECT array_agg(c.relname ORDER BY c.relname) FROM pg_catalog.pg_class c"
        " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')"
        " AND c.relname <> ALL ($1::text[])"
        " AND NOT EXISTS (SELECT FROM pg_dist_partition d WHERE d.logicalrelid = c.oid)",
        sorted(LOCAL_TABLES),
    )
    if missed:
        raise CitusError(f"tables neither distributed nor kept local: {', '.join(missed)}")


PROBE_CALLS = 500
PLANS_KEPT_LIMIT = 4_000_000
"""Bytes a worker's backend may grow over ``PROBE_CALLS`` keyed lookups before ``leaking`` calls it the
leak: the fixed build grew by 0.17 MB (its first allocations), Citus 14.0.1 keeps tens of KB a call."""
_PROBE = f"""DO $probe$
  DECLARE
    probe uuid;
    found bigint;
    before bigint;
  BEGIN
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    SELECT w INTO probe FROM (SELECT gen_random_uuid() AS w FROM generate_series(1, 1000)) candidates
      WHERE get_shard_id_for_distribution_column('public.workspaces', w) IN (
        SELECT p.shardid FROM pg_dist_placement p
        WHERE p.groupid = (SELECT groupid FROM pg_dist_local_group))
      LIMIT 1;
    IF probe IS NULL THEN  -- no shard here: the block just ends (DO)
      RETURN;
    END IF;
    FOR i IN 1..20 LOOP
      SELECT count(*) INTO found FROM public.workspaces WHERE id = probe;
    END LOOP;
    SELECT sum(total_bytes) INTO before FROM pg_backend_memory_contexts;
    FOR i IN 1..{PROBE_CALLS} LOOP
      SELECT count(*) INTO found FROM public.workspaces WHERE id = probe;
    END LOOP;
    RAISE EXCEPTION 'mneia-probe: %', (SELECT sum(total_bytes) FROM pg_backend_memory_contexts) - before;
  END $probe$"""


async def plans_kept(admin_url: str) -> dict[str, int]:
    """Per node holding shards (the workers, and the coordinator when it holds some), how many bytes
    its backend grew over ``PROBE_CALLS`` keyed lookups of a workspace it holds, each planned
    generically, as every lookup in Mneia's functions is.

    Citus 14.0.1 plans such a lookup again at every call and keeps every plan, so each connection
    of the server grows with each request until the node runs out of memory
    (scripts/citus-patches/0001-local-plan-cache.patch; citusdata/citus PR 8824). Run as the
    administrator, who reads its own backend's memory; the block ends in an error that carries
    the figure, so nothing it did is kept."""
    grown: dict[str, int] = {}
    async with _driver(admin_url) as connection:
        rows = await connection.fetch(
            "SELECT nodename, nodeport, success, result FROM run_command_on_workers($1)", _PROBE
        )
        try:
            await connection.execute(_PROBE)  # ends at once where the coordinator holds no shard
        except asyncpg.RaiseError as raised:
            found = re.search(r"mneia-probe: (\d+)", str(raised))
            if found is None:
                raise
            url = make_url(admin_url)
            grown[f"{url.host}:{url.port or 5432}"] = int(found.group(1))
    for row in rows:
        found = re.search(r"mneia-probe: (\d+)", row["result"] or "")
        if found:
            grown[f"{row['nodename']}:{row['nodeport']}"] = int(found.group(1))
        elif not (row["success"] and row["result"] == "DO"):
            raise CitusError(f"the plan-cache probe on {row['nodename']}:{row['nodeport']}: {row['result']}")
    return grown


def leaking(grown: dict[str, int]) -> list[str]:
    """The nodes whose growth in ``plans_kept`` is the leak's."""
    return sorted(node for node, size in grown.items() if size > PLANS_KEPT_LIMIT)


KEYED = (
    "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p"
    " WHERE p.pronamespace = 'public'::regnamespace"
    " AND EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'plan_cache_mode=%')"
    " ORDER BY 1"
)
"""The functions that set their own ``plan_cache_mode`` (storage/sql: ``auto``, migration 0032): their
keyed lookups keep a generic plan per connection."""


async def plan_keyed_lookups(admin_url: str, generically: bool) -> list[str]:
    """Set how the functions of ``KEYED`` plan their statements, on the coordinator (Citus carries
    ``ALTER FUNCTION`` to every node): ``auto`` as declared (``generically``), or
    ``force_custom_plan``, planned with their values at every call. The latter is what a Citus
    that keeps a plan per call (``plans_kept``) needs: a statement planned with its values
    prunes to its shard at planning, and Citus caches no local plan for it, so nothing
    accumulates; each lookup is planned again instead. Returns the functions set."""
    mode = "auto" if generically else "force_custom_plan"
    async with _driver(admin_url) as connection:
        functions = [row[0] for row in await connection.fetch(KEYED)]
        async with connection.transaction():
            for function in functions:  # names from the catalogue, not from input
                await connection.execute(f"ALTER FUNCTION {function} SET plan_cache_mode = {mode}")
    return functions


async def detected(admin_url: str) -> bool:
    """Whether the database is a Citus coordinator's (the extension is in it)."""
    engine = lone_engine(admin_url)
    try:
        async with engine.connect() as connection:
            return bool((await connection.execute(text(IS_CITUS))).scalar())
    finally:
        await engine.dispose()


@asynccontextmanager
async def _driver(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The driver's own connection, in autocommit: the steps open their transactions themselves."""
    engine = lone_engine(admin_url)
    try:
        async with engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            raw = await connection.get_raw_connection()
            yield raw.driver_connection
    finally:
        await engine.dispose()
