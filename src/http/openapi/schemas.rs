//! Schemas of the document that no single resource owns: the error body.

use serde::Serialize;
use utoipa::ToSchema;

/// Every refused request's body: what went wrong and the request's id (also in the
/// `x-request-id` header and on the request's log line). Some refusals add fields of their
/// own (a 409 on a stale revision carries `current`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorBody {
    /// What went wrong, for people.
    pub error: String,
    /// The request's id.
    pub request_id: String,
}

/// A 409 of a compare-and-swap that lost: a stable code, the explanation, and the state to
/// merge with.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaleRevision<T> {
    /// A stable code, e.g. `PAGE_CONFLICT`.
    pub error: String,
    /// What went wrong, for people.
    pub message: String,
    /// The request's id.
    pub request_id: String,
    /// The state now, which the client merges its change into (`null` when there is none
    /// to merge with, e.g. a write that lost a race with a removal).
    #[schema(nullable)]
    pub current: Option<T>,
}

/// A refused `/api/auth/*` request's body, as better-auth writes it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthErrorBody {
    /// What went wrong, for people.
    pub message: String,
    /// better-auth's stable code (`INVALID_EMAIL_OR_PASSWORD`, ...), where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}
