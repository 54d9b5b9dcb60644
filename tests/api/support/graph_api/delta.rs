//! `calendarView/delta`: rounds that page with `@odata.nextLink` (`$skiptoken`) and end
//! with `@odata.deltaLink` (`$deltatoken`). The window is fixed by the first request of a
//! round and travels inside the tokens; a later round returns what changed since the
//! deltaLink was issued (changed items in full, deleted ones and those that left the
//! window as `@removed`). Tokens can be made to answer 410 + `Location` or
//! `syncStateNotFound`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Reset;
use super::events::{find, view};
use super::render::{View, render, render_delta_occurrence};
use super::reply::{Failure, Reply};
use super::state::{DeltaItem, DeltaToken, Kind, Round, Snapshot, State, TokenKind, random_text};
use super::times::{format_query_instant, parse_query_instant};

/// Query options calendarView delta does not support.
const UNSUPPORTED: &[&str] = &[
    "$select", "$filter", "$orderby", "$expand", "$search", "$top", "$skip", "$count",
];

/// A delta request on `calendar_id` (already checked to be the caller's).
pub(super) fn delta(
    state: &mut State,
    calendar_id: &str,
    path: &str,
    query: &[(String, String)],
    view_of: &View,
    page_size: usize,
) -> Reply {
    let option = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let refused: Vec<&str> = UNSUPPORTED
        .iter()
        .copied()
        .filter(|o| option(o).is_some())
        .collect();
    if !refused.is_empty() {
        return Failure::new(
            400,
            "ErrorInvalidUrlQuery",
            format!(
                "The following parameters are not supported with change tracking over the 'CalendarView' resource: '{}'.",
                refused.join(", ")
            ),
        )
        .into();
    }
    let token = option("$skiptoken").map(|t| ("skip", t)).or_else(|| {
        option("$deltatoken")
            .filter(|t| !t.is_empty())
            .map(|t| ("delta", t))
    });
    if let Some(("skip", token)) = token
        && let Some(DeltaToken {
            kind: TokenKind::Skip { round, .. },
            ..
        }) = state.delta_tokens.get(token)
        && let Some(reset) = state.faults.reset_next_page.take()
    {
        let snapshot = state.rounds[*round].snapshot.clone();
        return reset_reply(state, reset, &snapshot);
    }
    let (round, offset) = match token {
        Some((_, token)) => match state.delta_tokens.get(token) {
            None => {
                return Failure::new(400, "syncStateNotFound", "The sync state is not found.")
                    .into();
            }
            Some(DeltaToken {
                reset: Some(reset),
                kind,
            }) => {
                let snapshot = match kind {
                    TokenKind::Skip { round, .. } => &state.rounds[*round].snapshot,
                    TokenKind::Delta(snapshot) => snapshot,
                };
                return reset_reply(state, *reset, snapshot);
            }
            Some(DeltaToken {
                kind: TokenKind::Skip { round, offset },
                ..
            }) => (*round, *offset),
            Some(DeltaToken {
                kind: TokenKind::Delta(snapshot),
                ..
            }) => {
                let snapshot = snapshot.clone();
                if snapshot.calendar_id != calendar_id {
                    return Failure::new(400, "syncStateNotFound", "The sync state is not found.")
                        .into();
                }
                (start_round(state, snapshot, true), 0)
            }
        },
        None => {
            let (Some(from), Some(to)) = (option("startDateTime"), option("endDateTime")) else {
                return Failure::new(
                    400,
                    "ErrorInvalidParameter",
                    "This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.",
                )
                .into();
            };
            let (Some(from), Some(to)) = (parse_query_instant(from), parse_query_instant(to))
            else {
                return Failure::new(
                    400,
                    "ErrorInvalidParameter",
                    "The value of StartDateTime or EndDateTime is not a valid date and time.",
                )
                .into();
            };
            if to <= from {
                return Failure::new(
                    400,
                    "ErrorInvalidParameter",
                    "EndDateTime must be after StartDateTime.",
                )
                .into();
            }
            let snapshot = Snapshot {
                calendar_id: calendar_id.to_owned(),
                path: path.to_owned(),
                window: (from, to),
                known: BTreeMap::new(),
            };
            (start_round(state, snapshot, false), 0)
        }
    };
    if state
        .calendar(&state.rounds[round].snapshot.calendar_id)
        .is_none()
    {
        return Failure::not_found().into();
    }
    serve_page(state, round, offset, view_of, page_size)
}

