-- 0025 upgrade: the token and membership policies read their own row: creators copied onto it.
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP POLICY token_create ON api_tokens;
DROP POLICY token_read ON api_tokens;
DROP POLICY token_revoke ON api_tokens;
DROP POLICY project_member_add ON project_members;
DROP POLICY team_member_add ON team_members;
ALTER TABLE api_tokens ADD COLUMN actor_created_by uuid;
ALTER TABLE project_members ADD COLUMN project_created_by uuid;
ALTER TABLE team_members ADD COLUMN team_created_by uuid;
-- Existing rows: the creators as they stand (no policy binds the migration; FORCE again after).
ALTER TABLE actors NO FORCE ROW LEVEL SECURITY;
ALTER TABLE teams NO FORCE ROW LEVEL SECURITY;
ALTER TABLE projects NO FORCE ROW LEVEL SECURITY;
ALTER TABLE api_tokens NO FORCE ROW LEVEL SECURITY;
ALTER TABLE team_members NO FORCE ROW LEVEL SECURITY;
ALTER TABLE project_members NO FORCE ROW LEVEL SECURITY;
UPDATE api_tokens t SET actor_created_by = a.created_by FROM actors a
  WHERE a.workspace_id = t.workspace_id AND a.id = t.actor_id;
UPDATE team_members m SET team_created_by = t.created_by FROM teams t
  WHERE t.workspace_id = m.workspace_id AND t.id = m.team_id;
UPDATE project_members m SET project_created_by = p.created_by FROM projects p
  WHERE p.workspace_id = m.workspace_id AND p.id = m.project_id;
ALTER TABLE project_members FORCE ROW LEVEL SECURITY;
ALTER TABLE team_members FORCE ROW LEVEL SECURITY;
ALTER TABLE api_tokens FORCE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
ALTER TABLE teams FORCE ROW LEVEL SECURITY;
ALTER TABLE actors FORCE ROW LEVEL SECURITY;
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
CREATE POLICY token_create ON api_tokens AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (created_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (actor_created_by = ( SELECT mneia_actor() AS mneia_actor)))));
CREATE POLICY token_read ON api_tokens AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (actor_created_by = ( SELECT mneia_actor() AS mneia_actor))))));
CREATE POLICY token_revoke ON api_tokens AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (actor_created_by = ( SELECT mneia_actor() AS mneia_actor)))))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY project_member_add ON project_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (added_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) OR (project_created_by = ( SELECT mneia_actor() AS mneia_actor)))));
CREATE POLICY team_member_add ON team_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (added_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((team_id = ANY (( SELECT mneia_member_teams() AS mneia_member_teams)::uuid[])) OR (team_created_by = ( SELECT mneia_actor() AS mneia_actor)))));
CREATE TRIGGER api_tokens_creator BEFORE INSERT ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator();
CREATE TRIGGER project_members_creator BEFORE INSERT ON public.project_members FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator();
CREATE TRIGGER team_members_creator BEFORE INSERT ON public.team_members FOR EACH ROW EXECUTE FUNCTION mneia_copy_creator();
REVOKE ALL ON FUNCTION mneia_copy_creator() FROM PUBLIC;
RESET ROLE;
