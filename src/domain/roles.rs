//! Roles and the permission matrix.
//!
//! | role   | allowed actions                                               |
//! |--------|---------------------------------------------------------------|
//! | owner  | editCalendar, deleteCalendar, manageMembers, editEvents, invite |
//! | editor | editEvents, invite                                            |
//! | viewer | none (read-only; may answer attendance)                       |

use std::fmt;

/// A member's role in a calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The creator: everything.
    Owner,
    /// Edits events and invites.
    Editor,
    /// Reads.
    Viewer,
}

/// What a member may try to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Rename or recolor the calendar.
    EditCalendar,
    /// Delete the calendar.
    DeleteCalendar,
    /// Change roles, remove members.
    ManageMembers,
    /// Create, change, delete and link events.
    EditEvents,
    /// Create, list, revoke and send invites.
    Invite,
}

impl Role {
    /// Parses `owner`, `editor` or `viewer`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "owner" => Some(Self::Owner),
            "editor" => Some(Self::Editor),
            "viewer" => Some(Self::Viewer),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Editor => "editor",
            Self::Viewer => "viewer",
        }
    }

    /// The permission matrix.
    pub fn allows(self, action: Action) -> bool {
        match self {
            Self::Owner => true,
            Self::Editor => matches!(action, Action::EditEvents | Action::Invite),
            Self::Viewer => false,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Action {
    /// The spec's name of the action.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EditCalendar => "editCalendar",
            Self::DeleteCalendar => "deleteCalendar",
            Self::ManageMembers => "manageMembers",
            Self::EditEvents => "editEvents",
            Self::Invite => "invite",
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix() {
        use Action::*;
        let all = [
            EditCalendar,
            DeleteCalendar,
            ManageMembers,
            EditEvents,
            Invite,
        ];
        for action in all {
            assert!(Role::Owner.allows(action));
            assert!(!Role::Viewer.allows(action));
            assert_eq!(
                Role::Editor.allows(action),
                matches!(action, EditEvents | Invite)
            );
        }
        assert_eq!(Role::parse("editor"), Some(Role::Editor));
        assert_eq!(Role::parse("admin"), None);
        assert!(
            Role::Owner < Role::Editor && Role::Editor < Role::Viewer,
            "listing order"
        );
    }
}
