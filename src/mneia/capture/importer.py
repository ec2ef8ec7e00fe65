"""``mneia import claude-code|codex|gemini|adr|rules PATH...``: read every source first, then send.

Reading comes first, for all the paths given: a file that is not what the
importer reads fails with one line naming it, before anything is written.
Then each source's claims go to the server (``capture.upload``) and a short
summary is printed per source, or one JSON document with ``--json``.
Progress goes to stderr, so that ``--json`` output stays one document.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mneia.capture import upload
from mneia.capture.record import Capture, NotASource
from mneia.capture.remote import RemoteError, Settings, Unconfigured, project_id

TRANSCRIPTS = ("claude-code", "codex", "gemini")
KINDS = (*TRANSCRIPTS, "adr", "rules")


class ImportFailed(Exception):
    """One line for the user; the command exits 1 (2 for a usage or configuration error)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def captures(kind: str, paths: Sequence[Path]) -> list[Capture]:
    """Every source the paths hold, read whole; NotASource for the first that is not one."""
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise ImportFailed(f"{missing[0]}: no such file or directory", status=2)
    if kind in TRANSCRIPTS:
        from mneia.capture import transcript

        files = transcript.files(paths, kind)
        if not files:
            raise ImportFailed(f"{', '.join(map(str, paths))}: no {kind} transcript found")
        return [transcript.READERS[kind](path) for path in files]
    if kind == "adr":
        from mneia.capture import adr

        return [adr.read(path) for path in paths]
    from mneia.capture import rules

    return [rules.read(list(paths), root=Path.cwd())]


def _progress(source: str, stream: Callable[[str], object]) -> Callable[[int, int], None]:
    def shown(sent: int, total: int) -> None:
        if total > upload.BATCH:
            stream(f"mneia: {source}: {sent}/{total} items sent\n")

    return shown


def run(kind: str, paths: Sequence[Path], *, as_json: bool) -> int:
    try:
        settings = Settings.from_env()
    except Unconfigured as error:
        raise ImportFailed(str(error), status=2) from None
    try:
        read = captures(kind, paths)
    except NotASource as error:
        raise ImportFailed(f"{error}; nothing was imported") from None
    remote = settings.remote()
    try:
        project, _ = project_id(remote, settings.project)
        summaries = []
        for capture in read:
            summaries.append(
                upload.import_capture(
                    remote, project, capture, progress=_progress(capture.source, sys.stderr.write)
                )
            )
            if not as_json:
                print(summaries[-1].line(), flush=True)
                for note in summaries[-1].notes:
                    print(f"  note: {note}")
    except RemoteError as error:
        raise ImportFailed(f"importing into {settings.url} failed: {error.message}") from None
    except ValueError as error:
        raise ImportFailed(str(error)) from None
    if as_json:
        json.dump({"sources": [summary.as_json() for summary in summaries]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0
