//! Singular PascalCase aliases for every entity.

pub use crate::accounts::Entity as Account;
pub use crate::avatars::Entity as Avatar;
pub use crate::calendar_events::Entity as CalendarEvent;
pub use crate::calendar_members::Entity as CalendarMember;
pub use crate::calendars::Entity as Calendar;
pub use crate::event_attendees::Entity as EventAttendee;
pub use crate::event_reminders::Entity as EventReminder;
pub use crate::event_view_changes::Entity as EventViewChange;
pub use crate::event_visibility_losses::Entity as EventVisibilityLoss;
pub use crate::events::Entity as Event;
pub use crate::federation_connections::Entity as FederationConnection;
pub use crate::invites::Entity as Invite;
pub use crate::member_tokens::Entity as MemberToken;
pub use crate::pages::Entity as Page;
pub use crate::pending_notifications::Entity as PendingNotification;
pub use crate::scheduled_tasks::Entity as ScheduledTask;
pub use crate::server_secrets::Entity as ServerSecret;
pub use crate::sessions::Entity as Session;
pub use crate::user_settings::Entity as UserSetting;
pub use crate::users::Entity as User;
pub use crate::verifications::Entity as Verification;
