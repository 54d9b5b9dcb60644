//! The one outbound guard every request to another server (CalDAV servers, federation
//! peers, Google, Microsoft) goes through.
//!
//! Unless private hosts are allowed (`FEDERATION_ALLOW_PRIVATE_HOSTS`, for tests and closed
//! networks) it sends over HTTPS only and to public addresses only: names are resolved by
//! the guard's own resolver (over the system's, or an injected [`NameLookup`]), which
//! refuses a name when any of its addresses is not public and hands the connector exactly
//! the addresses it checked, so a DNS answer that changes between the check and the
//! connection cannot point it somewhere else; IP literals are checked before sending.
//! Redirects are followed by the guard, each hop checked the same way, and the
//! `Authorization` header never crosses to another origin. Every exchange has a connect
//! timeout, a total timeout that includes reading the body, and a cap on the body's size; a
//! request may return redirects instead of following them, and set its own total timeout
//! and body cap. A stream ([`OutboundGuard::open`], for Server-Sent Events) passes the same
//! checks, never follows a redirect, and is timed only until its response head arrives.

mod address;
mod resolver;

use std::error::Error as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderName};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use url::{Host, Url};

use crate::domain::version::IMPLEMENTATION;

use resolver::{GuardResolver, RefusedName};
pub use resolver::{NameLookup, SystemLookup};

/// How the guard treats outbound requests.
#[derive(Debug, Clone)]
pub struct GuardSettings {
    /// Allow plain HTTP and loopback, private and other non-public addresses
    /// (`FEDERATION_ALLOW_PRIVATE_HOSTS`).
    pub allow_private_hosts: bool,
    /// The longest a TCP (and TLS) connection may take to open.
    pub connect_timeout: Duration,
    /// The longest a whole exchange may take: every redirect hop and reading the body (a
    /// stream: until its response head). A request may set its own.
    pub total_timeout: Duration,
    /// How many redirects one exchange follows before it fails with
    /// [`OutboundError::TooManyRedirects`].
    pub max_redirects: usize,
    /// Response bodies larger than this fail with [`OutboundError::TooLarge`] (streams
    /// excepted). A request may set its own.
    pub max_body_bytes: usize,
    /// CA certificates trusted beside the public web roots (`OUTBOUND_CA_FILE`).
    pub extra_roots: Vec<reqwest::Certificate>,
}

/// Reads `OUTBOUND_CA_FILE`: a PEM file of at least one CA certificate.
pub fn read_ca_file(path: &str) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path).map_err(|err| format!("cannot read {path:?}: {err}"))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|err| format!("{path:?} is not a PEM file of certificates: {err}"))?;
    if certificates.is_empty() {
        return Err(format!("{path:?} holds no certificate"));
    }
    Ok(certificates)
}

/// Sends requests to other servers under the rules of this module. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OutboundGuard {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: GuardSettings,
    /// Built on first use: a server that never talks to a provider keeps no TLS roots.
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
    resolver: GuardResolver,
}

/// A request for [`OutboundGuard::send`] or [`OutboundGuard::open`].
#[derive(Debug, Clone)]
pub struct OutboundRequest {
    /// The method, kept across redirects except where HTTP says otherwise.
    pub method: Method,
    /// The first URL; it must not carry credentials (send an `Authorization` header instead).
    pub url: Url,
    /// The request's headers; `Authorization` is dropped when a redirect leaves the origin.
    pub headers: HeaderMap,
    /// The body, if any.
    pub body: Option<Bytes>,
    /// This exchange's departures from the guard's settings.
    options: ExchangeOptions,
}

/// What one exchange does differently from the guard's settings; the default changes nothing.
#[derive(Debug, Clone, Default)]
struct ExchangeOptions {
    /// Return a redirect as it is instead of following it.
    no_redirects: bool,
    /// The total timeout of this exchange instead of [`GuardSettings::total_timeout`].
    timeout: Option<Duration>,
    /// The body cap of this exchange instead of [`GuardSettings::max_body_bytes`].
    max_body_bytes: Option<usize>,
}

impl OutboundRequest {
    /// A request without headers or body.
    pub fn new(method: Method, url: Url) -> Self {
        Self {
            method,
            url,
            headers: HeaderMap::new(),
            body: None,
            options: ExchangeOptions::default(),
        }
    }

    /// Adds a header (keeping earlier values of the same name).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Returns a redirect (3xx with a `Location`) as it is, status, headers and body, instead
    /// of following it. The first URL is still checked like any other.
    pub fn without_redirects(mut self) -> Self {
        self.options.no_redirects = true;
        self
    }

