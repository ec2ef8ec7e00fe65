-- 0025 downgrade: the policies read the creators from actors, teams and projects again.
-- The result equals storage/sql at 0024 (tests/test_migration.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER api_tokens_creator ON api_tokens;
DROP TRIGGER project_members_creator ON project_members;
DROP TRIGGER team_members_creator ON team_members;
DROP POLICY token_create ON api_tokens;
DROP POLICY token_read ON api_tokens;
DROP POLICY token_revoke ON api_tokens;
DROP POLICY project_member_add ON project_members;
DROP POLICY team_member_add ON team_members;
DROP FUNCTION mneia_copy_creator();
CREATE POLICY token_create ON api_tokens AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (created_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (EXISTS ( SELECT 1
   FROM actors a
  WHERE ((a.workspace_id = api_tokens.workspace_id) AND (a.id = api_tokens.actor_id) AND ((a.id = ( SELECT mneia_actor() AS mneia_actor)) OR (a.created_by = ( SELECT mneia_actor() AS mneia_actor))))))));
CREATE POLICY token_read ON api_tokens AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (EXISTS ( SELECT 1
   FROM actors a
  WHERE ((a.workspace_id = api_tokens.workspace_id) AND (a.id = api_tokens.actor_id) AND (a.created_by = ( SELECT mneia_actor() AS mneia_actor)))))))));
CREATE POLICY token_revoke ON api_tokens AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND (EXISTS ( SELECT 1
   FROM actors a
  WHERE ((a.workspace_id = api_tokens.workspace_id) AND (a.id = api_tokens.actor_id) AND (a.created_by = ( SELECT mneia_actor() AS mneia_actor))))))))) WITH CHECK ((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)));
CREATE POLICY project_member_add ON project_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (added_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) OR (EXISTS ( SELECT 1
   FROM projects p
  WHERE ((p.workspace_id = project_members.workspace_id) AND (p.id = project_members.project_id) AND (p.created_by = ( SELECT mneia_actor() AS mneia_actor))))))));
CREATE POLICY team_member_add ON team_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND (added_by = ( SELECT mneia_actor() AS mneia_actor)) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((team_id = ANY (( SELECT mneia_member_teams() AS mneia_member_teams)::uuid[])) OR (EXISTS ( SELECT 1
   FROM teams t
  WHERE ((t.workspace_id = team_members.workspace_id) AND (t.id = team_members.team_id) AND (t.created_by = ( SELECT mneia_actor() AS mneia_actor))))))));
ALTER TABLE api_tokens DROP COLUMN actor_created_by;
ALTER TABLE project_members DROP COLUMN project_created_by;
ALTER TABLE team_members DROP COLUMN team_created_by;
RESET ROLE;
