SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_token_expires()
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$ BEGIN RETURN public.mneia_context_field('token_expires')::timestamptz; END $function$;
CREATE OR REPLACE FUNCTION public.mneia_token_minted()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    bound timestamptz;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    bound := public.mneia_token_expires();
    IF bound IS NOT NULL AND (NEW.expires_at IS NULL OR NEW.expires_at > bound) THEN
      PERFORM public.mneia_refuse('a token expires no later than the token that mints it');
    END IF;
    RETURN NEW;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_authenticate(presented text)
 RETURNS TABLE(workspace_id uuid, id uuid, kind text, name text, created_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    found_workspace uuid;
    found_actor uuid;
    found_expiry timestamptz;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM set_config('mneia.token_hash', coalesce(presented, ''), true);
    SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
      FROM public.api_tokens t
      WHERE t.token_hash = presented AND t.revoked_at IS NULL
        AND (t.expires_at IS NULL OR t.expires_at > now());
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_bind(workspace uuid, actor uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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

    SELECT a.kind INTO actor_kind FROM public.actors a
      WHERE a.workspace_id = workspace AND a.id = actor;
    SELECT coalesce(array_agg(m.project_id ORDER BY m.project_id), '{}') INTO member_of
      FROM public.project_members m
      WHERE m.workspace_id = workspace AND m.actor_id = actor;
    SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') INTO teams_of
      FROM public.team_members t
      WHERE t.workspace_id = workspace AND t.actor_id = actor;
    SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') INTO works_in
      FROM public.projects p
      WHERE p.workspace_id = workspace AND (p.id = ANY (member_of) OR p.team_id = ANY (teams_of));

    PERFORM set_config('mneia.actor_kind', coalesce(actor_kind, ''), true),
            set_config('mneia.projects', member_of::text, true),
            set_config('mneia.teams', teams_of::text, true),
            set_config('mneia.team_projects', works_in::text, true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_context_seal()
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_unbind()
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM set_config('mneia.seal', '', true), set_config('mneia.workspace_id', '', true),
            set_config('mneia.actor_id', '', true), set_config('mneia.actor_kind', '', true),
            set_config('mneia.token_expires', '', true),
            set_config('mneia.projects', '', true), set_config('mneia.teams', '', true),
            set_config('mneia.team_projects', '', true);
  END
  $function$;
CREATE TRIGGER api_tokens_minted BEFORE INSERT ON public.api_tokens FOR EACH ROW EXECUTE FUNCTION mneia_token_minted();
REVOKE ALL ON FUNCTION mneia_token_expires() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_token_minted() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_token_expires() TO mneia_app;

RESET ROLE;
