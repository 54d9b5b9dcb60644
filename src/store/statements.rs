//! How the store writes its statements: the bind parameters of hand-written SQL, the keys
//! of an `IN` list for each backend, several inserts as one statement, and the lookup of the
//! one row a unique key names.

use sea_orm::sea_query::{
    Alias, CommonTableExpression, InsertStatement, PostgresQueryBuilder, SqliteQueryBuilder,
    Values, WithClause,
};
use sea_orm::{ConnectionTrait, DbBackend, DbErr, EntityTrait, Select, SelectTwo, Statement};

/// Runs a statement that returns nothing.
pub(crate) async fn execute_raw(db: &impl ConnectionTrait, sql: &str) -> Result<(), DbErr> {
    db.execute_unprepared(sql).await.map(|_| ())
}

/// The `n`th (1-based) bind parameter of hand-written SQL: `$n` on PostgreSQL, `?n` on SQLite.
pub(crate) fn placeholder(backend: DbBackend, n: usize) -> String {
    if backend == DbBackend::Postgres {
        format!("${n}")
    } else {
        format!("?{n}")
    }
}

/// The keys of an `IN` list for `backend`. On SQLite, padded by repeating the last to the
/// next power of four (1, 4, 16, 64, ...): the texts of a read by a list of keys then come
/// in a few lengths, so SQLite's writer finds them among its prepared statements (it keeps
/// 100) instead of preparing each batch's afresh. A repeated key changes nothing an `IN`
/// list matches. On PostgreSQL, which plans such a text for each execution, the keys as
/// they are: padding would lengthen the text and have the planner expect a row for every
/// key written (17 keys padded to 64 scanned a table of a few thousand events whole where
/// its index found the 17).
pub(crate) fn padded_keys<T: Clone>(backend: DbBackend, keys: &[T]) -> Vec<T> {
    if backend == DbBackend::Postgres {
        return keys.to_vec();
    }
    let mut bucket = 1;
    while bucket < keys.len() {
        bucket *= 4;
    }
    let mut padded = keys.to_vec();
    if let Some(last) = keys.last() {
        padded.resize(bucket, last.clone());
    }
    padded
}

/// Several inserts as one statement for `backend` (`None` for none): on SQLite one text of
/// several statements, on PostgreSQL one statement whose first inserts are data-modifying
/// `WITH` clauses (their foreign keys are checked at the end of the statement, so a later
/// insert may refer to the rows of an earlier one).
pub(crate) fn one_statement(
    backend: DbBackend,
    mut inserts: Vec<InsertStatement>,
) -> Option<Statement> {
    let (sql, values) = if backend == DbBackend::Postgres {
        let last = inserts.pop()?;
        if inserts.is_empty() {
            last.build(PostgresQueryBuilder)
        } else {
            let mut with = WithClause::new();
            for (n, insert) in inserts.into_iter().enumerate() {
                with.cte(
                    CommonTableExpression::new()
                        .query(insert)
                        .table_name(Alias::new(format!("insert_{n}")))
                        .to_owned(),
                );
            }
            last.with(with).build(PostgresQueryBuilder)
        }
    } else {
        let mut sql = String::new();
        let mut values = Vec::new();
        for insert in inserts {
            let (text, bound) = insert.build(SqliteQueryBuilder);
            if !sql.is_empty() {
                sql.push_str(";\n");
            }
            sql.push_str(&text);
            values.extend(bound.0);
        }
        (sql, Values(values))
    };
    (!sql.is_empty()).then(|| Statement::from_sql_and_values(backend, sql, values.0))
}

/// A lookup of the one row a unique key (primary key or unique index) names.
///
/// Use it instead of sea-orm's `one()`, which appends `LIMIT ?` with the limit as a bound
/// parameter: the bundled SQLite is built with STAT4, and a statement whose `LIMIT` is a
/// parameter is re-prepared on every execution (about 230,000 instructions, several times
/// the lookup itself). A key names at most one row, so no limit is needed; on a query that
/// could match many rows, `unique` would read them all and keep the first.
pub(crate) trait Unique {
    /// What the lookup returns.
    type Item;

    /// The row, if there is one.
    fn unique<C: ConnectionTrait>(
        self,
        db: &C,
    ) -> impl Future<Output = Result<Option<Self::Item>, DbErr>> + Send;
}

impl<E: EntityTrait> Unique for Select<E> {
    type Item = E::Model;

    async fn unique<C: ConnectionTrait>(self, db: &C) -> Result<Option<E::Model>, DbErr> {
        Ok(self.all(db).await?.into_iter().next())
    }
}

impl<E: EntityTrait, F: EntityTrait> Unique for SelectTwo<E, F> {
    type Item = (E::Model, Option<F::Model>);

    async fn unique<C: ConnectionTrait>(self, db: &C) -> Result<Option<Self::Item>, DbErr> {
        Ok(self.all(db).await?.into_iter().next())
    }
}

#[cfg(test)]
mod tests {
    use super::padded_keys;
    use sea_orm::DbBackend;

    const SQLITE: DbBackend = DbBackend::Sqlite;
    const POSTGRES: DbBackend = DbBackend::Postgres;

    #[test]
    fn keys_pad_to_the_next_power_of_four_with_the_last_on_sqlite() {
        assert_eq!(padded_keys::<u8>(SQLITE, &[]), Vec::<u8>::new());
        assert_eq!(padded_keys(SQLITE, &[7]), vec![7]);
        assert_eq!(padded_keys(SQLITE, &[1, 2]), vec![1, 2, 2, 2]);
        assert_eq!(padded_keys(SQLITE, &[1, 2, 3, 4]), vec![1, 2, 3, 4]);
        let five = padded_keys(SQLITE, &[1, 2, 3, 4, 5]);
        assert_eq!(five.len(), 16);
        assert!(five[4..].iter().all(|key| *key == 5));
    }

    #[test]
    fn keys_stay_as_they_are_on_postgres() {
        assert_eq!(padded_keys(POSTGRES, &[1, 2]), vec![1, 2]);
        assert_eq!(padded_keys(POSTGRES, &[1, 2, 3, 4, 5]), vec![1, 2, 3, 4, 5]);
    }
}
