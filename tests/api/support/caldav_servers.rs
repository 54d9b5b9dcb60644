//! Real CalDAV servers for the tests: Radicale and Xandikos, each started per test on a free
//! loopback port with its own temporary data directory, plus seeding helpers that act as
//! "another client" (plain reqwest, not through the outbound guard).
//!
//! The binaries come from `.ci/needs.sh`'s `ensure_caldav_servers` (pinned versions in venvs
//! under `${BOWLINE_TOOLS_DIR:-$HOME/.cache/bowline}`), or from `$BOWLINE_RADICALE` /
//! `$BOWLINE_XANDIKOS`. A missing binary fails the test: it never passes without running.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};

/// How long a server may take to answer after it was started.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long one seeding request may take.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaldavKind {
    Radicale,
    Xandikos,
}

/// A running CalDAV server, killed when dropped.
pub struct CaldavServer {
    pub kind: CaldavKind,
    /// `http://127.0.0.1:PORT/`
    pub base_url: String,
    pub username: String,
    pub password: String,
    port: u16,
    strict: bool,
    data: tempfile::TempDir,
    child: Option<Child>,
    http: reqwest::Client,
}

impl CaldavServer {
    /// Radicale (htpasswd user `alice` with a random password, rights owner_only, no auth
    /// delay, strict_preconditions off) or Xandikos (`--defaults`, no authentication).
    pub async fn start(kind: CaldavKind) -> Self {
        Self::start_with(kind, false).await
    }

    /// Radicale with `[storage] strict_preconditions = True` (a PUT over an existing
    /// resource without If-Match is refused with 412).
    pub async fn start_radicale_strict() -> Self {
        Self::start_with(CaldavKind::Radicale, true).await
    }

