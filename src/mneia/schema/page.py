"""A page of a list (Relay's shape): whether another follows and the cursor to ask for it with."""

from __future__ import annotations

import strawberry


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None
