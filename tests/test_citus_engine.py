"""The facts about Citus that Mneia's scale-out design (issue 25) relies on, proven on a real cluster.

The design: a request connects straight to the worker holding its workspace's shards (Citus 11+
syncs the metadata to the workers, so any node can take queries), and every statement runs by
Citus's local execution in the backend that bound the transaction. The sealed tenant context
(transaction-local settings, an HMAC over them, ``pg_backend_pid()`` and
``transaction_timestamp()``, keyed by a secret only the owner role reads) then works unchanged,
provided the key table is a plain local table on every node. The shell (distributed) tables carry
sublink-free policies; the shards carry the variant whose accessor is a scalar sub-select,
installed with DDL propagation off.

What must stay true: each test below proves one such fact, with a control beside each refusal, so
that a Citus upgrade changing any of them fails here rather than in a tenant's data. The refusals
that the design works around are asserted by their messages: should Citus start allowing one,
the test says so, and the design may simplify.

A miniature of the design is built in a private cluster (``scripts/citus.sh``, its own state
directory, brought down afterwards): ``items`` distributed by workspace, ``seal_of``/``ctx_ws``/
``bind`` as in ``src/mneia/storage/sql/context.sql`` (md5 standing in for the HMAC), and beside it
one table per variant the design rejects.

Opt-in (``MNEIA_CITUS=1``): the first run builds Citus from source, under a minute on 2 idle cores,
cached afterwards under ``~/.cache/mneia/citus``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from tests.citus import ASKED, BUILD_TIMEOUT
from tests.citus import output as citus

pytestmark = [pytest.mark.slow, ASKED]

DATABASE_URL = re.compile(r"DATABASE_URL=postgresql://postgres@127\.0\.0\.1:(\d+)/(\w+)")
STATUS_LINE = re.compile(r"(coordinator|worker\d+) 127\.0\.0\.1:(\d+) answers")

WORKSPACES = [uuid.UUID(int=i) for i in range(1, 9)]  # fixed: the same placements every run
BOUND = WORKSPACES[0]  # the workspace the tests bind to, also spelled out in BY_LITERAL
ROWS = 3  # per workspace and table

# As superuser on the coordinator, which propagates roles and grants to the workers. The owner
# logs in: Citus connects to the workers as the current role to create distributed objects
# there, so the roles are committed first.
ROLES = """
CREATE ROLE facts_owner LOGIN;
CREATE ROLE facts_app LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO facts_owner;
"""
# As the owner, one statement at a time as a migration would (in one transaction, Citus would
# need citus.multi_shard_modify_mode = sequential to create functions after shards).
SEAL_OF = """
CREATE FUNCTION seal_of(ws text) RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public
  AS $$ SELECT md5(ws || '|' || pg_backend_pid() || '|' || transaction_timestamp() || '|'
                   || (SELECT k FROM public.keys WHERE id = 1)) $$
"""
CTX_WS = """
CREATE FUNCTION ctx_ws() RETURNS uuid LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public
  AS $$ BEGIN
    IF coalesce(current_setting('x.seal', true), '') <> ''
       AND current_setting('x.seal', true) = public.seal_of(current_setting('x.ws', true)) THEN
      RETURN current_setting('x.ws', true)::uuid;
    END IF;
    RETURN NULL;
  END $$
"""
BIND = """
CREATE FUNCTION bind(ws uuid) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public
  AS $$ BEGIN
    PERFORM set_config('x.ws', ws::text, true);
    PERFORM set_config('x.seal', public.seal_of(ws::text), true);
    RETURN pg_backend_pid();
  END $$
