//! The facilitator client: `POST /verify` before the work and `POST /settle` after it, with
//! `{x402Version, paymentPayload, paymentRequirements}`. A refusal may come as 200 or 4xx with the same JSON; reason
//! codes are passed through as opaque strings. For settlement, only a clear refusal is a failure: a 2xx or 4xx whose
//! body is a JSON object with `success: false` (a JSON boolean) and an `errorReason` string. Everything else that is
//! not a clear success (a 2xx with `success: true`) is an unknown outcome that keeps the authorization held: a
//! timeout, a lost connection, a 5xx, a body that is not JSON, `success: "true"` as a string, a verdict that
//! contradicts its status, a 4xx without a verdict. The transfer may have been broadcast.
//!
//! `GET /supported` (`{kinds: [{x402Version, scheme, network}]}`) says which networks the facilitator serves: asked
//! at start, so that a network it does not serve stops the start instead of failing every payment.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fetch;

/// Largest facilitator answer read (a verdict is a few hundred bytes).
const ANSWER_BYTES_MAX: u64 = 256 * 1_024;
/// Kinds read from one `/supported` answer, and kinds quoted in a message.
const KINDS_MAX: usize = 256;
const KINDS_QUOTED_MAX: usize = 12;

/// What the facilitator's `GET /supported` says about the network payments are taken on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// It lists scheme `exact` on the network.
    Yes,
    /// It listed its kinds, and this network is not among them: the kinds it does list (`scheme network`).
    No(Vec<String>),
    /// No list of kinds came back: unreachable, a timeout, an error status, an answer that does not read.
    Unknown(String),
    /// It has no `/supported` (404): nothing to check, and nothing to ask again.
    NotOffered,
}

impl Support {
    /// The answer in one sentence for the operator, as the start logs it, `check-config` prints it and `/health`
    /// reports it.
    pub fn describe(&self, url: &str, network: super::Network) -> String {
        let caip2 = network.caip2();
        match self {
            Support::Yes => format!("facilitator {url}: serves exact on {caip2} (its /supported)"),
            Support::No(kinds) => Support::refusal(url, network, kinds),
            Support::Unknown(why) => {
                format!("the facilitator {url}/supported did not answer whether it serves {caip2} ({why})")
            }
            Support::NotOffered => {
                format!("the facilitator {url} has no /supported: whether it serves {caip2} is not checked")
            }
        }
    }

    /// For a network the facilitator does not serve: what it serves and what to set.
    fn refusal(url: &str, network: super::Network, kinds: &[String]) -> String {
        let listed = if kinds.is_empty() { "nothing".to_owned() } else { kinds.join(", ") };
        format!(
            "the facilitator {url} does not serve payments on {} (WEBSEARCHD_NETWORK={}): it lists {listed}. Set \
             WEBSEARCHD_NETWORK to a network it serves (base-sepolia: the testnet), or WEBSEARCHD_FACILITATOR_URL to \
             a facilitator that serves {} (for Base mainnet, one that takes an API key: \
             WEBSEARCHD_FACILITATOR_AUTH_FILE)",
            network.caip2(),
            network.v1_name(),
            network.caip2()
        )
    }
}

/// Reads a `/supported` answer for `network` (`Value::Null` when its body was not JSON).
pub fn support_of(status: u16, v: &Value, network: super::Network) -> Support {
    if status == 404 {
        return Support::NotOffered;
    }
    let Some(kinds) = v.get("kinds").and_then(Value::as_array).filter(|_| status == 200) else {
        return Support::Unknown(format!("HTTP {status} without a list of kinds"));
    };
    let mut listed = Vec::new();
    for kind in kinds.iter().take(KINDS_MAX) {
        let (Some(scheme), Some(name)) = (str_of(kind, "scheme"), str_of(kind, "network")) else { continue };
        // v1 kinds name the network `base`, v2 kinds `eip155:8453`; a family wildcard covers every chain in it.
        if scheme == "exact" && [network.caip2(), network.v1_name(), "eip155:*"].contains(&name.as_str()) {
            return Support::Yes;
        }
        if listed.len() < KINDS_QUOTED_MAX {
            listed.push(format!("{scheme} {name}"));
        }
    }
    Support::No(listed)
}

pub struct Facilitator {
    client: fetch::Client,
    base_url: String,
    /// The `Authorization` header value, if the facilitator needs one (read from a file; never logged).
    auth: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    Valid { payer: Option<String> },
    Invalid { reason: String, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Settled {
        transaction: String,
        network: String,
        payer: Option<String>,
    },
    Failed {
        reason: String,
        message: String,
    },
    /// Anything but a clear success or a clear refusal (a timeout, a lost connection, a 5xx, an answer that does not
    /// read): the transfer may or may not have happened.
    Unknown(String),
}

impl Facilitator {
    pub fn new(base_url: &str, auth: Option<String>, timeout: Duration) -> Facilitator {
        // No redirect is followed, so the policy for redirects is never used.
        let limits = fetch::Limits::within(timeout, ANSWER_BYTES_MAX, 0);
        let client = fetch::Client::new(limits, fetch::guard::Policy::default());
        Facilitator { client, base_url: base_url.trim_end_matches('/').to_owned(), auth }
    }

