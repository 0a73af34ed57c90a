//! Diesel's view of the tables created by `migrations-postgres/`. Kept by hand in step with the
//! migrations; `tests/schema.rs` selects every column of every table from a migrated database so
//! that a drift fails the build's tests.

pub mod auth {
    diesel::table! {
        auth.user (id) {
            id -> Text,
            name -> Text,
            email -> Text,
            email_verified -> Bool,
            image -> Nullable<Text>,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
            two_factor_enabled -> Bool,
            locale -> Text,
        }
    }

    diesel::table! {
        auth.session (id) {
            id -> Text,
            token -> Text,
            user_id -> Text,
            expires_at -> Timestamptz,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
            ip_address -> Nullable<Text>,
            user_agent -> Nullable<Text>,
            proven_at -> Nullable<Timestamptz>,
        }
    }

    diesel::table! {
        auth.activity (id) {
            id -> Text,
            user_id -> Text,
            kind -> Text,
            at -> Timestamptz,
            user_agent -> Nullable<Text>,
            ip -> Nullable<Text>,
        }
    }

    diesel::table! {
        auth.passkey (id) {
            id -> Text,
            user_id -> Text,
            name -> Nullable<Text>,
            credential_id -> Text,
            public_key -> Text,
            credential -> Jsonb,
            counter -> Int8,
            device_type -> Text,
            backed_up -> Bool,
            transports -> Nullable<Text>,
            aaguid -> Nullable<Text>,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        auth.account (id) {
            id -> Text,
            account_id -> Text,
            provider_id -> Text,
            user_id -> Text,
            access_token -> Nullable<Text>,
            refresh_token -> Nullable<Text>,
            id_token -> Nullable<Text>,
            access_token_expires_at -> Nullable<Timestamptz>,
            refresh_token_expires_at -> Nullable<Timestamptz>,
            scope -> Nullable<Text>,
            password -> Nullable<Text>,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
        }
    }

    diesel::table! {
        auth.verification (id) {
            id -> Text,
            identifier -> Text,
            value -> Text,
            expires_at -> Timestamptz,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
        }
    }

    diesel::table! {
        auth.rate_limit (key) {
            key -> Text,
            count -> Int4,
            window_start -> Timestamptz,
        }
    }

    diesel::table! {
        auth.mail_outbox (id) {
            id -> Int8,
            kind -> Text,
            to_address -> Text,
            to_name -> Nullable<Text>,
            subject -> Text,
            text_body -> Text,
            html_body -> Text,
            attempts -> Int4,
            next_attempt_at -> Timestamptz,
            lease_token -> Nullable<Text>,
            sent_at -> Nullable<Timestamptz>,
            parked_at -> Nullable<Timestamptz>,
            last_error -> Nullable<Text>,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        auth.two_factor (id) {
            id -> Text,
            user_id -> Text,
            secret -> Text,
            backup_codes -> Array<Text>,
            verified -> Bool,
            failed_verification_count -> Int4,
            locked_until -> Nullable<Timestamptz>,
            created_at -> Timestamptz,
        }
    }

    diesel::joinable!(session -> user (user_id));
    diesel::joinable!(account -> user (user_id));
    diesel::joinable!(two_factor -> user (user_id));
    diesel::joinable!(activity -> user (user_id));
    diesel::joinable!(passkey -> user (user_id));
    diesel::allow_tables_to_appear_in_same_query!(
        user,
        session,
        account,
        verification,
        rate_limit,
        mail_outbox,
        two_factor,
        activity,
        passkey
    );
}

pub mod nutrition {
    diesel::table! {
        nutrition.profile (user_id) {
            user_id -> Text,
            fasting_protocol -> Nullable<Text>,
            fasting_milestones -> Bool,
            fasting_paused_until -> Nullable<Timestamptz>,
            meal_reminders -> Bool,
            weekly_weigh_in -> Bool,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
            weight_goal_hg -> Nullable<Int4>,
            height_cm -> Nullable<Int2>,
            water_goal_ml -> Int4,
            long_fast_acknowledged -> Bool,
        }
    }

    diesel::table! {
        nutrition.weight (id) {
            id -> Text,
            user_id -> Text,
            measured_on -> Date,
            weight_hg -> Int4,
            note -> Nullable<Text>,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        nutrition.water (id) {
            id -> Text,
            user_id -> Text,
            ml -> Int4,
            at -> Timestamptz,
            day -> Date,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        nutrition.idempotency (user_id, key) {
            user_id -> Text,
            key -> Text,
            request -> Text,
            status -> Int2,
            body -> Jsonb,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        nutrition.fast_event (id) {
            id -> Text,
            user_id -> Text,
            status -> Text,
            protocol -> Text,
            started_at -> Timestamptz,
            planned_end_at -> Timestamptz,
            ended_at -> Nullable<Timestamptz>,
            notified_milestones -> Array<Text>,
            symptoms -> Nullable<Jsonb>,
            auto_started -> Bool,
            created_at -> Timestamptz,
            updated_at -> Timestamptz,
            next_milestone_at -> Nullable<Timestamptz>,
        }
    }

    diesel::table! {
        nutrition.meal_plan (id) {
            id -> Text,
            user_id -> Text,
            intermittent_fasting -> Bool,
            created_at -> Timestamptz,
        }
    }

    diesel::table! {
        nutrition.meal_slot (id) {
            id -> Text,
            plan_id -> Text,
            user_id -> Text,
            date -> Date,
            category -> Text,
            position -> Int2,
            recipe_id -> Nullable<Text>,
            title -> Nullable<Text>,
            consumed_at -> Nullable<Timestamptz>,
        }
    }

    diesel::table! {
        nutrition.device_token (id) {
            id -> Text,
            user_id -> Text,
            platform -> Text,
            endpoint -> Text,
            p256dh -> Text,
            auth -> Text,
            token -> Nullable<Text>,
            user_agent -> Nullable<Text>,
            created_at -> Timestamptz,
            last_seen_at -> Timestamptz,
            session_id -> Nullable<Text>,
        }
    }

    diesel::table! {
        nutrition.pause_period (id) {
            id -> Int8,
            user_id -> Text,
            starts_at -> Timestamptz,
            ends_at -> Timestamptz,
        }
    }

    diesel::table! {
        nutrition.test_push_limit (user_id) {
            user_id -> Text,
            count -> Int4,
            window_start -> Timestamptz,
        }
    }

    diesel::joinable!(meal_slot -> meal_plan (plan_id));
    diesel::allow_tables_to_appear_in_same_query!(
        profile,
        fast_event,
        meal_plan,
        meal_slot,
        device_token,
        pause_period,
        test_push_limit,
        weight,
        water,
        idempotency
    );
}

/// The session check of a hot route reads the session, its user and the user's profile in one
/// statement.
mod across_schemas {
    use super::auth::{session, user};
    use super::nutrition::profile;

    diesel::allow_tables_to_appear_in_same_query!(profile, user);
    diesel::allow_tables_to_appear_in_same_query!(profile, session);
}

pub mod scheduler {
    diesel::table! {
        scheduler.job_run (job, slot) {
            job -> Text,
            slot -> Timestamp,
            claimed_at -> Timestamptz,
            finished_at -> Nullable<Timestamptz>,
            sent -> Int4,
            skipped -> Int4,
        }
    }

    diesel::table! {
        scheduler.outbox (id) {
            id -> Int8,
            job -> Text,
            slot -> Timestamp,
            user_id -> Text,
            device_id -> Text,
            endpoint -> Text,
            p256dh -> Text,
            auth -> Text,
            payload -> Jsonb,
            status -> Text,
            attempts -> Int4,
            next_attempt_at -> Timestamptz,
            expires_at -> Timestamptz,
            last_error -> Nullable<Text>,
            created_at -> Timestamptz,
            finished_at -> Nullable<Timestamptz>,
            fair_rank -> Int2,
            /// Generated from `endpoint`: never written.
            origin -> Nullable<Text>,
        }
    }

    diesel::allow_tables_to_appear_in_same_query!(job_run, outbox);
}
