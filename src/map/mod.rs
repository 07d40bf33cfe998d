//! The public live world map: layers fed by keyless public feeds, polled in the background on each layer's own
//! schedule, and served from memory (`/map/mapstate`, `/map/api/capa/<slug>`). A request never waits on an upstream:
//! it gets the last good data and how old it is.
//!
//! Each layer has a status: `pending` (not polled yet), `ok` (data younger than twice its refresh interval plus a
//! minute), `stale` (older, up to ten intervals), `error` (older still, or no data and a failure), `disabled` (with
//! the reason: turned off by the operator, or its source needs a key that is not set). Errors back off (the interval
//! doubled per failure in a row, at most an hour); CelesTrak is not asked again for six hours after a non-200, as its
//! terms ask. Memory is bounded per layer (`objects_max`) and every body is capped after decompression.

pub mod feeds;
pub mod json;
pub mod orbit;
pub mod page;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::clock::{rfc3339, Clock};
use crate::fetch::{Client, Limits};
use crate::http::{Prepared, Response};

/// The layer endpoints' and the map state's `Cache-Control`.
pub const CACHE_CONTROL: &str = "public, max-age=5";

/// How long a layer's rendered document is served before a request renders it again (issue 33, finding 2): its
/// `generated_at`, its entry's age and status, and the satellites' positions are at most this old. A poll's outcome
/// makes the next request render it at once. Readers share the rendered bytes; a layer renders one at a time, and
/// readers that come meanwhile get the last one.
pub const DOCUMENT_FRESH_MS: u64 = 1_000;

/// Room for a layer document's members besides its features (its entry: names, URLs, health, the last error).
pub const DOCUMENT_ENTRY_BYTES_MAX: usize = 65_536;

/// A layer document's size at most: its features within `feeds::FEATURES_BYTES_MAX` and its entry.
pub const DOCUMENT_BYTES_MAX: usize = feeds::FEATURES_BYTES_MAX + DOCUMENT_ENTRY_BYTES_MAX;

/// A satellite's feature, rendered, about (its ground track is most of it): the room reserved per satellite.
const SATELLITE_FEATURE_BYTES: usize = 1_024;

/// Satellites kept at most, whatever `objects_max` says: as many as the layer's document has room for (each also
/// costs its SGP4 constants, and its propagation at every render).
pub const SATELLITES_MAX: usize = feeds::FEATURES_BYTES_MAX / SATELLITE_FEATURE_BYTES;

/// The layers, in the order they are listed.
/// Redirects a feed may answer with before its answer is taken as it is (each hop out of the feed's origin guarded).
const FEED_REDIRECTS_MAX: u32 = 3;
pub const SLUGS: [&str; 7] =
    ["vuelos", "buques", "terremotos", "satelites", "conflictos", "fondo-marino", "conflictos-ucdp"];

/// The layers active unless `WEBSEARCHD_MAP_LAYERS` says otherwise: none. Each layer polls an outside service on its
/// own schedule, which an operator opts in to by naming the layers (or `all`); the endpoints answer either way.
pub const DEFAULT_LAYERS: &str = "none";

/// Default feed URLs (every one configurable).
pub const URL_VUELOS: &str = "https://api.adsb.lol/v2/point/50.0/8.5/250";
pub const URL_VUELOS_FALLBACK: &str =
    "https://opensky-network.org/api/states/all?lamin=45.8&lomin=5.9&lamax=55.1&lomax=15.1";
pub const URL_BUQUES: &str = "https://meri.digitraffic.fi/api/ais/v1/locations";
pub const URL_TERREMOTOS: &str = "https://earthquake.usgs.gov/earthquakes/feed/v1.0/summary/all_day.geojson";
pub const URL_SATELITES: &str = "https://celestrak.org/NORAD/elements/gp.php?GROUP=stations&FORMAT=json";
pub const URL_CONFLICTOS: &str = "http://data.gdeltproject.org/gdeltv2/lastupdate.txt";
pub const URL_FONDO_MARINO: &str = "https://api.opentopodata.org/v1/gebco2020";
pub const URL_UCDP: &str = "https://ucdpapi.pcr.uu.se/api/gedevents/25.1?pagesize=1000";
/// Total time for one feed request, unless configured.
pub const TIMEOUT_MS_DEFAULT: u64 = 20_000;

/// Points one OpenTopoData request may ask for (its API's limit).
pub const SEABED_POINTS_MAX: usize = 100;

/// Sample points of the seabed layer: deep basins, trenches, shelves and straits.
pub const SEABED_POINTS: &str = "11.35,142.2;31.5,-41.0;-20.0,80.0;0.0,-150.0;60.5,2.5;36.0,14.5;13.03332,-31.70235;\
                                 -55.0,-65.0;19.8,-66.5;-7.0,106.0;54.0,7.0;26.0,-90.0";

/// Default refresh interval per layer, seconds.
fn default_refresh_s(slug: &str) -> u64 {
    match slug {
        "vuelos" | "buques" | "terremotos" => 60,
        "satelites" => 7_200,
        "conflictos" => 900,
        "conflictos-ucdp" => 86_400,
        _ => 604_800,
    }
}

