-- 0021 upgrade: an item's history implied by its row while it has none (issue 24, part 5).
-- The functions as storage/sql/events.sql declares them (tests/test_declared.py), then the
-- history every never-changed item has written, and its row implies, deleted: exactly the
-- rows that equal what the row implies, nothing else.
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
SET LOCAL check_function_bodies = off;
CREATE OR REPLACE FUNCTION public.mneia_item_history(item items)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    current_since timestamptz;
  BEGIN
    SELECT s.since INTO current_since FROM public.item_states s
      WHERE s.workspace_id = item.workspace_id AND s.item_id = item.id AND s.until = 'infinity';
    IF FOUND THEN
      RETURN current_since;
    END IF;
    INSERT INTO public.item_events (workspace_id, id, seq, item_id, actor_id, at, event, from_status,
                                    to_status, load_bearing, confirmed, reason, data)
      OVERRIDING SYSTEM VALUE
      VALUES (item.workspace_id, item.id, 0, item.id, item.asserted_by, item.asserted_at, 'ASSERTED', NULL,
              item.status, item.load_bearing, item.confirmed_by IS NOT NULL,
              coalesce(item.supersession_reason, item.status_reason),
              jsonb_strip_nulls(jsonb_build_object('supersedes', item.supersedes_id, 'session', item.session_id)));
    PERFORM public.mneia_item_state(item, item.asserted_at, true);
    RETURN item.asserted_at;
  END
  $function$;
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
    PERFORM public.mneia_item_history(held);
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
    WITH logged AS (
      SELECT a.*, t.instant, a.confirmed_by IS NOT NULL AS confirmed
      FROM asserted a
      CROSS JOIN LATERAL (SELECT CASE WHEN trusted THEN a.asserted_at ELSE now() END AS instant) t
      -- Not implied: recorded later than said, or a time of it later than its record, or a
      -- confirmation or setting without its time (storage/event.py and storage/item.py read
      -- the implied ones from the row).
      WHERE t.instant <> a.asserted_at OR a.confirmed_at > t.instant OR a.load_bearing_set_at > t.instant
         OR a.last_verified_at > t.instant OR (a.confirmed_by IS NULL) <> (a.confirmed_at IS NULL)
         OR (a.load_bearing AND a.load_bearing_set_at IS NULL)
    ), assertions AS (
      INSERT INTO public.item_events (workspace_id, id, seq, item_id, actor_id, at, event, from_status,
                                      to_status, load_bearing, confirmed, reason, data)
        OVERRIDING SYSTEM VALUE
      SELECT l.workspace_id, l.id, 0, l.id, l.asserted_by, l.instant, 'ASSERTED', NULL, l.status,
             l.load_bearing AND l.load_bearing_set_at <= l.asserted_at,
             l.confirmed AND l.confirmed_at <= l.asserted_at,
             coalesce(l.supersession_reason, l.status_reason),
             jsonb_strip_nulls(jsonb_build_object('supersedes', l.supersedes_id, 'session', l.session_id))
      FROM logged l
    ), later AS (
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                      load_bearing, confirmed, reason, data)
      SELECT l.workspace_id, l.id, e.actor, e.at, e.event, l.status, l.status, e.bearing, e.ruled, NULL, '{}'
      FROM logged l
      CROSS JOIN LATERAL (VALUES
        (2, l.confirmed AND l.confirmed_at > l.asserted_at, 'CONFIRMED', l.confirmed_by,
         greatest(l.confirmed_at, l.instant),
         l.load_bearing AND l.load_bearing_set_at <= l.confirmed_at, true),
        (3, l.load_bearing AND l.load_bearing_set_at > l.asserted_at, 'LOAD_BEARING_SET',
         l.load_bearing_set_by, greatest(l.load_bearing_set_at, l.instant), true,
         l.confirmed AND l.confirmed_at <= l.load_bearing_set_at),
        (4, l.last_verified_at > l.asserted_at, 'VERIFIED', coalesce(who, l.asserted_by),
         greatest(l.last_verified_at, l.instant),
         l.load_bearing AND l.load_bearing_set_at <= l.last_verified_at,
         l.confirmed AND l.confirmed_at <= l.last_verified_at)
      ) e (n, wanted, event, actor, at, bearing, ruled)
      WHERE e.wanted
      ORDER BY l.id, e.n
    )
    -- As of each instant from the assertion on: what its own times tell then (a
    -- confirmation dated later is not in the state before it), until the next.
    INSERT INTO public.item_states (workspace_id, item_id, since, until, status, status_reason,
                                    load_bearing, load_bearing_suggested, confirmed_by, confirmed_at,
                                    last_verified_at)
    SELECT l.workspace_id, l.id, m.moment,
           coalesce(lead(m.moment) OVER (PARTITION BY l.id ORDER BY m.moment), 'infinity'),
           l.status, l.status_reason, l.load_bearing AND coalesce(l.load_bearing_set_at <= m.moment, true),
           l.load_bearing_suggested,
           CASE WHEN l.confirmed_at <= m.moment THEN l.confirmed_by END,
           CASE WHEN l.confirmed_at <= m.moment THEN l.confirmed_at END,
           CASE WHEN l.last_verified_at <= m.moment THEN l.last_verified_at END
    FROM logged l
    CROSS JOIN LATERAL (SELECT DISTINCT x AS moment
                        FROM unnest(ARRAY[l.instant, l.confirmed_at, l.load_bearing_set_at,
                                          l.last_verified_at]) x
                        WHERE x >= l.instant) m
    ORDER BY l.id, m.moment;
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
    IF (NEW.redacted_at IS NULL OR OLD.redacted_at IS NOT NULL)
       AND (NEW.status, NEW.status_reason, NEW.load_bearing, NEW.load_bearing_suggested, NEW.confirmed_by,
            NEW.confirmed_at, NEW.last_verified_at)
           IS NOT DISTINCT FROM (OLD.status, OLD.status_reason, OLD.load_bearing, OLD.load_bearing_suggested,
                                 OLD.confirmed_by, OLD.confirmed_at, OLD.last_verified_at) THEN
      RETURN NEW;
    END IF;
    instant := greatest(now(), public.mneia_item_history(OLD));
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
REVOKE ALL ON FUNCTION mneia_item_history(item items) FROM PUBLIC;

