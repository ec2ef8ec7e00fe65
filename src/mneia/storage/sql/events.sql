-- The event log (R6) and the states it implies (R9).
--
-- Every change of an item appends an event (who, when, from which status to
-- which, the load-bearing and confirmation state after it, and why), and
-- records the item's state from that instant on in item_states. Written by
-- these triggers only: SECURITY DEFINER, so that mneia_app needs (and has) no
-- INSERT on item_events or item_states, and no code path can change an item
-- silently or invent its history.
--
-- The instant of a change is the database's transaction time, now(): every
-- change one transaction makes shares it, and the events of one instant are
-- ordered by seq. An instant never goes back: a change committed after a
-- later-started transaction changed the item takes that one's instant. So a
-- moment has one answer: the state whose [since, until) holds it. An
-- administrator loading history (a trusted session) records an item at the
-- times it carries; the server's own writes carry now() (authority.sql), but
-- for a replacement accepted from a proposal, which carries the time the
-- agent proposed it and is recorded, and so believed, from its acceptance.

-- One event of the item's log; ``item`` is the item after the change. PL/pgSQL, not SQL:
-- a SQL function that cannot be inlined (its SET clause) plans its INSERT on every call,
-- where PL/pgSQL keeps the plan for the session.
CREATE FUNCTION public.mneia_item_event(item public.items, actor uuid, moment timestamptz, kind text,
                                        was text, bearing boolean, ruled boolean, why text, extra jsonb)
  RETURNS void
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                    load_bearing, confirmed, reason, data)
    VALUES (item.workspace_id, item.id, actor, moment, kind, was, item.status, bearing, ruled, why, extra);
  END
  $$;

-- The item's state from ``moment`` on, as far as its own times tell (a
-- confirmation, a load-bearing setting or a verification dated later is not
-- in it yet), ending the state before it. Changes at one instant are one state.
-- ``first``: the item's first state, at its assertion; there is none before it to end.
CREATE FUNCTION public.mneia_item_state(item public.items, moment timestamptz, first boolean) RETURNS void
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
                                    load_bearing_suggested, confirmed_by, confirmed_at, last_verified_at)
    VALUES (item.workspace_id, item.id, moment, item.status, item.status_reason, bearing,
            item.load_bearing_suggested, CASE WHEN ruled THEN item.confirmed_by END,
            CASE WHEN ruled THEN item.confirmed_at END, verified);
  END
  $$;

-- An assertion's log, for every row one INSERT wrote, in two statements: each
-- row's ASSERTED event (and, for a row an administrator loads with its
-- history, the confirmation, load-bearing setting and verification dated
-- after it), then its states, one per instant its times name. A statement-level
-- trigger over the inserted rows (its transition table), so that a batch of a
-- thousand assertions is two INSERTs here, not two thousand calls: each row's
-- events and states are exactly those the row would have had inserted alone.
-- Events are appended in the rows' id order (minted in time order, so the order
-- they were given in), each row's in the order above.
CREATE FUNCTION public.mneia_items_asserted_log() RETURNS trigger
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

CREATE TRIGGER items_asserted_log AFTER INSERT ON items
  REFERENCING NEW TABLE AS asserted
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_items_asserted_log();

-- Every later change of an item, row by row: its events and its new state.
CREATE FUNCTION public.mneia_items_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
  $$;

CREATE TRIGGER items_log AFTER UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_log();
