//! Calendars and calendarLists: creating and deleting calendars (every user's list entry
//! follows), their resources as Google writes them, the `calendarList` listing with paging
//! and sync tokens, list entry patches (colors), and the `calendars` routes.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::reply::{
    Answer, Reply, api_error, invalid, invalid_parameter, not_found, sync_token_restriction,
};
use super::server::Request;
use super::state::{Calendar, ListEntry, State, SyncScope, random_base32hex};

/// Colors (`colorId`, background, foreground) given to calendars in turn.
pub(super) const CALENDAR_COLORS: &[(&str, &str, &str)] = &[
    ("14", "#9fe1e7", "#000000"),
    ("7", "#42d692", "#000000"),
    ("17", "#9a9cff", "#000000"),
    ("4", "#fa573c", "#000000"),
    ("12", "#fad165", "#000000"),
];

/// A calendar about to be made.
pub(super) struct NewCalendar {
    pub(super) id: String,
    pub(super) summary: String,
    pub(super) description: Option<String>,
    pub(super) time_zone: String,
    pub(super) primary: bool,
}

impl State {
    /// A calendar owned by `sub` (owner role) or by somebody outside the fake, in `sub`'s
    /// calendarList with `access_role`.
    pub(super) fn create_calendar(
        &mut self,
        sub: &str,
        new: NewCalendar,
        access_role: &str,
    ) -> usize {
        let etag = self.next_etag();
        let updated = self.next_update();
        let id = new.id.clone();
        self.calendars.push(Calendar {
            id: new.id,
            owner: if access_role == "owner" {
                sub.to_owned()
            } else {
                String::new()
            },
            summary: new.summary,
            description: new.description,
            time_zone: new.time_zone,
            etag,
            primary: new.primary,
            deleted: false,
            seq: 1,
            updated,
            events: Vec::new(),
            index: HashMap::new(),
        });
        self.add_list_entry(sub, &id, access_role);
        self.calendars.len() - 1
    }

    /// Adds the calendar to `sub`'s calendarList, with the next color.
    fn add_list_entry(&mut self, sub: &str, calendar_id: &str, access_role: &str) {
        let (color_id, background, foreground) =
            CALENDAR_COLORS[self.next_color % CALENDAR_COLORS.len()];
        self.next_color += 1;
        let etag = self.next_etag();
        let ai = self.account_by_sub(sub);
        let account = &mut self.accounts[ai];
        account.list_seq += 1;
        account.list.push(ListEntry {
            calendar_id: calendar_id.to_owned(),
            access_role: access_role.to_owned(),
            color_id: color_id.to_owned(),
            background: background.to_owned(),
            foreground: foreground.to_owned(),
            summary_override: None,
            hidden: false,
            selected: true,
            deleted: false,
            etag,
            changed_at: account.list_seq,
        });
    }

    /// The calendar is deleted: every calendarList entry of it becomes a tombstone.
    pub(super) fn delete_calendar(&mut self, ci: usize) {
        self.calendars[ci].deleted = true;
        let id = self.calendars[ci].id.clone();
        for ai in 0..self.accounts.len() {
            let Some(ei) = self.accounts[ai]
                .list
                .iter()
                .position(|e| e.calendar_id == id && !e.deleted)
            else {
                continue;
            };
            let etag = self.next_etag();
            let account = &mut self.accounts[ai];
            account.list_seq += 1;
            let entry = &mut account.list[ei];
            entry.deleted = true;
            entry.etag = etag;
            entry.changed_at = account.list_seq;
        }
    }

    /// The calendar resource (`calendars.get`).
    pub(super) fn calendar_json(&self, ci: usize) -> Value {
        let calendar = &self.calendars[ci];
        let mut out = Map::new();
        out.insert("kind".into(), json!("calendar#calendar"));
        out.insert("etag".into(), json!(calendar.etag));
        out.insert("id".into(), json!(calendar.id));
        out.insert("summary".into(), json!(calendar.summary));
        if let Some(description) = &calendar.description {
            out.insert("description".into(), json!(description));
        }
        out.insert("timeZone".into(), json!(calendar.time_zone));
        out.insert(
            "conferenceProperties".into(),
            json!({"allowedConferenceSolutionTypes": ["hangoutsMeet"]}),
        );
        Value::Object(out)
    }

