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
