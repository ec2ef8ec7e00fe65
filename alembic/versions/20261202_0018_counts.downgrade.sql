SET LOCAL ROLE mneia_owner;
SET LOCAL check_function_bodies = off;
DROP TRIGGER items_counted_delete ON items;
DROP TRIGGER items_counted_insert ON items;
DROP TRIGGER items_counted_update ON items;
DROP POLICY item_count_keep ON item_counts;
DROP POLICY item_count_read ON item_counts;
DROP FUNCTION mneia_fold_item_counts();
DROP FUNCTION mneia_item_count_deltas(rows items[], sign integer);
DROP FUNCTION mneia_items_count();
DROP TABLE item_counts;
CREATE INDEX items_selection ON items (workspace_id, project_id, status, kind)
  INCLUDE (scope, asserted_by, load_bearing, grant_actor_ids);
RESET ROLE;
