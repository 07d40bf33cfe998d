//! x402 payments: the published terms and the 402 challenge (`terms`), decoding and checking a payment locally
//! (`payment`, `eip712`), the facilitator (`facilitator`), the durable ledger and replay guard (`ledger`), and the
//! gate that runs them in order around the paid work (`gate`).
//!
//! Amounts are integers in the token's atomic units everywhere (USDC has 6 decimals: 5000 = 0.005 USDC).

pub mod eip712;
pub mod facilitator;
pub mod gate;
pub mod ledger;
pub mod payment;
pub mod terms;

pub use gate::{Admission, Call, Carried, Free, FreeRules, Gate, Refusal, Settlement, Unserved};
pub use terms::{Network, Resource, Terms};
