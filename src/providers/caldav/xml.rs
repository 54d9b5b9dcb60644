//! WebDAV XML: reading multistatus and error bodies by namespace (servers use any prefixes:
//! Radicale a default `DAV:` namespace, Xandikos `ns0:`, iCloud and Google others), and the
//! request bodies the client sends.

use quick_xml::escape::{escape, resolve_predefined_entity};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

/// The `DAV:` namespace.
pub(crate) const DAV: &str = "DAV:";
/// CalDAV (RFC 4791).
pub(crate) const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";
/// Calendar Server extensions (`getctag`).
pub(crate) const CALSERVER: &str = "http://calendarserver.org/ns/";
/// Apple's iCal extensions (`calendar-color`).
pub(crate) const APPLE_ICAL: &str = "http://apple.com/ns/ical/";

/// Deeper documents than this are refused (no server needs it; it bounds the work).
const MAX_DEPTH: usize = 64;

/// One XML element with its namespace, attributes (unprefixed ones), text and children.
#[derive(Debug, Clone, Default)]
pub(crate) struct Element {
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) text: String,
    pub(crate) children: Vec<Element>,
}

impl Element {
    pub(crate) fn is(&self, ns: &str, name: &str) -> bool {
        self.ns == ns && self.name == name
    }

    pub(crate) fn child(&self, ns: &str, name: &str) -> Option<&Element> {
        self.children.iter().find(|child| child.is(ns, name))
    }

    pub(crate) fn children_named<'a>(
        &'a self,
        ns: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |child| child.is(ns, name))
    }

    pub(crate) fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The element's text, trimmed; `None` when empty.
    pub(crate) fn trimmed_text(&self) -> Option<String> {
        let text = self.text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    /// Whether this element or any descendant is `ns:name`.
    pub(crate) fn contains(&self, ns: &str, name: &str) -> bool {
        self.is(ns, name) || self.children.iter().any(|child| child.contains(ns, name))
    }
}

/// Parses a whole document into its root element.
pub(crate) fn parse(body: &[u8]) -> Result<Element, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the XML body is not UTF-8".to_owned())?;
    let mut reader = NsReader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let (resolved, event) = reader
            .read_resolved_event()
            .map_err(|err| format!("unreadable XML: {err}"))?;
        let ns = match resolved {
            ResolveResult::Bound(ns) => ns.as_ref().to_owned(),
            ResolveResult::Unbound | ResolveResult::Unknown(_) => String::new(),
        };
        match event {
            Event::Start(start) => {
                if stack.len() >= MAX_DEPTH {
                    return Err("the XML body is nested too deeply".into());
                }
                stack.push(element(ns, &start)?);
            }
            Event::Empty(start) => {
                let element = element(ns, &start)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(element),
                    None => return Ok(element),
                }
            }
            Event::End(_) => {
                let Some(done) = stack.pop() else {
                    return Err("unbalanced XML".into());
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
            }
            Event::Text(text) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&text.xml10_content());
                }
            }
            Event::CData(data) => {
                if let Some(current) = stack.last_mut() {
                    current.text.push_str(&data.xml10_content());
                }
            }
            Event::GeneralRef(reference) => {
                let Some(current) = stack.last_mut() else {
                    continue;
                };
                if let Some(ch) = reference
                    .resolve_char_ref()
                    .map_err(|err| format!("bad character reference: {err}"))?
                {
                    current.text.push(ch);
                } else {
                    let name = reference.xml10_content();
                    let resolved = resolve_predefined_entity(&name)
                        .ok_or_else(|| format!("unknown XML entity &{name};"))?;
                    current.text.push_str(resolved);
                }
            }
            Event::Eof => return Err("the XML body ends early".into()),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
        }
    }
}

fn element(ns: String, start: &BytesStart<'_>) -> Result<Element, String> {
    let mut attributes = Vec::new();
    for attribute in start.attributes() {
        let attribute = attribute.map_err(|err| format!("bad XML attribute: {err}"))?;
        let key = attribute.key;
        if key.prefix().is_some() {
            continue;
        }
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|err| format!("bad XML attribute value: {err}"))?;
        attributes.push((key.local_name().as_ref().to_owned(), value.into_owned()));
    }
    Ok(Element {
        ns,
        name: start.local_name().as_ref().to_owned(),
        attributes,
        text: String::new(),
        children: Vec::new(),
    })
}

