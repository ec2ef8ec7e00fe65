"""Liveness and readiness for orchestrators: ``/healthz`` and ``/readyz``, no token needed.

``/healthz``: the database answers ``SELECT 1`` through the server's own
engine within ``PROBE_TIMEOUT`` seconds — 200 ``{"status": "ok"}``, else 503
with a reason. ``/readyz``: also that the database is at exactly the
migration heads this version ships — else 503 naming both. The reasons never
carry driver text (hosts, SQL); the detail goes to the server's log.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.exc import ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import JSONResponse

from mneia.storage import health, migration

PROBE_TIMEOUT = 2.0
log = logging.getLogger("mneia")


def _unavailable(reason: str, **detail: object) -> JSONResponse:
    return JSONResponse({"status": "unavailable", "reason": reason, **detail}, status_code=503)


def _unreachable(error: Exception) -> JSONResponse:
    if isinstance(error, TimeoutError):
        return _unavailable(f"the database did not answer within {PROBE_TIMEOUT:g} s")
    log.warning("probe: the database is unreachable: %s", error)
    return _unavailable("the database is unreachable")


class Probes:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.heads = sorted(migration.heads())  # what this version ships: read once

    async def healthz(self, _: Request) -> JSONResponse:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await health.ping(self.engine)
        except Exception as error:  # any failure to answer is "unavailable", never a 500
            return _unreachable(error)
        return JSONResponse({"status": "ok"})

    async def readyz(self, _: Request) -> JSONResponse:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                current = await health.revisions(self.engine)
        except ProgrammingError:
            # A database migrated before the grant existed: `mneia migrate` grants it.
            return _unavailable("mneia_app cannot read alembic_version; run `mneia migrate`")
        except Exception as error:
            return _unreachable(error)
        expected = self.heads
        if current is None:
            return _unavailable("the database has no Mneia schema; run `mneia migrate`", expected=expected)
        if current != set(expected):
            return _unavailable(
                "the database is not at this version's migrations",
                current=sorted(current),
                expected=expected,
            )
        return JSONResponse({"status": "ready", "revisions": expected})
