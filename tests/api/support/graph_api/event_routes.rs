//! `/me/events` and the event collections of a calendar: get, create (with
//! `transactionId`), patch and delete with `If-Match`, listings, the calendar view and its
//! delta.

use serde_json::{Value, json};

use super::calendar_routes::own_calendar;
use super::delta::delta;
use super::events::{self, find, view};
use super::graph::{Answer, Call, body, context, page, query_option};
use super::render::render;
use super::reply::{Failure, Reply};
use super::state::{EventRecord, Kind};
use super::times::parse_query_instant;

pub(super) fn window(
    call: &Call<'_>,
) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>), Failure> {
    let parse = |name: &str| query_option(call, name).and_then(parse_query_instant);
    match (parse("startDateTime"), parse("endDateTime")) {
        (Some(from), Some(to)) if from < to => Ok((from, to)),
        _ => Err(Failure::new(
            400,
            "ErrorInvalidParameter",
            "This request requires a time window specified by the query string parameters StartDateTime and EndDateTime.",
        )),
    }
}

pub(super) fn calendar_view(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let window = window(call)?;
    let values: Vec<Value> = view(call.state, &calendar.id, window)
        .iter()
        .filter_map(|item| find(call.state, &item.id))
        .map(|record| render(call.state, &record, &call.view))
        .collect();
    Ok(page(
        call,
        values,
        10,
        format!("{}/v1.0/$metadata#Collection(event)", call.state.base),
    ))
}

pub(super) fn list_events(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let mut records: Vec<&EventRecord> = call
        .state
        .events
        .values()
        .filter(|e| {
            e.calendar_id == calendar.id && matches!(e.kind, Kind::Single | Kind::Master { .. })
        })
        .collect();
    records.sort_by_key(|e| e.seq);
    let values = records
        .into_iter()
        .map(|record| render(call.state, record, &call.view))
        .collect();
    Ok(page(
        call,
        values,
        10,
        format!("{}/v1.0/$metadata#Collection(event)", call.state.base),
    ))
}

pub(super) fn delta_view(call: &mut Call<'_>, id: &str) -> Answer {
    own_calendar(call, id)?;
    Ok(delta(
        call.state,
        id,
        &call.path,
        &call.query,
        &call.view,
        call.page_size.unwrap_or(50),
    ))
}

pub(super) fn event_reply(call: &Call<'_>, status: u16, id: &str) -> Answer {
    let record = find(call.state, id).ok_or_else(Failure::not_found)?;
    let mut body = render(call.state, &record, &call.view);
    body["@odata.context"] = json!(context(call, "events/$entity"));
    Ok(Reply::json(status, body))
}

pub(super) fn create_event(call: &mut Call<'_>, calendar_id: &str) -> Answer {
    let calendar = own_calendar(call, calendar_id)?;
    let body = body(call)?;
    if !calendar.can_edit {
        return Err(Failure::access_denied());
    }
    let id = events::create(call.state, calendar_id, &body, false)?;
    event_reply(call, 201, &id)
}

/// The caller's event `id` and whether its calendar can be written.
pub(super) fn own_event(call: &Call<'_>, id: &str) -> Result<(EventRecord, bool), Failure> {
    let record = find(call.state, id).ok_or_else(Failure::not_found)?;
    let calendar = own_calendar(call, &record.calendar_id)?;
    Ok((record, calendar.can_edit))
}

/// Checks `If-Match` against the current change key.
pub(super) fn precondition(call: &Call<'_>, record: &EventRecord) -> Result<(), Failure> {
    let Some(given) = call.if_match.as_deref() else {
        return Ok(());
    };
    let given = given.trim();
    let bare = given.trim_start_matches("W/").trim_matches('"');
    if given == "*" || bare == record.change_key {
        return Ok(());
    }
    Err(Failure::new(
        call.state.faults.conflict_status,
        "ErrorIrresolvableConflict",
        "The send or update operation could not be performed because the change key passed in the request does not match the current change key for the item.",
    ))
}

pub(super) fn get_event(call: &mut Call<'_>, id: &str) -> Answer {
    own_event(call, id)?;
    event_reply(call, 200, id)
}

pub(super) fn patch_event(call: &mut Call<'_>, id: &str) -> Answer {
    let (record, can_edit) = own_event(call, id)?;
    let body = body(call)?;
    precondition(call, &record)?;
    if !can_edit {
        return Err(Failure::access_denied());
    }
    events::patch(call.state, id, &body, false)?;
    event_reply(call, 200, id)
}

pub(super) fn delete_event(call: &mut Call<'_>, id: &str) -> Answer {
    let (record, can_edit) = own_event(call, id)?;
    precondition(call, &record)?;
    if !can_edit {
        return Err(Failure::access_denied());
    }
    events::delete(call.state, id)?;
    Ok(Reply::empty(204))
}
