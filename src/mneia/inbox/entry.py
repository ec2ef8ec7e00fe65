"""What each tab lists, in which order, from the data its GraphQL operation returned. Pure.

Nothing here decides who may see or do anything (the schema did); it orders,
compares and counts. Every entry keeps the item's ``rendered`` line, which
the page shows as it is: the authority, who and when, exactly as a slice or
a handoff shows it (R4).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from mneia.rehydration.render import SEPARATOR, piece
from mneia.rehydration.tokens import ENCODING, count

TABS = ("proposals", "disputes", "unconfirmed", "stale", "redactions", "history")
TITLES = {
    "proposals": "Proposals",
    "disputes": "Disputes",
    "unconfirmed": "Unconfirmed",
    "stale": "Stale",
    "redactions": "Redactions due",
    "history": "History",
}
# What a decision is, in an item's log: a person settling something (the rest is assertion).
DECISION_EVENTS = {
    "CONFIRMED": "confirmed",
    "LOAD_BEARING_SET": "made load-bearing",
    "LOAD_BEARING_CLEARED": "made not load-bearing",
    "LOAD_BEARING_DECLINED": "declined load-bearing",
    "VERIFIED": "verified",
}
HISTORY_LIMIT = 200


# What a word may carry that does not change it: sentence punctuation, brackets and quotes.
# Not ``-``, ``/``, ``%``, ``#`` and the like: "-5" is not "5", nor "50%" "50".
PUNCTUATION = ".,;:!?…()[]{}\"'“”‘’«»"
_RUNS = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Piece:
    """One run of a diff: ``same``, ``removed`` or ``added``, as the old statement (``before``) and the
    replacement (``after``) each write it. A ``same`` run may differ between the two in punctuation
    and spacing only; a ``removed`` run is only before, an ``added`` one only after."""

    op: str
    before: str
    after: str


def _word(run: str) -> str:
    """What a run of text is compared by: a word without the punctuation around it (``refunds,`` is
    ``refunds``), any whitespace as one space, and a run of punctuation alone as itself."""
    if run.isspace():
        return " "
    return run.strip(PUNCTUATION) or run


def diff(old: str, new: str) -> list[Piece]:
    """Word by word, what a replacement removes from the old statement and adds to it.

    Words are compared without the punctuation that opens or closes them (``PUNCTUATION``) and
    whitespace without its kind or length, so a comma or full stop added after a word, or a word
    put in brackets or quotes, does not by itself mark it as changed. Each side keeps its own text
    as written: nothing a person reads is dropped.
    """
    before, after = _RUNS.findall(old), _RUNS.findall(new)
    words = difflib.SequenceMatcher(
        None, [_word(r) for r in before], [_word(r) for r in after], autojunk=False
    )
    pieces: list[Piece] = []
    for op, i1, i2, j1, j2 in words.get_opcodes():
        was, now = "".join(before[i1:i2]), "".join(after[j1:j2])
        if op == "equal":
            pieces.append(Piece("same", was, now))
            continue
        if was:
            pieces.append(Piece("removed", was, ""))
        if now:
            pieces.append(Piece("added", "", now))
    return pieces


SUGGESTED_TAG = f"{SEPARATOR}load-bearing suggested]"
SETTLED_TAG = f"{SEPARATOR}load-bearing]"


def slice_cost(rendered: str) -> int:
    """The tokens an item would cost in a slice once made load-bearing: its rendered line as
    rehydration counts it (R11.7), its tag saying ``load-bearing`` instead of ``load-bearing
    suggested`` (the tag opens the line, so the first occurrence is the tag's)."""
    return count(piece(rendered.replace(SUGGESTED_TAG, SETTLED_TAG, 1)))


def proposals(data: dict[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for proposal in data["proposals"]:
        entry = dict(proposal)
        target = proposal["target"]
        if proposal["kind"] == "SUPERSESSION":
            entry["diff"] = diff(target["statement"], proposal["replacementStatement"] or "")
        else:
            entry["tokens"] = slice_cost(target["rendered"])
            entry["encoding"] = ENCODING
            entry["guaranteed"] = target["kind"] == "CONSTRAINT"
        entries.append(entry)
    return entries


def disputes(data: dict[str, Any]) -> list[dict[str, Any]]:
    return list(data["disputes"])


def unconfirmed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Agents' assertions nobody confirmed, in the API's order (``orderBy: SUGGESTED_THEN_CONFIDENCE``:
    load-bearing suggestions first, then by confidence, highest first and none last, then oldest)."""
    return [item for item in items if item["authority"] == "AGENT_ASSERTED"]


def stale(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Active items past their decay, in the API's order (``orderBy: LONGEST_UNCHECKED``)."""
    return [item for item in items if item["stale"]]


def redactions(data: dict[str, Any]) -> list[dict[str, Any]]:
    """What retention will blank within the notice window, soonest first (the API's order), each item
    with when and under which policy (R16). A legal hold keeps an item out of it (R17)."""
    return [
        {**notice["item"], "dueAt": notice["dueAt"], "policy": notice["policy"]}
        for notice in data["redactionsDue"]
    ]


def history(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Decisions people made, newest first: proposals decided, disputes resolved, and from the
    project's log (the API's ``events``) confirmations, load-bearing settlements, verifications
    and retirements."""
    entries: list[dict[str, Any]] = []
    for proposal in data["proposals"]:
        if proposal["status"] == "PENDING" or proposal["decidedAt"] is None:
            continue
        verb = "accepted" if proposal["status"] == "ACCEPTED" else "rejected"
        noun = "replacement" if proposal["kind"] == "SUPERSESSION" else "load-bearing suggestion"
        entries.append(
            {
                "at": proposal["decidedAt"],
                "who": proposal["decidedBy"],
                "what": f"{verb} {proposal['proposedBy']['name']}'s {noun}",
                "note": proposal["decisionNote"],
                "rendered": proposal["target"]["rendered"],
                "detail": proposal["replacementStatement"],
            }
        )
    for dispute in data["disputes"]:
        kept = dispute["keptItem"]["id"] if dispute["keptItem"] else None
        side = dispute["item"] if kept == dispute["item"]["id"] else dispute["contested"]
        entries.append(
            {
                "at": dispute["resolvedAt"],
                "who": dispute["resolvedBy"],
                "what": "resolved a dispute, keeping",
                "note": dispute["resolutionNote"],
                "rendered": side["rendered"],
                "detail": None,
            }
        )
    for event in data["events"]["nodes"]:
        if event["actor"]["kind"] != "HUMAN":
            continue
        what = DECISION_EVENTS.get(event["kind"])
        if what is None and event["kind"] == "STATUS_CHANGED" and event["toStatus"] == "RETIRED":
            what = "retired"
        if what is None:
            continue
        entries.append(
            {
                "at": event["at"],
                "who": event["actor"],
                "what": what,
                "note": event["reason"],
                "rendered": event["item"]["rendered"],
                "detail": None,
            }
        )
    entries.sort(key=lambda entry: entry["at"], reverse=True)
    return entries[:HISTORY_LIMIT]
