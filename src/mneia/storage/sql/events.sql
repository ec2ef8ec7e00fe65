-- The event log (R6): every change of an item appends an event (who, when,
-- from which status to which, the load-bearing and confirmation state after
-- it, and why). Written by this trigger only: SECURITY DEFINER, so that
-- mneia_app needs (and has) no INSERT on item_events, and no code path can
-- change an item silently or invent its history. As-of reads (R9) rebuild an
-- item's state from these events.

CREATE FUNCTION public.mneia_items_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    who uuid := coalesce(public.mneia_actor(), NEW.asserted_by);
    confirmed boolean := NEW.confirmed_by IS NOT NULL;
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason, data)
      VALUES (NEW.workspace_id, NEW.id, NEW.asserted_by, NEW.asserted_at, 'ASSERTED', NULL,
              NEW.status,
              NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.asserted_at,
              confirmed AND NEW.confirmed_at <= NEW.asserted_at,
              NEW.supersession_reason,
              jsonb_build_object('supersedes', NEW.supersedes_id, 'session', NEW.session_id));
      IF confirmed AND NEW.confirmed_at > NEW.asserted_at THEN
        INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.confirmed_by, NEW.confirmed_at, 'CONFIRMED',
                NEW.status, NEW.status, NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.confirmed_at,
                true);
      END IF;
      IF NEW.load_bearing AND NEW.load_bearing_set_at > NEW.asserted_at THEN
        INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.load_bearing_set_by, NEW.load_bearing_set_at,
                'LOAD_BEARING_SET', NEW.status, NEW.status, true, confirmed);
      END IF;
      RETURN NEW;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'STATUS_CHANGED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.status_reason IS DISTINCT FROM OLD.status_reason
       AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'NOTED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'CONFIRMED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(),
              CASE WHEN NEW.load_bearing THEN 'LOAD_BEARING_SET' ELSE 'LOAD_BEARING_CLEARED' END,
              OLD.status, NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing_suggested AND NOT OLD.load_bearing_suggested THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'LOAD_BEARING_SUGGESTED', OLD.status,
              NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      INSERT INTO public.item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'VERIFIED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_log AFTER INSERT OR UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_log();