    fn post(&self, op: &str, version: u8, payload: &Value, requirements: &Value) -> Result<(u16, Value), String> {
        let body = json!({
            "x402Version": version,
            "paymentPayload": payload,
            "paymentRequirements": requirements,
        });
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let mut headers = vec![("Accept", "application/json")];
        if let Some(auth) = &self.auth {
            headers.push(("Authorization", auth.as_str()));
        }
        let url = format!("{}/{op}", self.base_url);
        let started = Instant::now();
        let result = self.client.post_json(&url, &headers, &bytes);
        log::debug!("facilitator {op}: {} ms", started.elapsed().as_millis());
        let fetched = result.map_err(|e| e.to_string())?;
        let value = serde_json::from_slice(&fetched.body).unwrap_or(Value::Null);
        Ok((fetched.status, value))
    }

    /// The facilitator the configuration names, its `Authorization` value read from its file.
    pub fn from_config(config: &crate::config::Config) -> Result<Facilitator, String> {
        let auth = match &config.facilitator_auth_file {
            Some(path) => {
                let text = read_secret(path)
                    .map_err(|e| format!("WEBSEARCHD_FACILITATOR_AUTH_FILE {}: {e}", path.display()))?;
                Some(text.trim().to_owned()).filter(|t| !t.is_empty())
            }
            None => None,
        };
        Ok(Facilitator::new(&config.facilitator_url, auth, Duration::from_millis(config.facilitator_timeout_ms)))
    }

    /// `GET /supported`, read for `network`.
    pub fn support(&self, network: super::Network) -> Support {
        let mut headers = vec![("Accept", "application/json")];
        if let Some(auth) = &self.auth {
            headers.push(("Authorization", auth.as_str()));
        }
        match self.client.get(&format!("{}/supported", self.base_url), &headers) {
            Ok(f) => support_of(f.status, &serde_json::from_slice(&f.body).unwrap_or(Value::Null), network),
            Err(e) => Support::Unknown(format!("{}: {e}", e.code())),
        }
    }

    pub fn url(&self) -> &str {
        &self.base_url
    }

    pub fn verify(&self, version: u8, payload: &Value, requirements: &Value) -> Result<Verified, String> {
        let (status, v) = self.post("verify", version, payload, requirements)?;
        match v.get("isValid").and_then(Value::as_bool) {
            Some(true) if status < 300 => Ok(Verified::Valid { payer: str_of(&v, "payer") }),
            Some(_) if status < 500 => Ok(Verified::Invalid {
                reason: str_of(&v, "invalidReason").unwrap_or_else(|| "invalid".into()),
                message: str_of(&v, "invalidMessage").unwrap_or_default(),
            }),
            _ => Err(format!("the facilitator answered /verify with HTTP {status} and no verdict")),
        }
    }

