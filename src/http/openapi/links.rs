//! Links between operations (OpenAPI `links`): what one answer gives the next request — the
//! id of the event, calendar, invite or Page just created, or the user just signed up — so
//! client generators and stateful fuzzers can follow a resource from its creation.

use serde_json::{Map, Value, json};

/// Parameters of a link: (name, runtime expression).
type Parameters = &'static [(&'static str, &'static str)];

/// The answer `status` of operation `from` and the operations it links to: each with its
/// parameters and, where given, its body.
struct Source {
    from: &'static str,
    status: &'static str,
    targets: &'static [(&'static str, Parameters, Option<&'static str>)],
}

const EVENT: Parameters = &[("eventId", "$response.body#/id")];
const CALENDAR_ID: Parameters = &[("calendarId", "$response.body#/id")];
const ID: Parameters = &[("id", "$response.body#/id")];
const INVITE: Parameters = &[("inviteId", "$response.body#/id")];
/// The whole answer as the next request's body (an event or calendar sent back).
const WHOLE: Option<&str> = Some("$response.body");

/// The links, by operation id.
const LINKS: &[Source] = &[
    Source {
        from: "create_event",
        status: "201",
        targets: &[
            ("list_attendees", EVENT, None),
            ("set_attendance", EVENT, None),
            ("link_event", EVENT, None),
            ("fork_event", EVENT, None),
            ("set_event_rule", EVENT, None),
            ("clear_event_rule", EVENT, None),
            ("update_event", &[], WHOLE),
            ("delete_event", &[], WHOLE),
        ],
    },
    Source {
        from: "create_calendar",
        status: "201",
        targets: &[
            ("get_calendar", ID, None),
            ("export", ID, None),
            ("list_members", CALENDAR_ID, None),
            ("list_invites", CALENDAR_ID, None),
            ("set_calendar_rule", CALENDAR_ID, None),
            ("leave", CALENDAR_ID, None),
            (
                "set_role",
                &[
                    ("calendarId", "$response.body#/id"),
                    ("userId", "$response.body#/creatorID"),
                ],
                None,
            ),
            ("update_calendar", &[], WHOLE),
            ("delete_calendar", &[], WHOLE),
        ],
    },
    Source {
        from: "create_invite",
        status: "201",
        targets: &[
            ("revoke_invite", INVITE, None),
            ("send_invite", INVITE, None),
        ],
    },
    Source {
        from: "create_page",
        status: "201",
        targets: &[
            ("read_page", ID, None),
            ("save_page", ID, None),
            ("delete_page", ID, None),
        ],
    },
    Source {
        from: "sign_up",
        status: "200",
        targets: &[(
            "download_avatar",
            &[("userId", "$response.body#/user/id")],
            None,
        )],
    },
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
        for source in LINKS.iter().filter(|source| source.from == id) {
            let Some(response) = operation
                .pointer_mut(&format!("/responses/{}", source.status))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let links = response.entry("links").or_insert_with(|| json!({}));
            for (to, parameters, body) in source.targets {
                let parameters: Map<String, Value> = parameters
                    .iter()
                    .map(|(name, expression)| ((*name).to_owned(), json!(expression)))
                    .collect();
                let mut target = json!({ "operationId": to });
                if !parameters.is_empty() {
                    target["parameters"] = Value::Object(parameters);
                }
                if let Some(body) = body {
                    target["requestBody"] = json!(body);
                }
                links[*to] = target;
            }
        }
    }
}
