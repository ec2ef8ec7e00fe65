"""Shell walkthroughs in the README and the docs, pasted as written into one bash beside a real server.

A walkthrough is a section's ```bash blocks. Each block's ``#>`` lines are
what a person sees after pasting it: ``…`` within a line stands for any text
(ids, dates, paths), and a ``#> …`` line alone for any number of lines (a
diff a command shows, say). Everything else must match exactly, line for line.

The blocks run in order in one ``bash`` process, so variables carry from one
to the next, in a scratch directory whose ``.venv/bin/activate`` puts this
interpreter's ``mneia`` first on the PATH, against uvicorn serving the
application on a fresh, migrated database (``DATABASE_URL`` names it, for
``mneia admin``).
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mneia.app import create_app
from mneia.config import app_url
from mneia.storage import migration
from mneia.storage.database import create_engine
from tests.database import scratch_database
from tests.live import PATIENCE, cli_env, uvicorn_serving

SHELL_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
WILDCARD = "…"
MARKER = "@@ mneia walkthrough block {} @@"


def blocks(text: str, heading: str) -> list[str]:
    """The ```bash blocks of the section under ``heading`` (a whole ``## …`` line), in order."""
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return SHELL_BLOCK.findall(text[start : end if end > 0 else None])


def expected_output(block: str) -> list[str]:
    """A block's ``#>`` lines: what a person sees after pasting it."""
    return [
        line[3:] if line.startswith("#> ") else line[2:]
        for line in block.splitlines()
        if line.startswith("#>")
    ]


def reads_as(shown: Sequence[str], got: Sequence[str]) -> bool:
    """``got`` is ``shown`` line for line: ``…`` in a line is any text within it, a line that is ``…``
    alone any number of whole lines."""
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == WILDCARD else "[^\n]*?".join(map(re.escape, line.split(WILDCARD))) + "\n"
        for line in shown
    )
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in got)) is not None


def stand_in_venv(checkout: Path) -> None:
    """``. .venv/bin/activate`` in ``checkout`` puts this interpreter's ``mneia`` first on the PATH."""
    bin_dir = checkout / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    mneia = bin_dir / "mneia"
    mneia.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m mneia.cli "$@"\n')
    mneia.chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"\n')


async def pasted(
    server: str, checkout: Path, steps: Sequence[str], env: Mapping[str, str] | None = None
) -> list[list[str]]:
    """What each block printed (stdout and stderr, in order), pasted in order into one bash in
    ``checkout`` beside a real server; ``env`` adds to the environment (``HOME``, say)."""
    script = "exec 2>&1\n" + "".join(f"echo '{MARKER.format(i)}'\n{step}" for i, step in enumerate(steps))
    stand_in_venv(checkout)
    async with scratch_database(server) as admin:
        await asyncio.to_thread(migration.upgrade, admin)
        engine = create_engine(app_url(admin), pool_size=3)
        try:
            async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
                shell_env = cli_env(checkout, DATABASE_URL=admin, MNEIA_URL=f"http://127.0.0.1:{port}")
                for name in ("MNEIA_TOKEN", "MNEIA_PROJECT", "BASH_ENV", "ENV"):
                    shell_env.pop(name, None)
                shell_env.update(env or {})
                shell = await asyncio.create_subprocess_exec(
                    "bash",
                    "--noprofile",
                    "--norc",
                    "-s",
                    cwd=checkout,
                    env=shell_env,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
                out, _ = await asyncio.wait_for(shell.communicate(script.encode()), PATIENCE)
        finally:
            await engine.dispose()
    text = out.decode()
    printed = re.split(r"^@@ mneia walkthrough block (\d+) @@\n", text, flags=re.M)[1:]
    got = {int(number): part.splitlines() for number, part in zip(printed[::2], printed[1::2], strict=True)}
    assert sorted(got) == list(range(len(steps))), text
    return [got[number] for number in range(len(steps))]


def mismatches(where: str, steps: Sequence[str], printed: Sequence[Sequence[str]]) -> list[str]:
    """Each step whose output does not read as its ``#>`` lines, with both."""
    return [
        f"step {number + 1} of {where} printed\n" + "\n".join(got) + "\nwhere it shows\n" + "\n".join(shown)
        for number, (step, got) in enumerate(zip(steps, printed, strict=True))
        if not reads_as(shown := expected_output(step), got)
    ]