"""
OWNER_SCHEMA = (
    "CREATE TABLE items (w uuid NOT NULL, id int NOT NULL, body text, PRIMARY KEY (w, id))",
    "SELECT create_distributed_table('items', 'w', shard_count := 4)",
    "CREATE TABLE keys (id int PRIMARY KEY, k text NOT NULL)",
    "INSERT INTO keys VALUES (1, 'sekrit')",
    SEAL_OF,
    CTX_WS,
    BIND,
    # The rejected variant: the key in a reference table, read by ref_seal_of.
    "CREATE TABLE ref_keys (id int PRIMARY KEY, k text NOT NULL)",
    "SELECT create_reference_table('ref_keys')",
    "INSERT INTO ref_keys VALUES (1, 'sekrit')",
    SEAL_OF.replace("seal_of", "ref_seal_of").replace("public.keys", "public.ref_keys"),
    CTX_WS.replace("ctx_ws", "ref_ctx_ws").replace("seal_of", "ref_seal_of"),
    BIND.replace("bind", "ref_bind").replace("seal_of", "ref_seal_of"),
    # One table per policy variant, co-located with items (same workspace, same node).
    "CREATE TABLE ref_items (w uuid NOT NULL, id int NOT NULL, PRIMARY KEY (w, id))",
    "CREATE TABLE sub_items (w uuid NOT NULL, id int NOT NULL, PRIMARY KEY (w, id))",
    "CREATE TABLE nest_items (ws uuid NOT NULL, nid int NOT NULL, PRIMARY KEY (ws, nid))",
    "CREATE TABLE marked (w uuid NOT NULL, id int NOT NULL, PRIMARY KEY (w, id))",
    "SELECT create_distributed_table('ref_items', 'w', colocate_with := 'items')",
    "SELECT create_distributed_table('sub_items', 'w', colocate_with := 'items')",
    "SELECT create_distributed_table('nest_items', 'ws', colocate_with := 'items')",
    "SELECT create_distributed_table('marked', 'w', colocate_with := 'items')",
    *(
        statement
        for table in ("items", "ref_items", "sub_items", "nest_items", "marked")
        for statement in (
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        )
    ),
)

# The shell tables' policies, on the coordinator and on every worker, with DDL propagation off:
# with it on, Citus would push them to the shards (and refuses any sublink). The shell of
# sub_items has the sublink in WITH CHECK only. marked tells the policies apart: each layer
# refuses another last digit of id (coordinator's shell 3, workers' shells 1, shards 2).
SHELL_POLICIES = """
SET LOCAL citus.enable_ddl_propagation = off;
SET LOCAL ROLE facts_owner;
CREATE POLICY q ON items USING (w = ctx_ws()) WITH CHECK (w = ctx_ws());
CREATE POLICY q ON ref_items USING (w = ref_ctx_ws()) WITH CHECK (w = ref_ctx_ws());
CREATE POLICY q ON sub_items USING (w = ctx_ws()) WITH CHECK (w = (SELECT ctx_ws()));
CREATE POLICY q ON nest_items USING (ws = ctx_ws()) WITH CHECK (ws = ctx_ws());
"""
COORDINATOR_MARK = "CREATE POLICY q ON marked USING (id % 10 <> 3) WITH CHECK (id % 10 <> 3)"
WORKER_MARK = "CREATE POLICY q ON marked USING (id % 10 <> 1) WITH CHECK (id % 10 <> 1)"

# A plain local key table on each worker, owned by the owner role, holding the same key.
WORKER_KEYS = """
SET LOCAL citus.enable_ddl_propagation = off;
SET LOCAL ROLE facts_owner;
CREATE TABLE keys (id int PRIMARY KEY, k text NOT NULL);
INSERT INTO keys VALUES (1, 'sekrit');
"""

# The shards' policies, through run_command_on_shards: one statement per call, as it reports
# only the first statement's outcome (test_run_command_on_shards_reports_only_the_first_statement).
# A shard is no Citus table, so nothing propagates and no sublink check applies.
SHARD_POLICIES = [
    ("items", "CREATE POLICY q ON %s USING (w = (SELECT ctx_ws())) WITH CHECK (w = (SELECT ctx_ws()))"),
    (
        "ref_items",
        "CREATE POLICY q ON %s USING (w = (SELECT ref_ctx_ws())) WITH CHECK (w = (SELECT ref_ctx_ws()))",
    ),
    ("sub_items", "CREATE POLICY q ON %s USING (w = (SELECT ctx_ws())) WITH CHECK (w = (SELECT ctx_ws()))"),
    (
        "nest_items",
        "CREATE POLICY q ON %s USING (ws = (SELECT ctx_ws())"
        " AND EXISTS (SELECT 1 FROM public.items i WHERE i.w = ws AND i.id = nid))"
        " WITH CHECK (ws = (SELECT ctx_ws()))",
    ),
    ("marked", "CREATE POLICY q ON %s USING (id %% 10 <> 2) WITH CHECK (id %% 10 <> 2)"),
]

GRANTS = """
GRANT SELECT, INSERT ON items, ref_items, sub_items, nest_items, marked TO facts_app;
GRANT EXECUTE ON FUNCTION ctx_ws(), bind(uuid), ref_ctx_ws(), ref_bind(uuid) TO facts_app;
REVOKE EXECUTE ON FUNCTION seal_of(text), ref_seal_of(text) FROM PUBLIC;
"""

OTHER_ROWS = "new row violates row-level security policy"
BY_LITERAL = "SELECT array_agg(id ORDER BY id) FROM marked WHERE w = '00000000-0000-0000-0000-000000000001'"


@dataclass(frozen=True)
class Database:
    """A database from ``createdb`` in a private cluster: its name and each node's port."""

    name: str
    coordinator: int
    workers: tuple[int, ...]

    async def connect(self, port: int, user: str = "facts_app") -> asyncpg.Connection:
        return await asyncpg.connect(host="127.0.0.1", port=port, user=user, database=self.name)


