-- 0023 upgrade: the replacements' index keyed by the workspace and the project again.
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at, id) WHERE (supersedes_id IS NOT NULL);
RESET ROLE;
