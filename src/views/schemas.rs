//! The OpenAPI schemas of domain values the wire carries as plain strings: a member's role
//! and an attendance answer. The domain types stay free of the document; these mirror their
//! serialized forms under the same names.

use utoipa::ToSchema;

/// A member's role in a calendar.
#[derive(ToSchema)]
#[schema(as = Role, rename_all = "lowercase")]
#[allow(dead_code)] // only its schema is used
pub enum RoleSchema {
    /// The creator: everything.
    Owner,
    /// Edits events and invites.
    Editor,
    /// Reads.
    Viewer,
}

/// An attendance answer.
#[derive(ToSchema)]
#[schema(as = Attendance, rename_all = "lowercase")]
#[allow(dead_code)] // only its schema is used
pub enum AttendanceSchema {
    /// Going.
    Going,
    /// Maybe.
    Maybe,
    /// Declined.
    Declined,
    /// No answer (the row is removed).
    None,
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use crate::domain::events::Attendance;
    use crate::domain::roles::Role;

    fn values<T: ToSchema>() -> serde_json::Value {
        serde_json::to_value(T::schema()).expect("schema")["enum"].clone()
    }

    #[test]
    fn the_schemas_list_what_the_values_serialize_to() {
        let roles = [Role::Owner, Role::Editor, Role::Viewer].map(|role| serde_json::json!(role));
        assert_eq!(values::<RoleSchema>(), serde_json::json!(roles));
        let answers = [
            Attendance::Going,
            Attendance::Maybe,
            Attendance::Declined,
            Attendance::None,
        ]
        .map(|answer| serde_json::json!(answer));
        assert_eq!(values::<AttendanceSchema>(), serde_json::json!(answers));
        assert_eq!(RoleSchema::name(), "Role");
        assert_eq!(AttendanceSchema::name(), "Attendance");
    }
}
