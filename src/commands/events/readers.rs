//! Who sees an event: the members of the calendars it is linked into, each with the
//! calendars they see it through ([`Readers`]), read from the database or from memberships
//! a write has already read, and who lost sight of it between two such sets.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::store::Connection;

use crate::domain::ids::{CalendarId, UserId};
use crate::domain::roles::{Action, Role};
use crate::error::AppError;
use crate::store::members;

/// The readers of an event linked to some calendars: user → their calendars among them,
/// in link order.
pub type Readers = BTreeMap<UserId, Vec<CalendarId>>;

/// Who sees an event linked to `links`, given each calendar's members (`members_of`).
pub fn readers_among<'a, I>(links: &[CalendarId], members_of: impl Fn(&CalendarId) -> I) -> Readers
where
    I: IntoIterator<Item = &'a UserId>,
{
    let mut readers = Readers::new();
    for calendar in links {
        for user in members_of(calendar) {
            readers.entry(user.clone()).or_default().push(*calendar);
        }
    }
    readers
}

/// Who sees an event linked to `links`, and through which calendars.
pub async fn readers(db: &impl Connection, links: &[CalendarId]) -> Result<Readers, AppError> {
    let by_calendar = members::ids_by_calendar(db, links).await?;
    Ok(readers_among(links, |calendar| {
        by_calendar.get(calendar).into_iter().flatten()
    }))
}

/// The users in `before` who are not in `after`.
pub fn lost_readers<'a>(before: &'a Readers, after: &Readers) -> BTreeSet<&'a UserId> {
    before
        .keys()
        .filter(|user| !after.contains_key(*user))
        .collect()
}

/// The members and roles of the calendars an event write touches, read once
/// ([`members::roles_in`]) and asked in memory for roles and readers.
pub struct Memberships {
    by_calendar: HashMap<CalendarId, Vec<(UserId, Role)>>,
}

impl Memberships {
    /// Reads the members of `calendars`.
    pub async fn of(db: &impl Connection, calendars: &[CalendarId]) -> Result<Self, AppError> {
        Ok(Self {
            by_calendar: members::roles_in(db, calendars).await?,
        })
    }

    /// The members and roles read by a write (each calendar's, [`members::roles_in`]).
    pub fn from_roles(by_calendar: HashMap<CalendarId, Vec<(UserId, Role)>>) -> Self {
        Self { by_calendar }
    }

    /// `user`'s role in `calendar` (`None`: not a member, or a calendar not read).
    pub fn role(&self, calendar: &CalendarId, user: &UserId) -> Option<Role> {
        self.by_calendar
            .get(calendar)?
            .iter()
            .find(|(member, _)| member == user)
            .map(|(_, role)| *role)
    }

    /// `user`'s roles among `calendars`.
    pub fn roles(&self, user: &UserId, calendars: &[CalendarId]) -> BTreeMap<CalendarId, Role> {
        calendars
            .iter()
            .filter_map(|c| Some((*c, self.role(c, user)?)))
            .collect()
    }

    /// Whether `actor` may change `event`'s shared content: an editor of its home calendar,
    /// or, for an event whose home is gone, its creator while it is in one of the actor's
    /// calendars (`links`).
    pub fn may_edit(
        &self,
        event: &entities::events::Model,
        links: &[CalendarId],
        actor: &UserId,
    ) -> bool {
        match event.origin_calendar_id {
            Some(home) => self
                .role(&home, actor)
                .is_some_and(|role| role.allows(Action::EditEvents)),
            None => event.creator_id == *actor && !self.roles(actor, links).is_empty(),
        }
    }

    /// Who sees an event linked into `links` (of the calendars read).
    pub fn readers(&self, links: &[CalendarId]) -> Readers {
        readers_among(links, |calendar| {
            self.by_calendar
                .get(calendar)
                .into_iter()
                .flatten()
                .map(|(user, _)| user)
        })
    }
}
