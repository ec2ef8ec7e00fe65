"""importItems, the one write path of every importer (issue 22): idempotent by key, redacted first,
a transcript's words never a ruling (R3/R4), imported history never rewrites an as-of read (R9),
and a complete document's edits and removals become supersessions and retirements (R6, R7)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from tests.graphql import Api, World
from tests.support import assert_code

IMPORT = """mutation($i: ImportInput!) { importItems(input: $i) {
  written unchanged
  session { id externalId deepLink task transcriptStartedAt transcriptEndedAt endedAt
            client { tool version } provenanceMissing }
  writes { key action note
           item { id statement status authority supersedesId
                  provenance { actorKind basis saidAt redacted session { externalId } } }
           proposal { id status } } } }"""
ITEM = """query($id: ID!, $asOf: DateTime) { item(id: $id, asOf: $asOf) {
  id status authority statement supersedesId validFrom provenance { saidAt } } }"""
ITEMS_AS_OF = """query($p: ID!, $asOf: DateTime) { items(projectId: $p, asOf: $asOf) {
  totalCount nodes { id } } }"""
SESSIONS = """query($p: ID!, $e: String, $first: Int, $after: String) {
  sessions(projectId: $p, externalId: $e, first: $first, after: $after) {
    nodes { id externalId task } pageInfo { hasNextPage endCursor } } }"""


def claim(key: str, statement: str, **more: Any) -> dict[str, Any]:
    return {"key": key, "kind": more.pop("kind", "DECISION"), "statement": statement, **more}


def batch(world: World, items: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "projectId": world.project_id,
        "source": more.pop("source", "docs/adr"),
        "origin": more.pop("origin", "DOCUMENT"),
        "items": items,
        **more,
    }


async def run_import(api: Api, token: str, value: dict[str, Any]) -> dict[str, Any]:
    return (await api.run(token, IMPORT, i=value))["importItems"]


async def test_importing_the_same_batch_twice_writes_nothing(api: Api, world: World) -> None:
    items = [claim("adr:0001.md", "Use PostgreSQL"), claim("adr:0002.md", "Use row-level security")]
    first = await run_import(api, world.human.token, batch(world, items))
    assert (first["written"], first["unchanged"]) == (2, 0)
    assert [w["action"] for w in first["writes"]] == ["ASSERTED", "ASSERTED"]
    again = await run_import(api, world.human.token, batch(world, items))
    assert (again["written"], again["unchanged"]) == (0, 2)
    assert [w["item"]["id"] for w in again["writes"]] == [w["item"]["id"] for w in first["writes"]]
    page = await api.run(world.human.token, ITEMS_AS_OF, p=world.project_id, asOf=None)
    assert page["items"]["totalCount"] == 2


async def test_r4_a_document_import_is_the_importers_own_a_transcripts_is_not(api: Api, world: World) -> None:
    doc = await run_import(api, world.human.token, batch(world, [claim("adr:1", "Use PostgreSQL")]))
    assert doc["writes"][0]["item"]["authority"] == "HUMAN_CONFIRMED"
    said = batch(
        world,
        [claim("claude-code:s1:toolu_1", "Retry webhooks three times", kind="FACT")],
        origin="TRANSCRIPT",
        source="s1.jsonl",
        session={"client": {"tool": "claude-code", "version": "2.1.3"}, "externalId": "s1"},
    )
    heard = await run_import(api, world.human.token, said)
    written = heard["writes"][0]["item"]
    # A person importing a transcript does not vouch for what was said in it.
    assert written["authority"] == "AGENT_ASSERTED"
    assert written["provenance"]["actorKind"] == "HUMAN"
    assert written["provenance"]["session"] == {"externalId": "s1"}


async def test_r7_a_transcripts_replacement_of_a_ruling_waits_for_a_human(api: Api, world: World) -> None:
    ruled = (await run_import(api, world.human.token, batch(world, [claim("adr:1", "Use PostgreSQL")])))[
        "writes"
    ][0]["item"]
    said = batch(
        world,
        [claim("t:s1:1", "Use MySQL", supersedesKey=f"id:{ruled['id']}", supersessionReason="cheaper")],
        origin="TRANSCRIPT",
        session={"client": {"tool": "codex"}, "externalId": "s1"},
    )
    result = await run_import(api, world.human.token, said)
    assert result["writes"][0]["action"] == "PROPOSED"
    assert result["writes"][0]["proposal"]["status"] == "PENDING"
    target = (await api.run(world.human.token, ITEM, id=ruled["id"], asOf=None))["item"]
    assert target["status"] == "ACTIVE"
    # The proposal is in the ledger: importing it again proposes nothing more.
    again = await run_import(api, world.human.token, said)
    assert again["writes"][0]["action"] == "UNCHANGED"


async def test_secrets_are_redacted_and_their_kinds_recorded(api: Api, world: World) -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    value = batch(
        world, [claim("t:1", f"Deploy with {key} from CI", details="<private>hunter2</private> ok")]
    )
    written = (await run_import(api, world.agent.token, value))["writes"][0]["item"]
    assert key not in written["statement"]
    assert "AKIA…[redacted aws-access-key]" in written["statement"]
    assert written["provenance"]["redacted"] == ["aws-access-key", "private"]
    # Redaction comes before the digest: the same text imported again is unchanged.
    again = await run_import(api, world.agent.token, value)
    assert again["unchanged"] == 1


async def test_an_edited_key_supersedes_what_it_wrote(api: Api, world: World) -> None:
    first = await run_import(api, world.human.token, batch(world, [claim("adr:7", "Use Redis")]))
    old = first["writes"][0]["item"]
    edited = await run_import(
        api,
        world.human.token,
        batch(world, [claim("adr:7", "Use Redis 7 with TLS")], editReason="edited in 0007.md"),
    )
    write = edited["writes"][0]
    assert write["action"] == "SUPERSEDED"
    assert write["item"]["supersedesId"] == old["id"]
    assert (await api.run(world.human.token, ITEM, id=old["id"], asOf=None))["item"]["status"] == "SUPERSEDED"


async def test_supersedes_key_makes_a_chain_within_one_batch(api: Api, world: World) -> None:
    items = [
        claim("adr:3", "Use cron for jobs"),
        claim("adr:9", "Use a job queue", supersedesKey="adr:3", supersessionReason="cron lost jobs"),
        claim("adr:4", "Use SOAP", retiredReason="rejected in ADR 0004"),
    ]
    writes = (await run_import(api, world.human.token, batch(world, items)))["writes"]
    assert [w["action"] for w in writes] == ["ASSERTED", "SUPERSEDED", "RETIRED"]
    assert writes[1]["item"]["supersedesId"] == writes[0]["item"]["id"]
    assert writes[2]["item"]["status"] == "RETIRED"
    old = (await api.run(world.human.token, ITEM, id=writes[0]["item"]["id"], asOf=None))["item"]
    assert old["status"] == "SUPERSEDED"


async def test_a_complete_document_pairs_edits_and_retires_removals(api: Api, world: World) -> None:
    def rules(*texts: str) -> dict[str, Any]:
        items = [claim(f"rules:CLAUDE.md:{text}", text, kind="CONSTRAINT") for text in texts]
        return batch(world, items, source="CLAUDE.md", document="rules:CLAUDE.md", complete=True)

    first = await run_import(api, world.human.token, rules("Run tests", "Never push to main", "Use uv"))
    ids = [w["item"]["id"] for w in first["writes"]]
    second = await run_import(api, world.human.token, rules("Run tests", "Never force-push to main"))
    actions = {w["key"]: (w["action"], w["item"] and w["item"]["supersedesId"]) for w in second["writes"]}
    assert actions["rules:CLAUDE.md:Run tests"] == ("UNCHANGED", None)
    assert actions["rules:CLAUDE.md:Never force-push to main"] == ("SUPERSEDED", ids[1])
    assert actions["rules:CLAUDE.md:Use uv"][0] == "RETIRED"
    removed = (await api.run(world.human.token, ITEM, id=ids[2], asOf=None))["item"]
    assert removed["status"] == "RETIRED"
    third = await run_import(api, world.human.token, rules("Run tests", "Never force-push to main"))
    assert third["written"] == 0
    # A rule given again after its removal is asserted anew.
    back = await run_import(api, world.human.token, rules("Run tests", "Never force-push to main", "Use uv"))
    assert [w["action"] for w in back["writes"]][-1] == "ASSERTED"


async def test_r9_imported_history_does_not_change_an_earlier_as_of_read(api: Api, world: World) -> None:
    before = datetime.now(UTC).isoformat()
    await asyncio.sleep(0)  # the import's transaction starts after ``before`` by the database's clock
    decided = "2021-03-04T00:00:00+00:00"
    value = batch(world, [claim("adr:1", "Use PostgreSQL", saidAt=decided, validFrom=decided)])
    written = (await run_import(api, world.human.token, value))["writes"][0]["item"]
    assert written["provenance"]["saidAt"] == decided
    then = await api.run(world.human.token, ITEMS_AS_OF, p=world.project_id, asOf=before)
    assert then["items"]["totalCount"] == 0
    now = await api.run(world.human.token, ITEM, id=written["id"], asOf=None)
    assert now["item"]["validFrom"] == decided


async def test_said_at_in_the_future_is_refused_and_nothing_is_written(api: Api, world: World) -> None:
    value = batch(
        world, [claim("adr:1", "Use PostgreSQL"), claim("adr:2", "x", saidAt="2999-01-01T00:00:00Z")]
    )
    answer = await api.post(world.human.token, IMPORT, {"i": value})
    assert_code(answer["errors"][0], "BAD_USER_INPUT")
    assert "input.items[1].saidAt" in answer["errors"][0]["message"]
    page = await api.run(world.human.token, ITEMS_AS_OF, p=world.project_id, asOf=None)
    assert page["items"]["totalCount"] == 0


async def test_bad_batches_name_the_field(api: Api, world: World) -> None:
    twice = batch(world, [claim("k", "a"), claim("k", "b")])
    answer = await api.post(world.human.token, IMPORT, {"i": twice})
    assert_code(answer["errors"][0], "BAD_USER_INPUT")
    assert "input.items[1].key" in answer["errors"][0]["message"]
    unknown = batch(world, [claim("k", "a", supersedesKey="nothing-here")])
    answer = await api.post(world.human.token, IMPORT, {"i": unknown})
    assert "input.items[0].supersedesKey" in answer["errors"][0]["message"]
    many = batch(world, [claim(f"k{n}", "a") for n in range(501)])
    answer = await api.post(world.human.token, IMPORT, {"i": many})
    assert "input.items: at most 500" in answer["errors"][0]["message"]


async def test_a_transcript_session_is_found_again_and_listed(api: Api, world: World) -> None:
    session = {
        "client": {"tool": "claude-code", "version": "2.1.3"},
        "externalId": "abc-123",
        "deepLink": "claude --resume abc-123",
        "task": "fix the webhook retries",
        "startedAt": "2026-11-30T10:00:00Z",
        "endedAt": "2026-11-30T11:00:00Z",
    }
    first = await run_import(
        api,
        world.agent.token,
        batch(world, [claim("c:1", "a", kind="FACT")], origin="TRANSCRIPT", session=session),
    )
    grown = {**session, "endedAt": "2026-11-30T12:00:00Z"}
    items = [claim("c:1", "a", kind="FACT"), claim("c:2", "b", kind="FACT")]
    second = await run_import(api, world.agent.token, batch(world, items, origin="TRANSCRIPT", session=grown))
    assert second["session"]["id"] == first["session"]["id"]
    assert second["session"]["transcriptEndedAt"] == "2026-11-30T12:00:00+00:00"
    assert second["session"]["provenanceMissing"] == []
    assert (second["written"], second["unchanged"]) == (1, 1)
    found = await api.run(world.human.token, SESSIONS, p=world.project_id, e="abc-123", first=5, after=None)
    assert [node["id"] for node in found["sessions"]["nodes"]] == [first["session"]["id"]]
    other = await api.run(world.human.token, SESSIONS, p=world.project_id, e="nope", first=5, after=None)
    assert other["sessions"]["nodes"] == []


async def test_supersedes_key_reaches_a_key_of_an_earlier_request(api: Api, world: World) -> None:
    """Importers send 500 items a request: a chain may cross from one request into the next."""
    await run_import(api, world.human.token, batch(world, [claim("adr:3", "Use cron for jobs")]))
    later = batch(
        world, [claim("adr:9", "Use a job queue", supersedesKey="adr:3", supersessionReason="lost jobs")]
    )
    (write,) = (await run_import(api, world.human.token, later))["writes"]
    assert write["action"] == "SUPERSEDED" and write["item"]["supersedesId"]


async def test_a_changed_confidence_is_an_edit_and_unchanged_writes_name_their_item(
    api: Api, world: World
) -> None:
    first = await run_import(
        api, world.agent.token, batch(world, [claim("t:1", "Retries are idempotent", confidence=0.5)])
    )
    written = first["writes"][0]["item"]
    same = await run_import(
        api, world.agent.token, batch(world, [claim("t:1", "Retries are idempotent", confidence=0.5)])
    )
    assert same["writes"][0]["action"] == "UNCHANGED"
    assert same["writes"][0]["item"]["id"] == written["id"]
    surer = await run_import(
        api, world.agent.token, batch(world, [claim("t:1", "Retries are idempotent", confidence=0.9)])
    )
    assert surer["writes"][0]["action"] == "SUPERSEDED"
    assert surer["writes"][0]["item"]["supersedesId"] == written["id"]


async def test_a_key_whose_target_was_replaced_since_is_asserted_outside_the_chain(
    api: Api, world: World
) -> None:
    """R7: an import never replaces what somebody else wrote since; the source's decision still lands."""
    old = (await run_import(api, world.human.token, batch(world, [claim("adr:3", "Use cron")])))["writes"][0][
        "item"
    ]
    await api.run(
        world.human.token,
        """mutation($t: ID!, $p: ID!) { supersedeItem(input: {targetId: $t, reason: "by hand",
             replacement: {projectId: $p, kind: DECISION, statement: "Use systemd timers"}}) {
             __typename } }""",
        t=old["id"],
        p=world.project_id,
    )
    later = batch(
        world, [claim("adr:9", "Use a job queue", supersedesKey="adr:3", supersessionReason="lost")]
    )
    (write,) = (await run_import(api, world.human.token, later))["writes"]
    assert write["action"] == "ASSERTED" and write["item"]["supersedesId"] is None
    assert "SUPERSEDED" in write["note"]
    edited = batch(world, [claim("adr:3", "Use cron, every minute")])
    (edit,) = (await run_import(api, world.human.token, edited))["writes"]
    assert edit["action"] == "SKIPPED" and edit["item"]["id"] == old["id"]
    assert "the edit was not applied" in edit["note"]
