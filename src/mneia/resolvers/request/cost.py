"""How big an operation is before it runs: its depth, its aliases and its estimated cost, in one walk.

The cost estimates how many fields the operation would resolve. Each field
counts 1; what a list holds counts once per element it is expected to hold:
its ``first`` argument when it has one; for the list right under a field that
takes ``first`` (``items(first: 500) { nodes { … } }``), that page size; any
other list, ``list_size``. Nested lists multiply, so a cycle such as
``disputes { contested { disputes { … } } }`` or ``chain { chain { … } }``
grows geometrically with its depth and meets the cost limit long before it
could meet the database.

Introspection fields (``__schema``, ``__type``) count one field each and are
not walked: graphql-core's MaxIntrospectionDepthRule bounds them.

A field whose work grows with its input rather than with what it returns
adds a weight of its own, read from its arguments as execution will coerce
them (written inline or passed as variables alike): ``rehydrate`` and
``resume`` ``SLICE_WEIGHT`` plus a unit per ``TOKENS_PER_UNIT`` tokens of
budget (a slice reads, renders and counts candidates in proportion, and
refills its pools up to that budget); ``checkpoint`` ``WRITE_WEIGHT`` per
item and replacement it writes; ``assertItems`` ``ASSERTION_WEIGHT`` per item,
and the list it returns counts once per item it was given. So 100 aliases of
``rehydrate(input: $i)`` sharing one variable weigh what 100 slices cost, not
100 small fields.

Each fragment is measured once per page size it is spread under, so the walk
is linear in the size of the document however its spreads repeat.
(Strawberry's QueryDepthLimiter and MaxAliasesLimiter re-walk a fragment at
every spread: 18 fragments that each spread the next one twice, 741 bytes,
took them 1.7 s here, doubling with each further fragment.)

The walk expects a document that passed graphql-core's validation: its fields
exist, its fragments are known and spread no cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, NamedTuple

from graphql.execution.values import VariableValues, get_argument_values

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    Undefined,
    VariableNode,
    get_named_type,
    get_nullable_type,
    get_operation_ast,
    get_variable_values,
    value_from_ast,
)

PAGE_ARGUMENT = "first"

SLICE_WEIGHT = 500
TOKENS_PER_UNIT = 8
"""A 4,000-token slice weighs 1,000: at most 25 of them fit in the default maxCost (25,000)."""
WRITE_WEIGHT = 50
"""What one item or replacement a checkpoint writes weighs (assertItem's work, inside one field)."""


# The arguments are graphql-core's coercion: dicts keyed by the schema's (camelCase) names.


def _slice_weight(arguments: Mapping[str, Any]) -> int:
    budget = (arguments.get("input") or {}).get("tokenBudget") or 0
    return SLICE_WEIGHT + max(int(budget), 0) // TOKENS_PER_UNIT


def _checkpoint_weight(arguments: Mapping[str, Any]) -> int:
    given = arguments.get("input") or {}
    written = len(given.get("items") or ()) + len(given.get("supersessions") or ())
    return WRITE_WEIGHT * (1 + written)


ASSERTION_WEIGHT = 10
"""What one item of ``assertItems`` weighs beyond the fields it returns: a row of one INSERT, where a
checkpoint's item (WRITE_WEIGHT) is a statement of its own. A full batch of 1,000 weighs 10,000."""

BATCHES = frozenset({"assertItems"})
"""Root fields that take a list ``input`` and return one element per item of it: they weigh
ASSERTION_WEIGHT per item, and their list holds exactly that many (not ``list_size``)."""


WEIGHTS = {"rehydrate": _slice_weight, "resume": _slice_weight, "checkpoint": _checkpoint_weight}
"""Root fields whose work grows with their input, and what their arguments make them weigh."""

TEXT_FIELDS = frozenset(
    {"statement", "details", "basis", "rendered", "summary", "reason", "supersessionReason", "statusReason"}
)
TEXT_WEIGHT = 5
"""A text field that may hold up to 20,000 characters weighs this many ordinary fields: 40 aliases of
``items(first: 500) { nodes { details } }`` weighed 20,080 and answered 180 MB; they weigh 120,080."""


class Measure(NamedTuple):
    depth: int = 0
    aliases: int = 0
    cost: int = 0

    def beside(self, other: Measure) -> Measure:
        """Two selections of one selection set: the deeper one, both aliases, both costs."""
        return Measure(max(self.depth, other.depth), self.aliases + other.aliases, self.cost + other.cost)


def measure(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    list_size: int,
) -> Measure:
    """The measure of the operation that would run; nothing when there is none to run."""
    operation = get_operation_ast(document, operation_name)
    root = schema.get_root_type(operation.operation) if operation else None
    if operation is None or root is None:
        return Measure()
    fragments = {
        definition.name.value: definition
        for definition in document.definitions
        if isinstance(definition, FragmentDefinitionNode)
    }
    walk = _Walk(schema, fragments, operation, dict(variables or {}), list_size)
    return walk.selections(operation.selection_set, root, None)


class _Walk:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        operation: OperationDefinitionNode,
        inputs: dict[str, Any],
        list_size: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.operation = operation
        self.inputs = inputs
        self.list_size = list_size
        self.measured: dict[tuple[str, int | None], Measure] = {}

    @cached_property
    def coerced(self) -> VariableValues | None:
        """The variables as execution will coerce them: only a page size or a weight given by a
        variable needs them. None when they do not coerce, which stops the operation before it
        runs: any estimate will do."""
        coerced = get_variable_values(self.schema, self.operation.variable_definitions or (), self.inputs)
        return coerced if isinstance(coerced, VariableValues) else None

    @property
    def variables(self) -> dict[str, Any]:
        return self.coerced.coerced if self.coerced is not None else {}

    def selections(
        self, selection_set: SelectionSetNode, parent: GraphQLNamedType, page: int | None
    ) -> Measure:
        """``page``: the page size of the field that owns this selection set, if it takes ``first``."""
        total = Measure()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total = total.beside(self.field(selection, parent, page))
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                narrowed = self.schema.get_type(condition.name.value) if condition else parent
                total = total.beside(self.selections(selection.selection_set, narrowed or parent, page))
            elif isinstance(selection, FragmentSpreadNode):
                total = total.beside(self.spread(selection.name.value, page))
        return total

    def spread(self, name: str, page: int | None) -> Measure:
        key = (name, page)
        if key not in self.measured:
            self.measured[key] = Measure()  # a cycle (refused by validation anyway) adds nothing
            fragment = self.fragments.get(name)
            condition = self.schema.get_type(fragment.type_condition.name.value) if fragment else None
            if fragment is not None and condition is not None:
                self.measured[key] = self.selections(fragment.selection_set, condition, page)
        return self.measured[key]

    def field(self, node: FieldNode, parent: GraphQLNamedType, page: int | None) -> Measure:
        aliases = 1 if node.alias else 0
        definition = _definition(parent, node.name.value)
        if node.selection_set is None or definition is None:
            # A leaf, __typename, or introspection (bounded by its own rule); long texts weigh more.
            long_text = definition is not None and node.name.value in TEXT_FIELDS
            return Measure(0, aliases, TEXT_WEIGHT if long_text else 1)
        weight = self.weight(node, definition, parent)
        first = self.first(node, definition)
        batch = self.batch(node, parent)
        if batch is not None:
            weight += ASSERTION_WEIGHT * batch
        if isinstance(get_nullable_type(definition.type), GraphQLList):
            size = first if first is not None else page if page is not None else self.list_size
            size = batch if batch is not None else size
            inner = self.selections(node.selection_set, get_named_type(definition.type), None)
        else:
            size = 1
            inner = self.selections(node.selection_set, get_named_type(definition.type), first)
        return Measure(inner.depth + 1, aliases + inner.aliases, 1 + weight + size * inner.cost)

    def weight(self, node: FieldNode, definition: GraphQLField, parent: GraphQLNamedType) -> int:
        """What the field's own work weighs beyond the fields it returns (the module's docstring)."""
        weigh = WEIGHTS.get(node.name.value)
        if weigh is None or parent not in (self.schema.query_type, self.schema.mutation_type):
            return 0
        try:
            arguments = get_argument_values(definition, node, self.coerced)
        except GraphQLError:
            return weigh({})  # arguments that do not coerce stop the operation before it runs
        return weigh(arguments)

    def batch(self, node: FieldNode, parent: GraphQLNamedType) -> int | None:
        """How many items a batch field (``BATCHES``) is given, or None for any other field.

        Counted on the request as sent, without coercing a thousand inputs twice: a list
        written in the document, or a variable's list (a single value is a list of one, as
        coercion makes it)."""
        if node.name.value not in BATCHES or parent is not self.schema.mutation_type:
            return None
        given = next((a.value for a in node.arguments or () if a.name.value == "input"), None)
        if isinstance(given, ListValueNode):
            return len(given.values)
        if isinstance(given, VariableNode):
            if given.name.value not in self.inputs:  # its default, if it has one
                value = self.variables.get(given.name.value)
            else:
                value = self.inputs[given.name.value]
            return len(value) if isinstance(value, list) else int(value is not None)
        return int(given is not None)

    def first(self, node: FieldNode, definition: GraphQLField) -> int | None:
        """The page size this field asks for: its ``first`` argument, else that argument's default."""
        argument = definition.args.get(PAGE_ARGUMENT)
        if argument is None:
            return None
        given = next((a.value for a in node.arguments or () if a.name.value == PAGE_ARGUMENT), None)
        variables = self.variables if isinstance(given, VariableNode) else None
        value = value_from_ast(given, argument.type, variables) if given is not None else Undefined
        if value is Undefined or value is None:
            value = argument.default_value
        return max(value, 0) if isinstance(value, int) else self.list_size


def _definition(parent: GraphQLNamedType, name: str) -> GraphQLField | None:
    if name.startswith("__") or not isinstance(parent, (GraphQLObjectType, GraphQLInterfaceType)):
        return None
    return parent.fields.get(name)
