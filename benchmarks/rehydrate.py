"""Rehydration benchmark: how fast ``rehydrate`` answers, and what a slice holds beside three baselines.

**Latency.** One project grows to 1,000, 10,000 and 100,000 items (50 of
them ACTIVE load-bearing constraints, a share of them replaced recently,
disputed, retired or decaying), its text drawn from a 4,000-word
vocabulary with Zipf frequencies. At each size one httpx client asks, over
HTTP and sequentially, for a 4,000-token slice, cycling through tasks whose
words are common, middling and rare (the planner takes different paths for
them), as Alice or an agent; then, in this process, the candidate SQL alone
for the same tasks: every statement ``slice.assemble`` sends for its
candidates (the first read and any refill), timed inside it, in a
transaction bound to the reader. Targets at 100,000 items: rehydrate p95 <=
30 ms and rehydrate / SQL, p95, <= 2 (measured in the same run).

**Quality**, in the same run, for Mneia and three baselines implemented here
on the same items, each filling the same token budget with each item shown
as Mneia shows it (its ``rendered`` line, authority first: the rows compare
what is chosen, at the same cost per item; tiktoken cl100k_base):

- *rules, then search*: search that keeps R11's guarantee: every ACTIVE
  load-bearing constraint first (all of them, whatever they cost), then the
  rest by rank in the budget they leave;
- *search*: every item of the project (whatever its status), ranked by
  PostgreSQL's ``ts_rank`` against the task's words (the relevance Mneia
  uses too), taken in that order while they fit;
- *newest first*: every item, newest first, taken while they fit;

on (a) a generated corpus (fixed seed): three topics, each with items a
task needs (of every kind), decisions replaced recently and long ago,
disputed and stale items on the same topic, and 2,000 unrelated items, some
sharing a word with the tasks; six load-bearing constraints share no word
with any task; and (b) the Compliant Kubernetes decision log
(``benchmarks/data/compliantkubernetes-adr``, Apache-2.0), 41 ADRs asserted
by a human in their order, replacements written with ``supersedeItem``,
with six tasks and the records a person judged relevant to each. Columns:

- used / budget: the tokens shown, of the budget;
- load-bearing recall: the ACTIVE load-bearing constraints in the output;
- superseded entries: SUPERSEDED items shown as if current (per task);
- ruled out named: the replaced items the output names as replaced, with
  what replaced them (for a baseline, generously: the old item and its
  replacement both in its output); of the replacements asserted in the
  last 30 days on the task's topic (generated) or relevant to it (ADRs);
- relevant recall: the items the task needs that are in the output;

and a mean over the budgets. Then issue 20's targets for Mneia, at every
budget from 1,000 tokens: relevant recall at least that of *rules, then
search*; at least 85% of the budget used by every slice that left anything
out; 95% relevant recall where the whole project fits; and every ruled-out
option the packing rule promises named (as many of the task's notes as fit
together beside the rules, within their share of the budget).

    .venv/bin/python benchmarks/rehydrate.py                                  # full
    .venv/bin/python benchmarks/rehydrate.py --sizes 1000,5000 --samples 40   # smoke

The database server comes from ``DATABASE_URL`` (else
``MNEIA_BENCH_DATABASE_URL``, else an embedded PostgreSQL), as for the other
benchmarks; ``--keep`` keeps the bench database.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
from common import (
    HEADER,
    KINDS,
    BenchmarkBroken,
    Series,
    bind,
    gql,
    insert_items,
    on_fresh_database,
    owner_transaction,
    running_server,
    timed,
    vacuum_analyze,
    weighted,
)
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from mneia.config import app_url
from mneia.rehydration import candidates, profile, render, slice, tokens
from mneia.resolvers.request.context import Context
from mneia.storage import workspace
from mneia.storage.database import Tx, create_engine
from mneia.storage.ids import new_id

LATENCY_TARGET_MS = 30.0
RATIO_TARGET = 2.0
LATENCY_BUDGET = 4000
LOAD_BEARING = 50
ADRS = Path(__file__).resolve().parent / "data" / "compliantkubernetes-adr" / "adrs.json"

SLICE = """query Rehydrate($i: RehydrateInput!) { rehydrate(input: $i) {
  tokensUsed overBudget encoding rendered
  entries { item { id status } reason score tokens }
  supersessions { previous { id } replacement { id } reason at }
  omitted { kind count } leftOut { kind reason count } supersessionsLeftOut } }"""


# ---------------------------------------------------------------------------
# Words


SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "qu", "be", "do", "fi", "gu")
SYLLABLES += ("ha", "ji", "ke", "lu", "ma", "no", "pe", "ri", "so", "tu", "va", "we", "xi", "yo", "ze")


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """``size`` distinct made-up words, most frequent first (Zipf: the nth is used ~1/n as often)."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class Words:
    words: list[str]
    cumulative: list[float] = field(init=False)

    def __post_init__(self) -> None:
        total = 0.0
        self.cumulative = []
        for rank in range(len(self.words)):
            total += 1.0 / (rank + 1)
            self.cumulative.append(total)

    def sentence(self, rng: random.Random, low: int, high: int) -> str:
        chosen = rng.choices(self.words, cum_weights=self.cumulative, k=rng.randint(low, high))
        return " ".join(chosen).capitalize()


