"""Strawberry's ASGI view, held to the GraphQL-over-HTTP spec and to what real clients expect.

On top of ``strawberry.asgi.GraphQL``: bodies are read by ``http.body`` (every
malformed one a JSON 400), the answer's media type follows the Accept header
and its status follows ``http.outcome``, a mutation by GET answers 405 with
``Allow: POST``, and Apollo's persisted queries are served from
``http.persisted``. Subclasses say whether a request was authenticated
(``authenticated``), since only then may it add to the persisted queries.
"""

from __future__ import annotations

from typing import Any

from cross_web import AsyncHTTPRequestAdapter, HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.exceptions import MissingQueryError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.base import BaseRequestProtocol
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from mneia.http import persisted
from mneia.http.body import graphql_request
from mneia.http.encoding import encoded
from mneia.http.media import JSON, content_type, negotiated
from mneia.http.outcome import Exchange, outcome
from mneia.http.persisted import PersistedQueries
from mneia.http.refusal import Refusal, bad_parameter, from_strawberry
from mneia.resolvers.request.context import bearer_token
from mneia.resolvers.request.execution import SharedData


class PendingResponse(Response):
    """Strawberry's sub-response, carrying what the final answer depends on in the request."""

    def __init__(self, exchange: Exchange) -> None:
        super().__init__()
        self.exchange = exchange
        self.status_code = None  # type: ignore[assignment]  # unset until a resolver sets it
        del self.headers["content-length"]


def exchange_of(request: Request) -> Exchange:
    return Exchange(
        media_type=negotiated(request.headers.get("accept")),
        bearer_presented=bearer_token(request.headers.get("authorization")) is not None,
    )


def refused(refusal: Refusal, request: Request) -> Response:
    return Response(
        refusal.encoded(),
        status_code=refusal.status_code,
        headers=refusal.headers,
        media_type=content_type(negotiated(request.headers.get("accept"))),
    )


def too_large(size: int, limit: int) -> Refusal:
    """An answer past the response limit, in place of a truncated one: nothing of it is sent. The
    cost rule refuses most such documents before they run; this is the backstop."""
    return Refusal(
        400,
        f"the answer would be {size} bytes, over the limit {limit} (MNEIA_MAX_RESPONSE_BYTES): ask for less,"
        " with smaller pages, fewer fields or fewer aliases; what a mutation wrote stands",
        code="RESPONSE_TOO_LARGE",
        extensions={"limit": limit, "value": size},
    )


class GraphQLOverHTTP(GraphQL):
    def __init__(
        self,
        *args: Any,
        persisted_queries: PersistedQueries,
        max_response_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.persisted_queries = persisted_queries
        self.max_response_bytes = max_response_bytes

    def authenticated(self, context: Any) -> bool:
        """Whether the operation just run was authenticated; only then is its text persisted."""
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await self.run(request)
        except HTTPException as error:
            response = refused(from_strawberry(error), request)
        await response(scope, receive, send)

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        """A browser asking for a page: never a GET that carries an operation (APQ sends only a hash)."""
        params = request.query_params
        return (
            request.method == "GET"
            and params.get("query") is None
            and params.get("extensions") is None
            and "text/html" in request.headers.get("accept", "")
        )

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> GraphQLRequestData:
        data = await graphql_request(request)
        sha256 = persisted.requested_hash(data.extensions)
        if sha256 is None:
            return data
        if data.query is None:
            data.query = self.persisted_queries.get(sha256)
            if data.query is None:
                raise persisted.not_found()
        else:
            persisted.verify(sha256, data.query)
        return data

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Any,
        root_value: Any,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        method = request_adapter.method
        try:
            result = await self.schema.execute(
                request_data.query,
                root_value=root_value,
                variable_values=request_data.variables,
                context_value=context,
                operation_name=request_data.operation_name,
                allowed_operation_types=OperationType.from_http(method),
                operation_extensions=request_data.extensions,
            )
        except InvalidOperationTypeError as error:
            if error.operation_type is OperationType.MUTATION:
                raise Refusal(
                    405, "a mutation is sent by POST, never GET", headers={"Allow": "POST"}
                ) from None
            raise Refusal(400, error.as_http_error_reason(method)) from None
        except CannotGetOperationTypeError as error:
            raise bad_parameter("operationName", error.as_http_error_reason()) from None
        except MissingQueryError:
            raise bad_parameter("query", "is required: a GraphQL document") from None
        sha256 = persisted.requested_hash(request_data.extensions)
        if sha256 is not None and request_data.query is not None and self.authenticated(context):
            self.persisted_queries.put(sha256, request_data.query)
        return result

    def encode_json(self, data: object) -> str:
        """Compact JSON (``http.encoding``); a subscription's ``next`` message around a class's shared
        data wraps the text encoded once for the class (resolvers.request.execution.SharedData)."""
        payload = data.get("payload") if isinstance(data, dict) and data.get("type") == "next" else None
        if isinstance(data, dict) and len(data) == 3 and isinstance(payload, dict) and len(payload) == 1:
            shared = payload.get("data")
            if isinstance(shared, SharedData):
                text = shared.encoded(encoded)
                return f'{{"id":{encoded(data["id"])},"type":"next","payload":{{"data":{text}}}}}'
        return encoded(data)

    async def get_sub_response(self, request: Request) -> Response:  # type: ignore[override]
        return PendingResponse(exchange_of(request))

    def create_response(  # type: ignore[override]
        self, response_data: GraphQLHTTPResponse, sub_response: Response
    ) -> Response:
        exchange = sub_response.exchange if isinstance(sub_response, PendingResponse) else None
        if exchange is None:  # pragma: no cover - get_sub_response always makes one
            raise TypeError("create_response needs the PendingResponse of get_sub_response")
        answer = outcome(dict(response_data), exchange)
        text = self.encode_json(answer.body)
        limit = self.max_response_bytes
        if limit is not None and len(text) > limit and len(text.encode()) > limit:
            said = too_large(len(text.encode()), limit)
            body = {"data": None, **said.body()} if exchange.media_type == JSON else said.body()
            return Response(
                encoded(body),
                status_code=200 if exchange.media_type == JSON else 400,
                media_type=content_type(exchange.media_type),
            )
        response = Response(
            text,
            status_code=sub_response.status_code or answer.status,
            headers=answer.headers,
            media_type=content_type(exchange.media_type),
        )
        response.headers.raw.extend(sub_response.headers.raw)
        if sub_response.background:
            response.background = sub_response.background
        return response
