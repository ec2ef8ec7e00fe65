"""Agent rules files read as standing rules: CLAUDE.md, AGENTS.md, .claude/rules, .cursor/rules, .cursorrules.

One claim per bullet (``-``, ``*``, ``+``, ``1.``); in a file with no bullet at
all, one per paragraph (in a file with bullets, paragraphs are framing and are
counted in ``skipped``, except a paragraph ending with ``:`` that leads a list,
whose text prefixes each of its items). A nested bullet is its own rule; it
carries its parent's text in front only when the parent ends with ``:``
("Tests: run them with -x"), and such a parent is no rule of its own. Headings,
code fences, tables, HTML comments, front matter and CLAUDE.md's ``@path``
import lines are not rules (imports, code and tables are counted). The heading
path above a rule, and a Cursor rule's ``globs`` / ``description`` or a Claude
rule's ``paths``, go into ``details``.

Kind: a rules file is instructions the agent is bound by, so a rule is a
CONSTRAINT unless it only states a preference: PREFERENCE when it says
prefer, should, avoid, try to, favour/favor, ideally, consider, recommended,
"where possible" and says none of must, never, always, do not / don't,
required, shall, cannot, only, forbidden, "not allowed", or begins with "No".
RFC 2119 draws the line in the same place (MUST against SHOULD); a rule with
any hard part is a constraint.

What must stay true: a rule's key is ``rules:<relative path>:<first 16 hex of
the sha256 of its text, whitespace collapsed>``, so the same text keeps its key
however the file around it moves, and an edited rule gets a new one; the part
before the last colon is ``document(path)``, the namespace the server pairs
edited rules in. Nothing here reads dates: a rules file says nothing of when.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mneia.capture.frontmatter import front_matter
from mneia.capture.record import Capture, Claim, NotASource, Origin

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_BULLET = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_RULE_LINE = re.compile(r"^ {0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$")
_IMPORT = re.compile(r"^(?:[-*+]\s+)?@[~\w./-]+\S*$")
_TAG = re.compile(r"^</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>$")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)[^)]*\)")
_OBLIGATION = re.compile(
    r"\b(?:must|never|always|do not|don'?t|required?|shall|mandatory|forbidden|prohibited|not allowed"
    r"|cannot|can'?t|only)\b|^no\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer\w*|should(?:n'?t)?|avoid\w*|try to|favou?r\w*|ideally|consider\w*|recommended"
    r"|(?:where|when|if|as much as) possible)\b",
    re.IGNORECASE,
)


def find(directory: Path) -> list[Path]:
    """The rules files of a project directory, in a stable order."""
    directory = Path(directory)
    found = [directory / name for name in ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md", ".cursorrules")]
    found = [p for p in found if p.is_file()]
    found += sorted(p for p in (directory / ".claude" / "rules").rglob("*.md") if p.is_file())
    found += sorted(p for p in (directory / ".cursor" / "rules").rglob("*.mdc") if p.is_file())
    return found


def document(path: Path, *, root: Path | None = None) -> str:
    """The namespace of one file's rules: every key of its claims begins with it and a colon."""
    return f"rules:{_relative(Path(path), root)}"


def kind(rule: str) -> str:
    if _PREFERENCE.search(rule) and not _OBLIGATION.search(rule.strip("*_ ")):
        return "PREFERENCE"
    return "CONSTRAINT"


def read(paths: Sequence[Path], *, root: Path | None = None) -> Capture:
    """Every rule of the files named (a directory stands for the rules files in it)."""
    capture = Capture(source=", ".join(str(p) for p in paths), origin=Origin.DOCUMENT)
    files: list[tuple[Path, Path | None]] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += [(f, root if root is not None else path) for f in find(path)]
        elif path.is_file():
            files.append((path, root))
        else:
            raise NotASource(str(path), "no such file")
    if not files:
        raise NotASource(
            capture.source, "no rules file found (CLAUDE.md, AGENTS.md, .claude/rules, .cursor/rules)"
        )
    seen: set[str] = set()
    for path, base in files:
        rel = _relative(path, base)
        for claim in _claims(rel, path.read_text(encoding="utf-8", errors="replace"), capture):
            if claim.key in seen:
                capture.skipped["duplicate rule"] += 1
                continue
            seen.add(claim.key)
            capture.claims.append(claim)
    return capture


def _relative(path: Path, root: Path | None) -> str:
    resolved = path.resolve()
    try:
        return resolved.relative_to((root or Path.cwd()).resolve()).as_posix()
    except ValueError:
        parts = resolved.parts
        for marker in (".claude", ".cursor"):
            if marker in parts:
                return "/".join(parts[len(parts) - 1 - parts[::-1].index(marker) :])
        return resolved.name


@dataclass(slots=True)
class _Block:
    line: int
    indent: int
    parts: list[str]
    headings: tuple[str, ...]
    bullet: bool
    parent: _Block | None = None
    children: int = 0
    leads: bool = False  # a paragraph ending with ":" that a list follows
    text: str = field(default="", init=False)


