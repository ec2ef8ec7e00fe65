-- 0036 downgrade: sign-in in one function again, the person's policies reading actors.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP POLICY identity_seen ON identities;
DROP POLICY workspace_person ON workspaces;
DROP FUNCTION mneia_identities_of(actor_ids uuid[]);
DROP FUNCTION mneia_name_ids(field text, ids uuid[]);
DROP FUNCTION mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid);
DROP FUNCTION mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text);
DROP FUNCTION mneia_sign_in_memberships(signing_issuer text, signing_subject text);
DROP FUNCTION mneia_signing_person(signing_issuer text, signing_subject text, email text);
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    RETURN QUERY SELECT a.workspace_id, w.name, a.id, a.name
      FROM public.actors a JOIN public.workspaces w ON w.id = a.workspace_id
      WHERE a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL
      ORDER BY w.name, a.workspace_id;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_name_person(issuer text, subject text, email text, identity uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    PERFORM set_config('mneia.person_issuer', coalesce(issuer, ''), true),
            set_config('mneia.person_subject', coalesce(subject, ''), true),
            set_config('mneia.person_email', coalesce(email, ''), true),
            set_config('mneia.person_identity', coalesce(identity::text, ''), true);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in(signing_issuer text, signing_subject text, verified_email text, given_name text)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    invited record;
    joined uuid;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    FOR invited IN
      SELECT DISTINCT ON (v.workspace_id) v.workspace_id, v.id, v.invited_by
        FROM public.invitations v
        WHERE v.email = wanted AND v.accepted_at IS NULL AND v.expires_at > now()
          AND NOT EXISTS (SELECT 1 FROM public.actors a
                            WHERE a.workspace_id = v.workspace_id AND a.identity_id = person)
        ORDER BY v.workspace_id, v.created_at DESC, v.id DESC
    LOOP
      IF person IS NULL THEN
        person := public.mneia_uuid7();
        INSERT INTO public.identities (id, display_name, issuer, subject)
          VALUES (person, given_name, signing_issuer, signing_subject);
        PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
      END IF;
      joined := public.mneia_uuid7();
      PERFORM public.mneia_bind(invited.workspace_id, joined);
      INSERT INTO public.actors (workspace_id, id, kind, name, identity_id, created_by)
        VALUES (invited.workspace_id, joined, 'HUMAN', given_name, person, invited.invited_by);
      UPDATE public.invitations v SET accepted_at = now(), accepted_actor_id = joined
        WHERE v.workspace_id = invited.workspace_id AND v.id = invited.id AND v.accepted_at IS NULL;
      PERFORM public.mneia_unbind();
    END LOOP;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    IF person IS NOT NULL THEN
      RETURN QUERY SELECT m.workspace_id, m.workspace_name, m.actor_id, m.actor_name
        FROM public.mneia_memberships_of(person) m;
    END IF;
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
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(signing_issuer, signing_subject, NULL, NULL);
    SELECT i.id INTO person FROM public.identities i
      WHERE i.issuer = signing_issuer AND i.subject = signing_subject;
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
CREATE POLICY identity_seen ON identities AS PERMISSIVE FOR SELECT TO public USING ((EXISTS ( SELECT 1
   FROM actors a
  WHERE (a.identity_id = identities.id))));
CREATE POLICY workspace_person ON workspaces AS PERMISSIVE FOR SELECT TO mneia_owner USING ((EXISTS ( SELECT 1
   FROM actors a
  WHERE ((a.workspace_id = workspaces.id) AND (a.identity_id = (( SELECT mneia_person('identity'::text) AS mneia_person))::uuid)))));
RESET ROLE;
