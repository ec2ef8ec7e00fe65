-- Who sees and writes which rows: row-level security on every tenant table (R1, R2).
--
-- RLS is ENABLEd and FORCEd, so the owner is bound too. Every policy reads
-- the sealed request context (context.sql) through its accessors, each in a
-- scalar sub-select so that it is evaluated once per statement, not per row.
-- An unsealed context is nobody: its workspace is NULL and matches no row.
--
-- Policies restricted TO mneia_owner serve the administrator's bootstrap and
-- the owner's own functions (authentication, the authority guards); mneia_app
-- never acts as the owner.

ALTER TABLE workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspaces FORCE ROW LEVEL SECURITY;
ALTER TABLE identities ENABLE ROW LEVEL SECURITY;
ALTER TABLE identities FORCE ROW LEVEL SECURITY;
ALTER TABLE actors ENABLE ROW LEVEL SECURITY;
ALTER TABLE actors FORCE ROW LEVEL SECURITY;
ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_tokens FORCE ROW LEVEL SECURITY;
ALTER TABLE teams ENABLE ROW LEVEL SECURITY;
ALTER TABLE teams FORCE ROW LEVEL SECURITY;
ALTER TABLE team_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE team_members FORCE ROW LEVEL SECURITY;
ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
ALTER TABLE project_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_members FORCE ROW LEVEL SECURITY;
ALTER TABLE clients ENABLE ROW LEVEL SECURITY;
ALTER TABLE clients FORCE ROW LEVEL SECURITY;
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE items ENABLE ROW LEVEL SECURITY;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
ALTER TABLE item_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE item_events FORCE ROW LEVEL SECURITY;
ALTER TABLE item_states ENABLE ROW LEVEL SECURITY;
ALTER TABLE item_states FORCE ROW LEVEL SECURITY;
ALTER TABLE proposals ENABLE ROW LEVEL SECURITY;
ALTER TABLE proposals FORCE ROW LEVEL SECURITY;
ALTER TABLE disputes ENABLE ROW LEVEL SECURITY;
ALTER TABLE disputes FORCE ROW LEVEL SECURITY;
ALTER TABLE handoffs ENABLE ROW LEVEL SECURITY;
ALTER TABLE handoffs FORCE ROW LEVEL SECURITY;
ALTER TABLE imports ENABLE ROW LEVEL SECURITY;
ALTER TABLE imports FORCE ROW LEVEL SECURITY;

-- Workspaces and identities ---------------------------------------------------

CREATE POLICY workspace_self ON workspaces FOR SELECT USING (id = (SELECT mneia_workspace()));
CREATE POLICY workspace_bootstrap ON workspaces FOR INSERT TO mneia_owner
  WITH CHECK (id = (SELECT mneia_workspace()));

-- One person across workspaces: read only through the owner's mneia_identities_of
-- (identity.sql), the people linked to actors of the caller's workspace.
CREATE POLICY identity_bootstrap ON identities FOR INSERT TO mneia_owner WITH CHECK (true);

-- What a policy would otherwise read from another table, copied onto the row as it
-- is written, never the caller's word: the creator of a token's actor, of a new
-- member's team or project, the actor and project of a handoff's session. A policy
-- then reads its own row only, as it must on a cluster distributed by workspace
-- (docs/scale-out.md). None of these ever changes.
-- Each trigger names its table (TG_ARGV[0]): on Citus a trigger fires on a shard,
-- whose name (TG_TABLE_NAME) is the table's with the shard's number after it.
CREATE FUNCTION public.mneia_copy_creator() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF TG_ARGV[0] = 'api_tokens' THEN
      NEW.actor_created_by := (SELECT a.created_by FROM public.actors a
                               WHERE a.workspace_id = NEW.workspace_id AND a.id = NEW.actor_id);
    ELSIF TG_ARGV[0] = 'team_members' THEN
      NEW.team_created_by := (SELECT t.created_by FROM public.teams t
                              WHERE t.workspace_id = NEW.workspace_id AND t.id = NEW.team_id);
    ELSIF TG_ARGV[0] = 'handoffs' THEN
      SELECT s.actor_id, s.project_id INTO NEW.session_actor_id, NEW.session_project_id
        FROM public.sessions s WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
    ELSE
      NEW.project_created_by := (SELECT p.created_by FROM public.projects p
                                 WHERE p.workspace_id = NEW.workspace_id AND p.id = NEW.project_id);
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER api_tokens_creator BEFORE INSERT ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_creator('api_tokens');
CREATE TRIGGER team_members_creator BEFORE INSERT ON team_members
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_creator('team_members');
CREATE TRIGGER project_members_creator BEFORE INSERT ON project_members
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_creator('project_members');
CREATE TRIGGER handoffs_creator BEFORE INSERT ON handoffs
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_creator('handoffs');

