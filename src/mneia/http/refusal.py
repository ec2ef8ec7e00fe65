"""A request refused before any GraphQL ran: an HTTP status and a JSON GraphQL error.

Clients parse every answer from /graphql as JSON, so a refusal is never plain
text: ``{"errors": [{"message": …, "extensions": {"code": …}}]}``. The status
says what is wrong with the HTTP request itself (400, 405); ``code`` is
BAD_REQUEST for a body that is not a GraphQL request at all, BAD_USER_INPUT
(with ``field``) for a request parameter of the wrong shape.
"""

from __future__ import annotations

from collections.abc import Mapping

from cross_web import HTTPException

from mneia.http.encoding import encoded


class Refusal(HTTPException):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str = "BAD_REQUEST",
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
        extensions: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(status, message)
        self.message = message
        self.code = code
        self.field = field
        self.headers = dict(headers or {})
        self.extensions = dict(extensions or {})

    def encoded(self) -> bytes:
        return encoded(self.body()).encode()

    def body(self) -> dict[str, object]:
        extensions: dict[str, object] = {"code": self.code, **self.extensions}
        if self.field is not None:
            extensions["field"] = self.field
        return {"errors": [{"message": self.message, "extensions": extensions}]}


def bad_parameter(field: str, problem: str) -> Refusal:
    """A request parameter of the wrong shape: 400, BAD_USER_INPUT naming it."""
    return Refusal(400, f"{field}: {problem}", code="BAD_USER_INPUT", field=field)


def from_strawberry(error: HTTPException) -> Refusal:
    """Strawberry's own refusals (plain text by default) in the same JSON shape."""
    if isinstance(error, Refusal):
        return error
    headers = {"Allow": "GET, POST"} if error.status_code == 405 else None
    return Refusal(error.status_code, error.reason, headers=headers)
