"""Table definitions (SQLAlchemy Core), used by the repositories for typed queries.

The DDL itself is declared in storage/sql (with what Core cannot express:
row-level security, policies, triggers, grants) and reached by the
migrations. tests/test_declared.py compares these tables with the migrated
database's columns, so a column added there and forgotten here fails a test.
Columns holding a word of the vocabulary read back as its enum.

Every tenant table leads with ``workspace_id`` and has it in its primary key
and in every foreign key, so the tables can be distributed by workspace later.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    Integer,
    Interval,
    MetaData,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

from mneia.vocabulary import (
    ActorKind,
    DisputeStatus,
    ItemEventKind,
    ItemKind,
    ItemStatus,
    ProposalKind,
    ProposalStatus,
    Scope,
)

metadata = MetaData()


class Word(TypeDecorator[StrEnum]):
    """A text column holding a word of the vocabulary: written as its value, read back as the enum."""

    impl = Text
    cache_ok = True

    def __init__(self, words: type[StrEnum]) -> None:
        super().__init__()
        self.words = words

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else self.words(value).value

    def process_result_value(self, value: Any, dialect: Dialect) -> StrEnum | None:
        return None if value is None else self.words(value)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], StrEnum | None]:
        """``process_result_value`` by a dictionary lookup: a rehydration reads some 250 rows of
        four words each, and the enum's own call was about 40% of converting those rows."""
        members, words = self.words._value2member_map_, self.words

        def process(value: Any) -> StrEnum | None:
            if value is None:
                return None
            found = members.get(value)
            return found if found is not None else words(value)  # type: ignore[return-value]

        return process


def _ws() -> Column[uuid.UUID]:
    return Column("workspace_id", UUID(as_uuid=True), primary_key=True)


def _id() -> Column[uuid.UUID]:
    return Column("id", UUID(as_uuid=True), primary_key=True)


def _audience(prefix: str, *, project: bool) -> list[Column[Any]]:
    """An item's audience copied onto a row shown with it (visibility.sql, mneia_copy_audience):
    read by the policies only."""
    return [
        *([_uuid(f"{prefix}_project_id")] if project else []),
        Column(f"{prefix}_scope", Text, nullable=False),
        _uuid(f"{prefix}_asserted_by"),
        Column(f"{prefix}_grants", ARRAY(UUID(as_uuid=True))),
    ]


def _uuid(name: str, nullable: bool = False) -> Column[uuid.UUID]:
    return Column(name, UUID(as_uuid=True), nullable=nullable)


def _at(name: str, nullable: bool = False) -> Column[datetime]:
    return Column(name, DateTime(timezone=True), nullable=nullable)


workspaces = Table(
    "workspaces",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("name", Text, nullable=False),
    _at("created_at"),
    Column("region", Text, nullable=False),
)

identities = Table(
    "identities",
    metadata,
    Column("id", UUID(as_uuid=True), primary_key=True),
    Column("display_name", Text, nullable=False),
    _at("created_at"),
    # R19: the OpenID provider's issuer and subject (storage/sql/identity.sql); NULL for none.
    Column("issuer", Text),
    Column("subject", Text),
)

actors = Table(
    "actors",
    metadata,
    _ws(),
    _id(),
    Column("kind", Word(ActorKind), nullable=False),
    Column("name", Text, nullable=False),
    _uuid("identity_id", nullable=True),
    _uuid("created_by", nullable=True),
    _at("created_at"),
    _at("erased_at", nullable=True),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    _ws(),
    _id(),
    _uuid("actor_id"),
    Column("token_hash", Text, nullable=False),
    _uuid("created_by", nullable=True),
    _at("created_at"),
    _at("revoked_at", nullable=True),
    Column("hint", Text),
    _at("expires_at", nullable=True),
    _uuid("revoked_by", nullable=True),
    _uuid("actor_created_by", nullable=True),  # copied by a trigger (visibility.sql)
)

teams = Table(
    "teams",
    metadata,
    _ws(),
    _id(),
    Column("name", Text, nullable=False),
    Column("function", Text, nullable=False),
    _uuid("created_by"),
    _at("created_at"),
)

