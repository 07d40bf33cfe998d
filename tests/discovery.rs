//! The discovery documents say what this instance does (issue 16: a free instance's llms.txt said "Price: free" and
//! then "Without payment a call gets HTTP 402"; its notary line promised a 402 for a GET that gets 405; the card
//! said "paid per call"; disabled map layers were listed). The words are checked against the server's own answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::pay::{Facilitator, PAY_TO};
use common::Server;
use serde_json::Value;

struct Documents {
    guide: String,
    card: Value,
    /// The status a GET of the notary's service gets.
    notary_get: u16,
}

fn documents(server: &Server) -> Documents {
    Documents {
        guide: server.get("/llms.txt").text(),
        card: server.get("/agent-card.json").json(),
        notary_get: server.get("/notary/service").status,
    }
}

/// The map with one layer on (its feed on a closed loopback port: nothing is fetched from outside).
fn map_vars(closed: &str) -> Vec<(String, String)> {
    vec![
        ("WEBSEARCHD_MAP_LAYERS".into(), "terremotos".into()),
        ("WEBSEARCHD_MAP_TERREMOTOS_URL".into(), format!("{closed}/feed")),
    ]
}

fn closed_port() -> String {
    format!("http://{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap())
}

#[track_caller]
fn check_map(guide: &str) {
    assert!(guide.contains("[Layer terremotos]"), "{guide}");
    for off in ["vuelos", "buques", "satelites", "conflictos", "fondo-marino", "conflictos-ucdp"] {
        assert!(!guide.contains(&format!("[Layer {off}]")), "{off} is off: {guide}");
    }
}

#[test]
fn a_free_instance_says_it_is_free() {
    let closed = closed_port();
    let server = Server::start(&common::pairs(&map_vars(&closed)));
    let d = documents(&server);
    assert_eq!(d.notary_get, 405);
    assert!(d.guide.contains("Price: free"), "{}", d.guide);
    assert!(!d.guide.contains("402"), "a free instance never answers 402: {}", d.guide);
    assert!(d.guide.contains("a GET gets 405"), "{}", d.guide);
    let description = d.card["description"].as_str().unwrap();
    assert!(!description.contains("paid per call") && description.contains("free"), "{description}");
    assert!(!d.card.to_string().contains("x402"), "no x402 on a free card: {}", d.card);
    check_map(&d.guide);
    check_reader(&server, &d);
    let reader = reader_operation(&server);
    assert_eq!(reader["payment"]["mode"], "free", "{reader}");
}

/// The reader door (`POST /extract`) is in the guide, the card's skills and the catalogue, at its URL.
#[track_caller]
fn check_reader(server: &Server, d: &Documents) {
    assert!(d.guide.contains("- [Reader](") && d.guide.contains("/extract): POST JSON"), "{}", d.guide);
    let skills: Vec<&str> = d.card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(skills.contains(&"extract"), "{skills:?}");
    let reader = reader_operation(server);
    assert_eq!((&reader["method"], &reader["path"]), (&"POST".into(), &"/extract".into()), "{reader}");
    assert!(reader["url"].as_str().unwrap().ends_with("/extract"), "{reader}");
}

fn reader_operation(server: &Server) -> Value {
    let catalog = server.get("/catalog.json").json();
    let operations = catalog["operations"].as_array().unwrap();
    operations.iter().find(|o| o["id"] == "extract").cloned().unwrap()
}

#[test]
fn a_paid_instance_says_how_to_pay() {
    let facilitator = Facilitator::start();
    let closed = closed_port();
    let mut vars = map_vars(&closed);
    vars.push(("WEBSEARCHD_PAY_TO".into(), PAY_TO.into()));
    vars.push(("WEBSEARCHD_FACILITATOR_URL".into(), facilitator.url()));
    vars.push(("WEBSEARCHD_EXTRACT_PRICE_ATOMIC".into(), "700".into()));
    let server = Server::start(&common::pairs(&vars));
    let d = documents(&server);
    assert_eq!(d.notary_get, 402);
    check_reader(&server, &d);
    assert!(d.guide.contains("0.0007 USDC per URL asked"), "{}", d.guide);
    let reader = reader_operation(&server);
    assert_eq!(reader["payment"]["amount"], "700", "{reader}");
    let skill = d.card["skills"].as_array().unwrap().iter().find(|s| s["id"] == "extract").unwrap();
    assert!(skill["description"].as_str().unwrap().contains("0.0007 USDC a page"), "{skill}");
    assert!(d.guide.contains("Without payment a call gets HTTP 402"), "{}", d.guide);
    assert!(d.guide.contains("a GET or an unpaid POST gets 402"), "{}", d.guide);
    assert!(d.card["description"].as_str().unwrap().contains("paid per call with x402"));
    check_map(&d.guide);
}
