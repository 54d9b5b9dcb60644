//! What the Google and Microsoft mirror tests share: starting a link as the signed-in user
//! (`POST /api/auth/link-social`, reading the state cookie it sets), the browser's way back
//! to the callback, and syncing now.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{TestApp, TestUser, no_redirects};

/// What `POST /api/auth/link-social` answered.
pub struct LinkStart {
    /// The authorization URL (`url` of the body).
    pub url: String,
    /// The value of the `better-auth.state` cookie it set.
    pub cookie: String,
    /// The whole body.
    pub body: Value,
    /// `Location`, if any.
    pub location: Option<String>,
    /// The `Set-Cookie` header of the state cookie, whole.
    pub set_cookie: String,
}

/// Starts a link with `body`; panics unless it is answered 200 with a state cookie.
pub async fn start_link_with(app: &TestApp, user: &TestUser, body: &Value) -> LinkStart {
    let response = app
        .as_user(Method::POST, "/api/auth/link-social", user)
        .json(body)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK, "link-social answers");
    let location = response
        .headers()
        .get("location")
        .map(|l| l.to_str().expect("location").to_owned());
    let set_cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("better-auth.state="))
        .expect("a state cookie")
        .to_owned();
    let cookie = set_cookie["better-auth.state=".len()..]
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    let body: Value = response.json().await.expect("JSON");
    LinkStart {
        url: body["url"].as_str().expect("url").to_owned(),
        cookie,
        body,
        location,
        set_cookie,
    }
}

/// The browser coming back from the provider to `back`, sending `cookie` (a whole `Cookie`
/// header, if any): the `Location` Bowline redirects to.
pub async fn come_back(back: &str, cookie: Option<&str>) -> String {
    let mut request = no_redirects().get(back);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("callback");
    assert_eq!(
        response.status(),
        StatusCode::FOUND,
        "the callback redirects"
    );
    response.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned()
}

/// `GET /api/v1/calendars/google` (sync every account now): the status and the text.
pub async fn sync_now(app: &TestApp, user: &TestUser) -> (StatusCode, String) {
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", user)
        .send()
        .await
        .expect("request");
    let status = response.status();
    (status, response.text().await.expect("body"))
}