# ---------------------------------------------------------------------------
# A workspace to measure in


@dataclass(frozen=True)
class Member:
    id: uuid.UUID
    token: str


@dataclass
class World:
    workspace_id: uuid.UUID
    alice: Member
    agent: Member
    session: uuid.UUID
    projects: dict[str, uuid.UUID] = field(default_factory=dict)


async def build_world(http: httpx.AsyncClient, admin: AsyncEngine) -> World:
    made = await workspace.bootstrap(admin, f"rehydrate-{uuid.uuid4().hex[:6]}", "alice")
    alice = Member(made.actor_id, made.token)
    created = await gql(
        http, alice.token, 'mutation { createActor(kind: AGENT, name: "claude-code") { actor { id } token } }'
    )
    agent = Member(uuid.UUID(created["createActor"]["actor"]["id"]), created["createActor"]["token"])
    world = World(made.workspace_id, alice, agent, uuid.uuid4())
    for name in ("latency", "generated", "adr"):
        project = await gql(
            http, alice.token, "mutation($n: String!) { createProject(name: $n) { id } }", n=name
        )
        world.projects[name] = uuid.UUID(project["createProject"]["id"])
        await gql(
            http,
            alice.token,
            "mutation($p: ID!, $a: ID!) { addProjectMember(projectId: $p, actorId: $a) { id } }",
            p=str(world.projects[name]),
            a=str(agent.id),
        )
    started = await gql(
        http,
        agent.token,
        "mutation($i: StartSessionInput!) { startSession(input: $i) { id } }",
        i={
            "projectId": str(world.projects["latency"]),
            "client": {"tool": "claude-code", "version": "1.0.98"},
        },
    )
    world.session = uuid.UUID(started["startSession"]["id"])
    return world


def row(
    world: World,
    project: uuid.UUID,
    kind: str,
    statement: str,
    asserted_at: datetime,
    *,
    human: bool,
    rng: random.Random,
    **fields: Any,
) -> dict[str, Any]:
    """An item row for common.insert_items: Alice's (confirmed) or the agent's (in its session)."""
    asserter = world.alice if human else world.agent
    confirmed = fields.pop("confirmed", False) or human
    values: dict[str, Any] = {
        "id": new_id(),
        "project_id": project,
        "kind": kind,
        "statement": statement,
        "details": None,
        "basis": None,
        "confidence": None if human else round(rng.uniform(0.5, 1.0), 2),
        "status": "ACTIVE",
        "status_reason": None,
        "scope": "PROJECT",
        "grants": "",
        "asserted_by": asserter.id,
        "asserted_at": asserted_at,
        "session_id": None if human else world.session,
        "decay_after": None,
        "load_bearing": False,
        "load_bearing_set_by": None,
        "load_bearing_set_at": None,
        "confirmed_by": world.alice.id if confirmed else None,
        "confirmed_at": asserted_at if confirmed else None,
    }
    values.update(fields)
    if values["load_bearing"]:
        values.update(load_bearing_set_by=world.alice.id, load_bearing_set_at=values["confirmed_at"])
    return values


_DISPUTES = text(
    "INSERT INTO disputes (workspace_id, id, project_id, item_id, contested_id, raised_by, raised_at, reason)"
    " SELECT CAST(:ws AS uuid), d.id, CAST(:project AS uuid), d.item, d.contested, CAST(:by AS uuid), now(),"
    " 'contradicts' FROM unnest(CAST(:ids AS uuid[]), CAST(:items AS uuid[]), CAST(:contested AS uuid[]))"
    " AS d(id, item, contested)"
)
_MARK = text(
    "UPDATE items SET status = CAST(:status AS text), status_reason = :reason"
    " WHERE workspace_id = CAST(:ws AS uuid) AND id = ANY (CAST(:ids AS uuid[]))"
)