-- Actors and their tokens -----------------------------------------------------

CREATE POLICY actor_read ON actors FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY actor_bootstrap ON actors FOR INSERT TO mneia_owner
  WITH CHECK (workspace_id = (SELECT mneia_workspace()) AND kind = 'HUMAN');
-- R3: humans create actors; linking an identity (another workspace's person) is the administrator's.
CREATE POLICY actor_create ON actors FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()) AND identity_id IS NULL);

-- A token row is visible to its own actor, and to the human who created that
-- actor (who minted its tokens, token_create); authentication finds the
-- presented one through the owner's policy, inside mneia_authenticate. Only
-- the digest is stored, so what is visible is never a usable secret.
CREATE POLICY token_read ON api_tokens FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace())
  AND (actor_id = (SELECT mneia_actor())
       OR ((SELECT mneia_actor_is_human()) AND actor_created_by = (SELECT mneia_actor()))));
CREATE POLICY token_presented ON api_tokens FOR SELECT TO mneia_owner
  USING (token_hash = (SELECT mneia_presented_token()));
CREATE POLICY token_bootstrap ON api_tokens FOR INSERT TO mneia_owner
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));
-- A human mints tokens for itself or for an actor it created, never for another person.
CREATE POLICY token_create ON api_tokens FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human())
  AND (actor_id = (SELECT mneia_actor()) OR actor_created_by = (SELECT mneia_actor())));
-- Who sees a token may revoke it (F14): an actor its own, a human those of the
-- actors it created. What a revocation may write is guarded in authority.sql.
CREATE POLICY token_revoke ON api_tokens FOR UPDATE
  USING (
    workspace_id = (SELECT mneia_workspace())
    AND (actor_id = (SELECT mneia_actor())
         OR ((SELECT mneia_actor_is_human()) AND actor_created_by = (SELECT mneia_actor()))))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));

-- Teams and projects: visible workspace-wide, made and joined by humans -------
-- (A policy never reads its own table: with the accessors in sub-selects,
-- PostgreSQL would take that for a recursion. The context carries the teams.)

CREATE POLICY team_read ON teams FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY team_create ON teams FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()));

CREATE POLICY team_member_read ON team_members FOR SELECT
  USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY team_member_add ON team_members FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND added_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human())
  AND (team_id = ANY ((SELECT mneia_member_teams())::uuid[])
       OR team_created_by = (SELECT mneia_actor())));

CREATE POLICY project_read ON projects FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY project_create ON projects FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()));

CREATE POLICY project_member_read ON project_members FOR SELECT
  USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY project_member_add ON project_members FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND added_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human())
  AND (project_id = ANY ((SELECT mneia_team_projects())::uuid[])
       OR project_created_by = (SELECT mneia_actor())));

-- Clients and sessions --------------------------------------------------------

CREATE POLICY client_read ON clients FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY client_create ON clients FOR INSERT WITH CHECK (workspace_id = (SELECT mneia_workspace()));

CREATE POLICY session_read ON sessions FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY session_start ON sessions FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND actor_id = (SELECT mneia_actor())
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY session_end ON sessions FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace())
         AND (actor_id = (SELECT mneia_actor()) OR (SELECT mneia_actor_is_human())))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));

