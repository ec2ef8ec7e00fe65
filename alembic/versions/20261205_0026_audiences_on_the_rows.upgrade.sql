-- 0026 upgrade: events, states, proposals, disputes and handoffs read their own row: an item's
-- audience, a session's actor and project copied onto it. The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP POLICY dispute_read ON disputes;
DROP POLICY handoff_write ON handoffs;
DROP POLICY item_event_read ON item_events;
DROP POLICY item_state_read ON item_states;
DROP POLICY proposal_read ON proposals;
ALTER TABLE item_events ADD COLUMN item_project_id uuid, ADD COLUMN item_scope text,
  ADD COLUMN item_asserted_by uuid, ADD COLUMN item_grants uuid[];
ALTER TABLE item_states ADD COLUMN item_project_id uuid, ADD COLUMN item_scope text,
  ADD COLUMN item_asserted_by uuid, ADD COLUMN item_grants uuid[];
ALTER TABLE proposals ADD COLUMN target_scope text, ADD COLUMN target_asserted_by uuid,
  ADD COLUMN target_grants uuid[];
ALTER TABLE disputes ADD COLUMN item_scope text, ADD COLUMN item_asserted_by uuid, ADD COLUMN item_grants uuid[],
  ADD COLUMN contested_scope text, ADD COLUMN contested_asserted_by uuid, ADD COLUMN contested_grants uuid[];
ALTER TABLE handoffs ADD COLUMN session_actor_id uuid, ADD COLUMN session_project_id uuid;
-- Existing rows: the audiences and sessions as they stand (no policy binds the migration;
-- FORCE again after).
ALTER TABLE items NO FORCE ROW LEVEL SECURITY;
ALTER TABLE sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events NO FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states NO FORCE ROW LEVEL SECURITY;
ALTER TABLE proposals NO FORCE ROW LEVEL SECURITY;
ALTER TABLE disputes NO FORCE ROW LEVEL SECURITY;
ALTER TABLE handoffs NO FORCE ROW LEVEL SECURITY;
UPDATE item_events e SET item_project_id = i.project_id, item_scope = i.scope, item_asserted_by = i.asserted_by,
    item_grants = CASE WHEN i.scope = 'GRANTS' THEN i.grant_actor_ids END
  FROM items i WHERE i.workspace_id = e.workspace_id AND i.id = e.item_id;
UPDATE item_states s SET item_project_id = i.project_id, item_scope = i.scope, item_asserted_by = i.asserted_by,
    item_grants = CASE WHEN i.scope = 'GRANTS' THEN i.grant_actor_ids END
  FROM items i WHERE i.workspace_id = s.workspace_id AND i.id = s.item_id;
UPDATE proposals p SET target_scope = i.scope, target_asserted_by = i.asserted_by,
    target_grants = CASE WHEN i.scope = 'GRANTS' THEN i.grant_actor_ids END
  FROM items i WHERE i.workspace_id = p.workspace_id AND i.id = p.target_id;
UPDATE disputes d SET item_scope = i.scope, item_asserted_by = i.asserted_by,
    item_grants = CASE WHEN i.scope = 'GRANTS' THEN i.grant_actor_ids END,
    contested_scope = c.scope, contested_asserted_by = c.asserted_by,
    contested_grants = CASE WHEN c.scope = 'GRANTS' THEN c.grant_actor_ids END
  FROM items i, items c
  WHERE i.workspace_id = d.workspace_id AND i.id = d.item_id
    AND c.workspace_id = d.workspace_id AND c.id = d.contested_id;
UPDATE handoffs h SET session_actor_id = s.actor_id, session_project_id = s.project_id
  FROM sessions s WHERE s.workspace_id = h.workspace_id AND s.id = h.session_id;
ALTER TABLE handoffs FORCE ROW LEVEL SECURITY;
ALTER TABLE disputes FORCE ROW LEVEL SECURITY;
ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events FORCE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events ALTER COLUMN item_project_id SET NOT NULL, ALTER COLUMN item_scope SET NOT NULL,
  ALTER COLUMN item_asserted_by SET NOT NULL;
ALTER TABLE item_states ALTER COLUMN item_project_id SET NOT NULL, ALTER COLUMN item_scope SET NOT NULL,
  ALTER COLUMN item_asserted_by SET NOT NULL;
ALTER TABLE proposals ALTER COLUMN target_scope SET NOT NULL, ALTER COLUMN target_asserted_by SET NOT NULL;
ALTER TABLE disputes ALTER COLUMN item_scope SET NOT NULL, ALTER COLUMN item_asserted_by SET NOT NULL,
  ALTER COLUMN contested_scope SET NOT NULL, ALTER COLUMN contested_asserted_by SET NOT NULL;
