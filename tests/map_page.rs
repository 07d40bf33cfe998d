//! Issue 20: the map page. Its headers and addresses over HTTP; then, in Chromium (tests/browser/map.mjs through
//! playwright-core), the page against a server whose feeds are loopback servers replaying ../shared/fixtures/map,
//! with Leaflet's CDN answered from the npm copy of the same version: objects drawn per layer, toggles, a layer in
//! error and a disabled one saying why, an earthquake's properties on a click, a phone's layout, no console errors.
//! Screenshots go to target/browser/ (CI keeps them as artifacts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::{Duration, Instant};

use common::upstream::{Answer, Upstream};
use common::Server;
use serde_json::json;

/// How long the server may take to poll every feed once at start (loopback answers, one poller thread).
const POLLED_WITHIN: Duration = Duration::from_secs(30);

fn fixture(rel: &str) -> Option<Vec<u8>> {
    common::shared_fixture(&format!("map/{rel}"))
}

#[test]
fn the_page_its_script_and_its_headers() {
    let server = Server::start(&[]);
    let page = server.get("/map/");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = page.header("content-security-policy").expect("a CSP");
    for directive in [
        "default-src 'none'",
        "script-src 'self' https://unpkg.com/leaflet@1.9.4/dist/;",
        "connect-src 'self';",
        "img-src 'self' https://tile.openstreetmap.org https://unpkg.com/leaflet@1.9.4/dist/;",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("unsafe-"), "{csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let html = page.text();
    let sri = websearchd::map::page::LEAFLET_JS_SRI;
    assert!(html.contains(&format!("src=\"https://unpkg.com/leaflet@1.9.4/dist/leaflet.js\" integrity=\"{sri}\"")));
    assert!(html.contains("<script src=\"map.js\"></script>"));

    let script = server.get("/map/map.js");
    assert_eq!((script.status, script.header("content-type")), (200, Some("text/javascript; charset=utf-8")));
    assert!(script.text().contains("api/capa/"));
    // Without the slash the page's relative addresses would miss the map's path: a redirect adds it.
    let bare = server.get("/map");
    assert_eq!((bare.status, bare.header("location")), (308, Some("/map/")));
    assert_eq!(server.request("POST", "/map/", &[], b"").status, 405);
    assert!(server
        .get("/metrics")
        .text()
        .contains("websearchd_http_requests_total{route=\"map_page\",status=\"200\"}"));

    // The operator's own copies: the page and its CSP name them; a URL that could break out of either is refused.
    let own = Server::start(&[
        ("WEBSEARCHD_MAP_PATH", "/world"),
        ("WEBSEARCHD_MAP_ASSETS_URL", "http://127.0.0.1:9/vendor/leaflet/"),
        ("WEBSEARCHD_MAP_TILES_URL", "off"),
    ]);
    let page = own.get("/world/");
    assert!(page.text().contains("src=\"http://127.0.0.1:9/vendor/leaflet/leaflet.js\""));
    assert!(page.text().contains("data-tiles=\"\""));
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self' http://127.0.0.1:9/vendor/leaflet/;")
            && csp.contains("img-src 'self'  http://127.0.0.1:9/vendor/leaflet/;"),
        "{csp}"
    );
    let refused = std::process::Command::new(common::binary())
        .arg("check-config")
        .env_clear()
        .env("WEBSEARCHD_MAP_TILES_URL", "https://t.example/{z}/{x}/{y}.png\"><script>")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("WEBSEARCHD_MAP_TILES_URL"));
}

#[test]
fn the_page_in_chromium_draws_the_recorded_layers() {
    let Some(tools) = common::browser_tools_or_skip() else { return };
    let (Some(usgs), Some(opensky), Some(celestrak), Some(seabed)) = (
        fixture("terremotos/usgs_all_hour_2024-05-31.geojson"),
        fixture("vuelos/opensky_states_all_bbox_2023-04-13.json"),
        fixture("satelites/celestrak_gp_stations_2026-08-06.json"),
        fixture("fondo-marino/opentopodata_gebco2020_13.03332_-31.70235.json"),
    ) else {
        return;
    };
    let feeds = Upstream::start(move |seen| match seen.path() {
        "/usgs" => Answer::json(200, usgs.clone()),
        // adsb.lol is down: the layer is served by its OpenSky fallback.
        "/adsb" => Answer::json(503, "{}"),
        "/opensky" => Answer::json(200, opensky.clone()),
        "/celestrak" => Answer::json(200, celestrak.clone()),
        "/opentopodata" => Answer::json(200, seabed.clone()),
        // Digitraffic fails: the ships layer is in error, and the page says why.
        _ => Answer::json(500, "{}"),
    });
    let env = [
        ("WEBSEARCHD_MAP_LAYERS", "vuelos,buques,terremotos,satelites,fondo-marino".to_owned()),
        ("WEBSEARCHD_MAP_TERREMOTOS_URL", feeds.url("/usgs")),
        ("WEBSEARCHD_MAP_VUELOS_URL", feeds.url("/adsb")),
        ("WEBSEARCHD_MAP_VUELOS_FALLBACK_URL", feeds.url("/opensky")),
        ("WEBSEARCHD_MAP_SATELITES_URL", feeds.url("/celestrak")),
        ("WEBSEARCHD_MAP_FONDO_MARINO_URL", feeds.url("/opentopodata")),
        ("WEBSEARCHD_MAP_BUQUES_URL", feeds.url("/digitraffic")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&env);

    // Every active layer polled once (the poller starts with the server; nothing here waits on a fixed time).
    let deadline = Instant::now() + POLLED_WITHIN;
    let state = loop {
        let state = server.get("/map/mapstate").json();
        let polled = state["layers"].as_array().unwrap().iter().all(|l| l["status"] != "pending");
        if polled || Instant::now() > deadline {
            break state;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let layer = |slug: &str| state["layers"].as_array().unwrap().iter().find(|l| l["slug"] == slug).unwrap().clone();
    // What the recordings hold: USGS 8 earthquakes, OpenSky 56 aircraft, CelesTrak 22 objects, OpenTopoData 1 sample.
    let expected = json!({ "terremotos": 8, "vuelos": 56, "satelites": 22, "fondo-marino": 1 });
    for (slug, count) in expected.as_object().unwrap() {
        let l = layer(slug);
        assert_eq!((l["status"].as_str(), &l["count"]), (Some("ok"), count), "{slug}: {l}");
    }
    let ships = layer("buques");
    assert_eq!(ships["status"], "error", "{ships}");
    assert_eq!(layer("conflictos")["status"], "disabled");

    let base = format!("http://{}/map", server.addr);
    let slugs = [("WS_ERROR_SLUG", "buques"), ("WS_DISABLED_SLUG", "conflictos"), ("WS_HUNG_SLUG", "fondo-marino")];
    let (out, shots) = common::run_browser_checks(&tools, "map.mjs", &base, &expected, &slugs);
    assert!(out.contains("ok   the panel shows magnitude"), "{out}");
    assert!(shots.join("map.png").is_file() && shots.join("map-phone.png").is_file());
}