-- Items (R2): the asserter always sees its own; then by scope, each scope
-- including the narrower ones (PROJECT within TEAM within WORKSPACE).

CREATE POLICY item_read ON items FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    asserted_by = (SELECT mneia_actor())
    OR scope = 'WORKSPACE'
    OR (scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (grant_actor_ids))));
-- Writing needs membership of the project (directly or through its team). An
-- item is asserted by the caller; the one exception, a human accepting an
-- agent's proposal, is checked in full by mneia_items_guard (authority.sql).
CREATE POLICY item_assert ON items FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace())
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[])
  AND (asserted_by = (SELECT mneia_actor())
       OR (confirmed_by = (SELECT mneia_actor()) AND (SELECT mneia_actor_is_human()))));
CREATE POLICY item_change ON items FOR UPDATE USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    asserted_by = (SELECT mneia_actor())
    OR scope = 'WORKSPACE'
    OR (scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (grant_actor_ids)))
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));
-- The owner's functions (the authority guards) judge a write by every row of
-- the workspace, also those the caller cannot see.
CREATE POLICY item_guard_read ON items FOR SELECT TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()));

-- An item's audience, copied onto each row shown with it (its events and states, a
-- proposal about it, a dispute between it and another) as the row is written: item_read
-- restated over the copies (keep them alike, as counts.sql does), so that these
-- policies read their own row only (docs/scale-out.md). Never the caller's word; an
-- item's audience is fixed for the server's role (no UPDATE of those columns), and
-- should the owner change one, items_audience_follows rewrites the copies. Each trigger
-- names its table (TG_ARGV[0]), as for mneia_copy_creator.
CREATE FUNCTION public.mneia_copy_audience() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    seen public.items;
    other public.items;
  BEGIN
    IF TG_ARGV[0] = 'proposals' THEN
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.target_id;
    ELSE
      SELECT i.* INTO seen FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id;
    END IF;
    IF NOT FOUND THEN  -- another workspace's, or none: the policies refuse the row, or its key does
      RETURN NEW;
    END IF;
    IF TG_ARGV[0] IN ('item_events', 'item_states') THEN
      NEW.item_project_id := seen.project_id;
      NEW.item_scope := seen.scope;
      NEW.item_asserted_by := seen.asserted_by;
      NEW.item_grants := CASE WHEN seen.scope = 'GRANTS' THEN seen.grant_actor_ids END;
    ELSIF TG_ARGV[0] = 'proposals' THEN
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
  $$;

-- Events and states are written by the owner alone (mneia_app may not INSERT them): by the
-- event log's triggers (events.sql, privacy.sql), which copy the audience from the item
-- they log, read from its row or their transition table, or by a session of the owner's
-- own. The copy here overwrites what such a session's statement says; a row written by a
-- trigger (pg_trigger_depth() > 0: inside the event log) carries what that trigger copied,
-- so that a batch of assertions does not read every item again, row by row, under the
-- items' policies (a tenth of a bulk load's time; docs/performance.md). On Citus a shard's
-- row written by a trigger on another connection is at depth 0 and copied here again.
CREATE TRIGGER item_events_audience BEFORE INSERT ON item_events
  FOR EACH ROW WHEN (pg_trigger_depth() = 0)
  EXECUTE FUNCTION public.mneia_copy_audience('item_events');
CREATE TRIGGER item_states_audience BEFORE INSERT ON item_states
  FOR EACH ROW WHEN (pg_trigger_depth() = 0)
  EXECUTE FUNCTION public.mneia_copy_audience('item_states');
CREATE TRIGGER proposals_audience BEFORE INSERT ON proposals
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_audience('proposals');
CREATE TRIGGER disputes_audience BEFORE INSERT ON disputes
  FOR EACH ROW EXECUTE FUNCTION public.mneia_copy_audience('disputes');

-- Should an item's audience change (an administrator's hand: the server's role may not),
-- its copies follow in the same statement. As the invoker: an administrator's session is
-- bound to no workspace, and passes the policies as the one who changed the item does.
CREATE FUNCTION public.mneia_audience_follows() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
  $$;

