"""Sending what an importer read: batched ``importItems`` calls, then the session's checkpoint.

Every string sent is redacted by the remote client (``capture.remote``,
``mneia.secrets.redacted_values``), which also names, in each item's
``redacted``, the kinds of credential removed from it, so that they end up in
the item's provenance; the server redacts again whatever reaches it. Only a
checkpoint's summary is redacted here, before it is cut to its limit, so
that a cut never splits a credential out of the pattern's reach.

Claims go in batches of ``BATCH`` (the server's limit), in the order read:
a claim that supersedes another comes after it, in the same or an earlier
batch. A document imported whole (a rules file) goes in one request, as the
server pairs its edits only within one. Each batch is a transaction: a
failure leaves the batches before it written, and running the import again
writes only the rest (the keys make it idempotent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mneia.capture.record import Capture, Checkpoint, Claim, SessionFacts
from mneia.capture.remote import Remote
from mneia.secrets import redact

BATCH = 500

IMPORT = """mutation($i: ImportInput!) { importItems(input: $i) {
  written unchanged
  session { id externalId }
  writes { key action note item { id } proposal { id } } } }"""

CHECKPOINT = """mutation($i: CheckpointInput!) { checkpoint(input: $i) { id } }"""


@dataclass
class Summary:
    """What one source's import did, for the command's short summary and its ``--json``."""

    source: str
    sessions: dict[str, str | None] = field(default_factory=dict)  # session id -> the client's id
    actions: Counter[str] = field(default_factory=Counter)
    items: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    already_written: int = 0
    handoff: str | None = None

    @property
    def written(self) -> int:
        return sum(n for action, n in self.actions.items() if action not in ("UNCHANGED", "SKIPPED"))

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sessions": [{"id": key, "externalId": value} for key, value in self.sessions.items()],
            "written": self.written,
            "actions": dict(self.actions),
            "items": self.items,
            "notes": self.notes,
            "skipped": dict(self.skipped),
            "alreadyWritten": self.already_written,
            "handoff": self.handoff,
        }

    def line(self) -> str:
        parts = [f"{self.written} written"]
        parts += [
            f"{n} {action.lower()}" for action, n in sorted(self.actions.items()) if action != "ASSERTED"
        ]
        if self.already_written:
            parts.append(f"{self.already_written} already in Mneia")
        if self.skipped:
            parts.append(f"{sum(self.skipped.values())} lines skipped")
        if self.handoff:
            parts.append("checkpointed")
        return f"{self.source}: " + ", ".join(parts)


def _moment(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def item_input(claim: Claim) -> dict[str, Any]:
    """A claim as ``ImportItemInput``. Its text is redacted on the way out, by the remote client
    (``mneia.secrets.redacted_values``), which names the kinds removed in ``redacted``."""
    given: dict[str, Any] = {
        "key": claim.key,
        "kind": claim.kind,
        "statement": claim.statement,
        "details": claim.details,
        "basis": claim.basis,
        "confidence": claim.confidence,
        "scope": claim.scope,
        "validFrom": _moment(claim.valid_from),
        "validTo": _moment(claim.valid_to),
        "saidAt": _moment(claim.said_at),
        "suggestLoadBearing": claim.suggest_load_bearing or None,
        "supersedesKey": claim.supersedes,
        "supersessionReason": claim.reason,
        "retiredReason": claim.retired,
    }
    return {name: value for name, value in given.items() if value is not None}


def session_input(facts: SessionFacts) -> dict[str, Any]:
    client = {"tool": facts.tool, "version": facts.version}
    given = {
        "client": {name: value for name, value in client.items() if value},
        "externalId": facts.external_id,
        "deepLink": facts.deep_link,
        "task": facts.task,
        "startedAt": _moment(facts.started_at),
        "endedAt": _moment(facts.ended_at),
    }
    return {name: value for name, value in given.items() if value is not None}


def _documents(claims: Sequence[Claim]) -> dict[str | None, list[Claim]]:
    """Claims by the document they complete: a rules file's key is ``rules:FILE:DIGEST``."""
    grouped: dict[str | None, list[Claim]] = {}
    for claim in claims:
        document = claim.key.rsplit(":", 1)[0] if claim.key.startswith("rules:") else None
        grouped.setdefault(document, []).append(claim)
    return grouped


