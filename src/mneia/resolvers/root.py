"""The root types and the schema. Each field's resolver lives in the module of its noun."""

from __future__ import annotations

import strawberry
from strawberry.extensions import ParserCache, ValidationCache
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from graphql import GraphQLError
from mneia.errors import MneiaError
from mneia.resolvers import actor as actors
from mneia.resolvers import item as items
from mneia.resolvers import project as projects
from mneia.resolvers import session as sessions
from mneia.resolvers import team as teams
from mneia.resolvers import workspace as workspaces
from mneia.resolvers.extension import Transaction
from mneia.schema.actor import Actor, ActorWithToken, Workspace
from mneia.schema.item import Item, ItemPage
from mneia.schema.project import Project
from mneia.schema.proposal import Proposal
from mneia.schema.scalars import SCALARS
from mneia.schema.session import Session
from mneia.schema.team import Team

HUMAN_ONLY = "Human only: an agent gets FORBIDDEN with extensions.reason HUMAN_REQUIRED."


@strawberry.type
class Query:
    me: Actor = strawberry.field(resolver=actors.me)
    workspace: Workspace = strawberry.field(resolver=workspaces.current_workspace)
    project: Project | None = strawberry.field(resolver=projects.get_project)
    projects: list[Project] = strawberry.field(resolver=projects.list_projects)
    session: Session | None = strawberry.field(resolver=sessions.get_session)
    item: Item | None = strawberry.field(resolver=items.get_item)
    items: ItemPage = strawberry.field(resolver=items.list_items)


@strawberry.type
class Mutation:
    create_team: Team = strawberry.mutation(resolver=teams.create_team, description=HUMAN_ONLY)
    create_project: Project = strawberry.mutation(resolver=projects.create_project, description=HUMAN_ONLY)
    create_actor: ActorWithToken = strawberry.mutation(resolver=actors.create_actor, description=HUMAN_ONLY)
    add_project_member: Project = strawberry.mutation(
        resolver=projects.add_project_member, description=HUMAN_ONLY
    )
    add_team_member: Team = strawberry.mutation(resolver=teams.add_team_member, description=HUMAN_ONLY)
    start_session: Session = strawberry.mutation(resolver=sessions.start_session)
    end_session: Session = strawberry.mutation(resolver=sessions.end_session)
    assert_item: Item = strawberry.mutation(resolver=items.assert_item)
    confirm_item: Item = strawberry.mutation(resolver=items.confirm_item, description=HUMAN_ONLY)
    set_load_bearing: Item = strawberry.mutation(resolver=items.set_load_bearing, description=HUMAN_ONLY)
    suggest_load_bearing: Proposal = strawberry.mutation(resolver=items.suggest_load_bearing)
    retire_item: Item = strawberry.mutation(
        resolver=items.retire_item,
        description="Retire an item. Retiring a human-confirmed item is for humans only.",
    )
    verify_item: Item = strawberry.mutation(resolver=items.verify_item)


class MneiaSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        """Expected failures are answers, not incidents: log only the unexpected ones (in errors.present)."""
        del errors, execution_context


def build_schema() -> strawberry.Schema:
    return MneiaSchema(
        query=Query,
        mutation=Mutation,
        # Clients send the same few operations again and again: parse and validate each once.
        extensions=[lambda: ParserCache(maxsize=512), lambda: ValidationCache(maxsize=512), Transaction],
        config=StrawberryConfig(scalar_map=SCALARS),
    )


__all__ = ["MneiaError", "build_schema"]
