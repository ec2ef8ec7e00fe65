SET LOCAL check_function_bodies = off;
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
        SELECT p.* INTO accepted FROM public.proposals p
          WHERE p.workspace_id = NEW.workspace_id AND p.kind = 'SUPERSESSION' AND p.status = 'PENDING'
            AND p.target_id = NEW.supersedes_id AND p.proposed_by = NEW.asserted_by
            AND p.proposed_at = NEW.asserted_at AND public.mneia_replacement_matches(p, NEW)
          LIMIT 1;
        IF NOT FOUND OR NOT public.mneia_actor_is_human() OR NEW.confirmed_by IS DISTINCT FROM me THEN
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
        IF replaced.project_id <> NEW.project_id OR NOT public.mneia_keeps_audience(replaced, NEW) THEN
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

