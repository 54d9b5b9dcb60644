//! How configuration values are read: [`Secret`] (never printed), `""` as "not set", and
//! lists written as a TOML array or a comma-separated environment variable.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// A configuration value that must never reach a log: `Debug` prints `[REDACTED]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// `""` is "not set".
pub(super) fn optional_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = String::deserialize(d)?;
    let value = value.trim();
    Ok((!value.is_empty()).then(|| value.to_owned()))
}

pub(super) fn optional_secret<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    Ok(optional_string(d)?.map(Secret))
}

/// A list, written as a TOML array or (from the environment) a comma-separated string.
pub(super) fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrString {
        List(Vec<String>),
        String(String),
    }
    let items = match ListOrString::deserialize(d)? {
        ListOrString::List(items) => items,
        ListOrString::String(joined) => joined.split(',').map(str::to_owned).collect(),
    };
    Ok(items
        .into_iter()
        .map(|s| s.trim().trim_end_matches('/').to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

/// A list of networks (`10.0.0.0/8`, `::1/128`; a bare address is a network of one), as
/// [`string_list`] reads lists.
pub(super) fn network_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ipnet::IpNet>, D::Error> {
    string_list(d)?
        .iter()
        .map(|item| {
            item.parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| {
                    serde::de::Error::custom(format!(
                        "`{item}` is not a network (address/prefix length) or an address"
                    ))
                })
        })
        .collect()
}
