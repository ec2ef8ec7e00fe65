"""Which git commit last changed each of a directory's files: the basis an imported file names."""

from __future__ import annotations

import subprocess
from pathlib import Path


def last_commits(directory: Path, wanted: set[str]) -> dict[str, str]:
    """The last commit of each wanted file, in one ``git log`` pass; none for files changed since."""
    base = ["git", "-c", "core.quotepath=off", "-C", str(directory)]
    found: dict[str, str] = {}
    try:
        with subprocess.Popen(
            [*base, "log", "--format=%x01%H", "--name-only", "--relative", "--no-renames", "--", "."],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as log:
            assert log.stdout is not None
            sha = ""
            for line in log.stdout:
                line = line.rstrip("\n")
                if line.startswith("\x01"):
                    sha = line[1:]
                elif line and line in wanted and line not in found:
                    found[line] = sha
                    if len(found) == len(wanted):
                        log.kill()
                        break
        if not found:
            return {}
        changed = subprocess.run(
            [*base, "diff", "--name-only", "--relative", "HEAD", "--", "."],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no git
        return {}
    if changed.returncode != 0:
        return {}
    for line in changed.stdout.splitlines():
        found.pop(line, None)
    return found
