//! The CalDAV client: one method per protocol step, each one or a few requests through the
//! outbound guard with HTTP Basic credentials, and the mapping of statuses to
//! [`CaldavError`].

use std::fmt;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use url::Url;

use super::xml::{self, APPLE_ICAL, CALDAV, CALSERVER, DAV, DavResponse, Multistatus};
use super::{CaldavError, Discovery, Member, RemoteCalendar, RemoteObject, SyncChanges};
use crate::providers::outbound::{
    OutboundError, OutboundGuard, OutboundRequest, OutboundResponse, retry_after,
};

/// How many hrefs one calendar-multiget asks for.
const MULTIGET_CHUNK: usize = 100;
/// How much of a server's error text goes into [`CaldavError::Rejected`].
const MESSAGE_CHARS: usize = 200;

const XML_CONTENT: HeaderValue = HeaderValue::from_static("application/xml; charset=utf-8");
const ICS_CONTENT: HeaderValue = HeaderValue::from_static("text/calendar; charset=utf-8");
const DEPTH: HeaderName = HeaderName::from_static("depth");

/// A CalDAV client for one account. Cheap to clone.
#[derive(Clone)]
pub struct CaldavClient {
    guard: OutboundGuard,
    username: String,
    /// `Basic …`, marked sensitive.
    authorization: HeaderValue,
}

impl fmt::Debug for CaldavClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaldavClient")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// What a discovery PROPFIND found at one URL.
struct PrincipalAt {
    principal: Url,
    home: Option<Url>,
}

