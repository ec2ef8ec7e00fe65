-- 0002 downgrade: back to the foundation's definitions (generated, then reviewed).
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
-- Data first, by hand: pending replacements back to the foundation's flat form.
ALTER TABLE proposals NO FORCE ROW LEVEL SECURITY;
UPDATE proposals
  SET replacement = (replacement -> 'item') || jsonb_build_object('asserted_by', proposed_by)
  WHERE replacement ? 'v';
ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
SET LOCAL check_function_bodies = off;
DROP TRIGGER actors_times ON actors;
DROP TRIGGER api_tokens_times ON api_tokens;
DROP TRIGGER project_members_rebind ON project_members;
DROP TRIGGER project_members_times ON project_members;
DROP TRIGGER projects_rebind ON projects;
DROP TRIGGER projects_times ON projects;
DROP TRIGGER sessions_times ON sessions;
DROP TRIGGER team_members_rebind ON team_members;
DROP TRIGGER team_members_times ON team_members;
DROP TRIGGER teams_times ON teams;
DROP TRIGGER disputes_guard ON disputes;
DROP TRIGGER proposals_guard ON proposals;
DROP POLICY token_presented ON api_tokens;
DROP POLICY dispute_guard_read ON disputes;
DROP POLICY item_guard_read ON items;
DROP POLICY seal_key_owner ON seal_keys;
DROP POLICY actor_bootstrap ON actors;
DROP POLICY actor_create ON actors;
DROP POLICY actor_read ON actors;
DROP POLICY token_bootstrap ON api_tokens;
DROP POLICY token_create ON api_tokens;
DROP POLICY token_read ON api_tokens;
DROP POLICY token_revoke ON api_tokens;
DROP POLICY client_create ON clients;
DROP POLICY client_read ON clients;
DROP POLICY dispute_raise ON disputes;
DROP POLICY dispute_read ON disputes;
DROP POLICY dispute_resolve ON disputes;
DROP POLICY item_event_append ON item_events;
DROP POLICY item_event_read ON item_events;
DROP POLICY item_assert ON items;
DROP POLICY item_change ON items;
DROP POLICY project_member_add ON project_members;
DROP POLICY project_member_read ON project_members;
DROP POLICY project_create ON projects;
DROP POLICY project_read ON projects;
DROP POLICY proposal_decide ON proposals;
DROP POLICY proposal_raise ON proposals;
DROP POLICY proposal_read ON proposals;
DROP POLICY session_end ON sessions;
DROP POLICY session_read ON sessions;
DROP POLICY session_start ON sessions;
DROP POLICY team_member_add ON team_members;
DROP POLICY team_member_read ON team_members;
DROP POLICY team_create ON teams;
DROP POLICY team_read ON teams;
DROP POLICY workspace_bootstrap ON workspaces;
DROP POLICY workspace_self ON workspaces;
DROP FUNCTION mneia_bind(workspace uuid, actor uuid);
DROP FUNCTION mneia_bootstrap(workspace_name text, human_name text, token_digest text);
DROP FUNCTION mneia_channel();
DROP FUNCTION mneia_channel_of(workspace uuid);
DROP FUNCTION mneia_context_field(field text);
DROP FUNCTION mneia_context_seal();
DROP FUNCTION mneia_disallow(what text, rule text);
DROP FUNCTION mneia_has_successor(workspace uuid, item uuid);
DROP FUNCTION mneia_keeps_audience(replaced items, replacement items);
DROP FUNCTION mneia_kept_by_resolution(workspace uuid, item uuid);
DROP FUNCTION mneia_member_teams();
DROP FUNCTION mneia_open_disputes(workspace uuid, item uuid);
DROP FUNCTION mneia_random_bytes();
DROP FUNCTION mneia_rebind();
DROP FUNCTION mneia_recorded_times();
DROP FUNCTION mneia_refuse(what text);
DROP FUNCTION mneia_replacement_matches(proposal proposals, candidate items);
DROP FUNCTION mneia_require_now(value timestamp with time zone, what text);
DROP FUNCTION mneia_rotate_seal_key();
DROP FUNCTION mneia_sealed();
DROP FUNCTION mneia_trusted_session();
DROP FUNCTION mneia_unbind();
DROP INDEX disputes_seq;
DROP INDEX proposals_seq;
CREATE OR REPLACE FUNCTION public.mneia_is_human(candidate uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT EXISTS (SELECT 1 FROM actors
                   WHERE workspace_id = mneia_workspace() AND id = candidate AND kind = 'HUMAN')
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_actor()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT nullif(current_setting('mneia.actor_id', true), '')::uuid $function$;
CREATE OR REPLACE FUNCTION public.mneia_actor_is_human()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
    SELECT EXISTS (SELECT 1 FROM actors
                   WHERE workspace_id = mneia_workspace() AND id = mneia_actor() AND kind = 'HUMAN')
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_announce()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
  BEGIN
    PERFORM pg_notify('mneia', json_build_object(
      'kind', TG_ARGV[0], 'workspace', NEW.workspace_id, 'project', NEW.project_id, 'id', NEW.id)::text);
    RETURN NULL;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_authenticate(presented text)
 RETURNS TABLE(workspace_id uuid, id uuid, kind text, name text, created_at timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
  DECLARE
    found_workspace uuid;
    found_actor uuid;
  BEGIN
    PERFORM set_config('mneia.token_hash', presented, true);
    SELECT t.workspace_id, t.actor_id INTO found_workspace, found_actor
      FROM api_tokens t WHERE t.token_hash = presented AND t.revoked_at IS NULL;
    PERFORM set_config('mneia.token_hash', '', true);
    IF found_actor IS NULL THEN
      RETURN;
    END IF;
    PERFORM set_config('mneia.workspace_id', found_workspace::text, true),
            set_config('mneia.actor_id', found_actor::text, true);
    RETURN QUERY SELECT a.workspace_id, a.id, a.kind, a.name, a.created_at FROM actors a
      WHERE a.workspace_id = found_workspace AND a.id = found_actor;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_disputes_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
  BEGIN
    IF NEW.resolved_by IS DISTINCT FROM OLD.resolved_by OR NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM mneia_require_human(NEW.resolved_by, 'a dispute resolution');
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      IF NEW.confirmed_by IS NOT NULL THEN
        PERFORM mneia_require_human(NEW.confirmed_by, 'a confirmation');
      END IF;
      IF NEW.load_bearing THEN
        PERFORM mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      END IF;
    ELSE
      IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by
         OR NEW.confirmed_at IS DISTINCT FROM OLD.confirmed_at THEN
        PERFORM mneia_require_human(NEW.confirmed_by, 'a confirmation');
      END IF;
      IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing
         OR NEW.load_bearing_set_by IS DISTINCT FROM OLD.load_bearing_set_by THEN
        PERFORM mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      END IF;
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_log()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'public', 'pg_temp'
AS $function$
  DECLARE
    who uuid := coalesce(mneia_actor(), NEW.asserted_by);
    confirmed boolean := NEW.confirmed_by IS NOT NULL;
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason, data)
      VALUES (NEW.workspace_id, NEW.id, NEW.asserted_by, NEW.asserted_at, 'ASSERTED', NULL,
              NEW.status,
              NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.asserted_at,
              confirmed AND NEW.confirmed_at <= NEW.asserted_at,
              NEW.supersession_reason,
              jsonb_build_object('supersedes', NEW.supersedes_id, 'session', NEW.session_id));
      IF confirmed AND NEW.confirmed_at > NEW.asserted_at THEN
        INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.confirmed_by, NEW.confirmed_at, 'CONFIRMED',
                NEW.status, NEW.status, NEW.load_bearing AND NEW.load_bearing_set_at <= NEW.confirmed_at,
                true);
      END IF;
      IF NEW.load_bearing AND NEW.load_bearing_set_at > NEW.asserted_at THEN
        INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                                 load_bearing, confirmed)
        VALUES (NEW.workspace_id, NEW.id, NEW.load_bearing_set_by, NEW.load_bearing_set_at,
                'LOAD_BEARING_SET', NEW.status, NEW.status, true, confirmed);
      END IF;
      RETURN NEW;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'STATUS_CHANGED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.status_reason IS DISTINCT FROM OLD.status_reason
       AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed, reason)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'NOTED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed, NEW.status_reason);
    END IF;
    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'CONFIRMED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(),
              CASE WHEN NEW.load_bearing THEN 'LOAD_BEARING_SET' ELSE 'LOAD_BEARING_CLEARED' END,
              OLD.status, NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.load_bearing_suggested AND NOT OLD.load_bearing_suggested THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'LOAD_BEARING_SUGGESTED', OLD.status,
              NEW.status, NEW.load_bearing, confirmed);
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      INSERT INTO item_events (workspace_id, item_id, actor_id, at, event, from_status, to_status,
                               load_bearing, confirmed)
      VALUES (NEW.workspace_id, NEW.id, who, now(), 'VERIFIED', OLD.status, NEW.status,
              NEW.load_bearing, confirmed);
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_member_projects()
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
AS $function$
    SELECT coalesce(array_agg(project_id), '{}') FROM project_members
    WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor()
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_presented_token()
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT nullif(current_setting('mneia.token_hash', true), '') $function$;
CREATE OR REPLACE FUNCTION public.mneia_proposals_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
  BEGIN
    IF NEW.decided_by IS DISTINCT FROM OLD.decided_by OR NEW.status IS DISTINCT FROM OLD.status THEN
      PERFORM mneia_require_human(NEW.decided_by, 'a proposal decision');
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_require_human(who uuid, what text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
AS $function$
  BEGIN
    IF who IS NULL OR who IS DISTINCT FROM mneia_actor() OR NOT mneia_is_human(who) THEN
      RAISE EXCEPTION 'HUMAN_REQUIRED: % must be by the human making the request', what
        USING ERRCODE = 'insufficient_privilege';
    END IF;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_team_projects()
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
AS $function$
    SELECT coalesce(array_agg(p.id), '{}') FROM projects p
    WHERE p.workspace_id = mneia_workspace()
      AND (p.id IN (SELECT project_id FROM project_members
                    WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor())
           OR p.team_id IN (SELECT team_id FROM team_members
                            WHERE workspace_id = mneia_workspace() AND actor_id = mneia_actor()))
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_uuid7()
 RETURNS uuid
 LANGUAGE sql
AS $function$
    SELECT encode(
      set_bit(set_bit(
        overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6),
        52, 1), 53, 1),
      'hex')::uuid
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_workspace()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT nullif(current_setting('mneia.workspace_id', true), '')::uuid $function$;
CREATE POLICY actor_bootstrap ON actors AS PERMISSIVE FOR INSERT TO mneia_owner WITH CHECK (((workspace_id = mneia_workspace()) AND (kind = 'HUMAN'::text)));
CREATE POLICY actor_create ON actors AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (created_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)));
CREATE POLICY actor_read ON actors AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY token_bootstrap ON api_tokens AS PERMISSIVE FOR INSERT TO mneia_owner WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY token_create ON api_tokens AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (created_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)));
CREATE POLICY token_read ON api_tokens AS PERMISSIVE FOR SELECT TO public USING ((((workspace_id = mneia_workspace()) AND (actor_id = mneia_actor())) OR (token_hash = mneia_presented_token())));
CREATE POLICY token_revoke ON api_tokens AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = mneia_workspace()) AND (actor_id = mneia_actor()))) WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY client_create ON clients AS PERMISSIVE FOR INSERT TO public WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY client_read ON clients AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY dispute_raise ON disputes AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (raised_by = mneia_actor()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))));
CREATE POLICY dispute_read ON disputes AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = mneia_workspace()) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = disputes.workspace_id) AND (i.id = disputes.item_id)))) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = disputes.workspace_id) AND (i.id = disputes.contested_id))))));
CREATE POLICY dispute_resolve ON disputes AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = mneia_workspace()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])))) WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY item_event_append ON item_events AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (actor_id IS NOT NULL)));
CREATE POLICY item_event_read ON item_events AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = mneia_workspace()) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = item_events.workspace_id) AND (i.id = item_events.item_id))))));
CREATE POLICY item_assert ON items AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) AND ((asserted_by = mneia_actor()) OR ((confirmed_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)))));
CREATE POLICY item_change ON items AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND ((asserted_by = ( SELECT mneia_actor() AS mneia_actor)) OR (scope = 'WORKSPACE'::text) OR ((scope = 'PROJECT'::text) AND (project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((scope = 'TEAM'::text) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))) OR ((scope = 'GRANTS'::text) AND (( SELECT mneia_actor() AS mneia_actor) = ANY (grant_actor_ids)))) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])))) WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY project_member_add ON project_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (added_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])) OR (EXISTS ( SELECT 1
   FROM projects p
  WHERE ((p.workspace_id = project_members.workspace_id) AND (p.id = project_members.project_id) AND (p.created_by = mneia_actor())))))));
