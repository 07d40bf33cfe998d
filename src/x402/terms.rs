//! The terms the service publishes and the 402 challenge built from them (x402 v2 `PaymentRequired`, with the v1
//! requirement shape for payments that arrive as v1).

use serde_json::{json, Map, Value};

use super::eip712::{checksum_address, parse_address, Address, Domain};
use super::FreeRules;

/// The chains on which USDC payments are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Base,
    BaseSepolia,
}

impl Network {
    pub fn from_name(name: &str) -> Option<Network> {
        match name {
            "base" | "eip155:8453" => Some(Network::Base),
            "base-sepolia" | "eip155:84532" => Some(Network::BaseSepolia),
            _ => None,
        }
    }

    /// CAIP-2 name (x402 v2).
    pub fn caip2(self) -> &'static str {
        match self {
            Network::Base => "eip155:8453",
            Network::BaseSepolia => "eip155:84532",
        }
    }

    /// x402 v1 name.
    pub fn v1_name(self) -> &'static str {
        match self {
            Network::Base => "base",
            Network::BaseSepolia => "base-sepolia",
        }
    }

    pub fn chain_id(self) -> u64 {
        match self {
            Network::Base => 8_453,
            Network::BaseSepolia => 84_532,
        }
    }

    /// The USDC contract.
    pub fn usdc(self) -> Address {
        let hex = match self {
            Network::Base => "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            Network::BaseSepolia => "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        };
        parse_address(hex).unwrap_or([0; 20])
    }

    /// The EIP-712 domain name of USDC on this chain (mainnet and testnet differ: the most common real failure).
    pub fn usdc_domain_name(self) -> &'static str {
        match self {
            Network::Base => "USD Coin",
            Network::BaseSepolia => "USDC",
        }
    }

    pub fn domain(self) -> Domain {
        Domain {
            name: self.usdc_domain_name().into(),
            version: "2".into(),
            chain_id: self.chain_id(),
            verifying_contract: self.usdc(),
        }
    }
}

/// What one paid operation costs and where the money goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    pub network: Network,
    pub pay_to: Address,
    /// Atomic units of USDC.
    pub price: u128,
    pub max_timeout_s: u64,
}

/// The resource a challenge is for.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    pub url: String,
    pub description: String,
    pub mime_type: String,
    /// The bazaar discovery extension (`info` and `schema`), if the operation publishes one.
    pub bazaar: Option<Value>,
    /// The operation's own price (atomic units), when it differs from the terms'.
    pub price: Option<u128>,
}

/// USDC has 6 decimals: 5000 atomic units are "0.005".
pub fn usdc_decimal(atomic: u128) -> String {
    let whole = atomic / 1_000_000;
    let frac = format!("{:06}", atomic % 1_000_000);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{frac}")
    }
}

/// The published terms as strings (the agent card's extension params, the catalogue, OpenAPI's `x-x402`).
pub fn published(resource: &str, terms: &Terms, free: FreeRules) -> Map<String, Value> {
    let mut m = Map::new();
    let mut put = |k: &str, v: String| {
        m.insert(k.into(), Value::String(v));
    };
    put("scheme", "exact".into());
    put("network", terms.network.caip2().into());
    put("asset", checksum_address(&terms.network.usdc()));
    put("assetSymbol", "USDC".into());
    put("payTo", checksum_address(&terms.pay_to));
    put("amount", terms.price.to_string());
    put("priceUsd", usdc_decimal(terms.price));
    put("maxTimeoutSeconds", terms.max_timeout_s.to_string());
    put("resource", resource.to_owned());
    if free.trial_calls_per_day > 0 {
        put("trialCallsPerDay", free.trial_calls_per_day.to_string());
    }
    if free.loopback {
        put("freeFromLoopback", "true".into());
    }
    m
}

impl Resource {
    /// The resource of a call that extracts `pages` pages, when the operator prices a page past the first
    /// (`per_page` atomic units, `WEBSEARCHD_EXTRACT_PAGE_PRICE_ATOMIC`): the same operation at `base` (its price or
    /// the terms') plus `per_page` for each extra page; `None` when the call costs the ordinary price.
    pub fn for_pages(&self, base: u128, per_page: u128, pages: usize) -> Option<Resource> {
        let extra = u128::try_from(pages.checked_sub(1)?).ok()?;
        if per_page == 0 || extra == 0 {
            return None;
        }
        let price = self.price.unwrap_or(base).saturating_add(per_page.saturating_mul(extra));
        Some(Resource { price: Some(price), ..self.clone() })
    }
}

impl Terms {
    /// The v2 `PaymentRequirements` entry.
    pub fn requirement_v2(&self) -> Value {
        json!({
            "scheme": "exact",
            "network": self.network.caip2(),
            "amount": self.price.to_string(),
            "asset": checksum_address(&self.network.usdc()),
            "payTo": checksum_address(&self.pay_to),
            "maxTimeoutSeconds": self.max_timeout_s,
            "extra": { "name": self.network.usdc_domain_name(), "version": "2" },
        })
    }

    /// The v1 `PaymentRequirements` entry (for payments sent as v1).
    pub fn requirement_v1(&self, resource: &Resource) -> Value {
        json!({
            "scheme": "exact",
            "network": self.network.v1_name(),
            "maxAmountRequired": self.price.to_string(),
            "asset": checksum_address(&self.network.usdc()),
            "payTo": checksum_address(&self.pay_to),
            "resource": resource.url,
            "description": resource.description,
            "mimeType": resource.mime_type,
            "maxTimeoutSeconds": self.max_timeout_s,
            "extra": { "name": self.network.usdc_domain_name(), "version": "2" },
        })
    }

    /// The v2 `PaymentRequired` object, as the `PAYMENT-REQUIRED` header carries it (base64; the 402 body adds words
    /// for people). `error` is a stable code when a payment was refused. It is kept lean: the header block of a 402
    /// must stay well under a reverse proxy's response-header buffer (nginx: 4 KB by default).
    pub fn challenge(&self, resource: &Resource, error: Option<&str>) -> Value {
        let mut v = json!({
            "x402Version": 2,
            "resource": {
                "url": resource.url,
                "description": resource.description,
                "mimeType": resource.mime_type,
            },
            "accepts": [self.requirement_v2()],
        });
        if let Some(map) = v.as_object_mut() {
            if let Some(code) = error {
                map.insert("error".into(), code.into());
            }
            if let Some(bazaar) = &resource.bazaar {
                map.insert("extensions".into(), json!({ "bazaar": bazaar }));
            }
        }
        v
    }
}
