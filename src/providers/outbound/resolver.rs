//! The guard's name resolver: asks a [`NameLookup`] (the system resolver unless one is
//! injected) once per connection, refuses a name when any of its addresses is not public
//! (unless private hosts are allowed), and hands the connector exactly the addresses it
//! checked, so the connection goes nowhere else.

use std::fmt::Debug;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address::non_public_reason;

/// Where the guard gets a name's addresses. The guard asks once per connection and checks
/// every address of the answer; the connection may only go to those addresses.
pub trait NameLookup: Send + Sync + Debug {
    /// The addresses of `host`, a DNS name (never an IP literal: those are checked as they
    /// are written).
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (`getaddrinfo` on a blocking thread), the guard's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl NameLookup for SystemLookup {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|addr| addr.ip()).collect())
        })
    }
}

/// Why a name may not be used; travels through reqwest's error chain as the resolver's error.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum RefusedName {
    /// One of the name's addresses is not public.
    #[error("{0}")]
    Refused(String),
    /// The name did not resolve.
    #[error("{0}")]
    Lookup(String),
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct GuardResolver {
    allow_private: bool,
    names: Arc<dyn NameLookup>,
}

impl GuardResolver {
    pub(crate) fn new(allow_private: bool, names: Arc<dyn NameLookup>) -> Self {
        Self {
            allow_private,
            names,
        }
    }

    /// The addresses of `host` (port 0) from one lookup, all of them checked.
    pub(crate) async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, RefusedName> {
        let ips = self
            .names
            .lookup(host)
            .await
            .map_err(|err| RefusedName::Lookup(format!("could not resolve {host}: {err}")))?;
        if ips.is_empty() {
            return Err(RefusedName::Lookup(format!("{host} has no addresses")));
        }
        if !self.allow_private
            && let Some((ip, reason)) = ips
                .iter()
                .find_map(|ip| non_public_reason(*ip).map(|reason| (*ip, reason)))
        {
            return Err(RefusedName::Refused(format!(
                "{host} resolves to {ip}, a {reason}"
            )));
        }
        Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect())
    }
}

impl Resolve for GuardResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolver.lookup(&host).await?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}
