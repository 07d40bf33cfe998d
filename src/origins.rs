//! Who may call a free instance from a browser (issue 41, item 6). A free instance answers whoever reaches it, so a
//! page on another site must not be able to use it through its visitor's browser, nor read its answers: a request
//! whose `Origin` is not the instance's own (or one the operator allows, `WEBSEARCHD_ALLOWED_ORIGINS`) is refused
//! with 403 `origin_refused`, and one whose `Host` is not one of the instance's names (a DNS-rebinding name that
//! resolves to it) with 403 `host_refused`, on every door. A client that sends no `Origin` (a program: curl, an
//! SDK, an agent) is not a browser page and is answered; the instance's own page sends its own origin. A paid
//! instance answers every origin (payment is the gate), but a call the loopback rule would let through free is
//! checked as on a free instance.

use crate::error::ApiError;
use crate::http::Request;
use crate::urls;

/// The names and origins a free instance answers, made once at start.
#[derive(Debug, Clone, Default)]
pub struct Names {
    /// Host names, as `urls::host` gives them.
    hosts: Vec<String>,
    /// Origins, as `urls::serialized_origin` gives them.
    origins: Vec<String>,
    /// `*` among the allowed origins: every origin (the `Host` is still checked).
    any_origin: bool,
}

/// The names every instance answers to on this machine.
const LOCAL_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "localhost.localdomain"];

impl Names {
    /// The instance's names: its public URL's host, its listen address (unless a wildcard), the loopback names, and
    /// the hosts of the `allowed` origins; its origins: the public URL's and the `allowed` ones (`*`: all). Hosts
    /// and origins are read as a browser reads them (`urls::Host::parse`, `urls::serialized_origin`).
    pub fn new(public_url: &str, listen: std::net::SocketAddr, allowed: &[String]) -> Names {
        let mut names = Names::default();
        for origin in std::iter::once(public_url).chain(allowed.iter().map(String::as_str)) {
            if origin.trim() == "*" {
                names.any_origin = true;
                continue;
            }
            names.hosts.extend(urls::host(origin));
            names.origins.extend(urls::serialized_origin(origin));
        }
        let listening = (!listen.ip().is_unspecified()).then(|| format!("http://{listen}"));
        let local = LOCAL_HOSTS.iter().map(|h| format!("http://{h}"));
        names.hosts.extend(listening.into_iter().chain(local).filter_map(|url| urls::host(&url)));
        names
    }

