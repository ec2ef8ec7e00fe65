-- The event log (R6) and the states it implies (R9).
--
-- Every change of an item appends an event (who, when, from which status to
-- which, the load-bearing and confirmation state after it, and why), and
-- records the item's state from that instant on in item_states. Written by
-- these triggers only: SECURITY DEFINER, so that mneia_app needs (and has) no
-- INSERT on item_events or item_states, and no code path can change an item
-- silently or invent its history.
--
-- An item whose assertion is its whole story keeps no rows here: recorded when
-- it was said (asserted_at, the server's time) with nothing dated later, its
-- row implies its ASSERTED event and its one state (storage/event.py and
-- storage/item.py read them so; docs/history.md). Most items are never changed,
-- and these rows were a third of the database. The first change, hold or
-- redaction writes that history from the row as it was (mneia_item_history),
-- so an item has all of its history as rows or none. An assertion's event,
-- implied or written, has the item's id and seq 0: it comes first among the
-- events of its instant, the assertions of one instant in their ids' order.
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
                                    load_bearing, confirmed, reason, data, item_project_id, item_scope,
                                    item_asserted_by, item_grants)
    VALUES (item.workspace_id, item.id, actor, moment, kind, was, item.status, bearing, ruled, why, extra,
            item.project_id, item.scope, item.asserted_by,
            CASE WHEN item.scope = 'GRANTS' THEN item.grant_actor_ids END);
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
                                    load_bearing_suggested, confirmed_by, confirmed_at, last_verified_at,
                                    item_project_id, item_scope, item_asserted_by, item_grants)
    VALUES (item.workspace_id, item.id, moment, item.status, item.status_reason, bearing,
            item.load_bearing_suggested, CASE WHEN ruled THEN item.confirmed_by END,
            CASE WHEN ruled THEN item.confirmed_at END, verified, item.project_id, item.scope,
            item.asserted_by, CASE WHEN item.scope = 'GRANTS' THEN item.grant_actor_ids END);
  END
  $$;

-- The history an item's row implies while it has none written (above): its
-- ASSERTED event and its state since its assertion, written from ``item`` (the
-- row before the change about to be logged). Answers the current state's since.
CREATE FUNCTION public.mneia_item_history(item public.items) RETURNS timestamptz
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
  $$;

-- An assertion's log, for every row one INSERT wrote whose row does not imply
-- it (above): a replacement accepted after it was proposed (recorded later than
-- said), or a row an administrator loads with its history (a confirmation,
-- load-bearing setting or verification dated after it). Its ASSERTED event, the
-- later-dated events, then its states, one per instant its times name: one
-- statement over the inserted rows (a statement-level trigger's transition
-- table), so that a batch of a thousand assertions is one statement here, not
-- thousands of calls, and each row's events and states are exactly those it
-- would have had inserted alone. The later-dated events are appended in the
-- rows' id order (minted in time order, so the order given), each row's in the
-- order below.
CREATE FUNCTION public.mneia_items_asserted_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  SET plan_cache_mode = auto  -- keyed lookups: a generic plan serves every tenant (storage.database)
  AS $$
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
    -- NEW and OLD as items, for the functions that take one: on Citus a trigger's rows are
    -- of its shard's type (items_102008), which no function of public.items accepts.
    changed public.items;
    was public.items;
  BEGIN
    IF (NEW.redacted_at IS NULL OR OLD.redacted_at IS NOT NULL)
       AND (NEW.status, NEW.status_reason, NEW.load_bearing, NEW.load_bearing_suggested, NEW.confirmed_by,
            NEW.confirmed_at, NEW.last_verified_at)
           IS NOT DISTINCT FROM (OLD.status, OLD.status_reason, OLD.load_bearing, OLD.load_bearing_suggested,
                                 OLD.confirmed_by, OLD.confirmed_at, OLD.last_verified_at) THEN
      RETURN NEW;
    END IF;
    changed := NEW;
    was := OLD;
    instant := greatest(now(), public.mneia_item_history(was));
    -- R16/R18: a redaction (privacy.sql) is one event, its reason the policy's word, no text; the
    -- reasons it blanks are no note. Its states and earlier events lose their text there too.
    IF NEW.redacted_at IS NOT NULL AND OLD.redacted_at IS NULL THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'REDACTED', OLD.status, NEW.load_bearing,
                                      confirmed, NEW.redaction_reason, '{}');
      RETURN NEW;
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'STATUS_CHANGED', OLD.status, NEW.load_bearing,
                                      confirmed, NEW.status_reason, '{}');
    END IF;
    IF NEW.status_reason IS DISTINCT FROM OLD.status_reason
       AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'NOTED', OLD.status, NEW.load_bearing, confirmed,
                                      NEW.status_reason, '{}');
    END IF;
    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'CONFIRMED', OLD.status, NEW.load_bearing,
                                      confirmed, NULL, '{}');
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing THEN
      PERFORM public.mneia_item_event(changed, who, instant,
        CASE WHEN NEW.load_bearing THEN 'LOAD_BEARING_SET' ELSE 'LOAD_BEARING_CLEARED' END,
        OLD.status, NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    IF NEW.load_bearing_suggested AND NOT OLD.load_bearing_suggested THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'LOAD_BEARING_SUGGESTED', OLD.status,
                                      NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    -- A suggestion settled without making the item load-bearing: a human declined it.
    IF OLD.load_bearing_suggested AND NOT NEW.load_bearing_suggested
       AND NEW.load_bearing IS NOT DISTINCT FROM OLD.load_bearing THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'LOAD_BEARING_DECLINED', OLD.status,
                                      NEW.load_bearing, confirmed, NULL, '{}');
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      PERFORM public.mneia_item_event(changed, who, instant, 'VERIFIED', OLD.status, NEW.load_bearing,
                                      confirmed, NULL, '{}');
    END IF;
    IF (NEW.status, NEW.status_reason, NEW.load_bearing, NEW.load_bearing_suggested, NEW.confirmed_by,
        NEW.confirmed_at, NEW.last_verified_at)
       IS DISTINCT FROM (OLD.status, OLD.status_reason, OLD.load_bearing, OLD.load_bearing_suggested,
                         OLD.confirmed_by, OLD.confirmed_at, OLD.last_verified_at) THEN
      PERFORM public.mneia_item_state(changed, instant, false);
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_log AFTER UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_log();
