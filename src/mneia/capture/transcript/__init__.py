"""Transcript readers: a coding client's session file read into a ``Capture``, with no I/O but the read.

One module per client (``claude_code``, ``codex``, ``gemini``), each with
``read(path, *, shown=None) -> Capture``. Each raises ``NotASource`` for a file that holds no
record of its client. What they share, and what must stay true of them, is in ``session``.
``files`` turns the paths a person names into the transcript files to read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from mneia.capture.record import Capture
from mneia.capture.transcript import claude_code, codex, gemini

READERS: dict[str, Callable[..., Capture]] = {
    "claude-code": claude_code.read,
    "codex": codex.read,
    "gemini": gemini.read,
}

# What a directory holds of each client's transcripts, searched recursively.
_PATTERNS = {
    "claude-code": ("*.jsonl",),  # projects/<project>/<session>.jsonl, <session>/subagents/agent-*.jsonl
    "codex": ("rollout-*.jsonl", "*.jsonl"),  # sessions/YYYY/MM/DD/rollout-*.jsonl, and renamed copies
    "gemini": ("*.jsonl", "session-*.json"),  # tmp/<project>/chats/session-*.jsonl, legacy .json
}
# Codex keeps other JSONL next to its sessions: the prompt history and the session index.
_NOT_TRANSCRIPTS = {"codex": frozenset({"history.jsonl", "session_index.jsonl"})}


def files(paths: Iterable[Path], tool: str) -> list[Path]:
    """``paths`` with each directory replaced by the ``tool`` client's transcripts under it, sorted.

    A path that is not a directory is kept as given: reading it says what is wrong with it.
    """
    if tool not in _PATTERNS:
        raise ValueError(f"unknown client {tool!r}: one of {', '.join(_PATTERNS)}")
    left_out = _NOT_TRANSCRIPTS.get(tool, frozenset())
    found: set[Path] = set()
    for path in paths:
        if not path.is_dir():
            found.add(path)
            continue
        for pattern in _PATTERNS[tool]:
            found.update(file for file in path.rglob(pattern) if file.is_file() and file.name not in left_out)
    return sorted(found)
