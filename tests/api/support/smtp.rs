//! An SMTP server inside the test process: accepts (or, on request, refuses) mail from
//! Bowline's real lettre transport and hands each message to the test.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use base64::Engine;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};

use crate::helpers::WAIT;

/// A message the sink accepted.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    /// Envelope recipients.
    pub to: Vec<String>,
    /// The raw message (headers and MIME body).
    pub data: String,
}

impl ReceivedMail {
    /// The `Subject` header.
    pub fn subject(&self) -> String {
        self.data
            .lines()
            .find_map(|line| line.strip_prefix("Subject: "))
            .unwrap_or_default()
            .to_owned()
    }

    /// The decoded `text/plain` part.
    pub fn text(&self) -> String {
        let Some(start) = self.data.find("Content-Type: text/plain") else {
            return String::new();
        };
        let part = &self.data[start..];
        let (headers, rest) = part.split_once("\r\n\r\n").unwrap_or((part, ""));
        let body = rest.split("\r\n--").next().unwrap_or(rest);
        if headers.contains("quoted-printable") {
            decode_quoted_printable(body)
        } else if headers.contains("base64") {
            let compact: String = body.split_whitespace().collect();
            String::from_utf8_lossy(
                &base64::engine::general_purpose::STANDARD
                    .decode(compact)
                    .unwrap_or_default(),
            )
            .into_owned()
        } else {
            body.to_owned()
        }
    }

    /// The first link in the text part starting with `prefix`.
    pub fn link_starting_with(&self, prefix: &str) -> String {
        let text = self.text();
        let start = text
            .find(prefix)
            .unwrap_or_else(|| panic!("no link starting with {prefix} in:\n{text}"));
        text[start..]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    }
}

fn decode_quoted_printable(body: &str) -> String {
    let joined = body.replace("=\r\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&joined[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The sink.
pub struct SmtpSink {
    /// Where it listens.
    pub addr: SocketAddr,
    received: Mutex<mpsc::UnboundedReceiver<ReceivedMail>>,
    refuse: Arc<AtomicU32>,
}

impl SmtpSink {
    /// Starts listening on a free port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind SMTP sink");
        let addr = listener.local_addr().expect("addr");
        let (sender, received) = mpsc::unbounded_channel();
        let refuse = Arc::new(AtomicU32::new(0));
        let refusals = refuse.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let sender = sender.clone();
                let refusals = refusals.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, sender, refusals).await;
                });
            }
        });
        Self {
            addr,
            received: Mutex::new(received),
            refuse,
        }
    }

    /// `SMTP_URL` for Bowline.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Refuses the next `count` messages with a temporary failure.
    pub fn refuse_next(&self, count: u32) {
        self.refuse.store(count, Ordering::SeqCst);
    }

    /// The next accepted message, within the wait.
    pub async fn next_mail(&self) -> ReceivedMail {
        let mut received = self.received.lock().await;
        tokio::time::timeout(WAIT, received.recv())
            .await
            .expect("a mail arrives within the wait")
            .expect("sink running")
    }

    /// Whether a message is waiting now (for asserting that none was sent).
    pub async fn try_next_mail(&self) -> Option<ReceivedMail> {
        self.received.lock().await.try_recv().ok()
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    sender: mpsc::UnboundedSender<ReceivedMail>,
    refusals: Arc<AtomicU32>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 sink.test ESMTP ready\r\n").await?;
    let mut to = Vec::new();
    while let Some(line) = lines.next_line().await? {
        let upper = line.to_ascii_uppercase();
        let answer: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink.test\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 PIPELINING\r\n"
        } else if upper.starts_with("HELO")
            || upper.starts_with("MAIL FROM")
            || upper.starts_with("NOOP")
        {
            b"250 OK\r\n"
        } else if upper.starts_with("RSET") {
            to.clear();
            b"250 OK\r\n"
        } else if upper.starts_with("RCPT TO") {
            to.push(
                line.split_once(':')
                    .map(|(_, address)| address.trim().trim_matches(['<', '>']).to_owned())
                    .unwrap_or_default(),
            );
            b"250 OK\r\n"
        } else if upper == "DATA" {
            write
                .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                .await?;
            let mut data = String::new();
            while let Some(line) = lines.next_line().await? {
                if line == "." {
                    break;
                }
                let line = line.strip_prefix('.').unwrap_or(&line);
                data.push_str(line);
                data.push_str("\r\n");
            }
            let refused = refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if refused {
                b"451 4.3.0 Try again later\r\n"
            } else {
                let _ = sender.send(ReceivedMail {
                    to: std::mem::take(&mut to),
                    data,
                });
                b"250 OK queued\r\n"
            }
        } else if upper.starts_with("QUIT") {
            write.write_all(b"221 Bye\r\n").await?;
            return Ok(());
        } else {
            b"502 Command not implemented\r\n"
        };
        write.write_all(answer).await?;
    }
    Ok(())
}
