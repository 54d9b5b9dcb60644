//! [`Application`]: builds one server from its [`Settings`] and runs it until shutdown.
//!
//! Build order: bind the listeners (so port 0 resolves and a taken port fails early, naming
//! its key), open and migrate the database, spawn the actor tree, start serving, log
//! `server.started`. Shutdown order: stop accepting, end SSE streams and finish in-flight
//! requests (bounded by the grace period), stop the actors, close the database.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::actors::announcer::{Announcer, InstanceListener};
use crate::actors::root::{RootActor, RootArgs, RootMsg};
use crate::actors::scheduler::{TaskSpec, builtin_tasks};
use crate::actors::{ActorKind, Actors, EventHomes, Shared};
use crate::auth::Auth;
use crate::commands::Services;
use crate::commands::mirrors::{Mirrors, OAuthApps, OutboxPolicy};
use crate::config::Settings;
use crate::config::capabilities::Capabilities;
use crate::context::{AppContext, Ctx};
use crate::cpu::CpuWork;
use crate::domain::providers::Provider;
use crate::domain::version::{IMPLEMENTATION, WIRE_VERSION};
use crate::federation::Federation;
use crate::http;
use crate::mail::MailService;
use crate::metrics::Metrics;
use crate::providers::oauth::OAuthApp;
use crate::providers::outbound::{self, GuardSettings, OutboundGuard};
use crate::push::send::PushSender;
use crate::push::vapid::Vapid;
use crate::rate_limit::RateLimiter;
use crate::secret_box::SecretBox;
use crate::shutdown::Shutdown;
use crate::store::Database;

