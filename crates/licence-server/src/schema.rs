//! The diesel view of `migrations-licensing/`, written by hand to match the SQL; the migration
//! tests apply every migration to an empty database and read this schema back through queries.

diesel::table! {
    licence (id) {
        id -> Varchar,
        license_key -> Varchar,
        status -> Varchar,
        plan -> Varchar,
        customer_email -> Varchar,
        customer_name -> Nullable<Varchar>,
        order_id -> Nullable<Varchar>,
        subscription_id -> Nullable<Varchar>,
        variant_id -> Nullable<Varchar>,
        subscription_synced_at -> Nullable<Datetime>,
        expires_at -> Nullable<Datetime>,
        disabled_at -> Nullable<Datetime>,
        created_at -> Datetime,
        updated_at -> Datetime,
        seats -> Integer,
        channel -> Varchar,
        sparkle_feed -> Nullable<Varchar>,
    }
}

diesel::table! {
    activation (id) {
        id -> Varchar,
        licence_id -> Varchar,
        instance_id -> Varchar,
        instance_name -> Nullable<Varchar>,
        created_at -> Datetime,
        last_validated_at -> Datetime,
    }
}

diesel::table! {
    daily_usage (licence_id, day) {
        licence_id -> Varchar,
        day -> Date,
        used -> Integer,
        updated_at -> Datetime,
    }
}

diesel::table! {
    webhook_event (id) {
        id -> Bigint,
        event_key -> Varchar,
        event_name -> Varchar,
        licence_id -> Nullable<Varchar>,
        received_at -> Datetime,
    }
}

diesel::table! {
    email_outbox (id) {
        id -> Bigint,
        licence_id -> Nullable<Varchar>,
        to_address -> Varchar,
        to_name -> Nullable<Varchar>,
        subject -> Varchar,
        text_body -> Text,
        html_body -> Text,
        attempts -> Integer,
        next_attempt_at -> Datetime,
        lease_token -> Nullable<Varchar>,
        sent_at -> Nullable<Datetime>,
        gave_up_at -> Nullable<Datetime>,
        last_error -> Nullable<Varchar>,
        created_at -> Datetime,
    }
}

diesel::table! {
    licence_deactivation (id) {
        id -> Bigint,
        licence_id -> Varchar,
        instance_id -> Varchar,
        deactivated_at -> Datetime,
    }
}

diesel::table! {
    usage_idempotency (licence_id, day, idem_key) {
        licence_id -> Varchar,
        day -> Date,
        idem_key -> Varchar,
        taken -> Bool,
        used -> Integer,
        plan -> Varchar,
        created_at -> Datetime,
    }
}

diesel::table! {
    licence_rate_limit (bucket) {
        bucket -> Varchar,
        window_start -> Datetime,
        hits -> Integer,
    }
}

diesel::table! {
    refunded_order (order_id) {
        order_id -> Varchar,
        refunded_at -> Datetime,
    }
}

diesel::joinable!(activation -> licence (licence_id));
diesel::joinable!(daily_usage -> licence (licence_id));
diesel::allow_tables_to_appear_in_same_query!(
    licence,
    activation,
    daily_usage,
    webhook_event,
    email_outbox,
    licence_deactivation,
    usage_idempotency,
    licence_rate_limit,
    refunded_order
);