CREATE POLICY project_member_read ON project_members AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY project_create ON projects AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (created_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)));
CREATE POLICY project_read ON projects AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY proposal_decide ON proposals AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = mneia_workspace()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[])))) WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY proposal_raise ON proposals AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (proposed_by = mneia_actor()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))));
CREATE POLICY proposal_read ON proposals AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = mneia_workspace()) AND (EXISTS ( SELECT 1
   FROM items i
  WHERE ((i.workspace_id = proposals.workspace_id) AND (i.id = proposals.target_id))))));
CREATE POLICY session_end ON sessions AS PERMISSIVE FOR UPDATE TO public USING (((workspace_id = mneia_workspace()) AND ((actor_id = mneia_actor()) OR ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)))) WITH CHECK ((workspace_id = mneia_workspace()));
CREATE POLICY session_read ON sessions AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY session_start ON sessions AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (actor_id = mneia_actor()) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))));
CREATE POLICY team_member_add ON team_members AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (added_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human) AND ((EXISTS ( SELECT 1
   FROM team_members m
  WHERE ((m.workspace_id = team_members.workspace_id) AND (m.team_id = team_members.team_id) AND (m.actor_id = mneia_actor())))) OR (EXISTS ( SELECT 1
   FROM teams t
  WHERE ((t.workspace_id = team_members.workspace_id) AND (t.id = team_members.team_id) AND (t.created_by = mneia_actor())))))));
