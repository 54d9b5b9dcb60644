//! Setting up a run through the public API only: users signed up through
//! `/api/auth/sign-up/email`, calendars created by their owners, an invite per calendar that
//! the other members join with, and editors promoted with a role change. [`Layout`] is the
//! plan: who owns which calendar and who is editor or viewer where.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt, stream};
use reqwest::{Method, StatusCode};
use serde_json::json;
use uuid::Uuid;

use super::StressError;
use super::client::{Client, User};

/// Setup requests in flight at once.
const PARALLEL: usize = 8;
/// Sign-ups in flight at once (the server hashes a few passwords at a time).
const PARALLEL_SIGN_UPS: usize = 4;

/// A member's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Created the calendar.
    Owner,
    /// May edit events.
    Editor,
    /// Reads and answers attendance.
    Viewer,
}

impl Role {
    /// Whether the role may create, change and delete events.
    pub fn edits(self) -> bool {
        matches!(self, Self::Owner | Self::Editor)
    }
}

/// How users share the calendars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// User `u` edits calendars `u % C` and `(u + 1) % C` and views `(u + 2) % C`, so
    /// events have different readers and links change who sees them. With one calendar,
    /// everyone edits it.
    Spread,
    /// Every user is a member of every calendar with this role.
    Everyone(Role),
}

/// Calendars and memberships of a run.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Calendar ids, by index (filled in by [`calendars`]).
    pub calendars: Vec<Uuid>,
    /// The owner of each calendar.
    pub owners: Vec<usize>,
    /// Each user's role per calendar index.
    pub roles: Vec<BTreeMap<usize, Role>>,
    members: Vec<Vec<usize>>,
}

impl Layout {
    /// The plan for `users` users and `calendars` calendars (ids still unknown).
    pub fn plan(users: usize, calendars: usize, sharing: Sharing) -> Self {
        let owners: Vec<usize> = (0..calendars).map(|c| c % users.max(1)).collect();
        let mut roles = vec![BTreeMap::new(); users];
        for (user, mine) in roles.iter_mut().enumerate() {
            for (calendar, owner) in owners.iter().enumerate() {
                let role = if *owner == user {
                    Some(Role::Owner)
                } else {
                    match sharing {
                        Sharing::Everyone(role) => Some(role),
                        Sharing::Spread => {
                            let at = |step: usize| (user + step) % calendars == calendar;
                            if at(0) || at(1) {
                                Some(Role::Editor)
                            } else if at(2) {
                                Some(Role::Viewer)
                            } else {
                                None
                            }
                        }
                    }
                };
                if let Some(role) = role {
                    mine.insert(calendar, role);
                }
            }
        }
        let members = (0..calendars)
            .map(|c| (0..users).filter(|u| roles[*u].contains_key(&c)).collect())
            .collect();
        Self {
            calendars: vec![Uuid::nil(); calendars],
            owners,
            roles,
            members,
        }
    }

    /// Members of calendar `calendar`, ascending.
    pub fn members(&self, calendar: usize) -> &[usize] {
        self.members.get(calendar).map_or(&[], Vec::as_slice)
    }

    /// Calendars `user` may edit events in.
    pub fn editable(&self, user: usize) -> Vec<usize> {
        self.roles.get(user).map_or_else(Vec::new, |roles| {
            roles
                .iter()
                .filter(|(_, role)| role.edits())
                .map(|(c, _)| *c)
                .collect()
        })
    }

    /// Calendars `user` is a member of.
    pub fn visible(&self, user: usize) -> Vec<usize> {
        self.roles
            .get(user)
            .map_or_else(Vec::new, |roles| roles.keys().copied().collect())
    }
}

/// Signs up `count` users with addresses unique to `tag`; `note` hears about rate limits.
pub async fn users(
    client: &Client,
    count: usize,
    tag: &str,
    note: &(dyn Fn(String) + Sync),
) -> Result<Vec<User>, StressError> {
    let password = format!("stress-{tag}-password");
    let waiting = |wait: Duration| {
        note(format!(
            "sign-up rate limited: waiting {}s as the server asks \
             (start benchmark servers with AUTH_RATE_LIMIT=false)",
            wait.as_secs()
        ));
    };
    let mut users: Vec<User> = stream::iter(0..count)
        .map(|index| {
            let email = format!("stress-{tag}-{index}@example.com");
            let password = password.clone();
            let waiting = &waiting;
            async move { client.sign_up(index, &email, &password, waiting).await }
        })
        .buffer_unordered(PARALLEL_SIGN_UPS)
        .try_collect()
        .await?;
    users.sort_by_key(|u| u.index);
    Ok(users)
}