@dataclass(frozen=True)
class Cluster:
    """The miniature, and where its workspaces live."""

    database: Database
    home: int  # the worker holding `bound`'s shards
    away: int  # the other worker
    bound: uuid.UUID  # the workspace the tests bind to
    neighbour: uuid.UUID  # another workspace on `home`
    stranger: uuid.UUID  # a workspace on `away`


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    # Outside pytest's basetemp (mode 0700): as root the nodes run as another user, who must
    # reach their data directories. A fresh directory: `up` starts a cluster of our own.
    scratch = Path(tempfile.mkdtemp(prefix="mneia-citus-engine-"))
    state = scratch / "cluster"
    try:
        citus("up", state=state, timeout=BUILD_TIMEOUT)
        name = f"citus_engine_{uuid.uuid4().hex[:8]}"
        created = DATABASE_URL.fullmatch(citus("createdb", name, state=state).strip())
        assert created and created.group(2) == name
        ports = {
            line.group(1): int(line.group(2))
            for line in map(STATUS_LINE.fullmatch, citus("status", state=state).splitlines())
            if line
        }
        assert ports["coordinator"] == int(created.group(1)), ports
        workers = tuple(port for node, port in sorted(ports.items()) if node != "coordinator")
        assert len(workers) == 2, ports
        yield Database(name, ports["coordinator"], workers)
    finally:
        try:
            citus("down", state=state)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


async def run_on_shards(connection: asyncpg.Connection, table: str, command: str) -> None:
    results = await connection.fetch(
        "SELECT shardid, success, result FROM run_command_on_shards($1, $2)", table, command
    )
    assert results and all(row["success"] for row in results), [dict(row) for row in results]


