"""``mneia sync``: send what the hooks spooled, one session at a time, and checkpoint each session.

For each session that ended (an ``end`` entry), its transcript is read and
imported (``capture.upload``: keyed, so nothing is imported twice), and the
session is checkpointed: with the transcript's own last checkpoint call if
it has one, else with the last compact summary spooled or recorded (a draft
handoff, rendered as the client's model's words), else with a handoff that
states only facts: that it ended without a checkpoint, when, its task and
how to resume it. Nothing is guessed from the conversation.

A session's entries are removed only once all of that is written, so a
failure (the server down, a crash) leaves them for the next run; every write
is keyed or carries an idempotency key, so a run that dies halfway and is
repeated writes nothing twice. ``draft`` entries of a session that has not
ended wait for its end. One sync runs at a time (``spool.exclusive``).

A session that never ends (the client crashed, the machine slept for good)
sends no SessionEnd: its ``start`` entry is taken as its end once its
transcript has not changed for ``QUIET`` seconds (``MNEIA_SYNC_QUIET``),
and its handoff says no end was seen.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mneia.capture import spool, upload
from mneia.capture.record import Capture, Checkpoint, NotASource, Origin, SessionFacts
from mneia.capture.remote import UNREACHABLE, RemoteError, Settings, project_id

QUIET = 2 * 60 * 60
"""Seconds a started session's transcript stays unchanged before it counts as ended without an end."""
TOOLS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini-cli"}
RESUME = {"claude-code": "claude --resume {}", "codex": "codex resume {}", "gemini": "gemini --resume {}"}

SESSIONS = """query($p: ID!, $e: String) { sessions(projectId: $p, externalId: $e, first: 20) {
  nodes { id endedAt } } }"""


@dataclass
class Ended:
    """One session's spooled entries: its end(s) and the compact summaries kept before it."""

    client: str
    session_id: str
    paths: list[Path] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    starts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def last_end(self) -> dict[str, Any]:
        return (self.ends or self.starts)[-1]

    @property
    def unended(self) -> bool:
        return not self.ends


def quiet_for(entry: dict[str, Any], now: float) -> float:
    """Seconds since the session's transcript last changed (since the entry was spooled, when the
    transcript is gone)."""
    path = entry["payload"].get("transcript_path")
    try:
        return now - Path(str(path)).stat().st_mtime
    except (OSError, ValueError):
        try:
            return now - datetime.fromisoformat(str(entry["spooled_at"])).timestamp()
        except ValueError:
            return 0.0


def sessions(entries: list[tuple[Path, dict[str, Any]]], *, quiet: float = QUIET) -> list[Ended]:
    """The spooled entries by session, in the order they were spooled: those that ended, and those
    started long enough ago, and quiet since, to count as ended; the rest wait."""
    grouped: dict[tuple[str, str], Ended] = {}
    for path, entry in entries:
        payload = entry["payload"]
        key = (str(entry["client"]), str(payload.get("session_id") or ""))
        found = grouped.setdefault(key, Ended(key[0], key[1]))
        found.paths.append(path)
        {"end": found.ends, "start": found.starts}.get(entry["kind"], found.drafts).append(entry)
    now = time.time()
    return [
        each
        for each in grouped.values()
        if each.ends or (each.starts and quiet_for(each.starts[-1], now) >= quiet)
    ]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def capture_of(ended: Ended) -> Capture:
    """The session's transcript as an importer reads it; what the hook's payload says when the
    transcript is gone (deleted by the client, never written) or not readable."""
    from mneia.capture import transcript

    payload = ended.last_end["payload"]
    path = payload.get("transcript_path")
    capture: Capture | None = None
    if isinstance(path, str) and path and Path(path).is_file():
        try:
            capture = transcript.READERS[ended.client](Path(path))
        except (NotASource, OSError):
            capture = None
    if capture is None:
        capture = Capture(
            source=str(path or f"{ended.client} session {ended.session_id}"), origin=Origin.TRANSCRIPT
        )
    if capture.session is None or not capture.session.external_id:
        capture.session = SessionFacts(
            tool=TOOLS[ended.client],
            external_id=ended.session_id or None,
            deep_link=RESUME[ended.client].format(ended.session_id) if ended.session_id else None,
            cwd=payload.get("cwd") if isinstance(payload.get("cwd"), str) else None,
        )
    for draft in ended.drafts:
        summary = draft["payload"].get("compact_summary")
        if isinstance(summary, str) and summary.strip():
            key = f"{capture.session.tool}:{ended.session_id}:compact:{_digest(summary)}"
            capture.checkpoints.append(Checkpoint(key=key, summary=summary, draft=True))
    return capture