    /// The longest this exchange may take, every redirect hop and reading the body included
    /// (for a stream: until its response head), instead of the guard's total timeout; the
    /// connect timeout stays the guard's.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// The largest response body this exchange accepts, instead of the guard's cap; on a
    /// stream, the most it may bring in all.
    pub fn max_body_bytes(mut self, max_body_bytes: usize) -> Self {
        self.options.max_body_bytes = Some(max_body_bytes);
        self
    }
}

/// A response read whole (up to the size cap).
#[derive(Debug)]
pub struct OutboundResponse {
    /// The status of the last hop (a redirect's, when the request does not follow them).
    pub status: StatusCode,
    /// The headers of the last hop.
    pub headers: HeaderMap,
    /// The body of the last hop.
    pub body: Bytes,
    /// The final URL, after redirects.
    pub url: Url,
}

/// A response whose body is read piece by piece as it arrives (Server-Sent Events), from
/// [`OutboundGuard::open`].
#[derive(Debug)]
pub struct OutboundStream {
    /// The response's status (a redirect's: streams never follow them).
    pub status: StatusCode,
    /// The response's headers.
    pub headers: HeaderMap,
    /// The URL the stream was opened on.
    pub url: Url,
    response: reqwest::Response,
    /// Bytes the body may still bring when the request set a body cap.
    remaining: Option<usize>,
}

impl OutboundStream {
    /// The next piece of the body as soon as it arrives, or `None` at the end of the stream.
    /// Nothing bounds how long it waits: wrap it in a timeout to notice a silent server.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, OutboundError> {
        let chunk = self.response.chunk().await.map_err(map_reqwest_error)?;
        if let (Some(chunk), Some(remaining)) = (&chunk, &mut self.remaining) {
            *remaining = remaining
                .checked_sub(chunk.len())
                .ok_or(OutboundError::TooLarge)?;
        }
        Ok(chunk)
    }
}

/// Why an outbound request failed. Messages never contain a URL's credentials or a body.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The guard refused the target (its scheme, credentials in its URL, or the class of
    /// its address).
    #[error("outbound request refused: {0}")]
    Refused(String),
    /// The connection or the whole exchange took too long.
    #[error("outbound request timed out")]
    Timeout,
    /// Name resolution, the connection or TLS failed.
    #[error("could not reach the server: {0}")]
    Connect(String),
    /// The response body is larger than allowed.
    #[error("the response is too large")]
    TooLarge,
    /// More redirects than allowed.
    #[error("too many redirects")]
    TooManyRedirects,
    /// The request itself cannot be sent (a URL without a host, a bad header, ...).
    #[error("invalid outbound request: {0}")]
    Invalid(String),
}

impl OutboundGuard {
    /// Builds the guard on the system resolver; its HTTP client (rustls with ring,
    /// compiled-in web PKI roots, no proxy, no automatic redirects, the guard's resolver) is
    /// built on its first request.
    pub fn new(settings: GuardSettings) -> Result<Self, OutboundError> {
        Self::with_lookup(settings, Arc::new(SystemLookup))
    }

    /// Builds the guard on `names` instead of the system resolver (a closed network's own
    /// resolver, or a test's). Every connection asks `names` once and goes only to the
    /// addresses of that answer, after checking all of them.
    pub fn with_lookup(
        settings: GuardSettings,
        names: Arc<dyn NameLookup>,
    ) -> Result<Self, OutboundError> {
        let resolver = GuardResolver::new(settings.allow_private_hosts, names);
        Ok(Self {
            inner: Arc::new(Inner {
                settings,
                client: std::sync::OnceLock::new(),
                resolver,
            }),
        })
    }

    /// The HTTP client, built the first time it is needed.
    fn client(&self) -> Result<&reqwest::Client, OutboundError> {
        self.inner
            .client
            .get_or_init(|| build_client(&self.inner.settings, &self.inner.resolver))
            .as_ref()
            .map_err(|message| OutboundError::Invalid(message.clone()))
    }

    /// Whether plain HTTP and non-public addresses are allowed.
    pub fn allows_private_hosts(&self) -> bool {
        self.inner.settings.allow_private_hosts
    }

    /// Checks scheme and host class of `url` without sending (used to validate user input
    /// early). A name is resolved and every address it has must be allowed.
    pub async fn check(&self, url: &Url) -> Result<(), OutboundError> {
        let host = self.check_static(url)?;
        if let Host::Domain(name) = host
            && !self.allows_private_hosts()
        {
            let lookup = self.inner.resolver.lookup(&name);
            match tokio::time::timeout(self.inner.settings.connect_timeout, lookup).await {
                Err(_) => return Err(OutboundError::Timeout),
                Ok(Err(RefusedName::Refused(reason))) => {
                    return Err(OutboundError::Refused(reason));
                }
                Ok(Err(RefusedName::Lookup(message))) => {
                    return Err(OutboundError::Connect(message));
                }
                Ok(Ok(_)) => {}
            }
        }
        Ok(())
    }

