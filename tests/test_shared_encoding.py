"""A subscription class's data is encoded once (resolvers.request.execution.SharedData,
http.view.encode_json).

Every subscriber's ``next`` message must be exactly the JSON the view writes
for any message (``http.encoding``): the shared text is only wrapped with each
operation's id. And that JSON parses back to what was encoded, whatever the
values (orjson, with the standard library for what orjson refuses).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mneia.http.encoding import encoded
from mneia.http.view import GraphQLOverHTTP
from mneia.resolvers.request.execution import SharedData

# encode_json reads nothing of the view's state: a bare instance serves.
VIEW = GraphQLOverHTTP.__new__(GraphQLOverHTTP)

# What a GraphQL answer can hold: graphql-core serializes no float that is not finite, and Int is
# 32 bits (64 here, for what extensions may carry).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _plain(message: dict[str, Any]) -> str:
    return encoded(message)


@given(
    data=st.dictionaries(st.text(max_size=10), json_values, max_size=5), ids=st.lists(st.text(), min_size=1)
)
def test_r15_each_subscriber_gets_strawberrys_json_of_the_shared_data(
    data: dict[str, Any], ids: list[str]
) -> None:
    shared = SharedData(data)
    for operation_id in ids:
        message = {"id": operation_id, "type": "next", "payload": {"data": shared}}
        text = VIEW.encode_json(message)
        assert text == _plain({"id": operation_id, "type": "next", "payload": {"data": data}})
        assert json.loads(text) == {"id": operation_id, "type": "next", "payload": {"data": data}}
    # The view encoded it once and kept the text: asking again encodes nothing.
    assert shared.encoded(lambda _: "not encoded again") == _plain(data)


def test_r15_the_shared_data_is_encoded_once_for_every_subscriber() -> None:
    shared = SharedData({"disputeRaised": {"id": "d1", "reason": "no"}})
    calls: list[object] = []

    def counting(value: object) -> str:
        calls.append(value)
        return _plain(value)  # type: ignore[arg-type]

    texts = {shared.encoded(counting) for _ in range(200)}
    assert len(calls) == 1 and texts == {_plain({"disputeRaised": {"id": "d1", "reason": "no"}})}


def test_other_messages_are_encoded_as_strawberry_encodes_them() -> None:
    """Not shared, with errors beside the data, or another type: the plain encoding."""
    shared = SharedData({"a": 1})
    for message in (
        {"id": "1", "type": "next", "payload": {"data": {"a": 1}}},
        {"id": "1", "type": "next", "payload": {"data": shared, "errors": [{"message": "x"}]}},
        {"id": "1", "type": "complete"},
        {"type": "connection_ack"},
    ):
        assert VIEW.encode_json(message) == _plain(message)


@given(big=st.integers(min_value=2**64) | st.integers(max_value=-(2**64)), text=st.text())
def test_what_orjson_refuses_is_still_encoded(big: int, text: str) -> None:
    """An integer beyond 64 bits, or a string with a lone surrogate: the standard library writes it."""
    for value in ({"n": big, "s": text}, {"s": text + "\ud800"}):
        assert json.loads(encoded(value)) == value