/// A `DAV:multistatus` reply.
#[derive(Debug, Default)]
pub(crate) struct Multistatus {
    pub(crate) responses: Vec<DavResponse>,
    /// The top-level `DAV:sync-token` (sync-collection replies).
    pub(crate) sync_token: Option<String>,
}

/// One `DAV:response`.
#[derive(Debug, Default)]
pub(crate) struct DavResponse {
    /// The (first) href, as sent: percent-encoded path or absolute URL.
    pub(crate) href: String,
    /// The response-level status (hrefs without properties: 404 removals, deletes).
    pub(crate) status: Option<u16>,
    pub(crate) propstats: Vec<PropStat>,
}

/// One `DAV:propstat`: the properties and their common status.
#[derive(Debug, Default)]
pub(crate) struct PropStat {
    pub(crate) status: Option<u16>,
    pub(crate) props: Vec<Element>,
}

impl DavResponse {
    /// A property found with a 2xx status (or no status at all).
    pub(crate) fn prop(&self, ns: &str, name: &str) -> Option<&Element> {
        self.propstats
            .iter()
            .filter(|propstat| propstat.status.is_none_or(|s| (200..300).contains(&s)))
            .flat_map(|propstat| propstat.props.iter())
            .find(|prop| prop.is(ns, name))
    }

    /// The trimmed text of a 2xx property, `None` when absent or empty.
    pub(crate) fn prop_text(&self, ns: &str, name: &str) -> Option<String> {
        self.prop(ns, name).and_then(Element::trimmed_text)
    }

    /// The first non-2xx status of a propstat, if any.
    pub(crate) fn failed_propstat(&self) -> Option<u16> {
        self.propstats
            .iter()
            .filter_map(|propstat| propstat.status)
            .find(|status| !(200..300).contains(status))
    }
}

/// Parses a `DAV:multistatus` body.
pub(crate) fn multistatus(body: &[u8]) -> Result<Multistatus, String> {
    let root = parse(body)?;
    if !root.is(DAV, "multistatus") {
        return Err(format!(
            "expected a DAV:multistatus, got {{{}}}{}",
            root.ns, root.name
        ));
    }
    let mut out = Multistatus {
        sync_token: root
            .child(DAV, "sync-token")
            .and_then(Element::trimmed_text),
        ..Multistatus::default()
    };
    for response in root.children_named(DAV, "response") {
        let Some(href) = response.child(DAV, "href").and_then(Element::trimmed_text) else {
            return Err("a DAV:response without DAV:href".into());
        };
        let status = response
            .child(DAV, "status")
            .and_then(|status| status_code(&status.text));
        let propstats = response
            .children_named(DAV, "propstat")
            .map(|propstat| PropStat {
                status: propstat
                    .child(DAV, "status")
                    .and_then(|status| status_code(&status.text)),
                props: propstat
                    .child(DAV, "prop")
                    .map(|prop| prop.children.clone())
                    .unwrap_or_default(),
            })
            .collect();
        out.responses.push(DavResponse {
            href,
            status,
            propstats,
        });
    }
    Ok(out)
}

