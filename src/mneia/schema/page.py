"""A page of a list (Relay's shape): whether another follows and the cursor to ask for it with."""

from __future__ import annotations

import strawberry


@strawberry.type(description="Where a page ends: whether another follows and the cursor to ask for it with.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="True when another page follows.")
    end_cursor: str | None = strawberry.field(
        description="Pass it as after to get the next page; null on an empty page."
    )
