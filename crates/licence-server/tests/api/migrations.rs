//! The MariaDB migrations against a real server: complete and repeatable.

use diesel::prelude::*;
use diesel::sql_types::Text;
use testkit::mariadb::TestMariaDb;

#[derive(QueryableByName, PartialEq, Eq, Debug)]
struct Line {
    #[diesel(sql_type = Text)]
    line: String,
}

/// Every column, index and constraint of the database as sorted text.
fn catalogue(conn: &mut MysqlConnection) -> Vec<Line> {
    diesel::sql_query(
        "SELECT line FROM (
            SELECT CONCAT_WS(' ', 'column', table_name, column_name, column_type, is_nullable,
                             COALESCE(column_default, '')) AS line
              FROM information_schema.columns WHERE table_schema = DATABASE()
            UNION ALL
            SELECT CONCAT_WS(' ', 'index', table_name, index_name, seq_in_index, column_name, non_unique)
              FROM information_schema.statistics WHERE table_schema = DATABASE()
            UNION ALL
            SELECT CONCAT_WS(' ', 'check', constraint_name, check_clause)
              FROM information_schema.check_constraints WHERE constraint_schema = DATABASE()
         ) all_lines ORDER BY line",
    )
    .load(conn)
    .expect("read catalogue")
}

#[test]
fn applying_twice_changes_nothing() {
    let db = TestMariaDb::empty();
    let mut conn = db.connect();
    let first = licence_server::db::migrate(&mut conn).expect("first run");
    assert!(
        !first.is_empty(),
        "an empty database has migrations to apply"
    );
    let before = catalogue(&mut conn);
    assert!(before.len() > 40, "the tables exist: {}", before.len());
    let second = licence_server::db::migrate(&mut conn).expect("second run");
    assert!(second.is_empty(), "nothing left to apply: {second:?}");
    assert_eq!(catalogue(&mut conn), before);
}

/// The migration lock serialises the migrators of one database (replicas starting together),
/// not every database of the server: while the lock of one database is held, another database
/// migrates at once, and a second migrator of the held one waits.
#[test]
fn the_migration_lock_belongs_to_one_database() {
    use std::time::Duration;
    let held = TestMariaDb::empty();
    let mut holder = held.connect();
    licence_server::db::lock_migrations(&mut holder).expect("take the lock");

    let other = TestMariaDb::empty();
    let finished = migrate_in_background(other.url());
    let applied = finished
        .recv_timeout(Duration::from_secs(30))
        .expect("another database's migration waited for this one's lock")
        .expect("migrate");
    assert!(!applied.is_empty());

    let finished = migrate_in_background(held.url());
    assert!(
        finished.recv_timeout(Duration::from_secs(2)).is_err(),
        "the held database's migration waits for its lock"
    );
    licence_server::db::unlock_migrations(&mut holder).expect("release the lock");
    let applied = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the migration goes on once the lock is released")
        .expect("migrate");
    assert!(!applied.is_empty());
}

/// Migrates the database at `url` on a thread of its own; its outcome arrives on the receiver.
fn migrate_in_background(url: &str) -> std::sync::mpsc::Receiver<Result<Vec<String>, String>> {
    let (done, finished) = std::sync::mpsc::channel();
    let url = url.to_owned();
    std::thread::spawn(move || {
        let mut conn = MysqlConnection::establish(&url).expect("connect");
        let _ = done.send(licence_server::db::migrate(&mut conn).map_err(|e| e.to_string()));
    });
    finished
}
