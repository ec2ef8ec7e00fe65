"""Architecture Decision Records read as decisions: one claim per ADR, supersessions as chains.

Reads the Nygard form (``# 7. Title``, ``Date:``, ``## Status`` / ``Context`` /
``Decision`` / ``Consequences``) and MADR (YAML front matter or ``* Status:``
lines under the title, ``## Context and Problem Statement``, ``## Decision
Outcome``). Each ADR gives one DECISION claim keyed ``adr:<path relative to the
directory read>``; its date (never the file's mtime) is when it was said and
when it began to hold. What must stay true: a superseded ADR's claim comes
before the claim of the ADR that replaces it, and nothing here guesses.

How a status is read, for a team reading its memory later:

- ``accepted``, ``approved``, ``adopted``, ``agreed``, ``decided``, and no
  status at all, or one not listed here: an ACTIVE decision. A decision log
  is a list of decisions; a record nobody marked otherwise is one.
- ``proposed``, ``draft``, ``in review``, ``pending``: still a DECISION claim
  (it is about what the project is going to do, and a slice for a task in
  that area must carry it), but its statement begins ``Proposed:`` so that it
  can never read as ruled wherever it is shown. A proposal that only claims to
  supersede another ADR does not retire it (counted, not applied).
- ``rejected``, ``declined``, ``withdrawn``: imported RETIRED, reason
  ``rejected in ADR <file>``, because what was tried and ruled out is what a
  fresh agent proposes again. Such an ADR is never put into a chain.
- ``deprecated``, ``obsolete``: RETIRED, ``deprecated in ADR <file>``, unless a
  supersession names its successor, which says more.
- ``superseded by <ref>`` in the older ADR (``ADR-12``, ``[ADR-12](0012-x.md)``,
  ``[12. Title](0012-x.md)``, ``superseded-by: 12``, "in part" too), or
  ``supersedes <ref>`` in the newer: the older stays ACTIVE in its own claim,
  with ``valid_to`` the newer's date; the newer's claim carries
  ``supersedes="adr:<older>"`` and the first sentence of its context as the
  reason, so the uploader writes the chain and marks the older SUPERSEDED. A
  claim replaces one claim: when one ADR supersedes several, the nearest is
  chained and the others are retired ``superseded by ADR <newer>``; when an
  ADR names a successor that is not among the files read, it is retired with
  that reason (its own text says it no longer holds). Cycles are broken.
  Each of these is counted in ``Capture.skipped``.
"""

from __future__ import annotations

import heapq
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath

from mneia.capture.frontmatter import front_matter, unquote
from mneia.capture.git import last_commits
from mneia.capture.record import Capture, Claim, NotASource, Origin

STATEMENT_MAX = 400
DETAILS_MAX = 2000


class Standing(StrEnum):
    """What an ADR's status says of it, supersession apart (that is read into references)."""

    ACCEPTED = "accepted"
    PROPOSED = "proposed"
    REJECTED = "rejected"
    DEPRECATED = "deprecated"
    SUPERSEDED = "superseded"
    UNSTATED = "unstated"


@dataclass(frozen=True, slots=True)
class Reference:
    """Another ADR named in a status: by number, by link, or both."""

    number: int | None
    target: str | None = None  # the link's path, as written


@dataclass(frozen=True, slots=True)
class AdrRecord:
    path: Path
    title: str
    number: int | None
    standing: Standing
    status: str | None = None
    date: date | None = None
    deciders: tuple[str, ...] = ()
    consulted: tuple[str, ...] = ()
    informed: tuple[str, ...] = ()
    context: str | None = None
    decision: str | None = None  # the decision's first paragraph, collapsed
    superseded_by: tuple[Reference, ...] = ()
    supersedes: tuple[Reference, ...] = ()


def _text(value: str | list[str] | None) -> str | None:
    if isinstance(value, list):
        return ", ".join(value) or None
    return value or None


def _names(value: str | list[str] | None) -> tuple[str, ...]:
    items = value if isinstance(value, list) else (value or "").split(",")
    return tuple(n for n in (unquote(i) for i in items) if n)