CREATE TRIGGER items_audience_follows AFTER UPDATE OF project_id, scope, grant_actor_ids, asserted_by
  ON items FOR EACH ROW
  WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.scope IS DISTINCT FROM NEW.scope
        OR OLD.grant_actor_ids IS DISTINCT FROM NEW.grant_actor_ids
        OR OLD.asserted_by IS DISTINCT FROM NEW.asserted_by)
  EXECUTE FUNCTION public.mneia_audience_follows();

CREATE POLICY item_event_read ON item_events FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    item_asserted_by = (SELECT mneia_actor())
    OR item_scope = 'WORKSPACE'
    OR (item_scope = 'PROJECT' AND item_project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (item_scope = 'TEAM' AND item_project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (item_scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (item_grants))));
-- The owner's functions read every event of the workspace, as they read every item.
CREATE POLICY item_event_guard_read ON item_events FOR SELECT TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()));
-- Only the event log trigger (events.sql) appends, as the owner.
CREATE POLICY item_event_append ON item_events FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND actor_id IS NOT NULL);

-- An item's past states, seen with the item; kept by the event log trigger
-- (events.sql), as the owner.
CREATE POLICY item_state_read ON item_states FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    item_asserted_by = (SELECT mneia_actor())
    OR item_scope = 'WORKSPACE'
    OR (item_scope = 'PROJECT' AND item_project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (item_scope = 'TEAM' AND item_project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (item_scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (item_grants))));
CREATE POLICY item_state_keep ON item_states FOR ALL TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));

-- Proposals and disputes: shown with what they are about ----------------------

CREATE POLICY proposal_read ON proposals FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    target_asserted_by = (SELECT mneia_actor())
    OR target_scope = 'WORKSPACE'
    OR (target_scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
    OR (target_scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    OR (target_scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (target_grants))));
-- The owner's functions read every proposal of the workspace, as they read every item.
CREATE POLICY proposal_guard_read ON proposals FOR SELECT TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY proposal_raise ON proposals FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND proposed_by = (SELECT mneia_actor())
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY proposal_decide ON proposals FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace())
         AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));

-- A dispute shows both sides, so it is visible only to whoever sees both.
CREATE POLICY dispute_read ON disputes FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace())
  AND (item_asserted_by = (SELECT mneia_actor())
       OR item_scope = 'WORKSPACE'
       OR (item_scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
       OR (item_scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
       OR (item_scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (item_grants)))
  AND (contested_asserted_by = (SELECT mneia_actor())
       OR contested_scope = 'WORKSPACE'
       OR (contested_scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
       OR (contested_scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
       OR (contested_scope = 'GRANTS' AND (SELECT mneia_actor()) = ANY (contested_grants))));
CREATE POLICY dispute_raise ON disputes FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND raised_by = (SELECT mneia_actor())
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY dispute_resolve ON disputes FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace())
         AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));
-- The guards ask whether an item still has open disputes, seen or not.
CREATE POLICY dispute_guard_read ON disputes FOR SELECT TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()));

-- Handoffs (R12): read by whoever works in the project, and by the author;
-- what they name is filtered again by the policies above, for each reader.
CREATE POLICY handoff_read ON handoffs FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace())
  AND (created_by = (SELECT mneia_actor())
       OR project_id = ANY ((SELECT mneia_team_projects())::uuid[])));
-- Written by the session's own actor, in the session's project, now.
CREATE POLICY handoff_write ON handoffs FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND created_at = now()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[])
  AND session_actor_id = (SELECT mneia_actor()) AND session_project_id = project_id);

-- Imports: the ledger of a project's imports, read and written by whoever works
-- in the project; what an entry names is filtered again by the policies above.
CREATE POLICY import_read ON imports FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace())
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY import_write ON imports FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND imported_by = (SELECT mneia_actor())
  AND imported_at = now()
  AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]));
CREATE POLICY import_rewrite ON imports FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace())
         AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()));
