"""A subscription class's data is encoded once (resolvers.execution.SharedData, http.view.encode_json).

Every subscriber's ``next`` message must be exactly the JSON Strawberry would
have written for it: the shared text is only wrapped with each operation's id.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mneia.http.view import GraphQLOverHTTP
from mneia.resolvers.execution import SharedData

# encode_json reads nothing of the view's state: a bare instance serves.
VIEW = GraphQLOverHTTP.__new__(GraphQLOverHTTP)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _plain(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


@given(
    data=st.dictionaries(st.text(max_size=10), json_values, max_size=5), ids=st.lists(st.text(), min_size=1)
)
def test_r15_each_subscriber_gets_strawberrys_json_of_the_shared_data(
    data: dict[str, Any], ids: list[str]
) -> None:
    shared = SharedData(data)
    for operation_id in ids:
        message = {"id": operation_id, "type": "next", "payload": {"data": shared}}
        encoded = VIEW.encode_json(message)
        assert encoded == _plain({"id": operation_id, "type": "next", "payload": {"data": data}})
        assert json.loads(encoded)["payload"]["data"] == json.loads(json.dumps(data))
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