# --- one file -----------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_META = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(status|date|deciders|decision[- ]makers|consulted|informed"
    r"|superseded[-_ ]by|supersedes)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*?)\s*$",
    re.IGNORECASE,
)
_SECTIONS = {
    "status": "status",
    "context": "context",
    "context and problem statement": "context",
    "context and problem": "context",
    "problem statement": "context",
    "background": "context",
    "decision": "decision",
    "decisions": "decision",
    "decision outcome": "decision",
    "the decision": "decision",
    "outcome": "decision",
}
_TITLE_NUMBER = re.compile(r"^(?:ADR[-_\s#]*0*(\d+)\s*[.:)\-–—]?|0*(\d+)\s*[.:)\-–—])\s*(.+)$", re.IGNORECASE)
_FILE_NUMBER = re.compile(r"^(?:adr[-_]?)?0*(\d+)(?=[^\d]|$)", re.IGNORECASE)
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_SUPERSEDED_BY = re.compile(r"\bsuperseded(?:\s+in\s+part)?[\s_-]*by\b[\s:]*", re.IGNORECASE)
_SUPERSEDES = re.compile(r"\bsupersedes\b[\s:]*", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
_ADR_REF = re.compile(r"\bADR[-_\s#]*0*(\d+)\b", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"(?<![\w.])#?0*(\d{1,6})\b")
_STANDINGS = {  # the first of these words in a status decides
    "reject": Standing.REJECTED,
    "declin": Standing.REJECTED,
    "withdrawn": Standing.REJECTED,
    "abandon": Standing.REJECTED,
    "deprecat": Standing.DEPRECATED,
    "obsolete": Standing.DEPRECATED,
    "propos": Standing.PROPOSED,
    "draft": Standing.PROPOSED,
    "in review": Standing.PROPOSED,
    "under review": Standing.PROPOSED,
    "pending": Standing.PROPOSED,
    "wip": Standing.PROPOSED,
    "in progress": Standing.PROPOSED,
    "accept": Standing.ACCEPTED,
    "approv": Standing.ACCEPTED,
    "adopt": Standing.ACCEPTED,
    "agreed": Standing.ACCEPTED,
    "decided": Standing.ACCEPTED,
    "implemented": Standing.ACCEPTED,
    "supersed": Standing.SUPERSEDED,
}
_STANDING = re.compile(r"\b(" + "|".join(_STANDINGS) + ")", re.IGNORECASE)


def read_file(path: Path) -> AdrRecord:
    """One ADR; ``NotASource`` when the file has no title or reads as no ADR."""
    found = _parse(Path(path), Path(path).read_text(encoding="utf-8", errors="replace"))
    if isinstance(found, str):
        raise NotASource(str(path), found)
    return found


def _parse(path: Path, text: str) -> AdrRecord | str:
    lines = text.lstrip("\ufeff").splitlines()
    fields, start = front_matter(lines)
    headings: list[tuple[int, int, str]] = []  # (line index, level, text)
    fenced = False
    for i in range(start, len(lines)):
        if _FENCE.match(lines[i]):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(lines[i])):
            headings.append((i, len(m[1]), m[2]))
    first = next((h for h in headings if h[1] == 1), None)
    raw_title = first[2] if first else _text(fields.get("title"))
    if not raw_title or not raw_title.strip():
        return "no title"
    if raw_title.lstrip().startswith(("{", "[short title", "<")):
        return "template"

    sections: dict[str, list[str]] = {}
    for n, (i, level, name) in enumerate(headings):
        section = _SECTIONS.get(re.sub(r"^[\d.\s]+|[:\s]+$", "", name).lower())
        if section is None or section in sections or (first and i == first[0]):
            continue
        end = next((j for j, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
        sections[section] = lines[i + 1 : end]
    after_title = first[0] + 1 if first else start
    body_start = next((i for i, _, _ in headings if i >= after_title), len(lines))
    meta: dict[str, str] = {}
    for line in [*lines[start:body_start], *sections.get("status", [])]:
        if m := _META.match(line):
            meta.setdefault(re.sub(r"[-_ ]+", "-", m[1].lower()), m[2])

    status = _text(fields.get("status")) or meta.get("status") or _paragraph(sections.get("status", []))
    number = _number(path.name, raw_title)
    title = _bare_title(raw_title, number)
    told = [status or "", *sections.get("status", [])]
    superseded_by = _references(told, _SUPERSEDED_BY)
    superseded_by += _references(
        [_text(fields.get(k)) or "" for k in ("superseded-by", "superseded_by", "supersededby")], None
    )
    superseded_by += _references([meta.get("superseded-by", "")], None)
    supersedes = _references(told, _SUPERSEDES)
    supersedes += _references([_text(fields.get("supersedes")) or "", meta.get("supersedes", "")], None)
    context = _collapse(sections.get("context", []))
    decision = _paragraph(sections.get("decision", []))
    when = _date(_text(fields.get("date")) or meta.get("date"))
    if not (status or when or context or decision):
        return "not an ADR (no status, date, context or decision)"
    return AdrRecord(
        path=path,
        title=title,
        number=number,
        standing=_standing(status, bool(superseded_by)),
        status=status,
        date=when,
        deciders=_names(
            fields.get("deciders")
            or fields.get("decision-makers")
            or meta.get("deciders")
            or meta.get("decision-makers")
        ),
        consulted=_names(fields.get("consulted") or meta.get("consulted")),
        informed=_names(fields.get("informed") or meta.get("informed")),
        context=context,
        decision=decision,
        superseded_by=tuple(dict.fromkeys(superseded_by)),
        supersedes=tuple(dict.fromkeys(supersedes)),
    )


def _standing(status: str | None, superseded: bool) -> Standing:
    if not status:
        return Standing.SUPERSEDED if superseded else Standing.UNSTATED
    rest = _SUPERSEDED_BY.split(status)[0]  # "proposed (superseded in part by …)" is still a proposal
    if m := _STANDING.search(rest):
        return _STANDINGS[m[1].lower()]
    return Standing.SUPERSEDED if superseded else Standing.UNSTATED


def _references(texts: Iterable[str], marker: re.Pattern[str] | None) -> list[Reference]:
    """The ADRs named after ``marker`` in each text (after nothing: the whole text is the reference)."""
    found: list[Reference] = []
    for text in texts:
        tails = [text] if marker is None else [text[m.end() :] for m in marker.finditer(text)]
        for tail in tails:
            if marker is not None:  # up to the next statement of either kind
                tail = re.split(r"\bsupersed", tail, maxsplit=1, flags=re.IGNORECASE)[0]
            before = len(found)
            for label, target in _LINK.findall(tail):
                name = PurePosixPath(target.split("#")[0]).name
                number = _leading_number(name) if name else None
                found.append(
                    Reference(number if number is not None else _label_number(label), target or None)
                )
            tail = _ISO_DATE.sub(" ", _LINK.sub(" ", tail))
            found.extend(Reference(int(n)) for n in _ADR_REF.findall(tail))
            if len(found) == before and (bare := _BARE_NUMBER.search(tail)):
                found.append(Reference(int(bare[1])))
    return found


def _leading_number(name: str) -> int | None:
    m = _FILE_NUMBER.match(name)
    return int(m[1]) if m else None


def _label_number(label: str) -> int | None:
    m = _ADR_REF.search(label) or re.match(r"\s*0*(\d+)\s*[.:)\s]", label)
    return int(m[1]) if m else None


def _number(name: str, title: str) -> int | None:
    number = _leading_number(name)
    if number is None and (m := _TITLE_NUMBER.match(title.strip())):
        number = int(m[1] or m[2])
    return number


def _bare_title(title: str, number: int | None) -> str:
    title = _inline(title)
    m = _TITLE_NUMBER.match(title)
    if m:
        return m[3].strip()
    m = re.match(r"0*(\d+)\s+(.+)$", title)  # "# 7 Use X" only when 7 is the file's own number
    return m[2] if m and number == int(m[1]) else title


def _date(value: str | None) -> date | None:
    m = _ISO_DATE.search(value or "")
    if m is None:
        return None
    try:
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def _inline(text: str) -> str:
    """Markdown inline marks removed: links become their text, emphasis goes."""
    text = _LINK.sub(lambda m: m[1], text)
    return re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)


def _collapse(lines: Iterable[str]) -> str | None:
    text = " ".join(_inline(" ".join(line.strip() for line in lines if not _HEADING.match(line))).split())
    return text or None


def _paragraph(lines: list[str]) -> str | None:
    """The first paragraph, bullets joined with ``;``."""
    parts: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _HEADING.match(line) or _FENCE.match(line):
            if parts:
                break
            continue
        bullet = re.match(r"(?:[-*+]|\d+[.)])\s+(.*)$", stripped)
        if bullet and parts and not parts[-1].endswith(":"):
            parts[-1] += ";"
        parts.append(bullet[1] if bullet else stripped)
    return _collapse(parts)


_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no.", "mr.", "ms.", "dr."}


def _first_sentence(text: str) -> str:
    for m in re.finditer(r"[.!?](?=\s+[A-Z\"'“(\[`])", text):
        word = text[: m.end()].rsplit(None, 1)[-1].lower()
        if word not in _ABBREVIATIONS:
            return text[: m.end()]
    return text


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


# --- a directory --------------------------------------------------------------------------------

_NOT_ADRS = {"readme", "index", "_index", "summary", "changelog", "contributing"}


def read(directory: Path, *, shown: str | None = None) -> Capture:
    """Every ADR under ``directory``, as claims in supersession order; ``NotASource`` when there is none."""
    directory = Path(directory)
    name = shown if shown is not None else str(directory)
    if not directory.is_dir():
        raise NotASource(name, "not a directory of ADRs")
    capture = Capture(source=name, origin=Origin.DOCUMENT)
    files = sorted(
        p
        for pattern in ("*.md", "*.markdown")
        for p in directory.rglob(pattern)
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts)
    )
    records: dict[str, AdrRecord] = {}
    for path in files:
        stem = path.stem.lower()
        if stem in _NOT_ADRS or "template" in stem:
            capture.skipped["template or index"] += 1
            continue
        try:
            found = _parse(path, path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            found = "unreadable"
        if isinstance(found, str):
            capture.skipped[found.split(" (")[0]] += 1
        else:
            records[path.relative_to(directory).as_posix()] = found
    if not records:
        raise NotASource(
            name,
            f"no ADR found ({len(files)} markdown files, none with a title and a status,"
            " date, context or decision)",
        )
    commits = last_commits(directory, set(records))
    chain = _Chain(records, capture.skipped)
    capture.claims = [_claim(rel, records, chain, commits.get(rel)) for rel in chain.order()]
    return capture


def _claim(rel: str, records: dict[str, AdrRecord], chain: _Chain, commit: str | None) -> Claim:
    adr = records[rel]
    statement = f"{adr.title}: {adr.decision}" if adr.decision else adr.title
    if adr.standing is Standing.PROPOSED:
        statement = f"Proposed: {statement}"
    basis = f"ADR {rel}" + (f" at git commit {commit}" if commit else "")
    if adr.deciders:
        basis += f" (deciders: {', '.join(adr.deciders)})"
    when = datetime(adr.date.year, adr.date.month, adr.date.day, tzinfo=UTC) if adr.date else None
    older, newer = chain.older.get(rel), chain.newer.get(rel)
    ends = records[newer].date if newer else None
    reason = None
    if older is not None:
        reason = _clip(_first_sentence(adr.context), STATEMENT_MAX) if adr.context else adr.title
    return Claim(
        key=f"adr:{rel}",
        kind="DECISION",
        statement=_clip(statement, STATEMENT_MAX),
        details=_clip(adr.context, DETAILS_MAX) if adr.context else None,
        basis=basis,
        said_at=when,
        valid_from=when,
        valid_to=(
            datetime(ends.year, ends.month, ends.day, tzinfo=UTC)
            if ends and adr.date and ends >= adr.date
            else None
        ),
        retired=chain.retired.get(rel),
        supersedes=f"adr:{older}" if older else None,
        reason=reason,
    )


class _Chain:
    """Who supersedes whom among the ADRs read: each replaces at most one, and is replaced by at most one."""

    def __init__(self, records: dict[str, AdrRecord], skipped: Counter[str]) -> None:
        self.records = records
        self.older: dict[str, str] = {}  # newer → the one it replaces
        self.newer: dict[str, str] = {}
        self.retired: dict[str, str] = {}
        by_number: dict[int, list[str]] = {}
        for rel, adr in records.items():
            if adr.number is not None:
                by_number.setdefault(adr.number, []).append(rel)
        edges: dict[tuple[str, str], bool] = {}  # (older, newer) → stated by the older itself
        for rel, adr in records.items():
            for ref in adr.superseded_by:
                if (target := self._resolve(rel, ref, by_number)) is not None:
                    edges[rel, target] = True
            for ref in adr.supersedes:
                if (target := self._resolve(rel, ref, by_number)) is not None:
                    edges.setdefault((target, rel), False)
                else:
                    skipped["supersedes an ADR not found"] += 1
        candidates: list[tuple[str, str]] = []
        for (old, new), by_older in edges.items():
            if records[old].standing is Standing.REJECTED:
                skipped["supersession of a rejected ADR (ignored)"] += 1
            elif records[new].standing is Standing.REJECTED:
                skipped["supersession by a rejected ADR (ignored)"] += 1
            elif records[new].standing is Standing.PROPOSED and not by_older:
                skipped["supersession only proposed (not applied)"] += 1
            else:
                candidates.append((old, new))
        # Newer ADRs in order; for each, the nearest older first.
        candidates.sort(key=lambda e: self._rank(e[0]), reverse=True)
        candidates.sort(key=lambda e: self._rank(e[1]))
        extra: list[tuple[str, str]] = []
        for old, new in candidates:
            if self._reaches(new, old):
                skipped["supersession cycle (broken)"] += 1
            elif new in self.older or old in self.newer:
                extra.append((old, new))
            else:
                self.older[new], self.newer[old] = old, new
        for old, new in extra:
            if old in self.newer:
                skipped["superseded by more than one ADR"] += 1
            elif old not in self.retired:
                self.retired[old] = f"superseded by ADR {new}"
                skipped["supersedes more than one ADR (the others retired)"] += 1
        named = {old for old, _ in edges}
        for rel, adr in records.items():
            if rel in self.newer or rel in self.retired:
                continue
            if adr.standing is Standing.REJECTED:
                self.retired[rel] = f"rejected in ADR {rel}"
            elif (adr.superseded_by or adr.standing is Standing.SUPERSEDED) and rel not in named:
                told = ", ".join(
                    f"ADR-{r.number}" if r.number is not None else str(r.target) for r in adr.superseded_by
                )
                self.retired[rel] = (
                    f"superseded by {told or 'an ADR it does not name'} (stated in ADR {rel}),"
                    " which is not among the ADRs read"
                )
                skipped["superseded by an ADR not found"] += 1
            elif adr.standing is Standing.DEPRECATED:
                self.retired[rel] = f"deprecated in ADR {rel}"

    def _resolve(self, rel: str, ref: Reference, by_number: dict[int, list[str]]) -> str | None:
        if ref.target and "://" not in ref.target:
            linked = os.path.normpath(PurePosixPath(rel).parent / ref.target.split("#")[0]).replace(
                os.sep, "/"
            )
            if linked in self.records:
                return linked
        same = by_number.get(ref.number, []) if ref.number is not None else []
        if len(same) > 1:  # numbered per folder: the one beside the referring file
            same = [s for s in same if PurePosixPath(s).parent == PurePosixPath(rel).parent] or same
        return same[0] if same else None

    def _rank(self, rel: str) -> tuple[float, str]:
        number = self.records[rel].number
        return (number if number is not None else float("inf"), rel)

    def _reaches(self, start: str, goal: str) -> bool:
        node: str | None = start
        for _ in range(len(self.records) + 1):
            if node == goal:
                return True
            node = self.newer.get(node) if node is not None else None
            if node is None:
                return False
        return True

    def order(self) -> list[str]:
        """By number, except that an ADR always comes after the one it supersedes."""
        ready = [(self._rank(rel), rel) for rel in self.records if rel not in self.older]
        heapq.heapify(ready)
        out: list[str] = []
        while ready:
            _, rel = heapq.heappop(ready)
            out.append(rel)
            if (new := self.newer.get(rel)) is not None:
                heapq.heappush(ready, (self._rank(new), new))
        return out