/// Why a server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// A listener could not bind.
    #[error("cannot listen on {addr} ({key}): {source}")]
    Bind {
        /// Configuration key of the address.
        key: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The database could not be opened or migrated.
    #[error("database unavailable: {0}")]
    Database(#[from] sea_orm::DbErr),
    /// The mail transport could not be set up.
    #[error("mail unavailable: {0}")]
    Mail(#[from] crate::mail::MailError),
    /// The HTTP client could not be built.
    #[error("HTTP client unavailable: {0}")]
    HttpClient(String),
    /// The actor tree could not start.
    #[error("actor system failed to start: {0}")]
    Actors(String),
    /// The server shut itself down because it could not go on.
    #[error("server stopped: {0}")]
    Fatal(String),
}

/// Configures an [`Application`] before building it.
pub struct ApplicationBuilder {
    settings: Settings,
    extra_tasks: Vec<TaskSpec>,
    metrics_listener: Option<std::net::TcpListener>,
    sharing: Option<Database>,
}

impl ApplicationBuilder {
    /// Adds a periodic task to the scheduler, next to the built-in ones.
    pub fn with_task(mut self, task: TaskSpec) -> Self {
        self.extra_tasks.push(task);
        self
    }

    /// Another server in this process on the database of the server `ctx` (tests of
    /// several instances): on SQLite, under that server's hold on the file and sharing its
    /// cached sessions (a second process is refused the file); on PostgreSQL, an instance
    /// like any other.
    pub fn sharing_storage_of(mut self, ctx: &Ctx) -> Self {
        self.sharing = Some(ctx.db.clone());
        self
    }

    /// Serves metrics on an already-bound listener instead of binding `METRICS_PORT`
    /// (socket activation, and tests that need a free port without a race).
    pub fn with_metrics_listener(mut self, listener: std::net::TcpListener) -> Self {
        self.metrics_listener = Some(listener);
        self
    }

    /// Binds, migrates, spawns and starts serving.
    pub async fn build(self) -> Result<Application, StartupError> {
        // reqwest, lettre and sqlx use rustls; ring is the only provider compiled in.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let settings = self.settings;
        let http_addr = SocketAddr::new(settings.server.host, settings.server.port);
        let http_listener = bind("server.port", http_addr).await?;
        let http_addr = local_addr("server.port", &http_listener, http_addr)?;
        let metrics_listener = match (self.metrics_listener, settings.metrics.port) {
            (Some(listener), _) => Some(adopt("metrics.port", listener, http_addr)?),
            (None, 0) => None,
            (None, port) => {
                let addr = SocketAddr::new(settings.metrics.host, port);
                Some(bind("metrics.port", addr).await?)
            }
        };
        let metrics_addr = metrics_listener
            .as_ref()
            .map(|l| local_addr("metrics.port", l, http_addr))
            .transpose()?;

        let metrics = Arc::new(Metrics::new());
        let db = Database::connect_sharing(&settings.storage, self.sharing.as_ref())
            .await?
            .with_metrics(metrics.clone());
        db.migrate().await?;

        let base_url = settings
            .server
            .base_url
            .clone()
            .unwrap_or_else(|| format!("http://{http_addr}"));
        let mut tasks = builtin_tasks(&settings);
        tasks.extend(self.extra_tasks);
        let http_client = http_client()?;
        let auth = Auth::new(&settings, &base_url, &db, http_client.clone()).await?;
        let mail = MailService::new(&settings).await?;
        let actors = Arc::new(Actors::default());
        let actor_kinds = ActorKind::ALL.map(ActorKind::label);
        let task_names: Vec<&'static str> = tasks.iter().map(TaskSpec::name).collect();
        metrics.export_zeros(&actor_kinds, &task_names);
        let instance_id = uuid::Uuid::new_v4().to_string();
        let announcer = Arc::new(Announcer::new(actors.clone(), db.clone()));
        db.attach_instance_events(Arc::new(InstanceListener::new(actors.clone())));
        let services = Services {
            db: db.clone(),
            announce: announcer,
            metrics: metrics.clone(),
            mail_batch_delay_ms: settings.mail.batch_delay_ms,
        };
        let cpu = Arc::new(CpuWork::per_core(settings.call_timeout()));
        let roots = extra_roots(&settings)?;
        let mirrors = mirrors_env(
            &settings,
            &services,
            cpu.clone(),
            &instance_id,
            &base_url,
            roots.clone(),
        )?;
        let federation = federation_env(&settings, &mirrors, &base_url);
        let push = push_sender(&settings, roots)?;
        let shared = Arc::new(Shared {
            mail: Arc::new(mail),
            limits: RateLimiter::default(),
            settings,
            base_url,
            instance_id,
            db,
            metrics,
            actors,
            services,
            shutdown: Shutdown::new(),
            mirrors,
            federation,
            push,
            event_homes: EventHomes::default(),
        });
        let ctx: Ctx = Arc::new(AppContext {
            capabilities: Capabilities::new(&shared.settings, shared.mail.deliverable()),
            auth,
            http_client,
            cpu,
            shared,
        });

        let args = RootArgs {
            shared: ctx.shared.clone(),
            tasks: tasks.into(),
        };
        let (root, root_task) = Actor::spawn(None, RootActor, args)
            .await
            .map_err(|err| StartupError::Actors(err.to_string()))?;
        ctx.actors.root.set(Some(root.clone()));
        ctx.metrics.actor_alive(ActorKind::Root.label(), 1.0);

        let server = &ctx.settings.server;
        let limits = http::server::Limits {
            header_read_timeout: Duration::from_millis(server.header_read_timeout_ms),
            idle_timeout: Duration::from_millis(server.idle_timeout_ms),
            capacity: http::connections::capacity(server.max_connections),
            grace: Duration::from_millis(server.shutdown_grace_ms),
        };
        let pipeline = http::pipeline::Pipeline::new(ctx.clone(), http::routes(ctx.clone()));
        let http_task = tokio::spawn(http::server::serve(
            http_listener,
            pipeline,
            ctx.shutdown.clone(),
            ctx.metrics.clone(),
            limits,
        ));
        let metrics_task = metrics_listener.map(|listener| {
            let shutdown = ctx.shutdown.clone();
            let routes = http::metrics_endpoint::routes(ctx.metrics.clone());
            tokio::spawn(
                warp::serve(routes)
                    .incoming(listener)
                    .graceful(async move { shutdown.triggered().await })
                    .run(),
            )
        });

        tracing::info!(
            http = %http_addr,
            metrics = metrics_addr.map(|a| a.to_string()),
            baseUrl = %ctx.base_url,
            database = ctx.db.backend().as_str(),
            version = WIRE_VERSION,
            implementation = IMPLEMENTATION,
            "server.started"
        );
        Ok(Application {
            ctx,
            http_addr,
            metrics_addr,
            http_task,
            metrics_task,
            root,
            root_task,
        })
    }
}

/// A running server.
pub struct Application {
    ctx: Ctx,
    http_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    http_task: JoinHandle<()>,
    metrics_task: Option<JoinHandle<()>>,
    root: ActorRef<RootMsg>,
    root_task: JoinHandle<()>,
}

impl Application {
    /// A builder for a server configured by `settings`.
    pub fn builder(settings: Settings) -> ApplicationBuilder {
        ApplicationBuilder {
            settings,
            extra_tasks: Vec::new(),
            sharing: None,
            metrics_listener: None,
        }
    }

    /// Builds a server with the default tasks.
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        Self::builder(settings).build().await
    }

    /// The bound HTTP address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// The bound metrics address, unless the listener is disabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The server's shared context.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// The signal that stops this server.
    pub fn shutdown(&self) -> Shutdown {
        self.ctx.shutdown.clone()
    }

    /// Waits for the shutdown signal, then stops in order and reports how it ended.
    pub async fn run_until_stopped(self) -> Result<(), StartupError> {
        self.ctx.shutdown.triggered().await;
        tracing::info!("server.stopping");
        if let Err(err) = self.http_task.await {
            tracing::error!(error = %err, "http.task_failed");
        }
        if let Some(task) = self.metrics_task {
            let _ = task.await;
        }
        self.root.stop(Some("shutdown".into()));
        if let Err(err) = self.root_task.await {
            tracing::error!(error = %err, "actors.stop_failed");
        }
        self.ctx.metrics.actor_alive(ActorKind::Root.label(), -1.0);
        if let Err(err) = self.ctx.db.clone().close().await {
            tracing::warn!(error = %err, "database.close_failed");
        }
        tracing::info!("server.stopped");
        match self.ctx.shutdown.fatal_reason() {
            Some(reason) => Err(StartupError::Fatal(reason.to_owned())),
            None => Ok(()),
        }
    }
}

/// What federation's home side uses: the mirrors' outbound guard and key, this server's
/// origin, the federation timeouts.
fn federation_env(settings: &Settings, mirrors: &Mirrors, base_url: &str) -> Federation {
    let own_origin = url::Url::parse(base_url)
        .map(|url| url.origin().ascii_serialization())
        .unwrap_or_else(|_| base_url.trim_end_matches('/').to_owned());
    let federation = &settings.federation;
    Federation {
        guard: mirrors.guard.clone(),
        secrets: mirrors.secrets.clone(),
        own_origin,
        request_timeout: Duration::from_millis(federation.request_timeout_ms),
        stream_retry: Duration::from_millis(federation.stream_retry_ms),
    }
}

/// The CA certificates every outbound request trusts beside the public roots
/// (`OUTBOUND_CA_FILE`).
fn extra_roots(settings: &Settings) -> Result<Vec<reqwest::Certificate>, StartupError> {
    match &settings.outbound.ca_file {
        Some(path) => outbound::read_ca_file(path).map_err(StartupError::HttpClient),
        None => Ok(Vec::new()),
    }
}

/// The web push sender, when VAPID keys are configured: the server's VAPID identity and an
/// outbound guard of its own (the push request timeout; private hosts and extra CA roots as
/// for every other outbound request).
fn push_sender(
    settings: &Settings,
    extra_roots: Vec<reqwest::Certificate>,
) -> Result<Option<PushSender>, StartupError> {
    let push = &settings.push;
    let (Some(public), Some(private), Some(subject)) = (
        &push.vapid_public_key,
        &push.vapid_private_key,
        &push.vapid_subject,
    ) else {
        return Ok(None);
    };
    let vapid = Vapid::new(public, private.expose(), subject)
        .map_err(|err| StartupError::HttpClient(format!("VAPID keys: {err}")))?;
    let timeout = Duration::from_millis(push.request_timeout_ms);
    let guard = OutboundGuard::new(GuardSettings {
        allow_private_hosts: settings.federation.allow_private_hosts,
        connect_timeout: timeout,
        total_timeout: timeout,
        max_redirects: 0,
        max_body_bytes: 64 * 1024,
        extra_roots,
    })
    .map_err(|err| StartupError::HttpClient(err.to_string()))?;
    Ok(Some(PushSender::new(vapid, guard)))
}

/// What the provider mirrors use: the outbound guard (private hosts as
/// `FEDERATION_ALLOW_PRIVATE_HOSTS` says, `extra_roots` beside the public ones), the key sealing credentials, the outbox policy.
fn mirrors_env(
    settings: &Settings,
    services: &Services,
    cpu: Arc<CpuWork>,
    instance_id: &str,
    public_origin: &str,
    extra_roots: Vec<reqwest::Certificate>,
) -> Result<Mirrors, StartupError> {
    let caldav = &settings.caldav;
    let guard = OutboundGuard::new(GuardSettings {
        allow_private_hosts: settings.federation.allow_private_hosts,
        connect_timeout: Duration::from_millis(caldav.connect_timeout_ms),
        total_timeout: Duration::from_millis(caldav.request_timeout_ms),
        max_redirects: 5,
        max_body_bytes: 64 * 1024 * 1024,
        extra_roots,
    })
    .map_err(|err| StartupError::HttpClient(err.to_string()))?;
    Ok(Mirrors {
        services: services.clone(),
        guard,
        secrets: caldav
            .enc_key
            .as_ref()
            .and_then(|key| SecretBox::from_hex(key.expose())),
        cpu,
        instance_id: instance_id.to_owned(),
        outbox: OutboxPolicy {
            lease: Duration::from_millis(caldav.outbox_lease_ms),
            retry_base: Duration::from_millis(caldav.outbox_retry_base_ms),
            retry_max: Duration::from_millis(caldav.outbox_retry_max_ms),
            give_up_after: Duration::from_millis(caldav.outbox_give_up_ms),
        },
        oauth: OAuthApps {
            google: OAuthApp::from_settings(settings, Provider::Google)
                .map(|app| (app, settings.google.calendar_api_url.clone())),
            microsoft: OAuthApp::from_settings(settings, Provider::Microsoft).map(|app| {
                let microsoft = &settings.microsoft;
                (
                    app,
                    microsoft.graph_url.clone(),
                    (microsoft.sync_past_days, microsoft.sync_future_days),
                )
            }),
        },
        public_origin: public_origin.to_owned(),
    })
}

/// The shared outgoing HTTP client: rustls (ring) with compiled-in web roots.
fn http_client() -> Result<reqwest::Client, StartupError> {
    let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|cert| reqwest::Certificate::from_der(cert.as_ref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| StartupError::HttpClient(err.to_string()))?;
    reqwest::Client::builder()
        .tls_certs_only(roots)
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .user_agent(IMPLEMENTATION)
        .build()
        .map_err(|err| StartupError::HttpClient(err.to_string()))
}

async fn bind(key: &'static str, addr: SocketAddr) -> Result<TcpListener, StartupError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| StartupError::Bind { key, addr, source })
}

fn adopt(
    key: &'static str,
    listener: std::net::TcpListener,
    addr: SocketAddr,
) -> Result<TcpListener, StartupError> {
    listener
        .set_nonblocking(true)
        .and_then(|()| TcpListener::from_std(listener))
        .map_err(|source| StartupError::Bind { key, addr, source })
}

fn local_addr(
    key: &'static str,
    listener: &TcpListener,
    addr: SocketAddr,
) -> Result<SocketAddr, StartupError> {
    listener
        .local_addr()
        .map_err(|source| StartupError::Bind { key, addr, source })
}
