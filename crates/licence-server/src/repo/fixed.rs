//! The values licence-server binds into its fixed statements (`service_kit::fixed`), which
//! keep the hot statements of validate and consume prepared on their MariaDB connection.

use chrono::{NaiveDate, NaiveDateTime};
use diesel::QueryResult;
use diesel::mysql::Mysql;
use diesel::query_builder::AstPass;
use diesel::sql_types::{Date, Datetime, Integer, Text};
use service_kit::fixed::PushBind;
pub use service_kit::fixed::fixed;

/// One bound value.
#[derive(Debug, Clone)]
pub enum Bind {
    Text(String),
    Int(i32),
    Date(NaiveDate),
    Datetime(NaiveDateTime),
}

impl PushBind<Mysql> for Bind {
    fn push_bind<'b>(&'b self, out: &mut AstPass<'_, 'b, Mysql>) -> QueryResult<()> {
        match self {
            Bind::Text(v) => out.push_bind_param::<Text, _>(v),
            Bind::Int(v) => out.push_bind_param::<Integer, _>(v),
            Bind::Date(v) => out.push_bind_param::<Date, _>(v),
            Bind::Datetime(v) => out.push_bind_param::<Datetime, _>(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::query_builder::QueryFragment;

    #[test]
    fn the_text_is_cacheable() {
        let q = fixed("SELECT ?", vec![Bind::Int(1)]);
        assert!(matches!(q.is_safe_to_cache_prepared(&Mysql), Ok(true)));
        let sql = diesel::debug_query::<Mysql, _>(&q).to_string();
        assert!(sql.starts_with("SELECT ?"), "{sql}");
        let short = fixed("SELECT ?, ?", vec![Bind::Int(1)]);
        assert!(short.is_safe_to_cache_prepared(&Mysql).is_err());
        let long = fixed("SELECT ?", vec![Bind::Int(1), Bind::Int(2)]);
        assert!(long.is_safe_to_cache_prepared(&Mysql).is_err());
    }
}
