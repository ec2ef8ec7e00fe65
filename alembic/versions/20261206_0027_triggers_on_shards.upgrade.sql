-- 0027 upgrade: the item, creator and audience triggers work on a Citus shard too (see the .py beside).
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER api_tokens_creator ON api_tokens;
DROP TRIGGER disputes_audience ON disputes;
DROP TRIGGER handoffs_creator ON handoffs;
DROP TRIGGER item_events_audience ON item_events;
DROP TRIGGER item_states_audience ON item_states;
DROP TRIGGER project_members_creator ON project_members;
DROP TRIGGER proposals_audience ON proposals;
DROP TRIGGER team_members_creator ON team_members;
CREATE OR REPLACE FUNCTION public.mneia_copy_audience()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    seen public.items;
    other public.items;
  BEGIN
    IF TG_ARGV[0] = 'proposals' THEN
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.target_id;
    ELSE
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id;
    END IF;
    IF NOT FOUND THEN  -- another workspace's, or none: the policies refuse the row, or its key does
      RETURN NEW;
    END IF;
    IF TG_ARGV[0] IN ('item_events', 'item_states') THEN
      NEW.item_project_id := seen.project_id;
      NEW.item_scope := seen.scope;
      NEW.item_asserted_by := seen.asserted_by;
      NEW.item_grants := CASE WHEN seen.scope = 'GRANTS' THEN seen.grant_actor_ids END;
    ELSIF TG_ARGV[0] = 'proposals' THEN
      NEW.target_scope := seen.scope;
      NEW.target_asserted_by := seen.asserted_by;
      NEW.target_grants := CASE WHEN seen.scope = 'GRANTS' THEN seen.grant_actor_ids END;
    ELSE
      SELECT i.* INTO other FROM public.items i
        WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.contested_id;
      IF NOT FOUND THEN
        RETURN NEW;
      END IF;
      NEW.item_scope := seen.scope;
      NEW.item_asserted_by := seen.asserted_by;
      NEW.item_grants := CASE WHEN seen.scope = 'GRANTS' THEN seen.grant_actor_ids END;
      NEW.contested_scope := other.scope;
      NEW.contested_asserted_by := other.asserted_by;
      NEW.contested_grants := CASE WHEN other.scope = 'GRANTS' THEN other.grant_actor_ids END;
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_copy_creator()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    IF TG_ARGV[0] = 'api_tokens' THEN
      NEW.actor_created_by := (SELECT a.created_by FROM public.actors a
                               WHERE a.workspace_id = NEW.workspace_id AND a.id = NEW.actor_id);
    ELSIF TG_ARGV[0] = 'team_members' THEN
      NEW.team_created_by := (SELECT t.created_by FROM public.teams t
                              WHERE t.workspace_id = NEW.workspace_id AND t.id = NEW.team_id);
    ELSIF TG_ARGV[0] = 'handoffs' THEN
      SELECT s.actor_id, s.project_id INTO NEW.session_actor_id, NEW.session_project_id
        FROM public.sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
    ELSE
      NEW.project_created_by := (SELECT p.created_by FROM public.projects p
                                 WHERE p.workspace_id = NEW.workspace_id AND p.id = NEW.project_id);
    END IF;
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
    inserted public.items[];
  BEGIN
    -- The transition table read alone, into an array: on Citus a statement that also writes
    -- a distributed table is planned by Citus, which cannot see a transition table.
    SELECT array_agg(n) INTO inserted FROM asserted n;
    WITH logged AS (
      SELECT a.*, t.instant, a.confirmed_by IS NOT NULL AS confirmed
      FROM unnest(inserted) a
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
CREATE OR REPLACE FUNCTION public.mneia_items_guard()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    me uuid := public.mneia_actor();
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
  $function$;
CREATE TRIGGER api_tokens_creator BEFORE INSERT ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator('api_tokens');
CREATE TRIGGER disputes_audience BEFORE INSERT ON public.disputes FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience('disputes');
CREATE TRIGGER handoffs_creator BEFORE INSERT ON public.handoffs FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator('handoffs');
CREATE TRIGGER item_events_audience BEFORE INSERT ON public.item_events FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience('item_events');
CREATE TRIGGER item_states_audience BEFORE INSERT ON public.item_states FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience('item_states');
CREATE TRIGGER project_members_creator BEFORE INSERT ON public.project_members FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator('project_members');
CREATE TRIGGER proposals_audience BEFORE INSERT ON public.proposals FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience('proposals');
CREATE TRIGGER team_members_creator BEFORE INSERT ON public.team_members FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator('team_members');
RESET ROLE;
