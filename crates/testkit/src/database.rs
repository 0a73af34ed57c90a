//! The life of a test database, the same on both servers: create it uniquely named (clearing
//! the leftovers of killed runs first), hand out its URL and connections, drop it at the end.
//! What differs between PostgreSQL and MariaDB (the SQL, the admin URL) is a [`Server`].

use std::marker::PhantomData;

use diesel::Connection;

use crate::{unique_db_name, with_database};

/// One kind of database server the tests run against.
pub trait Server {
    type Conn: Connection;
    /// The server's name in messages.
    const NAME: &'static str;
    /// The variable with the URL of the admin connection that creates and drops test databases.
    const ADMIN_URL_VAR: &'static str;
    /// The admin URL where the variable is not set: the project's test command's server.
    const DEFAULT_ADMIN_URL: &'static str;

    fn create_database(conn: &mut Self::Conn, name: &str) -> diesel::QueryResult<usize>;
    fn drop_database(conn: &mut Self::Conn, name: &str) -> diesel::QueryResult<usize>;
    /// The test databases that earlier, killed runs left behind.
    fn stale(conn: &mut Self::Conn) -> Vec<String>;
}

fn admin_url<S: Server>() -> String {
    std::env::var(S::ADMIN_URL_VAR).unwrap_or_else(|_| S::DEFAULT_ADMIN_URL.to_owned())
}

/// An empty database that exists until this value is dropped.
pub struct TestDatabase<S: Server> {
    name: String,
    url: String,
    server: PhantomData<S>,
}

impl<S: Server> TestDatabase<S> {
    /// Creates an empty database (no migrations applied).
    pub fn empty() -> Self {
        crate::process_init();
        let admin = admin_url::<S>();
        let mut conn = S::Conn::establish(&admin)
            .unwrap_or_else(|e| panic!("cannot reach {} at {}: {e}", S::NAME, S::ADMIN_URL_VAR));
        for stale in S::stale(&mut conn) {
            let _ = S::drop_database(&mut conn, &stale);
        }
        let name = unique_db_name();
        S::create_database(&mut conn, &name).expect("create test database");
        let url = with_database(&admin, &name);
        Self {
            name,
            url,
            server: PhantomData,
        }
    }

    /// Creates a database and applies `migrate` to it, as a service would at start-up.
    pub fn migrated(migrate: impl FnOnce(&mut S::Conn) -> anyhow::Result<Vec<String>>) -> Self {
        let db = Self::empty();
        let mut conn = db.connect();
        migrate(&mut conn).expect("migrate test database");
        db
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn connect(&self) -> S::Conn {
        S::Conn::establish(&self.url).expect("connect to test database")
    }
}

impl<S: Server> Drop for TestDatabase<S> {
    fn drop(&mut self) {
        if let Ok(mut conn) = S::Conn::establish(&admin_url::<S>()) {
            let _ = S::drop_database(&mut conn, &self.name);
        }
    }
}