    /// Sends `request`, following redirects unless it says otherwise, and reads the whole
    /// response body, all within the request's total timeout (or the guard's).
    pub async fn send(&self, request: OutboundRequest) -> Result<OutboundResponse, OutboundError> {
        let settings = &self.inner.settings;
        let total = request.options.timeout.unwrap_or(settings.total_timeout);
        let max_body_bytes = request
            .options
            .max_body_bytes
            .unwrap_or(settings.max_body_bytes);
        let whole = async {
            let (response, url) = self.exchange(request).await?;
            read_whole(response, url, max_body_bytes).await
        };
        match tokio::time::timeout(total, whole).await {
            Ok(result) => result,
            Err(_) => Err(OutboundError::Timeout),
        }
    }

    /// Opens `request` as a stream (Server-Sent Events): the same checks as [`Self::send`],
    /// but a redirect is returned as the stream's status, never followed, and the request's
    /// timeout (or the guard's total timeout) bounds only the wait for the response's head;
    /// the body then comes chunk by chunk for as long as the server sends it. The guard's
    /// body cap does not apply to a stream; a cap the request sets
    /// ([`OutboundRequest::max_body_bytes`]) does.
    pub async fn open(&self, request: OutboundRequest) -> Result<OutboundStream, OutboundError> {
        let head_timeout = request
            .options
            .timeout
            .unwrap_or(self.inner.settings.total_timeout);
        let remaining = request.options.max_body_bytes;
        let head = self.exchange(request.without_redirects());
        let (mut response, url) = match tokio::time::timeout(head_timeout, head).await {
            Ok(result) => result?,
            Err(_) => return Err(OutboundError::Timeout),
        };
        if let (Some(max), Some(length)) = (remaining, response.content_length())
            && length > max as u64
        {
            return Err(OutboundError::TooLarge);
        }
        Ok(OutboundStream {
            status: response.status(),
            headers: std::mem::take(response.headers_mut()),
            url,
            response,
            remaining,
        })
    }

    /// Scheme, credentials and IP-literal checks that need no lookup; returns the host.
    fn check_static(&self, url: &Url) -> Result<Host<String>, OutboundError> {
        let allow_private = self.allows_private_hosts();
        match url.scheme() {
            "https" => {}
            "http" if allow_private => {}
            "http" => {
                return Err(OutboundError::Refused(
                    "plain http is not allowed; use https".into(),
                ));
            }
            other => {
                return Err(OutboundError::Refused(format!(
                    "the {other:?} scheme is not allowed"
                )));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OutboundError::Refused(
                "the URL carries credentials; they belong in the Authorization header".into(),
            ));
        }
        let host = url
            .host()
            .ok_or_else(|| OutboundError::Invalid("the URL has no host".into()))?
            .to_owned();
        if !allow_private {
            let ip = match &host {
                Host::Ipv4(v4) => Some(IpAddr::V4(*v4)),
                Host::Ipv6(v6) => Some(IpAddr::V6(*v6)),
                Host::Domain(_) => None,
            };
            if let Some(ip) = ip
                && let Some(reason) = address::non_public_reason(ip)
            {
                return Err(OutboundError::Refused(format!("{ip} is a {reason}")));
            }
        }
        Ok(host)
    }

    /// Sends `request` hop by hop, each hop checked, until a response that is not a redirect
    /// to follow; returns it with its URL. Without a timeout of its own: callers bound it.
    async fn exchange(
        &self,
        request: OutboundRequest,
    ) -> Result<(reqwest::Response, Url), OutboundError> {
        self.exchange_through(request, |hop| self.send_hop(hop))
            .await
    }

    /// One hop through the guard's client (and so its resolver).
    async fn send_hop(&self, hop: reqwest::Request) -> Result<reqwest::Response, OutboundError> {
        self.client()?.execute(hop).await.map_err(map_reqwest_error)
    }