-- Writers held off, and the owner past the policies (no request context here).
LOCK TABLE items, item_events, item_states IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE item_events NO FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states NO FORCE ROW LEVEL SECURITY;
ALTER TABLE items NO FORCE ROW LEVEL SECURITY;
CREATE TEMPORARY TABLE implied ON COMMIT DROP AS
SELECT e.workspace_id, e.item_id, e.id AS event_id
FROM item_events e
JOIN items i ON i.workspace_id = e.workspace_id AND i.id = e.item_id
JOIN item_states s ON s.workspace_id = e.workspace_id AND s.item_id = e.item_id
WHERE e.event = 'ASSERTED' AND e.at = i.asserted_at AND e.actor_id = i.asserted_by
  AND e.from_status IS NULL AND e.to_status = i.status AND e.load_bearing = i.load_bearing
  AND e.confirmed = (i.confirmed_by IS NOT NULL)
  AND e.reason IS NOT DISTINCT FROM coalesce(i.supersession_reason, i.status_reason)
  AND s.since = i.asserted_at AND s.until = 'infinity'
  AND (s.status, s.status_reason, s.load_bearing, s.load_bearing_suggested, s.confirmed_by, s.confirmed_at,
       s.last_verified_at)
      IS NOT DISTINCT FROM (i.status, i.status_reason, i.load_bearing, i.load_bearing_suggested,
                            i.confirmed_by, i.confirmed_at, i.last_verified_at)
  AND NOT EXISTS (SELECT 1 FROM item_events o
                  WHERE o.workspace_id = e.workspace_id AND o.item_id = e.item_id AND o.id <> e.id)
  AND NOT EXISTS (SELECT 1 FROM item_states o
                  WHERE o.workspace_id = s.workspace_id AND o.item_id = s.item_id AND o.since <> s.since);
DELETE FROM item_events e USING implied m WHERE e.workspace_id = m.workspace_id AND e.id = m.event_id;
DELETE FROM item_states s USING implied m WHERE s.workspace_id = m.workspace_id AND s.item_id = m.item_id;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events FORCE ROW LEVEL SECURITY;
RESET ROLE;
