"""Who may call a field, declared on the field itself.

A human-only mutation carries ``HumanOnly``: the check runs before the
resolver, from the same rule every other entry point asks
(``mneia.authority.require_human``), so no resolver can forget it. It adds
no directive to the printed schema; the field's description says it.
"""

from __future__ import annotations

from typing import Any

from strawberry.extensions.field_extension import FieldExtension
from strawberry.permission import BasePermission, PermissionExtension

from mneia.authority import require_human

HUMAN_ONLY = "Human only: an agent gets FORBIDDEN with extensions.reason HUMAN_REQUIRED."


class HumanOnly(BasePermission):
    message = HUMAN_ONLY

    def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        # Raises HumanRequired (FORBIDDEN, reason HUMAN_REQUIRED) naming the field.
        require_human(info.context.actor, info.field_name)
        return True


def human_only() -> list[FieldExtension]:
    """The field extensions of a human-only field."""
    return [PermissionExtension([HumanOnly()], use_directives=False)]