team_members = Table(
    "team_members",
    metadata,
    _ws(),
    Column("team_id", UUID(as_uuid=True), primary_key=True),
    Column("actor_id", UUID(as_uuid=True), primary_key=True),
    _uuid("added_by"),
    _at("added_at"),
    _uuid("team_created_by", nullable=True),  # copied by a trigger (visibility.sql)
)

projects = Table(
    "projects",
    metadata,
    _ws(),
    _id(),
    Column("name", Text, nullable=False),
    _uuid("team_id", nullable=True),
    _uuid("created_by"),
    _at("created_at"),
)

project_members = Table(
    "project_members",
    metadata,
    _ws(),
    Column("project_id", UUID(as_uuid=True), primary_key=True),
    Column("actor_id", UUID(as_uuid=True), primary_key=True),
    _uuid("added_by"),
    _at("added_at"),
    _uuid("project_created_by", nullable=True),  # copied by a trigger (visibility.sql)
)

clients = Table(
    "clients",
    metadata,
    _ws(),
    _id(),
    Column("tool", Text),
    Column("version", Text),
)

sessions = Table(
    "sessions",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    _uuid("actor_id"),
    _uuid("client_id", nullable=True),
    Column("external_id", Text),
    Column("deep_link", Text),
    Column("task", Text),
    _at("started_at"),
    _at("ended_at", nullable=True),
    _at("transcript_started_at", nullable=True),
    _at("transcript_ended_at", nullable=True),
)

