-- /users rows are served as each user-day had them rendered at roll-up; render them for the days
-- rolled up before from the columns, as compact text like the roll-up's.
ALTER TABLE "analytics_user_days" ADD COLUMN     "users_row" JSON;

UPDATE "analytics_user_days" AS d SET "users_row" = (
    SELECT row_to_json(r) FROM (
        SELECT d."user_id", to_char(d."day", 'YYYY-MM-DD') AS "date", d."tool_calls", d."billable_tokens",
               d."primary_model", d."primary_model_tier", d."files_created", d."files_edited", d."git_commits",
               d."git_prs_created", d."mcp_calls", d."skill_calls", d."slash_commands", d."hooks", d."sessions",
               d."user_messages" + d."assistant_messages" AS "messages", d."user_messages", d."assistant_messages",
               d."autonomy_ratio", d."delegation_level", coalesce(d."languages", '{}') AS "languages") AS r);

ALTER TABLE "analytics_user_days" ALTER COLUMN "users_row" SET NOT NULL;

-- /tokens by_user lists the day's top 10 users by billable tokens; stored lists are sorted that way.
UPDATE "analytics_org_days"
   SET "tokens_by_user" = (SELECT jsonb_agg(e.value ORDER BY e.ordinality)
                             FROM jsonb_array_elements("tokens_by_user") WITH ORDINALITY AS e
                            WHERE e.ordinality <= 10)
 WHERE jsonb_array_length("tokens_by_user") > 10;
