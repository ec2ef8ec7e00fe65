"""``mneia import mneia FILE``: an export (``capture.export``) restored into one project, ids remapped.

Items go through ``importItems`` keyed ``mneia:<original id>``, so importing
the same export again writes nothing; what that mutation does not carry is
replayed after the items: load-bearing flags, disputes and their resolutions,
handoffs. docs/export.md lists what is carried and what is not.

What must stay true: the whole file is read and checked before anything is
written (a file that is not an export fails with one line naming it); no
authority is minted: an item a human confirmed is imported as a DOCUMENT
(vouched for, so confirmed) only when the importing token is a human's, and
a resolution or a load-bearing setting is replayed only by a human; an
agent's import confirms nothing and only suggests; what cannot be carried is
counted in the summary, never silently dropped.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mneia.capture.export import END, FORMAT, RECORDS, VERSION, Pager, ordered
from mneia.capture.importer import ImportFailed
from mneia.capture.remote import Remote, RemoteError, Settings, Unconfigured, project_id
from mneia.secrets import redact

KEY = "mneia:"
BATCH = 500
ALIASES = 50
"""Load-bearing settings sent in one operation (one transaction), each an aliased field."""

NOT_CARRIED = (
    "events (the new workspace writes its own, with its own times and actors)",
    "the original actors and their tokens (named in each item's basis instead)",
    "GRANTS lists (such items are imported PRIVATE)",
    "proposals (pending ones are not replayed; a pending load-bearing suggestion becomes the importer's)",
    "lastVerifiedAt, and who confirmed or settled what and when (the importer does, now)",
)

READER = "{ me { id name kind } workspace { id name } }"
IMPORT = """mutation($i: ImportInput!) { importItems(input: $i) {
  written unchanged session { id endedAt }
  writes { key action note item { id } proposal { id } } } }"""
CHECKPOINT = "mutation($i: CheckpointInput!) { checkpoint(input: $i) { id session { id endedAt } } }"
START = "mutation($i: StartSessionInput!) { startSession(input: $i) { id endedAt } }"
END_SESSION = "mutation($id: ID!) { endSession(id: $id) { id endedAt } }"
DISPUTE = """mutation($id: ID!, $c: ID!, $r: String!) {
  disputeItem(id: $id, contestedId: $c, reason: $r) { id status } }"""
RESOLVE = """mutation($id: ID!, $k: ID!, $n: String) {
  resolveDispute(id: $id, keepItemId: $k, note: $n) { id status } }"""
TARGET_ITEMS = """query($p: ID!, $first: Int!, $after: String) {
  items(projectId: $p, first: $first, after: $after) {
  nodes { id kind statement status loadBearing provenance { basis } }
  pageInfo { hasNextPage endCursor } } }"""
TARGET_DISPUTES = "query($p: ID!) { disputes(projectId: $p) { id status item { id } contested { id } } }"
TARGET_HANDOFFS = """query($p: ID!, $first: Int!, $after: String) {
  handoffs(projectId: $p, first: $first, after: $after) {
  nodes { id idempotencyKey createdBy { id } } pageInfo { hasNextPage endCursor } } }"""

NEEDED = {
    "project": ("id", "name"),
    "session": ("id", "project", "startedAt"),
    "item": ("id", "project", "kind", "statement", "status", "scope", "assertedAt", "provenance"),
    "proposal": ("id", "project", "kind", "status"),
    "dispute": ("id", "project", "status", "item", "contested"),
    "handoff": ("id", "project", "summary", "session"),
}


@dataclass
class Export:
    """One project's records of an export file, read whole and checked."""

    path: Path
    header: dict[str, Any]
    project: dict[str, Any]
    sessions: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)
    disputes: list[dict[str, Any]] = field(default_factory=list)
    handoffs: list[dict[str, Any]] = field(default_factory=list)