@pytest.fixture(scope="module")
async def cluster(database: Database) -> Cluster:
    admin = await database.connect(database.coordinator, "postgres")
    try:
        await admin.execute(ROLES)
        await admin.execute("SET ROLE facts_owner")
        for statement in OWNER_SCHEMA:
            await admin.execute(statement)
        await admin.execute("RESET ROLE")
        for port in database.workers:
            worker = await database.connect(port, "postgres")
            try:
                async with worker.transaction():
                    await worker.execute(WORKER_KEYS)
                    await worker.execute(SHELL_POLICIES)
                    await worker.execute(WORKER_MARK)
            finally:
                await worker.close()
        async with admin.transaction():
            await admin.execute(SHELL_POLICIES)
            await admin.execute(COORDINATOR_MARK)
        for table, command in SHARD_POLICIES:
            await run_on_shards(admin, table, command)
        await admin.execute(GRANTS)
        # As superuser, which bypasses row-level security.
        rows = [(w, i) for w in WORKSPACES for i in range(1, ROWS + 1)]
        await admin.executemany("INSERT INTO items VALUES ($1, $2, 'body')", rows)
        for table in ("ref_items", "sub_items", "nest_items"):
            await admin.copy_records_to_table(table, records=rows)
        await admin.executemany(
            "INSERT INTO marked VALUES ($1, $2)", [(w, i) for w in WORKSPACES for i in range(1, 6)]
        )
        placements = await admin.fetch(
            "SELECT w, nodeport FROM unnest($1::uuid[]) AS w JOIN citus_shards"
            " ON shardid = get_shard_id_for_distribution_column('items', w)"
            " WHERE table_name = 'items'::regclass",
            WORKSPACES,
        )
    finally:
        await admin.close()
    node = {row["w"]: row["nodeport"] for row in placements}
    assert set(node) == set(WORKSPACES) and set(node.values()) == set(database.workers), node
    home = node[BOUND]
    away = next(port for port in database.workers if port != home)
    neighbours = [w for w in WORKSPACES if node[w] == home and w != BOUND]
    assert neighbours, node
    stranger = next(w for w in WORKSPACES if node[w] == away)
    return Cluster(database, home, away, BOUND, neighbours[0], stranger)


@asynccontextmanager
async def connected(cluster: Cluster, port: int | None = None) -> AsyncIterator[asyncpg.Connection]:
    """The server's role on a node (the home worker unless told), one transaction, rolled back."""
    connection = await cluster.database.connect(cluster.home if port is None else port)
    try:
        transaction = connection.transaction()
        await transaction.start()
        try:
            yield connection
        finally:
            await transaction.rollback()
    finally:
        await connection.close()


async def visible(connection: asyncpg.Connection, workspace: uuid.UUID, table: str = "items") -> int:
    # The table name comes from this module's own constants, never from input.
    query = {
        "items": "SELECT count(*) FROM items WHERE w = $1",
        "ref_items": "SELECT count(*) FROM ref_items WHERE w = $1",
        "sub_items": "SELECT count(*) FROM sub_items WHERE w = $1",
        "nest_items": "SELECT count(*) FROM nest_items WHERE ws = $1",
    }[table]
    count: int = await connection.fetchval(query, workspace)
    return count


async def test_a_worker_bound_in_its_own_backend_shows_only_the_bound_workspace(cluster: Cluster) -> None:
    """Query from any node plus local execution: on the worker holding the workspace, each
    statement runs in the backend that bound the transaction, so the seal (over
    ``pg_backend_pid()``) verifies there and the policies admit exactly the bound workspace,
    on the same node as on the other one, and in a fan-out over every shard."""
    async with connected(cluster) as connection:
        assert await connection.fetchval("SELECT bind($1)", cluster.bound) == connection.get_server_pid()
        assert await visible(connection, cluster.bound) == ROWS
        assert await visible(connection, cluster.neighbour) == 0
        assert await visible(connection, cluster.stranger) == 0
        assert await connection.fetchval("SELECT count(*) FROM items") == ROWS
    admin = await cluster.database.connect(cluster.home, "postgres")
    try:  # control: the hidden rows are there
        assert await visible(admin, cluster.neighbour) == ROWS
        assert await visible(admin, cluster.stranger) == ROWS
        assert await admin.fetchval("SELECT count(*) FROM items") == ROWS * len(WORKSPACES)
    finally:
        await admin.close()


