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

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mneia.rehydration.tokens import count as tokens_of
from tests import walkthrough
from tests.graphql import Api
from tests.support import SHARED
from tests.walkthrough import expected_output, reads_as

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
API_PAGE = (ROOT / "docs" / "api.md").read_text()
TEST_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]"'
    " && .venv/bin/python -m pytest -n 2 --dist loadfile"
)

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


def test_expected_output_reads_with_wildcards() -> None:
    """The matching itself: ``…`` is any text within a line, or alone any number of lines; nothing else
    is loose."""
    assert reads_as(['{"id": "…"}', "done"], ['{"id": "01a2"}', "done"])
    assert not reads_as(['{"id": "…"}'], ['{"id": "01a2"}', "extra line"])
    assert not reads_as(["a … c"], ["a b d"])
    assert not reads_as(["exact"], ["exact!"])
    assert not reads_as(["a…"], ["ab", "c"]), "a wildcard within a line stays within it"
    assert reads_as(["…", "wrote x", "…"], ["+ diff", "+ more", "wrote x", "note"])
    assert reads_as(["…", "wrote x"], ["wrote x"])
    assert not reads_as(["…", "wrote x"], ["wrote y"])
    assert expected_output('x=1\n#> {"a": 1}\n#>\n# a comment\n') == ['{"a": 1}', ""]


async def test_readme_shell_walkthrough_pastes_as_shown(server: str, tmp_path: Path) -> None:
    """Every line of the README's walkthrough, pasted in order into one shell, prints what it shows."""
    steps = walkthrough.blocks(README, "## A five-minute walkthrough")
    assert len(steps) >= 7, "the walkthrough lost its steps"
    assert all(map(expected_output, steps)), "every step shows what it prints"
    printed = await walkthrough.pasted(server, tmp_path, steps)
    assert walkthrough.mismatches("the README's walkthrough", steps, printed) == []


CAPTURE_PAGE = (ROOT / "docs" / "capture.md").read_text()
EXPORT_PAGE = (ROOT / "docs" / "export.md").read_text()
SESSION = SHARED / "clients" / "claude-code" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
ADR = """# 1. Refunds are idempotent

Date: 2026-11-20

## Status

Accepted

## Context

A retried refund request must not refund twice.

## Decision

Every refund request carries an idempotency key, and the PSP call reuses it.
"""
RULES = """# Payments

- Never log card numbers, not even masked.
- Run `make check` before every commit.
"""


async def test_capture_and_export_quick_starts_paste_as_shown(server: str, tmp_path: Path) -> None:
    """docs/capture.md's quick start, then docs/export.md's, pasted after the README's walkthrough in the
    same shell: the hooks installed, a real Claude Code session imported, an ADR and a rules file imported
    as a human; the project exported and restored into another workspace."""
    if not SESSION.exists():
        pytest.skip(f"the real Claude Code session is not beside this checkout ({SESSION})")
    home = tmp_path / "home"
    repository = home / "src" / "payments"
    (repository / "docs" / "adr").mkdir(parents=True)
    (repository / "docs" / "adr" / "0001-idempotent-refunds.md").write_text(ADR)
    (repository / "CLAUDE.md").write_text(RULES)
    sessions = home / ".claude" / "projects" / "-home-src-payments"
    sessions.mkdir(parents=True)
    (sessions / SESSION.name).write_bytes(SESSION.read_bytes())
    readme = walkthrough.blocks(README, "## A five-minute walkthrough")
    pages = [
        *walkthrough.blocks(CAPTURE_PAGE, "## Quick start"),
        *walkthrough.blocks(EXPORT_PAGE, "## Quick start"),
    ]
    assert len(pages) == 2 and all(map(expected_output, pages)), "each quick start shows what it prints"
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    printed = await walkthrough.pasted(server, checkout, [*readme, *pages], env={"HOME": str(home)})
    assert walkthrough.mismatches("the README, capture and export pages", [*readme, *pages], printed) == []
    settings = repository / ".claude" / "settings.json"
    assert "hook claude-code" in settings.read_text(), "the hooks are installed in the repository"
    exported = [json.loads(line) for line in (repository / "payments.jsonl").read_text().splitlines()]
    assert exported[-1]["type"] == "mneia-export-end"
    assert sum(record["type"] == "item" for record in exported) == 5


INDEX_PAGE = (ROOT / "docs" / "index.md").read_text()


async def test_the_pages_first_requests_paste_as_shown(server: str, tmp_path: Path) -> None:
    """docs/api.md's first request (curl, after the README's walkthrough minted ``$ALICE``) and the
    bootstrap of docs/index.md's start, whose first line is the README's own, each pasted into bash
    beside a real server."""
    readme = walkthrough.blocks(README, "## A five-minute walkthrough")
    (curl,) = walkthrough.blocks(API_PAGE, "## A five-minute walkthrough")
    start, bootstrap = walkthrough.blocks(INDEX_PAGE, "## Start")
    assert start == walkthrough.blocks(README, "## Start")[0]
    assert expected_output(curl) and expected_output(bootstrap), "each block shows what it prints"
    (tmp_path / "api").mkdir()
    printed = await walkthrough.pasted(server, tmp_path / "api", [*readme, curl])
    assert walkthrough.mismatches("the README, then docs/api.md", [*readme, curl], printed) == []
    (tmp_path / "index").mkdir()
    printed = await walkthrough.pasted(server, tmp_path / "index", [bootstrap])
    assert walkthrough.mismatches("docs/index.md", [bootstrap], printed) == []
    made = json.loads(printed[0][0])
    assert set(made) == {"workspaceId", "actorId", "token", "region"} and made["token"].startswith("mneia_")


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
    shared = SHARED / "contract"
    if not (shared / "RULES.md").exists():
        pytest.skip(f"the contract is not beside this checkout ({shared})")
    ours = (ROOT / "docs" / "RULES.md").read_text()
    assert ours.startswith((shared / "RULES.md").read_text())
    privacy = (shared / "privacy.graphql").read_text()
    for rule in ("R16", "R17", "R18", "R19"):
        assert f"**{rule} " in ours and f"#   {rule} " in privacy
