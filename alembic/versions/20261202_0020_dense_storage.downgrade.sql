-- 0020 downgrade: the indexes and the assertion's event as 0019 left them.
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
DROP INDEX public.items_page;
CREATE INDEX items_page ON public.items USING btree (workspace_id, project_id, id DESC);
DROP INDEX public.items_live_constraint;
DROP INDEX public.items_live_decision;
DROP INDEX public.items_live_fact;
DROP INDEX public.items_live_preference;
DROP INDEX public.items_live_question;
DROP INDEX public.items_live_task;
CREATE INDEX items_live ON public.items USING btree (workspace_id, project_id, kind, id DESC) INCLUDE (scope, asserted_by) WHERE (status = ANY (ARRAY['ACTIVE'::text, 'DISPUTED'::text]));
DROP INDEX public.items_replacements;
CREATE INDEX items_replacements ON public.items USING btree (workspace_id, project_id, asserted_at DESC, id DESC) WHERE (supersedes_id IS NOT NULL);
DROP INDEX public.item_events_kind;
CREATE INDEX item_events_kind ON public.item_events USING btree (workspace_id, event, at DESC, seq DESC);
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
       jsonb_build_object('supersedes', a.supersedes_id, 'session', a.session_id)),
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