async def test_a_worker_bound_in_its_own_backend_inserts_only_into_the_bound_workspace(
    cluster: Cluster,
) -> None:
    """Writes on the home worker: WITH CHECK verifies the seal in the binding backend, so a row
    of the bound workspace goes in (and reads back), a row of any other workspace is refused."""
    async with connected(cluster) as connection:
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        inserted = await connection.fetchval(
            "INSERT INTO items VALUES ($1, 100, 'new') RETURNING id", cluster.bound
        )
        assert inserted == 100
        assert await visible(connection, cluster.bound) == ROWS + 1
        for other in (cluster.neighbour, cluster.stranger):
            with pytest.raises(asyncpg.InsufficientPrivilegeError, match=OTHER_ROWS):
                async with connection.transaction():
                    await connection.execute("INSERT INTO items VALUES ($1, 100, 'new')", other)


async def test_through_the_coordinator_the_context_stays_behind_and_reads_fail_closed(
    cluster: Cluster,
) -> None:
    """Why requests must not go through the coordinator: the settings do not travel to the
    worker's backend that reads the shard, whose policy then finds no context and admits
    nothing (closed, not open)."""
    async with connected(cluster, cluster.database.coordinator) as connection:
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        assert await visible(connection, cluster.bound) == 0
        assert await connection.fetchval("SELECT count(*) FROM items") == 0
    async with connected(cluster) as connection:  # control: the same binding on the home worker
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        assert await visible(connection, cluster.bound) == ROWS


async def test_settings_written_by_hand_without_the_seal_show_nothing(cluster: Cluster) -> None:
    """The seal, not the workspace setting, is what the policy trusts: the server's role can write
    any ``x.*`` setting, but without ``bind`` (the only writer of a valid seal) it sees nothing."""
    async with connected(cluster) as connection:
        await connection.execute("SELECT set_config('x.ws', $1, true)", str(cluster.bound))
        assert await visible(connection, cluster.bound) == 0
        await connection.execute("SELECT set_config('x.seal', 'forged', true)")
        assert await visible(connection, cluster.bound) == 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # and it cannot compute a seal
            await connection.fetchval("SELECT seal_of($1)", str(cluster.bound))
    async with connected(cluster) as connection:  # control
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        assert await visible(connection, cluster.bound) == ROWS


async def test_a_seal_replayed_from_an_earlier_transaction_shows_nothing(cluster: Cluster) -> None:
    """The seal covers ``transaction_timestamp()``: a seal read in one committed transaction, written
    back by hand in the next on the same connection (same backend), does not verify."""
    connection = await cluster.database.connect(cluster.home)
    try:
        async with connection.transaction():
            await connection.fetchval("SELECT bind($1)", cluster.bound)
            seal = await connection.fetchval("SELECT current_setting('x.seal')")
            assert await visible(connection, cluster.bound) == ROWS  # control
        async with connection.transaction():
            await connection.execute("SELECT set_config('x.ws', $1, true)", str(cluster.bound))
            await connection.execute("SELECT set_config('x.seal', $1, true)", seal)
            assert await visible(connection, cluster.bound) == 0
    finally:
        await connection.close()


async def test_a_key_in_a_reference_table_breaks_the_shard_policy(cluster: Cluster) -> None:
    """Why the key table is a plain local table on every node, not a reference table: reading a
    Citus table from a function in a shard's policy is a distributed query nested in a query on
    a shard, which Citus refuses. At top level (``ref_bind``) the reference table reads fine."""
    async with connected(cluster) as connection:
        assert await connection.fetchval("SELECT ref_bind($1)", cluster.bound)
        with pytest.raises(
            asyncpg.PostgresError, match="cannot execute a distributed query from a query on a shard"
        ):
            await visible(connection, cluster.bound, "ref_items")
    async with connected(cluster) as connection:  # control: the same with the key table local
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        assert await visible(connection, cluster.bound) == ROWS


