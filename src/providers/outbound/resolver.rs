//! The guard's name resolver: resolves with the system resolver, refuses a name when any of
//! its addresses is not public (unless private hosts are allowed), and hands the connector
//! exactly the addresses it checked, so the connection goes nowhere else.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address::non_public_reason;

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
}

impl GuardResolver {
    pub(crate) fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }

    /// The addresses of `host` (port 0), all of them checked.
    pub(crate) async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, RefusedName> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
            .await
            .map_err(|err| RefusedName::Lookup(format!("could not resolve {host}: {err}")))?
            .collect();
        if addrs.is_empty() {
            return Err(RefusedName::Lookup(format!("{host} has no addresses")));
        }
        if !self.allow_private
            && let Some((ip, reason)) = addrs
                .iter()
                .find_map(|addr| non_public_reason(addr.ip()).map(|reason| (addr.ip(), reason)))
        {
            return Err(RefusedName::Refused(format!(
                "{host} resolves to {ip}, a {reason}"
            )));
        }
        Ok(addrs)
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
