SET LOCAL check_function_bodies = off;
CREATE INDEX items_search_constraint ON public.items USING gin (search) WHERE ((kind = 'CONSTRAINT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_search_decision ON public.items USING gin (search) WHERE ((kind = 'DECISION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_search_fact ON public.items USING gin (search) WHERE ((kind = 'FACT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_search_preference ON public.items USING gin (search) WHERE ((kind = 'PREFERENCE'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_search_question ON public.items USING gin (search) WHERE ((kind = 'QUESTION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_search_task ON public.items USING gin (search) WHERE ((kind = 'TASK'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
