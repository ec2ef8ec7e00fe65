"""``mneia hooks install <client>``: the client's settings file, written or merged so that its session
hooks run ``mneia hook <client>``.

=============  =================================  =======================================================
Client         File (``--project-dir DIR``, or ~)  Events, timeout
=============  =================================  =======================================================
claude-code    ``.claude/settings.json``           SessionStart 10 s, SessionEnd 5 s (Claude Code waits
                                                   at exit up to the highest SessionEnd timeout; its
                                                   default is 1.5 s), PostCompact 10 s
codex          ``.codex/hooks.json``               SessionStart 10 s, SessionEnd 3 s (Codex caps it at
                                                   3 s; rust-v0.145.0 and later), PostCompact 10 s
gemini         ``.gemini/settings.json``           SessionStart 10,000 ms, SessionEnd 5,000 ms (Gemini
                                                   CLI's timeouts are milliseconds); ``hooksConfig.
                                                   enabled`` set when absent. No compaction hook:
                                                   PreCompress carries no summary.
=============  =================================  =======================================================

Every client takes the same nesting, ``hooks: {Event: [{matcher?, hooks:
[{type: "command", command, timeout}]}]}`` (Gemini CLI adds a ``name``); no
matcher is written, so every source (startup, resume, clear, compact) and
every end reason runs it.

What must stay true: every key and hook the file had stays, in its place;
ours is added once per event, or replaces in place an older ``mneia hook``
handler (another path of the script, ``python -m mneia.launch hook``), and
a second run changes nothing and says so; the diff is shown before the file
is written (atomically, through a symlink to its target); ``--dry-run``
writes nothing. The token is never written: the hook reads ``MNEIA_TOKEN``
from the environment the client starts it with.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mneia.capture import place


class Refused(Exception):
    """The settings file cannot be merged safely (not JSON, an unexpected shape): nothing was written."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    directory: str
    file: str
    events: tuple[tuple[str, int], ...]
    """Each event with its timeout, in the client's unit."""
    milliseconds: bool = False
    notes: tuple[str, ...] = ()
    prepare: Callable[[dict[str, Any], list[str]], None] | None = None
    """Anything besides the hooks the client needs in the file (it may add notes)."""

    def handler(self, command: str, timeout: int) -> dict[str, Any]:
        found: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout}
        if self.name == "gemini":
            found = {"name": "mneia", **found}
        return found


def _gemini_enabled(settings: dict[str, Any], notes: list[str]) -> None:
    config = settings.setdefault("hooksConfig", {})
    if not isinstance(config, dict):
        raise Refused('"hooksConfig" is not an object: not touching it')
    if "enabled" not in config:
        config["enabled"] = True
    elif config["enabled"] is not True:
        notes.append(
            "hooksConfig.enabled is false in this file, left as it is: Gemini CLI runs no hook until it "
            "is true."
        )


CLIENTS = {
    "claude-code": Client(
        "claude-code",
        "Claude Code",
        ".claude",
        "settings.json",
        (("SessionStart", 10), ("SessionEnd", 5), ("PostCompact", 10)),
        notes=(
            "Claude Code fires no SessionEnd on Ctrl-C (only /exit or closing the terminal): such a "
            "session leaves nothing to sync.",
        ),
    ),
    "codex": Client(
        "codex",
        "Codex",
        ".codex",
        "hooks.json",
        (("SessionStart", 10), ("SessionEnd", 3), ("PostCompact", 10)),
        notes=(
            "Codex runs hooks only with its feature flag on, in ~/.codex/config.toml: [features] "
            "codex_hooks = true (newer releases name it hooks = true); this command does not edit "
            "config.toml.",
            "Codex asks you to trust each new or edited hook: open /hooks in Codex and trust the mneia "
            "entries, or they do not run.",
            "SessionEnd needs Codex rust-v0.145.0 or later; `codex exec` fires neither Stop nor "
            "SessionEnd; Codex Desktop was seen listing SessionStart hooks without running them "
            "(openai/codex#35863).",
            "Not verified against a Codex binary here: that PostCompact's input carries "
            "compact_summary (without it the hook spools nothing).",
        ),
    ),
    "gemini": Client(
        "gemini",
        "Gemini CLI",
        ".gemini",
        "settings.json",
        (("SessionStart", 10_000), ("SessionEnd", 5_000)),
        milliseconds=True,
        notes=(
            "hooksConfig.enabled is how Gemini CLI 0.26.0 and later turn hooks on (older releases "
            "used tools.enableHooks and hooks.enabled, not written here); not verified against a "
            "Gemini CLI binary here.",
            "Gemini CLI does not wait for SessionEnd hooks; its PreCompress carries no summary, so no "
            "compaction hook is installed.",
        ),
        prepare=_gemini_enabled,
    ),
}


@dataclass(frozen=True)
class Plan:
    path: Path
    before: str | None
    after: str
    command: str
    notes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.before is None or _parsed(self.path, self.before) != json.loads(self.after)

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(
            [line if line.endswith("\n") else line + "\n" for line in old],
            new,
            fromfile=f"{self.path} (now)" if self.before is not None else "/dev/null",
            tofile=f"{self.path} (after)",
        )
        return "".join(lines)


