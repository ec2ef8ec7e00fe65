-- 0026 downgrade: the policies read items and sessions again.
-- The result equals storage/sql at 0025 (tests/test_migration.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER disputes_audience ON disputes;
DROP TRIGGER handoffs_creator ON handoffs;
DROP TRIGGER item_events_audience ON item_events;
DROP TRIGGER item_states_audience ON item_states;
DROP TRIGGER items_audience_follows ON items;
DROP TRIGGER proposals_audience ON proposals;
DROP POLICY item_event_guard_read ON item_events;
DROP POLICY proposal_guard_read ON proposals;
DROP POLICY dispute_read ON disputes;
DROP POLICY handoff_write ON handoffs;
DROP POLICY item_event_read ON item_events;
DROP POLICY item_state_read ON item_states;
DROP POLICY proposal_read ON proposals;
DROP FUNCTION mneia_audience_follows();
DROP FUNCTION mneia_copy_audience();
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
    ELSE
      NEW.project_created_by := (SELECT p.created_by FROM public.projects p
                                 WHERE p.workspace_id = NEW.workspace_id AND p.id = NEW.project_id);
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE POLICY dispute_read ON disputes AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = disputes.workspace_id) AND (i.id = disputes.item_id)))) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = disputes.workspace_id) AND (i.id = disputes.contested_id))))));
CREATE POLICY handoff_write ON handoffs AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (created_by = ( SELECT mneia_actor() AS mneia_actor)) AND (created_at = now()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) AND (EXISTS ( SELECT 1
   FROM sessions s
  WHERE ((s.workspace_id = handoffs.workspace_id) AND (s.id = handoffs.session_id) AND (s.project_id = handoffs.project_id) AND (s.actor_id = ( SELECT mneia_actor() AS mneia_actor)))))));
CREATE POLICY item_event_read ON item_events AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = item_events.workspace_id) AND (i.id = item_events.item_id))))));
CREATE POLICY item_state_read ON item_states AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = item_states.workspace_id) AND (i.id = item_states.item_id))))));
CREATE POLICY proposal_read ON proposals AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = proposals.workspace_id) AND (i.id = proposals.target_id))))));
ALTER TABLE disputes DROP COLUMN contested_asserted_by;
ALTER TABLE disputes DROP COLUMN contested_grants;
ALTER TABLE disputes DROP COLUMN contested_scope;
ALTER TABLE disputes DROP COLUMN item_asserted_by;
ALTER TABLE disputes DROP COLUMN item_grants;
ALTER TABLE disputes DROP COLUMN item_scope;
ALTER TABLE handoffs DROP COLUMN session_actor_id;
ALTER TABLE handoffs DROP COLUMN session_project_id;
ALTER TABLE item_events DROP COLUMN item_asserted_by;
ALTER TABLE item_events DROP COLUMN item_grants;
ALTER TABLE item_events DROP COLUMN item_project_id;
ALTER TABLE item_events DROP COLUMN item_scope;
ALTER TABLE item_states DROP COLUMN item_asserted_by;
ALTER TABLE item_states DROP COLUMN item_grants;
ALTER TABLE item_states DROP COLUMN item_project_id;
ALTER TABLE item_states DROP COLUMN item_scope;
ALTER TABLE proposals DROP COLUMN target_asserted_by;
ALTER TABLE proposals DROP COLUMN target_grants;
ALTER TABLE proposals DROP COLUMN target_scope;
RESET ROLE;
