SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    RETURN QUERY SELECT a.workspace_id, w.name, a.id, a.name
      FROM public.actors a JOIN public.workspaces w ON w.id = a.workspace_id
      WHERE a.identity_id = person AND a.kind = 'HUMAN'
      ORDER BY w.name, a.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
DROP TRIGGER api_tokens_not_erased ON api_tokens;
DROP TRIGGER items_redacted ON items;
DROP TRIGGER legal_holds_log ON legal_holds;
DROP POLICY actor_erase ON actors;
DROP POLICY token_erase ON api_tokens;
DROP POLICY dispute_redact ON disputes;
DROP POLICY item_event_redact ON item_events;
DROP POLICY item_redact ON items;
DROP POLICY hold_guard_read ON legal_holds;
DROP POLICY hold_place ON legal_holds;
DROP POLICY hold_read ON legal_holds;
DROP POLICY hold_release ON legal_holds;
DROP POLICY proposal_redact ON proposals;
DROP POLICY retention_read ON retention_policies;
DROP POLICY retention_remove ON retention_policies;
DROP POLICY retention_set ON retention_policies;
DROP POLICY retention_sweep_read ON retention_policies;
DROP FUNCTION mneia_erase_actor(target uuid);
DROP FUNCTION mneia_held(workspace uuid, project uuid, item uuid);
DROP FUNCTION mneia_holds_log();
DROP FUNCTION mneia_items_redacted();
DROP FUNCTION mneia_redact(ids uuid[], why text);
DROP FUNCTION mneia_token_of_erased();
ALTER TABLE items DROP CONSTRAINT items_redaction_reason_check;
ALTER TABLE items DROP CONSTRAINT items_redaction_whole;
ALTER TABLE items DROP CONSTRAINT items_statement_present;
ALTER TABLE item_events DROP CONSTRAINT item_events_event_check;
ALTER TABLE items ADD CONSTRAINT items_statement_check CHECK ((length(btrim(statement)) > 0));
ALTER TABLE item_events ADD CONSTRAINT item_events_event_check CHECK ((event = ANY (ARRAY['ASSERTED'::text, 'STATUS_CHANGED'::text, 'NOTED'::text, 'CONFIRMED'::text, 'LOAD_BEARING_SET'::text, 'LOAD_BEARING_CLEARED'::text, 'LOAD_BEARING_SUGGESTED'::text, 'LOAD_BEARING_DECLINED'::text, 'VERIFIED'::text])));
CREATE OR REPLACE FUNCTION public.mneia_items_log()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    who uuid := coalesce(public.mneia_actor(), NEW.asserted_by);
    confirmed boolean := NEW.confirmed_by IS NOT NULL;
    instant timestamptz := now();
    moment timestamptz;
  BEGIN
    IF TG_OP = 'INSERT' THEN
      IF public.mneia_trusted_session() THEN
        instant := NEW.asserted_at;
      END IF;
      PERFORM public.mneia_item_event(NEW, NEW.asserted_by, instant, 'ASSERTED', NULL,
        NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.asserted_at,
        confirmed AND NEW.confirmed_at <= NEW.asserted_at,
        coalesce(NEW.supersession_reason, NEW.status_reason),
        jsonb_build_object('supersedes', NEW.supersedes_id, 'session', NEW.session_id));
      IF confirmed AND NEW.confirmed_at > NEW.asserted_at THEN
        PERFORM public.mneia_item_event(NEW, NEW.confirmed_by, greatest(NEW.confirmed_at, instant),
          'CONFIRMED', NEW.status, NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.confirmed_at,
          true, NULL, '{}');
      END IF;
      IF NEW.load_bearing AND NEW.load_bearing_set_at > NEW.asserted_at THEN
        PERFORM public.mneia_item_event(NEW, NEW.load_bearing_set_by,
          greatest(NEW.load_bearing_set_at, instant), 'LOAD_BEARING_SET', NEW.status, true,
          confirmed AND NEW.confirmed_at <= NEW.load_bearing_set_at, NULL, '{}');
      END IF;
      IF NEW.last_verified_at > NEW.asserted_at THEN
        PERFORM public.mneia_item_event(NEW, who, greatest(NEW.last_verified_at, instant), 'VERIFIED',
          NEW.status, NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.last_verified_at,
          confirmed AND NEW.confirmed_at <= NEW.last_verified_at, NULL, '{}');
      END IF;
      FOR moment IN
        SELECT DISTINCT m FROM unnest(ARRAY[instant, NEW.confirmed_at, NEW.load_bearing_set_at,
                                            NEW.last_verified_at]) m
        WHERE m >= instant ORDER BY m
      LOOP
        PERFORM public.mneia_item_state(NEW, moment, moment = instant);
      END LOOP;
      RETURN NEW;
    END IF;

    instant := greatest(now(), (SELECT s.since FROM public.item_states s
                                WHERE s.workspace_id = NEW.workspace_id AND s.item_id = NEW.id
                                  AND s.until = 'infinity'));
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
ALTER TABLE actors DROP COLUMN erased_at;
ALTER TABLE items DROP COLUMN redacted_at;
ALTER TABLE items DROP COLUMN redaction_reason;
DROP TABLE legal_holds;
DROP TABLE retention_policies;
RESET ROLE;