@dataclass
class Batch:
    """Rows to load in one transaction, and what to do to them afterwards."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[uuid.UUID] = field(default_factory=list)  # marked SUPERSEDED after their replacements
    retired: list[uuid.UUID] = field(default_factory=list)
    disputes: list[tuple[uuid.UUID, uuid.UUID]] = field(default_factory=list)  # (disputed item, contested)


async def load(admin: AsyncEngine, world: World, project: uuid.UUID, batch: Batch) -> None:
    """As the owner role bound to each writer in turn: the policies check every row, the trigger logs it."""
    ws = str(world.workspace_id)
    async with owner_transaction(admin, world.workspace_id, world.alice.id) as tx:
        ordered = sorted(batch.rows, key=lambda r: (r.get("supersedes_id") is not None, r["asserted_at"]))
        previous = [r for r in ordered if r.get("supersedes_id") is None]
        replacements = [r for r in ordered if r.get("supersedes_id") is not None]
        for part in (previous, replacements):
            by_writer: dict[uuid.UUID, list[dict[str, Any]]] = {}
            for item in part:
                writer = world.alice.id if item["confirmed_by"] else item["asserted_by"]
                by_writer.setdefault(writer, []).append(item)
            for writer, rows in by_writer.items():
                await bind(tx, world.workspace_id, writer)
                await insert_items(tx, rows)
        await bind(tx, world.workspace_id, world.agent.id)
        if batch.disputes:
            await tx.execute(
                _DISPUTES,
                {
                    "ws": ws,
                    "project": str(project),
                    "by": str(world.agent.id),
                    "ids": [str(new_id()) for _ in batch.disputes],
                    "items": [str(item) for item, _ in batch.disputes],
                    "contested": [str(other) for _, other in batch.disputes],
                },
            )
        await bind(tx, world.workspace_id, world.alice.id)
        if batch.replaced:
            params = {"ws": ws, "ids": [str(i) for i in batch.replaced], "status": "SUPERSEDED"}
            await tx.execute(_MARK, {**params, "reason": "replaced"})
        if batch.retired:
            params = {"ws": ws, "ids": [str(i) for i in batch.retired], "status": "RETIRED"}
            await tx.execute(_MARK, {**params, "reason": "no longer true"})


# ---------------------------------------------------------------------------
# Latency


@dataclass
class LatencyRow:
    items: int
    rehydrate: Series
    sql: Parts
    entries: int
    tokens_used: int


def latency_batch(
    world: World, rng: random.Random, words: Words, count: int, now: datetime, first: bool
) -> Batch:
    """``count`` items of a year's history; the first batch carries the 50 load-bearing constraints."""
    project = world.projects["latency"]
    batch = Batch()
    span = timedelta(days=365)
    if first:
        for _ in range(LOAD_BEARING):
            batch.rows.append(
                row(
                    world,
                    project,
                    "CONSTRAINT",
                    words.sentence(rng, 6, 14),
                    now - span * rng.random(),
                    human=True,
                    rng=rng,
                    load_bearing=True,
                )
            )
    active: list[dict[str, Any]] = []
    for _ in range(count - len(batch.rows)):
        human = rng.random() < 0.4
        item = row(
            world,
            project,
            weighted(rng, KINDS),
            words.sentence(rng, 6, 20),
            now - span * rng.random(),
            human=human,
            rng=rng,
            confirmed=not human and rng.random() < 0.3,
            decay_after=timedelta(days=90) if rng.random() < 0.3 else None,
        )
        roll = rng.random()
        if roll < 0.02 and active:
            # A recent replacement of an earlier item.
            target = active.pop(rng.randrange(len(active)))
            item.update(
                kind=target["kind"],
                asserted_at=now - timedelta(days=28) * rng.random(),
                supersedes_id=target["id"],
                supersession_reason="a newer finding",
            )
            if item["confirmed_by"] is None:
                item.update(confirmed_by=world.alice.id, confirmed_at=item["asserted_at"])
            batch.replaced.append(target["id"])
        elif roll < 0.03:
            batch.retired.append(item["id"])
        elif roll < 0.04 and not human and active:
            item.update(status="DISPUTED", status_reason="contradicts", confirmed_by=None, confirmed_at=None)
            batch.disputes.append((item["id"], rng.choice(active)["id"]))
        elif item["confirmed_by"] is not None:
            active.append(item)
        batch.rows.append(item)
    return batch


def latency_tasks(words: Words) -> list[str]:
    """Tasks whose words are common, middling and rare in the corpus."""
    w = words.words
    return [
        f"{w[2]} {w[9]} {w[30]} and the {w[120]}",
        f"Fix the {w[60]} {w[250]} for {w[700]}",
        f"{w[1500]} {w[2600]} {w[3500]}",
        f"Review {w[15]} {w[900]} {w[3000]} {w[45]}",
    ]