def _claims(rel: str, text: str, capture: Capture) -> list[Claim]:
    lines = text.lstrip("\ufeff").splitlines()
    fields, start = front_matter(lines)
    blocks = _blocks(lines, start, capture)
    has_bullets = any(b.bullet for b in blocks)
    note = _applies(fields)
    claims: list[Claim] = []
    for block in blocks:
        block.text = _clean(" ".join(block.parts))
        if block.parent is not None and block.parent.text.endswith(":"):
            block.text = f"{block.parent.text} {block.text}"
        if not block.text:
            continue
        if not block.bullet:
            if has_bullets and not block.leads:
                capture.skipped["paragraph beside bullets"] += 1
            if has_bullets:
                continue
        elif block.children and block.text.endswith(":"):
            continue  # a lead-in: its text is in front of each of its items
        digest = hashlib.sha256(block.text.encode()).hexdigest()[:16]
        details = "; ".join(p for p in (" > ".join(block.headings), note) if p)
        claims.append(
            Claim(
                key=f"rules:{rel}:{digest}",
                kind=kind(block.text),
                statement=block.text,
                details=details or None,
                basis=f"{rel}:{block.line}",
            )
        )
    return claims


def _blocks(lines: list[str], start: int, capture: Capture) -> list[_Block]:
    """Bullets and paragraphs, in order, each knowing its line, its headings and its parent bullet."""
    blocks: list[_Block] = []
    headings: list[tuple[int, str]] = []
    items: list[_Block] = []  # the open list, outermost first
    current: _Block | None = None  # the block a next text line continues
    paragraph: _Block | None = None  # the last paragraph, while nothing but a list follows it
    lead: _Block | None = None  # the paragraph ending with ":" that leads the open list
    fence: str | None = None
    comment = table = False
    for n in range(start, len(lines)):
        line = lines[n].expandtabs(4)
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        if comment:
            if "-->" not in line:
                continue
            line, comment = line.split("-->", 1)[1], False
        line = re.sub(r"<!--.*?-->", "", line)
        if "<!--" in line:
            line, comment = line.split("<!--", 1)[0], True
        while re.match(r"^\s*>", line):
            line = re.sub(r"^\s*> ?", "", line, count=1)
        stripped = line.strip()
        if stripped.startswith("|"):
            if not table:
                capture.skipped["table"] += 1
            table, current, paragraph, lead = True, None, None, None
            continue
        table = False
        if not stripped:
            current = None
            continue
        if m := _FENCE.match(line):
            fence, current, paragraph, lead = m[1], None, None, None
            capture.skipped["code"] += 1
            continue
        setext = re.fullmatch(r"=+|-+", stripped)
        if setext and current is not None and not current.bullet and len(current.parts) == 1:
            blocks.remove(current)
            _push(headings, 1 if stripped[0] == "=" else 2, _clean(current.parts[0]))
            items, current, paragraph, lead = [], None, None, None
            continue
        if (m := _HEADING.match(line)) or _RULE_LINE.match(line):
            if m:
                _push(headings, len(m[1]), _clean(m[2]))
            items, current, paragraph, lead = [], None, None, None
            continue
        if _IMPORT.match(stripped):
            capture.skipped["import"] += 1
            current = None
            continue
        if _TAG.match(stripped):
            current = None
            continue
        heads = tuple(h for _, h in headings)
        if bullet := _BULLET.match(line):
            indent = len(bullet[1])
            while items and items[-1].indent >= indent:
                items.pop()
            parent = items[-1] if items else None
            if parent is None and lead is None and paragraph is not None:
                if _clean(" ".join(paragraph.parts)).endswith(":"):
                    lead, paragraph.leads = paragraph, True
                paragraph = None
            if parent is None:
                parent = lead
            if parent is not None:
                parent.children += 1
            current = _Block(n + 1, indent, [_CHECKBOX.sub("", bullet[3])], heads, True, parent)
            items.append(current)
            blocks.append(current)
        elif current is not None:
            current.parts.append(stripped)
        elif items and len(line) - len(line.lstrip()) > items[-1].indent:
            current = items[-1]  # a loose item's next paragraph
            current.parts.append(stripped)
        else:
            items, lead = [], None
            current = paragraph = _Block(n + 1, 0, [stripped], heads, False)
            blocks.append(current)
    return blocks


def _push(headings: list[tuple[int, str]], level: int, text: str) -> None:
    while headings and headings[-1][0] >= level:
        headings.pop()
    headings.append((level, text))


def _clean(text: str) -> str:
    text = _LINK.sub(lambda m: f"{m[1]} ({m[2]})", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    return " ".join(text.split())


def _applies(fields: dict[str, str | list[str]]) -> str | None:
    """Where a Cursor or Claude rules file says it applies, when not everywhere."""
    globs = fields.get("globs") or fields.get("paths")
    if isinstance(globs, list):
        globs = ", ".join(globs)
    if globs:
        return f"applies to files matching {globs}"
    always = fields.get("alwaysapply")
    description = fields.get("description")
    if isinstance(description, list):
        description = ", ".join(description)
    if description and str(always).lower() != "true":
        return f"applied when relevant: {description}"
    return None
