//! Tables of the `auth` schema that have their own module of queries.

pub mod outbox;
