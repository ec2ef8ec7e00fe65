"""``mneia hooks install claude-code|codex|gemini``: the client's settings file, written fresh or merged.

What must stay true: each client's file gets its session events running ``mneia hook <client>`` in the
shape that client reads; every unrelated key and hook stays where it was; a second run changes nothing
and says so; an older ``mneia hook`` entry is replaced in place, once; the diff is shown before writing;
``--dry-run`` writes nothing; a file that is not JSON is refused whole; no token reaches the file.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mneia.capture import install
from tests.live import PATIENCE

pytestmark = pytest.mark.slow  # runs the mneia command

TOKEN = "mneia_agent_token_that_must_never_reach_a_file"
COMMAND = "/opt/mneia/bin/mneia hook {client}"
FILES = {
    "claude-code": (".claude/settings.json", ["SessionStart", "SessionEnd", "PostCompact"]),
    "codex": (".codex/hooks.json", ["SessionStart", "SessionEnd", "PostCompact"]),
    "gemini": (".gemini/settings.json", ["SessionStart", "SessionEnd"]),
}


def mneia_install(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MNEIA_")}
    env.update(HOME=str(home), MNEIA_TOKEN=TOKEN)
    return subprocess.run(
        [sys.executable, "-m", "mneia.launch", "hooks", "install", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=PATIENCE,
        check=False,
    )


def installed(client: str, project: Path, **options: Any) -> str:
    out = io.StringIO()
    assert (
        install.run(client, project_dir=project, command=COMMAND.format(client=client), out=out, **options)
        == 0
    )
    return out.getvalue()


def handlers(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [handler for group in settings["hooks"][event] for handler in group["hooks"]]


@pytest.mark.parametrize("client", sorted(FILES))
def test_a_fresh_file_runs_the_hook_on_the_clients_session_events(client: str, tmp_path: Path) -> None:
    done = mneia_install(client, "--project-dir", str(tmp_path), home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    name, events = FILES[client]
    path = tmp_path / name
    settings = json.loads(path.read_text())
    assert sorted(settings["hooks"]) == sorted(events)
    for event in events:
        [handler] = handlers(settings, event)
        assert handler["type"] == "command"
        words = shlex.split(handler["command"])
        assert words[-2:] == ["hook", client]
        assert Path(words[0]).is_absolute()  # the running script (or python -m mneia.launch), by path
        assert isinstance(handler["timeout"], int)
        assert "matcher" not in settings["hooks"][event][0]  # every source and reason
    if client == "gemini":
        assert settings["hooksConfig"] == {"enabled": True}
        assert handlers(settings, "SessionStart")[0]["name"] == "mneia"
        assert handlers(settings, "SessionStart")[0]["timeout"] >= 1000  # milliseconds
    if client == "codex":
        assert handlers(settings, "SessionEnd")[0]["timeout"] <= 3  # Codex caps SessionEnd at 3 s
        assert "codex_hooks = true" in done.stdout and "trust" in done.stdout
    assert f"+++ {path} (after)" in done.stdout  # the diff, before writing
    assert f"mneia: wrote {path}" in done.stdout
    assert "no token is written to the file" in done.stdout
    assert TOKEN not in path.read_text() and TOKEN not in done.stdout
    assert not (tmp_path / "home" / name).exists()


def test_without_a_project_dir_it_writes_the_users_file(tmp_path: Path) -> None:
    done = mneia_install("claude-code", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["path"] == str(tmp_path / ".claude" / "settings.json")
    assert said["written"] is True and said["changed"] is True and said["diff"].startswith("--- /dev/null")
    assert said["events"] == ["SessionStart", "SessionEnd", "PostCompact"]
    assert (tmp_path / ".claude" / "settings.json").exists()


def test_merging_keeps_every_unrelated_key_and_hook_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {"type": "command", "command": "~/bin/notify-start.sh"}
    lint = {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "ruff format $FILE"}]}
    original = {
        "model": "opus",
        "permissions": {"allow": ["Bash(git status)"]},
        "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [theirs]}], "PostToolUse": [lint]},
    }
    path.write_text(json.dumps(original, indent=4))
    first = installed("claude-code", tmp_path)
    assert "--- " in first and "+++ " in first
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus" and settings["permissions"] == original["permissions"]
    assert settings["hooks"]["PostToolUse"] == [lint]
    assert settings["hooks"]["SessionStart"][0] == {
        "matcher": "startup",
        "hooks": [theirs],
    }  # first, as it was
    assert handlers(settings, "SessionStart")[1]["command"] == COMMAND.format(client="claude-code")
    written = path.read_text()
    again = installed("claude-code", tmp_path)
    assert f"mneia: {path} already has SessionStart, SessionEnd and PostCompact run" in again
    assert "nothing to change" in again and "+++" not in again
    assert path.read_text() == written


def test_an_older_mneia_hook_entry_is_replaced_in_place_once(tmp_path: Path) -> None:
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    other = {"type": "command", "command": "python3 .codex/hooks/session_start.py", "timeout": 30}
    old = {"type": "command", "command": "/old/venv/bin/mneia hook codex", "timeout": 60}
    older = {"type": "command", "command": "python -m mneia.launch hook codex"}
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "SessionStart": [{"hooks": [other, old]}, {"hooks": [older]}],
                    "Stop": [{"hooks": [other]}],
                }
            }
        )
    )
    installed("codex", tmp_path)
    settings = json.loads(path.read_text())
    new = COMMAND.format(client="codex")
    assert settings["hooks"]["SessionStart"] == [
        {"hooks": [other, {"type": "command", "command": new, "timeout": 10}]}
    ]
    assert settings["hooks"]["Stop"] == [{"hooks": [other]}]
    assert [h["command"] for h in handlers(settings, "SessionEnd")] == [new]


def test_dry_run_shows_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"theme": "GitHub"}\n')
    done = mneia_install("gemini", "--project-dir", str(tmp_path), "--dry-run", home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert f"--- {path} (now)" in done.stdout and '+  "hooksConfig": {' in done.stdout
    assert "--dry-run: nothing written" in done.stdout
    assert path.read_text() == '{"theme": "GitHub"}\n'
    fresh = mneia_install("claude-code", "--project-dir", str(tmp_path), "--dry-run", home=tmp_path / "home")
    assert fresh.returncode == 0 and not (tmp_path / ".claude").exists()


def test_gemini_hooks_left_disabled_by_the_user_stay_so_and_it_says_so(tmp_path: Path) -> None:
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooksConfig": {"enabled": False}}))
    said = installed("gemini", tmp_path)
    assert json.loads(path.read_text())["hooksConfig"] == {"enabled": False}
    assert "hooksConfig.enabled is false in this file" in said


@pytest.mark.parametrize(
    "content", ["{ not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"SessionStart": {"hooks": []}}}']
)
def test_a_file_it_cannot_merge_is_refused_in_one_line_and_left_alone(content: str, tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    done = mneia_install("claude-code", "--project-dir", str(tmp_path), home=tmp_path / "home")
    assert done.returncode == 1
    assert done.stdout == "" and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"mneia: {path}") and "nothing was written" in line
    assert path.read_text() == content


def test_a_symlinked_settings_file_is_written_through_the_link(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text("{}")
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    installed("claude-code", tmp_path)
    assert link.is_symlink()
    assert "SessionStart" in json.loads(dotfiles.read_text())["hooks"]


def test_what_counts_as_an_older_mneia_hook() -> None:
    assert install.is_ours({"command": "/home/a/.local/bin/mneia hook gemini"})
    assert install.is_ours({"command": "'/path with space/mneia' hook codex"})
    assert install.is_ours({"command": "/usr/bin/python3 -m mneia.launch hook claude-code"})
    assert not install.is_ours({"command": "mneia mcp"})
    assert not install.is_ours({"command": "echo mneia hook"})
    assert not install.is_ours({"command": "git hook"})
    assert not install.is_ours({"type": "http", "url": "https://example.com/hook"})