def _refused(path: Path, why: str) -> ImportFailed:
    return ImportFailed(f"{path}: not a Mneia export: {why}; nothing was imported")


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with path.open(encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except ValueError:
                    raise _refused(path, f"line {number} is not JSON") from None
                if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                    raise _refused(path, f"line {number} is not a record (an object with a type)")
                yield number, record
    except (OSError, UnicodeDecodeError) as error:
        raise ImportFailed(f"{path}: cannot be read ({error}); nothing was imported") from None


def read(path: Path) -> list[Export]:
    """Every project of the export file, checked whole; ImportFailed (one line) when it is not one."""
    if not path.is_file():
        raise ImportFailed(f"{path}: no such file", status=2)
    lines = _lines(path)
    first = next(lines, None)
    if first is None or first[1]["type"] != FORMAT:
        raise _refused(path, "its first line is not a mneia-export header")
    header = first[1]
    if header.get("version") != VERSION:
        raise ImportFailed(
            f"{path}: a Mneia export of version {header.get('version')!r}; this mneia reads version "
            f"{VERSION}; nothing was imported"
        )
    if not isinstance(header.get("workspace"), dict) or not isinstance(header.get("projects"), list):
        raise _refused(path, "its header names no workspace or projects")
    projects: dict[str, Export] = {}
    counts: Counter[str] = Counter()
    ended: dict[str, Any] | None = None
    for number, record in lines:
        kind = record.pop("type")
        if ended is not None:
            raise _refused(path, f"line {number} follows the end record")
        if kind == END:
            ended = record
            continue
        missing = [name for name in NEEDED.get(kind, ()) if record.get(name) is None]
        if kind not in NEEDED or missing:
            what = f"lacks {', '.join(missing)}" if missing else f"has an unknown type {kind!r}"
            raise _refused(path, f"line {number} {what}")
        counts[kind] += 1
        if kind == "project":
            projects[record["id"]] = Export(path, header, record)
            continue
        owner = projects.get(record["project"])
        if owner is None:
            raise _refused(path, f"line {number} names a project no project record came before")
        getattr(owner, f"{kind}s").append(record)
    if ended is None:
        raise _refused(path, "it has no end record (cut short?)")
    if {kind: counts[kind] for kind in RECORDS} != {
        kind: ended.get("records", {}).get(kind) for kind in RECORDS
    }:
        raise _refused(path, "its end record counts other records than it holds (cut short or edited?)")
    return list(projects.values())


def chosen(path: Path, exports: list[Export], target_name: str) -> Export:
    """The export's one project; of several, the one named as the target project is."""
    if not exports:
        raise ImportFailed(f"{path}: the export holds no project; nothing was imported")
    if len(exports) == 1:
        return exports[0]
    named = [e for e in exports if e.project["name"] == target_name]
    if len(named) == 1:
        return named[0]
    names = ", ".join(e.project["name"] for e in exports) or "none"
    raise ImportFailed(
        f"{path}: holds the projects {names}: import restores one, the one named as the target "
        f"project ({target_name}); nothing was imported"
    )


@dataclass
class Planned:
    """One exported item as ``importItems`` will be given it."""

    original: dict[str, Any]
    origin: str
    given: dict[str, Any]
    session: str | None
    needs: str | None
    """The original id of the item it replaces, which must be imported first."""


def suffix(workspace: str, item: dict[str, Any]) -> str:
    """What the basis says of the provenance the new workspace cannot hold."""
    asserted = item["provenance"].get("assertedBy") or {}
    said = (
        f"exported from {workspace}: asserted by {asserted.get('name')} ({asserted.get('kind')}) "
        f"at {item['provenance'].get('assertedAt') or item['assertedAt']}"
    )
    confirmation = item.get("confirmation")
    if confirmation:
        said += f", confirmed by {confirmation['by']['name']} at {confirmation['at']}"
    return f"({said})"


def retirement(item: dict[str, Any]) -> str:
    if item.get("statusReason"):
        return str(item["statusReason"])
    for event in reversed(item.get("events") or []):
        if event.get("toStatus") == "RETIRED" and event.get("reason"):
            return str(event["reason"])
    return "retired (exported status)"


class Restore:
    """One import of one exported project into the target project, with what it did."""

    def __init__(
        self, remote: Remote, export: Export, target: tuple[str, str], me: dict[str, Any], say: TextIO
    ) -> None:
        self.remote = remote
        self.export = export
        self.target_id, self.target_name = target
        self.me = me
        self.human = me["kind"] == "HUMAN"
        self.say = say
        self.workspace = str(export.header["workspace"].get("name"))
        self.keys: dict[str, str] = {}  # original item id -> its item here
        self.sessions: dict[str, dict[str, Any]] = {}  # original session id -> its session here
        self.count: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()
        self.notes: list[str] = []
        self.existing_handoffs: set[str] = set()
        self.written: set[str] = set()  # original ids of the items this run wrote
        self.state: dict[str, dict[str, Any]] = {}  # the target's items, read back after the import

    # --- planning ----------------------------------------------------------------------------------

    def plan(self) -> list[Planned]:
        """Every item's import, each after the one it replaces; ImportFailed for a chain that loops."""
        items = ordered(self.export.items)
        position = {item["id"]: n for n, item in enumerate(items)}
        for item in items:
            if position.get(item.get("supersedesId") or "", -1) > position[item["id"]]:
                raise _refused(self.export.path, f"item {item['id']} is in a supersession chain that loops")
        exported = {item["id"] for item in items}
        sessions = {session["id"] for session in self.export.sessions}
        replaced = {item["supersedesId"] for item in items if item.get("supersedesId") in exported}
        # Sides of a dispute are imported before it, and the dispute's replay gives them its status.
        open_sides = {d["item"]["id"] for d in self.export.disputes if d["status"] == "OPEN"}
        dropped = {
            side["id"]
            for d in self.export.disputes
            if d["status"] == "RESOLVED" and d.get("keptItem")
            for side in (d["item"], d["contested"])
            if side["id"] != d["keptItem"]["id"]
        }
        planned = []
        for item in items:
            status, provenance = item["status"], item["provenance"]
            retired: str | None = None
            if status == "SUPERSEDED" and item["id"] not in replaced:
                retired = "superseded (exported status; its replacement is not in the export)"
                self.count["supersededUnreplaced"] += 1
            elif status == "RETIRED" and item["id"] not in dropped:
                retired = retirement(item)
            elif status == "DISPUTED" and item["id"] not in open_sides:
                retired = "disputed (exported status; its dispute is not in the export)"
                self.count["disputedUnpaired"] += 1
            lasting = status in ("ACTIVE", "DISPUTED") and retired is None
            suggested = bool(item.get("loadBearingSuggested")) or (
                not self.human and bool(item.get("loadBearing"))
            )
            confirmed = item.get("confirmation") is not None
            scope = item["scope"]
            if scope == "GRANTS":
                scope = "PRIVATE"
                self.count["narrowed"] += 1
            basis = provenance.get("basis")
            note = suffix(self.workspace, item)
            needs = item.get("supersedesId") if item.get("supersedesId") in exported else None
            given = {
                "key": KEY + item["id"],
                "kind": item["kind"],
                "statement": item["statement"],
                "details": item.get("details"),
                "basis": f"{basis} {note}" if basis else note,
                "confidence": item.get("confidence"),
                "scope": scope,
                "validFrom": item.get("validFrom"),
                "validTo": item.get("validTo"),
                "decayAfter": item.get("decayAfter"),
                "saidAt": provenance.get("saidAt") or item["assertedAt"],
                "suggestLoadBearing": suggested and lasting,
                "supersedesKey": KEY + needs if needs else None,
                "supersessionReason": item.get("supersessionReason") if needs else None,
                "retiredReason": retired,
                "redacted": provenance.get("redacted") or None,
            }
            session = (provenance.get("session") or {}).get("id")
            planned.append(
                Planned(
                    original=item,
                    origin="DOCUMENT" if self.human and confirmed else "TRANSCRIPT",
                    given={name: value for name, value in given.items() if value is not None},
                    session=session if session in sessions else None,
                    needs=needs,
                )
            )
            if confirmed:
                self.count["confirmedInExport"] += 1
        return planned

    @staticmethod
    def batches(planned: list[Planned]) -> list[list[Planned]]:
        """Runs of one session and one origin, at most ``BATCH`` each, every item after the item it
        replaces (in an earlier batch or earlier in its own), as few runs as that order allows."""
        remaining = list(planned)
        done: set[str] = set()
        runs: list[list[Planned]] = []
        while remaining:
            group = (remaining[0].session, remaining[0].origin)
            run: list[Planned] = []
            for one in remaining:
                if len(run) == BATCH:
                    break
                if (one.session, one.origin) == group and (one.needs is None or one.needs in done):
                    run.append(one)
                    done.add(one.original["id"])
            taken = {id(one) for one in run}
            remaining = [one for one in remaining if id(one) not in taken]
            runs.append(run)
        return runs

    # --- writing -----------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        planned = self.plan()
        runs = self.batches(planned)
        self.existing_handoffs = self._existing_handoffs()
        by_session = {s["id"]: s for s in self.export.sessions}
        handoffs: dict[str, list[dict[str, Any]]] = {}
        for handoff in self.export.handoffs:
            handoffs.setdefault(handoff["session"]["id"], []).append(handoff)
        last = {run[0].session: index for index, run in enumerate(runs) if run[0].session is not None}
        sent = 0
        for index, run in enumerate(runs):
            self._import(run, by_session.get(run[0].session or ""))
            sent += len(run)
            if len(planned) > BATCH:
                self.say.write(f"mneia: {self.export.path}: {sent}/{len(planned)} items sent\n")
            original = run[0].session
            if original is not None and last[original] == index:
                self._finish(by_session[original], handoffs.pop(original, []))
        for original, left in handoffs.items():  # sessions that hold no item the exporter saw
            self._finish(by_session.get(original), left, start=True)
        self._map_back(planned)
        self._load_bearing(planned)
        self._disputes()
        return self.summary()

    def _import(self, run: list[Planned], session: dict[str, Any] | None) -> None:
        value: dict[str, Any] = {
            "projectId": self.target_id,
            "source": f"mneia export of {self.workspace}/{self.export.project['name']}"[:500],
            "origin": run[0].origin,
            "items": [one.given for one in run],
        }
        if session is not None:
            client = session.get("client") or {}
            value["session"] = {
                "client": {"tool": client.get("tool"), "version": client.get("version")},
                "externalId": session.get("externalId"),
                "deepLink": session.get("deepLink"),
                "task": session.get("task"),
                "startedAt": session.get("transcriptStartedAt") or session.get("startedAt"),
                "endedAt": session.get("transcriptEndedAt") or session.get("endedAt"),
            }
        result = self.remote.run(IMPORT, {"i": value})["importItems"]
        if session is not None and result.get("session"):
            self.sessions[session["id"]] = result["session"]
        for write in result["writes"]:
            action = write["action"]
            self.actions[action] += 1
            original = write["key"][len(KEY) :]
            if write.get("item") and action != "SKIPPED":
                self.keys[original] = write["item"]["id"]
                if action != "UNCHANGED":
                    self.written.add(original)
            if action in ("PROPOSED", "SKIPPED"):
                self.notes.append(
                    f"item {original}: {action.lower()}: {write.get('note') or 'waits for a human'}"
                )
        if run[0].origin == "DOCUMENT":
            self.count["confirmed"] += sum(1 for w in result["writes"] if w["action"] != "UNCHANGED")

    def _existing_handoffs(self) -> set[str]:
        pager = Pager(self.remote, TARGET_HANDOFFS, "handoffs", 100)
        return {
            str(h["idempotencyKey"])
            for h in pager.nodes({"p": self.target_id})
            if h.get("idempotencyKey") and h["createdBy"]["id"] == self.me["id"]
        }

    def _finish(
        self, session: dict[str, Any] | None, handoffs: list[dict[str, Any]], start: bool = False
    ) -> None:
        """After a session's items: its handoffs checkpointed in its session here, or the session
        ended as the export says it was."""
        pending = [h for h in handoffs if KEY + h["id"] not in self.existing_handoffs]
        self.count["handoffsAlreadyThere"] += len(handoffs) - len(pending)
        if session is None:
            self.count["handoffsNotReplayed"] += len(pending)
            return
        here = self.sessions.get(session["id"])
        if here is None and start and pending:
            client = session.get("client") or {}
            here = self.remote.run(
                START,
                {
                    "i": {
                        "projectId": self.target_id,
                        "task": session.get("task"),
                        "client": {"tool": client.get("tool"), "version": client.get("version")},
                        "externalId": session.get("externalId"),
                        "deepLink": session.get("deepLink"),
                    }
                },
            )["startSession"]
            self.count["sessionsStarted"] += 1
        if here is None:
            if pending:
                self.count["handoffsNotReplayed"] += len(pending)
                self.notes.append(
                    f"session {session['id']}: its session here is unknown; handoff not replayed"
                )
            return
        for handoff in pending:
            given = {
                "sessionId": here["id"],
                "summary": handoff["summary"],
                "nextSteps": handoff.get("nextSteps") or [],
                "openQuestions": handoff.get("openQuestions") or [],
                "draft": bool(handoff.get("draft")),
                "idempotencyKey": KEY + handoff["id"],
            }
            try:
                done = self.remote.run(CHECKPOINT, {"i": given})["checkpoint"]
            except RemoteError as error:
                if error.code != "CONFLICT":
                    raise
                self.count["handoffsNotReplayed"] += 1
                self.notes.append(f"handoff {handoff['id']}: not replayed: {error.message}")
                continue
            here.update(done["session"])
            self.count["handoffsReplayed"] += 1
        if not handoffs and session.get("endedAt") and not here.get("endedAt"):
            here.update(self.remote.run(END_SESSION, {"id": here["id"]})["endSession"])
            self.count["sessionsEnded"] += 1

    def _map_back(self, planned: list[Planned]) -> None:
        """The items here of keys no write named (a key whose proposal still waits, say), found by
        their kind, statement and basis, which carries the export's note; the text as stored,
        redacted as ``Remote`` redacts what it sends. It also reads every item's state here."""
        wanted: dict[tuple[str, str, str], list[str]] = {}
        for one in planned:
            if one.original["id"] not in self.keys:
                given = one.given
                key = (given["kind"], redact(given["statement"]).text, redact(given["basis"]).text)
                wanted.setdefault(key, []).append(one.original["id"])
        found: dict[tuple[str, str, str], list[str]] = {}
        for node in Pager(self.remote, TARGET_ITEMS, "items").nodes({"p": self.target_id}):
            self.state[node["id"]] = node
            key = (node["kind"], node["statement"], node["provenance"].get("basis") or "")
            if key in wanted:
                found.setdefault(key, []).append(node["id"])
        for key, originals in wanted.items():
            here = found.get(key, [])
            if len(originals) == 1 and len(here) == 1:
                self.keys[originals[0]] = here[0]
            else:
                self.count["unmapped"] += len(originals)

    def _load_bearing(self, planned: list[Planned]) -> None:
        if not self.human:
            self.count["loadBearingSuggested"] = sum(
                1
                for one in planned
                if one.original.get("loadBearing")
                and one.given.get("suggestLoadBearing")
                and one.original["id"] in self.written
            )
            return
        due = [
            self.keys[item["id"]]
            for item in self.export.items
            if item.get("loadBearing")
            and item["id"] in self.keys
            and not self.state.get(self.keys[item["id"]], {}).get("loadBearing")
        ]
        for start in range(0, len(due), ALIASES):
            chunk = due[start : start + ALIASES]
            names = ", ".join(f"$i{n}: ID!" for n in range(len(chunk)))
            fields = " ".join(
                f"m{n}: setLoadBearing(id: $i{n}, loadBearing: true) {{ id }}" for n in range(len(chunk))
            )
            self.remote.run(
                f"mutation({names}) {{ {fields} }}", {f"i{n}": id_ for n, id_ in enumerate(chunk)}
            )
        self.count["loadBearingSet"] = len(due)

    def _disputes(self) -> None:
        """Each exported dispute between two items imported here, opened unless it is; a resolved one
        resolved too when the importer is a human. A dispute here on the same pair is the replay."""
        here: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for found in self.remote.run(TARGET_DISPUTES, {"p": self.target_id})["disputes"]:
            here.setdefault((found["item"]["id"], found["contested"]["id"]), []).append(found)
        for dispute in self.export.disputes:
            item, contested = self.keys.get(dispute["item"]["id"]), self.keys.get(dispute["contested"]["id"])
            if item is None or contested is None:
                self.count["disputesNotReplayed"] += 1
                self.notes.append(f"dispute {dispute['id']}: one of its items was not imported")
                continue
            existing = here.get((item, contested), [])
            resolve = dispute["status"] == "RESOLVED" and self.human
            if any(d["status"] == "RESOLVED" for d in existing) or (
                not resolve and any(d["status"] == "OPEN" for d in existing)
            ):
                self.count["disputesAlreadyThere"] += 1
                continue
            opened = next((d for d in existing if d["status"] == "OPEN"), None)
            try:
                if opened is None:
                    reason = dispute.get("reason") or "disputed (exported)"
                    opened = self.remote.run(DISPUTE, {"id": item, "c": contested, "r": reason})[
                        "disputeItem"
                    ]
                    self.count["disputesReplayed"] += 1
                if resolve:
                    kept = self.keys.get((dispute.get("keptItem") or {}).get("id", ""))
                    if kept is None:
                        self.notes.append(
                            f"dispute {dispute['id']}: its kept item was not imported; left open"
                        )
                        continue
                    self.remote.run(
                        RESOLVE, {"id": opened["id"], "k": kept, "n": dispute.get("resolutionNote")}
                    )
                    self.count["disputesResolved"] += 1
            except RemoteError as error:
                if error.code not in ("CONFLICT", "FORBIDDEN"):
                    raise
                self.count["disputesNotReplayed"] += 1
                self.notes.append(f"dispute {dispute['id']}: not replayed: {error.message}")

    # --- reporting ---------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        c = self.count
        written = sum(n for action, n in self.actions.items() if action not in ("UNCHANGED", "SKIPPED"))
        return {
            "file": str(self.export.path),
            "project": {"id": self.target_id, "name": self.target_name},
            "from": {"workspace": self.workspace, "project": self.export.project["name"]},
            "importer": {"name": self.me["name"], "kind": self.me["kind"]},
            "items": {"written": written, "actions": dict(self.actions)},
            "confirmed": c["confirmed"],
            "confirmedInExport": c["confirmedInExport"],
            "loadBearing": {"set": c["loadBearingSet"], "suggested": c["loadBearingSuggested"]},
            "disputes": {
                "replayed": c["disputesReplayed"],
                "resolved": c["disputesResolved"],
                "alreadyThere": c["disputesAlreadyThere"],
                "notReplayed": c["disputesNotReplayed"],
            },
            "handoffs": {
                "replayed": c["handoffsReplayed"],
                "alreadyThere": c["handoffsAlreadyThere"],
                "notReplayed": c["handoffsNotReplayed"],
            },
            "sessions": {
                "used": len(self.sessions),
                "started": c["sessionsStarted"],
                "ended": c["sessionsEnded"],
            },
            "narrowed": c["narrowed"],
            "supersededUnreplaced": c["supersededUnreplaced"],
            "disputedUnpaired": c["disputedUnpaired"],
            "unmapped": c["unmapped"],
            # A pending load-bearing suggestion is carried on its item (loadBearingSuggested).
            "pendingProposals": sum(
                1 for p in self.export.proposals if p["status"] == "PENDING" and p["kind"] != "LOAD_BEARING"
            ),
            "notCarried": list(NOT_CARRIED),
            "notes": self.notes,
        }


def lines(summary: dict[str, Any]) -> list[str]:
    """The summary for a person: what was written, what was replayed, what was not carried."""
    items, disputes, handoffs = summary["items"], summary["disputes"], summary["handoffs"]
    who = summary["importer"]
    actions = ", ".join(f"{n} {action.lower()}" for action, n in sorted(items["actions"].items()))
    out = [
        f"{summary['file']}: {summary['from']['workspace']}/{summary['from']['project']} into "
        f"{summary['project']['name']} as {who['name']} ({who['kind'].lower()}): "
        f"{items['written']} items written ({actions or 'none'})",
        f"  disputes: {disputes['replayed']} replayed, {disputes['resolved']} resolved, "
        f"{disputes['alreadyThere']} already here, {disputes['notReplayed']} not replayed; "
        f"handoffs: {handoffs['replayed']} replayed, {handoffs['alreadyThere']} already here, "
        f"{handoffs['notReplayed']} not replayed",
    ]
    if who["kind"] == "HUMAN":
        out.append(
            f"  {summary['confirmed']} confirmed by you as restored; "
            f"load-bearing: {summary['loadBearing']['set']} set"
        )
    else:
        out.append(
            f"  an agent's import confirms nothing: the {summary['confirmedInExport']} items a human "
            f"confirmed in the export are agent-asserted here; load-bearing: "
            f"{summary['loadBearing']['suggested']} suggested, for a human to settle"
        )
    lossy = [
        (summary["narrowed"], "GRANTS items narrowed to PRIVATE"),
        (summary["supersededUnreplaced"], "superseded items whose replacement is not in the export, retired"),
        (summary["disputedUnpaired"], "disputed items whose dispute is not in the export, retired"),
        (summary["unmapped"], "items imported before that could not be found again"),
        (summary["pendingProposals"], "pending proposals not replayed"),
    ]
    out += [f"  {n} {what}" for n, what in lossy if n]
    out.append("  not carried: " + "; ".join(summary["notCarried"]))
    out += [f"  note: {note}" for note in summary["notes"]]
    return out


def run_import(path: Path, *, as_json: bool) -> int:
    """``mneia import mneia FILE``: restore an export into MNEIA_PROJECT (or the token's only project)."""
    try:
        settings = Settings.from_env()
    except Unconfigured as error:
        raise ImportFailed(str(error), status=2) from None
    exports = read(path)
    remote = settings.remote()
    try:
        target = project_id(remote, settings.project)
        export = chosen(path, exports, target[1])
        me = remote.run(READER)["me"]
        summary = Restore(remote, export, target, me, sys.stderr).run()
    except RemoteError as error:
        raise ImportFailed(f"importing {path} into {settings.url} failed: {error.message}") from None
    if as_json:
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print("\n".join(lines(summary)), flush=True)
    return 0