/// Layers that may not be polled more often than this (seconds), whatever the configuration says.
fn min_refresh_s(slug: &str) -> u64 {
    match slug {
        // CelesTrak: at most hourly. OpenTopoData's public API: 1,000 calls a day.
        "satelites" => 3_600,
        "fondo-marino" => 3_600,
        _ => 15,
    }
}

/// How the map is configured (from `Config`, or built directly by tests).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Active layers.
    pub layers: Vec<String>,
    /// Per-slug feed URL overrides.
    pub urls: Vec<(String, String)>,
    pub vuelos_fallback_url: String,
    /// Per-slug refresh overrides (seconds).
    pub refresh_s: Vec<(String, u64)>,
    pub objects_max: usize,
    pub bytes_max: u64,
    pub timeout: Duration,
    pub digitraffic_user: String,
    pub seabed_points: Vec<(f64, f64)>,
    pub ucdp_token: Option<String>,
    /// What a feed's redirect out of its own origin may reach (the SSRF guard's allowlist and extra ports).
    pub redirect_policy: crate::fetch::guard::Policy,
}

impl Settings {
    pub fn defaults() -> Settings {
        Settings {
            layers: Vec::new(),
            urls: Vec::new(),
            vuelos_fallback_url: URL_VUELOS_FALLBACK.into(),
            refresh_s: Vec::new(),
            objects_max: 5_000,
            bytes_max: 16 * 1_048_576,
            timeout: Duration::from_millis(TIMEOUT_MS_DEFAULT),
            digitraffic_user: concat!("websearchd/", env!("CARGO_PKG_VERSION")).into(),
            seabed_points: parse_points(SEABED_POINTS).unwrap_or_default(),
            ucdp_token: None,
            redirect_policy: crate::fetch::guard::Policy::default(),
        }
    }

    fn url(&self, slug: &str, default: &str) -> String {
        self.urls.iter().find(|(s, _)| s == slug).map_or_else(|| default.to_owned(), |(_, u)| u.clone())
    }
}

