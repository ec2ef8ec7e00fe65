"""Membership (R19): a person's actor in one workspace, the one thing shown across workspaces."""

from __future__ import annotations

import strawberry

from mneia.schema.actor import Actor, Workspace


@strawberry.type(
    description="A workspace where you are a member, and your actor there. Of another workspace, only"
    " its id, name and region, and your actor's id and name."
)
class Membership:
    workspace: Workspace = strawberry.field(description="The workspace.")
    actor: Actor = strawberry.field(description="Your actor in that workspace.")
