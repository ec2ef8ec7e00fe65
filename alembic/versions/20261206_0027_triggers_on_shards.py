"""The item, creator and audience triggers work on a Citus shard too (issue 25).

On Citus a trigger fires on a shard (``items_102310``), inside a worker, and
whatever it runs against a distributed table is planned by Citus. Three things
the triggers did that a shard breaks, each now done another way with the same
result on one server:

- ``mneia_copy_creator`` (0025, 0026) and ``mneia_copy_audience`` (0026) told
  their tables apart by ``TG_TABLE_NAME``, which on a shard carries the shard's
  number, so every insert took the last branch and failed (``record "new" has
  no field "project_created_by"``). Each trigger now passes its table's name
  (``TG_ARGV[0]``).
- ``mneia_items_asserted_log`` read its transition table (``asserted``) in the
  statement that writes ``item_events`` and ``item_states``; Citus plans that
  statement and loses the transition table (``executor could not find named
  tuplestore "asserted"``). It now reads it alone, into an array, first, as
  ``mneia_items_count`` already did.
- ``mneia_items_log`` and ``mneia_items_guard`` passed ``NEW`` and ``OLD``, and
  the guard a row of a query on ``proposals``, to functions that take
  ``public.items`` and ``public.proposals``; on a shard they are of the shard's
  row type, which no such function accepts (``function
  public.mneia_item_history(items_102328) does not exist``,
  ``mneia_replacement_matches(proposals_102416, items)``). They are copied
  into variables of the table's type first.

No row is touched. The upgrade and downgrade are the SQL files beside this one.
"""

from __future__ import annotations

from mneia.storage.migration import run_beside

revision = "0027_triggers_on_shards"
down_revision = "0026_audiences_on_the_rows"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_beside(__file__, "upgrade")


def downgrade() -> None:
    run_beside(__file__, "downgrade")
