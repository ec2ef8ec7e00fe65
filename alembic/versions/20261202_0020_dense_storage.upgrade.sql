-- 0020 upgrade: denser storage (issue 24). B-trees ascending (read backward for newest
-- first), items_live one index per kind of ids alone, and an assertion's event without
-- its null keys. The result equals storage/sql (tests/test_declared.py).
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_page;
CREATE INDEX items_page ON public.items USING btree (workspace_id, project_id, id);
DROP INDEX public.items_live;
CREATE INDEX items_live_constraint ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'CONSTRAINT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_decision ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'DECISION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_fact ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'FACT'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_preference ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'PREFERENCE'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_question ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'QUESTION'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
CREATE INDEX items_live_task ON public.items USING btree (workspace_id, project_id, id) WHERE ((kind = 'TASK'::text) AND (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text])));
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at, id) WHERE (supersedes_id IS NOT NULL);
DROP INDEX public.item_events_kind;
CREATE INDEX item_events_kind ON public.item_events USING btree (workspace_id, event, at, seq);
CREATE OR REPLACE FUNCTION public.mneia_items_asserted_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    trusted boolean := public.mneia_trusted_session();
    who uuid := public.mneia_actor();
  BEGIN
    INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                    load_bearing, confirmed, reason, data)
    SELECT a.workspace_id, a.id, e.actor, e.at, e.event, e.was, a.status, e.bearing, e.ruled, e.why, e.extra
    FROM asserted a
    CROSS JOIN LATERAL (SELECT CASE WHEN trusted THEN a.asserted_at ELSE now() END AS instant,
                               a.confirmed_by IS NOT NULL AS confirmed) t
    CROSS JOIN LATERAL (VALUES
      (1, true, 'ASSERTED', a.asserted_by, t.instant, NULL::text,
       a.load_bearing AND a.load_bearing_set_at <= a.asserted_at,
       t.confirmed AND a.confirmed_at <= a.asserted_at,
       coalesce(a.supersession_reason, a.status_reason),
       jsonb_strip_nulls(jsonb_build_object('supersedes', a.supersedes_id, 'session', a.session_id))),
      (2, t.confirmed AND a.confirmed_at > a.asserted_at, 'CONFIRMED', a.confirmed_by,
       greatest(a.confirmed_at, t.instant), a.status,
       a.load_bearing AND a.load_bearing_set_at <= a.confirmed_at, true, NULL, '{}'::jsonb),
      (3, a.load_bearing AND a.load_bearing_set_at > a.asserted_at, 'LOAD_BEARING_SET',
       a.load_bearing_set_by, greatest(a.load_bearing_set_at, t.instant), a.status, true,
       t.confirmed AND a.confirmed_at <= a.load_bearing_set_at, NULL, '{}'),
      (4, a.last_verified_at > a.asserted_at, 'VERIFIED', coalesce(who, a.asserted_by),
       greatest(a.last_verified_at, t.instant), a.status,
       a.load_bearing AND a.load_bearing_set_at <= a.last_verified_at,
       t.confirmed AND a.confirmed_at <= a.last_verified_at, NULL, '{}')
    ) e (n, wanted, event, actor, at, was, bearing, ruled, why, extra)
    WHERE e.wanted
    ORDER BY a.id, e.n;

    -- As of each instant from the assertion on: what its own times tell then (a
    -- confirmation dated later is not in the state before it), until the next.
    INSERT INTO public.item_states (workspace_id, item_id, since, until, status, status_reason,
                                    load_bearing, load_bearing_suggested, confirmed_by, confirmed_at,
                                    last_verified_at)
    SELECT a.workspace_id, a.id, m.moment,
           coalesce(lead(m.moment) OVER (PARTITION BY a.id ORDER BY m.moment), 'infinity'),
           a.status, a.status_reason, a.load_bearing AND coalesce(a.load_bearing_set_at <= m.moment, true),
           a.load_bearing_suggested,
           CASE WHEN a.confirmed_at <= m.moment THEN a.confirmed_by END,
           CASE WHEN a.confirmed_at <= m.moment THEN a.confirmed_at END,
           CASE WHEN a.last_verified_at <= m.moment THEN a.last_verified_at END
    FROM asserted a
    CROSS JOIN LATERAL (SELECT CASE WHEN trusted THEN a.asserted_at ELSE now() END AS instant) t
    CROSS JOIN LATERAL (SELECT DISTINCT x AS moment
                        FROM unnest(ARRAY[t.instant, a.confirmed_at, a.load_bearing_set_at,
                                          a.last_verified_at]) x
                        WHERE x >= t.instant) m
    ORDER BY a.id, m.moment;
    RETURN NULL;
  END
  $$;
RESET ROLE;
