//! Which IP addresses an outbound request may reach when private hosts are off: a denylist
//! of every special-purpose range (loopback, private, link-local, CGNAT, documentation,
//! multicast, ...), with IPv6 forms that embed an IPv4 address judged by that address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` may not be reached, or `None` when it is a public unicast address.
pub(crate) fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        Some("unspecified or \"this network\" address (0.0.0.0/8)")
    } else if ip.is_loopback() {
        Some("loopback address")
    } else if ip.is_private() {
        Some("private address (RFC 1918)")
    } else if ip.is_link_local() {
        Some("link-local address")
    } else if a == 100 && (b & 0xc0) == 64 {
        Some("shared address space (CGNAT, 100.64.0.0/10)")
    } else if ip.is_broadcast() {
        Some("broadcast address")
    } else if ip.is_multicast() {
        Some("multicast address")
    } else if ip.is_documentation() {
        Some("documentation address")
    } else if a == 192 && b == 0 && c == 0 {
        Some("IETF protocol assignment (192.0.0.0/24)")
    } else if a == 192 && b == 88 && c == 99 {
        Some("6to4 relay anycast address")
    } else if a == 198 && (b & 0xfe) == 18 {
        Some("benchmarking address (198.18.0.0/15)")
    } else if a >= 240 {
        Some("reserved address (240.0.0.0/4)")
    } else {
        None
    }
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified address");
    }
    if ip.is_loopback() {
        return Some("loopback address");
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible): the socket reaches the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4).map(|_| "IPv4-mapped IPv6 address of a non-public IPv4 address");
    }
    if segments[..6].iter().all(|s| *s == 0) {
        let v4 = embedded_v4(segments[6], segments[7]);
        return v4_reason(v4).map(|_| "IPv4-compatible IPv6 address of a non-public IPv4 address");
    }
    // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = embedded_v4(segments[6], segments[7]);
        return v4_reason(v4).map(|_| "NAT64 address of a non-public IPv4 address");
    }
    // 6to4 (2002::/16) embeds the IPv4 address of the relay's site.
    if segments[0] == 0x2002 {
        let v4 = embedded_v4(segments[1], segments[2]);
        return v4_reason(v4).map(|_| "6to4 address of a non-public IPv4 address");
    }
    if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1 {
        return Some("local-use NAT64 address (64:ff9b:1::/48)");
    }
    if segments[..4] == [0x100, 0, 0, 0] {
        return Some("discard-only address (100::/64)");
    }
    if segments[0] == 0x2001 && segments[1] == 0 {
        return Some("Teredo address (2001::/32)");
    }
    if segments[0] == 0x2001 && segments[1] == 2 && segments[2] == 0 {
        return Some("benchmarking address (2001:2::/48)");
    }
    if segments[0] == 0x2001 && (segments[1] & 0xfff0) == 0x10 {
        return Some("ORCHID address (2001:10::/28)");
    }
    if (segments[0] == 0x2001 && segments[1] == 0xdb8) || (segments[0] & 0xfff0) == 0x3ff0 {
        return Some("documentation address");
    }
    if ip.is_unique_local() {
        return Some("unique local address (fc00::/7)");
    }
    if ip.is_unicast_link_local() {
        return Some("link-local address (fe80::/10)");
    }
    if (segments[0] & 0xffc0) == 0xfec0 {
        return Some("site-local address (fec0::/10)");
    }
    if ip.is_multicast() {
        return Some("multicast address");
    }
    None
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::non_public_reason;
    use std::net::IpAddr;

    fn refused(ip: &str) -> bool {
        non_public_reason(ip.parse::<IpAddr>().unwrap()).is_some()
    }

    #[test]
    fn special_purpose_ipv4_ranges_are_refused() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.0.9",
            "10.0.0.1",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "255.255.255.255",
            "224.0.0.1",
            "239.1.2.3",
            "192.0.2.10",
            "198.51.100.7",
            "203.0.113.1",
            "198.18.0.1",
            "198.19.255.1",
            "192.0.0.8",
            "240.0.0.1",
        ] {
            assert!(refused(ip), "{ip} should be refused");
        }
    }

    #[test]
    fn special_purpose_ipv6_ranges_are_refused() {
        for ip in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "3fff::1",
            "2001::1",
            "2001:2::1",
            "100::1",
        ] {
            assert!(refused(ip), "{ip} should be refused");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "192.0.3.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(!refused(ip), "{ip} should be allowed");
        }
    }
}