items = Table(
    "items",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    Column("kind", Word(ItemKind), nullable=False),
    Column("statement", Text, nullable=False),
    Column("details", Text),
    Column("basis", Text),
    Column("confidence", Float),
    Column("status", Word(ItemStatus), nullable=False),
    Column("status_reason", Text),
    Column("scope", Word(Scope), nullable=False),
    Column("grant_actor_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    _uuid("asserted_by"),
    _at("asserted_at"),
    _uuid("session_id", nullable=True),
    _at("valid_from", nullable=True),
    _at("valid_to", nullable=True),
    Column("decay_after", Interval),
    _at("last_verified_at", nullable=True),
    Column("load_bearing", Boolean, nullable=False),
    _uuid("load_bearing_set_by", nullable=True),
    _at("load_bearing_set_at", nullable=True),
    Column("load_bearing_suggested", Boolean, nullable=False),
    _uuid("confirmed_by", nullable=True),
    _at("confirmed_at", nullable=True),
    _uuid("supersedes_id", nullable=True),
    Column("supersession_reason", Text),
    _at("said_at", nullable=True),
    Column("redacted", ARRAY(Text), nullable=False),
    _at("redacted_at", nullable=True),
    Column("redaction_reason", Text),
)

item_events = Table(
    "item_events",
    metadata,
    _ws(),
    _id(),
    Column("seq", BigInteger, nullable=False),
    _uuid("item_id"),
    _uuid("actor_id"),
    _at("at"),
    Column("event", Word(ItemEventKind), nullable=False),
    Column("from_status", Word(ItemStatus)),
    Column("to_status", Word(ItemStatus), nullable=False),
    Column("load_bearing", Boolean, nullable=False),
    Column("confirmed", Boolean, nullable=False),
    Column("reason", Text),
    Column("data", JSONB, nullable=False),
    *_audience("item", project=True),
)

item_states = Table(
    "item_states",
    metadata,
    _ws(),
    Column("item_id", UUID(as_uuid=True), primary_key=True),
    Column("since", DateTime(timezone=True), primary_key=True),
    _at("until"),
    Column("status", Word(ItemStatus), nullable=False),
    Column("status_reason", Text),
    Column("load_bearing", Boolean, nullable=False),
    Column("load_bearing_suggested", Boolean, nullable=False),
    _uuid("confirmed_by", nullable=True),
    _at("confirmed_at", nullable=True),
    _at("last_verified_at", nullable=True),
    *_audience("item", project=True),
)

proposals = Table(
    "proposals",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    Column("kind", Word(ProposalKind), nullable=False),
    Column("status", Word(ProposalStatus), nullable=False),
    _uuid("target_id"),
    _uuid("proposed_by"),
    _at("proposed_at"),
    Column("reason", Text),
    Column("replacement", JSONB),
    _uuid("result_id", nullable=True),
    _uuid("decided_by", nullable=True),
    _at("decided_at", nullable=True),
    Column("decision_note", Text),
    Column("seq", BigInteger, nullable=False),
    *_audience("target", project=False),
)

disputes = Table(
    "disputes",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    Column("status", Word(DisputeStatus), nullable=False),
    _uuid("item_id"),
    _uuid("contested_id"),
    _uuid("raised_by"),
    _at("raised_at"),
    Column("reason", Text),
    _uuid("resolved_by", nullable=True),
    _at("resolved_at", nullable=True),
    _uuid("kept_item_id", nullable=True),
    Column("resolution_note", Text),
    Column("seq", BigInteger, nullable=False),
    *_audience("item", project=False),
    *_audience("contested", project=False),
)

handoffs = Table(
    "handoffs",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    _uuid("session_id"),
    _uuid("created_by"),
    _at("created_at"),
    Column("summary", Text, nullable=False),
    Column("next_steps", ARRAY(Text), nullable=False),
    Column("open_questions", ARRAY(Text), nullable=False),
    Column("item_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("replacement_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("proposal_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("dispute_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("pointed_ids", ARRAY(UUID(as_uuid=True)), nullable=False),
    Column("idempotency_key", Text),
    Column("request_digest", Text, nullable=False),
    Column("draft", Boolean, nullable=False),
    _uuid("session_actor_id", nullable=True),  # copied by a trigger (visibility.sql)
    _uuid("session_project_id", nullable=True),
)

imports = Table(
    "imports",
    metadata,
    _ws(),
    Column("project_id", UUID(as_uuid=True), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("document", Text),
    Column("position", Integer, nullable=False),
    Column("digest", Text, nullable=False),
    _uuid("item_id", nullable=True),
    _uuid("proposal_id", nullable=True),
    _uuid("imported_by"),
    _at("imported_at"),
)

retention_policies = Table(
    "retention_policies",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id", nullable=True),
    Column("kinds", ARRAY(Text), nullable=False),
    Column("statuses", ARRAY(Text), nullable=False),
    Column("after", Interval, nullable=False),
    _uuid("created_by"),
    _at("created_at"),
    _uuid("removed_by", nullable=True),
    _at("removed_at", nullable=True),
)

legal_holds = Table(
    "legal_holds",
    metadata,
    _ws(),
    _id(),
    _uuid("project_id"),
    _uuid("item_id", nullable=True),
    Column("reason", Text, nullable=False),
    _uuid("placed_by"),
    _at("placed_at"),
    _uuid("released_by", nullable=True),
    _at("released_at", nullable=True),
)

# Issue 24: how many items each audience of a project sees (storage/sql/counts.sql), read under RLS.
item_counts = Table(
    "item_counts",
    metadata,
    _ws(),
    Column("project_id", UUID(as_uuid=True), primary_key=True),
    Column("scope", Text, primary_key=True),
    Column("actor_id", UUID(as_uuid=True), primary_key=True),
    Column("via_grant", Boolean, primary_key=True),
    Column("status", Text, primary_key=True),
    Column("kind", Text, primary_key=True),
    Column("load_bearing", Boolean, primary_key=True),
    Column("confirmed", Boolean, primary_key=True),
    Column("slot", Integer, primary_key=True),
    Column("n", BigInteger, nullable=False),
)

# R19: a workspace's invitations, accepted at a person's first sign-in (storage/sql/identity.sql).
invitations = Table(
    "invitations",
    metadata,
    _ws(),
    _id(),
    Column("email", Text, nullable=False),
    _uuid("invited_by"),
    _at("created_at"),
    _at("expires_at"),
    _at("accepted_at", nullable=True),
    _uuid("accepted_actor_id", nullable=True),
)
