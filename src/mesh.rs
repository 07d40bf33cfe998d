//! The mesh of agents around this service, for `/core/meshgraph`: which agents called which of our services (by
//! their public address: the payer of a verified payment, or an `X-WALLET` address hint on a free call), how
//! often, when last and how many of those calls failed. Upstream edges (sources, facilitator) are added from the
//! components' own counters when the graph is drawn.
//!
//! Bounded: at most `AGENTS_MAX` agents are remembered; past it the one seen longest ago is aged out.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

/// Agents remembered.
pub const AGENTS_MAX: usize = 1_000;

#[derive(Default)]
pub struct Mesh {
    agents: Mutex<HashMap<(String, &'static str), Calls>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Calls {
    count: u64,
    failures: u64,
    last_at_ms: u64,
    /// Whether the address was proven by a payment signature (otherwise it is a hint).
    verified: bool,
}

/// An agent's address as the graph names it: an Ethereum address, lowercased; anything else is not recorded.
pub fn agent_address(text: &str) -> Option<String> {
    let t = text.trim();
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    (hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| format!("0x{}", hex.to_ascii_lowercase()))
}

impl Mesh {
    /// Records a call from `agent` to `service` (`search`, `notary`).
    pub fn call(&self, agent: &str, service: &'static str, ok: bool, verified: bool, now_ms: u64) {
        let Some(address) = agent_address(agent) else { return };
        let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        let key = (address, service);
        if !agents.contains_key(&key) && agents.len() >= AGENTS_MAX {
            if let Some(oldest) = agents.iter().min_by_key(|(_, c)| c.last_at_ms).map(|(k, _)| k.clone()) {
                agents.remove(&oldest);
            }
        }
        let calls = agents.entry(key).or_default();
        calls.count += 1;
        if !ok {
            calls.failures += 1;
        }
        calls.last_at_ms = now_ms;
        calls.verified |= verified;
    }

    pub fn agents(&self) -> usize {
        self.agents.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Agent nodes and their edges to our services, most recent first.
    pub fn agent_part(&self, service_id: impl Fn(&str) -> String) -> (Vec<Value>, Vec<Value>) {
        let agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<(&(String, &'static str), &Calls)> = agents.iter().collect();
        // Unstable: the names are a map's keys, each once.
        rows.sort_unstable_by(|a, b| b.1.last_at_ms.cmp(&a.1.last_at_ms).then_with(|| a.0.cmp(b.0)));
        // One pass for the addresses a payment proved (an agent may have several edges).
        let verified: std::collections::HashSet<&str> =
            agents.iter().filter(|(_, c)| c.verified).map(|((a, _), _)| a.as_str()).collect();
        let mut nodes: Vec<Value> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut edges = Vec::new();
        for ((address, service), calls) in rows {
            let id = format!("agent:{address}");
            if seen.insert(id.clone()) {
                let verified = verified.contains(address.as_str());
                nodes.push(json!({
                    "id": id,
                    "kind": "agent",
                    "label": address,
                    "address_verified": verified,
                }));
            }
            edges.push(json!({
                "from": id,
                "to": service_id(service),
                "kind": "calls",
                "count": calls.count,
                "last_at": crate::clock::rfc3339(calls.last_at_ms),
                "failures": calls.failures,
            }));
        }
        (nodes, edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_only_and_bounded() {
        let mesh = Mesh::default();
        mesh.call("not an address", "search", true, false, 1);
        mesh.call("0xABCDEF0123456789abcdef0123456789ABCDEF01", "search", true, true, 2);
        mesh.call("0xabcdef0123456789abcdef0123456789abcdef01", "search", false, false, 3);
        assert_eq!(mesh.agents(), 1);
        let (nodes, edges) = mesh.agent_part(|s| format!("service:{s}"));
        assert_eq!(nodes[0]["label"], "0xabcdef0123456789abcdef0123456789abcdef01");
        assert_eq!(nodes[0]["address_verified"], true);
        assert_eq!(edges[0]["count"], 2);
        assert_eq!(edges[0]["failures"], 1);
        for i in 0..(AGENTS_MAX as u64 + 5) {
            mesh.call(&format!("0x{i:040x}"), "notary", true, false, 10 + i);
        }
        assert_eq!(mesh.agents(), AGENTS_MAX);
    }
}
