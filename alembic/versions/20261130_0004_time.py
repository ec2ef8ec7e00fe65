"""Time, whole: an item's past states, and the instant of an event (R9).

Revision ID: 0004_time
Revises: 0003_tokens
Create Date: 2026-11-30

- ``item_states``: what an item was from one instant until the next change
  (status, reason, load-bearing and its suggestion, confirmation,
  verification), written by the event log trigger beside each event, so that
  an as-of read joins one state per item instead of replaying its events;
- the instant of an event is the transaction's time, never earlier than the
  item's last change; a replacement accepted from a proposal is recorded
  when accepted (it carries, as before, the time the agent proposed it);
- a declined load-bearing suggestion is logged (``LOAD_BEARING_DECLINED``),
  and an event's kind is one of the vocabulary's (``item_events_event_check``);
- ``items_asserted`` finds an as-of page without walking past what was said
  after its moment.
The states of existing items are rebuilt from their events. The upgrade and
downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0004_time"
down_revision = "0003_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
