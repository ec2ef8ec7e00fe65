SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER items_asserted_log ON items;
DROP TRIGGER items_log ON items;
DROP TRIGGER items_whole ON items;
DROP FUNCTION mneia_items_asserted_log();
CREATE OR REPLACE FUNCTION public.mneia_items_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
CREATE TRIGGER items_log AFTER INSERT OR UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_log();
CREATE CONSTRAINT TRIGGER items_whole AFTER INSERT OR UPDATE OF status ON items
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_whole();
RESET ROLE;
