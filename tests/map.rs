//! The live map: each layer parsed from recorded responses served by loopback upstreams, with an injected clock (the
//! recordings are old); stale and error states while the last good data is still served; disabled layers and their
//! reasons; the HTTP endpoints of the real server; SGP4 against the published verification cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use common::upstream::{Answer, Upstream};
use common::{own_fixture, shared_fixture, Server};
use serde_json::Value;
use websearchd::clock::Clock;
use websearchd::map::{MapService, Settings};

struct FixedClock(AtomicU64);

impl Clock for FixedClock {
    fn now_unix_ms(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

fn fixture(rel: &str) -> Option<Vec<u8>> {
    let f = shared_fixture(&format!("map/{rel}"));
    if f.is_none() {
        eprintln!("notice: ../shared/fixtures/map/{rel} is absent; skipping");
    }
    f
}

fn map(layers: &[&str], urls: &[(&str, String)], now_ms: u64) -> (MapService, Arc<FixedClock>) {
    let clock = Arc::new(FixedClock(AtomicU64::new(now_ms)));
    let mut s = Settings::defaults();
    s.layers = layers.iter().map(|l| l.to_string()).collect();
    s.urls = urls.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    s.timeout = std::time::Duration::from_secs(3);
    (MapService::new(s, clock.clone()), clock)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn serve(body: Vec<u8>) -> Upstream {
    Upstream::start(move |_| Answer::json(200, body.clone()))
}

#[test]
fn earthquakes() {
    let Some(body) = fixture("terremotos/usgs_all_hour_2024-05-31.geojson") else { return };
    let up = serve(body);
    let generated = 1_717_198_140_000;
    let (m, _) = map(&["terremotos"], &[("terremotos", up.url("/feed"))], generated + 30_000);
    assert_eq!(m.layer_data("terremotos").unwrap()["layer"]["status"], "pending");
    assert!(m.poll_slug("terremotos"));
    let data = m.layer_data("terremotos").unwrap();
    assert_eq!(data["type"], "FeatureCollection");
    let features = data["features"].as_array().unwrap();
    assert_eq!(features.len(), 8);
    let layer = &data["layer"];
    assert_eq!((layer["status"].as_str(), layer["count"].as_u64()), (Some("ok"), Some(8)));
    assert_eq!(layer["source_time"], "2024-05-31T23:29:00Z");
    assert_eq!(layer["source"]["id"], "usgs");
    assert_eq!(layer["kind"], "earthquakes");
    let f = &features[0];
    let c = f["geometry"]["coordinates"].as_array().unwrap();
    let (lon, lat) = (c[0].as_f64().unwrap(), c[1].as_f64().unwrap());
    assert!((-180.0..=180.0).contains(&lon) && (-90.0..=90.0).contains(&lat));
    for key in ["id", "magnitude", "place", "time_ms", "depth_km", "url"] {
        assert!(!f["properties"][key].is_null(), "{key} in {f}");
    }
}

/// Issue 33, finding 2: a layer's document is rendered once and shared by its readers (it was a new JSON tree per
/// request), again once `DOCUMENT_FRESH_MS` have passed (its age and status move) and after every poll.
#[test]
fn a_layer_document_is_rendered_once_and_shared() {
    let Some(body) = fixture("terremotos/usgs_all_hour_2024-05-31.geojson") else { return };
    let up = serve(body);
    let t0 = 1_717_198_140_000;
    let (m, clock) = map(&["terremotos"], &[("terremotos", up.url("/feed"))], t0);
    m.poll_slug("terremotos");
    let first = m.layer_document("terremotos").unwrap();
    let fresh = websearchd::map::DOCUMENT_FRESH_MS;
    clock.0.fetch_add(fresh - 1, Relaxed);
    assert!(Arc::ptr_eq(&first, &m.layer_document("terremotos").unwrap()), "rendered again within the interval");
    clock.0.fetch_add(1, Relaxed);
    let later = m.layer_document("terremotos").unwrap();
    assert!(!Arc::ptr_eq(&first, &later));
    let v: Value = serde_json::from_slice(later.body()).unwrap();
    assert_eq!(v["generated_at"], websearchd::clock::rfc3339(t0 + fresh));
    assert_eq!(v["features"].as_array().unwrap().len(), 8);
    // A poll's outcome is in the next document at once.
    m.poll_slug("terremotos");
    let polled: Value = serde_json::from_slice(m.layer_document("terremotos").unwrap().body()).unwrap();
    assert_eq!(polled["layer"]["health"]["usgs"]["ok_count"], 2);
    assert!(later.body().len() < websearchd::map::DOCUMENT_BYTES_MAX);
}

#[test]
fn flights_from_adsb_and_the_opensky_fallback() {
    let (Some(adsb), Some(opensky)) = (
        fixture("vuelos/adsbx_v2_format_adsbone_icao_a9cee9_2023-02-05.json"),
        fixture("vuelos/opensky_states_all_bbox_2023-04-13.json"),
    ) else {
        return;
    };
    let up = serve(adsb);
    let (m, _) = map(&["vuelos"], &[("vuelos", up.url("/v2/point"))], 1_675_633_671_226);
    m.poll_slug("vuelos");
    let data = m.layer_data("vuelos").unwrap();
    let f = &data["features"][0];
    assert_eq!(f["geometry"]["coordinates"], serde_json::json!([-93.374147, 37.358322]));
    let p = &f["properties"];
    assert_eq!(p["id"], "a9cee9");
    assert_eq!(p["callsign"], "N731BP");
    assert_eq!(p["altitude_m"], 11582.0, "38000 ft");
    assert_eq!(p["speed_kmh"], 627.6, "338.9 kt");
    assert_eq!(data["layer"]["served_by"], "adsb.lol");

    // adsb.lol fails: OpenSky answers instead; vectors without a position are dropped.
    let down = Upstream::start(|_| Answer::json(503, "{}"));
    let fallback = serve(opensky.clone());
    let clock = Arc::new(FixedClock(AtomicU64::new(1_681_393_749_000)));
    let mut s = Settings::defaults();
    s.layers = vec!["vuelos".into()];
    s.urls = vec![("vuelos".into(), down.url("/v2"))];
    s.vuelos_fallback_url = fallback.url("/api/states/all");
    let m = MapService::new(s, clock.clone());
    m.poll_slug("vuelos");
    let data = m.layer_data("vuelos").unwrap();
    let v: Value = serde_json::from_slice(&opensky).unwrap();
    let with_position = v["states"].as_array().unwrap().iter().filter(|s| !s[5].is_null() && !s[6].is_null()).count();
    assert_eq!(data["features"].as_array().unwrap().len(), with_position);
    assert_eq!(data["layer"]["served_by"], "opensky");
    assert_eq!(data["layer"]["health"]["adsb.lol"]["error_count"], 1);
    assert_eq!(data["layer"]["health"]["opensky"]["ok_count"], 1);
    assert_eq!(data["layer"]["status"], "ok");
    let first = &data["features"][0]["properties"];
    assert_eq!(first["callsign"], "EZY9253");
    assert_eq!(first["altitude_m"], 10668.0);
    // OpenSky's anonymous quota: the fallback is not asked again within 15 minutes.
    m.poll_slug("vuelos");
    assert_eq!(fallback.count("/api/states/all"), 1);
    assert_eq!(down.count("/v2"), 2);
}

#[test]
fn ships_gzip_header_and_sentinels() {
    let Some(body) = fixture("buques/digitraffic_legacy_locations_2017-02-20_first5.json") else { return };
    let gz = gzip(&body);
    let up = Upstream::start(move |seen| {
        // Digitraffic refuses clients that do not take gzip, and asks for a Digitraffic-User header.
        if !seen.header("accept-encoding").is_some_and(|v| v.contains("gzip"))
            || seen.header("digitraffic-user").is_none()
        {
            return Answer::json(406, "{}");
        }
        Answer::WithHeaders(Box::new(Answer::json(200, gz.clone())), vec![("Content-Encoding".into(), "gzip".into())])
    });
    let (m, _) = map(&["buques"], &[("buques", up.url("/api/ais/v1/locations"))], 1_487_615_300_000);
    m.poll_slug("buques");
    let data = m.layer_data("buques").unwrap();
    assert_eq!(data["layer"]["status"], "ok", "{}", data["layer"]);
    let features = data["features"].as_array().unwrap();
    assert_eq!(features.len(), 5);
    assert_eq!(features[0]["properties"]["id"], 265546940);
    assert_eq!(features[0]["properties"]["speed_kn"], 0.1);
    // heading 511, sog 102.3, cog 360 and navStat 15 mean "not available": null, never a number.
    for f in features {
        let p = &f["properties"];
        assert!(p["heading_deg"].is_null() || p["heading_deg"].as_f64().unwrap() < 360.0);
        assert!(p["speed_kn"].is_null() || p["speed_kn"].as_f64().unwrap() < 102.2);
        assert!(p["nav_status"] != 15);
    }
    assert!(features.iter().any(|f| f["properties"]["heading_deg"].is_null()), "the recording has heading 511");
    assert_eq!(data["layer"]["source"]["licence"], "CC BY 4.0");
}

#[test]
fn satellites_propagated_at_request_time() {
    let Some(body) = fixture("satelites/celestrak_gp_stations_2026-08-06.json") else { return };
    let up = serve(body.clone());
    let epoch = websearchd::clock::parse_rfc3339_ms("2026-08-06T12:00:00Z").unwrap();
    let (m, clock) = map(&["satelites"], &[("satelites", up.url("/gp.php"))], epoch);
    m.poll_slug("satelites");
    let data = m.layer_data("satelites").unwrap();
    let features = data["features"].as_array().unwrap();
    assert_eq!(features.len(), 22);
    assert!(features.iter().any(|f| f["properties"]["id"] == 100_057), "the 6-digit catalogue number");
    let iss = features.iter().find(|f| f["properties"]["id"] == 25_544).expect("the ISS");
    let alt = iss["properties"]["altitude_km"].as_f64().unwrap();
    let lat = iss["geometry"]["coordinates"][1].as_f64().unwrap();
    assert!((380.0..=440.0).contains(&alt), "ISS altitude {alt} km");
    assert!(lat.abs() <= 51.7, "ISS latitude {lat} within its inclination");
    assert!((7.5..=7.8).contains(&iss["properties"]["speed_km_s"].as_f64().unwrap()));
    // The ground track (issue 20: the page draws it): 48 minutes each side every 3 minutes, the middle point the
    // position itself, every point within the inclination (geodetic latitude: up to 0.2 degrees over), consecutive points about 3 x 7.66 km/s apart.
    let track = iss["properties"]["ground_track"].as_array().unwrap();
    assert_eq!(track.len(), 33);
    let lonlat = |p: &Value| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap());
    let here = lonlat(&iss["geometry"]["coordinates"]);
    let (mid_lon, mid_lat) = lonlat(&track[16]);
    assert!((mid_lon - here.0).abs() < 0.001 && (mid_lat - here.1).abs() < 0.001, "{:?} {here:?}", track[16]);
    for pair in track.windows(2) {
        let ((lon1, lat1), (lon2, lat2)) = (lonlat(&pair[0]), lonlat(&pair[1]));
        assert!(lat2.abs() <= 52.0, "{lat2}: geodetic latitude, a little over the 51.6 degree inclination");
        let (p1, p2, dl) = (lat1.to_radians(), lat2.to_radians(), (lon2 - lon1).to_radians());
        let km = 6_371.0 * (p1.sin() * p2.sin() + p1.cos() * p2.cos() * dl.cos()).clamp(-1.0, 1.0).acos();
        assert!((1_150.0..=1_400.0).contains(&km), "{km} km between {pair:?}");
    }
    // Within the same second the positions are the ones already propagated (each satellite costs ~33 SGP4 runs: a
    // layer is propagated at most once a second, however often it is asked); the ISS moves 3 km in 400 ms.
    clock.0.fetch_add(400, Relaxed);
    let again = m.layer_data("satelites").unwrap();
    assert_eq!(again["features"], data["features"], "propagated again within the second");
    // Ten minutes later the same elements give another position (propagated per request).
    clock.0.fetch_add(600_000, Relaxed);
    let later = m.layer_data("satelites").unwrap();
    let iss_later = later["features"].as_array().unwrap().iter().find(|f| f["properties"]["id"] == 25_544).unwrap();
    assert_ne!(iss_later["geometry"], iss["geometry"]);

    // CelesTrak answers 403: the layer keeps its data and does not ask again for six hours.
    let refused = Upstream::start(|_| Answer::json(403, "{}"));
    let (m, _) = map(&["satelites"], &[("satelites", refused.url("/gp.php"))], epoch);
    m.poll_slug("satelites");
    let layer = &m.layer_data("satelites").unwrap()["layer"];
    assert_eq!(layer["status"], "error");
    assert_eq!(layer["next_poll"], websearchd::clock::rfc3339(epoch + 6 * 3_600_000));
    m.poll_due();
    assert_eq!(refused.count("/gp.php"), 1, "not asked again before six hours");
}

/// A zip archive of one deflated file, as GDELT publishes its exports.
fn zip_of(name: &str, content: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(content).unwrap();
    let data = e.finish().unwrap();
    let mut z = b"PK\x03\x04".to_vec();
    z.extend_from_slice(&[20, 0, 0, 0, 8, 0, 0, 0, 0, 0]);
    z.extend_from_slice(&[0; 4]); // CRC (not checked)
    z.extend_from_slice(&(data.len() as u32).to_le_bytes());
    z.extend_from_slice(&(content.len() as u32).to_le_bytes());
    z.extend_from_slice(&(name.len() as u16).to_le_bytes());
    z.extend_from_slice(&0u16.to_le_bytes());
    z.extend_from_slice(name.as_bytes());
    z.extend_from_slice(&data);
    z
}

fn gdelt_row(id: u64, root: &str, lat: &str, lon: &str) -> String {
    let mut c = vec![String::new(); 61];
    c[0] = id.to_string();
    c[1] = "20261122".into();
    c[6] = "POLICE".into();
    c[26] = format!("{root}0");
    c[28] = root.into();
    c[30] = "-10.0".into();
    c[31] = "4".into();
    c[52] = "Somewhere, Country".into();
    c[53] = "XX".into();
    c[56] = lat.into();
    c[57] = lon.into();
    c[59] = "20261122120000".into();
    c[60] = "https://news.example/article".into();
    c.join("\t")
}

#[test]
fn conflicts_from_the_gdelt_manifest_and_export() {
    let tsv = [
        gdelt_row(1, "19", "48.5", "35.1"),
        gdelt_row(2, "04", "10.0", "10.0"),
        gdelt_row(3, "18", "", ""),
        gdelt_row(4, "20", "-1.5", "29.2"),
    ]
    .join("\n");
    let zip = zip_of("20261122120000.export.CSV", tsv.as_bytes());
    // One host serves the manifest (naming its own export, as GDELT's does) and the export.
    let gdelt = Upstream::start(move |seen| match seen.path() {
        "/gdeltv2/lastupdate.txt" => {
            let me = format!("http://{}", seen.header("host").unwrap_or_default());
            Answer::html(
                200,
                format!(
                    "150383 297a16b493de7cf6ca809a7cc31d0b93 {me}/gdeltv2/20261122120000.export.CSV.zip\n\
                     318084 bb27f78ba45f69a17ea6ed7755e9f8ff {me}/gdeltv2/20261122120000.mentions.CSV.zip\n"
                ),
            )
        }
        "/gdeltv2/20261122120000.export.CSV.zip" => Answer::json(200, zip.clone()),
        _ => Answer::json(404, ""),
    });
    let now = 1_795_348_800_000;
    let (m, _) = map(&["conflictos"], &[("conflictos", gdelt.url("/gdeltv2/lastupdate.txt"))], now);
    m.poll_slug("conflictos");
    let data = m.layer_data("conflictos").unwrap();
    assert_eq!(data["layer"]["status"], "ok", "{}", data["layer"]);
    let features = data["features"].as_array().unwrap();
    let ids: Vec<u64> = features.iter().map(|f| f["properties"]["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![1, 4], "conflict roots 18-20 with a position only");
    assert_eq!(features[0]["geometry"]["coordinates"], serde_json::json!([35.1, 48.5]));
    assert_eq!(features[0]["properties"]["added_ms"], now);
    assert_eq!(data["layer"]["source_time"], "2026-11-22T12:00:00Z");

    // A manifest that names an export on another host is not followed (the feed's URL is trusted, its content not).
    let elsewhere = gdelt.url("/gdeltv2/20261122120000.export.CSV.zip");
    let other = Upstream::start(move |_| Answer::html(200, format!("1 2 {elsewhere}\n")));
    let (m, _) = map(&["conflictos"], &[("conflictos", other.url("/gdeltv2/lastupdate.txt"))], now);
    m.poll_slug("conflictos");
    let layer = &m.layer_data("conflictos").unwrap()["layer"];
    assert!(layer["last_error"].as_str().unwrap().contains("another host"), "{layer}");
    // A manifest without an export line.
    let empty = Upstream::start(|_| Answer::html(200, "nothing here\n"));
    let (m, _) = map(&["conflictos"], &[("conflictos", empty.url("/lastupdate.txt"))], now);
    m.poll_slug("conflictos");
    assert!(m.layer_data("conflictos").unwrap()["layer"]["last_error"].as_str().unwrap().contains("no export"));
}

#[test]
fn seabed_depths() {
    let Some(body) = fixture("fondo-marino/opentopodata_gebco2020_13.03332_-31.70235.json") else { return };
    let up = serve(body);
    let (m, _) = map(&["fondo-marino"], &[("fondo-marino", up.url("/v1/gebco2020"))], 1_795_348_800_000);
    m.poll_slug("fondo-marino");
    let data = m.layer_data("fondo-marino").unwrap();
    let f = &data["features"][0];
    assert_eq!(f["properties"]["depth_m"], 5729.0);
    assert_eq!(f["geometry"]["coordinates"], serde_json::json!([-31.70235, 13.03332]));
    // The request asked for every configured point at once.
    let seen = up.seen();
    assert!(seen[0].param("locations").unwrap().contains("13.03332,-31.70235"));
    assert_eq!(data["layer"]["refresh_s"], 604_800);
}

#[test]
fn a_failing_feed_turns_stale_then_error_and_keeps_serving() {
    let Some(body) = fixture("terremotos/usgs_all_hour_2024-05-31.geojson") else { return };
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f2 = fail.clone();
    let up = Upstream::start(
        move |_| if f2.load(Relaxed) { Answer::json(500, "{}") } else { Answer::json(200, body.clone()) },
    );
    let t0 = 1_800_000_000_000;
    let (m, clock) = map(&["terremotos"], &[("terremotos", up.url("/feed"))], t0);
    m.poll_due();
    assert_eq!(m.layer_data("terremotos").unwrap()["layer"]["status"], "ok");
    fail.store(true, Relaxed);
    // Refresh 60 s: ok up to 3 minutes, stale up to 10 minutes, then error.
    for (after_s, status) in [(120, "ok"), (400, "stale"), (900, "error")] {
        clock.0.store(t0 + after_s * 1_000, Relaxed);
        m.poll_slug("terremotos");
        let data = m.layer_data("terremotos").unwrap();
        assert_eq!(data["layer"]["status"], status, "after {after_s} s: {}", data["layer"]);
        assert_eq!(data["features"].as_array().unwrap().len(), 8, "the last good data is still served");
        assert_eq!(data["layer"]["age_s"], after_s);
        assert!(data["layer"]["last_error"].as_str().unwrap().contains("500"));
    }
    let health = &m.layer_data("terremotos").unwrap()["layer"]["health"]["usgs"];
    assert_eq!((health["ok_count"].as_u64(), health["error_count"].as_u64()), (Some(1), Some(3)));
    // Backoff: after failures the next poll waits longer than the refresh interval.
    let next = m.layer_data("terremotos").unwrap()["layer"]["next_poll"].as_str().unwrap().to_owned();
    assert!(websearchd::clock::parse_rfc3339_ms(&next).unwrap() >= t0 + 900_000 + 480_000);
    // A feed that never answered: error, no data.
    let down = Upstream::start(|_| Answer::Garbage(b"\x00\x01 not http".to_vec()));
    let (m, _) = map(&["terremotos"], &[("terremotos", down.url("/feed"))], t0);
    m.poll_due();
    let data = m.layer_data("terremotos").unwrap();
    assert_eq!((data["layer"]["status"].as_str(), data["features"].as_array().unwrap().len()), (Some("error"), 0));
}

#[test]
fn disabled_layers_say_why_and_the_state_lists_every_layer() {
    let (m, _) = map(&["terremotos"], &[], 1_800_000_000_000);
    let state = m.state();
    let layers = state["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 7);
    let by = |slug: &str| layers.iter().find(|l| l["slug"] == slug).unwrap().clone();
    assert_eq!(by("terremotos")["status"], "pending");
    assert_eq!(by("vuelos")["status"], "disabled");
    assert!(by("vuelos")["reason"].as_str().unwrap().starts_with("not in WEBSEARCHD_MAP_LAYERS"));
    let ucdp = by("conflictos-ucdp");
    assert_eq!(ucdp["status"], "disabled");
    assert!(ucdp["reason"].as_str().unwrap().contains("WEBSEARCHD_MAP_UCDP_TOKEN"));
    assert_eq!(state["active_layers"], 1);
    assert!(!m.poll_slug("vuelos"), "a disabled layer is never polled");
    assert!(m.layer_data("nope").is_none());
}

#[test]
fn ucdp_with_a_token() {
    let Some(body) = fixture("conflictos/ucdp_gedevents_25.1_pagesize1_page0_UNCONFIRMED.json") else { return };
    let up = Upstream::start(move |seen| match seen.header("x-ucdp-access-token") {
        Some("secret-token") => Answer::json(200, body.clone()),
        _ => Answer::json(401, "{}"),
    });
    let clock = Arc::new(FixedClock(AtomicU64::new(1_800_000_000_000)));
    let mut s = Settings::defaults();
    s.layers = vec!["conflictos-ucdp".into()];
    s.urls = vec![("conflictos-ucdp".into(), up.url("/api/gedevents/25.1"))];
    s.ucdp_token = Some("secret-token".into());
    let m = MapService::new(s, clock);
    m.poll_slug("conflictos-ucdp");
    let data = m.layer_data("conflictos-ucdp").unwrap();
    assert_eq!(data["layer"]["status"], "ok", "{}", data["layer"]);
    assert_eq!(data["features"].as_array().unwrap().len(), 1);
}

#[test]
fn the_endpoints_of_the_running_server() {
    let Some(body) = fixture("terremotos/usgs_all_hour_2024-05-31.geojson") else { return };
    let up = serve(body);
    let server =
        Server::start(&[("WEBSEARCHD_MAP_LAYERS", "terremotos"), ("WEBSEARCHD_MAP_TERREMOTOS_URL", &up.url("/feed"))]);
    // The background poller fetches at start; the endpoint never waits for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut data = server.get("/map/api/capa/terremotos").json();
    while data["features"].as_array().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        data = server.get("/map/api/capa/terremotos").json();
    }
    assert_eq!(data["features"].as_array().unwrap().len(), 8);
    assert_eq!(data["layer"]["status"], "ok");
    // The layer's document is sent from its shared bytes, with the headers every answer has.
    let layer = server.get("/map/api/capa/terremotos");
    assert_eq!(layer.header("access-control-allow-origin"), Some("*"));
    assert_eq!(layer.header("cache-control"), Some("public, max-age=5"));
    assert_eq!(layer.header("content-type"), Some("application/json"));
    let head = server.request("HEAD", "/map/api/capa/terremotos", &[], b"");
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.header("content-length"), layer.header("content-length"));
    let state = server.get("/map/mapstate");
    assert_eq!(state.status, 200);
    assert_eq!(state.header("access-control-allow-origin"), Some("*"));
    // One Cache-Control: with the JSON answers' `no-store` beside it, no cache would keep the state.
    assert_eq!(state.headers_named("cache-control"), ["public, max-age=5"]);
    let s = state.json();
    assert_eq!(s["layers"].as_array().unwrap().len(), 7);
    assert_eq!(s["objects"], 8);
    let unknown = server.get("/map/api/capa/aviones");
    assert_eq!((unknown.status, unknown.error_code().as_str()), (404, "layer_unknown"));
    assert!(unknown.json()["error"]["valid_slugs"].as_array().unwrap().iter().any(|s| s == "buques"));
    assert_eq!(server.request("POST", "/map/mapstate", &[], b"").status, 405);
    // The layers in /metrics (issue 20: the dashboard's map panels).
    let metrics = server.get("/metrics").text();
    for line in [
        "websearchd_map_layer_status{layer=\"terremotos\",status=\"ok\"} 1\n",
        "websearchd_map_layer_status{layer=\"terremotos\",status=\"error\"} 0\n",
        "websearchd_map_layer_status{layer=\"vuelos\",status=\"disabled\"} 1\n",
        "websearchd_map_layer_objects{layer=\"terremotos\"} 8\n",
        "websearchd_map_feed_requests_total{layer=\"terremotos\",source=\"usgs\",outcome=\"ok\"} 1\n",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    assert!(metrics.contains("websearchd_map_layer_age_seconds{layer=\"terremotos\"} "));
    assert!(!metrics.contains("websearchd_map_layer_age_seconds{layer=\"vuelos\"}"), "no data, no age");
}

#[test]
fn sgp4_matches_the_published_verification_cases() {
    // Tolerances: 1 cm in position, 1 mm/s in velocity (the published figures carry 8 and 9 decimals).
    let text = String::from_utf8(own_fixture("sgp4/vallado_2006.txt")).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    let mut checked = 0;
    let mut i = 0;
    while i < lines.len() {
        let (l1, l2) = (lines[i], lines[i + 1]);
        let elements = sgp4::Elements::from_tle(None, l1.as_bytes(), l2.as_bytes()).unwrap();
        let sat = websearchd::map::orbit::Satellite::new(&elements).unwrap();
        i += 2;
        while i < lines.len() && !lines[i].starts_with("1 ") {
            let v: Vec<f64> = lines[i].split_whitespace().map(|x| x.parse().unwrap()).collect();
            let (r, vel) = sat.teme(v[0]).unwrap();
            let dr = ((r[0] - v[1]).powi(2) + (r[1] - v[2]).powi(2) + (r[2] - v[3]).powi(2)).sqrt();
            let dv = ((vel[0] - v[4]).powi(2) + (vel[1] - v[5]).powi(2) + (vel[2] - v[6]).powi(2)).sqrt();
            assert!(dr < 1e-5, "{} at {} min: {dr} km off", &l1[2..7], v[0]);
            assert!(dv < 1e-6, "{} at {} min: {dv} km/s off", &l1[2..7], v[0]);
            checked += 1;
            i += 1;
        }
    }
    assert_eq!(checked, 11);
}

/// Issue 16: the map polled six outside services by default. Outside polling is opt-in: without
/// `WEBSEARCHD_MAP_LAYERS` no layer is polled and the endpoints still answer; with it, the start names the hosts.
/// Every feed points at a closed loopback port, so that nothing leaves the machine even if the default were on.
#[test]
fn outside_polling_is_opt_in_and_the_hosts_are_logged() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}/feed");
    let feeds: Vec<(String, String)> = ["VUELOS", "VUELOS_FALLBACK", "BUQUES", "TERREMOTOS", "SATELITES", "CONFLICTOS"]
        .iter()
        .chain(["FONDO_MARINO", "UCDP"].iter())
        .map(|name| (format!("WEBSEARCHD_MAP_{name}_URL"), url.clone()))
        .collect();
    let server = Server::start_with(&common::pairs(&feeds), |c| c.env_remove("WEBSEARCHD_MAP_LAYERS"));
    let state = server.get("/map/mapstate").json();
    assert_eq!((state["status"].as_str(), state["active_layers"].as_u64()), (Some("off"), Some(0)), "{state}");
    assert_eq!(state["layers"].as_array().unwrap().len(), 7);
    let layer = server.get("/map/api/capa/buques");
    assert_eq!(layer.status, 200);
    let layer = layer.json();
    assert_eq!(
        (layer["type"].as_str(), layer["layer"]["status"].as_str()),
        (Some("FeatureCollection"), Some("disabled"))
    );
    assert!(layer["layer"]["reason"].as_str().unwrap().contains("WEBSEARCHD_MAP_LAYERS"), "{layer}");
    assert!(server.log_with("map: no layer polled").contains("map: no layer polled"), "{}", server.log_text());

    let mut all = feeds.clone();
    all.push(("WEBSEARCHD_MAP_LAYERS".into(), "all".into()));
    let server = Server::start(&common::pairs(&all));
    let line = format!("map: polling {closed} (WEBSEARCHD_MAP_LAYERS)");
    assert!(server.log_with(&line).contains(&line), "{}", server.log_text());
    assert_eq!(server.get("/map/mapstate").json()["active_layers"], 6, "all but UCDP, which needs a token");
}

/// A feed's body in each content coding the fetcher undoes (`fetch::body`): gzip and deflate are read as they
/// arrive, within the byte cap (the map once inflated gzip only, from the whole compressed body, and refused
/// deflate); a gzip body cut short, or one that is not gzip, is the layer's error, never a half-read layer.
#[test]
fn feeds_in_gzip_and_deflate_are_read_and_broken_ones_refused() {
    let quake = br#"{"type":"FeatureCollection","metadata":{"generated":1000},"features":[{"type":"Feature","id":"q1","properties":{"mag":2.5,"time":900},"geometry":{"type":"Point","coordinates":[10.5,45.25,7]}}]}"#;
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zlib.write_all(quake).unwrap();
    let gz = gzip(quake);
    let cases: [(&str, Vec<u8>, &str, &str); 4] = [
        ("gzip", gz.clone(), "ok", ""),
        ("deflate", zlib.finish().unwrap(), "ok", ""),
        ("gzip", gz[..gz.len() / 2].to_vec(), "error", "incomplete deflate stream"),
        ("gzip", quake.to_vec(), "error", "not gzip"),
    ];
    for (coding, body, status, why) in cases {
        let up = Upstream::start(move |_| {
            let answer = Box::new(Answer::json(200, body.clone()));
            Answer::WithHeaders(answer, vec![("Content-Encoding".into(), coding.into())])
        });
        let (m, _) = map(&["terremotos"], &[("terremotos", up.url("/feed"))], 2_000);
        m.poll_slug("terremotos");
        let layer = m.layer_data("terremotos").unwrap()["layer"].clone();
        assert_eq!(layer["status"], status, "{coding}: {layer}");
        if status == "ok" {
            assert_eq!(layer["count"], 1, "{coding}: {layer}");
        } else {
            assert!(layer["last_error"].as_str().unwrap().contains(why), "{coding}: {layer}");
        }
    }
}
