"""The spool: what the hooks leave on disk for ``mneia sync`` to send, so that a session's end never waits
for the network.

A client ending a session gives its hook a second or less (Claude Code
1.5 s, Codex 1 s, Gemini CLI does not wait at all), and a server may be
down or far. So ``mneia hook`` only writes the client's payload here and
exits; ``mneia sync`` (``capture.sync``, started in the background by the
next SessionStart, or run by hand) reads the spool oldest first and sends
each entry.

**Layout.** ``<state dir>/spool/`` (``capture.place``), one JSON file per
entry, named ``<time_ns, 20 digits>-<sha256(session id)[:16]>-<8 random hex>.json``:
names sort in the order the entries were written, entries of one session
share their middle part, and two writes never share a name. Files are
written atomically (temporary file, fsync, ``os.replace``): a file with
that name is whole. Names starting with a dot (temporary files, ``.lock``)
are not entries.

**Entry**, version 1::

    {"version": 1,
     "kind": "start" | "end" | "draft",   # start: a session began (its transcript may be imported
                                          # once it goes quiet, if no end ever comes: a crash);
                                          # end: the session ended; draft: a compact summary
     "client": "claude-code" | "codex" | "gemini",   # gemini: Gemini CLI (tool "gemini-cli")
     "payload": {...},            # the client's hook input, as received (session_id, cwd, ...)
     "url": "http://...",         # MNEIA_URL when it was spooled (its default when unset)
     "project": "..." | null,     # MNEIA_PROJECT when it was spooled, as given (id or name)
     "spooled_at": "2026-12-01T10:00:00.123456+00:00"}

Nothing is deduplicated here: the same session ending twice spools twice,
and the consumer keys what it writes (session id + a hash of the entry).
The payload is stored as the client sent it; ``capture.remote`` redacts
credentials from whatever leaves the machine.

**Consuming.** ``pending()`` lists entries oldest first, ``read(path)``
parses one (``ValueError`` when it is not a version-1 entry), ``done(path)``
removes it once sent. Consumers hold ``exclusive()`` (``fcntl.flock`` on
``spool/.lock``) for the whole pass, so that two ``mneia sync`` never send
the same entry twice at once; writers need no lock (a rename is atomic).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from contextlib import contextmanager

from mneia.capture import place

TYPE_CHECKING = False  # not typing's: importing typing costs the hooks 4 ms
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

VERSION = 1
KINDS = ("start", "end", "draft")
LOCK = ".lock"


def entry(
    kind: str, client: str, payload: Mapping[str, Any], url: str, project: str | None, spooled_at: str
) -> dict[str, Any]:
    """A version-1 entry (see the module's docstring)."""
    if kind not in KINDS:
        raise ValueError(f"a spool entry is one of {', '.join(KINDS)}, not {kind!r}")
    return {
        "version": VERSION,
        "kind": kind,
        "client": client,
        "payload": dict(payload),
        "url": url,
        "project": project,
        "spooled_at": spooled_at,
    }


def _name(session_id: object) -> str:
    session = hashlib.sha256(str(session_id or "").encode()).hexdigest()[:16]
    return f"{time.time_ns():020d}-{session}-{os.urandom(4).hex()}.json"


def write(item: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Path:
    """Spool ``item`` (an ``entry``); answers its file."""
    payload = item.get("payload")
    session = payload.get("session_id") if isinstance(payload, dict) else None
    path = place.spool_dir(env) / _name(session)
    place.atomic_write(path, json.dumps(item, ensure_ascii=False, sort_keys=True).encode())
    return path


def pending(env: Mapping[str, str] | None = None) -> list[Path]:
    """The entries waiting, oldest first."""
    try:
        names = [
            found.name
            for found in os.scandir(place.spool_dir(env))
            if found.name.endswith(".json") and not found.name.startswith(".")
        ]
    except FileNotFoundError:
        return []
    directory = place.spool_dir(env)
    return [directory / name for name in sorted(names)]


def read(path: Path) -> dict[str, Any]:
    """One entry; ``ValueError`` when the file is not a version-1 entry (``OSError`` when it is gone)."""
    found = json.loads(path.read_bytes())
    if not isinstance(found, dict) or found.get("version") != VERSION:
        raise ValueError(f"{path.name} is not a version-{VERSION} spool entry")
    if found.get("kind") not in KINDS or not isinstance(found.get("payload"), dict):
        raise ValueError(f"{path.name} has no kind of {KINDS} or no payload object")
    return found


def done(path: Path) -> None:
    """Remove a sent entry (already gone is fine)."""
    path.unlink(missing_ok=True)


@contextmanager
def exclusive(env: Mapping[str, str] | None = None, *, wait: bool = True) -> Iterator[bool]:
    """Hold the spool's lock for the block; yields False, at once, when ``wait`` is off and another
    process holds it. Released however the block ends (and by the kernel if the process dies)."""
    directory = place.ensure(place.spool_dir(env))
    descriptor = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def busy(env: Mapping[str, str] | None = None) -> bool:
    """Whether a consumer holds the lock now (then starting another one is pointless)."""
    with exclusive(env, wait=False) as held:
        return not held
