"""The ``mneia`` console script: ``mneia hook`` starts on the standard library alone, the rest is
``mneia.cli``.

A client runs its hooks at every session's start and end, and gives them a
second or less; ``mneia.cli`` imports SQLAlchemy, asyncpg and alembic, which
alone take longer than that on a busy machine. So the first argument is
looked at before anything else is imported: ``hook`` goes to
``mneia.capture.hook``, which imports nothing of the server; every other
command (``hook`` included, through ``python -m mneia.cli``) goes to
``mneia.cli``, whose ``--help`` lists them all.
"""

from __future__ import annotations

import sys
import time

STARTED = time.monotonic()
"""When this process began running Python code: the hooks' deadlines count from it."""


def main(argv: list[str] | None = None) -> int | None:
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # answered without the server's imports, as the parser would answer it
        from mneia import version

        print(f"mneia {version()}")
        return 0
    if args[:1] == ["hook"]:
        from mneia.capture import hook

        return hook.main(args[1:], started=STARTED)
    from mneia import cli

    cli.main(args)
    return None


if __name__ == "__main__":
    sys.exit(main())
