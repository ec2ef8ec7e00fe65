SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE TABLE retention_policies (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid,
  kinds text[] NOT NULL DEFAULT '{}'
    CHECK (kinds <@ ARRAY['CONSTRAINT', 'DECISION', 'FACT', 'PREFERENCE', 'QUESTION', 'TASK']),
  statuses text[] NOT NULL
    CHECK (cardinality(statuses) > 0 AND statuses <@ ARRAY['SUPERSEDED', 'RETIRED']),
  -- At least 30 days, so that R11's recent supersessions always have their text.
  after interval NOT NULL CHECK (after >= interval '30 days'),
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  removed_by uuid,
  removed_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, removed_by) REFERENCES actors (workspace_id, id),
  CHECK ((removed_by IS NULL) = (removed_at IS NULL))
);
CREATE TABLE legal_holds (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  item_id uuid,  -- null: the whole project
  reason text NOT NULL CHECK (length(btrim(reason)) > 0),
  placed_by uuid NOT NULL,
  placed_at timestamptz NOT NULL DEFAULT now(),
  released_by uuid,
  released_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, placed_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, released_by) REFERENCES actors (workspace_id, id),
  CHECK ((released_by IS NULL) = (released_at IS NULL))
);
CREATE INDEX legal_holds_open ON legal_holds (workspace_id, project_id, item_id) WHERE released_at IS NULL;
ALTER TABLE retention_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE retention_policies FORCE ROW LEVEL SECURITY;
ALTER TABLE legal_holds ENABLE ROW LEVEL SECURITY;
ALTER TABLE legal_holds FORCE ROW LEVEL SECURITY;
ALTER TABLE actors ADD COLUMN erased_at timestamp with time zone;
ALTER TABLE items ADD COLUMN redacted_at timestamp with time zone;
ALTER TABLE items ADD COLUMN redaction_reason text;
ALTER TABLE items DROP CONSTRAINT items_statement_check;
ALTER TABLE item_events DROP CONSTRAINT item_events_event_check;
ALTER TABLE items ADD CONSTRAINT items_redaction_reason_check CHECK ((redaction_reason = ANY (ARRAY['retention'::text, 'erasure'::text, 'secret'::text])));
ALTER TABLE items ADD CONSTRAINT items_redaction_whole CHECK (((redacted_at IS NULL) = (redaction_reason IS NULL)));
ALTER TABLE items ADD CONSTRAINT items_statement_present CHECK (((length(btrim(statement)) > 0) OR (redacted_at IS NOT NULL)));
ALTER TABLE item_events ADD CONSTRAINT item_events_event_check CHECK ((event = ANY (ARRAY['ASSERTED'::text, 'STATUS_CHANGED'::text, 'NOTED'::text, 'CONFIRMED'::text, 'LOAD_BEARING_SET'::text, 'LOAD_BEARING_CLEARED'::text, 'LOAD_BEARING_SUGGESTED'::text, 'LOAD_BEARING_DECLINED'::text, 'VERIFIED'::text, 'REDACTED'::text, 'HELD'::text, 'RELEASED'::text])));
CREATE OR REPLACE FUNCTION public.mneia_erase_actor(target uuid)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    ws uuid := public.mneia_workspace();
    me uuid := public.mneia_actor();
    private uuid[];
  BEGIN
    IF NOT public.mneia_actor_is_human() THEN
      PERFORM public.mneia_require_human(me, 'erasing an actor');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.actors a WHERE a.workspace_id = ws AND a.id = target) THEN
      PERFORM public.mneia_refuse('an actor of the workspace is erased');
    END IF;
    UPDATE public.api_tokens t SET revoked_at = now(), revoked_by = me
      WHERE t.workspace_id = ws AND t.actor_id = target AND t.revoked_at IS NULL;
    UPDATE public.actors a
      SET name = 'erased actor ' || left(md5(a.id::text), 8), erased_at = coalesce(a.erased_at, now()),
          identity_id = NULL  -- R19: the person is no longer linked to it
      WHERE a.workspace_id = ws AND a.id = target;
    UPDATE public.sessions s SET task = NULL, deep_link = NULL
      WHERE s.workspace_id = ws AND s.actor_id = target AND (s.task IS NOT NULL OR s.deep_link IS NOT NULL);
    SELECT coalesce(array_agg(i.id), '{}') INTO private FROM public.items i
      WHERE i.workspace_id = ws AND i.asserted_by = target AND i.scope = 'PRIVATE';
    RETURN QUERY SELECT public.mneia_redact(private, 'erasure');
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_held(workspace uuid, project uuid, item uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.legal_holds h
                   WHERE h.workspace_id = workspace AND h.project_id = project AND h.released_at IS NULL
                     AND (h.item_id IS NULL OR h.item_id = item));
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
    PERFORM public.mneia_item_event(held, coalesce(NEW.released_by, NEW.placed_by), now(),
      CASE WHEN TG_OP = 'INSERT' THEN 'HELD' ELSE 'RELEASED' END, held.status, held.load_bearing,
      held.confirmed_by IS NOT NULL, NEW.reason, jsonb_build_object('hold', NEW.id));
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_redacted()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    -- No trusted-session exception: this holds for the owner and a superuser too.
    IF OLD.redacted_at IS NOT NULL THEN
      IF (NEW.redacted_at, NEW.redaction_reason, NEW.statement, NEW.details, NEW.basis, NEW.status_reason,
          NEW.supersession_reason)
         IS DISTINCT FROM (OLD.redacted_at, OLD.redaction_reason, OLD.statement, OLD.details, OLD.basis,
                           OLD.status_reason, OLD.supersession_reason) THEN
        PERFORM public.mneia_disallow('a redacted item''s text is never written back', 'items_redacted_for_good');
      END IF;
    ELSIF NEW.redacted_at IS NOT NULL THEN
      IF public.mneia_held(NEW.workspace_id, NEW.project_id, NEW.id) THEN
        PERFORM public.mneia_disallow('an item under a legal hold is never redacted', 'items_held');
      END IF;
      IF NEW.statement <> '' OR NEW.details IS NOT NULL OR NEW.basis IS NOT NULL
         OR NEW.status_reason IS NOT NULL OR coalesce(NEW.supersession_reason, '') <> '' THEN
        PERFORM public.mneia_disallow('a redaction blanks all of an item''s text', 'items_redaction_blanks');
      END IF;
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_redact(ids uuid[], why text)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    ws uuid := public.mneia_workspace();
    done uuid[];
  BEGIN
    IF ws IS NULL OR why NOT IN ('retention', 'erasure') THEN
      PERFORM public.mneia_refuse('a redaction names its workspace and its reason');
    END IF;
    WITH due AS (
      SELECT i.id FROM public.items i
      WHERE i.workspace_id = ws AND i.id = ANY (ids) AND i.redacted_at IS NULL
        AND NOT public.mneia_held(ws, i.project_id, i.id)
      ORDER BY i.id FOR UPDATE
    ), blanked AS (
      UPDATE public.items i
        SET statement = '', details = NULL, basis = NULL, status_reason = NULL,
            supersession_reason = CASE WHEN i.supersedes_id IS NULL THEN NULL ELSE '' END,
            redacted_at = now(), redaction_reason = why
        FROM due WHERE i.workspace_id = ws AND i.id = due.id
        RETURNING i.id
    )
    SELECT coalesce(array_agg(blanked.id), '{}') INTO done FROM blanked;
    IF cardinality(done) = 0 THEN
      RETURN;
    END IF;
    UPDATE public.item_states s SET status_reason = NULL
      WHERE s.workspace_id = ws AND s.item_id = ANY (done) AND s.status_reason IS NOT NULL;
    UPDATE public.item_events e SET reason = NULL
      WHERE e.workspace_id = ws AND e.item_id = ANY (done) AND e.event <> 'REDACTED' AND e.reason IS NOT NULL;
    UPDATE public.proposals p
      SET reason = NULL,
          replacement = CASE WHEN p.replacement IS NULL THEN NULL
                             ELSE jsonb_set(jsonb_set(jsonb_set(p.replacement, '{item,statement}', '""'),
                                                      '{item,details}', 'null'), '{item,basis}', 'null') END
      WHERE p.workspace_id = ws AND (p.target_id = ANY (done) OR p.result_id = ANY (done));
    UPDATE public.disputes d SET reason = NULL
      WHERE d.workspace_id = ws AND d.item_id = ANY (done) AND d.reason IS NOT NULL;
    RETURN QUERY SELECT unnest(done);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_token_of_erased()
 RETURNS trigger
 LANGUAGE plpgsql
 
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    IF EXISTS (SELECT 1 FROM public.actors a WHERE a.workspace_id = NEW.workspace_id AND a.id = NEW.actor_id
                 AND a.erased_at IS NOT NULL) THEN
      PERFORM public.mneia_disallow('an erased actor has no token', 'api_tokens_not_erased');
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
  $function$;
