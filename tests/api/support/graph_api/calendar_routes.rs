//! `/me/calendars`: list (paged), get, create, rename or recolour, delete (not the default
//! calendar), and the calendar resource as Graph writes it.

use serde_json::{Map, Value, json};

use super::graph::{Answer, Call, body, context, page};
use super::reply::{Failure, Reply};
use super::state::{CalendarRecord, State};

/// Calendar colours and the `hexColor` Outlook shows for each.
const COLORS: &[(&str, &str)] = &[
    ("auto", ""),
    ("lightBlue", "#a6d1f5"),
    ("lightGreen", "#87d28e"),
    ("lightOrange", "#fcab73"),
    ("lightGray", "#c0c0c0"),
    ("lightYellow", "#f4d07a"),
    ("lightTeal", "#6fd7cf"),
    ("lightPink", "#f5a3c3"),
    ("lightBrown", "#d8b48c"),
    ("lightRed", "#f88c9b"),
    ("maxColor", ""),
];

pub(super) fn render_calendar(state: &State, calendar: &CalendarRecord) -> Value {
    let owner = state.user(&calendar.owner_oid);
    let hex = COLORS
        .iter()
        .find(|(name, _)| *name == calendar.color)
        .map(|(_, hex)| *hex)
        .unwrap_or_default();
    json!({
        "id": calendar.id,
        "name": calendar.name,
        "color": calendar.color,
        "hexColor": hex,
        "isDefaultCalendar": calendar.is_default,
        "changeKey": calendar.change_key,
        "canShare": calendar.can_edit,
        "canViewPrivateItems": calendar.can_edit,
        "canEdit": calendar.can_edit,
        "isRemovable": !calendar.is_default,
        "isTallyingResponses": true,
        "allowedOnlineMeetingProviders": ["teamsForBusiness"],
        "defaultOnlineMeetingProvider": "teamsForBusiness",
        "owner": {
            "name": owner.map(|u| u.name.clone()).unwrap_or_default(),
            "address": owner.map(|u| u.email.clone()).unwrap_or_default(),
        },
    })
}

pub(super) fn own_calendar(call: &Call<'_>, id: &str) -> Result<CalendarRecord, Failure> {
    call.state
        .calendar_of(&call.oid, id)
        .cloned()
        .ok_or_else(Failure::not_found)
}

pub(super) fn list_calendars(call: &mut Call<'_>) -> Answer {
    let values: Vec<Value> = call
        .state
        .calendars
        .iter()
        .filter(|c| c.owner_oid == call.oid)
        .map(|c| render_calendar(call.state, c))
        .collect();
    Ok(page(call, values, 10, context(call, "calendars")))
}

pub(super) fn get_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let mut body = render_calendar(call.state, &calendar);
    body["@odata.context"] = json!(context(call, "calendars/$entity"));
    Ok(Reply::json(200, body))
}

pub(super) fn calendar_fields(
    body: &Map<String, Value>,
) -> Result<(Option<String>, Option<String>), Failure> {
    for name in body.keys() {
        if !name.starts_with('@')
            && !["name", "color", "id", "changeKey", "hexColor"].contains(&name.as_str())
        {
            return Err(Failure::new(
                400,
                "RequestBodyRead",
                format!("The property '{name}' does not exist on type 'microsoft.graph.calendar'."),
            ));
        }
    }
    let name = match body.get("name") {
        None => None,
        Some(Value::String(name)) if !name.trim().is_empty() => Some(name.clone()),
        Some(_) => {
            return Err(Failure::new(
                400,
                "ErrorInvalidParameter",
                "The calendar name is not valid.",
            ));
        }
    };
    let color = match body.get("color") {
        None => None,
        Some(Value::String(color)) if COLORS.iter().any(|(c, _)| c == color) => Some(color.clone()),
        Some(other) => {
            return Err(Failure::new(
                400,
                "RequestBodyRead",
                format!(
                    "Cannot convert the literal '{other}' to the expected type 'microsoft.graph.calendarColor'."
                ),
            ));
        }
    };
    Ok((name, color))
}

pub(super) fn name_taken(state: &State, oid: &str, name: &str, except: Option<&str>) -> bool {
    state.calendars.iter().any(|c| {
        c.owner_oid == oid && c.name.eq_ignore_ascii_case(name) && Some(c.id.as_str()) != except
    })
}

pub(super) fn folder_exists() -> Failure {
    Failure::new(
        409,
        "ErrorFolderExists",
        "A folder with the specified name already exists.",
    )
}

pub(super) fn create_calendar(call: &mut Call<'_>) -> Answer {
    let (name, color) = calendar_fields(&body(call)?)?;
    let name = name.ok_or_else(|| {
        Failure::new(
            400,
            "ErrorInvalidParameter",
            "The calendar name is required.",
        )
    })?;
    if name_taken(call.state, &call.oid, &name, None) {
        return Err(folder_exists());
    }
    let id = new_calendar(
        call.state,
        &call.oid,
        &name,
        color.as_deref().unwrap_or("auto"),
        true,
        false,
    );
    let calendar = own_calendar(call, &id)?;
    let mut body = render_calendar(call.state, &calendar);
    body["@odata.context"] = json!(context(call, "calendars/$entity"));
    Ok(Reply::json(201, body))
}

/// Adds a calendar to `oid`'s list and returns its id.
pub(super) fn new_calendar(
    state: &mut State,
    oid: &str,
    name: &str,
    color: &str,
    can_edit: bool,
    is_default: bool,
) -> String {
    let id = State::new_event_id().replacen("AAMkAD", "AAMkAG", 1);
    state.calendars.push(CalendarRecord {
        id: id.clone(),
        owner_oid: oid.to_owned(),
        name: name.to_owned(),
        color: color.to_owned(),
        change_key: State::new_change_key(),
        can_edit,
        is_default,
    });
    id
}

pub(super) fn patch_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    let (name, color) = calendar_fields(&body(call)?)?;
    if let Some(name) = &name
        && name_taken(call.state, &call.oid, name, Some(id))
    {
        return Err(folder_exists());
    }
    if !calendar.can_edit {
        return Err(Failure::access_denied());
    }
    let record = call.state.calendar_mut(id).ok_or_else(Failure::not_found)?;
    if let Some(name) = name {
        record.name = name;
    }
    if let Some(color) = color {
        record.color = color;
    }
    record.change_key = State::new_change_key();
    get_calendar(call, id)
}

pub(super) fn delete_calendar(call: &mut Call<'_>, id: &str) -> Answer {
    let calendar = own_calendar(call, id)?;
    if calendar.is_default {
        return Err(Failure::new(
            400,
            "ErrorCannotDeleteDefaultCalendar",
            "The default calendar cannot be deleted.",
        ));
    }
    remove_calendar(call.state, id);
    Ok(Reply::empty(204))
}

/// Removes a calendar and its events.
pub(super) fn remove_calendar(state: &mut State, id: &str) {
    state.calendars.retain(|c| c.id != id);
    state.events.retain(|_, e| e.calendar_id != id);
}
