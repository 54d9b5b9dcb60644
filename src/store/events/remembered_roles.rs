//! [`RememberedRoles`]: what a calendar actor remembers of the memberships its batches of
//! creations were authorized by, so that the next batch need not read them again before
//! it inserts. Nothing here is trusted on its own: a batch authorized from it carries the
//! versions it relies on into its insert text ([`crate::store::events::calendar_roles::roles_unchanged_check`]),
//! where the database refuses the whole batch if any of them moved; the actor then forgets
//! everything and reads the roles again.

use std::sync::{Mutex, PoisonError};

use super::calendar_roles::CalendarRoles;
use crate::domain::ids::CalendarId;

/// Most calendars remembered at once (past it, the actor starts over).
const MOST_KNOWN: usize = 64;

/// What one calendar actor remembers: the calendars read with their versions, and the
/// members of those that have some (it handles one command at a time; the lock is only
/// there because a retried command's closure may borrow it only shared).
#[derive(Debug, Default)]
pub struct RememberedRoles {
    read: Mutex<CalendarRoles>,
}

impl RememberedRoles {
    /// The roles of `home` and `calendars`, with the versions they were read at, if every
    /// one of them is known.
    pub fn get(&self, home: CalendarId, calendars: &[CalendarId]) -> Option<CalendarRoles> {
        let known = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        let mut roles = CalendarRoles::default();
        for calendar in std::iter::once(&home).chain(calendars) {
            roles
                .versions
                .insert(*calendar, *known.versions.get(calendar)?);
            if let Some(members) = known.members.get(calendar) {
                roles.members.insert(*calendar, members.clone());
            }
        }
        Some(roles)
    }

    /// Remembers the calendars of `roles` that were read with their versions.
    pub fn learn(&self, roles: &CalendarRoles) {
        let mut known = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if known.versions.len() + roles.versions.len() > MOST_KNOWN {
            *known = CalendarRoles::default();
        }
        for (calendar, version) in &roles.versions {
            known.versions.insert(*calendar, *version);
            match roles.members.get(calendar) {
                Some(members) => known.members.insert(*calendar, members.clone()),
                None => known.members.remove(calendar),
            };
        }
    }

    /// Forgets everything (a version moved).
    pub fn forget(&self) {
        *self.read.lock().unwrap_or_else(PoisonError::into_inner) = CalendarRoles::default();
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::domain::ids::UserId;
    use crate::domain::roles::Role;

    fn read(versions: &[(CalendarId, i64)], members: &[(CalendarId, &str, Role)]) -> CalendarRoles {
        let mut roles = CalendarRoles {
            versions: versions.iter().copied().collect(),
            ..CalendarRoles::default()
        };
        let mut lists: HashMap<CalendarId, Vec<(UserId, Role)>> = HashMap::new();
        for (calendar, user, role) in members {
            lists
                .entry(*calendar)
                .or_default()
                .push((UserId::new(*user), *role));
        }
        roles.members = lists.into_iter().map(|(c, l)| (c, l.into())).collect();
        roles
    }

    #[test]
    fn known_only_when_every_calendar_was_read_with_its_version() {
        let (home, other, unread) = (
            CalendarId::generate(),
            CalendarId::generate(),
            CalendarId::generate(),
        );
        let known = RememberedRoles::default();
        assert!(known.get(home, &[home]).is_none());
        known.learn(&read(
            &[(home, 3), (other, 7)],
            &[(home, "ana", Role::Owner)],
        ));
        let roles = known.get(home, &[home, other]).expect("both read");
        assert_eq!(roles.versions, HashMap::from([(home, 3), (other, 7)]));
        assert_eq!(
            roles.members[&home].as_ref(),
            &[(UserId::new("ana"), Role::Owner)]
        );
        assert!(!roles.members.contains_key(&other));
        assert!(known.get(home, &[unread]).is_none());
        known.forget();
        assert!(known.get(home, &[home]).is_none());
    }

    #[test]
    fn calendars_read_without_versions_are_never_known() {
        let home = CalendarId::generate();
        let known = RememberedRoles::default();
        known.learn(&read(&[], &[(home, "ana", Role::Owner)]));
        assert!(known.get(home, &[home]).is_none());
    }
}
