"""Sessions: started by the actor doing the work, in a project it works in."""

from __future__ import annotations

from typing import Annotated

import strawberry

from mneia.errors import Forbidden, NotFound
from mneia.resolvers.inputs import decode_cursor, deep_link, encode_cursor, optional_text, page_size, parse_id
from mneia.resolvers.project import project_to_work_in, visible_project_id
from mneia.resolvers.request.context import Info
from mneia.schema.page import PageInfo
from mneia.schema.session import ClientInput, Session, SessionPage, StartSessionInput
from mneia.storage import session


async def get_session(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The session's id.")],
) -> Session | None:
    record = await session.get(info.context.tx, parse_id(id, "id"))
    return Session.of(record) if record else None


async def start_session(
    info: Info,
    input: Annotated[
        StartSessionInput,
        strawberry.argument(description="The project, the task and the client's provenance."),
    ],
) -> Session:
    context = info.context
    project_key = (await project_to_work_in(context.tx, input.project_id, "input.projectId")).project.id
    client = input.client or ClientInput()
    record = await session.start(
        context.tx,
        project_key,
        task=optional_text(input.task, "input.task"),
        tool=optional_text(client.tool, "input.client.tool", 200, one_line=True),
        version=optional_text(client.version, "input.client.version", 200, one_line=True),
        external_id=optional_text(input.external_id, "input.externalId", 500, one_line=True),
        deep_link=deep_link(input.deep_link, "input.deepLink"),
    )
    return Session.of(record)


async def end_session(
    info: Info,
    id: Annotated[strawberry.ID, strawberry.argument(description="The session's id.")],
) -> Session:
    context = info.context
    key = parse_id(id, "id")
    if await session.get(context.tx, key) is None:
        raise NotFound("session", id)
    if not await session.end(context.tx, key):
        raise Forbidden("endSession: only the session's actor or a human may end it")
    record = await session.get(context.tx, key)
    assert record is not None
    return Session.of(record)


async def list_sessions(
    info: Info,
    project_id: Annotated[strawberry.ID, strawberry.argument(description="The project's id.")],
    external_id: Annotated[
        str | None,
        strawberry.argument(description="Only the sessions the client knows by this session id of its own."),
    ] = None,
    first: Annotated[
        int | None, strawberry.argument(description="How many to return, at most 500. Default: 50.")
    ] = 50,
    after: Annotated[
        str | None,
        strawberry.argument(description="The endCursor of the page before; null for the first page."),
    ] = None,
) -> SessionPage:
    """A project's sessions, newest first; with externalId, the ones a client knows by that id."""
    tx = info.context.tx
    project_key = await visible_project_id(info, project_id)
    records, more = await session.page(
        tx,
        project_key,
        external_id=optional_text(external_id, "externalId", 500, one_line=True),
        first=page_size(first),
        after=decode_cursor(after),
    )
    end = encode_cursor(records[-1].id) if records else None
    return SessionPage(
        nodes=[Session.of(record) for record in records],
        page_info=PageInfo(has_next_page=more, end_cursor=end),
    )
