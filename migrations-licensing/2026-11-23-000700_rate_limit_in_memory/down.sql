DROP TABLE licence_rate_limit;
CREATE TABLE licence_rate_limit (
    bucket        VARCHAR(191) NOT NULL PRIMARY KEY,
    window_start  DATETIME(6)  NOT NULL,
    hits          INT          NOT NULL,
    INDEX licence_rate_limit_window_idx (window_start)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
