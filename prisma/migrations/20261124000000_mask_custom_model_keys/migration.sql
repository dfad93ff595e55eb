-- Custom models' API keys used to be copied in plain text into every revision snapshot and into the
-- audit records of enterprise-control changes. Those copies are masked here as the control plane
-- masks them now ('••••' and the last four characters of a key of 12 or more). The current settings
-- (organizations.enterprise_settings) keep theirs: only the control plane holds the encryption key,
-- so it masks them on every read and seals them on the organization's next enterprise-controls PUT.
CREATE FUNCTION pg_temp.mask_custom_model_keys(settings jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN jsonb_typeof(settings -> 'customModels') = 'array' AND jsonb_array_length(settings -> 'customModels') > 0 THEN
      jsonb_set(settings, '{customModels}', (
        SELECT jsonb_agg(
          CASE WHEN jsonb_typeof(m) = 'object' AND jsonb_typeof(m -> 'apiKey') = 'string' AND left(m ->> 'apiKey', 4) <> '••••'
            THEN jsonb_set(m, '{apiKey}', to_jsonb(CASE WHEN length(m ->> 'apiKey') >= 12 THEN '••••' || right(m ->> 'apiKey', 4) ELSE '••••' END))
            ELSE m END
          ORDER BY i)
        FROM jsonb_array_elements(settings -> 'customModels') WITH ORDINALITY AS e(m, i)))
    ELSE settings
  END
$$;

UPDATE "enterprise_control_changes"
SET "settings" = pg_temp.mask_custom_model_keys("settings")
WHERE "settings" ? 'customModels';

UPDATE "audit_records"
SET "before" = CASE WHEN jsonb_typeof("before" -> 'settings') = 'object'
                 THEN jsonb_set("before", '{settings}', pg_temp.mask_custom_model_keys("before" -> 'settings')) ELSE "before" END,
    "after" = CASE WHEN jsonb_typeof("after" -> 'settings') = 'object'
                THEN jsonb_set("after", '{settings}', pg_temp.mask_custom_model_keys("after" -> 'settings')) ELSE "after" END
WHERE "event_type" = 'managed_settings_change';

DROP FUNCTION pg_temp.mask_custom_model_keys(jsonb);
