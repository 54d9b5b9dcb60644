//! The OpenAPI 3.1 document of every route Bowline answers under `/api`, served at
//! `GET /api/v1/openapi.json` (public).
//!
//! Each resource module describes its own operations next to their filters
//! (`#[utoipa::path]` on the route function, `ToSchema` on the request and response types)
//! and gathers them in a `pub struct Api` deriving [`OpenApi`]; [`document`] merges those,
//! adds the security schemes, and gives every operation the error answers any route can
//! give (`{error, requestId}`), so a resource module lists only its own statuses.

pub mod frames;
pub mod links;
pub mod schemas;

use bytes::Bytes;
use utoipa::OpenApi;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::OneOfBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, ResponseBuilder};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use crate::http::endpoint::endpoint;

/// Security scheme: `Authorization: Bearer <session token>`.
pub const BEARER: &str = "bearer";
/// Security scheme: better-auth's signed session cookie (browsers).
pub const COOKIE: &str = "cookie";
/// Security scheme: a federation member token as `Authorization: Bearer <token>`.
pub const MEMBER_TOKEN: &str = "memberToken";

/// The shared error response of the application routes (`#/components/responses/Error`).
const ERROR_RESPONSE: &str = "Error";
/// The shared error response of `/api/auth/*` (better-auth's `{message, code}`).
const AUTH_ERROR_RESPONSE: &str = "AuthError";
/// The 404 of `/api/auth/*`: better-auth's body from a handler, or the application's for
/// a path below `/api/auth/` that names no route (`/callback/<unknown provider>`).
const AUTH_NOT_FOUND_RESPONSE: &str = "AuthNotFound";

/// The document's frame: title, version, tags, and the schemas no single resource owns.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bowline",
        description = "The shared-calendar server's API: REST under /api/v1, the live \
                       stream at /api/stream and better-auth's wire under /api/auth.",
        license(name = "AGPL-3.0-or-later", identifier = "AGPL-3.0-or-later"),
    ),
    paths(openapi_route),
    components(schemas(schemas::ErrorBody, schemas::AuthErrorBody)),
    tags(
        (name = "server", description = "Server identity, health and this document."),
    )
)]
struct Frame;

/// The whole document: the frame, every resource's operations, security schemes and the
/// shared error answers.
pub fn document() -> Document {
    let mut doc = Frame::openapi();
    for part in parts() {
        doc.merge(part);
    }
    add_security_schemes(&mut doc);
    add_error_answers(&mut doc);
    doc
}

/// Each resource module's operations and the schemas they use.
fn parts() -> [Document; 21] {
    use super::*;
    [
        auth_routes::Api::openapi(),
        stream::Api::openapi(),
        server_info::Api::openapi(),
        events::Api::openapi(),
        event_reads::Api::openapi(),
        calendars::Api::openapi(),
        members::Api::openapi(),
        invites::Api::openapi(),
        invite_preview::Api::openapi(),
        ics::Api::openapi(),
        users::Api::openapi(),
        settings::Api::openapi(),
        avatars::Api::openapi(),
        connections::Api::openapi(),
        provider_accounts::Api::openapi(),
        federation::Api::openapi(),
        reminders::Api::openapi(),
        pages::Api::openapi(),
        polls::Api::openapi(),
        event_pages::Api::openapi(),
        push::Api::openapi(),
    ]
}

/// The bearer, cookie and member-token schemes.
fn add_security_schemes(doc: &mut Document) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "A session token from sign-in (the `set-auth-token` header or the \
                     `token` field of the sign-in answer).",
                ))
                .build(),
        ),
    );
    components.add_security_scheme(
        COOKIE,
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            crate::auth::cookies::SESSION_TOKEN,
            "better-auth's signed session cookie (`__Secure-` prefixed on https); a change \
             also needs a trusted Origin.",
        ))),
    );
    components.add_security_scheme(
        MEMBER_TOKEN,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "A federation member token (`POST /api/v1/federation/accept`), for a \
                     connected server acting for one of its users within the calendars its \
                     shadow was admitted to: only the operations that list this scheme take \
                     it; every other operation answers it 403.",
                ))
                .build(),
        ),
    );
}

