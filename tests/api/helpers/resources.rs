//! The API calls most tests share: calendars, invites, memberships and events, as one user.

use super::{TestApp, TestUser};

impl TestApp {
    /// `GET path` as `user`: the JSON answer, whatever the status.
    pub async fn get_json_as(&self, user: &TestUser, path: &str) -> serde_json::Value {
        self.as_user(reqwest::Method::GET, path, user)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("JSON")
    }

    /// Creates a calendar owned by `owner`; returns its document.
    pub async fn create_calendar(&self, owner: &TestUser, name: &str) -> serde_json::Value {
        let response = self
            .as_user(reqwest::Method::POST, "/api/v1/calendars", owner)
            .json(&serde_json::json!({ "id": "new", "creatorID": "", "name": name, "color": "#7A8BA3", "members": [] }))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 201, "calendar created");
        response.json().await.expect("JSON")
    }

    /// Creates an invite to `calendar_id` as `user`; returns the invite document.
    pub async fn create_invite(
        &self,
        user: &TestUser,
        calendar_id: &str,
        max_uses: Option<i32>,
    ) -> serde_json::Value {
        let response = self
            .as_user(reqwest::Method::POST, "/api/v1/calendars/invites", user)
            .json(&serde_json::json!({ "id": "new", "calendarID": calendar_id, "expiresAt": null, "maxUses": max_uses }))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 201, "invite created");
        response.json().await.expect("JSON")
    }

    /// `user` joins `calendar_id` with `token`.
    pub async fn join(&self, user: &TestUser, calendar_id: &str, token: &str) -> reqwest::Response {
        self.as_user(
            reqwest::Method::POST,
            &format!("/api/v1/calendars/members/{calendar_id}"),
            user,
        )
        .json(&serde_json::json!({ "token": token }))
        .send()
        .await
        .expect("request")
    }

    /// `user` joins `calendar_id` (as a viewer) through a new invite of `owner`.
    pub async fn join_with_invite(&self, owner: &TestUser, calendar_id: &str, user: &TestUser) {
        let invite = self.create_invite(owner, calendar_id, None).await;
        let token = invite["id"].as_str().expect("token");
        assert_eq!(
            self.join(user, calendar_id, token).await.status(),
            reqwest::StatusCode::OK,
            "{} joins",
            user.email
        );
    }

    /// `actor` sets `target`'s role.
    pub async fn set_role(
        &self,
        actor: &TestUser,
        calendar_id: &str,
        target: &str,
        role: &str,
    ) -> reqwest::Response {
        self.as_user(
            reqwest::Method::PUT,
            &format!("/api/v1/calendars/{calendar_id}/members/{target}"),
            actor,
        )
        .json(&serde_json::json!({ "role": role }))
        .send()
        .await
        .expect("request")
    }

    /// Sends an event request (`POST`, `PUT` or `DELETE /api/v1/events`) as `user`.
    pub async fn event_request(
        &self,
        method: reqwest::Method,
        user: &TestUser,
        body: &serde_json::Value,
    ) -> reqwest::Response {
        self.as_user(method, "/api/v1/events", user)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// Creates an event as `user` (`POST /api/v1/events` must answer 201): the JSON answer.
    pub async fn create_event(
        &self,
        user: &TestUser,
        body: &serde_json::Value,
    ) -> serde_json::Value {
        let response = self.event_request(reqwest::Method::POST, user, body).await;
        assert_eq!(response.status(), 201, "create");
        response.json().await.expect("JSON")
    }

    /// The sorted titles of the events `user` reads (`GET /api/v1/events`).
    pub async fn read_titles(&self, user: &TestUser) -> Vec<String> {
        let events = self.read_events(user, "").await;
        let mut titles: Vec<String> = events["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["title"].as_str().expect("title").to_owned())
            .collect();
        titles.sort();
        titles
    }

    /// `GET /api/v1/events` with `query` as `user`: the JSON answer.
    pub async fn read_events(&self, user: &TestUser, query: &str) -> serde_json::Value {
        let response = self
            .as_user(
                reqwest::Method::GET,
                &format!("/api/v1/events{query}"),
                user,
            )
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200, "events read {query}");
        response.json().await.expect("JSON")
    }
}

/// An Event body for `calendars` (the first is home), starting at `hour` UTC on 23 July
/// 2026, one hour long.
pub fn event_body(calendars: &[&str], title: &str, hour: u32) -> serde_json::Value {
    serde_json::json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "creatorID": "ignored",
        "organizer": "someone",
        "title": title,
        "color": "#C8553D",
        "start": format!("2026-07-23T{hour:02}:00:00.000Z"),
        "end": format!("2026-07-23T{:02}:00:00.000Z", hour + 1),
        "calendars": calendars,
        "isCanceled": false,
        "isAllDay": false,
        "hasAttendees": true,
        "description": null,
        "location": "Room 1",
        "recurrence": null,
        "url": null
    })
}
