//! Rows a test arranges in the server's database directly: what no route writes yet (a
//! federated shadow user and its member tokens, until federation issues them) or no longer
//! writes (values an older server stored).

use entities::{calendar_members, events, member_tokens, users};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};

use super::TestApp;

impl TestApp {
    /// Stores a federated shadow user `id` (as an accepted invite will) with the member
    /// tokens `tokens`, each issued that many days ago.
    pub async fn store_shadow_user(&self, id: &str, tokens: &[(&str, i64)]) {
        let conn = self.db_connection().await;
        let now = chrono::Utc::now();
        users::ActiveModel {
            id: Set(id.into()),
            name: Set("Remote Ruth".into()),
            email: Set(format!("{id}@remote.example")),
            email_verified: Set(false),
            image: Set(None),
            is_external: Set(true),
            home_server: Set(Some("https://remote.example".into())),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&conn)
        .await
        .expect("shadow user");
        for (token, age_days) in tokens {
            member_tokens::ActiveModel {
                id: Set(uuid::Uuid::new_v4()),
                user_id: Set(id.into()),
                token_hash: Set(bowline::domain::digest::sha256_hex(token)),
                created_at: Set(now - chrono::Duration::days(*age_days)),
            }
            .insert(&conn)
            .await
            .expect("member token");
        }
    }

    /// Makes `user_id` a viewer of `calendar_id` without an invite.
    pub async fn store_membership(&self, calendar_id: &str, user_id: &str) {
        let now = chrono::Utc::now();
        calendar_members::ActiveModel {
            id: Set(uuid::Uuid::new_v4()),
            calendar_id: Set(bowline::domain::ids::CalendarId::from_uuid(
                calendar_id.parse().expect("calendar id"),
            )),
            user_id: Set(user_id.into()),
            role: Set("viewer".into()),
            reminder: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&self.db_connection().await)
        .await
        .expect("membership");
    }

    /// Overwrites columns of the stored `event` (its JSON), as an older server could have
    /// written them.
    pub async fn overwrite_event(
        &self,
        event: &serde_json::Value,
        columns: Vec<(events::Column, sea_orm::Value)>,
    ) {
        let id: uuid::Uuid = event["id"].as_str().expect("id").parse().expect("uuid");
        let mut update = events::Entity::update_many();
        for (column, value) in columns {
            update = update.col_expr(column, Expr::value(value));
        }
        update
            .filter(events::Column::Id.eq(id))
            .exec(&self.db_connection().await)
            .await
            .expect("stored");
    }
}

/// The value `n` of the one row the PostgreSQL query `sql` answers.
pub async fn pg_value<T: sea_orm::TryGetable>(
    conn: &impl sea_orm::ConnectionTrait,
    sql: &str,
) -> T {
    conn.query_one_raw(sea_orm::Statement::from_string(
        sea_orm::DbBackend::Postgres,
        sql,
    ))
    .await
    .expect("query")
    .expect("row")
    .try_get::<T>("", "n")
    .expect("value")
}

/// Waits (within [`super::WAIT`], else fails with `what`) until `count`, a PostgreSQL query
/// answering one row with a count `n`, answers a count that satisfies `done`.
pub async fn until_pg_count(
    conn: &sea_orm::DatabaseConnection,
    count: &str,
    done: impl Fn(i64) -> bool,
    what: &str,
) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(5));
    tokio::time::timeout(super::WAIT, async {
        loop {
            tick.tick().await;
            if done(pg_value::<i64>(conn, count).await) {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}
