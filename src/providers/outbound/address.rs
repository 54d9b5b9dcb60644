//! Which IP addresses an outbound request may reach when private hosts are off: a denylist
//! of every special-purpose range (loopback, private, link-local, CGNAT, documentation,
//! multicast, ...). IPv4-mapped and IPv4-compatible IPv6 addresses are refused whatever they
//! embed (no public server is reached that way); NAT64 and 6to4 addresses are judged by the
//! IPv4 address they embed.

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
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated): a dual-stack socket
    // reaches the IPv4 address, and no DNS answer or peer URL has a reason to use them.
    if ip.to_ipv4_mapped().is_some() {
        return Some("IPv4-mapped IPv6 address (::ffff:0:0/96)");
    }
    if segments[..6].iter().all(|s| *s == 0) {
        return Some("IPv4-compatible IPv6 address (::/96, deprecated)");
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

    /// Each address is refused and its reason names the class.
    fn assert_refused_as(cases: &[(&str, &str)]) {
        for (ip, class) in cases {
            let reason = non_public_reason(ip.parse::<IpAddr>().unwrap());
            let Some(reason) = reason else {
                panic!("{ip} should be refused as {class}");
            };
            assert!(
                reason.contains(class),
                "{ip}: {reason:?}, expected {class:?}"
            );
        }
    }

    #[test]
    fn special_purpose_ipv4_ranges_are_refused() {
        assert_refused_as(&[
            // 0.0.0.0/8
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("0.255.255.255", "unspecified"),
            // 10.0.0.0/8
            ("10.0.0.0", "private"),
            ("10.0.0.1", "private"),
            ("10.255.255.255", "private"),
            // 100.64.0.0/10
            ("100.64.0.0", "CGNAT"),
            ("100.64.0.1", "CGNAT"),
            ("100.127.255.255", "CGNAT"),
            // 127.0.0.0/8
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("127.255.255.255", "loopback"),
            // 169.254.0.0/16
            ("169.254.0.0", "link-local"),
            ("169.254.169.254", "link-local"),
            ("169.254.255.255", "link-local"),
            // 172.16.0.0/12
            ("172.16.0.0", "private"),
            ("172.16.5.4", "private"),
            ("172.31.255.255", "private"),
            // 192.0.0.0/24
            ("192.0.0.0", "IETF protocol assignment"),
            ("192.0.0.8", "IETF protocol assignment"),
            ("192.0.0.255", "IETF protocol assignment"),
            // 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24
            ("192.0.2.0", "documentation"),
            ("192.0.2.10", "documentation"),
            ("192.0.2.255", "documentation"),
            ("198.51.100.0", "documentation"),
            ("198.51.100.7", "documentation"),
            ("198.51.100.255", "documentation"),
            ("203.0.113.0", "documentation"),
            ("203.0.113.1", "documentation"),
            ("203.0.113.255", "documentation"),
            // 192.168.0.0/16
            ("192.168.0.0", "private"),
            ("192.168.1.1", "private"),
            ("192.168.255.255", "private"),
            // 198.18.0.0/15
            ("198.18.0.0", "benchmarking"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            // 224.0.0.0/4
            ("224.0.0.0", "multicast"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.255", "multicast"),
            // 240.0.0.0/4 and the broadcast address
            ("240.0.0.0", "reserved"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.254", "reserved"),
            ("255.255.255.255", "broadcast"),
        ]);
    }

    #[test]
    fn special_purpose_ipv6_ranges_are_refused() {
        assert_refused_as(&[
            ("::", "unspecified"),
            ("::1", "loopback"),
            // fe80::/10
            ("fe80::", "link-local"),
            ("fe80::1", "link-local"),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"),
            // fc00::/7
            ("fc00::", "unique local"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"),
            // ff00::/8
            ("ff00::", "multicast"),
            ("ff02::1", "multicast"),
            ("ff0e::1", "multicast"),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"),
            // 2001:db8::/32 and 3fff::/20
            ("2001:db8::", "documentation"),
            ("2001:db8::1", "documentation"),
            ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"),
            ("3fff::1", "documentation"),
            // 64:ff9b::/96 (NAT64) embedding a non-public IPv4 address
            ("64:ff9b::7f00:1", "NAT64"),
            ("64:ff9b::a00:1", "NAT64"),
            ("64:ff9b::a9fe:a9fe", "NAT64"),
            ("64:ff9b::c0a8:101", "NAT64"),
            // 2002::/16 (6to4) of a non-public IPv4 address
            ("2002:7f00:1::1", "6to4"),
            ("2002:a00:1::1", "6to4"),
            ("2002:c0a8:101::1", "6to4"),
            // ::ffff:0:0/96 (mapped), whatever it embeds
            ("::ffff:127.0.0.1", "IPv4-mapped"),
            ("::ffff:10.1.2.3", "IPv4-mapped"),
            ("::ffff:169.254.169.254", "IPv4-mapped"),
            ("::ffff:0.0.0.0", "IPv4-mapped"),
            ("::ffff:93.184.216.34", "IPv4-mapped"),
            // ::/96 (compatible, deprecated)
            ("::127.0.0.1", "IPv4-compatible"),
            ("::10.0.0.1", "IPv4-compatible"),
            ("::93.184.216.34", "IPv4-compatible"),
            // Other special-purpose ranges.
            ("fec0::1", "site-local"),
            ("2001::1", "Teredo"),
            ("2001:2::1", "benchmarking"),
            ("2001:10::1", "ORCHID"),
            ("100::1", "discard-only"),
            ("64:ff9b:1::1", "local-use NAT64"),
        ]);
    }

    #[test]
    fn public_addresses_are_allowed() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            // Just outside the refused IPv4 ranges.
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
            // Public IPv6, and NAT64 and 6to4 forms of a public IPv4 address.
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::200e",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            let reason = non_public_reason(ip.parse::<IpAddr>().unwrap());
            assert!(reason.is_none(), "{ip} should be allowed: {reason:?}");
        }
    }
}
