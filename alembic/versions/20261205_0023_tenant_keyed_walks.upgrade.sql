-- 0023 upgrade: the B-trees walked in order keyed by the workspace and the project again
-- (0022 had keyed them by the project alone); the text indexes keep the project alone.
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_asserted;
DROP INDEX public.items_decaying;
DROP INDEX public.items_guaranteed;
DROP INDEX public.items_live_constraint;
DROP INDEX public.items_live_decision;
DROP INDEX public.items_live_fact;
DROP INDEX public.items_live_preference;
DROP INDEX public.items_live_question;
DROP INDEX public.items_live_task;
DROP INDEX public.items_page;
DROP INDEX public.items_replacements;
DROP INDEX public.items_unconfirmed;
CREATE INDEX items_asserted ON public.items USING btree (workspace_id, project_id, asserted_at, id);
CREATE INDEX items_decaying ON public.items USING btree (workspace_id, project_id, COALESCE(last_verified_at, asserted_at), id) WHERE ((status = 'ACTIVE'::text) AND (decay_after IS NOT NULL));
CREATE INDEX items_guaranteed ON public.items USING btree (workspace_id, project_id) WHERE ((kind = 'CONSTRAINT'::text) AND (status = 'ACTIVE'::text) AND load_bearing);
CREATE INDEX items_live_constraint ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'CONSTRAINT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_decision ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'DECISION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_fact ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'FACT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_preference ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'PREFERENCE'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_question ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'QUESTION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_task ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'TASK'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_page ON public.items USING btree (workspace_id, project_id, id);
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at, id) WHERE (supersedes_id IS NOT NULL);
CREATE INDEX items_unconfirmed ON public.items USING btree (workspace_id, project_id, ((NOT load_bearing_suggested)), COALESCE((- confidence), (1)::double precision), asserted_at, id) WHERE ((status = 'ACTIVE'::text) AND (confirmed_by IS NULL));
RESET ROLE;
