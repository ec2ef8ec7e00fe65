"""The embedded server's system user, as root: created once however many processes start at once.

On a fresh machine the README's test command (two pytest-xdist workers, each
starting its own embedded server) ran useradd twice at once: one worker's
server failed to initialise ("could not change permissions of directory"),
and with it every test of that worker. ``storage.embedded.ensure_system_user``
creates the user under a lock before the package looks for it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live import PATIENCE

pytestmark = pytest.mark.skipif(
    os.name != "posix"
    or os.geteuid() != 0
    or shutil.which("useradd") is None
    or shutil.which("userdel") is None,
    reason="creating a system user needs root, useradd and userdel",
)

RACERS = 8

# Each racer waits for the start file, so that all of them call ensure_system_user at once.
RACER = """
import os, pwd, sys, time
from pathlib import Path
from mneia.storage.embedded import ensure_system_user
name, start = sys.argv[1], Path(sys.argv[2])
deadline = time.monotonic() + float(sys.argv[3])
while not start.exists():
    if time.monotonic() > deadline:
        sys.exit("the start file never appeared")
    time.sleep(0.001)
ensure_system_user(name)
print(pwd.getpwnam(name).pw_uid)
"""


@pytest.fixture
def throwaway_user() -> Iterator[str]:
    """A user name nobody has, removed afterwards if a test made it."""
    name = f"mneia_t{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)


def _racer(name: str, start: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", RACER, name, str(start), str(PATIENCE)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _passwd_lines(name: str) -> list[str]:
    return [line for line in Path("/etc/passwd").read_text().splitlines() if line.split(":")[0] == name]


def test_processes_starting_at_once_create_the_system_user_once(tmp_path: Path, throwaway_user: str) -> None:
    start = tmp_path / "start"
    racers = [_racer(throwaway_user, start) for _ in range(RACERS)]
    start.touch()
    answers = [racer.communicate(timeout=PATIENCE) for racer in racers]
    failed = [err for racer, (_, err) in zip(racers, answers, strict=True) if racer.returncode != 0]
    assert failed == []
    uids = {out.strip() for out, _ in answers}
    assert uids == {str(pwd.getpwnam(throwaway_user).pw_uid)}
    assert len(_passwd_lines(throwaway_user)) == 1


def test_an_existing_user_is_left_as_it_is(tmp_path: Path, throwaway_user: str) -> None:
    subprocess.run(["useradd", "-s", "/bin/bash", throwaway_user], check=True, capture_output=True)
    before = _passwd_lines(throwaway_user)
    start = tmp_path / "start"
    start.touch()
    racer = _racer(throwaway_user, start)
    out, err = racer.communicate(timeout=PATIENCE)
    assert racer.returncode == 0, err
    assert out.strip() == str(pwd.getpwnam(throwaway_user).pw_uid)
    assert _passwd_lines(throwaway_user) == before


@pytest.mark.parametrize("planted", ["another user's file", "a link"])
def test_a_lock_root_does_not_own_creates_no_user(tmp_path: Path, throwaway_user: str, planted: str) -> None:
    """The lock lives in the temporary directory, which everyone may write: a file planted there by
    another user, or a link, is refused, and no user is created."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    lock = scratch / "mneia-embedded-user.lock"
    if planted == "a link":
        lock.symlink_to(tmp_path / "elsewhere")
    else:
        lock.touch()
        os.chown(lock, 65534, 65534)  # nobody
    start = tmp_path / "start"
    start.touch()
    racer = _racer(throwaway_user, start, env={**os.environ, "TMPDIR": str(scratch)})
    _, err = racer.communicate(timeout=PATIENCE)
    assert racer.returncode != 0
    assert "PermissionError" in err or "Too many levels of symbolic links" in err, err
    assert _passwd_lines(throwaway_user) == []
    assert not (tmp_path / "elsewhere").exists()