/// Starts a round: everything in the window (first round) or what changed since
/// `snapshot.known` (later rounds).
fn start_round(state: &mut State, snapshot: Snapshot, incremental: bool) -> usize {
    let current = view(state, &snapshot.calendar_id, snapshot.window);
    let replay = std::mem::take(&mut state.faults.replay_next_round);
    let mut items = Vec::new();
    for item in &current {
        let changed = snapshot.known.get(&item.id) != Some(&item.version);
        if !incremental || changed || replay {
            items.push(DeltaItem::Live(item.id.clone()));
        }
    }
    if incremental {
        for id in snapshot.known.keys() {
            if !current.iter().any(|item| &item.id == id) {
                items.push(DeltaItem::Removed(id.clone()));
            }
        }
    } else if replay {
        let again: Vec<DeltaItem> = items.clone();
        items.extend(again);
    }
    let known = current
        .into_iter()
        .map(|item| (item.id, item.version))
        .collect();
    state.rounds.push(Round {
        items,
        snapshot: Snapshot { known, ..snapshot },
        empty_first_page: state.faults.empty_first_page,
    });
    state.rounds.len() - 1
}

fn link(state: &State, snapshot: &Snapshot, option: &str, token: &str) -> String {
    format!("{}{}?{option}={token}", state.base, snapshot.path)
}

fn removed(id: &str) -> Value {
    json!({
        "@odata.type": "#microsoft.graph.event",
        "id": id,
        "@removed": {"reason": "deleted"},
    })
}

fn serve_page(
    state: &mut State,
    round: usize,
    offset: usize,
    view_of: &View,
    page_size: usize,
) -> Reply {
    let page_size = page_size.max(1);
    let (values, next) = {
        let this = &state.rounds[round];
        if this.empty_first_page && offset == 0 {
            (Vec::new(), Some(usize::MAX))
        } else {
            let start = if offset == usize::MAX { 0 } else { offset };
            let end = (start + page_size).min(this.items.len());
            let values: Vec<Value> = this.items[start..end]
                .iter()
                .map(|item| match item {
                    DeltaItem::Removed(id) => removed(id),
                    DeltaItem::Live(id) => match find(state, id) {
                        None => removed(id),
                        Some(record) if matches!(record.kind, Kind::Occurrence { .. }) => {
                            render_delta_occurrence(&record, view_of)
                        }
                        Some(record) => render(state, &record, view_of),
                    },
                })
                .collect();
            (values, (end < this.items.len()).then_some(end))
        }
    };
    let snapshot = state.rounds[round].snapshot.clone();
    let (name, url) = match next {
        Some(next_offset) => {
            let token = random_text(48);
            state.delta_tokens.insert(
                token.clone(),
                DeltaToken {
                    kind: TokenKind::Skip {
                        round,
                        offset: next_offset,
                    },
                    reset: None,
                },
            );
            (
                "@odata.nextLink",
                link(state, &snapshot, "$skiptoken", &token),
            )
        }
        None => {
            let token = random_text(48);
            let url = link(state, &snapshot, "$deltatoken", &token);
            state.delta_tokens.insert(
                token,
                DeltaToken {
                    kind: TokenKind::Delta(snapshot),
                    reset: None,
                },
            );
            ("@odata.deltaLink", url)
        }
    };
    let mut body = json!({
        "@odata.context": format!("{}/v1.0/$metadata#Collection(event)", state.base),
        "value": values,
    });
    body[name] = json!(url);
    Reply::json(200, body)
}

/// The URL a round starts from (with an empty `$deltatoken`), for a 410's `Location`.
fn initial_url(state: &State, snapshot: &Snapshot) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("startDateTime", &format_query_instant(snapshot.window.0))
        .append_pair("endDateTime", &format_query_instant(snapshot.window.1))
        .finish();
    format!("{}{}?{query}&$deltatoken=", state.base, snapshot.path)
}

fn reset_reply(state: &State, reset: Reset, snapshot: &Snapshot) -> Reply {
    match reset {
        Reset::Gone => Reply::from(Failure::new(
            410,
            "SyncStateNotFound",
            "The sync state generation is not found. Please restart the sync from the beginning.",
        ))
        .header("Location", initial_url(state, snapshot)),
        Reset::SyncStateNotFound => {
            Failure::new(400, "syncStateNotFound", "The sync state is not found.").into()
        }
    }
}