def _checkpointed_before(remote: Any, project: str, external_id: str | None) -> bool:
    """Whether a session of the client's id has already ended in Mneia: checkpointed live through
    MCP, or by an earlier sync. Its handoff stands; a fallback must not hide it."""
    if not external_id:
        return False
    found = remote.run(SESSIONS, {"p": project, "e": external_id})["sessions"]["nodes"]
    return any(node["endedAt"] for node in found)


def _fallback(ended: Ended, capture: Capture) -> Checkpoint:
    """A handoff of facts only, for a session that ended with no checkpoint and no summary."""
    payload = ended.last_end["payload"]
    facts = capture.session
    assert facts is not None
    if ended.unended:
        said = [
            f"The {facts.tool} session sent no end (the client may have crashed) and has been quiet"
            " since; nobody checkpointed or summarised it."
        ]
    else:
        reason = payload.get("reason") or payload.get("hook_event_name") or "an unknown reason"
        said = [f"The {facts.tool} session ended ({reason}) without a checkpoint; nobody summarised it."]
    if facts.started_at and facts.ended_at:
        said.append(
            f"Its transcript runs from {facts.started_at:%Y-%m-%d %H:%M} to {facts.ended_at:%H:%M} UTC."
        )
    if capture.claims:
        said.append(f"{len(capture.claims)} items recorded in it were imported.")
    if facts.deep_link:
        said.append(f"Resume the conversation with `{facts.deep_link}`.")
    return Checkpoint(key=f"sync:{facts.tool}:{ended.session_id}", summary=" ".join(said))


def send(remote: Any, project: str, ended: Ended) -> upload.Summary:
    capture = capture_of(ended)
    if _checkpointed_before(remote, project, capture.session.external_id if capture.session else None):
        capture.checkpoints.clear()  # its handoff stands; a later one would hide it
    elif not capture.checkpoints:
        capture.checkpoints.append(_fallback(ended, capture))
    return upload.import_capture(remote, project, capture)


def _quiet(env: Mapping[str, str] | None) -> float:
    given = (env if env is not None else os.environ).get("MNEIA_SYNC_QUIET") or ""
    try:
        return float(given) if given.strip() else QUIET
    except ValueError:
        return QUIET


def run(settings: Settings, *, json_output: bool, env: Mapping[str, str] | None = None) -> int:
    """One pass over the spool; 1 when something could not be sent (it stays for the next pass)."""
    with spool.exclusive(env, wait=False) as held:
        if not held:
            print("mneia sync: another sync is running; it will send what is spooled", file=sys.stderr)
            return 0
        entries: list[tuple[Path, dict[str, Any]]] = []
        unreadable = 0
        for path in spool.pending(env):
            try:
                entries.append((path, spool.read(path)))
            except (ValueError, OSError):
                unreadable += 1  # kept, never deleted unread: a person can look at it
        remote = settings.remote()
        sent: list[dict[str, Any]] = []
        failed: list[str] = []
        projects: dict[str | None, str] = {}
        for ended in sessions(entries, quiet=_quiet(env)):
            hint = ended.last_end.get("project") or settings.project
            try:
                if hint not in projects:
                    projects[hint] = project_id(remote, hint)[0]
                summary = send(remote, projects[hint], ended)
            except RemoteError as error:
                failed.append(f"{ended.client} session {ended.session_id}: {error.message}")
                if error.code == UNREACHABLE:
                    break  # the rest would fail alike; all of it stays spooled
                continue
            for path in ended.paths:
                spool.done(path)
            sent.append(summary.as_json())
            if not json_output:
                print(summary.line())
    if json_output:
        json.dump({"sent": sent, "failed": failed, "unreadable": unreadable}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    for line in failed:
        print(f"mneia sync: kept for later: {line}", file=sys.stderr)
    if not sent and not failed and not json_output:
        print("mneia sync: nothing spooled")
    return 1 if failed else 0
