"""``mneia export``: a project's memory as its reader may see it, written as JSON Lines.

Everything is read through the GraphQL API with the reader's token, never
with SQL, so row-level security decides what is in the file (R1, R2): an item
the reader cannot see is not in it, nor is a dispute whose two sides the
reader cannot both see. docs/export.md describes the format.

What must stay true: the first line is the header (``mneia-export``, version
``VERSION``) and the last the end record, which counts the records between,
so that ``mneia import mneia`` refuses a file cut short; an item comes after
the item its ``supersedesId`` names; a page the server refuses as too
expensive (its ``maxCost``, or the database's statement timeout) is asked
again smaller, never dropped. Progress and the summary go to stderr: stdout
is the file.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

from mneia.capture.importer import ImportFailed
from mneia.capture.remote import Remote, RemoteError, Settings, Unconfigured, project_id

FORMAT = "mneia-export"
END = "mneia-export-end"
VERSION = 1
RECORDS = ("project", "session", "item", "proposal", "dispute", "handoff")
"""The record types between the header and the end record, in the order a project's are written."""

ACTOR = "{ id name kind }"
READER = "{ me { id name kind } workspace { id name } projects { id name team { id name function } } }"
SESSIONS = f"""query($p: ID!, $first: Int!, $after: String) {{
  sessions(projectId: $p, first: $first, after: $after) {{
    nodes {{ id externalId deepLink task startedAt endedAt transcriptStartedAt transcriptEndedAt
             provenancePartial provenanceMissing client {{ tool version placeholderVersion }} actor {ACTOR} }}
    pageInfo {{ hasNextPage endCursor }} }} }}"""
ITEMS = f"""query($p: ID!, $first: Int!, $after: String) {{
  items(projectId: $p, filter: {{statuses: [ACTIVE, SUPERSEDED, DISPUTED, RETIRED]}},
        first: $first, after: $after) {{
    nodes {{ id kind statement details confidence status authority scope loadBearing loadBearingSuggested
             assertedAt validFrom validTo decayAfter lastVerifiedAt statusReason
             supersedesId supersessionReason hiddenLinks
             provenance {{ assertedBy {ACTOR} actorKind assertedAt basis saidAt redacted partial missing
                           session {{ id }} }}
             confirmation {{ by {ACTOR} at }} }}
    pageInfo {{ hasNextPage endCursor }} }} }}"""
EVENTS = f"""query($p: ID!, $first: Int!, $after: String) {{
  events(projectId: $p, first: $first, after: $after) {{
    nodes {{ id kind at fromStatus toStatus loadBearing confirmed reason actor {ACTOR} item {{ id }} }}
    pageInfo {{ hasNextPage endCursor }} }} }}"""
PROPOSALS = f"""query($p: ID!) {{ proposals(projectId: $p) {{
  id kind status proposedAt decidedAt reason decisionNote replacementStatement
  target {{ id }} result {{ id }} proposedBy {ACTOR} decidedBy {ACTOR} }} }}"""
DISPUTES = f"""query($p: ID!) {{ disputes(projectId: $p) {{
  id status raisedAt resolvedAt reason resolutionNote
  item {{ id }} contested {{ id }} keptItem {{ id }} raisedBy {ACTOR} resolvedBy {ACTOR} }} }}"""
HANDOFFS = f"""query($p: ID!, $first: Int!, $after: String) {{
  handoffs(projectId: $p, first: $first, after: $after) {{
    nodes {{ id summary nextSteps openQuestions draft createdAt createdBy {ACTOR} session {{ id }}
             itemsAsserted {{ id }} rendered }}
    pageInfo {{ hasNextPage endCursor }} }} }}"""

PAGE = 500
"""The largest page the API serves (``first``); a page the server finds too expensive shrinks."""
HANDOFF_PAGE = 100
TOO_COSTLY = re.compile(r"query cost (\d+) exceeds the limit (\d+) \(maxCost\)")
PROGRESS_EVERY = 500


def page_refused(error: RemoteError) -> tuple[int, int] | None:
    """(cost, limit) when the server refused a page for its estimated cost; (0, 0) when the database
    stopped it at its statement timeout; None for any other error."""
    if error.code == "TOO_EXPENSIVE":
        return 0, 0
    found = TOO_COSTLY.search(error.message) if error.code == "BAD_USER_INPUT" else None
    return (int(found[1]), int(found[2])) if found else None


class Pager:
    """Walks one paginated field, asking for pages as large as the server accepts."""

    def __init__(self, remote: Remote, document: str, field: str, size: int = PAGE) -> None:
        self.remote = remote
        self.document = document
        self.field = field
        self.size = size

    def nodes(self, variables: dict[str, Any]) -> Iterator[dict[str, Any]]:
        after: str | None = None
        while True:
            page = self._page({**variables, "after": after})
            yield from page["nodes"]
            if not page["pageInfo"]["hasNextPage"]:
                return
            after = page["pageInfo"]["endCursor"]

    def _page(self, variables: dict[str, Any]) -> dict[str, Any]:
        while True:
            try:
                page: dict[str, Any] = self.remote.run(self.document, {**variables, "first": self.size})[
                    self.field
                ]
                return page
            except RemoteError as error:
                refused = page_refused(error)
                if refused is None or self.size == 1:
                    raise
                cost, limit = refused
                smaller = self.size * limit // cost if cost else self.size // 2
                self.size = max(1, min(self.size - 1, smaller))


