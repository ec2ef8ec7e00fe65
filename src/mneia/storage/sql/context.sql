-- The request context (R1, R3): the workspace and actor a transaction acts for.
--
-- It lives in transaction-local settings (set_config(..., true)), so it ends
-- with the transaction and never reaches the next user of a pooled
-- connection. Anyone may write a setting, so the settings are sealed: an
-- HMAC-SHA-256 over every field, this backend's process id and the
-- transaction's start, keyed by a secret that only mneia_owner can read.
-- Only mneia_authenticate (a valid token's digest) and the owner's own
-- functions write a seal. The accessors the policies call answer NULL unless
-- the seal verifies, so a context set by hand, or copied from another
-- transaction, is nobody's: it sees nothing and writes nothing.
--
-- The seal also carries what the policies would otherwise look up on every
-- statement: the actor's kind (read from its record, never from the caller),
-- its teams and the projects it works in. They are read once, when the
-- transaction is bound, and again after a write that changes them (the
-- rebind triggers at the end of this file).
--
-- Every function here names its tables with their schema and runs with
-- search_path = pg_catalog, public, pg_temp, so that no temporary table, type
-- or function of the caller's can stand in for ours.

CREATE TABLE seal_keys (
  id smallint PRIMARY KEY CHECK (id = 1),
  -- The key XOR the HMAC pads (RFC 2104), kept ready for use.
  inner_pad bytea NOT NULL CHECK (length(inner_pad) = 64),
  outer_pad bytea NOT NULL CHECK (length(outer_pad) = 64),
  -- Names the announcement channels (announcements.sql); never rotated, so
  -- that a key rotation does not silence subscriptions.
  channel_salt bytea NOT NULL CHECK (length(channel_salt) = 32),
  rotated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE seal_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE seal_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY seal_key_owner ON seal_keys TO mneia_owner USING (true) WITH CHECK (true);

-- 256 bits from the server's strong random source (gen_random_uuid).
CREATE FUNCTION public.mneia_random_bytes() RETURNS bytea
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                             || gen_random_uuid()::text, 'UTF8'));
  END
  $$;

