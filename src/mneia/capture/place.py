"""Where the client-side commands keep their state on this machine: the spool, the resume cache, logs.

The root is ``$MNEIA_STATE_DIR``, else the user state directory
(``platformdirs.user_state_dir("mneia")``: ``~/.local/state/mneia`` on
Linux), with ``spool/`` (what the hooks leave for ``mneia sync``, see
``capture.spool``), ``cache/`` (the last resume per server and project) and
the logs (``hook.log``, ``sync.log``). Directories are made private (0700)
and files 0600: the spool holds compact summaries and the cache resumes,
which are the project's memory.

Every write is atomic (a temporary file in the same directory, fsynced,
then ``os.replace``): a hook killed mid-write by its client's timeout
leaves the old file or the new one, never half of one. Only the standard
library and platformdirs (a few milliseconds to import, measured) are
imported: the hooks start here.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import platformdirs

TYPE_CHECKING = False  # not typing's: importing typing costs the hooks 4 ms
if TYPE_CHECKING:
    from collections.abc import Mapping

STATE_SETTING = "MNEIA_STATE_DIR"
LOG_LIMIT = 1_000_000
"""A log past this many bytes is moved to ``<name>.1`` (the older one dropped) before the next line."""


def root(env: Mapping[str, str] | None = None) -> Path:
    """The state directory (not created here)."""
    env = os.environ if env is None else env
    given = (env.get(STATE_SETTING) or "").strip()
    return Path(given).expanduser() if given else Path(platformdirs.user_state_dir("mneia"))


def ensure(directory: Path) -> Path:
    """``directory``, made with its missing parents, each private (0700); existing ones as they are."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)
    return directory


def spool_dir(env: Mapping[str, str] | None = None) -> Path:
    return root(env) / "spool"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    return root(env) / "cache"


def log_path(name: str, env: Mapping[str, str] | None = None) -> Path:
    """``<root>/<name>.log``, its directory made; rotated once past ``LOG_LIMIT``."""
    path = ensure(root(env)) / f"{name}.log"
    try:
        if path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    return path


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, fsynced, renamed."""
    ensure(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened, e.g. Windows)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# --- the resume cache -----------------------------------------------------------------------------
# One file per (server URL, MNEIA_PROJECT as configured): what the last SessionStart fetched, shown
# by the next one when the server does not answer. Keys are the configuration, not the resolved
# project id, so that the server is never needed to find the file.


def resume_cache(url: str, project: str | None, env: Mapping[str, str] | None = None) -> Path:
    key = hashlib.sha256(f"{url}\n{project or ''}".encode()).hexdigest()[:32]
    return cache_dir(env) / f"resume-{key}.json"


def write_resume(
    url: str, project: str | None, cached: Mapping[str, object], env: Mapping[str, str] | None = None
) -> None:
    """Keep ``cached`` (JSON-able: the text, when it was fetched, the parts it was made of)."""
    body = {"url": url, "project": project, **cached}
    atomic_write(resume_cache(url, project, env), json.dumps(body, ensure_ascii=False).encode())


def read_resume(
    url: str, project: str | None, env: Mapping[str, str] | None = None
) -> dict[str, object] | None:
    """The cached resume for this server and project, or None (none yet, or unreadable)."""
    try:
        found = json.loads(resume_cache(url, project, env).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("text"), str):
        return None
    return found