/// `HTTP/1.1 404 Not Found` → 404.
fn status_code(line: &str) -> Option<u16> {
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The local names of a `DAV:error` body's conditions and its description, for messages
/// (`no-uid-conflict`, `valid-sync-token`); `None` when the body is not a DAV:error.
pub(crate) fn error_conditions(body: &[u8]) -> Option<(Vec<String>, Option<String>)> {
    let root = parse(body).ok()?;
    if !root.is(DAV, "error") {
        return None;
    }
    let conditions = root
        .children
        .iter()
        .filter(|child| !child.is(DAV, "responsedescription"))
        .map(|child| child.name.clone())
        .collect();
    let description = root
        .child(DAV, "responsedescription")
        .and_then(Element::trimmed_text);
    Some((conditions, description))
}

const PROLOG: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";

/// PROPFIND Depth 0 for discovery: the principal, and the home in case the URL is the
/// principal itself.
pub(crate) fn propfind_principal() -> String {
    format!(
        "{PROLOG}<d:propfind xmlns:d=\"DAV:\" xmlns:c=\"{CALDAV}\"><d:prop>\
         <d:current-user-principal/><c:calendar-home-set/><d:resourcetype/>\
         </d:prop></d:propfind>"
    )
}

/// PROPFIND Depth 0 on the principal.
pub(crate) fn propfind_home() -> String {
    format!(
        "{PROLOG}<d:propfind xmlns:d=\"DAV:\" xmlns:c=\"{CALDAV}\"><d:prop>\
         <c:calendar-home-set/></d:prop></d:propfind>"
    )
}

/// PROPFIND Depth 1 on the home: what a calendar list needs.
pub(crate) fn propfind_calendars() -> String {
    format!(
        "{PROLOG}<d:propfind xmlns:d=\"DAV:\" xmlns:c=\"{CALDAV}\" xmlns:cs=\"{CALSERVER}\" \
         xmlns:a=\"{APPLE_ICAL}\"><d:prop>\
         <d:resourcetype/><d:displayname/><a:calendar-color/><cs:getctag/><d:sync-token/>\
         <c:supported-calendar-component-set/><d:current-user-privilege-set/>\
         </d:prop></d:propfind>"
    )
}

/// PROPFIND Depth 1 on a calendar: every member's etag.
pub(crate) fn propfind_members() -> String {
    format!(
        "{PROLOG}<d:propfind xmlns:d=\"DAV:\"><d:prop><d:resourcetype/><d:getetag/></d:prop>\
         </d:propfind>"
    )
}

/// REPORT sync-collection; `token` `None` is an initial sync (empty `<sync-token/>`).
pub(crate) fn sync_collection(token: Option<&str>) -> String {
    let token = match token {
        Some(token) if !token.is_empty() => {
            format!("<d:sync-token>{}</d:sync-token>", escape(token))
        }
        _ => "<d:sync-token/>".to_owned(),
    };
    format!(
        "{PROLOG}<d:sync-collection xmlns:d=\"DAV:\">{token}<d:sync-level>1</d:sync-level>\
         <d:prop><d:getetag/></d:prop></d:sync-collection>"
    )
}

/// REPORT calendar-multiget for `hrefs` (already percent-encoded paths or URLs).
pub(crate) fn multiget(hrefs: impl IntoIterator<Item = String>) -> String {
    let mut body = format!(
        "{PROLOG}<c:calendar-multiget xmlns:d=\"DAV:\" xmlns:c=\"{CALDAV}\">\
         <d:prop><d:getetag/><c:calendar-data/></d:prop>"
    );
    for href in hrefs {
        body.push_str("<d:href>");
        body.push_str(&escape(href.as_str()));
        body.push_str("</d:href>");
    }
    body.push_str("</c:calendar-multiget>");
    body
}

/// MKCALENDAR with a name, a color and the VEVENT component set.
pub(crate) fn mkcalendar(name: &str, color: &str) -> String {
    format!(
        "{PROLOG}<c:mkcalendar xmlns:d=\"DAV:\" xmlns:c=\"{CALDAV}\" xmlns:a=\"{APPLE_ICAL}\">\
         <d:set><d:prop><d:displayname>{}</d:displayname>\
         <a:calendar-color>{}</a:calendar-color>\
         <c:supported-calendar-component-set><c:comp name=\"VEVENT\"/>\
         </c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>",
        escape(name),
        escape(color)
    )
}

/// PROPPATCH of the name and the color.
pub(crate) fn proppatch(name: &str, color: &str) -> String {
    format!(
        "{PROLOG}<d:propertyupdate xmlns:d=\"DAV:\" xmlns:a=\"{APPLE_ICAL}\"><d:set><d:prop>\
         <d:displayname>{}</d:displayname><a:calendar-color>{}</a:calendar-color>\
         </d:prop></d:set></d:propertyupdate>",
        escape(name),
        escape(color)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_radicale_style_default_namespace_and_escaped_etags() {
        let body = br#"<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
 <sync-token>http://radicale.org/ns/sync/abc</sync-token>
 <response>
  <href>/alice/work/missing.ics</href>
  <status>HTTP/1.1 404 Not Found</status>
 </response>
 <response>
  <href>/alice/work/evt-2.ics</href>
  <propstat>
   <prop>
    <getetag>&quot;bf5b&quot;</getetag>
    <C:calendar-data>BEGIN:VCALENDAR&#13;
END:VCALENDAR
</C:calendar-data>
   </prop>
   <status>HTTP/1.1 200 OK</status>
  </propstat>
 </response>
</multistatus>"#;
        let parsed = multistatus(body).unwrap();
        assert_eq!(
            parsed.sync_token.as_deref(),
            Some("http://radicale.org/ns/sync/abc")
        );
        assert_eq!(parsed.responses.len(), 2);
        assert_eq!(parsed.responses[0].status, Some(404));
        let found = &parsed.responses[1];
        assert_eq!(found.prop_text(DAV, "getetag").as_deref(), Some("\"bf5b\""));
        assert_eq!(
            found.prop(CALDAV, "calendar-data").unwrap().text,
            "BEGIN:VCALENDAR\r\nEND:VCALENDAR\n"
        );
    }

    #[test]
    fn reads_other_prefixes_and_status_before_prop() {
        let body = br#"<ns0:multistatus xmlns:ns0="DAV:" xmlns:x="urn:ietf:params:xml:ns:caldav"><ns0:response><ns0:href>/user/calendars/work/</ns0:href><ns0:propstat><ns0:status>HTTP/1.1 200 OK</ns0:status><ns0:prop><ns0:resourcetype><ns0:collection /><x:calendar /></ns0:resourcetype><x:supported-calendar-component-set><x:comp name="VEVENT" /></x:supported-calendar-component-set></ns0:prop></ns0:propstat><ns0:propstat><ns0:status>HTTP/1.1 404 Not Found</ns0:status><ns0:prop><ns0:displayname/></ns0:prop></ns0:propstat></ns0:response></ns0:multistatus>"#;
        let parsed = multistatus(body).unwrap();
        let response = &parsed.responses[0];
        assert!(
            response
                .prop(DAV, "resourcetype")
                .unwrap()
                .contains(CALDAV, "calendar")
        );
        assert!(response.prop(DAV, "displayname").is_none());
        let comps = response
            .prop(CALDAV, "supported-calendar-component-set")
            .unwrap();
        assert_eq!(comps.children[0].attribute("name"), Some("VEVENT"));
        assert_eq!(response.failed_propstat(), Some(404));
    }

    #[test]
    fn a_prefix_is_not_a_namespace() {
        // `C:` bound to DAV: here: `C:calendar` is not the CalDAV calendar.
        let body = br#"<D:multistatus xmlns:D="urn:ietf:params:xml:ns:caldav" xmlns:C="DAV:"/>"#;
        assert!(multistatus(body).is_err());
    }

    #[test]
    fn error_bodies_name_their_conditions() {
        let (conditions, description) = error_conditions(
            br#"<ns0:error xmlns:ns0="DAV:"><ns0:valid-sync-token /><ns0:responsedescription>bad</ns0:responsedescription></ns0:error>"#,
        )
        .unwrap();
        assert_eq!(conditions, ["valid-sync-token"]);
        assert_eq!(description.as_deref(), Some("bad"));
        assert!(error_conditions(b"Precondition failed.").is_none());
    }

    #[test]
    fn request_bodies_escape_user_text() {
        let body = mkcalendar("A & <B>", "#FF0000");
        assert!(body.contains("A &amp; &lt;B&gt;"));
        let parsed = parse(body.as_bytes()).unwrap();
        assert!(parsed.is(CALDAV, "mkcalendar"));
        assert!(sync_collection(None).contains("<d:sync-token/>"));
        assert!(sync_collection(Some("a<b")).contains("a&lt;b"));
    }
}