    /// A calendarList entry (a tombstone when deleted).
    pub(super) fn entry_json(&self, entry: &ListEntry) -> Value {
        if entry.deleted {
            return json!({
                "kind": "calendar#calendarListEntry",
                "etag": entry.etag,
                "id": entry.calendar_id,
                "deleted": true,
            });
        }
        let ci = self
            .calendar_index(&entry.calendar_id)
            .expect("entry's calendar");
        let calendar = &self.calendars[ci];
        let mut out = Map::new();
        out.insert("kind".into(), json!("calendar#calendarListEntry"));
        out.insert("etag".into(), json!(entry.etag));
        out.insert("id".into(), json!(calendar.id));
        out.insert("summary".into(), json!(calendar.summary));
        if let Some(description) = &calendar.description {
            out.insert("description".into(), json!(description));
        }
        if let Some(summary_override) = &entry.summary_override {
            out.insert("summaryOverride".into(), json!(summary_override));
        }
        out.insert("timeZone".into(), json!(calendar.time_zone));
        out.insert("colorId".into(), json!(entry.color_id));
        out.insert("backgroundColor".into(), json!(entry.background));
        out.insert("foregroundColor".into(), json!(entry.foreground));
        if entry.hidden {
            out.insert("hidden".into(), json!(true));
        }
        if entry.selected {
            out.insert("selected".into(), json!(true));
        }
        out.insert("accessRole".into(), json!(entry.access_role));
        out.insert(
            "defaultReminders".into(),
            if calendar.primary {
                json!([{"method": "popup", "minutes": 30}])
            } else {
                json!([])
            },
        );
        if calendar.primary {
            out.insert("primary".into(), json!(true));
        }
        out.insert(
            "conferenceProperties".into(),
            json!({"allowedConferenceSolutionTypes": ["hangoutsMeet"]}),
        );
        Value::Object(out)
    }

