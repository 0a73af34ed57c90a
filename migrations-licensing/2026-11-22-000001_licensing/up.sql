-- Licensing on MariaDB 10.11. Times are DATETIME(6) in UTC: every connection sets
-- time_zone = '+00:00', so the server's zone never leaks in.

CREATE TABLE licence (
    id               CHAR(36)     NOT NULL PRIMARY KEY,
    license_key      VARCHAR(64)  NOT NULL,
    status           VARCHAR(16)  NOT NULL,
    plan             VARCHAR(16)  NOT NULL,
    customer_email   VARCHAR(320) NOT NULL,
    customer_name    VARCHAR(255) NULL,
    -- The payment provider's order and subscription ids, when the licence came from a purchase.
    order_id         VARCHAR(64)  NULL,
    subscription_id  VARCHAR(64)  NULL,
    variant_id       VARCHAR(64)  NULL,
    -- Annual: purchase + 365 days; cancelled subscriptions: the provider's ends_at.
    expires_at       DATETIME(6)  NULL,
    -- Set by an operator or a refund; a disabled licence has no access whatever its status.
    disabled_at      DATETIME(6)  NULL,
    created_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT licence_key_unique UNIQUE (license_key),
    CONSTRAINT licence_order_unique UNIQUE (order_id),
    INDEX licence_subscription_idx (subscription_id),
    INDEX licence_email_idx (customer_email),
    CONSTRAINT licence_status_check CHECK (status IN
        ('active', 'on_trial', 'past_due', 'paused', 'cancelled', 'expired', 'unpaid', 'refunded')),
    CONSTRAINT licence_plan_check CHECK (plan IN ('basic', 'pro', 'premium', 'annual'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per installation holding a slot; deactivation deletes it.
CREATE TABLE activation (
    id                 CHAR(36)     NOT NULL PRIMARY KEY,
    licence_id         CHAR(36)     NOT NULL,
    instance_id        VARCHAR(191) NOT NULL,
    instance_name      VARCHAR(255) NULL,
    created_at         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    last_validated_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT activation_instance_unique UNIQUE (licence_id, instance_id),
    CONSTRAINT activation_licence_fk FOREIGN KEY (licence_id) REFERENCES licence (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Units consumed per licence per Europe/Rome calendar day.
CREATE TABLE daily_usage (
    licence_id  CHAR(36)    NOT NULL,
    day         DATE        NOT NULL,
    used        INT         NOT NULL DEFAULT 0,
    updated_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (licence_id, day),
    CONSTRAINT daily_usage_licence_fk FOREIGN KEY (licence_id) REFERENCES licence (id) ON DELETE CASCADE,
    CONSTRAINT daily_usage_used_check CHECK (used >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Every payment event processed, keyed so that a redelivery is recognised.
CREATE TABLE webhook_event (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    event_key    VARCHAR(191) NOT NULL,
    event_name   VARCHAR(64)  NOT NULL,
    licence_id   CHAR(36)     NULL,
    received_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    CONSTRAINT webhook_event_key_unique UNIQUE (event_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Licence e-mails waiting for (or done with) SMTP delivery.
CREATE TABLE email_outbox (
    id               BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    licence_id       CHAR(36)      NULL,
    to_address       VARCHAR(320)  NOT NULL,
    to_name          VARCHAR(255)  NULL,
    subject          VARCHAR(255)  NOT NULL,
    text_body        MEDIUMTEXT    NOT NULL,
    html_body        MEDIUMTEXT    NOT NULL,
    attempts         INT           NOT NULL DEFAULT 0,
    next_attempt_at  DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    sent_at          DATETIME(6)   NULL,
    last_error       VARCHAR(1000) NULL,
    created_at       DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    INDEX email_outbox_due_idx (sent_at, next_attempt_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
