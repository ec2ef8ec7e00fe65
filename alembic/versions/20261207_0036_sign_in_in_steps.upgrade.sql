-- 0036 upgrade: sign-in in steps a Citus cluster can run, and a person's workspaces and
-- identities named beside them (see the .py beside). The result equals storage/sql
-- (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP POLICY identity_seen ON identities;
DROP POLICY workspace_person ON workspaces;
CREATE OR REPLACE FUNCTION public.mneia_identities_of(actor_ids uuid[])
 RETURNS TABLE(workspace_id uuid, actor_id uuid, identity_id uuid, display_name text, issuer text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    here uuid := public.mneia_workspace();
    linked_actors uuid[];
    linked uuid[];
  BEGIN
    IF here IS NULL THEN
      RETURN;
    END IF;
    SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.identity_id), '{}')
      INTO linked_actors, linked
      FROM public.actors a
      WHERE a.workspace_id = here AND a.id = ANY (actor_ids) AND a.identity_id IS NOT NULL;
    PERFORM public.mneia_name_ids('identities', linked);
    RETURN QUERY SELECT here, x.actor_id, i.id, i.display_name, i.issuer
      FROM unnest(linked_actors, linked) AS x (actor_id, identity_id)
      JOIN public.identities i ON i.id = x.identity_id
      WHERE i.issuer IS NOT NULL;
    PERFORM public.mneia_name_ids('identities', NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_name_ids(field text, ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    IF field NOT IN ('workspaces', 'identities') THEN
      RAISE EXCEPTION 'mneia_name_ids: no list %', field;
    END IF;
    EXECUTE format('SET LOCAL mneia.person_%s = %L', field, coalesce(ids, '{}')::text);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    invited record;
    joined uuid := public.mneia_uuid7();
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    SELECT v.invited_by INTO invited FROM public.invitations v
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.email = wanted
        AND v.accepted_at IS NULL AND v.expires_at > now();
    IF NOT FOUND OR (person IS NOT NULL AND EXISTS (
         SELECT 1 FROM public.actors a WHERE a.workspace_id = workspace AND a.identity_id = person)) THEN
      PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
      RETURN NULL;
    END IF;
    IF person IS NULL THEN
      person := public.mneia_uuid7();
      INSERT INTO public.identities (id, display_name, issuer, subject)
        VALUES (person, given_name, signing_issuer, signing_subject);
      PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    END IF;
    PERFORM public.mneia_bind(workspace, joined);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id, created_by)
      VALUES (workspace, joined, 'HUMAN', given_name, person, invited.invited_by);
    UPDATE public.invitations v SET accepted_at = now(), accepted_actor_id = joined
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.accepted_at IS NULL;
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    RETURN joined;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text)
 RETURNS TABLE(workspace_id uuid, invitation_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    member_of uuid[] := '{}';
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    IF person IS NOT NULL THEN
      SELECT coalesce(array_agg(a.workspace_id), '{}') INTO member_of FROM public.actors a
        WHERE a.identity_id = person;
    END IF;
    RETURN QUERY SELECT DISTINCT ON (v.workspace_id) v.workspace_id, v.id
      FROM public.invitations v
      WHERE v.email = wanted AND v.accepted_at IS NULL AND v.expires_at > now()
        AND v.workspace_id <> ALL (member_of)
      ORDER BY v.workspace_id, v.created_at DESC, v.id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_memberships(signing_issuer text, signing_subject text)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    person uuid;
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, NULL);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    IF person IS NOT NULL THEN
      RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
        FROM public.mneia_memberships_of(person) m;
    END IF;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_signing_person(signing_issuer text, signing_subject text, email text)
 RETURNS uuid
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    person uuid;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, email, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, email, person);
    RETURN person;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    actor_ids uuid[];
    actor_places uuid[];
    actor_names text[];
    places uuid[];
    place_names text[];
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    -- The actors first, then their workspaces by id, each table read alone into arrays of
    -- plain values: on Citus each read reaches every node, and neither a join of the two over
    -- several workspaces nor an array of a Citus table's rows plans there.
    SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.workspace_id), '{}'),
           coalesce(array_agg(a.name), '{}')
      INTO actor_ids, actor_places, actor_names
      FROM public.actors a
      WHERE a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL;
    PERFORM public.mneia_name_ids('workspaces', actor_places);
    SELECT coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.name), '{}') INTO places, place_names
      FROM public.workspaces w WHERE w.id = ANY (actor_places);
    RETURN QUERY SELECT h.workspace_id, w.name, h.id, h.name
      FROM unnest(actor_ids, actor_places, actor_names) AS h (id, workspace_id, name)
      JOIN unnest(places, place_names) AS w (id, name) ON w.id = h.workspace_id
      ORDER BY w.name, h.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_name_person(issuer text, subject text, email text, identity uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    -- SET LOCAL, which Citus sends to every node the transaction reads (set_config is not sent):
    -- the owner's policies below read the person on the shards of every workspace. Each owner
    -- function that reads by them names its person here first, so whatever the caller set
    -- before is never what they read (docs/scale-out.md).
    EXECUTE 'SET LOCAL citus.propagate_set_commands = local';
    EXECUTE format('SET LOCAL mneia.person_issuer = %L', coalesce(issuer, ''));
    EXECUTE format('SET LOCAL mneia.person_subject = %L', coalesce(subject, ''));
    EXECUTE format('SET LOCAL mneia.person_email = %L', coalesce(email, ''));
    EXECUTE format('SET LOCAL mneia.person_identity = %L', coalesce(identity::text, ''));
    EXECUTE 'SET LOCAL mneia.person_workspaces = ''''';
    EXECUTE 'SET LOCAL mneia.person_identities = ''''';
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in(signing_issuer text, signing_subject text, verified_email text, given_name text)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    invited record;
  BEGIN
    FOR invited IN
      SELECT o.workspace_id, o.invitation_id
        FROM public.mneia_sign_in_invitations(signing_issuer, signing_subject, verified_email) o
    LOOP
      PERFORM public.mneia_sign_in_accept(signing_issuer, signing_subject, verified_email, given_name,
                                          invited.workspace_id, invited.invitation_id);
    END LOOP;
    RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
      FROM public.mneia_sign_in_memberships(signing_issuer, signing_subject) m;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_session(signing_issuer text, signing_subject text, workspace uuid, token_digest text, token_hint text, lifetime interval)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    person uuid;
    member uuid;
    made uuid := public.mneia_uuid7();
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, NULL);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    SELECT a.id INTO member FROM public.actors a
      WHERE a.identity_id = person AND a.workspace_id = workspace AND a.kind = 'HUMAN';
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    IF member IS NULL THEN
      RETURN NULL;
    END IF;
    PERFORM public.mneia_bind(workspace, member);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash, hint, created_by, expires_at)
      VALUES (workspace, made, member, token_digest, token_hint, member,
              now() + least(lifetime, interval '12 hours'));
    PERFORM public.mneia_unbind();
    RETURN made;
  END
  $function$;
CREATE POLICY identity_seen ON identities AS PERMISSIVE FOR SELECT TO mneia_owner USING ((id = ANY ((COALESCE(NULLIF(( SELECT mneia_person('identities'::text) AS mneia_person), ''::text), '{}'::text))::uuid[])));
CREATE POLICY workspace_person ON workspaces AS PERMISSIVE FOR SELECT TO mneia_owner USING ((id = ANY ((COALESCE(NULLIF(( SELECT mneia_person('workspaces'::text) AS mneia_person), ''::text), '{}'::text))::uuid[])));
REVOKE ALL ON FUNCTION mneia_identities_of(actor_ids uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_name_ids(field text, ids uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_sign_in_memberships(signing_issuer text, signing_subject text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_signing_person(signing_issuer text, signing_subject text, email text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_identities_of(actor_ids uuid[]) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text) TO mneia_app;
GRANT EXECUTE ON FUNCTION mneia_sign_in_memberships(signing_issuer text, signing_subject text) TO mneia_app;
RESET ROLE;