    /// [`Self::exchange`] with every hop that passed the checks handed to `send_hop`: the
    /// guard's client, or in unit tests a stand-in for a public server's redirect.
    async fn exchange_through<SendHop, Hop>(
        &self,
        request: OutboundRequest,
        send_hop: SendHop,
    ) -> Result<(reqwest::Response, Url), OutboundError>
    where
        SendHop: Fn(reqwest::Request) -> Hop,
        Hop: Future<Output = Result<reqwest::Response, OutboundError>>,
    {
        let OutboundRequest {
            mut method,
            mut url,
            mut headers,
            mut body,
            options,
        } = request;
        let mut redirects = 0usize;
        loop {
            self.check_static(&url)?;
            let mut outgoing = reqwest::Request::new(method.clone(), url.clone());
            *outgoing.headers_mut() = headers.clone();
            if let Some(bytes) = &body {
                *outgoing.body_mut() = Some(reqwest::Body::from(bytes.clone()));
            }
            let response = send_hop(outgoing).await?;
            let status = response.status();
            let location = response.headers().get(header::LOCATION).cloned();
            let next = match (is_redirect(status), location) {
                (true, Some(location)) if !options.no_redirects => Some(location),
                _ => None,
            };
            let Some(location) = next else {
                return Ok((response, url));
            };
            if redirects >= self.inner.settings.max_redirects {
                return Err(OutboundError::TooManyRedirects);
            }
            redirects += 1;
            let target = location
                .to_str()
                .ok()
                .and_then(|location| url.join(location).ok())
                .ok_or_else(|| OutboundError::Invalid("unreadable redirect Location".into()))?;
            drop(response);
            if changes_to_get(status, &method) {
                method = if method == Method::HEAD {
                    Method::HEAD
                } else {
                    Method::GET
                };
                body = None;
                headers.remove(header::CONTENT_TYPE);
                headers.remove(header::CONTENT_LENGTH);
                headers.remove(header::CONTENT_ENCODING);
            }
            if origin(&target) != origin(&url) {
                headers.remove(header::AUTHORIZATION);
                headers.remove(header::COOKIE);
                headers.remove(header::PROXY_AUTHORIZATION);
            }
            url = target;
        }
    }
}

/// Reads the body of `response` whole, failing once it exceeds `max_body_bytes`.
async fn read_whole(
    mut response: reqwest::Response,
    url: Url,
    max_body_bytes: usize,
) -> Result<OutboundResponse, OutboundError> {
    if response
        .content_length()
        .is_some_and(|length| length > max_body_bytes as u64)
    {
        return Err(OutboundError::TooLarge);
    }
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(map_reqwest_error)? {
        if body.len().saturating_add(chunk.len()) > max_body_bytes {
            return Err(OutboundError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(OutboundResponse {
        status,
        headers,
        body: body.freeze(),
        url,
    })
}

/// `Retry-After` of a response: delay-seconds or an HTTP-date (a date in the past is no
/// wait at all).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// 303 turns every method but HEAD into GET; 301 and 302 do so for POST only (what browsers
/// do). Everything else keeps its method and body: a PROPFIND redirected from
/// `/.well-known/caldav` with 301 stays a PROPFIND.
fn changes_to_get(status: StatusCode, method: &Method) -> bool {
    match status {
        StatusCode::SEE_OTHER => true,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => *method == Method::POST,
        _ => false,
    }
}

fn origin(url: &Url) -> (String, Option<String>, Option<u16>) {
    (
        url.scheme().to_owned(),
        url.host_str().map(str::to_ascii_lowercase),
        url.port_or_known_default(),
    )
}

fn map_reqwest_error(err: reqwest::Error) -> OutboundError {
    let mut source = err.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RefusedName>() {
            return match refused {
                RefusedName::Refused(reason) => OutboundError::Refused(reason.clone()),
                RefusedName::Lookup(message) => OutboundError::Connect(message.clone()),
            };
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return OutboundError::Timeout;
    }
    OutboundError::Connect(error_chain(&err.without_url()))
}

/// The error and its causes, one after another (without the URL, which may carry secrets in
/// its query).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The guard's HTTP client: rustls with ring, compiled-in web PKI roots, no proxy (a proxy
/// would resolve names itself, past the guard's checks), no automatic redirects, the
/// guard's resolver, a connect timeout and no total timeout of its own.
fn build_client(
    settings: &GuardSettings,
    resolver: &GuardResolver,
) -> Result<reqwest::Client, String> {
    // reqwest has no TLS provider of its own here; ring is the only one compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|cert| reqwest::Certificate::from_der(cert.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("root certificates: {err}"))?;
    let roots = roots
        .into_iter()
        .chain(settings.extra_roots.iter().cloned());
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .user_agent(IMPLEMENTATION)
        // The total timeout is the exchange's (`OutboundGuard::send`), not the client's: a
        // client-wide one would also cut streams and outlast a shorter per-request timeout.
        .connect_timeout(settings.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .referer(false)
        .dns_resolver(Arc::new(resolver.clone()))
        // Peers such as Radicale's built-in server close every connection; keep idle
        // connections briefly only.
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .map_err(|err| format!("HTTP client: {}", error_chain(&err)))
}

#[cfg(test)]
mod tests;