def import_capture(
    remote: Remote,
    project_id: str,
    capture: Capture,
    *,
    progress: Callable[[int, int], None] | None = None,
    summary: Summary | None = None,
) -> Summary:
    """Send a capture's claims and its last checkpoint; answer what was written."""
    done = summary or Summary(capture.source)
    done.skipped.update(capture.skipped)
    done.already_written += capture.already_written
    base: dict[str, Any] = {"projectId": project_id, "source": capture.source, "origin": capture.origin.value}
    if capture.session is not None:
        base["session"] = session_input(capture.session)
    requests: list[dict[str, Any]] = []
    for document, claims in _documents(capture.claims).items():
        if document is not None:
            if len(claims) > BATCH:
                raise ValueError(f"{document[len('rules:') :]}: more than {BATCH} rules in one file")
            edited = document[len("rules:") :]
            requests.append(
                {
                    **base,
                    "items": [item_input(claim) for claim in claims],
                    "document": document,
                    "complete": True,
                    "editReason": f"edited in {edited}",
                    "removalReason": f"removed from {edited}",
                }
            )
            continue
        for start in range(0, len(claims), BATCH):
            requests.append({**base, "items": [item_input(claim) for claim in claims[start : start + BATCH]]})
    total, sent = len(capture.claims), 0
    session_id: str | None = None
    for request in requests:
        answer = remote.run(IMPORT, {"i": request})["importItems"]
        sent += len(request["items"])
        if answer["session"]:
            session_id = answer["session"]["id"]
            done.sessions[session_id] = answer["session"]["externalId"]
        for write in answer["writes"]:
            done.actions[write["action"]] += 1
            if write["action"] != "UNCHANGED":
                wrote = write["item"] or write["proposal"] or {}
                done.items.append({"key": write["key"], "action": write["action"], "id": wrote.get("id")})
            if write["note"]:
                done.notes.append(f"{write['key']}: {write['note']}")
        if progress is not None:
            progress(sent, total)
    last = last_checkpoint(capture.checkpoints)
    if last is not None and capture.session is not None:
        done.handoff = checkpoint(remote, project_id, capture, last, session_id)
    return done


def last_checkpoint(checkpoints: Sequence[Checkpoint]) -> Checkpoint | None:
    """The handoff a session leaves: its last checkpoint call, else its last compact summary."""
    calls = [each for each in checkpoints if not each.draft] or list(checkpoints)
    return calls[-1] if calls else None


SESSION = """query($p: ID!, $e: String) { sessions(projectId: $p, externalId: $e, first: 1) {
  nodes { id endedAt } } }"""
START = """mutation($i: StartSessionInput!) { startSession(input: $i) { id } }"""


def checkpoint(
    remote: Remote, project_id: str, capture: Capture, last: Checkpoint, session_id: str | None
) -> str | None:
    """Checkpoint the transcript's session with ``last``, once: its key is the idempotency key, so
    running the import again returns the same handoff."""
    assert capture.session is not None
    if session_id is None:
        found = remote.run(SESSION, {"p": project_id, "e": capture.session.external_id})["sessions"]["nodes"]
        if found and found[0]["endedAt"] is not None:
            return None  # checkpointed (or ended) before: the session's handoff stands
        if found:
            session_id = found[0]["id"]
        else:
            started = session_input(capture.session)
            for only_imports in ("startedAt", "endedAt"):
                started.pop(only_imports, None)
            session_id = remote.run(START, {"i": {"projectId": project_id, **started}})["startSession"]["id"]
    given: dict[str, Any] = {
        "sessionId": session_id,
        "summary": redact(last.summary).text[:4_000],  # redacted before the cut
        "idempotencyKey": last.key[:200],
        "draft": last.draft,
    }
    if last.next_steps:
        given["nextSteps"] = list(last.next_steps)
    if last.open_questions:
        given["openQuestions"] = list(last.open_questions)
    from mneia.capture.remote import RemoteError

    try:
        return str(remote.run(CHECKPOINT, {"i": given})["checkpoint"]["id"])
    except RemoteError as error:
        if error.code == "CONFLICT" and "has ended" in error.message:
            return None  # checkpointed before, under another key: the session's handoff stands
        raise
