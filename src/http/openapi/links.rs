//! Links between operations (OpenAPI `links`): what one answer gives the next request — the
//! id of the event, calendar, invite or Page just created, or the user just signed up — so
//! client generators and stateful fuzzers can follow a resource from its creation.

use serde_json::{Map, Value, json};

/// One link: from `status` of operation `from`, the operation `to` with its parameters
/// (name, runtime expression) and, where given, its body.
struct Link {
    from: &'static str,
    status: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
    body: Option<&'static str>,
}

const fn link(
    from: &'static str,
    status: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
) -> Link {
    Link {
        from,
        status,
        to,
        parameters,
        body: None,
    }
}

const EVENT: &[(&str, &str)] = &[("eventId", "$response.body#/id")];
const CALENDAR_ID: &[(&str, &str)] = &[("calendarId", "$response.body#/id")];
const ID: &[(&str, &str)] = &[("id", "$response.body#/id")];
const INVITE: &[(&str, &str)] = &[("inviteId", "$response.body#/id")];

/// The links, by operation id.
const LINKS: &[Link] = &[
    link("create_event", "201", "list_attendees", EVENT),
    link("create_event", "201", "set_attendance", EVENT),
    link("create_event", "201", "link_event", EVENT),
    link("create_event", "201", "fork_event", EVENT),
    link("create_event", "201", "set_event_rule", EVENT),
    link("create_event", "201", "clear_event_rule", EVENT),
    Link {
        body: Some("$response.body"),
        ..link("create_event", "201", "update_event", &[])
    },
    Link {
        body: Some("$response.body"),
        ..link("create_event", "201", "delete_event", &[])
    },
    link("create_calendar", "201", "get_calendar", ID),
    link("create_calendar", "201", "export", ID),
    link("create_calendar", "201", "list_members", CALENDAR_ID),
    link("create_calendar", "201", "list_invites", CALENDAR_ID),
    link("create_calendar", "201", "set_calendar_rule", CALENDAR_ID),
    link("create_calendar", "201", "leave", CALENDAR_ID),
    link(
        "create_calendar",
        "201",
        "set_role",
        &[
            ("calendarId", "$response.body#/id"),
            ("userId", "$response.body#/creatorID"),
        ],
    ),
    Link {
        body: Some("$response.body"),
        ..link("create_calendar", "201", "update_calendar", &[])
    },
    Link {
        body: Some("$response.body"),
        ..link("create_calendar", "201", "delete_calendar", &[])
    },
    link("create_invite", "201", "revoke_invite", INVITE),
    link("create_invite", "201", "send_invite", INVITE),
    link("create_page", "201", "read_page", ID),
    link("create_page", "201", "save_page", ID),
    link("create_page", "201", "delete_page", ID),
    link(
        "sign_up",
        "200",
        "download_avatar",
        &[("userId", "$response.body#/user/id")],
    ),
];

/// Adds [`LINKS`] to the answers they start from, in the rendered document (utoipa's
/// `Link` writes its fields in snake case, which OpenAPI does not read). A link whose
/// operation or answer the document lacks is left out (the document test checks that every
/// link names an operation).
pub fn add_links(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for operation in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some(id) = operation["operationId"].as_str().map(str::to_owned) else {
            continue;
        };
        for link in LINKS.iter().filter(|link| link.from == id) {
            let Some(response) = operation
                .pointer_mut(&format!("/responses/{}", link.status))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let parameters: Map<String, Value> = link
                .parameters
                .iter()
                .map(|(name, expression)| ((*name).to_owned(), json!(expression)))
                .collect();
            let mut target = json!({ "operationId": link.to });
            if !parameters.is_empty() {
                target["parameters"] = Value::Object(parameters);
            }
            if let Some(body) = link.body {
                target["requestBody"] = json!(body);
            }
            let links = response.entry("links").or_insert_with(|| json!({}));
            links[link.to] = target;
        }
    }
}
