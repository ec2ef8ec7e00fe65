"""Session and Client: where a claim came from (R13)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from mneia.schema.actor import Actor
from mneia.schema.loading import now_or_later
from mneia.schema.page import PageInfo
from mneia.schema.project import Project
from mneia.schema.reading import Info
from mneia.storage.session import SessionRecord


@strawberry.type(description="The tool that produced a session; a part it did not give is null.")
class Client:
    tool: str | None
    version: str | None
    placeholder_version: bool = strawberry.field(
        description="The version is one the client sends whatever its release (Cursor's constant 1.0.0):"
        " recorded as sent, and listed in the session's provenanceMissing as client.version."
    )


@strawberry.type
class Session:
    id: strawberry.ID
    external_id: str | None = strawberry.field(description="The client's own session id.")
    deep_link: str | None = strawberry.field(
        description="A link or resume command back to the original conversation."
    )
    task: str | None
    started_at: datetime = strawberry.field(description="When Mneia recorded its start (the server's time).")
    ended_at: datetime | None
    transcript_started_at: datetime | None = strawberry.field(
        description="An imported session: when its transcript says it started (the client's word); null"
        " when the transcript does not say, or the session was started through Mneia."
    )
    transcript_ended_at: datetime | None = strawberry.field(
        description="An imported session: the transcript's last time, as far as it was imported."
    )
    provenance_partial: bool
    provenance_missing: list[str] = strawberry.field(
        description='What the client did not give, e.g. ["client.version", "deepLink"].'
    )
    record: strawberry.Private[SessionRecord]

    @strawberry.field
    def client(self) -> Client | None:
        if not self.record.has_client:
            return None
        return Client(
            tool=self.record.client_tool,
            version=self.record.client_version,
            placeholder_version=self.record.placeholder_version,
        )

    @strawberry.field
    def project(self, info: Info) -> Project:
        return now_or_later(info.context.loaders.project.load(self.record.project_id), Project.of)

    @strawberry.field
    def actor(self, info: Info) -> Actor:
        return now_or_later(info.context.loaders.actor.load(self.record.actor_id), Actor.of)

    @classmethod
    def of(cls, record: SessionRecord) -> Session:
        missing = record.provenance_missing
        return cls(
            id=strawberry.ID(str(record.id)),
            external_id=record.external_id,
            deep_link=record.deep_link,
            task=record.task,
            started_at=record.started_at,
            ended_at=record.ended_at,
            transcript_started_at=record.transcript_started_at,
            transcript_ended_at=record.transcript_ended_at,
            provenance_partial=bool(missing),
            provenance_missing=missing,
            record=record,
        )


@strawberry.type(description="A page of a project's sessions, newest first.")
class SessionPage:
    nodes: list[Session]
    page_info: PageInfo


@strawberry.input
class ClientInput:
    tool: str | None = None
    version: str | None = None


@strawberry.input
class StartSessionInput:
    project_id: strawberry.ID
    task: str | None = None
    client: ClientInput | None = None
    external_id: str | None = None
    deep_link: str | None = None
