-- 0021 downgrade: every item's history written again, then the functions as 0020 left them.
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
LOCK TABLE items, item_events, item_states IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE item_events NO FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states NO FORCE ROW LEVEL SECURITY;
ALTER TABLE items NO FORCE ROW LEVEL SECURITY;
SELECT public.mneia_item_history(i) FROM items i
WHERE NOT EXISTS (SELECT 1 FROM item_states s WHERE s.workspace_id = i.workspace_id AND s.item_id = i.id);
-- 0020 orders the events of an instant by seq alone: the assertions' 0 becomes a number again.
UPDATE item_events SET seq = DEFAULT WHERE seq = 0;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events FORCE ROW LEVEL SECURITY;
SET LOCAL check_function_bodies = off;
DROP FUNCTION mneia_item_history(item items);
CREATE OR REPLACE FUNCTION public.mneia_holds_log()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    held public.items;
  BEGIN
    IF NEW.item_id IS NULL OR (TG_OP = 'UPDATE' AND NEW.released_at IS NOT DISTINCT FROM OLD.released_at) THEN
      RETURN NEW;
    END IF;
    SELECT i.* INTO held FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id;
    PERFORM public.mneia_item_event(held, coalesce(NEW.released_by, NEW.placed_by), now(),
      CASE WHEN TG_OP = 'INSERT' THEN 'HELD' ELSE 'RELEASED' END, held.status, held.load_bearing,
      held.confirmed_by IS NOT NULL, NEW.reason, jsonb_build_object('hold', NEW.id));
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_asserted_log()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_log()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    who uuid := coalesce(public.mneia_actor(), NEW.asserted_by);
    confirmed boolean := NEW.confirmed_by IS NOT NULL;
    instant timestamptz;
  BEGIN
    instant := greatest(now(), (SELECT s.since FROM public.item_states s
                                WHERE s.workspace_id = NEW.workspace_id AND s.item_id = NEW.id
                                  AND s.until = 'infinity'));
    -- R16/R18: a redaction (privacy.sql) is one event, its reason the policy's word, no text; the
    -- reasons it blanks are no note. Its states and earlier events lose their text there too.
    IF NEW.redacted_at IS NOT NULL AND OLD.redacted_at IS NULL THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'REDACTED', OLD.status, NEW.load_bearing,
                                      confirmed, NEW.redaction_reason, '{}');
      RETURN NEW;
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'STATUS_CHANGED', OLD.status, NEW.load_bearing,
                                      confirmed, NEW.status_reason, '{}');
    END IF;
    IF NEW.status_reason IS DISTINCT FROM OLD.status_reason
       AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'NOTED', OLD.status, NEW.load_bearing, confirmed,
                                      NEW.status_reason, '{}');
    END IF;
    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'CONFIRMED', OLD.status, NEW.load_bearing,
                                      confirmed, NULL, '{}');
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing THEN
      PERFORM public.mneia_item_event(NEW, who, instant,
        CASE WHEN NEW.load_bearing THEN 'LOAD_BEARING_SET' ELSE 'LOAD_BEARING_CLEARED' END,
        OLD.status, NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    IF NEW.load_bearing_suggested AND NOT OLD.load_bearing_suggested THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'LOAD_BEARING_SUGGESTED', OLD.status,
                                      NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    -- A suggestion settled without making the item load-bearing: a human declined it.
    IF OLD.load_bearing_suggested AND NOT NEW.load_bearing_suggested
       AND NEW.load_bearing IS NOT DISTINCT FROM OLD.load_bearing THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'LOAD_BEARING_DECLINED', OLD.status,
                                      NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      PERFORM public.mneia_item_event(NEW, who, instant, 'VERIFIED', OLD.status, NEW.load_bearing,
                                      confirmed, NULL, '{}');
    END IF;
    IF (NEW.status, NEW.status_reason, NEW.load_bearing, NEW.load_bearing_suggested, NEW.confirmed_by,
        NEW.confirmed_at, NEW.last_verified_at)
       IS DISTINCT FROM (OLD.status, OLD.status_reason, OLD.load_bearing, OLD.load_bearing_suggested,
                         OLD.confirmed_by, OLD.confirmed_at, OLD.last_verified_at) THEN
      PERFORM public.mneia_item_state(NEW, instant, false);
    END IF;
    RETURN NEW;
  END
  $function$;
RESET ROLE;