def ordered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Oldest first (assertedAt, then id), each item after the item it replaced."""
    by_id = {item["id"]: item for item in items}
    placed: set[str] = set()
    result: list[dict[str, Any]] = []
    for item in sorted(items, key=lambda one: (_instant(one["assertedAt"]), one["id"])):
        chain = []
        cursor: dict[str, Any] | None = item
        while cursor is not None and cursor["id"] not in placed:
            chain.append(cursor)
            placed.add(cursor["id"])
            cursor = by_id.get(cursor.get("supersedesId") or "")
        result.extend(reversed(chain))
    return result


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value)


class Writer:
    """Records to ``out``, one JSON object a line, counted for the end record."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.counts = dict.fromkeys(RECORDS, 0)

    def record(self, kind: str, body: dict[str, Any]) -> None:
        self.out.write(json.dumps({"type": kind, **body}, ensure_ascii=False) + "\n")
        if kind in self.counts:
            self.counts[kind] += 1


def _project(
    remote: Remote, writer: Writer, project: dict[str, Any], pagers: dict[str, Pager], say: TextIO
) -> dict[str, Any]:
    pid = project["id"]
    variables = {"p": pid}
    writer.record("project", project)
    sessions = list(pagers["sessions"].nodes(variables))
    for session in reversed(sessions):  # the API lists them newest first; the file, oldest first
        writer.record("session", {"project": pid, **session})

    items = []
    for item in pagers["items"].nodes(variables):
        items.append(item)
        if len(items) % PROGRESS_EVERY == 0:
            say.write(f"mneia: {project['name']}: read {len(items)} items…\n")
    events: dict[str, list[dict[str, Any]]] = {}
    for event in pagers["events"].nodes(variables):
        target = event.pop("item")["id"]
        events.setdefault(target, []).append(event)
    written = 0
    for item in ordered(items):
        # The API lists events newest first; an item's record holds its log oldest first.
        writer.record("item", {"project": pid, **item, "events": list(reversed(events.get(item["id"], [])))})
        written += 1
        if written % PROGRESS_EVERY == 0:
            say.write(f"mneia: {project['name']}: exported {written} items…\n")

    proposals = remote.run(PROPOSALS, variables)["proposals"]
    for proposal in reversed(proposals):
        writer.record("proposal", {"project": pid, **proposal})
    disputes = remote.run(DISPUTES, variables)["disputes"]
    for dispute in reversed(disputes):
        writer.record("dispute", {"project": pid, **dispute})
    handoffs = list(pagers["handoffs"].nodes(variables))
    for handoff in reversed(handoffs):
        writer.record("handoff", {"project": pid, **handoff})
    return {
        "id": pid,
        "name": project["name"],
        "sessions": len(sessions),
        "items": written,
        "events": sum(len(log) for log in events.values()),
        "proposals": len(proposals),
        "disputes": len(disputes),
        "handoffs": len(handoffs),
    }


def export(
    remote: Remote,
    *,
    project: str | None,
    workspace: bool,
    out: TextIO,
    say: TextIO = sys.stderr,
    setting: str = "--project",
) -> dict[str, Any]:
    """Write the export to ``out``; return its summary. ``RemoteError`` when the server refuses."""
    reader = remote.run(READER)
    if workspace:
        projects = list(reader["projects"])
    else:
        chosen, _ = project_id(remote, project, setting=setting)
        projects = [p for p in reader["projects"] if p["id"] == chosen]
    writer = Writer(out)
    writer.record(
        FORMAT,
        {
            "version": VERSION,
            "exportedAt": datetime.now(UTC).isoformat(),
            "workspace": reader["workspace"],
            "exportedBy": reader["me"],
            "projects": [{"id": p["id"], "name": p["name"]} for p in projects],
        },
    )
    pagers = {
        "sessions": Pager(remote, SESSIONS, "sessions"),
        "items": Pager(remote, ITEMS, "items"),
        "events": Pager(remote, EVENTS, "events"),
        "handoffs": Pager(remote, HANDOFFS, "handoffs", HANDOFF_PAGE),
    }
    summaries = [_project(remote, writer, p, pagers, say) for p in projects]
    writer.record(END, {"records": dict(writer.counts)})
    out.flush()
    return {"workspace": reader["workspace"], "exportedBy": reader["me"], "projects": summaries}


def line(summary: dict[str, Any]) -> str:
    projects = summary["projects"]
    total = {
        key: sum(p[key] for p in projects)
        for key in ("items", "sessions", "events", "proposals", "disputes", "handoffs")
    }
    names = ", ".join(p["name"] for p in projects) or "none"
    who = summary["exportedBy"]
    return (
        f"mneia: exported {len(projects)} project{'' if len(projects) == 1 else 's'} ({names}) of "
        f"{summary['workspace']['name']} as {who['name']} ({who['kind'].lower()}): "
        + ", ".join(f"{n} {key if n != 1 else key[:-1]}" for key, n in total.items())
    )


def run_export(*, project: str | None, workspace: bool, out: TextIO, as_json_summary: bool) -> int:
    """``mneia export``: the file to ``out``, the summary to stderr (one line, or JSON)."""
    if project and workspace:
        raise ImportFailed("give --project or --workspace, not both", status=2)
    try:
        settings = Settings.from_env()
    except Unconfigured as error:
        raise ImportFailed(str(error), status=2) from None
    try:
        summary = export(
            settings.remote(),
            project=project or settings.project,
            workspace=workspace,
            out=out,
            setting="--project" if project else "MNEIA_PROJECT",
        )
    except RemoteError as error:
        raise ImportFailed(f"exporting from {settings.url} failed: {error.message}") from None
    if as_json_summary:
        sys.stderr.write(json.dumps(summary, indent=2) + "\n")
    else:
        sys.stderr.write(line(summary) + "\n")
    return 0