CREATE OR REPLACE FUNCTION public.mneia_audience_follows()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    grants uuid[] := CASE WHEN NEW.scope = 'GRANTS' THEN NEW.grant_actor_ids END;
  BEGIN
    UPDATE public.item_events e
      SET item_project_id = NEW.project_id, item_scope = NEW.scope, item_asserted_by = NEW.asserted_by,
          item_grants = grants
      WHERE e.workspace_id = NEW.workspace_id AND e.item_id = NEW.id;
    UPDATE public.item_states s
      SET item_project_id = NEW.project_id, item_scope = NEW.scope, item_asserted_by = NEW.asserted_by,
          item_grants = grants
      WHERE s.workspace_id = NEW.workspace_id AND s.item_id = NEW.id;
    UPDATE public.proposals p
      SET target_scope = NEW.scope, target_asserted_by = NEW.asserted_by, target_grants = grants
      WHERE p.workspace_id = NEW.workspace_id AND p.target_id = NEW.id;
    UPDATE public.disputes d
      SET item_scope = NEW.scope, item_asserted_by = NEW.asserted_by, item_grants = grants
      WHERE d.workspace_id = NEW.workspace_id AND d.item_id = NEW.id;
    UPDATE public.disputes d
      SET contested_scope = NEW.scope, contested_asserted_by = NEW.asserted_by, contested_grants = grants
      WHERE d.workspace_id = NEW.workspace_id AND d.contested_id = NEW.id;
    RETURN NULL;
  END
  $function$;
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
    IF TG_TABLE_NAME = 'proposals' THEN
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.target_id;
    ELSE
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id;
    END IF;
    IF NOT FOUND THEN  -- another workspace's, or none: the policies refuse the row, or its key does
      RETURN NEW;
    END IF;
    IF TG_TABLE_NAME IN ('item_events', 'item_states') THEN
      NEW.item_project_id := seen.project_id;
      NEW.item_scope := seen.scope;
      NEW.item_asserted_by := seen.asserted_by;
      NEW.item_grants := CASE WHEN seen.scope = 'GRANTS' THEN seen.grant_actor_ids END;
    ELSIF TG_TABLE_NAME = 'proposals' THEN
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
    IF TG_TABLE_NAME = 'api_tokens' THEN
      NEW.actor_created_by := (SELECT a.created_by FROM public.actors a
                               WHERE a.workspace_id = NEW.workspace_id AND a.id = NEW.actor_id);
    ELSIF TG_TABLE_NAME = 'team_members' THEN
      NEW.team_created_by := (SELECT t.created_by FROM public.teams t
                              WHERE t.workspace_id = NEW.workspace_id AND t.id = NEW.team_id);
    ELSIF TG_TABLE_NAME = 'handoffs' THEN
      SELECT s.actor_id, s.project_id INTO NEW.session_actor_id, NEW.session_project_id
        FROM public.sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
    ELSE
      NEW.project_created_by := (SELECT p.created_by FROM public.projects p
                                 WHERE p.workspace_id = NEW.workspace_id AND p.id = NEW.project_id);
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE POLICY item_event_guard_read ON item_events AS PERMISSIVE FOR SELECT TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY proposal_guard_read ON proposals AS PERMISSIVE FOR SELECT TO mneia_owner USING ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY dispute_read ON disputes AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((item_asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (item_scope = 'WORKSPACE'::text) OR ((item_scope = 'PROJECT'::text) AND (project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((item_scope = 'TEAM'::text) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((item_scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (item_grants)))) AND ((contested_asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (contested_scope = 'WORKSPACE'::text) OR ((contested_scope = 'PROJECT'::text) AND (project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((contested_scope = 'TEAM'::text) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((contested_scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (contested_grants))))));
CREATE POLICY handoff_write ON handoffs AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (created_by = ( SELECT mneia_actor() AS mneia_actor)) AND (created_at = now()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) AND (session_actor_id = ( SELECT mneia_actor() AS mneia_actor)) AND (session_project_id = project_id)));
CREATE POLICY item_event_read ON item_events AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((item_asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (item_scope = 'WORKSPACE'::text) OR ((item_scope = 'PROJECT'::text) AND (item_project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((item_scope = 'TEAM'::text) AND (item_project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((item_scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (item_grants))))));
CREATE POLICY item_state_read ON item_states AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((item_asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (item_scope = 'WORKSPACE'::text) OR ((item_scope = 'PROJECT'::text) AND (item_project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((item_scope = 'TEAM'::text) AND (item_project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((item_scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (item_grants))))));
CREATE POLICY proposal_read ON proposals AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((target_asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (target_scope = 'WORKSPACE'::text) OR ((target_scope = 'PROJECT'::text) AND (project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((target_scope = 'TEAM'::text) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((target_scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (target_grants))))));
CREATE TRIGGER disputes_audience BEFORE INSERT ON public.disputes FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience();
CREATE TRIGGER handoffs_creator BEFORE INSERT ON public.handoffs FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator();
CREATE TRIGGER item_events_audience BEFORE INSERT ON public.item_events FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience();
CREATE TRIGGER item_states_audience BEFORE INSERT ON public.item_states FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience();
CREATE TRIGGER items_audience_follows AFTER UPDATE OF project_id, scope, grant_actor_ids, asserted_by
  ON public.items FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.grant_actor_ids IS DISTINCT FROM NEW.grant_actor_ids
        OR OLD.asserted_by IS DISTINCT FROM NEW.asserted_by)
  EXECUTE FUNCTION mneia_audience_follows();
CREATE TRIGGER proposals_audience BEFORE INSERT ON public.proposals FOR EACH ROW EXECUTE FUNCTION mneia_copy_audience();
REVOKE ALL ON FUNCTION mneia_audience_follows() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_copy_audience() FROM PUBLIC;
RESET ROLE;