-- A new sealing key. Transactions bound under the old one fail closed; run it
-- as the administrator: SELECT mneia_rotate_seal_key();
CREATE FUNCTION public.mneia_rotate_seal_key() RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    secret bytea := public.mneia_random_bytes() || decode(repeat('00', 32), 'hex');
    new_inner bytea := secret;
    new_outer bytea := secret;
  BEGIN
    FOR position IN 0..63 LOOP
      new_inner := set_byte(new_inner, position, get_byte(secret, position) # 54);  -- 0x36
      new_outer := set_byte(new_outer, position, get_byte(secret, position) # 92);  -- 0x5c
    END LOOP;
    INSERT INTO public.seal_keys (id, inner_pad, outer_pad, channel_salt)
      VALUES (1, new_inner, new_outer, public.mneia_random_bytes())
      ON CONFLICT (id) DO UPDATE
        SET inner_pad = excluded.inner_pad, outer_pad = excluded.outer_pad, rotated_at = now();
  END
  $$;

-- The seal of the current settings: HMAC-SHA-256 over every field of the
-- context (none contains '|', so the message is unambiguous), this backend's
-- process id and the transaction's start. Never granted to mneia_app: with
-- it, the settings could be sealed by anyone.
CREATE FUNCTION public.mneia_context_seal() RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    pads record;
    message bytea := convert_to(concat_ws('|', 'mneia-context-v2',
        coalesce(current_setting('mneia.workspace_id', true), ''),
        coalesce(current_setting('mneia.actor_id', true), ''),
        coalesce(current_setting('mneia.actor_kind', true), ''),
        coalesce(current_setting('mneia.projects', true), ''),
        coalesce(current_setting('mneia.teams', true), ''),
        coalesce(current_setting('mneia.team_projects', true), ''),
        coalesce(current_setting('mneia.token_expires', true), ''),
        pg_backend_pid(),
        (extract(epoch FROM transaction_timestamp()) * 1000000)::bigint), 'UTF8');
  BEGIN
    SELECT k.inner_pad, k.outer_pad INTO pads FROM public.seal_keys k WHERE k.id = 1;
    RETURN encode(sha256(pads.outer_pad || sha256(pads.inner_pad || message)), 'hex');
  END
  $$;

-- Whether the settings carry a valid seal for this transaction.
CREATE FUNCTION public.mneia_sealed() RETURNS boolean
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    given text := current_setting('mneia.seal', true);
  BEGIN
    RETURN coalesce(given, '') <> '' AND given = public.mneia_context_seal();
  END
  $$;

-- A field of the context if the seal verifies, else NULL (fail closed).
-- The same test as mneia_sealed, made here rather than by calling it: the
-- policies call this about twenty times per write, and each function call
-- with its own search_path costs as much as the hashing.
CREATE FUNCTION public.mneia_context_field(field text) RETURNS text
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    given text := current_setting('mneia.seal', true);
  BEGIN
    IF coalesce(given, '') <> '' AND given = public.mneia_context_seal() THEN
      RETURN nullif(current_setting('mneia.' || field, true), '');
    END IF;
    RETURN NULL;
  END
  $$;

-- The accessors the policies call, each in a scalar sub-select, so once per statement.
CREATE FUNCTION public.mneia_workspace() RETURNS uuid
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN public.mneia_context_field('workspace_id')::uuid; END $$;

CREATE FUNCTION public.mneia_actor() RETURNS uuid
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN public.mneia_context_field('actor_id')::uuid; END $$;

-- R3: the kind as the actor's record gave it when the transaction was bound.
CREATE FUNCTION public.mneia_actor_is_human() RETURNS boolean
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN coalesce(public.mneia_context_field('actor_kind') = 'HUMAN', false); END $$;

-- Projects the actor is a direct member of.
CREATE FUNCTION public.mneia_member_projects() RETURNS uuid[]
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN coalesce(public.mneia_context_field('projects'), '{}')::uuid[]; END $$;

-- Teams the actor is a member of.
CREATE FUNCTION public.mneia_member_teams() RETURNS uuid[]
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN coalesce(public.mneia_context_field('teams'), '{}')::uuid[]; END $$;

-- Projects the actor works in: a direct member, or a member of the project's team.
CREATE FUNCTION public.mneia_team_projects() RETURNS uuid[]
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN coalesce(public.mneia_context_field('team_projects'), '{}')::uuid[]; END $$;

-- When the token the transaction was authenticated with expires (NULL: never,
-- or bound some other way): what it mints may not outlive it (issue 21).
CREATE FUNCTION public.mneia_token_expires() RETURNS timestamptz
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN public.mneia_context_field('token_expires')::timestamptz; END $$;

-- The digest of the token being presented, seen only by the owner's policy
-- token_presented (inside mneia_authenticate).
CREATE FUNCTION public.mneia_presented_token() RETURNS text
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN nullif(current_setting('mneia.token_hash', true), ''); END $$;

-- Bind the transaction to an actor of a workspace: read its kind and its
-- projects from the records, then seal. Owner only.
CREATE FUNCTION public.mneia_bind(workspace uuid, actor uuid) RETURNS void
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  SET plan_cache_mode = auto  -- keyed lookups: a generic plan serves every tenant (storage.database)
  AS $$
  DECLARE
    actor_kind text;
    member_of uuid[];
    teams_of uuid[];
    works_in uuid[];
  BEGIN
    -- A bare seal first: the owner, too, is bound by the policies, and they
    -- need the workspace to show the records read below.
    PERFORM set_config('mneia.workspace_id', workspace::text, true),
            set_config('mneia.actor_id', actor::text, true),
            set_config('mneia.token_expires', '', true),
            set_config('mneia.actor_kind', '', true),
            set_config('mneia.projects', '{}', true),
            set_config('mneia.teams', '{}', true),
            set_config('mneia.team_projects', '{}', true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);

    -- Four single-table lookups, not one statement joining them: on a Citus worker each is
    -- a fast-path query whose plan the connection keeps, where a join is planned again at
    -- every call (docs/scale-out.md). On one server the two forms cost the same.
    SELECT a.kind INTO actor_kind FROM public.actors a WHERE a.workspace_id = workspace AND a.id = actor;
    SELECT coalesce(array_agg(pm.project_id ORDER BY pm.project_id), '{}') INTO member_of
      FROM public.project_members pm WHERE pm.workspace_id = workspace AND pm.actor_id = actor;
    SELECT coalesce(array_agg(tm.team_id ORDER BY tm.team_id), '{}') INTO teams_of
      FROM public.team_members tm WHERE tm.workspace_id = workspace AND tm.actor_id = actor;
    SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') INTO works_in
      FROM public.projects p
      WHERE p.workspace_id = workspace AND (p.id = ANY (member_of) OR p.team_id = ANY (teams_of));

    PERFORM set_config('mneia.actor_kind', coalesce(actor_kind, ''), true),
            set_config('mneia.projects', member_of::text, true),
            set_config('mneia.teams', teams_of::text, true),
            set_config('mneia.team_projects', works_in::text, true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
  END
  $$;

-- Unbind: whatever the settings held is nobody's from now on.
CREATE FUNCTION public.mneia_unbind() RETURNS void
  LANGUAGE plpgsql VOLATILE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    PERFORM set_config('mneia.seal', '', true), set_config('mneia.workspace_id', '', true),
            set_config('mneia.actor_id', '', true), set_config('mneia.actor_kind', '', true),
            set_config('mneia.token_expires', '', true),
            set_config('mneia.projects', '', true), set_config('mneia.teams', '', true),
            set_config('mneia.team_projects', '', true);
  END
  $$;

-- Authentication in one round trip: find the presented token (by its
-- SHA-256 digest, in the workspace the token names), bind the transaction to
-- its workspace and actor, and return that actor. An unknown, revoked or
-- expired token (expiry is the database's now(), F14) returns no row and
-- leaves the transaction bound to nobody. The only way mneia_app gets a
-- context. A token minted before 0024 names no workspace (NULL): it is found
-- by its digest alone, the one lookup that does not state its workspace.
CREATE FUNCTION public.mneia_authenticate(presented text, named uuid)
  RETURNS TABLE (workspace_id uuid, id uuid, kind text, name text, created_at timestamptz)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  SET plan_cache_mode = auto  -- keyed lookups: a generic plan serves every tenant (storage.database)
  AS $$
  DECLARE
    found_workspace uuid;
    found_actor uuid;
    found_expiry timestamptz;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM set_config('mneia.token_hash', coalesce(presented, ''), true);
    IF named IS NOT NULL THEN
      SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
        FROM public.api_tokens t
        WHERE t.workspace_id = named AND t.token_hash = presented AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
    ELSE
      SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
        FROM public.api_tokens t
        WHERE t.token_hash = presented AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
    END IF;
    PERFORM set_config('mneia.token_hash', '', true);
    IF found_actor IS NULL THEN
      RETURN;
    END IF;
    PERFORM public.mneia_bind(found_workspace, found_actor);
    IF found_expiry IS NOT NULL THEN  -- sealed with the rest: what this token mints is bounded by it
      PERFORM set_config('mneia.token_expires', found_expiry::text, true);
      PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
    END IF;
    RETURN QUERY SELECT a.workspace_id, a.id, a.kind, a.name, a.created_at FROM public.actors a
      WHERE a.workspace_id = found_workspace AND a.id = found_actor;
  END
  $$;

-- A workspace of a region, its first human and that human's token (by
-- digest): the administrator's act (`mneia admin bootstrap`), given the new
-- workspace's id, which the token names. Owner only. The identity's id is
-- returned for the regions' directory (storage/directory.py).
CREATE FUNCTION public.mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text,
    token_digest text, workspace_region text)
  RETURNS TABLE (workspace_id uuid, actor_id uuid, identity_id uuid)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    new_actor uuid := public.mneia_uuid7();
    new_identity uuid := public.mneia_uuid7();
  BEGIN
    PERFORM public.mneia_bind(new_workspace, new_actor);
    INSERT INTO public.workspaces (id, name, region) VALUES (new_workspace, workspace_name, workspace_region);
    INSERT INTO public.identities (id, display_name) VALUES (new_identity, human_name);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id)
      VALUES (new_workspace, new_actor, 'HUMAN', human_name, new_identity);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, new_identity);
    INSERT INTO public.identity_links (identity_id, workspace_id, actor_id)
      VALUES (new_identity, new_workspace, new_actor);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash)
      VALUES (new_workspace, public.mneia_uuid7(), new_actor, token_digest);
    PERFORM public.mneia_unbind();
    RETURN QUERY SELECT new_workspace, new_actor, new_identity;
  END
  $$;

-- After a write that may change the projects the actor works in (a new
-- project, a new member), bind again so that the rest of the transaction
-- sees them.
CREATE FUNCTION public.mneia_rebind() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF public.mneia_sealed() THEN
      PERFORM public.mneia_bind(public.mneia_workspace(), public.mneia_actor());
    END IF;
    RETURN NULL;
  END
  $$;

CREATE TRIGGER projects_rebind AFTER INSERT ON projects
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_rebind();
CREATE TRIGGER project_members_rebind AFTER INSERT ON project_members
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_rebind();
CREATE TRIGGER team_members_rebind AFTER INSERT ON team_members
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_rebind();

SELECT public.mneia_rotate_seal_key();
