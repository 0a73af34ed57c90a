//! A fresh Postgres database per test.

use diesel::{PgConnection, RunQueryDsl};

use crate::database::{Server, TestDatabase};
use crate::is_stale;

pub struct Postgres;

/// An empty database that exists until this value is dropped.
pub type TestPostgres = TestDatabase<Postgres>;

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
}

impl Server for Postgres {
    type Conn = PgConnection;
    const NAME: &'static str = "Postgres";
    const ADMIN_URL_VAR: &'static str = "TEST_POSTGRES_URL";
    const DEFAULT_ADMIN_URL: &'static str = "postgres://app:app@127.0.0.1:5432/postgres";

    fn create_database(conn: &mut PgConnection, name: &str) -> diesel::QueryResult<usize> {
        diesel::sql_query(format!("CREATE DATABASE \"{name}\"")).execute(conn)
    }

    fn drop_database(conn: &mut PgConnection, name: &str) -> diesel::QueryResult<usize> {
        diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(conn)
    }

    fn stale(conn: &mut PgConnection) -> Vec<String> {
        diesel::sql_query("SELECT datname FROM pg_database WHERE datname LIKE 't\\_%'")
            .load::<Name>(conn)
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.datname)
            .filter(|n| is_stale(n))
            .collect()
    }
}

impl TestPostgres {
    /// The one number `query` selects as `n` (a `bigint`), or -1 when it selects none.
    pub fn count(&self, query: &str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct C {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        diesel::sql_query(query)
            .get_result::<C>(&mut self.connect())
            .map(|c| c.n)
            .unwrap_or(-1)
    }
}

/// `url` connecting as the service role `role` (migration `service_roles`): the server switches
/// to it at connection start, so a test's service has exactly the rights it has when deployed
/// (where it logs in as that role), while the test itself stays the owner.
pub fn as_role(url: &str, role: &str) -> String {
    // libpq decodes `%20` but not the `+` a form encoder would write for the space.
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20role%3D{role}")
}
