-- 0019 upgrade: the text indexes keyed by workspace and project (btree_gin).
-- The extension is the administrator's (storage/sql/roles.sql), so it comes before the
-- role switch. The result equals storage/sql (tests/test_declared.py).
SET LOCAL search_path = public, pg_catalog, pg_temp;
CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public;
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_search;
CREATE INDEX items_search ON public.items USING gin (workspace_id, project_id, search);
DROP INDEX public.items_search_constraint;
CREATE INDEX items_search_constraint ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'CONSTRAINT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_decision;
CREATE INDEX items_search_decision ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'DECISION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_fact;
CREATE INDEX items_search_fact ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'FACT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_preference;
CREATE INDEX items_search_preference ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'PREFERENCE'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_question;
CREATE INDEX items_search_question ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'QUESTION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_task;
CREATE INDEX items_search_task ON public.items USING gin (workspace_id, project_id, search) WHERE ((kind = 'TASK'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at DESC, id DESC) WHERE (supersedes_id IS NOT NULL);
CREATE STATISTICS public.items_tenancy (dependencies) ON workspace_id, project_id FROM public.items;
RESET ROLE;
