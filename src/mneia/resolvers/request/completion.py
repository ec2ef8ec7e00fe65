"""Completing a selection's plain fields without graphql-core's per-field machinery.

graphql-core completes every field alike: a ``Path``, a ``GraphQLResolveInfo``,
the resolver (Strawberry's wrapper around an attribute read), then
``complete_value``'s walk down the type. That took about 8 µs a field here,
and a page of 50 items with provenance is some 1,500 fields, nearly all of
them plain: an attribute of the object (Strawberry's basic field), or a
method that takes nothing but ``self``, holding a scalar, an enum, a list of
those, or an object whose own fields are plain in turn. ``Completion``
completes those in one loop: the attribute read (or the method called), the
type's own output coercion (skipped where it returns the value unchanged: a
``str`` for String and ID, a ``bool`` for Boolean; an enum member's name
looked up in a table the coercion filled), and the object's sub-selection.

What must stay true: the answer is graphql-core's, errors included
(tests/test_completion.py compares the two). Anything outside the plain case
goes to graphql-core's own code: a field with arguments, middleware or field
extensions, an abstract type, a list of objects, an awaitable, and any value
a plain completion would not take as it is (a null where the type forbids
one, a value its coercion refuses or turns to null). An attribute is read
again there (reading it twice changes nothing); a method's result, already
in hand, is completed by ``complete_value`` with the field's resolve info.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from graphql.execution.collect_fields import FieldDetailsList, GroupedFieldSet
from graphql.pyutils import Path, gather_with_cancel

from graphql import (
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLField,
    GraphQLID,
    GraphQLLeafType,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLString,
    Undefined,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)

if TYPE_CHECKING:
    from graphql.execution.executor import Executor
else:
    Executor = object  # the executor this mixes into, named for the type checker only

DEFINITION = "strawberry-definition"
"""Where Strawberry keeps a GraphQLField's own field definition (its schema converter's backref)."""

BASIC_RESOLVER = "_get_basic_result"
"""The name of Strawberry's resolver for a field that only reads an attribute (no resolver, no
extensions). Should Strawberry rename it, no attribute is plain and such fields take graphql-core's
way: slower, never wrong."""

UNCHANGED: dict[int, type] = {id(GraphQLString): str, id(GraphQLID): str, id(GraphQLBoolean): bool}
"""Scalars whose coercion returns a value of this exact type as it is (graphql-core's serializers)."""


class _Never:
    """No value is of this type: a leaf whose coercion always runs."""


# How a step completes its value.
LEAF, LEAVES, OBJECT, OBJECTS, OTHER, TYPENAME = range(6)


class Kind(NamedTuple):
    """How one field of the schema is read and completed, decided once per field."""

    completes: int
    return_type: GraphQLOutputType
    nullable: bool
    attribute: str | None = None
    """The attribute a basic field reads; None for a method."""
    method: Callable[[Any], Any] | None = None
    """The resolver of a field that takes only ``self``."""
    coerce: Callable[[Any], Any] | None = None
    """A leaf's coercion (or the leaf items' of a list)."""
    unchanged: type = _Never
    """A leaf value of exactly this type is its own output."""
    members: type = _Never
    names: Mapping[Any, str] | None = None
    """An enum's output for each member of ``members``, its Python enum."""
    items_nullable: bool = False
    object_type: GraphQLObjectType | None = None


class Step(NamedTuple):
    name: str
    fields: FieldDetailsList
    kind: Kind | None
    """None: graphql-core's own ``execute_field``."""


_KINDS: dict[int, tuple[GraphQLField, Kind | None]] = {}
"""Each field's Kind, by the field's identity (a GraphQLField compares by value, so it is no key);
the field is held with it, so that its id stays its own."""

_TYPENAME = Kind(TYPENAME, GraphQLString, False)


def kind_of(definition: GraphQLField) -> Kind | None:
    """The field's Kind, or None when graphql-core must complete it."""
    known = _KINDS.get(id(definition))
    if known is None or known[0] is not definition:
        known = _KINDS[id(definition)] = (definition, _decided(definition))
    return known[1]


def _reader(definition: GraphQLField) -> tuple[str | None, Callable[[Any], Any] | None] | None:
    """The attribute a plain field reads, or the method it calls with only its object; None if neither."""
    field = (definition.extensions or {}).get(DEFINITION)
    if field is None or definition.args or definition.resolve is None:
        return None
    if getattr(definition.resolve, "__name__", None) == BASIC_RESOLVER:
        return (field.python_name, None) if field.default_resolver is getattr else None
    resolver = field.base_resolver
    takes_only_self = (
        resolver is not None
        and not field.extensions
        and not resolver.arguments
        and resolver.self_parameter is not None
        and resolver.info_parameter is None
        and resolver.parent_parameter is None
        and resolver.root_parameter is None
        and callable(resolver.wrapped_func)
    )
    return (None, resolver.wrapped_func) if takes_only_self else None


def _enum_names(leaf: GraphQLLeafType) -> tuple[type, Mapping[Any, str] | None]:
    """A Strawberry enum's Python enum, and each member's output as the type's coercion gives it."""
    members = getattr(leaf, "wrapped_cls", None)
    if (
        not isinstance(leaf, GraphQLEnumType)
        or not isinstance(members, type)
        or not issubclass(members, enum.Enum)
    ):
        return _Never, None
    names = {}
    for member in members:
        try:
            names[member] = leaf.coerce_output_value(member)
        except Exception:  # noqa: BLE001 - such a member goes to the coercion each time
            return _Never, None
    return members, names


def _decided(definition: GraphQLField) -> Kind | None:
    reader = _reader(definition)
    if reader is None:
        return None
    attribute, method = reader
    return_type = definition.type
    nullable = not is_non_null_type(return_type)
    named: Any = return_type if nullable else return_type.of_type  # type: ignore[union-attr]
    common: dict[str, Any] = {
        "return_type": return_type,
        "nullable": nullable,
        "attribute": attribute,
        "method": method,
    }
    if is_leaf_type(named):
        members, names = _enum_names(named)
        unchanged = UNCHANGED.get(id(named), _Never)
        return Kind(
            LEAF,
            coerce=named.coerce_output_value,
            unchanged=unchanged,
            members=members,
            names=names,
            **common,
        )
    if is_list_type(named):
        item = named.of_type
        items_nullable = not is_non_null_type(item)
        item_named = item if items_nullable else item.of_type
        if is_leaf_type(item_named):
            return Kind(
                LEAVES, coerce=item_named.coerce_output_value, items_nullable=items_nullable, **common
            )
        if is_object_type(item_named) and item_named.is_type_of is None:
            return Kind(OBJECTS, object_type=item_named, items_nullable=items_nullable, **common)
    elif is_object_type(named) and named.is_type_of is None:
        return Kind(OBJECT, object_type=named, **common)
    # A method's value of another type is completed by graphql-core; an attribute is read there.
    return Kind(OTHER, **common) if method is not None else None


COMPLETED = frozenset((dict, list, str, int, float, bool, type(None)))
"""What a completion returns when it is done: never awaitable, so no need to ask (a page asks
some 1,500 times)."""

_FALLBACK = object()
"""What ``Completion._objects`` answers for a list that graphql-core must complete."""


class _Unplain(Exception):
    """A value that graphql-core must complete itself (the module's docstring)."""


def _unplain(value: Any, is_awaitable: Callable[[Any], bool]) -> bool:
    return value is None or value is Undefined or isinstance(value, Exception) or is_awaitable(value)


def coerced(kind: Kind, value: Any, is_awaitable: Callable[[Any], bool]) -> Any:
    """A leaf's (or a list of leaves') output, as ``complete_value`` gives it; raises for anything
    it would treat otherwise."""
    coerce = kind.coerce
    assert coerce is not None
    if kind.completes == LEAF:
        if _unplain(value, is_awaitable):
            raise _Unplain
        done = coerce(value)
        if done is None or done is Undefined:
            raise _Unplain
        return done
    if type(value) is not list and type(value) is not tuple:
        raise _Unplain
    done_items: list[Any] = []
    for item in value:
        if item is None:
            if not kind.items_nullable:
                raise _Unplain
            done_items.append(None)
            continue
        if _unplain(item, is_awaitable):
            raise _Unplain
        done = coerce(item)
        if done is None or done is Undefined:
            raise _Unplain
        done_items.append(done)
    return done_items


class Completion(Executor):
    """An executor mixin: graphql-core's ``execute_fields``, with the plain fields completed here."""

    _steps: dict[int, tuple[GroupedFieldSet, list[Step]]] | None = None

    def steps(self, parent_type: GraphQLObjectType, grouped: GroupedFieldSet) -> list[Step]:
        """The grouped field set's steps. graphql-core memoizes a selection's grouped field set for
        the whole execution (for each object type), so its steps are decided once per execution."""
        cache = self._steps
        if cache is None:
            cache = self._steps = {}
        found = cache.get(id(grouped))
        if found is not None and found[0] is grouped:
            return found[1]
        steps = []
        for name, fields in grouped.items():
            node = fields[0].node
            if node.name.value == "__typename":  # graphql-core answers the parent type's name
                steps.append(Step(name, fields, _TYPENAME))
                continue
            definition = self.schema.get_field(parent_type, node.name.value)
            plain = definition is not None and not node.arguments
            steps.append(Step(name, fields, kind_of(definition) if definition and plain else None))
        cache[id(grouped)] = (grouped, steps)
        return steps

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> Any:
        """graphql-core's ``execute_fields``, with each plain step completed here."""
        middleware = self.middleware_manager
        if middleware is not None and middleware.middlewares:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        awaitable_fields: list[str] = []
        try:
            for name, fields, kind in self.steps(parent_type, grouped_field_set):
                if kind is None:
                    result = self.execute_field(
                        parent_type,
                        source_value,
                        fields,
                        Path(path, name, parent_type.name),
                        position_context,
                    )
                    if result is Undefined:
                        continue
                elif kind.completes == LEAF and kind.attribute is not None:
                    # The commonest field of all, read in line.
                    value = getattr(source_value, kind.attribute, Undefined)
                    if type(value) is kind.unchanged:
                        results[name] = value
                        continue
                    if value is None and kind.nullable:
                        results[name] = None
                        continue
                    if type(value) is kind.members:
                        results[name] = kind.names[value]  # type: ignore[index]
                        continue
                    result = self._leaf(
                        kind, parent_type, source_value, value, path, name, fields, position_context
                    )
                else:
                    result = self._plain(
                        kind, parent_type, source_value, path, name, fields, position_context
                    )
                results[name] = result
                if type(result) not in COMPLETED and is_awaitable(result):
                    awaitable_fields.append(name)
        except Exception:
            if awaitable_fields:
                self.settle_in_background([results[field] for field in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return _gathered(results, awaitable_fields)

    def _leaf(
        self,
        kind: Kind,
        parent_type: GraphQLObjectType,
        source: Any,
        value: Any,
        path: Path | None,
        name: str,
        fields: FieldDetailsList,
        position_context: Any,
    ) -> Any:
        try:
            return coerced(kind, value, self.is_awaitable)
        except Exception:  # noqa: BLE001 - graphql-core reads it again and says what is wrong
            return self.execute_field(
                parent_type, source, fields, Path(path, name, parent_type.name), position_context
            )

    def _plain(
        self,
        kind: Kind,
        parent_type: GraphQLObjectType,
        source: Any,
        path: Path | None,
        name: str,
        fields: FieldDetailsList,
        position_context: Any,
    ) -> Any:
        if kind.completes == TYPENAME:
            return parent_type.name
        if kind.attribute is None:
            return self._called(
                kind, parent_type, source, Path(path, name, parent_type.name), fields, position_context
            )
        value = getattr(source, kind.attribute, Undefined)
        if value is None and kind.nullable:
            return None
        if kind.completes == LEAVES:
            return self._leaf(kind, parent_type, source, value, path, name, fields, position_context)
        field_path = Path(path, name, parent_type.name)
        if _unplain(value, self.is_awaitable):
            return self.execute_field(parent_type, source, fields, field_path, position_context)
        if kind.completes == OBJECTS:
            done = self._objects(kind, fields, field_path, value, position_context)
            if done is _FALLBACK:
                return self.execute_field(parent_type, source, fields, field_path, position_context)
            return done
        return self._object(kind, fields, field_path, value, position_context)

    def _object(
        self, kind: Kind, fields: FieldDetailsList, path: Path, value: Any, position_context: Any
    ) -> Any:
        """An object's sub-selection, as ``execute_field`` completes it, its errors handled alike."""
        assert kind.object_type is not None
        try:
            completed = self._subfields(kind.object_type, fields, path, value, position_context)
        except Exception as error:
            self.handle_field_error(error, kind.return_type, fields, path)
            return None
        if type(completed) not in COMPLETED and self.is_awaitable(completed):
            return self._settled(completed, kind.return_type, fields, path)
        return completed

    def _objects(
        self, kind: Kind, fields: FieldDetailsList, path: Path, items: Any, position_context: Any
    ) -> Any:
        """A list of objects, each item's sub-selection executed as ``complete_list_value`` does, its
        errors handled alike (an item's at the item, propagated to the list when the item is
        non-null); ``_FALLBACK``, before any work, for a list graphql-core must complete."""
        assert kind.object_type is not None
        if type(items) is not list and type(items) is not tuple:
            return _FALLBACK
        is_awaitable = self.is_awaitable
        for item in items:
            if item is None:
                if not kind.items_nullable:
                    return _FALLBACK
            elif isinstance(item, Exception) or is_awaitable(item):
                return _FALLBACK
        listed: Any = kind.return_type if kind.nullable else kind.return_type.of_type  # type: ignore[union-attr]
        item_type = listed.of_type
        completed: list[Any] = []
        pending: list[int] = []
        try:
            for index, item in enumerate(items):
                if item is None:
                    completed.append(None)
                    continue
                item_path = Path(path, index, None)
                try:
                    done = self._subfields(kind.object_type, fields, item_path, item, position_context)
                except Exception as error:
                    self.handle_field_error(error, item_type, fields, item_path)  # raises when non-null
                    done = None
                if type(done) not in COMPLETED and is_awaitable(done):
                    pending.append(index)
                    done = self._settled(done, item_type, fields, item_path)
                completed.append(done)
        except Exception as error:
            if pending:
                self.settle_in_background([completed[index] for index in pending])
            self.handle_field_error(error, kind.return_type, fields, path)
            return None
        if not pending:
            return completed
        return self._settled(_listed(completed, pending), kind.return_type, fields, path)

    def _subfields(
        self,
        object_type: GraphQLObjectType,
        fields: FieldDetailsList,
        path: Path,
        value: Any,
        position_context: Any,
    ) -> Any:
        """``collect_and_execute_subfields``: straight to ``execute_fields`` when nothing is deferred,
        as graphql-core's incremental executor goes there itself."""
        if position_context is None:
            collected = self.collect_subfields(object_type, fields)
            if not collected.new_defer_usages:
                return self.execute_fields(object_type, value, path, collected.grouped_field_set, None)
        return self.collect_and_execute_subfields(object_type, fields, path, value, position_context)

    def _called(
        self,
        kind: Kind,
        parent_type: GraphQLObjectType,
        source: Any,
        path: Path,
        fields: FieldDetailsList,
        position_context: Any,
    ) -> Any:
        """A method's value, completed as ``execute_field`` completes a resolver's."""
        assert kind.method is not None
        try:
            value = kind.method(source)
            if value is None and kind.nullable:
                return None
            plain = not _unplain(value, self.is_awaitable)
            if plain and kind.completes == OBJECTS:
                completed = self._objects(kind, fields, path, value, position_context)
                if completed is not _FALLBACK:
                    return completed
                completed = self._completed(parent_type, fields, path, value, position_context)
            elif plain and kind.object_type is not None:
                completed = self._subfields(kind.object_type, fields, path, value, position_context)
            elif plain and kind.completes in (LEAF, LEAVES):
                try:
                    return coerced(kind, value, self.is_awaitable)
                except Exception:  # noqa: BLE001 - complete_value below says what is wrong
                    completed = self._completed(parent_type, fields, path, value, position_context)
            else:
                completed = self._completed(parent_type, fields, path, value, position_context)
        except Exception as error:
            self.handle_field_error(error, kind.return_type, fields, path)
            return None
        if type(completed) not in COMPLETED and self.is_awaitable(completed):
            return self._settled(completed, kind.return_type, fields, path)
        return completed

    def _completed(
        self,
        parent_type: GraphQLObjectType,
        fields: FieldDetailsList,
        path: Path,
        value: Any,
        position_context: Any,
    ) -> Any:
        """graphql-core's completion of a value in hand, with the field's resolve info."""
        definition = self.schema.get_field(parent_type, fields[0].node.name.value)
        assert definition is not None, "a step is made for a field of the type only"
        info = self.build_resolve_info(definition, [details.node for details in fields], parent_type, path)
        if self.is_awaitable(value):
            return self.complete_awaitable_value(definition.type, fields, info, path, value, position_context)
        return self.complete_value(definition.type, fields, info, path, value, position_context)

    async def _settled(
        self, completed: Any, return_type: GraphQLOutputType, fields: FieldDetailsList, path: Path
    ) -> Any:
        try:
            return await completed
        except Exception as error:
            self.handle_field_error(error, return_type, fields, path)
            return None


async def _listed(completed: list[Any], pending: list[int]) -> list[Any]:
    """The list with its awaitable items settled, as ``complete_iterable_value`` gathers them."""
    settled = await gather_with_cancel(*(completed[index] for index in pending))
    for index, value in zip(pending, settled, strict=True):
        completed[index] = value
    return completed


async def _gathered(results: dict[str, Any], awaitable_fields: list[str]) -> dict[str, Any]:
    """The results with their awaitables settled, as graphql-core's ``execute_fields`` gathers them."""
    if len(awaitable_fields) == 1:
        field = awaitable_fields[0]
        results[field] = await results[field]
    else:
        settled = await gather_with_cancel(*(results[field] for field in awaitable_fields))
        results.update(zip(awaitable_fields, settled, strict=True))
    return results