impl CaldavClient {
    /// A client sending HTTP Basic credentials on every request.
    pub fn new(
        guard: OutboundGuard,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        let username = username.into();
        let password = password.into();
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        // Base64 is always a valid header value; the fallback cannot happen.
        let mut authorization = HeaderValue::from_str(&format!("Basic {token}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
        authorization.set_sensitive(true);
        Self {
            guard,
            username,
            authorization,
        }
    }

    /// Finds the principal and the calendar home: PROPFIND Depth 0 `current-user-principal`
    /// on the given URL, then on `/.well-known/caldav` of its origin (whose redirect the guard
    /// follows as a PROPFIND), then `calendar-home-set` on the principal.
    pub async fn discover(&self, server_url: &Url) -> Result<Discovery, CaldavError> {
        let given_error = match self.principal_at(server_url).await {
            Ok(Some(found)) => return self.with_home(found).await,
            Ok(None) => None,
            Err(err) if stops_discovery(&err) => return Err(err),
            Err(err) => Some(err),
        };
        let well_known = server_url
            .join("/.well-known/caldav")
            .map_err(|err| CaldavError::Malformed(format!("well-known URL: {err}")))?;
        match self.principal_at(&well_known).await {
            Ok(Some(found)) => self.with_home(found).await,
            Ok(None) => Err(given_error.unwrap_or_else(|| {
                CaldavError::Malformed("the server names no current-user-principal".into())
            })),
            Err(err) => Err(given_error.unwrap_or(err)),
        }
    }

    /// Every calendar in `home` (PROPFIND Depth 1; collections whose resourcetype has
    /// `C:calendar`).
    pub async fn calendars(&self, home: &Url) -> Result<Vec<RemoteCalendar>, CaldavError> {
        let (multistatus, base) = self.propfind(home, "1", xml::propfind_calendars()).await?;
        let mut calendars = Vec::new();
        for response in &multistatus.responses {
            let is_calendar = response
                .prop(DAV, "resourcetype")
                .is_some_and(|kind| kind.child(CALDAV, "calendar").is_some());
            if !is_calendar {
                continue;
            }
            let url = resolve(&base, &response.href)?;
            let read_only = response
                .prop(DAV, "current-user-privilege-set")
                .is_some_and(|set| {
                    !(set.contains(DAV, "write")
                        || set.contains(DAV, "write-content")
                        || set.contains(DAV, "all"))
                });
            let has_events = response
                .prop(CALDAV, "supported-calendar-component-set")
                .filter(|set| !set.children.is_empty())
                .is_none_or(|set| {
                    set.children_named(CALDAV, "comp").any(|comp| {
                        comp.attribute("name")
                            .is_some_and(|name| name.eq_ignore_ascii_case("VEVENT"))
                    })
                });
            calendars.push(RemoteCalendar {
                url,
                name: response.prop_text(DAV, "displayname"),
                color: response.prop_text(APPLE_ICAL, "calendar-color"),
                ctag: response.prop_text(CALSERVER, "getctag"),
                sync_token: response.prop_text(DAV, "sync-token"),
                read_only,
                has_events,
            });
        }
        Ok(calendars)
    }

    /// REPORT sync-collection (Depth 1, again with Depth 0 on a 400; sync-level 1, getetag).
    /// `token` `None` is an initial sync. 404 entries are removals, also on an initial sync.
    pub async fn sync_collection(
        &self,
        calendar: &Url,
        token: Option<&str>,
    ) -> Result<SyncChanges, CaldavError> {
        let incremental = token.is_some_and(|token| !token.is_empty());
        let mut response = self.sync_report(calendar, token, "1").await?;
        if response.status == StatusCode::BAD_REQUEST {
            // RFC 6578 defines the report for Depth 0 only; Radicale and Xandikos take
            // either, a strict server refuses Depth 1.
            response = self.sync_report(calendar, token, "0").await?;
        }
        let status = response.status.as_u16();
        if !response.status.is_success() {
            return Err(sync_error(&response, incremental));
        }
        let multistatus = parse_multistatus(&response)?;
        let Some(next) = multistatus.sync_token.clone() else {
            return Err(if incremental {
                CaldavError::Malformed("a sync-collection reply without sync-token".into())
            } else {
                tracing::debug!(status, "sync-collection reply without a token");
                CaldavError::SyncUnsupported
            });
        };
        let mut changes = SyncChanges {
            token: next,
            changed: Vec::new(),
            removed: Vec::new(),
        };
        for entry in &multistatus.responses {
            let url = resolve(&response.url, &entry.href)?;
            if same_resource(&url, calendar) {
                // The collection itself (507 when a server truncates): not a member.
                continue;
            }
            match entry.status {
                Some(404) => changes.removed.push(url),
                Some(status) if !(200..300).contains(&status) => {}
                _ => changes.changed.push(Member {
                    url,
                    etag: entry.prop_text(DAV, "getetag"),
                }),
            }
        }
        Ok(changes)
    }

    async fn sync_report(
        &self,
        calendar: &Url,
        token: Option<&str>,
        depth: &'static str,
    ) -> Result<OutboundResponse, CaldavError> {
        self.send(
            dav_method("REPORT")?,
            calendar,
            &[(DEPTH, HeaderValue::from_static(depth))],
            Some(xml::sync_collection(token)),
        )
        .await
    }

    /// Every member of `calendar` with its ETag (PROPFIND Depth 1), for servers without
    /// sync tokens. Sub-collections and the calendar itself are left out.
    pub async fn members(&self, calendar: &Url) -> Result<Vec<Member>, CaldavError> {
        let (multistatus, base) = self
            .propfind(calendar, "1", xml::propfind_members())
            .await?;
        let mut members = Vec::new();
        for response in &multistatus.responses {
            let url = resolve(&base, &response.href)?;
            if same_resource(&url, calendar) {
                if response.status == Some(404) {
                    return Err(CaldavError::NotFound);
                }
                continue;
            }
            if response
                .status
                .is_some_and(|status| !(200..300).contains(&status))
            {
                continue;
            }
            let collection = response
                .prop(DAV, "resourcetype")
                .is_some_and(|kind| kind.child(DAV, "collection").is_some());
            if collection {
                continue;
            }
            members.push(Member {
                url,
                etag: response.prop_text(DAV, "getetag"),
            });
        }
        Ok(members)
    }

    /// calendar-multiget REPORTs (100 hrefs each) with getetag and calendar-data. Hrefs the
    /// server does not have (404 entries) are simply absent from the result.
    pub async fn fetch(
        &self,
        calendar: &Url,
        hrefs: &[Url],
    ) -> Result<Vec<RemoteObject>, CaldavError> {
        let mut objects = Vec::with_capacity(hrefs.len());
        for chunk in hrefs.chunks(MULTIGET_CHUNK) {
            let body = xml::multiget(chunk.iter().map(|url| href_for(calendar, url)));
            let response = self
                .send(
                    dav_method("REPORT")?,
                    calendar,
                    &[(DEPTH, HeaderValue::from_static("1"))],
                    Some(body),
                )
                .await?;
            if !response.status.is_success() {
                return Err(status_error(&response));
            }
            let multistatus = parse_multistatus(&response)?;
            for entry in &multistatus.responses {
                if entry
                    .status
                    .is_some_and(|status| !(200..300).contains(&status))
                {
                    continue;
                }
                let Some(data) = entry.prop(CALDAV, "calendar-data") else {
                    continue;
                };
                objects.push(RemoteObject {
                    url: resolve(&response.url, &entry.href)?,
                    etag: entry.prop_text(DAV, "getetag"),
                    data: data.text.clone(),
                });
            }
        }
        Ok(objects)
    }

    /// GETs one resource; `None` when it does not exist.
    pub async fn get(&self, url: &Url) -> Result<Option<RemoteObject>, CaldavError> {
        let response = self.send(Method::GET, url, &[], None).await?;
        if response.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        let data = String::from_utf8(response.body.to_vec())
            .map_err(|_| CaldavError::Malformed("the calendar data is not UTF-8".into()))?;
        Ok(Some(RemoteObject {
            url: url.clone(),
            etag: etag_header(&response.headers),
            data,
        }))
    }

    /// Creates a resource (PUT with `If-None-Match: *`); 412 when it already exists. Returns
    /// the new ETag when the server sent one.
    pub async fn create(&self, url: &Url, ics: &str) -> Result<Option<String>, CaldavError> {
        let headers = [(header::IF_NONE_MATCH, HeaderValue::from_static("*"))];
        self.put(url, ics, &headers).await
    }

    /// Replaces a resource if it still has `etag` (exactly as received, quotes included);
    /// 412 otherwise. Returns the new ETag when the server sent one.
    pub async fn update(
        &self,
        url: &Url,
        ics: &str,
        etag: &str,
    ) -> Result<Option<String>, CaldavError> {
        let headers = [(header::IF_MATCH, etag_value(etag)?)];
        self.put(url, ics, &headers).await
    }

    /// Deletes a resource, if it still has `etag` when one is given. 404 is
    /// [`CaldavError::NotFound`]; 412 [`CaldavError::PreconditionFailed`].
    pub async fn delete(&self, url: &Url, etag: Option<&str>) -> Result<(), CaldavError> {
        let mut headers = Vec::new();
        if let Some(etag) = etag {
            headers.push((header::IF_MATCH, etag_value(etag)?));
        }
        let response = self.send(Method::DELETE, url, &headers, None).await?;
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        multistatus_failure(&response)
    }

    /// Creates a calendar `<home>/<new uuid>/` with a name, a color and the VEVENT component
    /// set; returns its URL.
    pub async fn make_calendar(
        &self,
        home: &Url,
        name: &str,
        color: &str,
    ) -> Result<Url, CaldavError> {
        let url = as_collection(home)
            .join(&format!("{}/", uuid::Uuid::new_v4()))
            .map_err(|err| CaldavError::Malformed(format!("calendar URL: {err}")))?;
        let response = self
            .send(
                dav_method("MKCALENDAR")?,
                &url,
                &[],
                Some(xml::mkcalendar(name, color)),
            )
            .await?;
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        Ok(url)
    }

    /// Sets a calendar's name and color (PROPPATCH).
    pub async fn update_calendar(
        &self,
        calendar: &Url,
        name: &str,
        color: &str,
    ) -> Result<(), CaldavError> {
        let response = self
            .send(
                dav_method("PROPPATCH")?,
                calendar,
                &[],
                Some(xml::proppatch(name, color)),
            )
            .await?;
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        if response.status == StatusCode::MULTI_STATUS {
            let multistatus = parse_multistatus(&response)?;
            if let Some(status) = multistatus
                .responses
                .iter()
                .find_map(DavResponse::failed_propstat)
            {
                return Err(status_error_from(
                    status,
                    &response.headers,
                    "the server did not store the calendar's name and color".into(),
                ));
            }
        }
        Ok(())
    }

    /// Deletes a calendar collection; one that is already gone counts as deleted.
    pub async fn delete_calendar(&self, calendar: &Url) -> Result<(), CaldavError> {
        let response = self.send(Method::DELETE, calendar, &[], None).await?;
        if response.status == StatusCode::NOT_FOUND {
            return Ok(());
        }
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        multistatus_failure(&response)
    }

    async fn principal_at(&self, url: &Url) -> Result<Option<PrincipalAt>, CaldavError> {
        let (multistatus, base) = self.propfind(url, "0", xml::propfind_principal()).await?;
        for response in &multistatus.responses {
            let principal = response
                .prop(DAV, "current-user-principal")
                .and_then(|prop| prop.child(DAV, "href"))
                .and_then(|href| href.trimmed_text());
            let home = response
                .prop(CALDAV, "calendar-home-set")
                .and_then(|prop| prop.child(DAV, "href"))
                .and_then(|href| href.trimmed_text());
            match (principal, home) {
                (Some(principal), home) => {
                    let principal = resolve(&base, &principal)?;
                    // The home counts only when this URL is the principal itself.
                    let home = match home {
                        Some(home)
                            if same_resource(&resolve(&base, &response.href)?, &principal) =>
                        {
                            Some(resolve(&base, &home)?)
                        }
                        _ => None,
                    };
                    return Ok(Some(PrincipalAt { principal, home }));
                }
                (None, Some(home)) => {
                    return Ok(Some(PrincipalAt {
                        principal: resolve(&base, &response.href)?,
                        home: Some(resolve(&base, &home)?),
                    }));
                }
                (None, None) => {}
            }
        }
        Ok(None)
    }

    async fn with_home(&self, found: PrincipalAt) -> Result<Discovery, CaldavError> {
        let home = match found.home {
            Some(home) => home,
            None => self.home_of(&found.principal).await?,
        };
        Ok(Discovery {
            principal: found.principal,
            home,
        })
    }

    async fn home_of(&self, principal: &Url) -> Result<Url, CaldavError> {
        let (multistatus, base) = self.propfind(principal, "0", xml::propfind_home()).await?;
        let home = multistatus
            .responses
            .iter()
            .find_map(|response| {
                response
                    .prop(CALDAV, "calendar-home-set")
                    .and_then(|prop| prop.child(DAV, "href"))
                    .and_then(|href| href.trimmed_text())
            })
            .ok_or_else(|| {
                CaldavError::Malformed("the principal has no calendar-home-set".into())
            })?;
        resolve(&base, &home)
    }

    /// PROPFIND with `depth`; the parsed reply and the URL it came from (after redirects).
    async fn propfind(
        &self,
        url: &Url,
        depth: &'static str,
        body: String,
    ) -> Result<(Multistatus, Url), CaldavError> {
        let response = self
            .send(
                dav_method("PROPFIND")?,
                url,
                &[(DEPTH, HeaderValue::from_static(depth))],
                Some(body),
            )
            .await?;
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        let multistatus = parse_multistatus(&response)?;
        Ok((multistatus, response.url))
    }

    async fn put(
        &self,
        url: &Url,
        ics: &str,
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Option<String>, CaldavError> {
        let response = self
            .send(Method::PUT, url, headers, Some(ics.to_owned()))
            .await?;
        if !response.status.is_success() {
            return Err(status_error(&response));
        }
        Ok(etag_header(&response.headers))
    }

    /// One exchange with credentials; XML bodies for DAV methods, iCalendar for PUT.
    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(HeaderName, HeaderValue)],
        body: Option<String>,
    ) -> Result<OutboundResponse, CaldavError> {
        let mut request = OutboundRequest::new(method.clone(), url.clone())
            .header(header::AUTHORIZATION, self.authorization.clone());
        for (name, value) in headers {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(body) = body {
            let content_type = if method == Method::PUT {
                ICS_CONTENT
            } else {
                XML_CONTENT
            };
            request = request
                .header(header::CONTENT_TYPE, content_type)
                .body(Bytes::from(body));
        }
        Ok(self.guard.send(request).await?)
    }
}

/// Errors after which trying the well-known URL is pointless.
fn stops_discovery(err: &CaldavError) -> bool {
    matches!(
        err,
        CaldavError::Unauthorized | CaldavError::Unavailable { .. } | CaldavError::Outbound(_)
    )
}

fn dav_method(name: &'static str) -> Result<Method, CaldavError> {
    Method::from_bytes(name.as_bytes())
        .map_err(|_| CaldavError::Outbound(OutboundError::Invalid(format!("method {name}"))))
}

fn parse_multistatus(response: &OutboundResponse) -> Result<Multistatus, CaldavError> {
    xml::multistatus(&response.body).map_err(CaldavError::Malformed)
}

/// A 207 to a DELETE lists members that could not be deleted.
fn multistatus_failure(response: &OutboundResponse) -> Result<(), CaldavError> {
    if response.status != StatusCode::MULTI_STATUS {
        return Ok(());
    }
    let Ok(multistatus) = xml::multistatus(&response.body) else {
        return Ok(());
    };
    match multistatus
        .responses
        .iter()
        .filter_map(|entry| entry.status)
        .find(|status| *status >= 400)
    {
        Some(status) => Err(status_error_from(
            status,
            &response.headers,
            "the server could not delete everything".into(),
        )),
        None => Ok(()),
    }
}

/// Errors of a sync-collection REPORT: an invalid token, no support, or the usual ones.
fn sync_error(response: &OutboundResponse, incremental: bool) -> CaldavError {
    let status = response.status.as_u16();
    let conditions = xml::error_conditions(&response.body)
        .map(|(conditions, _)| conditions)
        .unwrap_or_default();
    if conditions.iter().any(|name| name == "valid-sync-token") {
        return CaldavError::InvalidSyncToken;
    }
    match status {
        401 | 404 | 408 | 429 => status_error(response),
        // Radicale answers 403, the RFC also allows 409; Xandikos answers 412.
        403 | 409 | 410 | 412 if incremental => CaldavError::InvalidSyncToken,
        400 | 403 | 405 | 409 | 412 | 415 | 422 | 501 if !incremental => {
            CaldavError::SyncUnsupported
        }
        405 | 501 => CaldavError::SyncUnsupported,
        _ => status_error(response),
    }
}

/// The error for a non-success status.
fn status_error(response: &OutboundResponse) -> CaldavError {
    status_error_from(
        response.status.as_u16(),
        &response.headers,
        short_message(response),
    )
}

fn status_error_from(status: u16, headers: &HeaderMap, message: String) -> CaldavError {
    match status {
        401 => CaldavError::Unauthorized,
        403 => CaldavError::Forbidden,
        404 => CaldavError::NotFound,
        412 => CaldavError::PreconditionFailed,
        408 | 429 | 500..=599 => CaldavError::Unavailable {
            status: Some(status),
            retry_after: retry_after(headers),
        },
        _ => CaldavError::Rejected { status, message },
    }
}

/// A short, single-line text for a rejection: the DAV:error conditions, or the start of a
/// text body, or the status's reason.
fn short_message(response: &OutboundResponse) -> String {
    let text = match xml::error_conditions(&response.body) {
        Some((conditions, description)) => {
            let mut text = conditions.join(", ");
            if let Some(description) = description {
                if !text.is_empty() {
                    text.push_str(": ");
                }
                text.push_str(&description);
            }
            text
        }
        None => String::from_utf8_lossy(&response.body)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    };
    let text: String = text
        .chars()
        .filter(|ch| !ch.is_control())
        .take(MESSAGE_CHARS)
        .collect();
    if text.is_empty() {
        response
            .status
            .canonical_reason()
            .unwrap_or("no reason given")
            .to_owned()
    } else {
        text
    }
}

fn etag_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::ETAG)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

fn etag_value(etag: &str) -> Result<HeaderValue, CaldavError> {
    HeaderValue::from_str(etag)
        .map_err(|_| CaldavError::Outbound(OutboundError::Invalid("unusable ETag".into())))
}

/// An href of a reply, resolved against the URL the reply came from.
fn resolve(base: &Url, href: &str) -> Result<Url, CaldavError> {
    base.join(href)
        .map_err(|err| CaldavError::Malformed(format!("unusable href: {err}")))
}

/// What goes in a multiget's `<href>`: the path on the calendar's origin, else the URL.
fn href_for(calendar: &Url, url: &Url) -> String {
    if calendar.origin() == url.origin() {
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    } else {
        url.as_str().to_owned()
    }
}

/// The same resource, a collection's trailing slash aside.
fn same_resource(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
        && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
        && a.query() == b.query()
}

/// `url` with a trailing slash, so that joining a name goes inside it.
fn as_collection(url: &Url) -> Url {
    let mut url = url.clone();
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::time::Duration;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("120"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(120)));
        let later =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3600));
        headers.insert(header::RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600));
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        let err = status_error_from(503, &headers, String::new());
        assert!(err.is_transient());
        assert_eq!(err.retry_after(), Some(Duration::ZERO));
    }

    #[test]
    fn hrefs_resolve_against_the_request_url() {
        let base = Url::parse("https://dav.example/cal/work/").unwrap();
        assert_eq!(
            resolve(&base, "/cal/work/a%20b.ics").unwrap().as_str(),
            "https://dav.example/cal/work/a%20b.ics"
        );
        assert_eq!(
            resolve(&base, "https://other.example/x.ics")
                .unwrap()
                .as_str(),
            "https://other.example/x.ics"
        );
        assert!(same_resource(
            &base,
            &Url::parse("https://dav.example/cal/work").unwrap()
        ));
        assert_eq!(
            href_for(
                &base,
                &Url::parse("https://dav.example/cal/work/a%40b.ics").unwrap()
            ),
            "/cal/work/a%40b.ics"
        );
        assert_eq!(
            as_collection(&Url::parse("https://dav.example/home").unwrap()).as_str(),
            "https://dav.example/home/"
        );
    }

    #[test]
    fn debug_hides_the_password() {
        let guard = crate::providers::outbound::OutboundGuard::new(
            crate::providers::outbound::GuardSettings {
                allow_private_hosts: false,
                connect_timeout: Duration::from_secs(1),
                total_timeout: Duration::from_secs(1),
                max_redirects: 5,
                max_body_bytes: 1024,
                extra_roots: Vec::new(),
            },
        )
        .unwrap();
        let client = CaldavClient::new(guard, "alice", "s3cret-pw");
        let shown = format!("{client:?}");
        assert!(shown.contains("alice"));
        assert!(!shown.contains("s3cret-pw"));
        assert!(
            !shown.contains(&base64::engine::general_purpose::STANDARD.encode("alice:s3cret-pw"))
        );
    }
}
