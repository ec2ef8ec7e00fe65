-- 0019 downgrade: the text indexes over the search vector alone, and no btree_gin (the
-- administrator's again, after the role switch back).
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_search;
CREATE INDEX items_search ON public.items USING gin (search);
DROP INDEX public.items_search_constraint;
CREATE INDEX items_search_constraint ON public.items USING gin (search) WHERE ((kind = 'CONSTRAINT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_decision;
CREATE INDEX items_search_decision ON public.items USING gin (search) WHERE ((kind = 'DECISION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_fact;
CREATE INDEX items_search_fact ON public.items USING gin (search) WHERE ((kind = 'FACT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_preference;
CREATE INDEX items_search_preference ON public.items USING gin (search) WHERE ((kind = 'PREFERENCE'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_question;
CREATE INDEX items_search_question ON public.items USING gin (search) WHERE ((kind = 'QUESTION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_search_task;
CREATE INDEX items_search_task ON public.items USING gin (search) WHERE ((kind = 'TASK'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at DESC) WHERE (supersedes_id IS NOT NULL);
DROP STATISTICS public.items_tenancy;
RESET ROLE;
DROP EXTENSION IF EXISTS btree_gin;