/// `lat,lon;lat,lon;...`
pub fn parse_points(text: &str) -> Option<Vec<(f64, f64)>> {
    text.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (lat, lon) = p.split_once(',')?;
            let (lat, lon) = (lat.trim().parse::<f64>().ok()?, lon.trim().parse::<f64>().ok()?);
            ((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lon)).then_some((lat, lon))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flights,
    Ships,
    Earthquakes,
    Satellites,
    Conflicts,
    Seabed,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Flights => "flights",
            Kind::Ships => "ships",
            Kind::Earthquakes => "earthquakes",
            Kind::Satellites => "satellites",
            Kind::Conflicts => "conflicts",
            Kind::Seabed => "seabed",
        }
    }

    /// The units of the normalised properties.
    fn units(self) -> Value {
        match self {
            Kind::Flights => {
                json!({"altitude_m": "metres (barometric)", "speed_kmh": "km/h over ground", "track_deg": "degrees from true north", "seen_s": "seconds since the last position"})
            }
            Kind::Ships => {
                json!({"speed_kn": "knots over ground (null: not available)", "course_deg": "degrees (null: not available)", "heading_deg": "degrees (null: not available)", "updated_ms": "Unix milliseconds"})
            }
            Kind::Earthquakes => {
                json!({"magnitude": "magnitude (magnitude_type says which scale)", "depth_km": "km below the surface", "time_ms": "Unix milliseconds"})
            }
            Kind::Satellites => {
                json!({"altitude_km": "km above the WGS 84 ellipsoid", "speed_km_s": "km/s (inertial)", "elements_age_days": "days from the elements' epoch to the position's time", "ground_track": "[lon, lat] every 3 minutes, from 48 minutes before the position's time to 48 after"})
            }
            Kind::Conflicts => {
                json!({"goldstein": "Goldstein scale, -10 to 10", "added_ms": "Unix milliseconds", "fatalities_best": "UCDP best estimate"})
            }
            Kind::Seabed => {
                json!({"elevation_m": "metres relative to sea level", "depth_m": "metres below sea level (0 on land)"})
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Source {
    id: &'static str,
    url: String,
    licence: &'static str,
    attribution: &'static str,
}

impl Source {
    fn json(&self) -> Value {
        json!({ "id": self.id, "url": self.url, "licence": self.licence, "attribution": self.attribution })
    }
}

struct Spec {
    slug: &'static str,
    kind: Kind,
    name: &'static str,
    source: Source,
    fallback: Option<Source>,
    refresh_s: u64,
    disabled: Option<String>,
}

enum Data {
    /// Features as a poll kept them, until the layer's document holds them.
    Features(feeds::Features),
    /// Features held by the layer's document only (`Document::features`), and their count: a layer keeps its
    /// features once, in the bytes it serves.
    Rendered(usize),
    Satellites(Vec<orbit::Satellite>),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::Features(f) => f.count(),
            Data::Rendered(n) => *n,
            Data::Satellites(s) => s.len(),
        }
    }
}

#[derive(Default)]
struct State {
    data: Option<Arc<Data>>,
    source_time_ms: Option<u64>,
    /// When the data now held was fetched.
    updated_at_ms: Option<u64>,
    dropped: usize,
    next_due_ms: u64,
    failures_in_row: u32,
    /// Which source gave the data held (the fallback's id when it did).
    served_by: Option<&'static str>,
    health: Vec<(&'static str, Health)>,
    last_error: Option<String>,
    /// When the fallback source was last asked (it has a quota of its own).
    fallback_asked_ms: Option<u64>,
    /// The layer's document last rendered (`layer_document`); a poll's outcome makes it out of date. Once a layer's
    /// data is `Data::Rendered`, there is always one.
    document: Option<Document>,
    /// Counts polls' outcomes: a document rendered from the state before one is not kept, and a kept one is served
    /// while its generation is this.
    generation: u64,
}

/// A layer's document, rendered once and shared by every reader until `DOCUMENT_FRESH_MS` have passed.
struct Document {
    at_ms: u64,
    reply: Arc<Prepared>,
    /// Where the features' bytes are in its body (the members of its `features` list).
    features: std::ops::Range<usize>,
    /// The layer's `generation` it was rendered from: after a poll's outcome it is rendered again at the next
    /// request.
    generation: u64,
}

/// One source's health counters.
#[derive(Default, Clone)]
struct Health {
    ok_count: u64,
    error_count: u64,
    last_ok_ms: Option<u64>,
    last_error_ms: Option<u64>,
    last_error: Option<String>,
    last_duration_ms: Option<u64>,
}

struct Layer {
    spec: Spec,
    state: Mutex<State>,
    /// Held while the layer's document is rendered (one render at a time: satellites cost ~33 SGP4 runs each).
    rendering: Mutex<()>,
}

pub struct MapService {
    layers: Vec<Layer>,
    client: Client,
    clock: Arc<dyn Clock>,
    settings: Settings,
    /// Adds the server's own headers to a layer's answer before it is rendered (`answering_with`).
    finish: fn(Response) -> Response,
}

/// What a poll produced.
struct Outcome {
    data: Data,
    source_time_ms: Option<u64>,
    dropped: usize,
}

const BACKOFF_MAX_S: u64 = 3_600;
/// The least time between two calls to a fallback source.
const FALLBACK_INTERVAL_S: u64 = 900;
const CELESTRAK_HALT_S: u64 = 6 * 3_600;

impl MapService {
    pub fn new(settings: Settings, clock: Arc<dyn Clock>) -> MapService {
        let limits = Limits::within(settings.timeout, settings.bytes_max, FEED_REDIRECTS_MAX);
        let client = Client::new(limits, settings.redirect_policy.clone()).decoding();
        let s = &settings;
        let src = |id, slug: &str, default: &str, licence, attribution| Source {
            id,
            url: s.url(slug, default),
            licence,
            attribution,
        };
        let specs = vec![
            (
                "vuelos",
                Kind::Flights,
                "Flights (ADS-B)",
                src("adsb.lol", "vuelos", URL_VUELOS, "ODbL 1.0", "adsb.lol contributors"),
                Some(Source {
                    id: "opensky",
                    url: s.vuelos_fallback_url.clone(),
                    licence: "OpenSky Network terms (non-commercial)",
                    attribution: "The OpenSky Network, https://opensky-network.org",
                }),
            ),
            (
                "buques",
                Kind::Ships,
                "Ships (AIS, Baltic)",
                src("digitraffic", "buques", URL_BUQUES, "CC BY 4.0", "Fintraffic / digitraffic.fi"),
                None,
            ),
            (
                "terremotos",
                Kind::Earthquakes,
                "Earthquakes (last day)",
                src("usgs", "terremotos", URL_TERREMOTOS, "Public domain (U.S. Government)", "U.S. Geological Survey"),
                None,
            ),
            (
                "satelites",
                Kind::Satellites,
                "Satellites (space stations, SGP4)",
                src("celestrak", "satelites", URL_SATELITES, "CelesTrak terms of use", "CelesTrak (T.S. Kelso)"),
                None,
            ),
            (
                "conflictos",
                Kind::Conflicts,
                "Conflict events (GDELT, last 15 minutes)",
                src(
                    "gdelt",
                    "conflictos",
                    URL_CONFLICTOS,
                    "GDELT terms: free for all use with citation",
                    "The GDELT Project",
                ),
                None,
            ),
            (
                "fondo-marino",
                Kind::Seabed,
                "Seabed depth (GEBCO 2020 samples)",
                src(
                    "opentopodata",
                    "fondo-marino",
                    URL_FONDO_MARINO,
                    "GEBCO: public domain; OpenTopoData API terms",
                    "GEBCO Compilation Group (2020), via OpenTopoData",
                ),
                None,
            ),
            (
                "conflictos-ucdp",
                Kind::Conflicts,
                "Conflict events (UCDP GED)",
                src("ucdp", "conflictos-ucdp", URL_UCDP, "CC BY 4.0", "Uppsala Conflict Data Program"),
                None,
            ),
        ];
        let layers = specs
            .into_iter()
            .map(|(slug, kind, name, source, fallback)| {
                let configured = s.refresh_s.iter().find(|(x, _)| x == slug).map(|(_, r)| *r);
                let refresh_s = configured.unwrap_or_else(|| default_refresh_s(slug)).max(min_refresh_s(slug));
                let disabled = if slug == "conflictos-ucdp" && s.ucdp_token.is_none() {
                    Some("the UCDP API needs an access token: set WEBSEARCHD_MAP_UCDP_TOKEN".to_owned())
                } else if !s.layers.iter().any(|l| l == slug) {
                    Some("not in WEBSEARCHD_MAP_LAYERS (outside feeds are polled only when named there)".to_owned())
                } else {
                    None
                };
                let mut state = State::default();
                state.health.push((source.id, Health::default()));
                if let Some(f) = &fallback {
                    state.health.push((f.id, Health::default()));
                }
                Layer {
                    spec: Spec { slug, kind, name, source, fallback, refresh_s, disabled },
                    state: Mutex::new(state),
                    rendering: Mutex::new(()),
                }
            })
            .collect();
        MapService { layers, client, clock, settings, finish: |response| response }
    }

    /// The layer answers get the headers `finish` adds (the server's CORS headers) when they are rendered.
    pub fn answering_with(mut self, finish: fn(Response) -> Response) -> MapService {
        self.finish = finish;
        self
    }

    /// Whether any layer is active (otherwise no poller is started).
    pub fn any_active(&self) -> bool {
        self.layers.iter().any(|l| l.spec.disabled.is_none())
    }

    /// Starts the background poller: one thread, for the life of the process.
    pub fn spawn_poller(self: &Arc<Self>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
        let map = self.clone();
        std::thread::Builder::new().name("map-poller".into()).spawn(move || {
            while !stop.load(Relaxed) {
                map.poll_due();
                std::thread::sleep(Duration::from_secs(1));
            }
        })?;
        Ok(())
    }

    /// Polls every active layer whose time has come (one after the other).
    pub fn poll_due(&self) {
        for layer in &self.layers {
            if layer.spec.disabled.is_some() {
                continue;
            }
            let due = layer.lock().next_due_ms;
            if self.clock.now_unix_ms() >= due {
                self.poll(layer);
            }
        }
    }

    /// Polls one layer now, whatever its schedule (tests, and `poll_due`).
    pub fn poll_slug(&self, slug: &str) -> bool {
        match self.layers.iter().find(|l| l.spec.slug == slug && l.spec.disabled.is_none()) {
            Some(layer) => {
                self.poll(layer);
                true
            }
            None => false,
        }
    }

    fn poll(&self, layer: &Layer) {
        let spec = &layer.spec;
        let mut outcome = self.fetch_source(spec, &spec.source);
        let mut served_by = spec.source.id;
        self.note_health(layer, spec.source.id, &outcome);
        if let (Err(_), Some(fallback)) = (&outcome, &spec.fallback) {
            // OpenSky's anonymous quota (about 400 credits a day, 3 for this box): at most every 15 minutes.
            let now = self.clock.now_unix_ms();
            let last = layer.lock().fallback_asked_ms;
            if last.is_none_or(|t| now.saturating_sub(t) >= FALLBACK_INTERVAL_S * 1_000) {
                layer.lock().fallback_asked_ms = Some(now);
                outcome = self.fetch_source(spec, fallback);
                served_by = fallback.id;
                self.note_health(layer, fallback.id, &outcome);
            }
        }
        let now = self.clock.now_unix_ms();
        let mut st = layer.lock();
        st.generation = st.generation.wrapping_add(1);
        match outcome {
            Ok((o, _)) => {
                st.data = Some(Arc::new(o.data));
                st.source_time_ms = o.source_time_ms;
                st.updated_at_ms = Some(now);
                st.dropped = o.dropped;
                st.failures_in_row = 0;
                st.last_error = None;
                st.served_by = Some(served_by);
                st.next_due_ms = now + spec.refresh_s * 1_000;
            }
            Err((why, halt)) => {
                st.failures_in_row = st.failures_in_row.saturating_add(1);
                log::warn!("map layer {}: {why}", spec.slug);
                st.last_error = Some(why);
                let backoff = spec.refresh_s.saturating_mul(1 << st.failures_in_row.min(12)).min(BACKOFF_MAX_S);
                let wait = if halt { CELESTRAK_HALT_S } else { backoff };
                st.next_due_ms = now + wait * 1_000;
            }
        }
    }

    fn note_health(&self, layer: &Layer, id: &str, outcome: &Result<(Outcome, u64), (String, bool)>) {
        let now = self.clock.now_unix_ms();
        let mut st = layer.lock();
        let Some((_, h)) = st.health.iter_mut().find(|(i, _)| *i == id) else { return };
        match outcome {
            Ok((_, ms)) => {
                h.ok_count += 1;
                h.last_ok_ms = Some(now);
                h.last_duration_ms = Some(*ms);
            }
            Err((why, _)) => {
                h.error_count += 1;
                h.last_error_ms = Some(now);
                h.last_error = Some(why.clone());
            }
        }
    }

    /// Fetches and parses one source; `Err((why, halt))`, `halt` when the source's terms ask us to stop for a while.
    fn fetch_source(&self, spec: &Spec, source: &Source) -> Result<(Outcome, u64), (String, bool)> {
        let started = Instant::now();
        let max = self.settings.objects_max;
        let result = match (spec.kind, source.id) {
            (Kind::Satellites, _) => {
                let body = self.get(&source.url, &[]).map_err(|(why, status)| {
                    // CelesTrak firewalls clients that keep asking after an error.
                    (why, status.is_some())
                })?;
                satellites(&body, max).map_err(|e| (e, false))?
            }
            (Kind::Conflicts, "gdelt") => self.gdelt(&source.url, max).map_err(|e| (e, false))?,
            (Kind::Seabed, _) => {
                let locations: Vec<String> = self
                    .settings
                    .seabed_points
                    .iter()
                    .take(SEABED_POINTS_MAX)
                    .map(|(lat, lon)| format!("{lat},{lon}"))
                    .collect();
                let url = format!("{}?locations={}", source.url.trim_end_matches('/'), locations.join("|"));
                let body = self.get(&url, &[]).map_err(|(why, _)| (why, false))?;
                wrap(feeds::opentopodata(&body, max)).map_err(|e| (e, false))?
            }
            _ => {
                let token = self.settings.ucdp_token.clone().unwrap_or_default();
                let headers: Vec<(&str, &str)> = match source.id {
                    "digitraffic" => vec![("Digitraffic-User", self.settings.digitraffic_user.as_str())],
                    "ucdp" => vec![("x-ucdp-access-token", token.as_str())],
                    _ => Vec::new(),
                };
                let body = self.get(&source.url, &headers).map_err(|(why, _)| (why, false))?;
                let parsed = match source.id {
                    "adsb.lol" => feeds::adsb_v2(&body, max),
                    "opensky" => feeds::opensky(&body, max),
                    "digitraffic" => feeds::digitraffic(&body, max),
                    "usgs" => feeds::usgs(&body, max),
                    "ucdp" => feeds::ucdp(&body, max),
                    other => Err(format!("no parser for {other}")),
                };
                wrap(parsed).map_err(|e| (e, false))?
            }
        };
        Ok((result, started.elapsed().as_millis() as u64))
    }

    /// A GET asking for gzip; the body inflated as it is read, within the byte cap (`Client::decoding`).
    /// `Err((why, Some(status)))` for a non-200.
    fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Vec<u8>, (String, Option<u16>)> {
        let mut all = vec![("Accept", "application/json, */*")];
        all.extend_from_slice(headers);
        let fetched = self.client.get(url, &all).map_err(|e| (format!("{}: {e}", e.code()), None))?;
        if fetched.status != 200 {
            return Err((format!("HTTP {} from {url}", fetched.status), Some(fetched.status)));
        }
        Ok(fetched.body)
    }

    /// GDELT: the manifest names the latest export; it is fetched only from the manifest's own host.
    fn gdelt(&self, manifest_url: &str, max: usize) -> Result<Outcome, String> {
        let manifest = self.get(manifest_url, &[]).map_err(|(why, _)| why)?;
        let export = feeds::gdelt_manifest(&manifest)?;
        let origin = crate::urls::serialized_origin;
        if origin(&export).is_none() || origin(&export) != origin(manifest_url) {
            return Err(format!("the manifest points to another host ({export}); not followed"));
        }
        let zip = self.get(&export, &[]).map_err(|(why, _)| why)?;
        let tsv = feeds::unzip_first(&zip, self.settings.bytes_max)?;
        wrap(feeds::gdelt_events(&tsv, max))
    }

    fn layer(&self, slug: &str) -> Option<&Layer> {
        self.layers.iter().find(|l| l.spec.slug == slug)
    }

    /// One layer's entry (as in the map state).
    fn entry(&self, layer: &Layer, now: u64) -> Value {
        let spec = &layer.spec;
        let st = layer.lock();
        let refresh_ms = spec.refresh_s * 1_000;
        let (status, reason) = match (&spec.disabled, st.updated_at_ms, &st.data) {
            (Some(why), _, _) => ("disabled", Some(why.clone())),
            (None, Some(at), Some(_)) => {
                let age = now.saturating_sub(at);
                if age <= 2 * refresh_ms + 60_000 {
                    ("ok", None)
                } else if age <= 10 * refresh_ms {
                    ("stale", None)
                } else {
                    ("error", None)
                }
            }
            (None, _, _) if st.last_error.is_some() => ("error", None),
            _ => ("pending", None),
        };
        let health: serde_json::Map<String, Value> = st
            .health
            .iter()
            .map(|(id, h)| {
                (
                    (*id).to_owned(),
                    json!({
                        "ok_count": h.ok_count,
                        "error_count": h.error_count,
                        "last_ok": h.last_ok_ms.map(rfc3339),
                        "last_error_at": h.last_error_ms.map(rfc3339),
                        "last_error": h.last_error,
                        "last_duration_ms": h.last_duration_ms,
                    }),
                )
            })
            .collect();
        json!({
            "slug": spec.slug,
            "kind": spec.kind.name(),
            "name": spec.name,
            "active": spec.disabled.is_none(),
            "status": status,
            "reason": reason,
            "count": st.data.as_ref().map_or(0, |d| d.len()),
            "dropped": st.dropped,
            "updated_at": st.updated_at_ms.map(rfc3339),
            "age_s": st.updated_at_ms.map(|at| now.saturating_sub(at) / 1_000),
            "source_time": st.source_time_ms.map(rfc3339),
            "refresh_s": spec.refresh_s,
            "next_poll": (spec.disabled.is_none() && st.next_due_ms > 0).then(|| rfc3339(st.next_due_ms)),
            "source": spec.source.json(),
            "fallback": spec.fallback.as_ref().map(Source::json),
            "served_by": st.served_by,
            "last_error": st.last_error,
            "units": spec.kind.units(),
            "health": health,
        })
    }

    /// `/map/mapstate`.
    pub fn state(&self) -> Value {
        let now = self.clock.now_unix_ms();
        let layers: Vec<Value> = self.layers.iter().map(|l| self.entry(l, now)).collect();
        let active: Vec<&Value> = layers.iter().filter(|l| field(l, "active") == true).collect();
        let ok = active.iter().filter(|l| field(l, "status") == "ok").count();
        let overall = if active.is_empty() {
            "off"
        } else if ok == active.len() {
            "ok"
        } else if ok > 0 {
            "degraded"
        } else {
            "down"
        };
        let objects: u64 = layers.iter().filter_map(|l| field(l, "count").as_u64()).sum();
        json!({
            "generated_at": rfc3339(now),
            "status": overall,
            "active_layers": active.len(),
            "objects": objects,
            "layers": layers,
        })
    }

    /// `/map/api/capa/<slug>`: the layer's data as a FeatureCollection with its entry, rendered at most once per
    /// `DOCUMENT_FRESH_MS` and on each poll's outcome, and shared by every reader (a request copies nothing of it);
    /// `None` for an unknown slug.
    pub fn layer_document(&self, slug: &str) -> Option<Arc<Prepared>> {
        let layer = self.layer(slug)?;
        if let Some(reply) = layer.fresh_document(self.clock.now_unix_ms()) {
            return Some(reply);
        }
        let _rendering = match layer.rendering.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                // Another reader renders it: the last document meanwhile, or wait for the first one.
                if let Some(d) = &layer.lock().document {
                    return Some(d.reply.clone());
                }
                layer.rendering.lock().unwrap_or_else(PoisonError::into_inner)
            }
        };
        let now = self.clock.now_unix_ms();
        if let Some(reply) = layer.fresh_document(now) {
            return Some(reply);
        }
        let (data, last, generation) = {
            let st = layer.lock();
            let last = st.document.as_ref().map(|d| (d.reply.clone(), d.features.clone()));
            (st.data.clone(), last, st.generation)
        };
        // Features already rendered are taken from the last document.
        let rendered = last.as_ref().and_then(|(reply, range)| reply.body().get(range.clone())).unwrap_or_default();
        let (body, features) = self.render(layer, data.as_deref(), rendered, now);
        drop(last);
        let response = Response::new(200, "application/json", body).header("Cache-Control", CACHE_CONTROL);
        let reply = Arc::new(Prepared::from((self.finish)(response)));
        let mut st = layer.lock();
        if st.generation == generation {
            st.document = Some(Document { at_ms: now, reply: reply.clone(), features, generation });
            if let Some(Data::Features(f)) = st.data.as_deref() {
                st.data = Some(Arc::new(Data::Rendered(f.count())));
            }
        }
        Some(reply)
    }

    /// The layer's document as a value (tests and tools; the server sends `layer_document`'s bytes).
    pub fn layer_data(&self, slug: &str) -> Option<Value> {
        serde_json::from_slice(self.layer_document(slug)?.body()).ok()
    }

    /// A layer's document: `{"type":"FeatureCollection","generated_at":..,"layer":{entry},"features":[..]}`, its
    /// features copied from their rendered bytes (a poll's, or `rendered`, the last document's), or for satellites
    /// propagated to `now` and rendered straight into it (within `feeds::FEATURES_BYTES_MAX`: at most
    /// `DOCUMENT_BYTES_MAX` in all). Gives the body and where its features are in it.
    fn render(
        &self,
        layer: &Layer,
        data: Option<&Data>,
        rendered: &[u8],
        now: u64,
    ) -> (Vec<u8>, std::ops::Range<usize>) {
        let features_bytes = match data {
            None => 0,
            Some(Data::Features(f)) => f.json().len(),
            Some(Data::Rendered(_)) => rendered.len(),
            Some(Data::Satellites(s)) => s.len().saturating_mul(SATELLITE_FEATURE_BYTES).min(feeds::FEATURES_BYTES_MAX),
        };
        let mut body = Vec::with_capacity(DOCUMENT_ENTRY_BYTES_MAX / 8 + features_bytes);
        body.extend_from_slice(br#"{"type":"FeatureCollection","generated_at":""#);
        body.extend_from_slice(rfc3339(now).as_bytes());
        body.extend_from_slice(br#"","layer":"#);
        let _ = serde_json::to_writer(&mut body, &self.entry(layer, now));
        if body.len() > DOCUMENT_ENTRY_BYTES_MAX {
            log::warn!("map layer {}: its entry takes {} bytes", layer.spec.slug, body.len());
        }
        body.extend_from_slice(br#","features":["#);
        let start = body.len();
        match data {
            None => {}
            Some(Data::Features(f)) => body.extend_from_slice(f.json()),
            Some(Data::Rendered(_)) => body.extend_from_slice(rendered),
            Some(Data::Satellites(sats)) => {
                let mut features = feeds::Features::within(body);
                for f in sats.iter().filter_map(|sat| sat.feature_at(now)) {
                    if !features.push(&f, usize::MAX) {
                        break;
                    }
                }
                body = features.into_bytes();
            }
        }
        let features = start..body.len();
        body.extend_from_slice(b"]}\n");
        (body, features)
    }

    /// A summary for `/core/state`.
    pub fn summary(&self) -> Value {
        let now = self.clock.now_unix_ms();
        Value::Array(
            self.layers
                .iter()
                .map(|l| {
                    let e = self.entry(l, now);
                    json!({ "slug": field(&e, "slug"), "status": field(&e, "status"), "count": field(&e, "count"), "updated_at": field(&e, "updated_at"), "last_error": field(&e, "last_error") })
                })
                .collect(),
        )
    }

    /// Per active layer and source: (layer, source id, url, (ok count, error count, last call ms)), for the mesh graph.
    #[allow(clippy::type_complexity)]
    pub fn feed_health(&self) -> Vec<(&'static str, &'static str, String, (u64, u64, Option<u64>))> {
        let mut out = Vec::new();
        for l in self.layers.iter().filter(|l| l.spec.disabled.is_none()) {
            let st = l.lock();
            for (id, h) in &st.health {
                let url = if l.spec.source.id == *id {
                    l.spec.source.url.clone()
                } else {
                    l.spec.fallback.as_ref().map(|f| f.url.clone()).unwrap_or_default()
                };
                let last = h.last_ok_ms.max(h.last_error_ms);
                out.push((l.spec.slug, *id, url, (h.ok_count, h.error_count, last)));
            }
        }
        out
    }

    /// Prometheus text: each layer's status (one series per status, 1 for the current one), objects, age, and its
    /// feeds' outcomes.
    pub fn metrics(&self) -> String {
        use std::fmt::Write as _;
        const STATUSES: [&str; 5] = ["pending", "ok", "stale", "error", "disabled"];
        let now = self.clock.now_unix_ms();
        let entries: Vec<Value> = self.layers.iter().map(|l| self.entry(l, now)).collect();
        let mut out = String::new();
        let name = "websearchd_map_layer_status";
        crate::metrics::family(&mut out, name, "gauge", "1 for the map layer's current status, 0 for the others.");
        for e in &entries {
            for status in STATUSES {
                let on = u8::from(field(e, "status") == status);
                let _ = writeln!(
                    out,
                    "{name}{{layer=\"{}\",status=\"{status}\"}} {on}",
                    field(e, "slug").as_str().unwrap_or("")
                );
            }
        }
        let name = "websearchd_map_layer_objects";
        crate::metrics::family(&mut out, name, "gauge", "Objects the map layer serves.");
        for e in &entries {
            let _ =
                writeln!(out, "{name}{{layer=\"{}\"}} {}", field(e, "slug").as_str().unwrap_or(""), field(e, "count"));
        }
        let name = "websearchd_map_layer_age_seconds";
        crate::metrics::family(
            &mut out,
            name,
            "gauge",
            "Seconds since the map layer's data was fetched (layers with data).",
        );
        for e in entries.iter().filter(|e| field(e, "age_s").is_u64()) {
            let _ =
                writeln!(out, "{name}{{layer=\"{}\"}} {}", field(e, "slug").as_str().unwrap_or(""), field(e, "age_s"));
        }
        let name = "websearchd_map_feed_requests_total";
        crate::metrics::family(&mut out, name, "counter", "Polls of the map's feeds, by layer, source and outcome.");
        for (layer, source, _, (ok, error, _)) in self.feed_health() {
            for (outcome, n) in [("ok", ok), ("error", error)] {
                let _ = writeln!(out, "{name}{{layer=\"{layer}\",source=\"{source}\",outcome=\"{outcome}\"}} {n}");
            }
        }
        out
    }

    /// The layers this instance polls, for the plain-text guide: slug, and name, source, licence and refresh (a layer
    /// that is off is in the map state only, with the reason).
    pub fn catalogue(&self) -> Vec<(&'static str, String)> {
        self.layers
            .iter()
            .filter(|l| l.spec.disabled.is_none())
            .map(|l| {
                let s = &l.spec;
                let line = format!(
                    "{} ({}); source {} ({}), licence {}; refreshed every {} s",
                    s.name,
                    s.kind.name(),
                    s.source.id,
                    s.source.attribution,
                    s.source.licence,
                    s.refresh_s
                );
                (s.slug, line)
            })
            .collect()
    }

    pub fn slugs(&self) -> Vec<&'static str> {
        self.layers.iter().map(|l| l.spec.slug).collect()
    }
}

impl Layer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The document rendered less than `DOCUMENT_FRESH_MS` before `now`.
    fn fresh_document(&self, now: u64) -> Option<Arc<Prepared>> {
        let st = self.lock();
        let d = st.document.as_ref().filter(|d| d.generation == st.generation)?;
        (now >= d.at_ms && now - d.at_ms < DOCUMENT_FRESH_MS).then(|| d.reply.clone())
    }
}

fn wrap(parsed: feeds::Result) -> Result<Outcome, String> {
    let p = parsed?;
    Ok(Outcome { data: Data::Features(p.features), source_time_ms: p.source_time_ms, dropped: p.dropped })
}

/// CelesTrak OMM JSON: satellites ready to propagate (an object that does not parse is skipped and counted). Read
/// one object at a time (`json::Reader`): what is kept is the satellites, at most `max`.
fn satellites(bytes: &[u8], max: usize) -> Result<Outcome, String> {
    // No more than the layer's document has room for (a satellite's feature is about `SATELLITE_FEATURE_BYTES`).
    let max = max.min(SATELLITES_MAX);
    let mut r = json::Reader::new(bytes);
    if !r.at_array() {
        return Err("not a list of OMM objects".into());
    }
    let (mut sats, mut dropped, mut newest) = (Vec::new(), 0, 0);
    r.items(|r| {
        if sats.len() >= max {
            dropped += 1;
            return r.skip();
        }
        match orbit::elements_from_omm(&r.value()?).and_then(|e| orbit::Satellite::new(&e)) {
            Ok(s) => {
                newest = newest.max(s.epoch_ms);
                sats.push(s);
            }
            Err(_) => dropped += 1,
        }
        Ok(())
    })?;
    r.end()?;
    if sats.is_empty() && dropped > 0 {
        return Err("no usable orbital elements".into());
    }
    Ok(Outcome { data: Data::Satellites(sats), source_time_ms: (newest > 0).then_some(newest), dropped })
}

fn field(v: &Value, key: &str) -> Value {
    v.get(key).cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer keeps its features once: in its document, once rendered (the poll's bytes are let go), and a render
    /// after a failed poll takes them from the last document.
    #[test]
    fn features_are_kept_once_in_the_document() {
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::FixedClock(1_800_000_000_000));
        let mut settings = Settings::defaults();
        settings.layers = vec!["terremotos".into()];
        let map = MapService::new(settings, clock);
        let mut features = feeds::Features::default();
        for i in 0..3 {
            features.push(&json!({ "type": "Feature", "properties": { "id": i } }), 10);
        }
        let layer = map.layer("terremotos").unwrap();
        layer.lock().data = Some(Arc::new(Data::Features(features)));
        let first = map.layer_document("terremotos").unwrap();
        assert!(matches!(layer.lock().data.as_deref(), Some(Data::Rendered(3))));
        // A failed poll's outcome: the document is out of date, the features are its own.
        layer.lock().generation += 1;
        let again = map.layer_document("terremotos").unwrap();
        assert!(!Arc::ptr_eq(&first, &again));
        let v: Value = serde_json::from_slice(again.body()).unwrap();
        assert_eq!(v["features"][2]["properties"]["id"], 2, "{v}");
        assert_eq!(v["layer"]["count"], 3);
    }

    #[test]
    fn satellites_are_kept_to_what_the_document_holds() {
        let one = r#"{"OBJECT_NAME":"S","EPOCH":"2026-08-06T01:17:37.872384","MEAN_MOTION":15.49359774,
            "ECCENTRICITY":0.00072161,"INCLINATION":51.6321,"RA_OF_ASC_NODE":53.3065,"ARG_OF_PERICENTER":17.1615,
            "MEAN_ANOMALY":342.9616,"NORAD_CAT_ID":25544,"BSTAR":7.969016e-5}"#;
        let body = format!("[{}]", vec![one; SATELLITES_MAX + 5].join(","));
        let outcome = satellites(body.as_bytes(), 100_000).unwrap();
        assert_eq!((outcome.data.len(), outcome.dropped), (SATELLITES_MAX, 5));
    }
}
