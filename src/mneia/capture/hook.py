"""``mneia hook <client>``: what Claude Code, Codex and Gemini CLI run at a session's start, compaction and
end, reading the client's one JSON payload on stdin.

===============  ==================================================================================
Event            What the hook does
===============  ==================================================================================
SessionStart     Prints ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
                 "additionalContext": TEXT}}``, the shape all three clients accept (Gemini CLI
                 reads stdout as JSON only, so nothing else is ever printed). TEXT is the project's
                 resume, as factual statements: the latest handoff, then the slice of memory for the
                 session's task (``resume``), every load-bearing constraint in it whatever the budget
                 (R11). At its start a session's task is unknown, so the slice is for "resume work on
                 the project"; a resumed session (``source: resume``) gets the task Mneia recorded
                 for it (the ``sessions`` query, by the client's session id), when there is one.
                 After a compaction (``source: compact``) the constraints come first. TEXT stays
                 under ``LIMIT`` characters (Claude Code moves a longer one to a file): the least
                 valuable lines go first, filled and scored entries by score, then the options ruled
                 out, then the handoff's lists, and a last line says how many; the guaranteed
                 constraints are never cut. It is cached; when the server does not answer within
                 the deadline, the cached one is shown under a line saying so. Then, when the spool
                 holds entries and no sync is running, ``mneia sync`` is started in the background.
SessionEnd       Spools the payload (``capture.spool``, kind ``end``) and exits: no network.
PostCompact      Spools ``compact_summary`` (kind ``draft``, Claude Code and Codex). Gemini CLI's
                 ``PreCompress`` carries no summary: nothing to keep.
anything else    Nothing, printing nothing.
===============  ==================================================================================

**Stop is never taken as the end of a session.** Claude Code fires it after
every turn (``background_tasks`` tells "paused" from "done", but a person
may still type), Gemini CLI's equivalent is ``AfterAgent``, per turn too,
and all three clients have ``SessionEnd`` (Codex since rust-v0.145.0).
The one case Stop could have covered, ``codex exec``, fires no Stop either
(openai/codex#21753): a transcript import covers what no hook sees. So a
session killed with Ctrl-C, or a Codex older than 0.145, leaves no spool
entry; the next SessionStart still resumes from what Mneia holds.

**Events** are named by ``hook_event_name``; a payload without one (Codex's
schemas list none) is recognised by its fields: ``compact_summary``
(PostCompact), ``source`` (SessionStart), ``reason`` (SessionEnd).

**Never in the client's way.** The hook exits 0 whatever happens (exit 2
blocks in Gemini CLI), prints nothing but the one JSON object (or
nothing), never a traceback: failures go to ``<state dir>/hook.log``. The
network part of SessionStart has a hard deadline of ``DEADLINE`` seconds
from the process's start (``MNEIA_HOOK_DEADLINE`` overrides it): it runs in
a daemon thread that is abandoned when the deadline passes, so a blackholed
server costs the deadline, not a TCP timeout. Only the standard library and
small ``mneia`` modules are imported (a test checks the server's libraries
are not).
"""

from __future__ import annotations

import json
import os
import sys
import time

from mneia.capture import place, remote, spool

TYPE_CHECKING = False  # not typing's: importing typing costs the hooks 4 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, BinaryIO, TextIO

CLIENTS = ("claude-code", "codex", "gemini")
ALIASES = {"gemini-cli": "gemini"}
DEADLINE = 0.6
"""Seconds from the process's start within which SessionStart's requests must have answered."""
DEADLINE_SETTING = "MNEIA_HOOK_DEADLINE"
LIMIT = 9_000
"""Characters of additionalContext at most (Claude Code moves anything over 10,000 to a file)."""
TOKEN_BUDGET = 3_000
"""Tokens asked of ``resume``: a little more than ``LIMIT`` characters of rendered lines hold (3 to 4
characters a token), so that the cut, not the server's budget, decides the tail."""
UNKNOWN_TASK = "resume work on the project"
PAYLOAD_LIMIT = 4 * 1024 * 1024
EVENTS = {"sessionstart": "SessionStart", "sessionend": "SessionEnd", "postcompact": "PostCompact"}
MORE = "… {count} more lines left out; ask Mneia's MCP `resume` tool for more."
CONSTRAINTS_FIRST = "## Load-bearing constraints (they hold whatever the task)"
NO_HANDOFF = "No handoff has been left in this project yet."
ONLY_CONSTRAINTS = (
    "For this task, the project's memory holds the load-bearing constraints listed first and nothing else."
)
NOTHING = "Nothing in the project's memory matches this task yet."
FOR_TASK = "# Project memory for the task:"  # as rehydration.handoff_text.FOR_TASK, which resume prints
USAGE = """usage: mneia hook {claude-code,codex,gemini}

Run by the client as a hook: reads the client's JSON payload on stdin. SessionStart prints the
project's resume as additionalContext; SessionEnd and PostCompact write to the local spool for
`mneia sync`. Configured by MNEIA_URL, MNEIA_TOKEN and MNEIA_PROJECT; always exits 0.
Install it with `mneia hooks install CLIENT`.
"""

