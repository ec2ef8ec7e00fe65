"""The printed schema describes itself (issue 26): a client developer reads what each thing means
in the schema, without the source. No database needed: the schema is built and walked."""

from __future__ import annotations

from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    build_ast_schema,
    parse,
    specified_scalar_types,
)
from mneia.resolvers.root import build_schema


def undescribed(schema: GraphQLSchema) -> dict[str, list[str]]:
    """Per kind, the coordinates of every element without a description (blank counts as none)."""
    missing: dict[str, list[str]] = {
        "type": [],
        "field": [],
        "argument": [],
        "enum value": [],
        "input field": [],
    }

    def lacks(description: str | None) -> bool:
        return not (description or "").strip()

    for name, named in sorted(schema.type_map.items()):
        if name.startswith("__") or name in specified_scalar_types:
            continue
        if lacks(named.description):
            missing["type"].append(name)
        if isinstance(named, GraphQLObjectType | GraphQLInterfaceType):
            for field_name, field in named.fields.items():
                if lacks(field.description):
                    missing["field"].append(f"{name}.{field_name}")
                for argument_name, argument in field.args.items():
                    if lacks(argument.description):
                        missing["argument"].append(f"{name}.{field_name}({argument_name}:)")
        elif isinstance(named, GraphQLInputObjectType):
            for field_name, input_field in named.fields.items():
                if lacks(input_field.description):
                    missing["input field"].append(f"{name}.{field_name}")
        elif isinstance(named, GraphQLEnumType):
            for value_name, value in named.values.items():
                if lacks(value.description):
                    missing["enum value"].append(f"{name}.{value_name}")
    return missing


def test_every_type_field_argument_enum_value_and_input_field_is_described() -> None:
    missing = undescribed(build_schema()._schema)
    lacking = [f"{kind}: {name}" for kind, names in missing.items() for name in names]
    assert not lacking, f"{len(lacking)} schema elements lack a description:\n" + "\n".join(lacking)


def test_the_check_reports_each_kind() -> None:
    """Control: an undescribed element of each kind is reported, so a pass is not an empty walk."""
    bare = build_ast_schema(
        parse(
            """
            enum Colour { RED }
            input Paint { colour: Colour }
            type Query { paint(with: Paint): String }
            """
        )
    )
    assert undescribed(bare) == {
        "type": ["Colour", "Paint", "Query"],
        "field": ["Query.paint"],
        "argument": ["Query.paint(with:)"],
        "enum value": ["Colour.RED"],
        "input field": ["Paint.colour"],
    }