async def measure_latency(
    base: str, url: str, world: World, tasks: list[str], samples: int, warmup: int, size: int
) -> LatencyRow:
    project = str(world.projects["latency"])
    readers = [world.alice, world.agent]
    served = Series(f"rehydrate over HTTP, {size:,} items", LATENCY_TARGET_MS if size >= 100_000 else None)
    entries = used = 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for n in range(warmup + samples):
            reader, task = readers[n % 2], tasks[n % len(tasks)]
            asked = {"projectId": project, "task": task, "tokenBudget": LATENCY_BUDGET}
            ms, data = await timed(lambda: gql(http, reader.token, SLICE, i=asked))  # noqa: B023
            found = data["rehydrate"]
            if found["tokensUsed"] > LATENCY_BUDGET and not found["overBudget"]:
                raise BenchmarkBroken(f"{found['tokensUsed']} tokens used of {LATENCY_BUDGET}")
            if n >= warmup:
                served.samples.append(ms)
                entries += len(found["entries"])
                used += found["tokensUsed"]
    sql = await measure_sql(url, world, tasks, samples, warmup, size)
    return LatencyRow(size, served, sql, entries // samples, used // samples)


@dataclass
class Parts(Series):
    """A series that also keeps each statement's times, by name."""

    parts: dict[str, list[float]] = field(default_factory=dict)

    def breakdown(self, samples: int) -> str:
        said = []
        for name, times in sorted(self.parts.items()):
            mean = sum(times) / samples
            said.append(f"{name} {len(times) / samples:.2f}/slice {mean:.2f} ms")
        return "; ".join(said)


class TimedTx:
    """A transaction that adds up the time its candidate statements take (each ``fetch``)."""

    def __init__(self, tx: Tx, by_statement: dict[str, list[float]]) -> None:
        self.tx = tx
        self.workspace_id, self.actor_id, self.workspace = tx.workspace_id, tx.actor_id, tx.workspace
        self.ms = 0.0
        self.by_statement = by_statement

    async def fetch(self, statement: Any, params: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.tx.fetch(statement, params)
        finally:
            spent = (time.perf_counter() - started) * 1000
            self.ms += spent
            self.by_statement.setdefault(candidates.name_of(statement.sql), []).append(spent)


async def measure_sql(
    url: str, world: World, tasks: list[str], samples: int, warmup: int, size: int
) -> Parts:
    """The candidate SQL alone: every statement a slice sends for its candidates (the first read and
    any refill), timed inside ``slice.assemble`` itself, in a transaction bound to the reader."""
    engine = create_engine(app_url(url), pool_size=1)
    series = Parts(f"candidate SQL alone, {size:,} items", None)
    readers = [world.alice, world.agent]
    try:
        for n in range(warmup + samples):
            reader, task = readers[n % 2], tasks[n % len(tasks)]
            ask = slice.Ask(
                project_id=world.projects["latency"],
                task=task,
                budget=LATENCY_BUDGET,
                quotas=profile.GENERAL.quotas,
                weights=profile.GENERAL.weights,
            )
            context = Context(engine=engine, bearer=reader.token)
            async with context.authenticated(read=True) as tx:
                timing = TimedTx(tx, series.parts if n >= warmup else {})
                await slice.assemble(cast(Tx, timing), ask, context.view())
            if n >= warmup:
                series.samples.append(timing.ms)
    finally:
        await engine.dispose()
    return series


# ---------------------------------------------------------------------------
# Quality: what each method puts in a budget


@dataclass(frozen=True)
class Item:
    id: str
    kind: str
    statement: str
    status: str
    asserted_at: datetime
    supersedes: str | None
    reason: str | None


@dataclass
class Case:
    """One task on one corpus, and the truth about it."""

    corpus: str
    project: uuid.UUID
    task: str
    relevant: set[str]
    load_bearing: set[str]
    replaced: dict[str, str]  # replaced item -> its replacement, those a fresh agent should hear of


@dataclass
class Output:
    ids: set[str]
    named: set[str]  # replaced items named as replaced
    used: int  # tokens of what it shows
    left_out: bool  # whether anything it would show was left out for the budget


async def project_items(admin: AsyncEngine, project: uuid.UUID, task: str) -> list[tuple[Item, float]]:
    """Every item of the project, with its rank for the task (read as the administrator: the baselines)."""
    query = text(
        "SELECT id::text, kind, statement, status, asserted_at, supersedes_id::text AS supersedes,"
        " supersession_reason AS reason,"
        " ts_rank(search, CAST(replace(replace(CAST(plainto_tsquery('english', :task) AS text),"
        " ' & ', ' | '), ' <-> ', ' | ') AS tsquery), 1) AS rank"
        " FROM items WHERE project_id = CAST(:project AS uuid)"
    )
    async with admin.connect() as connection:
        rows = (await connection.execute(query, {"task": task, "project": str(project)})).all()
    return [
        (Item(r.id, r.kind, r.statement, r.status, r.asserted_at, r.supersedes, r.reason), float(r.rank))
        for r in rows
    ]


Lines = dict[str, str]
"""Each item's line as Mneia renders it for the reader (authority first): every system shows that."""


def cost(found: Item, lines: Lines) -> int:
    """The tokens of the item's line, its newline included."""
    return tokens.count(lines[found.id] + "\n")


def fill(ordered: Sequence[Item], budget: int, lines: Lines) -> tuple[set[str], int]:
    """Take items in order while they fit, each shown as one line: what was taken, and its tokens."""
    used, taken = 0, set()
    for found in ordered:
        line = cost(found, lines)
        if used + line <= budget:
            used += line
            taken.add(found.id)
    return taken, used


def search(items: list[tuple[Item, float]], budget: int, lines: Lines, rules: Sequence[str] = ()) -> Output:
    """By rank while it fits; given ``rules``, those first, all of them (R11's guarantee), the rest
    by rank in the budget they leave."""
    kept = [found for found, _ in items if found.id in rules]
    spent = sum(cost(found, lines) for found in kept)
    ranked = [
        found
        for found, _ in sorted(
            (pair for pair in items if pair[1] > 0 and pair[0].id not in rules),
            key=lambda pair: (-pair[1], pair[0].id),
        )
    ]
    taken, used = fill(ranked, budget - spent, lines)
    taken |= {found.id for found in kept}
    return Output(taken, generously_named(items, taken), spent + used, len(taken) < len(kept) + len(ranked))


def newest_first(items: list[tuple[Item, float]], budget: int, lines: Lines) -> Output:
    newest = sorted(
        (found for found, _ in items), key=lambda found: (found.asserted_at, found.id), reverse=True
    )
    taken, used = fill(newest, budget, lines)
    return Output(taken, generously_named(items, taken), used, len(taken) < len(newest))


PAGE = """query($p: ID!, $after: String) { items(projectId: $p, first: 500, after: $after) {
  pageInfo { hasNextPage endCursor } nodes { id rendered } } }"""


async def rendered_lines(http: httpx.AsyncClient, reader: Member, project: uuid.UUID) -> dict[str, str]:
    """Every item's line as Mneia renders it for ``reader``."""
    lines: dict[str, str] = {}
    after = None
    while True:
        page = (await gql(http, reader.token, PAGE, p=str(project), after=after))["items"]
        lines.update({node["id"]: node["rendered"] for node in page["nodes"]})
        if not page["pageInfo"]["hasNextPage"]:
            return lines
        after = page["pageInfo"]["endCursor"]


def generously_named(items: list[tuple[Item, float]], taken: set[str]) -> set[str]:
    """A baseline names a replaced item only implicitly: when the old item and its replacement are both in."""
    return {found.supersedes for found, _ in items if found.id in taken and found.supersedes in taken}


async def mneia(http: httpx.AsyncClient, reader: Member, case: Case, budget: int) -> Output:
    asked = {"projectId": str(case.project), "task": case.task, "tokenBudget": budget}
    found = (await gql(http, reader.token, SLICE, i=asked))["rehydrate"]
    if found["tokensUsed"] > budget and not found["overBudget"]:
        raise BenchmarkBroken(f"{found['tokensUsed']} tokens used of {budget}")
    ids = {e["item"]["id"] for e in found["entries"]}
    named = {n["previous"]["id"] for n in found["supersessions"]}
    left_out = bool(found["leftOut"]) or found["supersessionsLeftOut"] > 0
    return Output(ids, named, found["tokensUsed"], left_out)


@dataclass
class Truth:
    """What a case's slice could hold: the whole project, and each ruled-out note beside the rules."""

    whole: int  # every live item's line, every heading and every recent note
    rules: int  # the guaranteed rules' lines, their heading and the ruled-out heading
    notes: dict[str, int]  # replaced item -> its note's tokens

    def notes_that_fit(self, budget: int) -> int:
        """How many of the case's notes the packing rule promises at ``budget``: cheapest first, as
        many as fit together beside the rules and within the notes' share of the budget."""
        room = min(slice.SUPERSESSION_SHARE * budget, budget - self.rules)
        count = 0
        for needs in sorted(self.notes.values()):
            if needs > room:
                break
            room -= needs
            count += 1
        return count


def truth(case: Case, items: list[tuple[Item, float]], lines: Lines, since: datetime) -> Truth:
    by_id = {found.id: found for found, _ in items}
    live = [found for found, _ in items if found.status in ("ACTIVE", "DISPUTED")]
    headings = sum(tokens.count(render.heading(kind)) for kind in {found.kind for found in live})
    ruled = tokens.count(render.piece(render.RULED_OUT))

    def note(replacement: Item) -> int:
        assert replacement.supersedes is not None
        text = render.ruled_out(
            lines[replacement.supersedes], replacement.asserted_at, replacement.reason, replacement.statement
        )
        return tokens.count(text)

    recent = [found for found, _ in items if found.supersedes is not None and found.asserted_at >= since]
    whole = sum(cost(found, lines) for found in live) + headings + ruled + sum(note(r) for r in recent)
    rules = sum(cost(by_id[rule], lines) for rule in case.load_bearing)
    rules += tokens.count(render.heading("CONSTRAINT")) + ruled
    return Truth(whole, rules, {old: note(by_id[new]) for old, new in case.replaced.items()})


@dataclass
class Tally:
    load_bearing: list[int] = field(default_factory=lambda: [0, 0])
    superseded: list[int] = field(default_factory=lambda: [0, 0])  # entries, tasks
    named: list[int] = field(default_factory=lambda: [0, 0])
    relevant: list[int] = field(default_factory=lambda: [0, 0])
    used: list[int] = field(default_factory=lambda: [0, 0])  # tokens, budget
    fullest_short: float = 1.0  # the least share of the budget used by a slice that left something out
    whole_relevant: list[int] = field(default_factory=lambda: [0, 0])  # where everything fits
    notes_short: int = 0  # notes named fewer than the packing rule promises, summed over cases
    notes_alone_unnamed: int = 0  # notes unnamed that would fit alone beside the rules

    def add(self, case: Case, output: Output, status: dict[str, str], budget: int, truth: Truth) -> None:
        self.load_bearing[0] += len(case.load_bearing & output.ids)
        self.load_bearing[1] += len(case.load_bearing)
        self.superseded[0] += sum(1 for i in output.ids if status.get(i) == "SUPERSEDED")
        self.superseded[1] += 1
        self.named[0] += len(set(case.replaced) & output.named)
        self.named[1] += len(case.replaced)
        self.relevant[0] += len(case.relevant & output.ids)
        self.relevant[1] += len(case.relevant)
        self.used[0] += output.used
        self.used[1] += budget
        if output.left_out:
            self.fullest_short = min(self.fullest_short, output.used / budget)
        if truth.whole <= budget:
            self.whole_relevant[0] += len(case.relevant & output.ids)
            self.whole_relevant[1] += len(case.relevant)
        named = len(set(case.replaced) & output.named)
        self.notes_short += max(0, truth.notes_that_fit(budget) - named)
        self.notes_alone_unnamed += sum(
            1
            for old, needs in truth.notes.items()
            if truth.rules + needs <= budget and old not in output.named
        )


def percent(pair: list[int]) -> str:
    return f"{100 * pair[0] / pair[1]:.0f}%" if pair[1] else "-"


SYSTEMS = ("Mneia", "rules, then search", "search", "newest first")


async def judge(
    base: str, admin: AsyncEngine, world: World, cases: list[Case], budgets: list[int], now: datetime
) -> dict[tuple[str, int, str], Tally]:
    tallies: dict[tuple[str, int, str], Tally] = {}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        lines = {
            project: await rendered_lines(http, world.alice, project)
            for project in {c.project for c in cases}
        }
        for case in cases:
            items = await project_items(admin, case.project, case.task)
            status = {found.id: found.status for found, _ in items}
            shown = lines[case.project]
            rules = sorted(case.load_bearing)
            known = truth(case, items, shown, now - slice.RECENT)
            for budget in budgets:
                for method, output in (
                    ("Mneia", await mneia(http, world.alice, case, budget)),
                    ("rules, then search", search(items, budget, shown, rules)),
                    ("search", search(items, budget, shown)),
                    ("newest first", newest_first(items, budget, shown)),
                ):
                    tally = tallies.setdefault((case.corpus, budget, method), Tally())
                    tally.add(case, output, status, budget, known)
    return tallies


def quality_report(tallies: dict[tuple[str, int, str], Tally], budgets: list[int]) -> list[str]:
    """The side-by-side table, a mean over budgets per system, and issue 20's targets for Mneia."""
    out = [
        f"{'corpus':<10}{'budget':>7}  {'system':<20}{'used':>7}{'load-bearing':>13}{'superseded':>12}"
        f"{'ruled out':>11}{'relevant':>10}",
        f"{'':<10}{'':>7}  {'':<20}{'/budget':>7}{'recall':>13}{'per task':>12}{'named':>11}{'recall':>10}",
    ]
    corpora = sorted({corpus for corpus, _, _ in tallies}, key=lambda c: c != "generated")

    def line(corpus: str, budget: str, system: str, tally: Tally) -> str:
        entries = tally.superseded[0] / tally.superseded[1] if tally.superseded[1] else 0.0
        return (
            f"{corpus:<10}{budget:>7}  {system:<20}{percent(tally.used):>7}{percent(tally.load_bearing):>13}"
            f"{entries:>12.1f}{percent(tally.named):>11}{percent(tally.relevant):>10}"
        )

    for corpus in corpora:
        for budget in budgets:
            for system in SYSTEMS:
                out.append(line(corpus, str(budget), system, tallies[(corpus, budget, system)]))
        for system in SYSTEMS:
            mean = Tally()
            for budget in budgets:
                one = tallies[(corpus, budget, system)]
                for name in ("load_bearing", "superseded", "named", "relevant", "used"):
                    total, part = getattr(mean, name), getattr(one, name)
                    total[0] += part[0]
                    total[1] += part[1]
            out.append(line(corpus, "mean", system, mean))
        out.append("")
    out.append("targets for Mneia at every budget from 1,000 tokens (issue 20):")
    for corpus in corpora:
        for budget in (b for b in budgets if b >= 1000):
            ours, rules = tallies[(corpus, budget, "Mneia")], tallies[(corpus, budget, "rules, then search")]
            checks = [
                (
                    f"relevant {percent(ours.relevant)} >= rules-then-search {percent(rules.relevant)}",
                    ours.relevant[0] * rules.relevant[1] >= rules.relevant[0] * ours.relevant[1],
                ),
                (f"least use when short {100 * ours.fullest_short:.0f}% >= 85%", ours.fullest_short >= 0.85),
                (
                    f"ruled-out options the rule promises, unnamed: {ours.notes_short}",
                    not ours.notes_short,
                ),
            ]
            if ours.whole_relevant[1]:
                checks.append(
                    (
                        f"everything fits: relevant {percent(ours.whole_relevant)} >= 95%",
                        ours.whole_relevant[0] >= 0.95 * ours.whole_relevant[1],
                    )
                )
            for said, held in checks:
                out.append(f"  {corpus:<10}{budget:>7}  {said}: {'met' if held else 'MISSED'}")
            out.append(
                f"  {corpus:<10}{budget:>7}  (not a target: notes unnamed that would fit alone beside the"
                f" rules: {ours.notes_alone_unnamed})"
            )
    return out


# --- (a) the generated corpus ---------------------------------------------------------------------

TOPICS = (
    ("Add partial refunds for captured card payments", "partial refund captured card payment amount"),
    (
        "Rotate the webhook signing secrets without dropping deliveries",
        "webhook signing secret rotation delivery",
    ),
    (
        "Speed up the nightly invoice export to the accounting warehouse",
        "nightly invoice export accounting warehouse",
    ),
)
RULES = (
    "Never write full PANs or CVV codes into logs",
    "Every schema migration ships together with a tested rollback script",
    "Personal data of EU residents stays inside the Frankfurt region",
    "Production deploys need two approvals from different people",
    "Credentials live in Vault and never in Git history",
    "All timestamps are kept in UTC",
)


def generated_batch(world: World, rng: random.Random, now: datetime) -> tuple[Batch, list[Case]]:
    project = world.projects["generated"]
    filler = Words(vocabulary(rng, 1500))
    batch, cases = Batch(), []
    year = timedelta(days=365)

    def said(days_ago: float) -> datetime:
        return now - timedelta(days=days_ago)

    rules = []
    for rule in RULES:
        made = row(
            world,
            project,
            "CONSTRAINT",
            rule,
            said(300 * rng.random()),
            human=True,
            rng=rng,
            load_bearing=True,
        )
        batch.rows.append(made)
        rules.append(str(made["id"]))
    task_words = [topic.split() for _, topic in TOPICS]
    for (task, _), topic in zip(TOPICS, task_words, strict=True):

        def on_topic(low: int = 2, high: int = 4) -> str:
            chosen = rng.sample(topic, k=min(len(topic), rng.randint(low, high)))  # noqa: B023
            return " ".join(chosen + filler.sentence(rng, 4, 9).lower().split()).capitalize()

        relevant: set[str] = set()
        replaced: dict[str, str] = {}
        kinds = ["DECISION"] * 6 + ["FACT"] * 8 + ["PREFERENCE"] * 3 + ["QUESTION"] * 3 + ["TASK"] * 4
        kinds += ["CONSTRAINT"] * 3
        for kind in kinds:
            human = rng.random() < 0.6
            made = row(world, project, kind, on_topic(), said(365 * rng.random()), human=human, rng=rng)
            batch.rows.append(made)
            relevant.add(str(made["id"]))
        for n in range(8):  # replaced decisions and facts: six recently, two long ago
            kind = "DECISION" if n % 2 == 0 else "FACT"
            old = row(world, project, kind, on_topic(), said(100 + 200 * rng.random()), human=True, rng=rng)
            recent = n < 6
            new = row(
                world,
                project,
                kind,
                on_topic(),
                said(25 * rng.random() if recent else 45 + 45 * rng.random()),
                human=True,
                rng=rng,
                supersedes_id=old["id"],
                supersession_reason="the old one was wrong",
            )
            batch.rows += [old, new]
            batch.replaced.append(old["id"])
            relevant.add(str(new["id"]))
            if recent:
                replaced[str(old["id"])] = str(new["id"])
        contested = [r for r in batch.rows if str(r["id"]) in relevant]
        for _ in range(4):  # an agent contradicts what the task needs
            made = row(
                world,
                project,
                "FACT",
                on_topic(),
                said(60 * rng.random()),
                human=False,
                rng=rng,
                status="DISPUTED",
                status_reason="contradicts",
            )
            batch.rows.append(made)
            batch.disputes.append((made["id"], rng.choice(contested)["id"]))
        for _ in range(6):  # facts that went stale long ago
            batch.rows.append(
                row(
                    world,
                    project,
                    "FACT",
                    on_topic(),
                    said(200 + 100 * rng.random()),
                    human=False,
                    rng=rng,
                    decay_after=timedelta(days=30),
                    last_verified_at=said(120),
                )
            )
        for _ in range(3):  # retired
            made = row(world, project, "FACT", on_topic(), said(365 * rng.random()), human=True, rng=rng)
            batch.rows.append(made)
            batch.retired.append(made["id"])
        cases.append(Case("generated", project, task, relevant, set(rules), replaced))
    every_task_word = [word for topic in task_words for word in topic]
    for _ in range(2000):  # unrelated, one in ten sharing one word with some task
        words = filler.sentence(rng, 6, 16).lower().split()
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), rng.choice(every_task_word))
        human = rng.random() < 0.4
        batch.rows.append(
            row(
                world,
                project,
                weighted(rng, KINDS),
                " ".join(words).capitalize(),
                now - year * rng.random(),
                human=human,
                rng=rng,
            )
        )
    return batch, cases


