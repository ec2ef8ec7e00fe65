-- 0031 upgrade: the event log's triggers copy each item's audience onto the events and states they
-- write; the row triggers copy it for every other INSERT (see the .py beside). The result equals
-- storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER item_events_audience ON item_events;
DROP TRIGGER item_states_audience ON item_states;
DROP FUNCTION mneia_item_count_deltas(rows items[], sign integer);
CREATE OR REPLACE FUNCTION public.mneia_item_event(item items, actor uuid, moment timestamp with time zone, kind text, was text, bearing boolean, ruled boolean, why text, extra jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                    load_bearing, confirmed, reason, data, item_project_id, item_scope,
                                    item_asserted_by, item_grants)
    VALUES (item.workspace_id, item.id, actor, moment, kind, was, item.status, bearing, ruled, why, extra,
            item.project_id, item.scope, item.asserted_by,
            CASE WHEN item.scope = 'GRANTS' THEN item.grant_actor_ids END);
  END
  $function$;
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
                                    to_status, load_bearing, confirmed, reason, data, item_project_id,
                                    item_scope, item_asserted_by, item_grants)
      OVERRIDING SYSTEM VALUE
      VALUES (item.workspace_id, item.id, 0, item.id, item.asserted_by, item.asserted_at, 'ASSERTED', NULL,
              item.status, item.load_bearing, item.confirmed_by IS NOT NULL,
              coalesce(item.supersession_reason, item.status_reason),
              jsonb_strip_nulls(jsonb_build_object('supersedes', item.supersedes_id, 'session', item.session_id)),
              item.project_id, item.scope, item.asserted_by,
              CASE WHEN item.scope = 'GRANTS' THEN item.grant_actor_ids END);
    PERFORM public.mneia_item_state(item, item.asserted_at, true);
    RETURN item.asserted_at;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_item_state(item items, moment timestamp with time zone, first boolean)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    bearing boolean := item.load_bearing AND coalesce(item.load_bearing_set_at <= moment, true);
    ruled boolean := coalesce(item.confirmed_at <= moment, false);
    verified timestamptz := CASE WHEN item.last_verified_at <= moment THEN item.last_verified_at END;
    current_since timestamptz;
  BEGIN
    IF NOT first THEN
      SELECT s.since INTO current_since FROM public.item_states s
        WHERE s.workspace_id = item.workspace_id AND s.item_id = item.id AND s.until = 'infinity';
      IF current_since >= moment THEN
        UPDATE public.item_states s
          SET status = item.status, status_reason = item.status_reason, load_bearing = bearing,
              load_bearing_suggested = item.load_bearing_suggested,
              confirmed_by = CASE WHEN ruled THEN item.confirmed_by END,
              confirmed_at = CASE WHEN ruled THEN item.confirmed_at END, last_verified_at = verified
          WHERE s.workspace_id = item.workspace_id AND s.item_id = item.id AND s.since = current_since;
        RETURN;
      END IF;
      UPDATE public.item_states s SET until = moment
        WHERE s.workspace_id = item.workspace_id AND s.item_id = item.id AND s.since = current_since;
    END IF;
    INSERT INTO public.item_states (workspace_id, item_id, since, status, status_reason, load_bearing,
                                    load_bearing_suggested, confirmed_by, confirmed_at, last_verified_at,
                                    item_project_id, item_scope, item_asserted_by, item_grants)
    VALUES (item.workspace_id, item.id, moment, item.status, item.status_reason, bearing,
            item.load_bearing_suggested, CASE WHEN ruled THEN item.confirmed_by END,
            CASE WHEN ruled THEN item.confirmed_at END, verified, item.project_id, item.scope,
            item.asserted_by, CASE WHEN item.scope = 'GRANTS' THEN item.grant_actor_ids END);
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
    inserted public.items[];
  BEGIN
    -- The transition table read alone, into an array: on Citus a statement that also writes
    -- a distributed table is planned by Citus, which cannot see a transition table. Only the
    -- rows whose history is not implied (most are), so that a batch copies no more than it logs.
    SELECT array_agg(n) INTO inserted FROM asserted n
      CROSS JOIN LATERAL (SELECT CASE WHEN trusted THEN n.asserted_at ELSE now() END AS instant) t
      -- Not implied: recorded later than said, or a time of it later than its record, or a
      -- confirmation or setting without its time (storage/event.py and storage/item.py read
      -- the implied ones from the row).
      WHERE t.instant <> n.asserted_at OR n.confirmed_at > t.instant OR n.load_bearing_set_at > t.instant
         OR n.last_verified_at > t.instant OR (n.confirmed_by IS NULL) <> (n.confirmed_at IS NULL)
         OR (n.load_bearing AND n.load_bearing_set_at IS NULL);
    IF inserted IS NULL THEN
      RETURN NULL;
    END IF;
    WITH logged AS (
      SELECT a.*, t.instant, a.confirmed_by IS NOT NULL AS confirmed,
             CASE WHEN a.scope = 'GRANTS' THEN a.grant_actor_ids END AS grants
      FROM unnest(inserted) a
      CROSS JOIN LATERAL (SELECT CASE WHEN trusted THEN a.asserted_at ELSE now() END AS instant) t
    ), assertions AS (
      INSERT INTO public.item_events (workspace_id, id, seq, item_id, actor_id, at, event, from_status,
                                      to_status, load_bearing, confirmed, reason, data, item_project_id,
                                      item_scope, item_asserted_by, item_grants)
        OVERRIDING SYSTEM VALUE
      SELECT l.workspace_id, l.id, 0, l.id, l.asserted_by, l.instant, 'ASSERTED', NULL, l.status,
             l.load_bearing AND l.load_bearing_set_at <= l.asserted_at,
             l.confirmed AND l.confirmed_at <= l.asserted_at,
             coalesce(l.supersession_reason, l.status_reason),
             jsonb_strip_nulls(jsonb_build_object('supersedes', l.supersedes_id, 'session', l.session_id)),
             l.project_id, l.scope, l.asserted_by, l.grants
      FROM logged l
    ), later AS (
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                      load_bearing, confirmed, reason, data, item_project_id, item_scope,
                                      item_asserted_by, item_grants)
      SELECT l.workspace_id, l.id, e.actor, e.at, e.event, l.status, l.status, e.bearing, e.ruled, NULL, '{}',
             l.project_id, l.scope, l.asserted_by, l.grants
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
                                    last_verified_at, item_project_id, item_scope, item_asserted_by,
                                    item_grants)
    SELECT l.workspace_id, l.id, m.moment,
           coalesce(lead(m.moment) OVER (PARTITION BY l.id ORDER BY m.moment), 'infinity'),
           l.status, l.status_reason, l.load_bearing AND coalesce(l.load_bearing_set_at <= m.moment, true),
           l.load_bearing_suggested,
           CASE WHEN l.confirmed_at <= m.moment THEN l.confirmed_by END,
           CASE WHEN l.confirmed_at <= m.moment THEN l.confirmed_at END,
           CASE WHEN l.last_verified_at <= m.moment THEN l.last_verified_at END,
           l.project_id, l.scope, l.asserted_by, l.grants
    FROM logged l
    CROSS JOIN LATERAL (SELECT DISTINCT x AS moment
                        FROM unnest(ARRAY[l.instant, l.confirmed_at, l.load_bearing_set_at,
                                          l.last_verified_at]) x
                        WHERE x >= l.instant) m
    ORDER BY l.id, m.moment;
    RETURN NULL;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    added public.item_counts[];
    removed public.item_counts[];
  BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      SELECT array_agg(ROW(d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
                           d.load_bearing, d.confirmed, 0, d.n)::public.item_counts)
        INTO added
        FROM (SELECT r.workspace_id, r.project_id, r.scope, a.actor_id, a.via_grant, r.status, r.kind,
                     r.load_bearing, r.confirmed_by IS NOT NULL AS confirmed, count(*) AS n
              FROM fresh r
              CROSS JOIN LATERAL (SELECT r.asserted_by AS actor_id, false AS via_grant
                                  UNION ALL
                                  SELECT g, true FROM unnest(r.grant_actor_ids) g
                                  WHERE r.scope = 'GRANTS' AND g <> r.asserted_by) a
              GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) d;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      SELECT array_agg(ROW(d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
                           d.load_bearing, d.confirmed, 0, -d.n)::public.item_counts)
        INTO removed
        FROM (SELECT r.workspace_id, r.project_id, r.scope, a.actor_id, a.via_grant, r.status, r.kind,
                     r.load_bearing, r.confirmed_by IS NOT NULL AS confirmed, count(*) AS n
              FROM stale r
              CROSS JOIN LATERAL (SELECT r.asserted_by AS actor_id, false AS via_grant
                                  UNION ALL
                                  SELECT g, true FROM unnest(r.grant_actor_ids) g
                                  WHERE r.scope = 'GRANTS' AND g <> r.asserted_by) a
              GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) d;
    END IF;
    INSERT INTO public.item_counts AS c (workspace_id, project_id, scope, actor_id, via_grant, status,
                                         kind, load_bearing, confirmed, slot, n)
    SELECT d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
           d.load_bearing, d.confirmed, pg_backend_pid(), sum(d.n)
    FROM (SELECT * FROM unnest(coalesce(added, '{}'))
          UNION ALL
          SELECT * FROM unnest(coalesce(removed, '{}'))) d
    GROUP BY d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
             d.load_bearing, d.confirmed
    HAVING sum(d.n) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    ON CONFLICT (workspace_id, project_id, scope, actor_id, via_grant, status, kind, load_bearing,
                 confirmed, slot)
      DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_guard()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    me uuid;
    accepted public.proposals;
    replaced public.items;
    session public.sessions;
    -- NEW as an item, for the functions that take one: on Citus a trigger's row is of its
    -- shard's type (items_102008), which no function of public.items accepts.
    written public.items;
    matched boolean;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    -- Read after the trust test: a trusted bulk load does not open the sealed context per row.
    me := public.mneia_actor();

    IF TG_OP = 'INSERT' THEN
      IF NEW.status NOT IN ('ACTIVE', 'DISPUTED') THEN
        PERFORM public.mneia_disallow('an item is asserted ACTIVE or DISPUTED', 'items_asserted_active');
      END IF;
      IF NEW.asserted_by IS DISTINCT FROM me THEN
        -- The one exception: a human accepting an agent's proposal writes the
        -- agent's replacement, as proposed and when proposed. The agent may have
        -- proposed several replacements of one item: the row must be one of them.
        -- Each candidate is judged once read into a variable: on Citus a query's rows are of
        -- its shards' types, which mneia_replacement_matches does not accept.
        written := NEW;
        matched := false;
        FOR accepted IN SELECT p.* FROM public.proposals p
            WHERE p.workspace_id = NEW.workspace_id AND p.kind = 'SUPERSESSION' AND p.status = 'PENDING'
              AND p.target_id = NEW.supersedes_id AND p.proposed_by = NEW.asserted_by
              AND p.proposed_at = NEW.asserted_at
        LOOP
          matched := public.mneia_replacement_matches(accepted, written);
          EXIT WHEN matched;
        END LOOP;
        IF NOT matched OR NOT public.mneia_actor_is_human() OR NEW.confirmed_by IS DISTINCT FROM me THEN
          PERFORM public.mneia_refuse('an item is asserted by the actor making the request, unless '
                                      'a human accepts exactly what another actor proposed');
        END IF;
      ELSE
        PERFORM public.mneia_require_now(NEW.asserted_at, 'asserted_at');
        IF NEW.session_id IS NOT NULL THEN
          SELECT s.* INTO session FROM public.sessions s
            WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
          IF session.actor_id IS DISTINCT FROM me OR session.project_id IS DISTINCT FROM NEW.project_id
             OR session.ended_at IS NOT NULL THEN
            PERFORM public.mneia_refuse('an item names an open session of its asserter in its project');
          END IF;
        END IF;
      END IF;
      IF NEW.confirmed_by IS NOT NULL OR NEW.confirmed_at IS NOT NULL THEN
        PERFORM public.mneia_require_human(NEW.confirmed_by, 'a confirmation');
        PERFORM public.mneia_require_now(NEW.confirmed_at, 'confirmed_at');
      END IF;
      IF NEW.load_bearing OR NEW.load_bearing_set_by IS NOT NULL OR NEW.load_bearing_set_at IS NOT NULL THEN
        PERFORM public.mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
        PERFORM public.mneia_require_now(NEW.load_bearing_set_at, 'load_bearing_set_at');
      END IF;
      IF NEW.last_verified_at IS NOT NULL THEN
        PERFORM public.mneia_require_now(NEW.last_verified_at, 'last_verified_at');
      END IF;
      IF NEW.supersedes_id IS NOT NULL THEN
        -- Read as the caller: nobody replaces what they cannot see.
        SELECT i.* INTO replaced FROM public.items i
          WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.supersedes_id;
        IF NOT FOUND THEN
          PERFORM public.mneia_refuse('a replacement replaces an item its writer can see');
        END IF;
        IF replaced.status <> 'ACTIVE' THEN
          PERFORM public.mneia_disallow('only an ACTIVE item is replaced', 'items_replaces_active');
        END IF;
        written := NEW;
        IF replaced.project_id <> NEW.project_id OR NOT public.mneia_keeps_audience(replaced, written) THEN
          PERFORM public.mneia_disallow('a replacement stays in its project, visible to everyone who saw '
                                        'what it replaces', 'items_replacement_keeps_audience');
        END IF;
        IF replaced.confirmed_by IS NOT NULL OR replaced.load_bearing THEN
          PERFORM public.mneia_require_human(me, 'replacing an item a human confirmed or made load-bearing');
        END IF;
      END IF;
      RETURN NEW;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
      IF OLD.status IN ('SUPERSEDED', 'RETIRED') THEN
        PERFORM public.mneia_disallow('a SUPERSEDED or RETIRED item keeps its status', 'items_final_status');
      END IF;
      IF OLD.confirmed_by IS NOT NULL OR OLD.load_bearing THEN
        PERFORM public.mneia_require_human(me, 'a status change of an item a human confirmed or made load-bearing');
      END IF;
      IF NEW.status = 'SUPERSEDED' AND NOT public.mneia_has_successor(NEW.workspace_id, NEW.id) THEN
        PERFORM public.mneia_disallow('an item is SUPERSEDED by its replacement', 'items_superseded_by_replacement');
      END IF;
      IF OLD.status = 'DISPUTED' AND NEW.status = 'ACTIVE' THEN
        PERFORM public.mneia_require_human(me, 'settling a dispute');
        IF NOT public.mneia_kept_by_resolution(NEW.workspace_id, NEW.id) THEN
          PERFORM public.mneia_refuse('a DISPUTED item becomes ACTIVE only when a human resolves its disputes');
        END IF;
      END IF;
      IF NEW.status = 'DISPUTED' AND OLD.status <> 'ACTIVE' THEN
        PERFORM public.mneia_disallow('only an ACTIVE item becomes DISPUTED', 'items_disputed_from_active');
      END IF;
    ELSIF NEW.status_reason IS DISTINCT FROM OLD.status_reason THEN
      PERFORM public.mneia_require_human(me, 'a note on an item');
    END IF;

    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by OR NEW.confirmed_at IS DISTINCT FROM OLD.confirmed_at THEN
      PERFORM public.mneia_require_human(NEW.confirmed_by, 'a confirmation');
      PERFORM public.mneia_require_now(NEW.confirmed_at, 'confirmed_at');
      IF NEW.status <> 'ACTIVE' THEN
        PERFORM public.mneia_disallow('only an ACTIVE item is confirmed', 'items_confirmed_active');
      END IF;
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing
       OR NEW.load_bearing_set_by IS DISTINCT FROM OLD.load_bearing_set_by
       OR NEW.load_bearing_set_at IS DISTINCT FROM OLD.load_bearing_set_at THEN
      PERFORM public.mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      PERFORM public.mneia_require_now(NEW.load_bearing_set_at, 'load_bearing_set_at');
    END IF;
    IF NEW.load_bearing_suggested IS DISTINCT FROM OLD.load_bearing_suggested THEN
      IF NOT NEW.load_bearing_suggested THEN
        PERFORM public.mneia_require_human(me, 'settling a load-bearing suggestion');
      ELSIF NEW.load_bearing THEN
        PERFORM public.mneia_disallow('a load-bearing item needs no suggestion', 'items_suggested_not_load_bearing');
      END IF;
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      PERFORM public.mneia_require_now(NEW.last_verified_at, 'last_verified_at');
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE TRIGGER item_events_audience BEFORE INSERT ON public.item_events FOR EACH ROW WHEN ((pg_trigger_depth() = 0)) EXECUTE FUNCTION mneia_copy_audience('item_events');
CREATE TRIGGER item_states_audience BEFORE INSERT ON public.item_states FOR EACH ROW WHEN ((pg_trigger_depth() = 0)) EXECUTE FUNCTION mneia_copy_audience('item_states');
RESET ROLE;