async def test_a_sublink_in_the_shell_with_check_breaks_insert(cluster: Cluster) -> None:
    """Why the shell tables' WITH CHECK is sublink-free even though the shard's is the one applied:
    Citus plans an INSERT on the shell, policies included, and refuses a sublink in WITH CHECK
    there. Reads through the same table work; inserts through a sublink-free shell do too."""
    async with connected(cluster) as connection:
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        assert await visible(connection, cluster.bound, "sub_items") == ROWS
        with pytest.raises(asyncpg.PostgresError, match="subqueries are not supported within INSERT queries"):
            async with connection.transaction():
                await connection.execute("INSERT INTO sub_items VALUES ($1, 100)", cluster.bound)
        await connection.execute("INSERT INTO items VALUES ($1, 100, 'new')", cluster.bound)


async def test_a_shard_policy_reading_another_distributed_table_is_refused(cluster: Cluster) -> None:
    """Why a shard's policy may read nothing but its own row and the context: a sub-select over
    another distributed table inside it makes the shard's query a join of a distributed table,
    which Citus refuses, for reads and for ``INSERT ... RETURNING`` (which checks the new row
    against the read policy as well)."""
    async with connected(cluster) as connection:
        await connection.fetchval("SELECT bind($1)", cluster.bound)
        refused = "direct joins between distributed and local tables are not supported"
        with pytest.raises(asyncpg.PostgresError, match=refused):
            async with connection.transaction():
                await visible(connection, cluster.bound, "nest_items")
        with pytest.raises(asyncpg.PostgresError, match="subqueries are not supported within INSERT queries"):
            async with connection.transaction():
                await connection.fetchval(
                    "INSERT INTO nest_items VALUES ($1, 100) RETURNING nid", cluster.bound
                )
        # controls: items (no sub-select in its shard policy) reads and inserts the same way
        assert await visible(connection, cluster.bound) == ROWS
        assert await connection.fetchval("INSERT INTO items VALUES ($1, 100) RETURNING id", cluster.bound)


async def test_a_policy_with_a_sublink_is_refused_on_a_distributed_table(cluster: Cluster) -> None:
    """Why the shards' fast policies are installed with DDL propagation off: with it on, Citus
    refuses a sublink (even the scalar ``(SELECT ctx_ws())``) in a distributed table's policy.
    A sublink-free policy is accepted and reaches every shard."""
    owner = await cluster.database.connect(cluster.database.coordinator, "facts_owner")
    try:
        await owner.execute("CREATE TABLE fresh (w uuid NOT NULL, id int NOT NULL, PRIMARY KEY (w, id))")
        await owner.execute("SELECT create_distributed_table('fresh', 'w', colocate_with := 'items')")
        with pytest.raises(asyncpg.PostgresError) as refusal:
            await owner.execute("CREATE POLICY q ON fresh USING (w = (SELECT ctx_ws()))")
        # Citus means "cannot create policy: Subqueries are not supported in policies on
        # distributed tables"; 14.0.1 on PostgreSQL 18 re-parses the already transformed sublink
        # first and fails with an internal error instead. Refused either way.
        assert (refusal.value.message, refusal.value.detail) in {
            ("cannot create policy", "Subqueries are not supported in policies on distributed tables"),
            ("unexpected non-SELECT command in SubLink", None),
        }
        await owner.execute("CREATE POLICY q ON fresh USING (w = ctx_ws())")
        on_shards = await owner.fetch(
            "SELECT success, result FROM run_command_on_shards('fresh',"
            " $$SELECT qual FROM pg_policies WHERE tablename = '%s'$$)"
        )
        assert [(row["success"], row["result"]) for row in on_shards] == [(True, "(w = ctx_ws())")] * 4
    finally:
        await owner.close()


