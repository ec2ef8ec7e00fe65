SET LOCAL check_function_bodies = off;
CREATE OR REPLACE FUNCTION public.mneia_redact(ids uuid[], why text)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    ws uuid := public.mneia_workspace();
    held uuid[];
    done uuid[];
  BEGIN
    IF ws IS NULL OR why NOT IN ('retention', 'erasure') THEN
      PERFORM public.mneia_refuse('a redaction names its workspace and its reason');
    END IF;
    -- The held among them first, in a statement of its own: mneia_held's rule written out, since
    -- on Citus a function that reads a table, called from a statement that runs on a shard, is
    -- refused, and so is a sub-select in a statement that locks its rows (FOR UPDATE). The
    -- trigger items_redacted refuses a held item's redaction all the same.
    SELECT coalesce(array_agg(i.id), '{}') INTO held FROM public.items i
      WHERE i.workspace_id = ws AND i.id = ANY (ids)
        AND EXISTS (SELECT 1 FROM public.legal_holds h
                    WHERE h.workspace_id = ws AND h.project_id = i.project_id AND h.released_at IS NULL
                      AND (h.item_id IS NULL OR h.item_id = i.id));
    WITH due AS (
      SELECT i.id FROM public.items i
      WHERE i.workspace_id = ws AND i.id = ANY (ids) AND i.redacted_at IS NULL AND i.id <> ALL (held)
      ORDER BY i.id FOR UPDATE
    ), blanked AS (
      UPDATE public.items i
        SET statement = '', details = NULL, basis = NULL, status_reason = NULL,
            supersession_reason = CASE WHEN i.supersedes_id IS NULL THEN NULL ELSE '' END,
            redacted_at = now(), redaction_reason = why
        FROM due WHERE i.workspace_id = ws AND i.id = due.id
        RETURNING i.id
    )
    SELECT coalesce(array_agg(blanked.id), '{}') INTO done FROM blanked;
    IF cardinality(done) = 0 THEN
      RETURN;
    END IF;
    UPDATE public.item_states s SET status_reason = NULL
      WHERE s.workspace_id = ws AND s.item_id = ANY (done) AND s.status_reason IS NOT NULL;
    UPDATE public.item_events e SET reason = NULL
      WHERE e.workspace_id = ws AND e.item_id = ANY (done) AND e.event <> 'REDACTED' AND e.reason IS NOT NULL;
    UPDATE public.proposals p
      SET reason = NULL,
          replacement = CASE WHEN p.replacement IS NULL THEN NULL
                             ELSE jsonb_set(jsonb_set(jsonb_set(p.replacement, '{item,statement}', '""'),
                                                      '{item,details}', 'null'), '{item,basis}', 'null') END
      WHERE p.workspace_id = ws AND (p.target_id = ANY (done) OR p.result_id = ANY (done));
    UPDATE public.disputes d SET reason = NULL
      WHERE d.workspace_id = ws AND d.item_id = ANY (done) AND d.reason IS NOT NULL;
    RETURN QUERY SELECT unnest(done);
  END
  $function$;