CREATE POLICY actor_erase ON actors AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY token_erase ON api_tokens AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY dispute_redact ON disputes AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY item_event_redact ON item_events AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY item_redact ON items AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY hold_guard_read ON legal_holds AS PERMISSIVE FOR SELECT TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY hold_place ON legal_holds AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (placed_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (placed_at = now())));
CREATE POLICY hold_read ON legal_holds AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY hold_release ON legal_holds AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human))) WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (released_by = ( SELECT mneia_actor() AS mneia_actor))));
CREATE POLICY proposal_redact ON proposals AS PERMISSIVE FOR UPDATE TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY retention_read ON retention_policies AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY retention_remove ON retention_policies AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human))) WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (removed_by = ( SELECT mneia_actor() AS mneia_actor))));
CREATE POLICY retention_sweep_read ON retention_policies AS PERMISSIVE FOR SELECT TO mneia_owner USING (true);
CREATE POLICY retention_set ON retention_policies AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (created_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (created_at = now())));
CREATE TRIGGER api_tokens_not_erased BEFORE INSERT OR UPDATE ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION mneia_token_of_erased();
CREATE TRIGGER items_redacted BEFORE UPDATE ON public.items FOR EACH ROW EXECUTE FUNCTION mneia_items_redacted();
CREATE TRIGGER legal_holds_log AFTER INSERT OR UPDATE ON public.legal_holds FOR EACH ROW EXECUTE FUNCTION mneia_holds_log();
REVOKE ALL ON FUNCTION mneia_erase_actor(target uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_held(workspace uuid, project uuid, item uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_holds_log() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_items_redacted() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_redact(ids uuid[], why text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_token_of_erased() FROM PUBLIC;
GRANT UPDATE (released_at) ON legal_holds TO mneia_app;
GRANT UPDATE (released_by) ON legal_holds TO mneia_app;
GRANT UPDATE (removed_at) ON retention_policies TO mneia_app;
GRANT UPDATE (removed_by) ON retention_policies TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_erase_actor(target uuid) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_held(workspace uuid, project uuid, item uuid) TO mneia_app;
GRANT INSERT ON legal_holds TO mneia_app;
GRANT SELECT ON legal_holds TO mneia_app;
GRANT INSERT ON retention_policies TO mneia_app;
GRANT SELECT ON retention_policies TO mneia_app;
-- R19 meets R18: an erased actor is nobody's membership any more.
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
      WHERE a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL
      ORDER BY w.name, a.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
RESET ROLE;
