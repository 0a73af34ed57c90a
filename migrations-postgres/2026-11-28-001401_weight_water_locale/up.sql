-- A fasting app people keep: weights, water, the language, the long-fast acknowledgement, and the
-- first answer of a retried write.

-- The language of the web app, auth's pages and e-mails and the pushes. On the user, because auth
-- chooses it at sign-up and writes its mails in it; nutrition-api changes it (the preferences)
-- and push-scheduler writes the pushes in it.
ALTER TABLE auth."user" ADD COLUMN locale text NOT NULL DEFAULT 'it' CHECK (locale IN ('it', 'en'));
GRANT UPDATE (locale, updated_at) ON auth."user" TO nutrition_api_svc;
GRANT SELECT (id, locale) ON auth."user" TO push_scheduler_svc;

-- Weights are kept in tenths of a kilogram (hectograms): exact, and one decimal is all the
-- contract allows.
ALTER TABLE nutrition.profile
    ADD COLUMN weight_goal_hg integer CHECK (weight_goal_hg BETWEEN 200 AND 4000),
    ADD COLUMN height_cm smallint CHECK (height_cm BETWEEN 100 AND 250),
    ADD COLUMN water_goal_ml integer NOT NULL DEFAULT 2000 CHECK (water_goal_ml BETWEEN 500 AND 6000),
    ADD COLUMN long_fast_acknowledged boolean NOT NULL DEFAULT false;

-- One weight per person and Rome day: a second one replaces the first.
CREATE TABLE nutrition.weight (
    id           text PRIMARY KEY,
    user_id      text NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    measured_on  date NOT NULL,
    weight_hg    integer NOT NULL CHECK (weight_hg BETWEEN 200 AND 4000),
    note         text CHECK (char_length(note) <= 500),
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, measured_on)
);

-- `day` is the Rome date of `at`, stored so that the daily limit and the day's total are one
-- index range.
CREATE TABLE nutrition.water (
    id          text PRIMARY KEY,
    user_id     text NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    ml          integer NOT NULL CHECK (ml BETWEEN 50 AND 2000),
    at          timestamptz NOT NULL,
    day         date NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX water_user_day ON nutrition.water (user_id, day);

-- The first answer of a write sent with an Idempotency-Key, for 24 hours. `request` is the
-- method and path the key was first used with.
CREATE TABLE nutrition.idempotency (
    user_id     text NOT NULL REFERENCES auth."user" (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 64),
    request     text NOT NULL,
    status      smallint NOT NULL,
    body        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_user_created ON nutrition.idempotency (user_id, created_at);
