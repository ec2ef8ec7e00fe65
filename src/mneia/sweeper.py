"""``mneia serve``'s retention sweep (R16): every ``MNEIA_SWEEP_EVERY``, in a thread of the serving
process, as the administrator (the workers connect as ``mneia_app``, which cannot redact). Each pass
also folds the item counters (storage.count.fold), so that a project's counter rows stay few.

``MNEIA_SWEEP_EVERY`` is an ISO-8601 duration (default ``PT1H``); ``0`` or ``off`` turns it off,
for a deployment that runs ``mneia admin sweep`` from its own scheduler instead. The first pass runs
one interval after the start. A failed pass is logged and the next one runs on time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import isodate

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from mneia.storage.privacy import Swept

DEFAULT = timedelta(hours=1)
log = logging.getLogger("mneia.sweep")


def every(env: Mapping[str, str] | None = None) -> timedelta | None:
    """The interval ``MNEIA_SWEEP_EVERY`` asks for; None when the sweep is off."""
    given = ((env if env is not None else os.environ).get("MNEIA_SWEEP_EVERY") or "").strip()
    if not given:
        return DEFAULT
    if given.lower() in ("0", "off", "never"):
        return None
    try:
        interval = isodate.parse_duration(given)
    except (isodate.ISO8601Error, ValueError):
        raise ValueError(
            f"MNEIA_SWEEP_EVERY: {given!r} is not an ISO-8601 duration (e.g. PT1H), 0 or off"
        ) from None
    if not isinstance(interval, timedelta) or interval < timedelta(minutes=1):
        raise ValueError(f"MNEIA_SWEEP_EVERY: {given!r} must be at least PT1M, in days, hours or minutes")
    return interval


async def upkeep(engine: AsyncEngine, moment: datetime) -> Swept:
    """One pass, as ``mneia serve`` runs it and ``mneia admin sweep`` does: the retention sweep at
    ``moment`` (R16, R17), then the item counters folded (storage.count.fold)."""
    from mneia.storage import count, privacy

    swept = await privacy.sweep(engine, moment)
    await count.fold(engine)
    return swept


class Sweeper(threading.Thread):
    """Sweeps ``admin_url`` every ``interval`` until ``stop``."""

    def __init__(self, admin_url: str, interval: timedelta) -> None:
        super().__init__(name="mneia-sweep", daemon=True)
        self.admin_url, self.interval = admin_url, interval
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval.total_seconds()):
            try:
                asyncio.run(self._pass())
            except Exception:  # a failed pass is logged; the next runs on time
                log.exception("the retention sweep failed")

    async def _pass(self) -> None:
        from mneia.clock import now
        from mneia.storage.database import create_engine

        engine = create_engine(self.admin_url, pool_size=1, application_name="mneia-sweep")
        try:
            swept = await upkeep(engine, now())
        finally:
            await engine.dispose()
        if swept.redacted or swept.held:
            log.warning(
                "retention sweep: %d items redacted, %d kept by legal holds", swept.redacted, swept.held
            )

    def stop(self) -> None:
        self.stopping.set()
