"""R1 + R2 as a property: in random small worlds, everyone sees exactly what the rules say.

Hypothesis draws 2–3 workspaces, each with a few humans and agents, 0–2 teams
with random members, 1–3 projects (some belonging to a team) with random direct
members, and up to ten items per workspace with random scopes and grant lists,
each asserted by a random actor allowed to write there. The world is built
through the API. Then, for every actor, the visible item set predicted by
``Model.sees`` (R2 written out in Python, never crossing workspaces, R1) must
equal what ``item(id)``, ``items(projectId)`` and raw ``SELECT id FROM items``
as ``mneia_app`` return.

How an async property runs here: pytest-asyncio 1.x recognises a ``@given``
test whose inner test is a coroutine function and drives each example on the
test's event loop (the session loop, like the session-scoped ``api`` and
``engine`` fixtures), so the test is written as a plain ``async def`` under
``@given``. Hypothesis calls it once per example with the same fixtures; each
example builds fresh workspaces, so examples never see each other's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.graphql import Api, Who
from tests.support import ADD_TEAM_MEMBER, ASSERT_ITEM, COUNT_ITEMS, assert_code, visible_item_ids

SCOPES = ("PRIVATE", "PROJECT", "TEAM", "WORKSPACE", "GRANTS")


@dataclass(frozen=True)
class TeamSpec:
    creator: int  # a human's index; the creator becomes a member
    members: frozenset[int]  # actors' indexes


@dataclass(frozen=True)
class ProjectSpec:
    creator: int  # a human's index; the creator becomes a direct member
    team: int | None
    members: frozenset[int]


@dataclass(frozen=True)
class ItemSpec:
    project: int
    asserter: int  # picks among the actors allowed to write in the project
    scope: str
    grants: frozenset[int]  # used with scope GRANTS only


@dataclass(frozen=True)
class WorkspaceSpec:
    humans: int
    agents: int
    teams: tuple[TeamSpec, ...]
    projects: tuple[ProjectSpec, ...]
    items: tuple[ItemSpec, ...]

    def team_members(self, team: int) -> set[int]:
        spec = self.teams[team]
        return {spec.creator, *spec.members}

    def direct_members(self, project: int) -> set[int]:
        spec = self.projects[project]
        return {spec.creator, *spec.members}

    def workers(self, project: int) -> set[int]:
        """Who may write in the project: its direct members and its team's members."""
        team = self.projects[project].team
        return self.direct_members(project) | (self.team_members(team) if team is not None else set())

    def asserter(self, item: ItemSpec) -> int:
        workers = sorted(self.workers(item.project))
        return workers[item.asserter % len(workers)]

    def sees(self, actor: int, item: ItemSpec) -> bool:
        """R2, each scope including the narrower ones; the asserter always sees its item."""
        if actor == self.asserter(item) or item.scope == "WORKSPACE":
            return True
        if item.scope == "PROJECT":
            return actor in self.direct_members(item.project)
        if item.scope == "TEAM":
            return actor in self.workers(item.project)
        if item.scope == "GRANTS":
            return actor in item.grants
        return False  # PRIVATE


@st.composite
def workspace_specs(draw: st.DrawFn) -> WorkspaceSpec:
    humans = draw(st.integers(1, 3))
    agents = draw(st.integers(0, 2))
    actor = st.integers(0, humans + agents - 1)
    human = st.integers(0, humans - 1)
    members = st.frozensets(actor, max_size=3)
    teams = draw(st.lists(st.builds(TeamSpec, human, members), max_size=2))
    team = st.none() | st.integers(0, len(teams) - 1) if teams else st.none()
    projects = draw(st.lists(st.builds(ProjectSpec, human, team, members), min_size=1, max_size=3))
    items = draw(
        st.lists(
            st.builds(
                ItemSpec,
                st.integers(0, len(projects) - 1),
                st.integers(0, 50),
                st.sampled_from(SCOPES),
                st.frozensets(actor, min_size=1, max_size=3),
            ),
            max_size=10,
        )
    )
    return WorkspaceSpec(humans, agents, tuple(teams), tuple(projects), tuple(items))


@dataclass
class Built:
    """One workspace as created: ids in the same order as its spec's indexes."""

    spec: WorkspaceSpec
    workspace_id: str
    actors: list[Who]
    projects: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)