async def rules_share_no_word(admin: AsyncEngine) -> None:
    """The planted load-bearing constraints must share no lexeme with any task, or the test means nothing."""
    query = text(
        "SELECT count(*) FROM unnest(CAST(:rules AS text[])) r, unnest(CAST(:tasks AS text[])) t"
        " WHERE to_tsvector('english', r)"
        " @@ replace(CAST(plainto_tsquery('english', t) AS text), ' & ', ' | ')::tsquery"
    )
    async with admin.connect() as connection:
        shared = (
            await connection.execute(query, {"rules": list(RULES), "tasks": [t for t, _ in TOPICS]})
        ).scalar()
    if shared:
        raise BenchmarkBroken("a planted load-bearing constraint shares a word with a task")


# --- (b) a real decision log ----------------------------------------------------------------------

ASSERT = "mutation($i: AssertItemInput!) { assertItem(input: $i) { id } }"
SUPERSEDE = """mutation($i: SupersedeInput!) { supersedeItem(input: $i) {
  __typename ... on Superseded { replacement { id } } } }"""
SETTLE = "mutation($i: ID!) { setLoadBearing(id: $i, loadBearing: true) { id } }"


async def load_adrs(http: httpx.AsyncClient, world: World) -> list[Case]:
    """The ADRs as Alice asserts them, in their order; a replacement supersedes what it replaces."""
    data = json.loads(ADRS.read_text(encoding="utf-8"))
    project = world.projects["adr"]
    ids: dict[str, str] = {}
    for record in data["records"]:
        content = {
            "projectId": str(project),
            "kind": record["kind"],
            "statement": f"{record['id']} {record['title']}: {record['decision']}",
            "details": record["context"],
            "basis": f"{record['id']}, {record['date']}, {record['status']}",
        }
        if record.get("supersedes"):
            replaced = {
                "targetId": ids[record["supersedes"]],
                "reason": record["reason"],
                "replacement": content,
            }
            done = await gql(http, world.alice.token, SUPERSEDE, i=replaced)
            ids[record["id"]] = done["supersedeItem"]["replacement"]["id"]
        else:
            ids[record["id"]] = (await gql(http, world.alice.token, ASSERT, i=content))["assertItem"]["id"]
            if record.get("loadBearing"):
                await gql(http, world.alice.token, SETTLE, i=ids[record["id"]])
    successor = {r["supersedes"]: r["id"] for r in data["records"] if r.get("supersedes")}

    def head(record: str) -> str:
        while record in successor:
            record = successor[record]
        return record

    # A replacement of a load-bearing item stays load-bearing: the chain's head carries the guarantee.
    current_rules = {ids[head(r["id"])] for r in data["records"] if r.get("loadBearing")}
    cases = []
    for task in data["tasks"]:
        relevant = {ids[r] for r in task["relevant"]}
        replaced = {ids[old]: ids[new] for old, new in successor.items() if new in task["relevant"]}
        cases.append(Case("ADR log", project, task["task"], relevant, current_rules, replaced))
    return cases


