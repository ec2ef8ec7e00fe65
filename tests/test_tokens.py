"""Token counting works offline with the standard cl100k_base ids (R11.7's counter)."""

from __future__ import annotations

import socket

import pytest

from mneia.rehydration import tokens


def test_counts_with_the_official_cl100k_ids_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens.encoding.cache_clear()

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("token counting tried to reach the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    encoding = tokens.encoding()
    assert encoding.name == "cl100k_base"
    # Known ids of the official cl100k_base vocabulary.
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert tokens.count("Refunds must never exceed the captured amount") == len(
        encoding.encode_ordinary("Refunds must never exceed the captured amount")
    )


def test_special_token_text_counts_as_plain_text() -> None:
    assert tokens.count("<|endoftext|>") > 1
