//! Account deletion by emailed confirmation: a live session asks (`DELETE /api/v1/users` or
//! better-auth's `/delete-user`), a one-hour single-use token is mailed as a link to
//! `{base_url}/delete-account?token=…`, and presenting the token deletes the user with
//! everything that cascades from it (sessions, accounts, memberships, owned calendars,
//! settings) in one transaction.

use chrono::Duration;
use entities::users;

use super::tokens::random_alphanumeric;
use crate::actors::Shared;
use crate::domain::digest::sha256_hex;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::mail::templates;
use crate::store::{users as user_store, verifications};

/// How long a deletion link works.
pub const DELETE_TOKEN_TTL: Duration = Duration::hours(1);

fn identifier(token: &str) -> String {
    format!("delete-account:{}", sha256_hex(token))
}

/// Stores a deletion token for `user` and mails the confirmation link.
pub async fn start(server: &Shared, user: &users::Model) -> Result<(), AppError> {
    let token = random_alphanumeric(32).to_lowercase();
    let now = chrono::Utc::now();
    verifications::create(
        &server.db,
        &identifier(&token),
        user.id.as_str(),
        now + DELETE_TOKEN_TTL,
        now,
    )
    .await?;
    let link = format!("{}/delete-account?token={token}", server.base_url);
    let name = templates::server_name(&server.base_url);
    server
        .actors
        .send_mail(templates::account_deletion(&name, &user.email, &link));
    tracing::info!("account.deletion_requested");
    Ok(())
}

/// Uses up `token` and deletes its user, in one transaction. With `expected_user`, a token
/// of another user is refused and left unused. `None`: no such (usable) token.
pub async fn confirm(
    server: &Shared,
    token: &str,
    expected_user: Option<&UserId>,
) -> Result<Option<UserId>, AppError> {
    let now = chrono::Utc::now();
    let confirmed = server
        .db
        .write(async |txn| {
            // `None` may still have deleted an expired token: rolled back too.
            let Some(user_id) = verifications::consume(txn, &identifier(token), now).await? else {
                txn.discard();
                return Ok(None);
            };
            let user_id = UserId::new(user_id);
            if expected_user.is_some_and(|expected| *expected != user_id) {
                // Discarded: the consumption is rolled back.
                txn.discard();
                return Ok(None);
            }
            let deleted = user_store::delete(txn, &user_id).await?;
            Ok::<_, AppError>(Some((user_id, deleted)))
        })
        .await?;
    let Some((user_id, deleted)) = confirmed else {
        return Ok(None);
    };
    if deleted {
        tracing::info!("account.deleted");
        Ok(Some(user_id))
    } else {
        Ok(None)
    }
}