# ---------------------------------------------------------------------------


@dataclass
class Options:
    sizes: list[int]
    samples: int
    warmup: int
    budgets: list[int]
    seed: int
    keep: bool


async def run(options: Options, url: str, version: str) -> None:
    rng = random.Random(options.seed)
    admin = create_engine(url, pool_size=2)
    now = datetime.now(UTC)
    rows: list[LatencyRow] = []
    try:
        with running_server(url) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                world = await build_world(http, admin)
                adr_cases = await load_adrs(http, world)
            words = Words(vocabulary(rng, 4000))
            tasks = latency_tasks(words)
            loaded = 0
            load_s = 0.0
            load_before = os.getloadavg()[0]
            for size in options.sizes:
                started = time.perf_counter()
                await load(
                    admin,
                    world,
                    world.projects["latency"],
                    latency_batch(world, rng, words, size - loaded, now, loaded == 0),
                )
                await vacuum_analyze(url)
                load_s += time.perf_counter() - started
                loaded = size
                rows.append(
                    await measure_latency(base, url, world, tasks, options.samples, options.warmup, size)
                )
                print(f"measured at {size:,} items", file=sys.stderr)
            load_after = os.getloadavg()[0]
            batch, generated_cases = generated_batch(world, random.Random(options.seed + 1), now)
            await load(admin, world, world.projects["generated"], batch)
            await vacuum_analyze(url)
            await rules_share_no_word(admin)
            tallies = await judge(base, admin, world, generated_cases + adr_cases, options.budgets, now)
    finally:
        await admin.dispose()

    print(f"database     {version}")
    print("server       uvicorn, 1 worker, child process; client httpx over TCP, sequential")
    print(
        f"cpu cores    {os.cpu_count()}; load average {load_before:.2f} before the latency runs,"
        f" {load_after:.2f} after"
    )
    print(f"loading      {load_s:.1f} s in all (bulk insert as the owner, VACUUM ANALYZE)")
    print(
        f"latency      {LATENCY_BUDGET}-token slices, {options.samples} per size after {options.warmup}"
        " warm-up,"
        f" {len(tasks)} tasks (common to rare words) in turn, Alice and an agent in turn"
    )
    print()
    print(HEADER)
    for measured in rows:
        print(measured.rehydrate.row())
        print(measured.sql.row())
    print()
    print("candidate SQL per slice (statements sent, mean time each slice spends in them):")
    for measured in rows:
        print(f"  {measured.items:>9,}  {measured.sql.breakdown(len(measured.sql.samples))}")
    print()
    print(
        f"{'items':>9}{'entries':>9}{'tokens':>8}{'ratio p50':>11}{'ratio p95':>11}   rehydrate / SQL alone"
    )
    for measured in rows:
        p50 = measured.rehydrate.quantile(0.5) / measured.sql.quantile(0.5)
        p95 = measured.rehydrate.quantile(0.95) / measured.sql.quantile(0.95)
        verdict = ""
        if measured.items >= 100_000:
            verdict = f"   <= {RATIO_TARGET:.0f}: {'met' if p95 <= RATIO_TARGET else 'MISSED'}"
        print(
            f"{measured.items:>9,}{measured.entries:>9}{measured.tokens_used:>8}{p50:>11.2f}{p95:>11.2f}{verdict}"
        )
    print()
    for said in quality_report(tallies, options.budgets):
        print(said)


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--budgets", default="250,500,1000,2000,4000,8000")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    if sizes[0] <= LOAD_BEARING or args.samples < 1:
        raise SystemExit(f"sizes above {LOAD_BEARING} items and at least one sample")
    budgets = [int(budget) for budget in args.budgets.split(",")]
    options = Options(sizes, args.samples, args.warmup, budgets, args.seed, args.keep)
    on_fresh_database(run, options, keep=args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
