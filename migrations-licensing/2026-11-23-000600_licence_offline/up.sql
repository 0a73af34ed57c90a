-- Offline leases (contract section 7) and hardening of the licence routes.

-- Every deactivation, so that at most LICENCE_DEACTIVATIONS_PER_30_DAYS happen per licence in
-- any 30 days. Counted under the licence's row lock, so replicas and parallel requests agree.
CREATE TABLE licence_deactivation (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    licence_id      CHAR(36)     NOT NULL,
    instance_id     VARCHAR(191) NOT NULL,
    deactivated_at  DATETIME(6)  NOT NULL,
    INDEX licence_deactivation_window_idx (licence_id, deactivated_at),
    CONSTRAINT licence_deactivation_licence_fk FOREIGN KEY (licence_id) REFERENCES licence (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The first answer of a consume under an Idempotency-Key, per licence and quota day.
CREATE TABLE usage_idempotency (
    licence_id   CHAR(36)     NOT NULL,
    day          DATE         NOT NULL,
    idem_key     VARCHAR(64)  NOT NULL,
    taken        BOOLEAN      NOT NULL,
    used         INT          NOT NULL,
    plan         VARCHAR(16)  NOT NULL,
    created_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (licence_id, day, idem_key),
    INDEX usage_idempotency_day_idx (day),
    CONSTRAINT usage_idempotency_licence_fk FOREIGN KEY (licence_id) REFERENCES licence (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Fixed-window request counters per client address, shared by every replica.
CREATE TABLE licence_rate_limit (
    bucket        VARCHAR(191) NOT NULL PRIMARY KEY,
    window_start  DATETIME(6)  NOT NULL,
    hits          INT          NOT NULL,
    INDEX licence_rate_limit_window_idx (window_start)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Refunds that arrived before their order: the order, when it comes, makes no active licence.
CREATE TABLE refunded_order (
    order_id     VARCHAR(64)  NOT NULL PRIMARY KEY,
    refunded_at  DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
