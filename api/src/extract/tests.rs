use crate::extract::ProxyHeader;

fn proxies(trusted_proxies: usize) -> ProxyHeader {
    ProxyHeader {
        name: axum::http::HeaderName::from_static("x-forwarded-for"),
        trusted_proxies,
    }
}

#[test]
fn the_client_is_what_the_outermost_trusted_proxy_appended() {
    let header = "6.6.6.6, 198.51.100.7, 10.0.0.1";
    assert_eq!(
        proxies(1).client_in(header),
        Some("10.0.0.1".parse().unwrap())
    );
    assert_eq!(
        proxies(2).client_in(header),
        Some("198.51.100.7".parse().unwrap())
    );
    // A chain shorter than configured: the leftmost entry.
    assert_eq!(
        proxies(5).client_in(header),
        Some("6.6.6.6".parse().unwrap())
    );
    assert_eq!(
        proxies(1).client_in(" 2001:db8::1 "),
        Some("2001:db8::1".parse().unwrap())
    );
}

#[test]
fn an_entry_that_is_no_address_names_no_client() {
    assert_eq!(proxies(1).client_in("198.51.100.7, unknown"), None);
    assert_eq!(proxies(1).client_in(""), None);
}
