"""Domain errors, each carrying the contract's error code (R14).

Code below the GraphQL layer raises these; ``resolvers.request.errors`` turns them into
GraphQL errors with ``extensions.code`` at one boundary. Anything else that
escapes a resolver is masked to the client and logged.
"""

from __future__ import annotations

from typing import Any


class MneiaError(Exception):
    code = "INTERNAL_SERVER_ERROR"

    def __init__(self, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extensions = extensions


class Unauthenticated(MneiaError):
    code = "UNAUTHENTICATED"


class Forbidden(MneiaError):
    code = "FORBIDDEN"


class HumanRequired(Forbidden):
    """A human-only operation attempted by an agent (R3)."""

    def __init__(self, operation: str) -> None:
        super().__init__(f"{operation} needs a human; agents may not do it", reason="HUMAN_REQUIRED")


class NotFound(MneiaError):
    """No such object visible to the caller; existence in another scope never leaks."""

    code = "NOT_FOUND"

    def __init__(self, what: str, ident: object) -> None:
        super().__init__(f"{what} {ident} not found")


class BadInput(MneiaError):
    """Invalid arguments; the message names the field."""

    code = "BAD_USER_INPUT"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)


class Conflict(MneiaError):
    code = "CONFLICT"


class LimitExceeded(MneiaError):
    """A document over one of the limits every operation must keep, refused before any work."""

    code = "BAD_USER_INPUT"

    def __init__(self, what: str, value: int, limit: str, maximum: int) -> None:
        super().__init__(
            f"{what} {value} exceeds the limit {maximum} ({limit})", limit=limit, value=value, maximum=maximum
        )


class TooExpensive(MneiaError):
    """The database stopped the operation at its statement timeout: asking again the same way will
    fail the same way, so not SERVICE_UNAVAILABLE (which says retry); ask for less."""

    code = "TOO_EXPENSIVE"

    def __init__(self, operation: str) -> None:
        super().__init__(
            f"{operation}: took longer than the database allows (statement_timeout); ask for less"
            " (a smaller page, budget or filter)"
        )


class Interrupted(MneiaError):
    """A subscription that cannot go on without losing events ends, and says why (F6).

    ``reason`` is FELL_BEHIND (its queue overflowed) or MISSED_EVENTS (what it
    missed could not be read again); subscribing again starts afresh.
    """

    code = "SUBSCRIPTION_INTERRUPTED"

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, reason=reason)
