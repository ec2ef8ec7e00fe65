SET LOCAL check_function_bodies = off;
CREATE OR REPLACE FUNCTION public.mneia_channel()
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$ BEGIN RETURN public.mneia_channel_of(public.mneia_workspace()); END $function$;
CREATE OR REPLACE FUNCTION public.mneia_channel_of(workspace uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN (SELECT 'mneia_' || left(encode(sha256(k.channel_salt || convert_to(workspace::text, 'UTF8')), 'hex'), 32)
            FROM public.seal_keys k WHERE k.id = 1);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_context_field(field text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    given text := current_setting('mneia.seal', true);
  BEGIN
    IF coalesce(given, '') <> '' AND given = public.mneia_context_seal() THEN
      RETURN nullif(current_setting('mneia.' || field, true), '');
    END IF;
    RETURN NULL;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_has_successor(workspace uuid, item uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.items i WHERE i.workspace_id = workspace AND i.supersedes_id = item);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_keeps_audience(replaced items, replacement items)
 RETURNS boolean
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN coalesce(CASE
      WHEN replaced.scope = 'PRIVATE' THEN true
      WHEN replaced.scope = 'GRANTS' THEN
        replacement.scope = 'WORKSPACE'
        OR (replacement.scope = 'GRANTS'
            AND (replaced.grant_actor_ids || replaced.asserted_by)
                <@ (replacement.grant_actor_ids || replacement.asserted_by))
      ELSE array_position(ARRAY['PROJECT', 'TEAM', 'WORKSPACE'], replacement.scope)
           >= array_position(ARRAY['PROJECT', 'TEAM', 'WORKSPACE'], replaced.scope)
    END, false);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_kept_by_resolution(workspace uuid, item uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.disputes d
                   WHERE d.workspace_id = workspace AND d.kept_item_id = item AND d.status = 'RESOLVED'
                     AND d.resolved_by = public.mneia_actor() AND d.resolved_at = now())
       AND NOT public.mneia_open_disputes(workspace, item);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_open_disputes(workspace uuid, item uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.disputes d
                   WHERE d.workspace_id = workspace AND d.item_id = item AND d.status = 'OPEN');
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_presented_token()
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$ BEGIN RETURN nullif(current_setting('mneia.token_hash', true), ''); END $function$;
CREATE OR REPLACE FUNCTION public.mneia_random_bytes()
 RETURNS bytea
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                             || gen_random_uuid()::text, 'UTF8'));
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_replacement_matches(proposal proposals, candidate items)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN (SELECT coalesce(proposal.replacement ->> 'v' = '1', false)
       AND candidate.project_id = proposal.project_id
       AND candidate.supersedes_id = proposal.target_id
       AND candidate.supersession_reason IS NOT DISTINCT FROM proposal.reason
       AND (r.kind, r.statement, r.details, r.basis, r.confidence, r.scope, r.grant_actor_ids,
            r.session_id, r.valid_from, r.valid_to, r.decay_after)
           IS NOT DISTINCT FROM
           (candidate.kind, candidate.statement, candidate.details, candidate.basis,
            candidate.confidence, candidate.scope, candidate.grant_actor_ids, candidate.session_id,
            candidate.valid_from, candidate.valid_to, candidate.decay_after)
    FROM jsonb_populate_record(NULL::public.items, proposal.replacement -> 'item') r);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_trusted_session()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$ BEGIN RETURN pg_has_role(session_user, 'mneia_owner', 'MEMBER'); END $function$;
CREATE OR REPLACE FUNCTION public.mneia_unbind()
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM set_config('mneia.seal', '', true), set_config('mneia.workspace_id', '', true),
            set_config('mneia.actor_id', '', true), set_config('mneia.actor_kind', '', true),
            set_config('mneia.projects', '', true), set_config('mneia.teams', '', true),
            set_config('mneia.team_projects', '', true);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_uuid7()
 RETURNS uuid
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN encode(
      set_bit(set_bit(
        overlay(uuid_send(gen_random_uuid())
                placing substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                  FROM 3)
                FROM 1 FOR 6),
        52, 1), 53, 1),
      'hex')::uuid;
  END
  $function$;

