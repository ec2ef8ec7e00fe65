SET LOCAL check_function_bodies = off;
CREATE INDEX item_events_kind ON public.item_events USING btree (workspace_id, event, at DESC, seq DESC);
CREATE INDEX items_decaying ON public.items USING btree (workspace_id, project_id, COALESCE(last_verified_at, asserted_at), id) WHERE ((status = 'ACTIVE'::text) AND (decay_after IS NOT NULL));
CREATE INDEX items_unconfirmed ON public.items USING btree (workspace_id, project_id, ((NOT load_bearing_suggested)), COALESCE((- confidence), (1)::double precision), asserted_at, id) WHERE ((status = 'ACTIVE'::text) AND (confirmed_by IS NULL));