SESSIONS = """
query ($project: ID!, $externalId: String) {
  sessions(projectId: $project, externalId: $externalId, first: 5) { nodes { id task startedAt } }
}
"""

RESUME = """
query ($input: ResumeInput!) {
  resume(input: $input) {
    handoff { rendered }
    slice { rendered entries { reason score item { rendered } } }
  }
}
"""


def main(
    argv: list[str],
    *,
    started: float | None = None,
    env: Mapping[str, str] | None = None,
    stdin: BinaryIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Handle one hook call; always 0 (a hook must never fail or block its client)."""
    started = time.monotonic() if started is None else started
    env = os.environ if env is None else env
    try:
        _run(argv, started, env, stdin or sys.stdin.buffer, stdout or sys.stdout)
    except BaseException as error:  # a hook never fails its client, Ctrl-C and exit included
        _failed(env, argv, error)
    return 0


def _run(argv: list[str], started: float, env: Mapping[str, str], stdin: BinaryIO, stdout: TextIO) -> None:
    if argv[:1] in (["-h"], ["--help"]):
        stdout.write(USAGE)
        return
    client = ALIASES.get(argv[0], argv[0]) if argv else None
    if client not in CLIENTS:
        said = f"mneia hook: name the client, one of {', '.join(CLIENTS)} (got {' '.join(argv) or 'nothing'})"
        _log(env, said)
        sys.stderr.write(said + "\n")
        return
    if stdin.isatty():
        sys.stderr.write("mneia hook: reading the client's JSON payload from stdin\n")
    payload = _payload(stdin)
    if payload is None:
        _log(env, f"{client}: stdin held no JSON object; nothing done")
        return
    event = event_of(payload)
    if event == "SessionStart":
        _start(client, payload, started, env, stdout)
    elif event == "SessionEnd":
        _spool("end", client, payload, env)
    elif event == "PostCompact":
        summary = payload.get("compact_summary")
        if isinstance(summary, str) and summary.strip():
            _spool("draft", client, payload, env)


def _payload(stdin: BinaryIO) -> dict[str, Any] | None:
    raw = stdin.read(PAYLOAD_LIMIT + 1)
    if len(raw) > PAYLOAD_LIMIT:
        return None
    try:
        found = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past the parser's depth
        return None
    return found if isinstance(found, dict) else None


def event_of(payload: Mapping[str, Any]) -> str | None:
    """The event the payload is for, named as Claude Code names it; None when it cannot be told."""
    name = payload.get("hook_event_name")
    if isinstance(name, str) and name:
        return EVENTS.get(name.replace("_", "").replace("-", "").lower(), name)
    if "compact_summary" in payload:
        return "PostCompact"
    if "source" in payload:
        return "SessionStart"
    if "reason" in payload:
        return "SessionEnd"
    return None


# --- SessionEnd, PostCompact: the spool ------------------------------------------------------------


def _spool(kind: str, client: str, payload: dict[str, Any], env: Mapping[str, str]) -> None:
    item = spool.entry(kind, client, payload, remote.url_from(env), remote.project_from(env), now())
    spool.write(item, env)


def now(moment: float | None = None) -> str:
    """An ISO-8601 UTC time with microseconds (without importing datetime)."""
    moment = time.time() if moment is None else moment
    whole = int(moment)
    micro = int((moment - whole) * 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micro:06d}+00:00"


def shown(iso: str) -> str:
    """``2026-12-01 10:00 UTC`` from a time ``now`` wrote (as handoffs show their times)."""
    return f"{iso[:10]} {iso[11:16]} UTC" if len(iso) >= 16 else iso


# --- SessionStart: the resume ----------------------------------------------------------------------


def _start(
    client: str, payload: dict[str, Any], started: float, env: Mapping[str, str], stdout: TextIO
) -> None:
    source = payload.get("source") or payload.get("trigger")
    compact = source == "compact"
    url, project = remote.url_from(env), remote.project_from(env)
    try:
        seconds = _deadline(env)
        deadline = started + seconds
        settings = remote.Settings.from_env(env)
        parts = _within(deadline, seconds, lambda: fetch(settings, payload, str(source or ""), deadline, env))
    except remote.Unconfigured:
        why = f"the hook has no MNEIA_TOKEN in its environment, so it did not ask Mneia at {url}"
        text = _fallback(url, project, why, compact, env)
    except remote.RemoteError as error:
        _log(env, f"{client}: SessionStart: {error}")
        text = _fallback(url, project, _why(url, error), compact, env)
    except Exception as error:  # an answer of a shape this version cannot read
        _failed(env, [client, "SessionStart"], error)
        why = f"Mneia at {url} answered what this hook cannot read ({type(error).__name__})"
        text = _fallback(url, project, why, compact, env)
    else:
        text = compose(parts, compact=compact)
        try:
            place.write_resume(
                url, project, {"text": text, "fetched_at": parts["fetched_at"], "parts": parts}, env
            )
        except OSError as error:
            _log(env, f"{client}: cannot cache the resume: {error}")
    stdout.write(json.dumps(output(client, text)) + "\n")
    stdout.flush()
    if isinstance(payload.get("transcript_path"), str) and payload.get("session_id"):
        # After the answer, so the client never waits for it: a session that crashes sends no
        # SessionEnd, and this lets ``mneia sync`` import its transcript once it has gone quiet.
        try:
            _spool("start", client, payload, env)
        except OSError as error:
            _log(env, f"{client}: cannot spool the session's start: {error}")
    _sync_in_background(env, payload.get("session_id"))


def output(client: str, text: str) -> dict[str, Any]:
    """What SessionStart prints: the same object for the three clients (each reads
    ``hookSpecificOutput.additionalContext``; Claude Code and Codex require ``hookEventName``)."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def _deadline(env: Mapping[str, str]) -> float:
    try:
        given = float(env.get(DEADLINE_SETTING) or DEADLINE)
    except ValueError:
        return DEADLINE
    return given if given > 0 else DEADLINE


def _within(deadline: float, seconds: float, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``work()``'s answer if it comes before ``deadline`` (monotonic, ``seconds`` after the process's
    start); else ``UNREACHABLE``."""
    import threading

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["answer"] = work()
        except BaseException as error:
            box["error"] = error

    worker = threading.Thread(target=run, name="mneia-resume", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if "error" in box:
        raise box["error"]
    if "answer" not in box:  # abandoned: a daemon thread does not hold the process at exit
        said = f"no answer within {seconds:g} s of the hook's start"
        raise remote.RemoteError(remote.UNREACHABLE, said, said)
    answer: dict[str, Any] = box["answer"]
    return answer


def fetch(
    settings: remote.Settings,
    payload: Mapping[str, Any],
    source: str,
    deadline: float,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """What a resume is made of (see ``compose``), asked of the server before ``deadline``."""

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise remote.RemoteError(remote.UNREACHABLE, "no answer in time", "no answer in time")
        return remaining

    api = settings.remote()
    project, name = remote.project_id(api, settings.project, timeout=left())
    task = None
    session = payload.get("session_id")
    if source == "resume" and isinstance(session, str) and session:
        task = _session_task(api, project, session, left, env)
    variables = {"input": {"projectId": project, "task": task or UNKNOWN_TASK, "tokenBudget": TOKEN_BUDGET}}
    resumed = api.run(RESUME, variables, timeout=left())["resume"]
    piece = resumed["slice"]
    entries = piece.get("entries") or []
    return {
        "project": name,
        "url": settings.url,
        "fetched_at": now(),
        "task": task or UNKNOWN_TASK,
        "task_known": task is not None,
        "handoff": (resumed.get("handoff") or {}).get("rendered"),
        "slice": piece.get("rendered") or "",
        "guaranteed": [e["item"]["rendered"] for e in entries if e.get("reason") == "GUARANTEED"],
        "scores": {e["item"]["rendered"]: [e.get("reason"), e.get("score") or 0.0] for e in entries},
    }


def _session_task(
    api: remote.Remote, project: str, session: str, left: Callable[[], float], env: Mapping[str, str]
) -> str | None:
    """The task Mneia recorded for the client's session (the newest with one), if any."""
    try:
        page = api.run(SESSIONS, {"project": project, "externalId": session}, timeout=left())["sessions"]
    except remote.RemoteError as error:
        if error.code == remote.UNREACHABLE:
            raise
        # The sessions query may not be served yet (an older server): the task stays unknown.
        _log(env, f"sessions(externalId) unanswered, task unknown: {error}")
        return None
    nodes = [n for n in (page or {}).get("nodes") or [] if isinstance(n, dict) and n.get("task")]
    nodes.sort(key=lambda n: str(n.get("startedAt") or ""), reverse=True)
    return str(nodes[0]["task"]) if nodes else None


def _why(url: str, error: remote.RemoteError) -> str:
    if error.code == remote.UNREACHABLE:
        return f"Mneia at {url} did not answer ({error.reason or error.message})"
    return f"Mneia at {url} refused the request ({error.code}: {error.message})"


def _fallback(url: str, project: str | None, why: str, compact: bool, env: Mapping[str, str]) -> str:
    cached = place.read_resume(url, project, env)
    if cached is None:
        return (
            f"No Mneia resume is available for this session: {why}, and there is no cached resume "
            "for this project on this machine."
        )
    said = (
        f"This is the cached Mneia resume from {shown(str(cached.get('fetched_at') or '?'))}, because {why}."
    )
    parts = cached.get("parts")
    if isinstance(parts, dict):
        try:
            return compose(parts, compact=compact, preface=[said])
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # a cache from another version: its text as it was
    # Without its parts, the text as it was, cut from its end if need be.
    return fit([said], [(line, SCORED, -n) for n, line in enumerate(str(cached["text"]).splitlines())])


# --- composing the text ----------------------------------------------------------------------------
# Each line carries a rank: None is kept whatever the length; the others go, highest rank first
# (within a rank, lowest key first), until the text fits. Headings left with nothing under them go too.

FILLED, SCORED, RULED_OUT, LISTED, STEPS = 5, 4, 3, 2, 1
HANDOFF_LISTS = ("## Asserted in this session", "## Ruled out", "## Awaiting a human")
HANDOFF_STEPS = ("## Next steps", "## Open questions")


def compose(parts: Mapping[str, Any], *, compact: bool, preface: list[str] | None = None) -> str:
    """The resume as additionalContext (see the module's docstring), at most ``LIMIT`` characters
    unless the guaranteed constraints alone are longer."""
    guaranteed = [str(line) for line in parts["guaranteed"]]
    scores: dict[str, Any] = parts["scores"]
    head = [*(preface or []), _intro(parts, compact)]
    lines: list[tuple[str, int | None, float]] = []
    if compact and guaranteed:
        lines.append((CONSTRAINTS_FIRST, None, 0))
        lines += [(line, None, 0) for line in guaranteed]
    handoff = parts.get("handoff")
    if handoff:
        section = ""
        for position, line in enumerate(str(handoff).splitlines()):
            if line.startswith("## "):
                section, rank = line, None
            elif section.startswith(HANDOFF_LISTS):
                rank = LISTED
            elif section.startswith(HANDOFF_STEPS):
                rank = STEPS
            else:
                rank = None
            lines.append((line, rank, -position))
    else:
        lines.append((NO_HANDOFF, None, 0))
    lines.append((f"{FOR_TASK} {' '.join(str(parts['task']).split())}", None, 0))
    section = ""
    kept = set(guaranteed)
    sliced: list[tuple[str, int | None, float]] = []
    for position, line in enumerate(str(parts["slice"]).splitlines()):
        if line.startswith("## "):
            section = line
            sliced.append((line, None, 0))
        elif line in kept:
            if not compact:  # else shown first already
                sliced.append((line, None, 0))
        elif section.startswith("## Ruled out"):
            sliced.append((line, RULED_OUT, -position))
        elif line in scores:
            reason, score = scores[line]
            sliced.append((line, FILLED if reason == "FILL" else SCORED, float(score)))
        elif line.strip():
            sliced.append((line, SCORED, 0.0))
    sliced = [
        line
        for n, line in enumerate(sliced)
        if not line[0].startswith("## ") or (n + 1 < len(sliced) and not sliced[n + 1][0].startswith("## "))
    ]
    if sliced:
        lines += sliced
    elif compact and guaranteed:
        lines.append((ONLY_CONSTRAINTS, None, 0))
    else:
        lines.append((NOTHING, None, 0))
    return fit(head, lines)


def fit(head: list[str], ranked: list[tuple[str, int | None, float]]) -> str:
    """``head`` and the ranked lines joined, the lowest-valued lines left out until ``LIMIT`` holds."""
    texts: list[str | None] = [line for line, _, _ in ranked]
    total = sum(len(line) + 1 for line in head) + sum(len(line) + 1 for line, _, _ in ranked)
    note = len(MORE.format(count=len(ranked))) + 1
    cut = 0
    if total > LIMIT:
        order = sorted(
            (n for n, (_, rank, _) in enumerate(ranked) if rank is not None),
            key=lambda n: (-(ranked[n][1] or 0), ranked[n][2]),
        )
        for n in order:
            if total + note <= LIMIT:
                break
            total -= len(ranked[n][0]) + 1
            texts[n] = None
            cut += 1
    body = _without_empty_headings(texts)
    if cut:
        body.append(MORE.format(count=cut))
    return "\n".join([*head, *body])


def _without_empty_headings(texts: list[str | None]) -> list[str]:
    """The lines kept, less the ``## `` headings all of whose lines were left out."""
    kept: list[str] = []
    for n, line in enumerate(texts):
        if line is None:
            continue
        if line.startswith("## "):
            following = texts[n + 1 :]
            under = []
            for other in following:
                if other is not None and (other.startswith("## ") or other.startswith("# ")):
                    break
                under.append(other)
            if under and all(other is None for other in under):
                continue
        kept.append(line)
    return kept


def _intro(parts: Mapping[str, Any], compact: bool) -> str:
    said = (
        f"Mneia, this project's shared memory, holds what follows for project {parts['project']} "
        f"(read from {parts['url']} at {shown(str(parts['fetched_at']))}). Each item line opens with "
        "its authority: human-confirmed items were confirmed by a person, agent-asserted ones are "
        "unconfirmed, and load-bearing constraints hold whatever the task."
    )
    if compact:
        said += " The conversation was just compacted; the load-bearing constraints come first."
    if not parts.get("task_known"):
        said += (
            " The session's task is not known at its start, so the memory below is selected for "
            f'"{UNKNOWN_TASK}".'
        )
    return said


# --- in the background, and when things go wrong ---------------------------------------------------


def _worth_syncing(env: Mapping[str, str], session_id: object) -> bool:
    """Whether the spool holds more than this session's own start: an end, a draft, or another
    session's start (which may have crashed)."""
    for path in spool.pending(env):
        try:
            entry = spool.read(path)
        except (ValueError, OSError):
            continue
        if entry["kind"] != "start" or entry["payload"].get("session_id") != session_id:
            return True
    return False


def _sync_in_background(env: Mapping[str, str], session_id: object = None) -> None:
    """Start ``mneia sync`` detached when the spool holds something to send and no sync holds its
    lock."""
    if not _worth_syncing(env, session_id) or spool.busy(env):
        return
    import subprocess

    log = place.log_path("sync", env)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mneia.launch", "sync"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env=None if env is os.environ else dict(env),
        )
    _log(env, f"started mneia sync in the background (pid {process.pid}), output in {log}")


def _log(env: Mapping[str, str], message: str) -> None:
    try:
        with open(place.log_path("hook", env), "a", encoding="utf-8") as out:
            out.write(f"{now()} [{os.getpid()}] {message}\n")
    except OSError:
        pass


def _failed(env: Mapping[str, str], argv: list[str], error: BaseException) -> None:
    try:
        import traceback

        trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        _log(env, f"mneia hook {' '.join(argv)} failed:\n{trace.rstrip()}")
    except BaseException:  # nothing may escape, not even a failure to log
        pass
