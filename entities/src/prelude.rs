//! Singular PascalCase aliases for every entity.

pub use crate::scheduled_tasks::Entity as ScheduledTask;