    /// `Ok` when the request's `Host` is one of the names (or absent) and its `Origin` is absent, the instance's own
    /// (the public URL's, or the one its `Host` names: the instance's page), or allowed; else 403 saying which.
    pub fn check(&self, req: &Request) -> Result<(), ApiError> {
        let mut hosts = req.headers().iter().filter(|(n, _)| n.eq_ignore_ascii_case("host"));
        let host = hosts.next().map(|(_, v)| std::str::from_utf8(v).map(str::trim));
        if let Some(host) = host {
            // One `host[:port]` (RFC 9112); an IP address is always one of ours to a browser (a rebinding page needs a
            // name of its own).
            let host = host.ok().filter(|h| hosts.next().is_none() && !h.contains(['@', '/', '\\', '?', '#']));
            let name = host.and_then(|h| urls::authority(&format!("http://{h}")));
            let ours = name.is_some_and(|(_, name, _)| name.ip().is_some() || self.hosts.contains(&name.to_string()));
            if !ours {
                let host = host.unwrap_or("(several, or not text)");
                return Err(ApiError::new(
                    403,
                    "host_refused",
                    format!(
                        "this free instance does not answer to the name {host:?} (a page may have pointed a name of \
                         its own at it); it answers to its IP addresses, its public URL's host, this machine's names \
                         and the hosts of WEBSEARCHD_ALLOWED_ORIGINS (add http://NAME:PORT there for another name \
                         you use)"
                    ),
                ));
            }
        }
        // A request a page of another site makes without an `Origin` (an image, a script, a link's prefetch): the
        // browser says so in `Sec-Fetch-Site`; a navigation (the user following a link) is the user's own.
        let fetch = |name: &str| req.header(name).map(str::trim);
        if matches!(fetch("sec-fetch-site"), Some("cross-site" | "same-site"))
            && fetch("sec-fetch-mode") != Some("navigate")
        {
            return Err(ApiError::new(
                403,
                "origin_refused",
                "a page on another site may not call this free instance through its visitor's browser",
            ));
        }
        let host = host.and_then(Result::ok);
        let mut origins = req.headers().iter().filter(|(n, _)| n.eq_ignore_ascii_case("origin"));
        let Some((_, origin)) = origins.next() else { return Ok(()) };
        let refused = |what: String| {
            ApiError::new(
                403,
                "origin_refused",
                format!(
                    "{what}: a page on another site may not call this free instance through its visitor's browser \
                     (WEBSEARCHD_ALLOWED_ORIGINS allows a browser tool of yours)"
                ),
            )
        };
        if origins.next().is_some() {
            return Err(refused("a request may carry one Origin header, not several".into()));
        }
        let Ok(origin) = std::str::from_utf8(origin) else {
            return Err(refused("the Origin header is not UTF-8".into()));
        };
        let origin = origin.trim();
        // An origin is `scheme://host[:port]` alone.
        let alone = origin.split_once("://").is_some_and(|(_, rest)| !rest.contains(['/', '\\', '?', '#', '@']));
        let compared = urls::serialized_origin(origin).filter(|_| alone);
        let own = |scheme: &str| host.and_then(|h| urls::serialized_origin(&format!("{scheme}://{h}")));
        let ours = compared.as_ref().is_some_and(|c| {
            self.origins.contains(c) || own("http").as_ref() == Some(c) || own("https").as_ref() == Some(c)
        });
        if self.any_origin || ours {
            Ok(())
        } else {
            Err(refused(format!("the Origin {origin:?} is not this instance's")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut raw = String::from("POST /service HTTP/1.1\r\n");
        for (k, v) in headers {
            raw.push_str(&format!("{k}: {v}\r\n"));
        }
        raw.push_str("Content-Length: 0\r\n\r\n");
        let peer: std::net::SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let client = crate::http::client_addr::Client { ip: peer.ip(), local: true };
        Request::from_wire(raw.into_bytes(), peer, client, crate::http::RequestId::from_bits(1)).unwrap()
    }

    #[test]
    fn names_origins_and_what_they_refuse() {
        let listen: std::net::SocketAddr = "127.0.0.1:8402".parse().unwrap();
        let names = Names::new("https://search.example.org/", listen, &["https://tool.example:8443".to_owned()]);
        let code = |headers: &[(&str, &str)]| names.check(&request(headers)).err().map(|e| e.code);
        // Programs: no Origin.
        assert_eq!(code(&[("Host", "127.0.0.1:8402")]), None);
        assert_eq!(code(&[("Host", "localhost:8402")]), None);
        assert_eq!(code(&[("Host", "search.example.org")]), None);
        assert_eq!(code(&[]), None, "no Host: not a browser's request");
        // The instance's own page, under the name it was opened with; the public URL; the allowed tool.
        assert_eq!(code(&[("Host", "127.0.0.1:8402"), ("Origin", "http://127.0.0.1:8402")]), None);
        assert_eq!(code(&[("Host", "search.example.org"), ("Origin", "https://search.example.org")]), None);
        assert_eq!(code(&[("Host", "127.0.0.1:8402"), ("Origin", "https://search.example.org:443")]), None);
        assert_eq!(code(&[("Host", "localhost:8402"), ("Origin", "https://tool.example:8443")]), None);
        // Others.
        assert_eq!(code(&[("Host", "127.0.0.1:8402"), ("Origin", "https://evil.example")]), Some("origin_refused"));
        assert_eq!(code(&[("Host", "127.0.0.1:8402"), ("Origin", "null")]), Some("origin_refused"));
        assert_eq!(code(&[("Host", "127.0.0.1:8402"), ("Origin", "http://127.0.0.1:9999")]), Some("origin_refused"));
        assert_eq!(code(&[("Host", "evil.example:8402")]), Some("host_refused"), "a rebinding name");
        // An IP address is the instance's to a browser (no page can rebind it); forms that are not host[:port] and
        // two Hosts are not.
        assert_eq!(code(&[("Host", "192.168.1.20:8402")]), None);
        assert_eq!(code(&[("Host", "[fd00::20]:8402")]), None);
        assert_eq!(code(&[("Host", "evil.example@localhost")]), Some("host_refused"));
        assert_eq!(code(&[("Host", "localhost/evil")]), Some("host_refused"));
        assert_eq!(code(&[("Host", "localhost"), ("Host", "evil.example")]), Some("host_refused"));
        // A page of another site without an Origin (an image): the browser's Sec-Fetch-Site says so; a navigation
        // is the user's.
        let image = [("Host", "127.0.0.1:8402"), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors")];
        assert_eq!(code(&image), Some("origin_refused"));
        let link = [("Host", "127.0.0.1:8402"), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate")];
        assert_eq!(code(&link), None);
        assert_eq!(
            code(&[("Host", "127.0.0.1:8402"), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors")]),
            None
        );
        assert_eq!(
            code(&[("Host", "evil.example:8402"), ("Origin", "http://evil.example:8402")]),
            Some("host_refused")
        );
        let two = [("Host", "127.0.0.1:8402"), ("Origin", "http://127.0.0.1:8402"), ("Origin", "https://evil.example")];
        assert_eq!(code(&two), Some("origin_refused"));
        let every = Names::new("http://127.0.0.1:8402", listen, &["*".to_owned()]);
        assert!(every.check(&request(&[("Host", "127.0.0.1"), ("Origin", "https://any.example")])).is_ok());
        assert!(every.check(&request(&[("Host", "evil.example")])).is_err(), "the Host is still checked");
    }
}