async def test_a_worker_select_is_guarded_by_the_shell_or_the_shard_policy_by_its_form(
    cluster: Cluster,
) -> None:
    """Why the workers' shell policies must be the complete sealed check, equal to the shards':
    a single-shard SELECT with the workspace as a literal runs by Citus's local fast path, which
    plans the shell's query (its policy already applied) against the local shard without the
    shard's policy; with a bind parameter, in a fan-out, and for INSERT's WITH CHECK, the shard's
    policy applies instead. The coordinator's shell policy is never applied."""
    assert cluster.bound == uuid.UUID("00000000-0000-0000-0000-000000000001")  # as in BY_LITERAL
    async with connected(cluster) as connection:
        assert await connection.fetchval(BY_LITERAL) == [2, 3, 4, 5]  # the worker's shell hides 1
        assert await connection.fetchval(
            "SELECT array_agg(id ORDER BY id) FROM marked WHERE w = $1", cluster.bound
        ) == [1, 3, 4, 5]  # the shard's hides 2
        fan_out = await connection.fetchval("SELECT array_agg(DISTINCT id ORDER BY id) FROM marked")
        assert fan_out == [1, 3, 4, 5]  # the shards' again
        # The workers' shell WITH CHECK (refusing 1) is planned but not applied; the shard's is.
        await connection.execute("INSERT INTO marked VALUES ($1, 11)", cluster.bound)
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match=OTHER_ROWS):
            await connection.execute("INSERT INTO marked VALUES ($1, 12)", cluster.bound)
    async with connected(cluster, cluster.database.coordinator) as connection:
        assert await connection.fetchval(BY_LITERAL) == [1, 3, 4, 5]


async def test_run_command_on_shards_reports_only_the_first_statement(cluster: Cluster) -> None:
    """Why the shards' policies are installed one statement per ``run_command_on_shards`` call:
    given several statements it reports the first one's outcome, success even when a later one
    failed; a single failing statement is reported as failed."""
    admin = await cluster.database.connect(cluster.database.coordinator, "postgres")
    try:
        several = await admin.fetch(
            "SELECT success, result FROM run_command_on_shards('items', 'SELECT 1; SELECT 1/0')"
        )
        assert [(row["success"], row["result"]) for row in several] == [(True, "1")] * 4
        alone = await admin.fetch("SELECT success, result FROM run_command_on_shards('items', 'SELECT 1/0')")
        assert [(row["success"], row["result"]) for row in alone] == [(False, "ERROR:  division by zero")] * 4
    finally:
        await admin.close()


LOOKUP = """CREATE FUNCTION facts_lookup(ws uuid) RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE found bigint;
  BEGIN
    SELECT count(*) INTO found FROM items WHERE w = ws;
    RETURN found;
  END $$"""
BACKEND_MEMORY = "SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts"


async def test_a_keyed_lookup_in_a_function_keeps_one_local_plan_per_shard(cluster: Cluster) -> None:
    """What ``scripts/citus-patches/0001-local-plan-cache.patch`` fixes in Citus 14.0.1: a
    fast-path statement whose workspace is a parameter (every keyed lookup in Mneia's functions,
    ``mneia_authenticate`` on every request) is planned for the local shard once per connection.
    Unpatched, each call planned it again and kept every plan: a backend grew by about 380 KB
    an authentication until it ran out of memory. A thousand calls on one connection, each
    finding the workspace's rows, must leave its memory flat; on the unpatched build this test
    measured 33 MB of growth and failed."""
    admin = await cluster.database.connect(cluster.home, "postgres")
    try:
        await admin.execute("SET citus.enable_ddl_propagation = off")  # this worker's own helper
        await admin.execute(LOOKUP)
        for _ in range(20):  # past the five custom plans: the generic plan, cached from here on
            assert await admin.fetchval("SELECT facts_lookup($1)", cluster.bound) == ROWS
        before = await admin.fetchval(BACKEND_MEMORY)
        for _ in range(1000):
            assert await admin.fetchval("SELECT facts_lookup($1)", cluster.bound) == ROWS
        grown = await admin.fetchval(BACKEND_MEMORY) - before
        assert grown < 1_000_000, f"the backend grew by {grown:,} bytes over 1,000 calls"
    finally:
        await admin.close()