async def build(api: Api, spec: WorkspaceSpec) -> Built:
    workspace_id, first = await api.bootstrap("h0")
    actors = [first]
    for index in range(1, spec.humans):
        actors.append(await api.actor(first.token, "HUMAN", f"h{index}"))
    for index in range(spec.agents):
        actors.append(await api.actor(first.token, "AGENT", f"a{index}"))
    built = Built(spec, workspace_id, actors)

    team_ids = []
    for number, team in enumerate(spec.teams):
        creator = actors[team.creator]
        made = await api.run(
            creator.token,
            'mutation($n: String!) { createTeam(name: $n, function: "work") { id } }',
            n=f"team-{number}",
        )
        team_ids.append(made["createTeam"]["id"])
        for member in team.members - {team.creator}:
            await api.run(creator.token, ADD_TEAM_MEMBER, t=team_ids[-1], a=actors[member].id)
    for number, project in enumerate(spec.projects):
        creator = actors[project.creator]
        team_id = team_ids[project.team] if project.team is not None else None
        built.projects.append(await api.project(creator.token, f"project-{number}", team_id))
        for member in project.members - {project.creator}:
            await api.add_member(creator.token, built.projects[-1], actors[member].id)
    for number, item in enumerate(spec.items):
        fields: dict[str, Any] = {
            "projectId": built.projects[item.project],
            "statement": f"statement {number}",
            "scope": item.scope,
        }
        if item.scope == "GRANTS":
            fields["grantActorIds"] = [actors[index].id for index in sorted(item.grants)]
        made = await api.assert_item(actors[spec.asserter(item)].token, **fields)
        built.items.append(made["id"])
    return built


async def outsiders_cannot_write(api: Api, built: Built) -> None:
    """A workspace's actor outside a project (and its team) is refused there; nothing is written."""
    for number, project_id in enumerate(built.projects):
        outside = sorted(set(range(len(built.actors))) - built.spec.workers(number))
        if not outside:
            continue
        error = await api.fail(
            built.actors[outside[0]].token,
            ASSERT_ITEM,
            i={"kind": "FACT", "projectId": project_id, "statement": "not a member"},
        )
        assert_code(error, "FORBIDDEN")


async def check_actor(api: Api, engine: AsyncEngine, world: list[Built], home: Built, index: int) -> None:
    who = home.actors[index]
    expected = {
        item_id
        for item_id, spec in zip(home.items, home.spec.items, strict=True)
        if home.spec.sees(index, spec)
    }
    every_item = [item_id for built in world for item_id in built.items]

    # By id, every item of the world at once (a null for each invisible one).
    if every_item:
        params = ", ".join(f"$i{n}: ID!" for n in range(len(every_item)))
        fields = " ".join(f"i{n}: item(id: $i{n}) {{ id }}" for n in range(len(every_item)))
        by_id = await api.run(
            who.token,
            f"query({params}) {{ {fields} }}",
            **{f"i{n}": item_id for n, item_id in enumerate(every_item)},
        )
        assert {found["id"] for found in by_id.values() if found} == expected

    # Listing each project of its workspace: projects are workspace-wide, items are scoped.
    params = ", ".join(f"$p{n}: ID!" for n in range(len(home.projects)))
    fields = " ".join(
        f"p{n}: items(projectId: $p{n}, first: 100) {{ totalCount nodes {{ id }} }}"
        for n in range(len(home.projects))
    )
    pages = await api.run(
        who.token,
        f"query({params}) {{ projects {{ id }} {fields} }}",
        **{f"p{n}": project_id for n, project_id in enumerate(home.projects)},
    )
    assert {project["id"] for project in pages.pop("projects")} == set(home.projects)
    listed: set[str] = set()
    for page in pages.values():
        ids = {node["id"] for node in page["nodes"]}
        assert page["totalCount"] == len(ids)
        listed |= ids
    assert listed == expected

    # Another workspace's project does not exist for this actor.
    for other in world:
        if other is home:
            continue
        for project_id in other.projects:
            assert_code(await api.fail(who.token, COUNT_ITEMS, p=project_id), "NOT_FOUND")

    # And the database itself, as the server's role with this actor's context.
    assert await visible_item_ids(engine, who) == expected


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(specs=st.lists(workspace_specs(), min_size=2, max_size=3))
async def test_r1_r2_every_actor_sees_exactly_what_the_scopes_allow(
    api: Api, engine: AsyncEngine, specs: list[WorkspaceSpec]
) -> None:
    world = [await build(api, spec) for spec in specs]
    for built in world:
        await outsiders_cannot_write(api, built)
    for built in world:
        for index in range(len(built.actors)):
            await check_actor(api, engine, world, built, index)
