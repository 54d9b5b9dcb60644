//! Outgoing mail with lettre: over SMTP when `SMTP_URL` is set; otherwise (the embedded
//! default) each mail is written as an `.eml` file under `<DATA_DIR>/mail/` and the log says
//! where. Only SMTP counts as deliverable (`email` in `GET /api/v1/server`): the capability
//! is decided by an SMTP handshake at start-up.
//!
//! Sending is done by the `mailer` actor; [`MailService`] is the transport it uses.

pub mod batches;
pub mod templates;

use std::path::PathBuf;
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::Settings;

/// One mail to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    /// Recipient address.
    pub to: String,
    /// Subject line.
    pub subject: String,
    /// Plain-text body.
    pub text: String,
    /// HTML body.
    pub html: String,
    /// What it is, for logs (`password_reset`, ...).
    pub kind: &'static str,
}

/// Why a mail was not sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The message could not be built (bad address).
    #[error("invalid mail: {0}")]
    Invalid(String),
    /// The transport refused or failed.
    #[error("mail transport failed: {0}")]
    Transport(String),
}

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files {
        transport: AsyncFileTransport<Tokio1Executor>,
        dir: PathBuf,
    },
}

/// The configured mail transport.
pub struct MailService {
    transport: Transport,
    from: Mailbox,
    deliverable: bool,
}

impl std::fmt::Debug for MailService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailService")
            .field("deliverable", &self.deliverable)
            .finish_non_exhaustive()
    }
}

/// How long the start-up SMTP handshake may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl MailService {
    /// The transport of `settings`; probes SMTP once to decide whether mail is deliverable.
    pub async fn new(settings: &Settings) -> Result<Self, MailError> {
        let from: Mailbox = settings
            .mail
            .from
            .parse()
            .map_err(|err| MailError::Invalid(format!("MAIL_FROM: {err}")))?;
        match &settings.mail.smtp_url {
            Some(url) => {
                let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
                    .map_err(|err| MailError::Transport(err.to_string()))?
                    .timeout(Some(Duration::from_secs(20)))
                    .build();
                let deliverable =
                    match tokio::time::timeout(PROBE_TIMEOUT, transport.test_connection()).await {
                        Ok(Ok(true)) => true,
                        Ok(Ok(false)) | Ok(Err(_)) | Err(_) => {
                            tracing::warn!("mail.smtp.unreachable");
                            false
                        }
                    };
                Ok(Self {
                    transport: Transport::Smtp(transport),
                    from,
                    deliverable,
                })
            }
            None => {
                let dir = settings.storage.data_dir.join("mail");
                std::fs::create_dir_all(&dir).map_err(|err| {
                    MailError::Transport(format!("cannot create {}: {err}", dir.display()))
                })?;
                Ok(Self {
                    transport: Transport::Files {
                        transport: AsyncFileTransport::new(&dir),
                        dir,
                    },
                    from,
                    deliverable: false,
                })
            }
        }
    }

    /// Whether mail really reaches people (SMTP that answered at start-up).
    pub fn deliverable(&self) -> bool {
        self.deliverable
    }

    /// Sends one mail; `Ok` once the SMTP server accepted it (or the file was written).
    pub async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|err| MailError::Invalid(format!("recipient: {err}")))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .multipart(MultiPart::alternative_plain_html(
                mail.text.clone(),
                mail.html.clone(),
            ))
            .map_err(|err| MailError::Invalid(err.to_string()))?;
        match &self.transport {
            Transport::Smtp(transport) => {
                transport
                    .send(message)
                    .await
                    .map_err(|err| MailError::Transport(err.to_string()))?;
                tracing::info!(kind = mail.kind, "mail.sent");
            }
            Transport::Files { transport, dir } => {
                let id = transport
                    .send(message)
                    .await
                    .map_err(|err| MailError::Transport(err.to_string()))?;
                let path = dir.join(format!("{id}.eml"));
                tracing::info!(kind = mail.kind, path = %path.display(), "mail.written");
            }
        }
        Ok(())
    }
}
