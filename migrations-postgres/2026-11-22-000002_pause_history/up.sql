-- Every pause (free day) a user took, so that streaks can treat paused days as neutral long after
-- the pause ended. profile.fasting_paused_until stays the fast path for "paused now?".
CREATE TABLE nutrition.pause_period (
    id         BIGSERIAL PRIMARY KEY,
    user_id    TEXT        NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    starts_at  TIMESTAMPTZ NOT NULL,
    ends_at    TIMESTAMPTZ NOT NULL,
    CHECK (ends_at >= starts_at)
);
CREATE INDEX pause_period_user_idx ON nutrition.pause_period (user_id, starts_at);
