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
    tool: str | None = strawberry.field(
        description='The tool, e.g. "claude-code"; null when the client did not say.'
    )
    version: str | None = strawberry.field(
        description="The tool's version; null when the client did not say."
    )
    placeholder_version: bool = strawberry.field(
        description="The version is one the client sends whatever its release (Cursor's constant 1.0.0):"
        " recorded as sent, and listed in the session's provenanceMissing as client.version."
    )


@strawberry.type(
    description="One run of an agent (or a person) against a project: where its items came from (R13)."
)
class Session:
    id: strawberry.ID = strawberry.field(description="The session's id.")
    external_id: str | None = strawberry.field(description="The client's own session id.")
    deep_link: str | None = strawberry.field(
        description="A link or resume command back to the original conversation."
    )
    task: str | None = strawberry.field(description="What the session set out to do; null when not given.")
    started_at: datetime = strawberry.field(description="When Mneia recorded its start (the server's time).")
    ended_at: datetime | None = strawberry.field(description="When it ended; null while it runs.")
    transcript_started_at: datetime | None = strawberry.field(
        description="An imported session: when its transcript says it started (the client's word); null"
        " when the transcript does not say, or the session was started through Mneia."
    )
    transcript_ended_at: datetime | None = strawberry.field(
        description="An imported session: the transcript's last time, as far as it was imported."
    )
    provenance_partial: bool = strawberry.field(
        description="True when the client did not give all of its provenance (provenanceMissing says what)."
    )
    provenance_missing: list[str] = strawberry.field(
        description='What the client did not give, e.g. ["client.version", "deepLink"].'
    )
    record: strawberry.Private[SessionRecord]

    @strawberry.field(description="The tool that ran it; null when the client gave nothing about itself.")
    def client(self) -> Client | None:
        if not self.record.has_client:
            return None
        return Client(
            tool=self.record.client_tool,
            version=self.record.client_version,
            placeholder_version=self.record.placeholder_version,
        )

    @strawberry.field(description="The project it worked in.")
    def project(self, info: Info) -> Project:
        return now_or_later(info.context.loaders.project.load(self.record.project_id), Project.of)

    @strawberry.field(description="The actor that ran it.")
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
    nodes: list[Session] = strawberry.field(description="The sessions of this page, newest first.")
    page_info: PageInfo = strawberry.field(
        description="Whether another page follows, and the cursor to ask for it."
    )


@strawberry.input(description="The tool that runs a session, as far as the client knows itself.")
class ClientInput:
    tool: str | None = strawberry.field(default=None, description='The tool, e.g. "claude-code".')
    version: str | None = strawberry.field(default=None, description="The tool's version.")


@strawberry.input(description="A session to start: the project, the task and the client's provenance.")
class StartSessionInput:
    project_id: strawberry.ID = strawberry.field(
        description="The project to work in; you must be a member of it."
    )
    task: str | None = strawberry.field(default=None, description="What the session sets out to do.")
    client: ClientInput | None = strawberry.field(
        default=None,
        description="The tool that runs the session. What it does not give is listed in provenanceMissing.",
    )
    external_id: str | None = strawberry.field(default=None, description="The client's own session id.")
    deep_link: str | None = strawberry.field(
        default=None, description="A link or resume command back to the original conversation."
    )