def command_for(client: str) -> str:
    """The command line the hook runs: this ``mneia`` script by its absolute path (not resolved
    through symlinks, so that a pipx link survives reinstalls), else ``python -m mneia.launch``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "mneia" and script.is_file():
        found: str | None = os.path.abspath(script)
    else:
        which = shutil.which("mneia")
        found = os.path.abspath(which) if which else None
    if found:
        return f"{shlex.quote(found)} hook {client}"
    return f"{shlex.quote(sys.executable)} -m mneia.launch hook {client}"


def is_ours(handler: object) -> bool:
    """Whether a handler runs ``mneia hook`` (by whatever path, or as ``python -m mneia.launch hook``)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and ("=" in words[0] or os.path.basename(words[0]) == "env"):  # FOO=1 mneia ..., env ...
        words = words[1:]
    if words[:1] and os.path.basename(words[0]) in ("mneia", "mneia.exe"):
        return words[1:2] == ["hook"]
    if "-m" in words:
        at = words.index("-m")
        return words[at + 1 : at + 3] in (["mneia.launch", "hook"], ["mneia.cli", "hook"])
    return False


def settings_path(client: Client, project_dir: Path | None) -> Path:
    base = project_dir.expanduser().absolute() if project_dir is not None else Path.home()
    return base / client.directory / client.file


def _parsed(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        found = json.loads(text)
    except ValueError as error:
        raise Refused(f"{path} is not JSON ({error}): fix it or move it aside; nothing was written") from None
    if not isinstance(found, dict):
        raise Refused(f"{path} holds a JSON {type(found).__name__}, not an object; nothing was written")
    return found


def merged(client: Client, settings: dict[str, Any], command: str, notes: list[str]) -> dict[str, Any]:
    """``settings`` with ``command`` on each of the client's events (see the module's docstring)."""
    result = copy.deepcopy(settings)
    if client.prepare is not None:
        client.prepare(result, notes)
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise Refused('"hooks" is not an object: not touching it')
    for event, timeout in client.events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise Refused(f'"hooks.{event}" is not a list: not touching it')
        handler = client.handler(command, timeout)
        placed = False
        emptied: list[int] = []
        for position, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            kept = []
            for each in group["hooks"]:
                if not is_ours(each):
                    kept.append(each)
                elif not placed:  # the first of ours becomes the new one, where it was
                    kept.append(handler)
                    placed = True
            if group["hooks"] and not kept:
                emptied.append(position)
            group["hooks"] = kept
        groups[:] = [group for position, group in enumerate(groups) if position not in emptied]
        if not placed:
            groups.append({"hooks": [handler]})
    return result


def plan(client_name: str, project_dir: Path | None = None, command: str | None = None) -> Plan:
    client = CLIENTS[client_name]
    path = settings_path(client, project_dir)
    target = path.resolve() if path.is_symlink() else path
    try:
        before: str | None = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as error:
        raise Refused(f"cannot read {path}: {error}") from None
    settings = _parsed(path, before) if before is not None else {}
    notes: list[str] = []
    command = command or command_for(client_name)
    try:
        after = merged(client, settings, command, notes)
    except Refused as error:
        raise Refused(f"{path}: {error}; nothing was written") from None
    if project_dir is not None:
        notes.append(
            f"The command names this machine's path of mneia: if {path} is shared (committed), a colleague "
            "needs mneia at the same path"
            + (
                " (Claude Code's .claude/settings.local.json is the unshared place)."
                if client.name == "claude-code"
                else "."
            )
        )
    return Plan(
        path=target,
        before=before,
        after=json.dumps(after, indent=_indent(before), ensure_ascii=False) + "\n",
        command=command,
        notes=(*notes, *client.notes),
    )


def _indent(text: str | None) -> int | str:
    """The file's own indentation (its first indented line's), so that the diff shows only the change."""
    for line in (text or "").splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return lead if "\t" in lead else len(lead)
    return 2


def write(found: Plan) -> None:
    mode = 0o644
    try:
        mode = found.path.stat().st_mode & 0o777
    except FileNotFoundError:
        found.path.parent.mkdir(parents=True, exist_ok=True)
    place.atomic_write(found.path, found.after.encode(), mode=mode)


def run(
    client_name: str,
    *,
    project_dir: Path | None = None,
    dry_run: bool = False,
    json_output: bool = False,
    command: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Install (or show, with ``dry_run``) the client's hooks; 0 when done or nothing was needed."""
    out = out or sys.stdout
    client = CLIENTS[client_name]
    found = plan(client_name, project_dir, command)
    changed = found.changed
    if changed and not dry_run:
        write(found)
    events = [event for event, _ in client.events]
    reminder = (
        f"the hook reads MNEIA_URL, MNEIA_TOKEN and MNEIA_PROJECT from the environment {client.title} "
        "starts it with; no token is written to the file: export MNEIA_TOKEN (an agent's token) there."
    )
    if json_output:
        said = {
            "client": client_name,
            "path": str(found.path),
            "command": found.command,
            "events": events,
            "changed": changed,
            "written": changed and not dry_run,
            "dryRun": dry_run,
            "diff": found.diff() if changed else "",
            "notes": [reminder, *found.notes],
        }
        out.write(json.dumps(said, indent=2) + "\n")
        return 0
    runs = f"{', '.join(events[:-1])} and {events[-1]} run {found.command}"
    if not changed:
        out.write(f"mneia: {found.path} already has {runs}: nothing to change\n")
    else:
        out.write(found.diff())
        if dry_run:
            out.write(f"mneia: --dry-run: nothing written; {found.path} would have {runs}\n")
        else:
            out.write(f"mneia: wrote {found.path}: {runs}\n")
    out.write(f"mneia: {reminder}\n")
    for note in found.notes:
        out.write(f"note: {note}\n")
    return 0
