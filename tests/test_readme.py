"""The walkthroughs, run against the real API so that they cannot drift.

The README's is shell: its ```bash blocks are pasted, exactly as written,
into one bash process beside a real server (uvicorn on a fresh, migrated
database), and each block's output must read as its ``#>`` lines say, where
``…`` stands for whatever differs from run to run (ids, dates).

docs/api.md's is GraphQL: each ```graphql block starts with a comment line
naming who sends it (``as:``), its ``variables:`` (``<NAME>`` placeholders are
filled from earlier ``keep:`` results) and, optionally, ``expect: CODE`` for
a block that must fail with that error code.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from mneia.app import create_app
from mneia.config import app_url
from mneia.rehydration.tokens import count as tokens_of
from mneia.storage import migration
from mneia.storage.database import create_engine
from tests.database import scratch_database
from tests.graphql import Api
from tests.live import PATIENCE, cli_env, uvicorn_serving

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
API_PAGE = (ROOT / "docs" / "api.md").read_text()
TEST_COMMAND = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'

BLOCK = re.compile(r"```graphql\n(# as:[^\n]*)\n(.*?)```", re.S)
HEADER = re.compile(r"(\w+):\s*(.*?)(?=\s{2,}\w+:|$)")


def _header(line: str) -> dict[str, str]:
    return {key: value.strip() for key, value in HEADER.findall(line.lstrip("# "))}


def _dig(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[int(part)] if part.isdigit() else data[part]
    return data


def _fill(raw: str, kept: dict[str, str]) -> dict[str, Any]:
    return json.loads(re.sub(r"<(\w+)>", lambda m: kept[m.group(1)], raw)) if raw else {}


SHELL_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
WILDCARD = "…"


def walkthrough(readme: str) -> list[str]:
    """The ```bash blocks of the README's walkthrough section, in order."""
    start = readme.index("\n## A five-minute walkthrough\n")
    end = readme.find("\n## ", start + 1)
    return SHELL_BLOCK.findall(readme[start : end if end > 0 else None])


def expected_output(block: str) -> list[str]:
    """A block's ``#>`` lines: what a person sees after pasting it."""
    return [
        line[3:] if line.startswith("#> ") else line[2:]
        for line in block.splitlines()
        if line.startswith("#>")
    ]


def reads_as(shown: list[str], got: list[str]) -> bool:
    """``got`` is ``shown`` line for line, ``…`` in a shown line standing for any text."""
    if len(shown) != len(got):
        return False
    patterns = (".*?".join(map(re.escape, line.split(WILDCARD))) for line in shown)
    return all(re.fullmatch(pattern, line) for pattern, line in zip(patterns, got, strict=True))


def test_expected_output_reads_with_wildcards() -> None:
    """The matching itself: a wildcard stands for any text within a line, and nothing else is loose."""
    assert reads_as(['{"id": "…"}', "done"], ['{"id": "01a2"}', "done"])
    assert not reads_as(['{"id": "…"}'], ['{"id": "01a2"}', "extra line"])
    assert not reads_as(["a … c"], ["a b d"])
    assert not reads_as(["exact"], ["exact!"])
    assert expected_output('x=1\n#> {"a": 1}\n#>\n# a comment\n') == ['{"a": 1}', ""]


def _stand_in_venv(scratch: Path) -> None:
    """``. .venv/bin/activate`` in the scratch directory puts this interpreter's ``mneia`` first."""
    bin_dir = scratch / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    mneia = bin_dir / "mneia"
    mneia.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m mneia.cli "$@"\n')
    mneia.chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"\n')


async def test_readme_shell_walkthrough_pastes_as_shown(server: str, tmp_path: Path) -> None:
    """Every line of the README's walkthrough, pasted in order into one shell, prints what it shows."""
    blocks = walkthrough(README)
    assert len(blocks) >= 7, "the walkthrough lost its steps"
    assert all(map(expected_output, blocks)), "every step shows what it prints"
    marker = "@@ mneia walkthrough block {} @@"
    script = "exec 2>&1\n" + "".join(f"echo '{marker.format(i)}'\n{block}" for i, block in enumerate(blocks))
    _stand_in_venv(tmp_path)
    async with scratch_database(server) as admin:
        await asyncio.to_thread(migration.upgrade, admin)
        engine = create_engine(app_url(admin), pool_size=3)
        try:
            async with uvicorn_serving(create_app(engine, dispose_engine=False)) as port:
                env = cli_env(tmp_path, DATABASE_URL=admin, MNEIA_URL=f"http://127.0.0.1:{port}")
                for name in ("MNEIA_TOKEN", "MNEIA_PROJECT", "BASH_ENV", "ENV"):
                    env.pop(name, None)
                shell = await asyncio.create_subprocess_exec(
                    "bash",
                    "--noprofile",
                    "--norc",
                    "-s",
                    cwd=tmp_path,
                    env=env,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
                out, _ = await asyncio.wait_for(shell.communicate(script.encode()), PATIENCE)
        finally:
            await engine.dispose()
    printed = re.split(r"^@@ mneia walkthrough block (\d+) @@\n", out.decode(), flags=re.M)[1:]
    got = {int(number): text.splitlines() for number, text in zip(printed[::2], printed[1::2], strict=True)}
    assert sorted(got) == list(range(len(blocks))), out.decode()
    for number, block in enumerate(blocks):
        shown = expected_output(block)
        assert reads_as(shown, got[number]), (
            f"step {number + 1} of the README's walkthrough printed\n"
            + "\n".join(got[number])
            + "\nwhere it shows\n"
            + "\n".join(shown)
        )


def test_api_page_has_the_walkthrough_blocks() -> None:
    blocks = BLOCK.findall(API_PAGE)
    assert len(blocks) >= 8, "docs/api.md lost its blocks"


async def test_api_page_walkthrough_results(api: Api) -> None:
    _, alice = await api.bootstrap("alice")
    tokens = {"alice": alice.token}
    kept: dict[str, str] = {}
    answers: dict[str, Any] = {}
    for header_line, operation in BLOCK.findall(API_PAGE):
        header = _header(header_line)
        token = tokens[header["as"]]
        variables = _fill(header.get("variables", ""), kept)
        if "expect" in header:
            error = await api.fail(token, operation, **variables)
            assert error["extensions"]["code"] == header["expect"], error
            continue
        data = await api.run(token, operation, **variables)
        answers.update(data)
        for keep in filter(None, (part.strip() for part in header.get("keep", "").split(","))):
            path, name = (piece.strip() for piece in keep.split(" as "))
            kept[name] = _dig(data, path)
            if path.endswith(".token"):  # a new actor's token: later blocks act ``as:`` it
                tokens[name.lower()] = kept[name]

    # The item graph: what the walkthrough promises it shows.
    node = answers["items"]["nodes"][0]
    assert answers["items"]["totalCount"] == 1
    assert node["authority"] == "HUMAN_CONFIRMED"
    assert node["loadBearing"] is True
    assert node["confirmation"]["by"]["name"] == "alice"
    assert node["provenance"]["assertedBy"] == {"name": "claude-code", "kind": "AGENT"}
    assert node["provenance"]["partial"] is True
    assert node["provenance"]["missing"] == ["deepLink"]
    assert node["provenance"]["session"]["client"] == {"tool": "claude-code", "version": "1.0.98"}
    assert node["rendered"].startswith("[human-confirmed · alice · ")
    assert "asserted by claude-code 1.0.98" in node["rendered"]

    # Change and conflict: the agent's replacement waited for Alice, then kept the guarantee.
    assert answers["supersedeItem"]["__typename"] == "PendingConfirmation"
    accepted = answers["decideProposal"]
    assert accepted["status"] == "ACCEPTED"
    assert accepted["result"]["authority"] == "HUMAN_CONFIRMED"
    assert accepted["result"]["loadBearing"] is True
    assert accepted["result"]["provenance"]["assertedBy"]["name"] == "claude-code"
    assert accepted["result"]["confirmation"]["by"]["name"] == "alice"
    assert [link["status"] for link in accepted["result"]["chain"]] == ["SUPERSEDED", "ACTIVE"]
    disputed = answers["assertItem"]
    assert disputed["status"] == "DISPUTED"
    assert disputed["rendered"].startswith("[DISPUTED · contradicts ")
    resolved = answers["resolveDispute"]
    assert resolved["status"] == "RESOLVED"
    assert resolved["keptItem"]["status"] == "ACTIVE"
    assert resolved["item"]["status"] == "RETIRED"

    # Time (R9): at the moment Alice ruled, the replacement accepted later did not exist.
    then = answers["then"]
    assert (then["status"], then["authority"], then["loadBearing"]) == ("ACTIVE", "HUMAN_CONFIRMED", True)
    assert then["supersededBy"] is None
    assert then["chain"] == [{"statement": "Refunds must never exceed the captured amount"}]
    assert then["proposals"] == [{"kind": "LOAD_BEARING", "status": "ACCEPTED"}]
    assert [event["kind"] for event in then["events"]] == [
        "ASSERTED",
        "LOAD_BEARING_SUGGESTED",
        "CONFIRMED",
        "LOAD_BEARING_SET",
    ]
    assert answers["replacementThen"] is None
    now = answers["now"]
    assert now["status"] == "SUPERSEDED"
    assert now["supersededBy"] == {
        "statement": "A refund must never exceed the amount of the capture it refunds"
    }
    assert {"kind": "SUPERSESSION", "status": "ACCEPTED"} in now["proposals"]

    # Rehydration (R11): the rule is in whatever the task and budget; what it replaced is named.
    rule = "A refund must never exceed the amount of the capture it refunds"
    guaranteed = answers["guaranteed"]
    assert guaranteed["overBudget"] is True and guaranteed["encoding"] == "cl100k_base"
    assert [(e["reason"], e["score"], e["item"]["statement"]) for e in guaranteed["entries"]] == [
        ("GUARANTEED", 0.0, rule)
    ]
    chosen = answers["slice"]
    assert chosen["overBudget"] is False and chosen["tokensUsed"] <= 400
    assert [(e["reason"], e["item"]["statement"]) for e in chosen["entries"]] == [("GUARANTEED", rule)]
    (note,) = chosen["supersessions"]
    assert note["previous"]["statement"] == "Refunds must never exceed the captured amount"
    assert (note["replacement"]["statement"], note["reason"]) == (
        rule,
        "Partial captures: the limit is per capture",
    )
    lines = chosen["rendered"].splitlines()
    assert lines[0] == "## Constraints" and lines[1].startswith("[human-confirmed · alice · ")
    assert lines[2] == "## Ruled out recently (do not propose again)"
    assert "because: Partial captures: the limit is per capture" in lines[3]
    assert "shipping fee" not in chosen["rendered"], "the disputed assertion was retired"

    # Stop and resume (R12): the agent's checkpoint, its retry, Alice's resumption, another agent's.
    left = answers["checkpoint"]
    assert left["session"]["endedAt"] is not None
    assert [i["statement"] for i in left["itemsAsserted"]] == [
        "Refunds must never exceed the captured amount",
        rule,
        "A partial refund names the capture it refunds",
    ]
    assert left["itemsAsserted"][2]["authority"] == "AGENT_ASSERTED"
    (ruled_out,) = left["supersessions"]
    assert (ruled_out["replacement"]["statement"], ruled_out["reason"]) == (
        rule,
        "Partial captures: the limit is per capture",
    )
    assert [(c["kind"], c["status"]) for c in left["pendingConfirmations"]] == [("LOAD_BEARING", "PENDING")]
    assert left["tokens"] == tokens_of(left["rendered"])
    assert left["rendered"].startswith("# Handoff: payments\nLeft by claude-code 1.0.98 (agent claude-code) ")
    assert answers["retry"]["id"] == left["id"], "a retry with the key returns the same handoff"
    assert answers["latestHandoff"] == {
        "id": left["id"],
        "createdBy": {"name": "claude-code", "kind": "AGENT"},
    }
    back = answers["resume"]
    assert back["handoff"]["id"] == left["id"] and back["overBudget"] is False
    assert back["rendered"].startswith(
        left["rendered"] + "# Project memory for the task: Release partial refunds\n"
    )
    assert back["tokensUsed"] == tokens_of(back["rendered"]) <= back["tokenBudget"] == 1200
    assert [(e["reason"], e["item"]["statement"]) for e in back["slice"]["entries"]] == [("GUARANTEED", rule)]
    tiny = answers["tiny"]
    assert tiny["overBudget"] is True and tiny["handoff"]["id"] == left["id"]
    assert tiny["slice"]["tokenBudget"] == 0
    assert [(e["reason"], e["item"]["statement"]) for e in tiny["slice"]["entries"]] == [("GUARANTEED", rule)]


def test_readme_test_command_is_what_ci_runs() -> None:
    assert TEST_COMMAND in README
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()


def test_the_rules_the_tests_cite_are_the_contracts() -> None:
    """docs/RULES.md is the contract's rules (R1-R15) word for word, then R16-R19 merged from its
    privacy part (issue 23), each named there: for readers of this repository alone."""
    shared = ROOT.parent / "shared" / "contract"
    if not (shared / "RULES.md").exists():
        pytest.skip(f"the contract is not beside this checkout ({shared})")
    ours = (ROOT / "docs" / "RULES.md").read_text()
    assert ours.startswith((shared / "RULES.md").read_text())
    privacy = (shared / "privacy.graphql").read_text()
    for rule in ("R16", "R17", "R18", "R19"):
        assert f"**{rule} " in ours and f"#   {rule} " in privacy