/// Gives every operation the error answers any route can give, where it does not describe
/// them itself: 400 (malformed parameters or body), 404, 408, 413, 415, 429 and 503 always;
/// 401 and 403 on operations that take a credential. Application routes answer
/// `{error, requestId}`; `/api/auth/*` answers better-auth's `{message, code}`, except for
/// the refusals of the pipeline in front of it (408, 413, 503).
fn add_error_answers(doc: &mut Document) {
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema, description) in [
        (
            ERROR_RESPONSE,
            "ErrorBody",
            "The request was refused: what went wrong, and the request's id.",
        ),
        (
            AUTH_ERROR_RESPONSE,
            "AuthErrorBody",
            "The request was refused: what went wrong, with better-auth's code.",
        ),
    ] {
        components.responses.insert(
            name.to_owned(),
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name(schema)))
                        .build(),
                )
                .build()
                .into(),
        );
    }
    components.responses.insert(
        AUTH_NOT_FOUND_RESPONSE.to_owned(),
        ResponseBuilder::new()
            .description("Nothing here: better-auth's body, or `{error, requestId}` for a path that names no route.")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(
                        OneOfBuilder::new()
                            .item(Ref::from_schema_name("AuthErrorBody"))
                            .item(Ref::from_schema_name("ErrorBody")),
                    ))
                    .build(),
            )
            .build()
            .into(),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let auth = path.starts_with("/api/auth/");
        for operation in operations(item) {
            let secured = operation
                .security
                .as_ref()
                .is_some_and(|requirements| !requirements.is_empty());
            let mut statuses = vec!["400", "404", "408", "413", "415", "429", "503"];
            if secured {
                statuses.extend(["401", "403"]);
            }
            for status in statuses {
                // A body that came too slowly or too big, or a server that is not ready, is
                // refused before the authentication subsystem sees the request.
                let response = match status {
                    _ if !auth => ERROR_RESPONSE,
                    "404" => AUTH_NOT_FOUND_RESPONSE,
                    "408" | "413" | "503" => ERROR_RESPONSE,
                    _ => AUTH_ERROR_RESPONSE,
                };
                operation
                    .responses
                    .responses
                    .entry(status.to_owned())
                    .or_insert_with(|| Ref::from_response_name(response).into());
            }
        }
    }
}

/// The operations of one path.
fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.options.as_mut(),
        item.head.as_mut(),
        item.patch.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// `GET /api/v1/openapi.json`: the document, rendered once per server.
pub fn routes() -> BoxedFilter<(Response,)> {
    let mut rendered = serde_json::to_value(document()).unwrap_or_default();
    links::add_links(&mut rendered);
    let json = Bytes::from(rendered.to_string());
    openapi_route(json).boxed()
}

/// GET /api/v1/openapi.json — this document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "server",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document.", body = Object),
    )
)]
fn openapi_route(
    json: Bytes,
) -> impl Filter<Extract = (Response,), Error = warp::Rejection> + Clone {
    endpoint!("api" / "v1" / "openapi.json")
        .and(warp::get())
        .map(move || {
            let mut response = Response::new(json.clone().into());
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            response
        })
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Merging keeps the first schema of a name: two different types of one name would
    /// leave one of them described wrongly.
    #[test]
    fn schema_names_are_unique_across_resources() {
        let mut seen: HashMap<String, serde_json::Value> = HashMap::new();
        for part in std::iter::once(Frame::openapi()).chain(parts()) {
            let Some(components) = part.components else {
                continue;
            };
            for (name, schema) in components.schemas {
                let schema = serde_json::to_value(schema).expect("schema");
                if let Some(earlier) = seen.get(&name) {
                    assert_eq!(earlier, &schema, "two different schemas are named {name}");
                } else {
                    seen.insert(name, schema);
                }
            }
        }
        assert!(seen.len() > 50, "{} schemas", seen.len());
    }
}