    pub fn settle(&self, version: u8, payload: &Value, requirements: &Value) -> Settled {
        match self.post("settle", version, payload, requirements) {
            Ok((status, v)) => settle_verdict(status, &v),
            Err(e) => Settled::Unknown(e),
        }
    }
}

/// Reads a `/settle` answer (`Value::Null` when its body was not JSON).
fn settle_verdict(status: u16, v: &Value) -> Settled {
    let unknown = |what: &str| Settled::Unknown(format!("HTTP {status} with {what}"));
    if !(200..500).contains(&status) || (300..400).contains(&status) {
        return unknown("no verdict that can be relied on");
    }
    if !v.is_object() {
        return unknown("a body that is not a JSON object");
    }
    match (v.get("success"), status < 300) {
        (Some(Value::Bool(true)), true) => Settled::Settled {
            transaction: str_of(v, "transaction").unwrap_or_default(),
            network: str_of(v, "network").unwrap_or_default(),
            payer: str_of(v, "payer"),
        },
        (Some(Value::Bool(true)), false) => unknown("`success: true`, contradicting the status"),
        // A refusal that names a transaction may have been broadcast: not a clear refusal.
        (Some(Value::Bool(false)), _) if str_of(v, "transaction").is_some_and(|t| !t.is_empty()) => {
            unknown("`success: false` naming a transaction")
        }
        (Some(Value::Bool(false)), _) => match str_of(v, "errorReason").filter(|r| !r.is_empty()) {
            Some(reason) => Settled::Failed { reason, message: str_of(v, "errorMessage").unwrap_or_default() },
            None => unknown("`success: false` but no `errorReason`"),
        },
        (Some(_), _) => unknown("a `success` that is not a JSON boolean"),
        (None, _) => unknown("no `success` in the answer"),
    }
}

/// Characters kept of a string the facilitator sends (a reason, a message, a transaction hash): they go into the
/// ledger and into answers.
pub const ANSWER_STRING_CHARS_MAX: usize = 256;

fn str_of(v: &Value, name: &str) -> Option<String> {
    v.get(name).and_then(Value::as_str).map(|s| s.chars().take(ANSWER_STRING_CHARS_MAX).collect())
}

/// A secret file's text: opened never through a link and only if it is a regular file (`statedir::open_file`, as the
/// Redis secret is), at most `statedir::SMALL_FILE_BYTES_MAX` bytes; a warning when others may read it.
fn read_secret(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let file = crate::statedir::open_file(path, std::fs::OpenOptions::new().read(true))?;
    if file.metadata()?.permissions().mode() & 0o077 != 0 {
        log::warn!("{} is readable by group or others; it holds a secret (chmod 600)", path.display());
    }
    let max = crate::statedir::SMALL_FILE_BYTES_MAX;
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::other(format!("is larger than {max} bytes")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(status: u16, body: &str, expected: &str) {
        let v = serde_json::from_str(body).unwrap_or(Value::Null);
        let got = match settle_verdict(status, &v) {
            Settled::Settled { .. } => "settled".to_owned(),
            Settled::Failed { reason, .. } => format!("failed {reason}"),
            Settled::Unknown(_) => "unknown".to_owned(),
        };
        assert_eq!(got, expected, "HTTP {status} {body}");
    }

    #[test]
    fn supported_kinds_are_read_for_the_network() {
        use crate::x402::Network::{Base, BaseSepolia};
        // The public testnet facilitator's kinds (x402.org/facilitator): v1 and v2 names of the testnets.
        let testnets = r#"{"kinds":[{"x402Version":1,"scheme":"exact","network":"base-sepolia"},
            {"x402Version":2,"scheme":"exact","network":"eip155:84532"},
            {"x402Version":2,"scheme":"exact","network":"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"}],
            "extensions":[],"signers":{}}"#;
        let v: Value = serde_json::from_str(testnets).unwrap_or(Value::Null);
        assert_eq!(support_of(200, &v, BaseSepolia), Support::Yes);
        match support_of(200, &v, Base) {
            Support::No(kinds) => assert_eq!(kinds[0], "exact base-sepolia"),
            other => panic!("{other:?}"),
        }
        let v1_mainnet = serde_json::json!({ "kinds": [{ "x402Version": 1, "scheme": "exact", "network": "base" }] });
        assert_eq!(support_of(200, &v1_mainnet, Base), Support::Yes);
        let other_scheme = serde_json::json!({ "kinds": [{ "scheme": "upto", "network": "eip155:8453" }] });
        assert!(matches!(support_of(200, &other_scheme, Base), Support::No(_)));
        assert_eq!(support_of(404, &Value::Null, Base), Support::NotOffered);
        assert!(matches!(support_of(200, &Value::Null, Base), Support::Unknown(_)));
        assert!(matches!(support_of(503, &v, BaseSepolia), Support::Unknown(_)));
    }

    #[test]
    fn strings_from_the_facilitator_are_capped() {
        let long = "r".repeat(10 * ANSWER_STRING_CHARS_MAX);
        let v = serde_json::json!({ "success": false, "errorReason": long });
        match settle_verdict(200, &v) {
            Settled::Failed { reason, .. } => assert_eq!(reason.chars().count(), ANSWER_STRING_CHARS_MAX),
            _ => panic!("a clear refusal"),
        }
    }

    #[test]
    fn only_a_clear_refusal_is_a_failure() {
        check(200, r#"{"success":true,"transaction":"0x1","network":"eip155:8453"}"#, "settled");
        check(
            200,
            r#"{"success":false,"errorReason":"insufficient_funds","transaction":""}"#,
            "failed insufficient_funds",
        );
        check(400, r#"{"success":false,"errorReason":"invalid_payload"}"#, "failed invalid_payload");
        check(402, r#"{"success":false,"errorReason":"x","errorMessage":"y"}"#, "failed x");
        for (status, body) in [
            (200, "<html>ok</html>"),
            (200, ""),
            (200, r#"{"success":"true","transaction":"0x1"}"#),
            (200, r#"{"success":"false","errorReason":"x"}"#),
            (200, r#"{"success":1}"#),
            (200, r#"{"success":false}"#),
            (200, r#"{"success":false,"errorReason":""}"#),
            (200, r#"{"success":false,"errorReason":7}"#),
            (200, r#"{"success":false,"errorReason":"x","transaction":"0xabc"}"#),
            (200, r#"[{"success":false,"errorReason":"x"}]"#),
            (200, r#"{"transaction":"0x1"}"#),
            (400, "bad request"),
            (400, "{}"),
            (400, r#"{"success":true,"transaction":"0x1"}"#),
            (404, r#"{"error":"not found"}"#),
            (302, r#"{"success":false,"errorReason":"x"}"#),
            (500, r#"{"success":false,"errorReason":"x"}"#),
            (502, "bad gateway"),
        ] {
            check(status, body, "unknown");
        }
    }

    /// The facilitator's secret is read as the Redis secret is: never through a link (issue 41's review).
    #[test]
    fn the_auth_file_is_never_read_through_a_link() {
        let dir = std::env::temp_dir().join(format!("websearchd-facilitator-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (file, link) = (dir.join("auth"), dir.join("link"));
        std::fs::write(&file, "Bearer secret\n").unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_secret(&file).unwrap(), "Bearer secret\n");
        let refused = read_secret(&link).unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");
        assert!(read_secret(&dir).is_err(), "a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