/// Creates the calendars of `layout` and its memberships; fills in `layout.calendars`.
pub async fn calendars(
    client: &Client,
    users: &[User],
    layout: &mut Layout,
    tag: &str,
) -> Result<(), StressError> {
    let user = |index: usize| {
        users
            .get(index)
            .ok_or_else(|| StressError::Invalid(format!("no user {index}")))
    };
    for (calendar, owner) in layout.owners.clone().into_iter().enumerate() {
        let owner = user(owner)?;
        let body = json!({ "id": "new", "creatorID": "", "name": format!("stress {tag} {calendar}"), "color": "#7A8BA3", "members": [] });
        let created = client
            .call(
                client
                    .request(Method::POST, "/api/v1/calendars", owner)
                    .json(&body),
            )
            .await
            .expect_json(StatusCode::CREATED, "creating a calendar")?;
        let id = created["id"]
            .as_str()
            .and_then(|id| Uuid::parse_str(id).ok())
            .ok_or_else(|| StressError::Invalid("a created calendar has no id".into()))?;
        layout.calendars[calendar] = id;
        let body = json!({ "id": "new", "calendarID": id, "expiresAt": null, "maxUses": null });
        let invite = client
            .call(
                client
                    .request(Method::POST, "/api/v1/calendars/invites", owner)
                    .json(&body),
            )
            .await
            .expect_json(StatusCode::CREATED, "creating an invite")?;
        let token = invite["id"]
            .as_str()
            .ok_or_else(|| StressError::Invalid("an invite has no token".into()))?
            .to_owned();
        let joining: Vec<(usize, Role)> = layout
            .members(calendar)
            .iter()
            .filter_map(|u| Some((*u, *layout.roles[*u].get(&calendar)?)))
            .filter(|(_, role)| *role != Role::Owner)
            .collect();
        let token = Arc::new(token);
        stream::iter(joining)
            .map(|(member, role)| {
                let token = token.clone();
                async move {
                    let member = user(member)?;
                    let path = format!("/api/v1/calendars/members/{id}");
                    let join = client.request(Method::POST, &path, member);
                    client
                        .call(join.json(&json!({ "token": token.as_str() })))
                        .await
                        .expect_json(StatusCode::OK, "joining a calendar")?;
                    if role == Role::Editor {
                        let path = format!("/api/v1/calendars/{id}/members/{}", member.id);
                        let promote = client.request(Method::PUT, &path, owner);
                        client
                            .call(promote.json(&json!({ "role": "editor" })))
                            .await
                            .expect_status(StatusCode::OK, "making a member editor")?;
                    }
                    Ok::<(), StressError>(())
                }
            })
            .buffer_unordered(PARALLEL)
            .try_collect::<Vec<()>>()
            .await?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn spread_sharing_gives_everyone_two_calendars_to_edit_and_one_to_view() {
        let layout = Layout::plan(10, 5, Sharing::Spread);
        assert_eq!(layout.owners, vec![0, 1, 2, 3, 4]);
        assert_eq!(layout.editable(7), vec![2, 3]);
        assert_eq!(layout.visible(7), vec![2, 3, 4]);
        assert_eq!(layout.roles[0][&0], Role::Owner);
        assert_eq!(layout.roles[5][&0], Role::Editor);
        assert_eq!(layout.members(0), &[0, 3, 4, 5, 8, 9]);
    }

    #[test]
    fn one_calendar_is_edited_by_everyone() {
        let layout = Layout::plan(4, 1, Sharing::Spread);
        assert_eq!(layout.members(0), &[0, 1, 2, 3]);
        assert!((0..4).all(|u| layout.editable(u) == vec![0]));
        let viewers = Layout::plan(3, 1, Sharing::Everyone(Role::Viewer));
        assert_eq!(viewers.roles[2][&0], Role::Viewer);
        assert_eq!(viewers.editable(2), Vec::<usize>::new());
    }
}
