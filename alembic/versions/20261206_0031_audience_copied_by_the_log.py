"""The event log copies each item's audience onto the events and states it writes (issue 24).

Migration 0026 copied an item's audience (project, scope, asserter, grants) onto
its events and states with a BEFORE INSERT row trigger, ``mneia_copy_audience``,
which read the item again for every row under the items' policies: a trusted
bulk load with history (``benchmarks/foundation.py``) went from about 6,400 to
about 5,000 items/s, a tenth of its time in that trigger (``pg_stat_user_functions``).

Events and states are written by the owner alone (``mneia_app`` has no INSERT
on them): by the event log's triggers, or by a session of the owner's. Now:

- ``mneia_items_asserted_log``, ``mneia_item_event``, ``mneia_item_state`` and
  ``mneia_item_history`` write the copies themselves, from the item they log
  (its row, or the statement's transition table).
- ``item_events_audience`` and ``item_states_audience`` fire ``WHEN
  (pg_trigger_depth() = 0)``: for a statement a session runs, whose copies they
  still overwrite from the item; not for the rows the log's triggers write.
- ``mneia_items_guard`` reads the context's actor after its trust test, not
  before: a trusted load no longer opens the sealed context for every row.
- ``mneia_items_asserted_log`` copies into its array (0027's, for Citus) only
  the rows whose history is not implied, and stops when there are none; 0027
  copied every row the statement wrote, search vectors included.
- ``mneia_items_count`` sums each transition table by counter row as it reads
  it, into an array of ``item_counts`` rows, rather than copying every item
  (``mneia_item_count_deltas``, which did the summing after, is dropped).

No row is touched. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0031_audience_copied_by_the_log"
down_revision = "0030_one_shard_upkeep"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