CREATE POLICY team_member_read ON team_members AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY team_create ON teams AS PERMISSIVE FOR INSERT TO public WITH CHECK (((workspace_id = mneia_workspace()) AND (created_by = mneia_actor()) AND ( SELECT mneia_actor_is_human() AS mneia_actor_is_human)));
CREATE POLICY team_read ON teams AS PERMISSIVE FOR SELECT TO public USING ((workspace_id = mneia_workspace()));
CREATE POLICY workspace_bootstrap ON workspaces AS PERMISSIVE FOR INSERT TO mneia_owner WITH CHECK ((id = mneia_workspace()));
CREATE POLICY workspace_self ON workspaces AS PERMISSIVE FOR SELECT TO public USING ((id = mneia_workspace()));
CREATE TRIGGER disputes_guard BEFORE UPDATE ON public.disputes FOR EACH ROW EXECUTE FUNCTION mneia_disputes_guard();
CREATE TRIGGER proposals_guard BEFORE UPDATE ON public.proposals FOR EACH ROW EXECUTE FUNCTION mneia_proposals_guard();
ALTER TABLE disputes DROP COLUMN seq;
ALTER TABLE proposals DROP COLUMN seq;
DROP TABLE seal_keys;
DROP SEQUENCE announcement_seq;
GRANT EXECUTE ON FUNCTION mneia_actor() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_actor_is_human() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_announce() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_announce() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_authenticate(presented text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_disputes_guard() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_disputes_guard() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_is_human(candidate uuid) TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_is_human(candidate uuid) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_items_guard() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_items_guard() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_items_log() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_items_log() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_member_projects() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_presented_token() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_presented_token() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_proposals_guard() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_proposals_guard() TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_require_human(who uuid, what text) TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_team_projects() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_uuid7() TO PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_workspace() TO PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE mneia_owner GRANT EXECUTE ON FUNCTIONS TO PUBLIC;
RESET ROLE;
