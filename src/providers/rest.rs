//! JSON over HTTP(S) with a bearer token, through the outbound guard: what the Google Calendar
//! and Microsoft Graph clients share (sending, reading a JSON answer, shortening a provider's
//! message for logs and answers).

use http::header::{self, HeaderName};
use http::{HeaderValue, Method};
use serde::de::DeserializeOwned;
use url::Url;

use super::error::ProviderError;
use super::outbound::{OutboundError, OutboundGuard, OutboundRequest, OutboundResponse};

/// The longest provider message kept.
const MESSAGE_CHARS: usize = 200;

/// Sends `method url` with `Authorization: Bearer <bearer>`, `Accept: application/json`, the
/// JSON `body` if any and the `extra` headers; the answer is read whole, and one that is not
/// a success is the provider's error as `error_of` reads it.
pub async fn send(
    guard: &OutboundGuard,
    method: Method,
    url: Url,
    bearer: &str,
    body: Option<&serde_json::Value>,
    extra: &[(HeaderName, String)],
    error_of: fn(&OutboundResponse) -> ProviderError,
) -> Result<OutboundResponse, ProviderError> {
    let mut request = OutboundRequest::new(method, url)
        .header(
            header::AUTHORIZATION,
            header_value(&format!("Bearer {bearer}"))?,
        )
        .header(header::ACCEPT, HeaderValue::from_static("application/json"));
    for (name, value) in extra {
        request = request.header(name.clone(), header_value(value)?);
    }
    if let Some(body) = body {
        let bytes = serde_json::to_vec(body)
            .map_err(|err| ProviderError::Malformed(format!("request body: {err}")))?;
        request = request
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(bytes);
    }
    let response = guard.send(request).await?;
    if response.status.is_success() {
        Ok(response)
    } else {
        Err(error_of(&response))
    }
}

/// The provider's own message of an error answer (shortened), or the status's reason.
pub fn message(response: &OutboundResponse, from_body: Option<&str>) -> String {
    from_body
        .map(short)
        .filter(|message| !message.is_empty())
        .unwrap_or_else(|| {
            response
                .status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_owned()
        })
}

/// A header value, or an invalid-request error (a token or tag with control characters).
pub fn header_value(value: &str) -> Result<HeaderValue, ProviderError> {
    HeaderValue::from_str(value).map_err(|_| {
        ProviderError::Outbound(OutboundError::Invalid("unusable header value".into()))
    })
}

/// The answer's JSON body as `T`.
pub fn json<T: DeserializeOwned>(response: &OutboundResponse) -> Result<T, ProviderError> {
    serde_json::from_slice(&response.body)
        .map_err(|err| ProviderError::Malformed(format!("unreadable JSON answer: {err}")))
}

/// `text` on one line, without control characters, at most 200 characters.
pub fn short(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|ch| !ch.is_control())
        .take(MESSAGE_CHARS)
        .collect()
}

/// `base` with `segments` appended, each percent-encoded as one path segment (calendar ids
/// hold `@` and `#`).
pub fn endpoint(base: &Url, segments: &[&str]) -> Result<Url, ProviderError> {
    let mut url = base.clone();
    {
        let mut path = url.path_segments_mut().map_err(|()| {
            ProviderError::Outbound(OutboundError::Invalid(
                "the API URL cannot take a path".into(),
            ))
        })?;
        path.pop_if_empty();
        path.extend(segments);
    }
    Ok(url)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_one_by_one() {
        let base = Url::parse("https://api.example/calendar/v3/").unwrap();
        let url = endpoint(&base, &["calendars", "a#b@group.example", "events"]).unwrap();
        assert_eq!(
            url.as_str(),
            "https://api.example/calendar/v3/calendars/a%23b@group.example/events"
        );
        let bare = Url::parse("https://api.example/v1.0").unwrap();
        assert_eq!(
            endpoint(&bare, &["me", "events", "x/y"]).unwrap().as_str(),
            "https://api.example/v1.0/me/events/x%2Fy"
        );
    }

    #[test]
    fn messages_are_short_and_on_one_line() {
        assert_eq!(short("a\n  b\tc"), "a b c");
        assert_eq!(short(&"x".repeat(500)).len(), 200);
    }
}