    async fn start_with(kind: CaldavKind, strict: bool) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let binary = binary(kind);
        let data = tempfile::Builder::new()
            .prefix(match kind {
                CaldavKind::Radicale => "bowline-radicale-",
                CaldavKind::Xandikos => "bowline-xandikos-",
            })
            .tempdir()
            .expect("temporary data directory");
        let (username, password) = match kind {
            CaldavKind::Radicale => ("alice".to_owned(), format!("pw-{}", uuid::Uuid::new_v4())),
            CaldavKind::Xandikos => ("user".to_owned(), "any-password".to_owned()),
        };
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_WAIT)
            .build()
            .expect("seeding HTTP client");
        let mut server = Self {
            kind,
            base_url: String::new(),
            username,
            password,
            port: 0,
            strict,
            data,
            child: None,
            http,
        };
        server.write_users();
        // The port is free when picked but could be taken before the server binds it; try a
        // few ports before giving up.
        let mut attempts = 0;
        loop {
            attempts += 1;
            server.port = free_port();
            server.base_url = format!("http://127.0.0.1:{}/", server.port);
            match server.spawn_and_wait(&binary).await {
                Ok(()) => return server,
                Err(message) if attempts < 3 && message.contains("in use") => continue,
                Err(message) => panic!("{message}"),
            }
        }
    }

    /// Where calendars are made: Radicale `base/alice/`, Xandikos `base/user/calendars/`.
    pub fn calendar_home(&self) -> String {
        match self.kind {
            CaldavKind::Radicale => format!("{}{}/", self.base_url, self.username),
            CaldavKind::Xandikos => format!("{}user/calendars/", self.base_url),
        }
    }

    /// MKCALENDAR `<home>/<slug>/` (VEVENT only); returns the collection URL.
    pub async fn make_calendar(&self, slug: &str, name: &str) -> String {
        let url = format!("{}{slug}/", self.calendar_home());
        let body = format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:a="http://apple.com/ns/ical/">
 <d:set><d:prop>
  <d:displayname>{name}</d:displayname>
  <a:calendar-color>#FF5733FF</a:calendar-color>
  <c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set>
 </d:prop></d:set>
</c:mkcalendar>"#
        );
        let response = self
            .request(Method::from_bytes(b"MKCALENDAR").unwrap(), &url)
            .header("Content-Type", "application/xml; charset=utf-8")
            .body(body)
            .send()
            .await
            .expect("MKCALENDAR");
        assert_eq!(response.status(), StatusCode::CREATED, "MKCALENDAR {url}");
        url
    }

    /// An unconditional PUT, as another client would; returns the new ETag (quoted).
    pub async fn put_event(&self, calendar_url: &str, file_name: &str, ics: &str) -> String {
        let url = format!("{calendar_url}{file_name}");
        let response = self
            .request(Method::PUT, &url)
            .header("Content-Type", "text/calendar; charset=utf-8")
            .body(ics.to_owned())
            .send()
            .await
            .expect("PUT");
        let status = response.status();
        assert!(status.is_success(), "PUT {url}: {status}");
        match response.headers().get("etag") {
            Some(etag) => etag.to_str().unwrap().to_owned(),
            None => self.get(&url).await.expect("the PUT resource").0,
        }
    }

    /// GET: `(etag, body)`, or `None` on 404.
    pub async fn get(&self, resource_url: &str) -> Option<(String, String)> {
        let response = self
            .request(Method::GET, resource_url)
            .send()
            .await
            .expect("GET");
        if response.status() == StatusCode::NOT_FOUND {
            return None;
        }
        assert!(response.status().is_success(), "GET {resource_url}");
        let etag = response
            .headers()
            .get("etag")
            .map(|etag| etag.to_str().unwrap().to_owned())
            .unwrap_or_default();
        Some((etag, response.text().await.unwrap()))
    }

    /// An unconditional DELETE (404 is fine: already gone).
    pub async fn delete(&self, resource_url: &str) {
        let response = self
            .request(Method::DELETE, resource_url)
            .send()
            .await
            .expect("DELETE");
        let status = response.status();
        assert!(
            status.is_success() || status == StatusCode::NOT_FOUND,
            "DELETE {resource_url}: {status}"
        );
    }

    /// The calendar's resources as `(url, etag)` (PROPFIND Depth 1), sorted by URL.
    pub async fn list(&self, calendar_url: &str) -> Vec<(String, String)> {
        let body = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:"><d:prop><d:getetag/><d:resourcetype/></d:prop></d:propfind>"#;
        let response = self
            .request(Method::from_bytes(b"PROPFIND").unwrap(), calendar_url)
            .header("Depth", "1")
            .header("Content-Type", "application/xml; charset=utf-8")
            .body(body)
            .send()
            .await
            .expect("PROPFIND");
        assert_eq!(response.status(), StatusCode::MULTI_STATUS);
        let xml = response.text().await.unwrap();
        let base = url::Url::parse(calendar_url).unwrap();
        let mut members = propfind_members(&xml)
            .into_iter()
            .map(|(href, etag)| (base.join(&href).unwrap().to_string(), etag))
            .filter(|(url, _)| url.trim_end_matches('/') != calendar_url.trim_end_matches('/'))
            .collect::<Vec<_>>();
        members.sort();
        members
    }

    /// Radicale: changes `alice`'s password by rewriting the users file (plain htpasswd,
    /// which Radicale re-reads at every login while `htpasswd_cache` is off, its default).
    pub fn set_password(&mut self, password: &str) {
        assert_eq!(
            self.kind,
            CaldavKind::Radicale,
            "only Radicale has passwords"
        );
        self.password = password.to_owned();
        self.write_users();
    }

    /// The port the server listens on (kept across [`Self::restart`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// SIGKILLs the server now and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): connections are still accepted, nothing is answered.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, which: &str) {
        let pid = self.child.as_ref().expect("running").id();
        let status = std::process::Command::new("kill")
            .args([which, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {which} {pid}");
    }

    /// Starts the server again on the same port and data directory.
    pub async fn restart(&mut self) {
        self.kill();
        let binary = binary(self.kind);
        if let Err(message) = self.spawn_and_wait(&binary).await {
            panic!("{message}");
        }
    }

    fn request(&self, method: Method, url: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, url);
        match self.kind {
            CaldavKind::Radicale => request.basic_auth(&self.username, Some(&self.password)),
            CaldavKind::Xandikos => request,
        }
    }

    fn log_path(&self) -> PathBuf {
        self.data.path().join("server.log")
    }

    /// Radicale's users file (plain htpasswd); Xandikos has no authentication.
    fn write_users(&self) {
        if self.kind == CaldavKind::Radicale {
            std::fs::write(
                self.data.path().join("users"),
                format!("{}:{}\n", self.username, self.password),
            )
            .expect("htpasswd file");
        }
    }

    fn command(&self, binary: &Path) -> Command {
        let dir = self.data.path();
        let mut command = Command::new(binary);
        match self.kind {
            CaldavKind::Radicale => {
                let config = format!(
                    "[server]\nhosts = 127.0.0.1:{port}\n\
                     [auth]\ntype = htpasswd\nhtpasswd_filename = {users}\n\
                     htpasswd_encryption = plain\ndelay = 0\n\
                     [rights]\ntype = owner_only\n\
                     [storage]\nfilesystem_folder = {collections}\nstrict_preconditions = {strict}\n\
                     [logging]\nlevel = warning\n",
                    port = self.port,
                    users = dir.join("users").display(),
                    collections = dir.join("collections").display(),
                    strict = if self.strict { "True" } else { "False" },
                );
                let path = dir.join("config");
                std::fs::write(&path, config).expect("radicale config");
                command.arg("-C").arg(path);
            }
            CaldavKind::Xandikos => {
                command
                    .arg("serve")
                    .arg("-d")
                    .arg(dir.join("root"))
                    .arg("--state-dir")
                    .arg(dir.join("state"))
                    .arg("-l")
                    .arg("127.0.0.1")
                    .arg("-p")
                    .arg(self.port.to_string())
                    .arg("--defaults")
                    .arg("--no-detect-systemd");
            }
        }
        command
            .env("PYTHONUNBUFFERED", "1")
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("xdg"))
            .stdin(Stdio::null());
        command
    }

    async fn spawn_and_wait(&mut self, binary: &Path) -> Result<(), String> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("server log");
        let child = self
            .command(binary)
            .stdout(log.try_clone().expect("server log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| panic!("starting {}: {err}", binary.display()));
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(format!(
                    "{:?} exited early ({status}) on port {}; log tail:\n{}",
                    self.kind,
                    self.port,
                    self.log_tail()
                ));
            }
            if self.answers().await {
                return Ok(());
            }
            if started.elapsed() > START_WAIT {
                self.kill();
                return Err(format!(
                    "{:?} did not answer within {START_WAIT:?} on port {}; log tail:\n{}",
                    self.kind,
                    self.port,
                    self.log_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An authenticated PROPFIND gets 207.
    async fn answers(&self) -> bool {
        let url = match self.kind {
            CaldavKind::Radicale => self.base_url.clone(),
            CaldavKind::Xandikos => format!("{}user/", self.base_url),
        };
        let request = self
            .request(Method::from_bytes(b"PROPFIND").unwrap(), &url)
            .header("Depth", "0")
            .header("Content-Type", "application/xml; charset=utf-8")
            .timeout(Duration::from_secs(2))
            .body(
                r#"<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/></d:prop></d:propfind>"#,
            );
        matches!(request.send().await, Ok(response) if response.status() == StatusCode::MULTI_STATUS)
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for CaldavServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The server's binary: `$BOWLINE_RADICALE` / `$BOWLINE_XANDIKOS`, else the venvs of
/// `.ci/needs.sh`. Panics when it is missing.
fn binary(kind: CaldavKind) -> PathBuf {
    let (variable, venv, name) = match kind {
        CaldavKind::Radicale => ("BOWLINE_RADICALE", "radicale-venv", "radicale"),
        CaldavKind::Xandikos => ("BOWLINE_XANDIKOS", "xandikos-venv", "xandikos"),
    };
    let path = match std::env::var_os(variable) {
        Some(path) => PathBuf::from(path),
        None => {
            let tools = std::env::var_os("BOWLINE_TOOLS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/bowline")
                });
            tools.join(venv).join("bin").join(name)
        }
    };
    assert!(
        path.is_file(),
        "{name} is not installed at {} (set {variable} or run .ci/test, whose \
         ensure_caldav_servers installs the pinned version)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

/// `(href, etag)` of every `DAV:response` with a `DAV:getetag`, read by namespace.
fn propfind_members(xml: &str) -> Vec<(String, String)> {
    use quick_xml::events::Event;
    use quick_xml::name::{Namespace, ResolveResult};

    let mut reader = quick_xml::reader::NsReader::from_str(xml);
    let mut members = Vec::new();
    let (mut href, mut etag) = (String::new(), String::new());
    let mut field: Option<&'static str> = None;
    loop {
        let (ns, event) = reader.read_resolved_event().expect("PROPFIND XML");
        let in_dav = matches!(ns, ResolveResult::Bound(Namespace("DAV:")));
        match event {
            Event::Start(start) if in_dav => match start.local_name().as_ref() {
                "response" => (href, etag) = (String::new(), String::new()),
                "href" => field = Some("href"),
                "getetag" => field = Some("etag"),
                _ => {}
            },
            Event::End(end) if in_dav => {
                field = None;
                if end.local_name().as_ref() == "response" && !etag.is_empty() {
                    members.push((href.trim().to_owned(), etag.trim().to_owned()));
                }
            }
            Event::Text(text) => match field {
                Some("href") => href.push_str(&text.xml10_content()),
                Some("etag") => etag.push_str(&text.xml10_content()),
                _ => {}
            },
            Event::GeneralRef(reference) => {
                let resolved =
                    quick_xml::escape::resolve_predefined_entity(&reference.xml10_content())
                        .unwrap_or("");
                match field {
                    Some("href") => href.push_str(resolved),
                    Some("etag") => etag.push_str(resolved),
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    members
}