    /// `POST calendars`: a new secondary calendar owned by `sub`.
    pub(super) fn insert_calendar(&mut self, sub: &str, request: &Request) -> Answer {
        let body = request.json_body()?;
        let summary = body
            .get("summary")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| api_error(400, "required", "Missing title."))?;
        let time_zone = match body.get("timeZone").and_then(Value::as_str) {
            Some(tz) if tz.parse::<chrono_tz::Tz>().is_ok() => tz.to_owned(),
            Some(_) => return Err(invalid("Invalid time zone definition.")),
            None => "UTC".to_owned(),
        };
        let description = body
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = format!("{}@group.calendar.google.com", random_base32hex(26));
        let new = NewCalendar {
            id,
            summary: summary.to_owned(),
            description,
            time_zone,
            primary: false,
        };
        let ci = self.create_calendar(sub, new, "owner");
        Ok(Reply::json(200, self.calendar_json(ci)))
    }

    /// `PUT` (`replace`) or `PATCH calendars/{cid}`: summary, description, time zone.
    pub(super) fn update_calendar(
        &mut self,
        sub: &str,
        cid: &str,
        request: &Request,
        replace: bool,
    ) -> Answer {
        let (ci, role) = self.resolve(sub, cid)?;
        if role != "owner" {
            return Err(api_error(403, "forbidden", "Forbidden"));
        }
        let body = request.json_body()?;
        if let Some(tz) = body.get("timeZone").and_then(Value::as_str)
            && tz.parse::<chrono_tz::Tz>().is_err()
        {
            return Err(invalid("Invalid time zone definition."));
        }
        if replace && body.get("summary").and_then(Value::as_str).is_none() {
            return Err(api_error(400, "required", "Missing title."));
        }
        let etag = self.next_etag();
        let calendar = &mut self.calendars[ci];
        if let Some(summary) = body.get("summary").and_then(Value::as_str) {
            calendar.summary = summary.to_owned();
        }
        if let Some(description) = body.get("description") {
            calendar.description = description.as_str().map(str::to_owned);
        }
        if let Some(tz) = body.get("timeZone").and_then(Value::as_str) {
            calendar.time_zone = tz.to_owned();
        }
        calendar.etag = etag;
        Ok(Reply::json(200, self.calendar_json(ci)))
    }

    /// `DELETE calendars/{cid}`: not the primary calendar, only by its owner.
    pub(super) fn remove_calendar(&mut self, sub: &str, cid: &str) -> Answer {
        let (ci, role) = self.resolve(sub, cid)?;
        if self.calendars[ci].primary {
            return Err(api_error(
                400,
                "cannotDeletePrimaryCalendar",
                "The primary calendar cannot be deleted.",
            ));
        }
        if role != "owner" {
            return Err(api_error(403, "forbidden", "Forbidden"));
        }
        self.delete_calendar(ci);
        Ok(Reply::empty(204))
    }

    /// The calendar `cid` names for `sub` (`primary` included) and `sub`'s access role.
    pub(super) fn resolve(&self, sub: &str, cid: &str) -> Result<(usize, String), Reply> {
        let ai = self.account_by_sub(sub);
        let account = &self.accounts[ai];
        let cid = if cid == "primary" {
            account.user.email.as_str()
        } else {
            cid
        };
        let ci = self
            .calendar_index(cid)
            .filter(|&ci| !self.calendars[ci].deleted)
            .ok_or_else(not_found)?;
        let entry = account
            .list
            .iter()
            .find(|e| e.calendar_id == cid && !e.deleted)
            .ok_or_else(not_found)?;
        Ok((ci, entry.access_role.clone()))
    }

    /// `GET users/me/calendarList`: paged, incremental with a sync token.
    pub(super) fn list_calendar_list(&mut self, sub: &str, request: &Request) -> Answer {
        let max_results = request.max_results(100, 250)?;
        let sync_token = request.param("syncToken");
        let show_deleted = request.bool_param("showDeleted")?;
        let show_hidden = request.bool_param("showHidden")?;
        let min_role = request.param("minAccessRole");
        let scope = SyncScope::CalendarList(sub.to_owned());
        if sync_token.is_some() {
            if min_role.is_some() {
                return Err(sync_token_restriction());
            }
            if show_deleted == Some(false) || show_hidden == Some(false) {
                return Err(invalid_parameter(
                    "syncToken",
                    "showDeleted and showHidden must not be false with a sync token.",
                ));
            }
        }
        let rank = |role: &str| {
            ["freeBusyReader", "reader", "writer", "owner"]
                .iter()
                .position(|r| *r == role)
        };
        let min_rank = match &min_role {
            None => 0,
            Some(role) => {
                rank(role).ok_or_else(|| invalid_parameter("minAccessRole", "Invalid value"))?
            }
        };
        let fingerprint = request.fingerprint(&format!("calendarList:{sub}"));
        let ai = self.account_by_sub(sub);
        let (since, snapshot, after) = match request.param("pageToken") {
            Some(page_token) => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let cursor = self.cursor(&page_token, &fingerprint)?;
                (since, cursor.snapshot_seq, Some(cursor.after))
            }
            None => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                (since, self.accounts[ai].list_seq, None)
            }
        };
        let items: Vec<((usize, usize), Value)> = self.accounts[ai]
            .list
            .iter()
            .enumerate()
            .filter(|(_, e)| match since {
                Some(from) => e.changed_at > from,
                None => {
                    (!e.deleted || show_deleted == Some(true))
                        && (!e.hidden || show_hidden == Some(true))
                        && rank(&e.access_role).unwrap_or(0) >= min_rank
                }
            })
            .map(|(pos, e)| ((pos, 0), self.entry_json(e)))
            .filter(|(key, _)| after.is_none_or(|after| *key > after))
            .collect();
        let page_size = max_results.min(self.page_size);
        let more = items.len() > page_size;
        let page: Vec<((usize, usize), Value)> = items.into_iter().take(page_size).collect();
        let mut body = Map::new();
        body.insert("kind".into(), json!("calendar#calendarList"));
        body.insert("etag".into(), json!(format!("\"p3{:013}\"", snapshot)));
        if more {
            let last = page.last().map(|(key, _)| *key).unwrap_or((0, 0));
            let token = self.new_cursor(fingerprint, last, snapshot, None);
            body.insert("nextPageToken".into(), json!(token));
        } else {
            let token = self.sync_token(scope, snapshot);
            body.insert("nextSyncToken".into(), json!(token));
        }
        body.insert(
            "items".into(),
            Value::Array(page.into_iter().map(|(_, v)| v).collect()),
        );
        Ok(Reply::json(200, Value::Object(body)))
    }

    /// `PATCH users/me/calendarList/{cid}`: colors (RGB only with `colorRgbFormat=true`),
    /// summary override, hidden, selected.
    pub(super) fn patch_list_entry(&mut self, sub: &str, cid: &str, request: &Request) -> Answer {
        let (ci, _) = self.resolve(sub, cid)?;
        let body = request.json_body()?;
        let rgb = request.bool_param("colorRgbFormat")? == Some(true);
        let color = |name: &str| -> Result<Option<String>, Reply> {
            match body.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(_) if !rgb => Err(invalid_parameter(
                    "colorRgbFormat",
                    "Setting RGB colors requires colorRgbFormat=true.",
                )),
                Some(Value::String(c))
                    if c.len() == 7
                        && c.starts_with('#')
                        && c[1..].bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    Ok(Some(c.to_ascii_lowercase()))
                }
                Some(_) => Err(invalid(&format!("Invalid value for: {name}"))),
            }
        };
        let background = color("backgroundColor")?;
        let foreground = color("foregroundColor")?;
        let calendar_id = self.calendars[ci].id.clone();
        let etag = self.next_etag();
        let ai = self.account_by_sub(sub);
        let account = &mut self.accounts[ai];
        let ei = account
            .list
            .iter()
            .position(|e| e.calendar_id == calendar_id && !e.deleted)
            .ok_or_else(not_found)?;
        account.list_seq += 1;
        let seq = account.list_seq;
        let entry = &mut account.list[ei];
        if let Some(background) = background {
            entry.background = background;
        }
        if let Some(foreground) = foreground {
            entry.foreground = foreground;
        }
        if let Some(color_id) = body.get("colorId").and_then(Value::as_str) {
            entry.color_id = color_id.to_owned();
        }
        if let Some(summary_override) = body.get("summaryOverride") {
            entry.summary_override = summary_override.as_str().map(str::to_owned);
        }
        if let Some(hidden) = body.get("hidden").and_then(Value::as_bool) {
            entry.hidden = hidden;
        }
        if let Some(selected) = body.get("selected").and_then(Value::as_bool) {
            entry.selected = selected;
        }
        entry.etag = etag;
        entry.changed_at = seq;
        Ok(Reply::json(
            200,
            self.entry_json(&self.accounts[ai].list[ei]),
        ))
    }
}
