//! The facilitator client: `POST /verify` before the work and `POST /settle` after it, with
//! `{x402Version, paymentPayload, paymentRequirements}`. A refusal may come as 200 or 4xx with the same JSON; reason
//! codes are passed through as opaque strings. For settlement, a timeout or a 5xx is an unknown outcome (the
//! transfer may have been broadcast), never a failure.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::fetch;

/// Largest facilitator answer read (a verdict is a few hundred bytes).
const ANSWER_BYTES_MAX: u64 = 256 * 1_024;

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
    /// Timeout, connection lost, or 5xx: the transfer may or may not have happened.
    Unknown(String),
}

impl Facilitator {
    pub fn new(base_url: &str, auth: Option<String>, timeout: Duration) -> Facilitator {
        let client = fetch::Client::new(fetch::Limits {
            connect_timeout: timeout.min(crate::fetch::CONNECT_TIMEOUT_MAX),
            total_timeout: timeout,
            body_bytes_max: ANSWER_BYTES_MAX,
            redirects_max: 0,
        });
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
        let (status, v) = match self.post("settle", version, payload, requirements) {
            Ok(r) => r,
            Err(e) => return Settled::Unknown(e),
        };
        if status >= 500 {
            return Settled::Unknown(format!("HTTP {status}"));
        }
        match v.get("success").and_then(Value::as_bool) {
            Some(true) if status < 300 => Settled::Settled {
                transaction: str_of(&v, "transaction").unwrap_or_default(),
                network: str_of(&v, "network").unwrap_or_default(),
                payer: str_of(&v, "payer"),
            },
            Some(_) => Settled::Failed {
                reason: str_of(&v, "errorReason").unwrap_or_else(|| "settlement_failed".into()),
                message: str_of(&v, "errorMessage").unwrap_or_default(),
            },
            // A 2xx or 4xx without a verdict: the facilitator did not settle as far as it says.
            None => Settled::Failed { reason: format!("http_{status}"), message: "no `success` in the answer".into() },
        }
    }
}

fn str_of(v: &Value, name: &str) -> Option<String> {
    v.get(name).and_then(Value::as_str).map(str::to_owned)
}
