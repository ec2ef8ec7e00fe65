"""Input types built straight from the values graphql-core coerced: ``flat``.

Strawberry converts an input value field by field, resolving each field's
type annotation anew every time: some 50 µs for an ``AssertItemInput``, so
50 ms of a thousand-item ``assertItems``, more than its INSERT. An input
whose fields are all scalars, enums or lists of those needs none of it:
graphql-core has already coerced every value (an enum to its member, a
custom scalar through its parser), and Strawberry would pass each through
unchanged. ``flat`` gives such a type Strawberry's ``from_input`` hook, which
builds the instance from the value in one step, with the same result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from strawberry.types.arguments import InputContext
from strawberry.types.base import StrawberryList, StrawberryOptional, has_object_definition
from strawberry.types.lazy_type import LazyType

T = TypeVar("T")

_Plan = tuple[tuple[str, str, bool], ...]
"""Per field: its GraphQL name, its Python name, whether it holds a list (copied, as Strawberry does)."""


def flat(cls: type[T]) -> type[T]:
    """Build instances of the input type ``cls`` without Strawberry's per-field conversion.

    Refused at import for a type with a field that holds another input type:
    that one needs converting."""
    definition = cls.__strawberry_definition__  # type: ignore[attr-defined]
    listed = {
        field.python_name: _holds_list(field.resolve_type(type_definition=definition))
        for field in definition.fields
    }
    plans: dict[int, _Plan] = {}

    def from_input(target: type[T], value: Mapping[str, Any], context: InputContext) -> T:
        plan = plans.get(id(context.config))
        if plan is None:
            name = context.config.name_converter.from_field
            plan = plans[id(context.config)] = tuple(
                (name(field), field.python_name, listed[field.python_name]) for field in definition.fields
            )
        given: dict[str, Any] = {}
        for graphql, python, is_list in plan:
            if graphql in value:
                held = value[graphql]
                given[python] = list(held) if is_list and held is not None else held
        return target(**given)

    definition.from_input = from_input
    return cls


def _holds_list(kind: Any) -> bool:
    """Whether a field's type is a list; refuses one that holds an input type (it needs converting)."""
    kind = _unwrapped(kind)
    is_list = isinstance(kind, StrawberryList)
    inner = _unwrapped(kind.of_type) if is_list else kind
    if has_object_definition(inner):
        raise TypeError(f"{inner!r} is an input type: a flat input holds scalars and enums only")
    return is_list


def _unwrapped(kind: Any) -> Any:
    while isinstance(kind, (StrawberryOptional, LazyType)):
        kind = kind.of_type if isinstance(kind, StrawberryOptional) else kind.resolve_type()
    return kind
