-- 0023 downgrade: the replacements' index keyed by the project alone, as 0022 left it.
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (project_id, asserted_at, id) WHERE (supersedes_id IS NOT NULL);
RESET ROLE;
