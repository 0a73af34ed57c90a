-- The test push's fixed-window counter per user, shared by every nutrition-api replica.
CREATE TABLE nutrition.test_push_limit (
    user_id       TEXT PRIMARY KEY REFERENCES auth."user" (id) ON DELETE CASCADE,
    count         INTEGER     NOT NULL,
    window_start  TIMESTAMPTZ NOT NULL
);
