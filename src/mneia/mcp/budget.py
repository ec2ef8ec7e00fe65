"""How much text a tool may hand a client, in tokens, and how an answer is cut to fit.

MCP clients cap what one tool result may put in the model's context (Claude
Code warns at 10,000 tokens and refuses past 25,000 by default), and a client
that hits its cap truncates blindly. Every tool here answers within
``OUTPUT_CAP`` tokens, counted with the same tiktoken encoding as rehydration
(``rehydration.tokens``): an answer that would be longer is cut at a line
boundary and says so in its last line, naming what was left out and how to
ask for less. Slices (``resume``, ``rehydrate``) are asked for under a
``tokenBudget`` well below the cap, so they are cut only when the guaranteed
constraints alone exceed it.
"""

from __future__ import annotations

from mneia.rehydration import tokens
from mneia.rehydration.handoff_text import FOR_TASK

OUTPUT_CAP = 8_000
"""The most tokens any tool answer, resource or prompt holds."""

DEFAULT_SLICE_BUDGET = 2_000
"""The ``tokenBudget`` of ``resume`` and ``rehydrate`` when the agent gives none."""

MAX_SLICE_BUDGET = 6_000
"""The largest ``tokenBudget`` they accept: room under the cap for the handoff beside the slice."""

DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 25
CONSTRAINTS_PAGE = 100
"""Guaranteed constraints listed by the ``constraints`` resource (the rest are counted)."""

_NOTICE_ROOM = 60
"""Tokens kept free for the line that says what was cut."""


def count(text: str) -> int:
    return tokens.count(text)


def fit(text: str, cap: int = OUTPUT_CAP, *, advice: str = "ask for less") -> str:
    """``text`` whole when it holds ``cap`` tokens, else its first lines and a line naming the cut.

    The cut falls between lines, so no item's line is ever shown half (a half
    line could lose its authority tag or read as a different claim); only a
    first line longer than the cap on its own is cut inside, and marked.
    """
    if count(text) <= cap:
        return text
    lines = text.splitlines()
    kept: list[str] = []
    used = 0
    room = cap - _NOTICE_ROOM
    for line in lines:
        cost = count(line + "\n")
        if used + cost > room:
            break
        kept.append(line)
        used += cost
    if not kept and lines:
        # One line longer than the cap (details of 20,000 characters): its beginning, marked as cut.
        ids = tokens.encoding().encode_ordinary(lines[0])[:room]
        kept.append(tokens.encoding().decode(ids) + " …")
    left = len(lines) - len(kept)
    notice = f"[cut: {left} more line(s) over this tool's {cap}-token output cap; {advice}]"
    return "\n".join([*kept, notice])


def fit_resumption(text: str, cap: int = OUTPUT_CAP) -> str:
    """A resumption (a handoff, then the task's slice) within ``cap``, cut in the handoff first.

    The slice comes last and holds the guaranteed constraints, which a cut
    from the end would drop first: so the handoff gives way, and when the
    slice alone is over the cap, the handoff is left out and the slice cut.
    """
    if count(text) <= cap:
        return text
    at = text.find("\n" + FOR_TASK)
    if at < 0:
        return fit(text, cap)
    handoff, slice_ = text[:at], text[at + 1 :]
    room = cap - count(slice_) - 1
    if room >= 2 * _NOTICE_ROOM:
        return fit(handoff, room, advice="the slice for the task follows whole") + "\n" + slice_
    left_out = (
        "[the handoff is left out: the slice alone reaches the output cap; read mneia://handoff/latest]"
    )
    return left_out + "\n" + fit(slice_, cap - count(left_out) - 1, advice="ask for a smaller token_budget")
