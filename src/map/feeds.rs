//! The feed parsers: bytes of one upstream answer in, GeoJSON features with properties normalised per layer kind
//! out (coordinates `[lon, lat]`, units in the property names), plus the source's own time when it says one. Pure,
//! no I/O, never panics on input. The JSON is read with `json::Reader`, one object at a time: what a parser keeps is
//! at most `max` features in at most `FEATURES_BYTES_MAX` bytes of rendered JSON, whatever the body's size and shape
//! (issue 33, finding 1: the whole tree of a 16 MB body cost 188-272 MB).

use serde_json::{json, Map, Value};

use super::json::{self, Reader};

/// Bytes of a layer's features, rendered (the members of the layer document's `features` list); the features past
/// it are dropped and counted like those past the objects cap. 5,000 satellites with their ground tracks take about
/// 4.5 MB, 5,000 aircraft about 1.7 MB.
pub const FEATURES_BYTES_MAX: usize = 8 * 1_048_576;

/// Kept features, rendered once as they are kept: the members of a JSON list, comma-separated (a `Value` per
/// feature costs about five times its JSON).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Features {
    json: Vec<u8>,
    /// Where the features start in `json` (`within`).
    start: usize,
    count: usize,
}

impl Features {
    /// Features written after what `prefix` holds (a document's start): `into_bytes` gives both.
    pub fn within(prefix: Vec<u8>) -> Features {
        Features { start: prefix.len(), json: prefix, count: 0 }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.json
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// The features as the members of a JSON list (without the brackets).
    pub fn json(&self) -> &[u8] {
        self.json.get(self.start..).unwrap_or_default()
    }

    /// Adds `feature` if it is one of the first `max` and fits within `FEATURES_BYTES_MAX`; `false` when it is not
    /// kept.
    pub fn push(&mut self, feature: &Value, max: usize) -> bool {
        if self.count >= max {
            return false;
        }
        let before = self.json.len();
        if before > self.start {
            self.json.push(b',');
        }
        if serde_json::to_writer(&mut self.json, feature).is_err() || self.json.len() - self.start > FEATURES_BYTES_MAX
        {
            self.json.truncate(before);
            return false;
        }
        self.count += 1;
        true
    }

    /// The features as values (tests and checks).
    pub fn values(&self) -> Vec<Value> {
        let mut list = Vec::with_capacity(self.json.len() + 2);
        list.push(b'[');
        list.extend_from_slice(self.json());
        list.push(b']');
        serde_json::from_slice(&list).unwrap_or_default()
    }
}

/// What a feed answer held.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub features: Features,
    /// The source's own time for the data (Unix ms), when it states one.
    pub source_time_ms: Option<u64>,
    /// Objects the source had beyond the caps, or without a usable position.
    pub dropped: usize,
}

pub type Result = std::result::Result<Parsed, String>;

/// A GeoJSON point feature, or `None` for a position out of range.
pub fn feature(lon: f64, lat: f64, properties: Map<String, Value>) -> Option<Value> {
    let valid = lon.is_finite() && lat.is_finite() && (-180.0..=180.0).contains(&lon) && (-90.0..=90.0).contains(&lat);
    valid.then(|| {
        json!({
            "type": "Feature",
            "geometry": { "type": "Point", "coordinates": [round6(lon), round6(lat)] },
            "properties": properties,
        })
    })
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A number or a string as it is (strings are already cut to `json::STRING_BYTES_MAX`); anything else is null (an
/// object or list in an id's place could take a feature's whole cost, 16 KiB, into the layer).
fn scalar(v: Option<&Value>) -> Value {
    match v {
        Some(v @ (Value::Number(_) | Value::String(_))) => v.clone(),
        _ => Value::Null,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The features kept from a feed's objects, read one at a time.
struct Collect {
    features: Features,
    dropped: usize,
    max: usize,
    /// Whether the feed's list was found (`Feed::read`).
    listed: bool,
}

impl Collect {
    fn new(max: usize) -> Collect {
        Collect { features: Features::default(), dropped: 0, max, listed: false }
    }

    /// Reads one object of the feed's list and keeps its feature; an object past the cap is skipped unread.
    fn item(&mut self, r: &mut Reader<'_>, convert: &mut impl FnMut(&Value) -> Option<Value>) -> json::Result<()> {
        if self.features.count() >= self.max {
            self.dropped += 1;
            return r.skip();
        }
        let object = r.value()?;
        match convert(&object) {
            Some(f) if self.features.push(&f, self.max) => {}
            _ => self.dropped += 1,
        }
        Ok(())
    }

    /// Reads a list of objects; `Ok(false)` (the value skipped) when it is not a list.
    fn list(&mut self, r: &mut Reader<'_>, mut convert: impl FnMut(&Value) -> Option<Value>) -> json::Result<bool> {
        if !r.at_array() {
            r.skip()?;
            return Ok(false);
        }
        r.items(|r| self.item(r, &mut convert))?;
        Ok(true)
    }

    /// What was kept; `Err(missing)` when the feed's list was not found.
    fn parsed(self, source_time_ms: Option<u64>, missing: &str) -> Result {
        if !self.listed {
            return Err(missing.into());
        }
        Ok(Parsed { features: self.features, source_time_ms, dropped: self.dropped })
    }
}

/// A feed answer's top-level object read once: the first member named in `lists` that is a list (or `null`, taken
/// as empty when `null_is_empty`), each of its objects converted and kept; the members named in `scalars`, read as
/// small values (`Null` when absent); the rest skipped unread.
struct Feed<'a, const N: usize> {
    lists: &'a [&'a str],
    null_is_empty: bool,
    scalars: [&'a str; N],
}

impl<const N: usize> Feed<'_, N> {
    fn read(
        &self,
        bytes: &[u8],
        max: usize,
        mut convert: impl FnMut(&Value) -> Option<Value>,
    ) -> std::result::Result<(Collect, [Value; N]), String> {
        let mut kept = Collect::new(max);
        let mut values = [const { Value::Null }; N];
        let mut r = Reader::new(bytes);
        if !r.at_object() {
            return Err("not a JSON object".into());
        }
        r.members(|r, key| {
            if let Some(i) = self.scalars.iter().position(|k| *k == key) {
                if let Some(v) = values.get_mut(i) {
                    *v = r.value()?;
                }
                return Ok(());
            }
            if kept.listed || !self.lists.contains(&key) {
                return r.skip();
            }
            kept.listed = (self.null_is_empty && r.null()?) || kept.list(r, &mut convert)?;
            Ok(())
        })?;
        r.end()?;
        Ok((kept, values))
    }
}

/// USGS earthquake GeoJSON (`summary/*.geojson`): magnitude, place, time, depth.
pub fn usgs(bytes: &[u8], max: usize) -> Result {
    let feed = Feed { lists: &["features"], null_is_empty: false, scalars: ["metadata"] };
    let (kept, [metadata]) = feed.read(bytes, max, |f| {
        let c = f.pointer("/geometry/coordinates")?.as_array()?;
        let (lon, lat) = (num(c.first())?, num(c.get(1))?);
        let p = f.get("properties")?;
        let mut m = Map::new();
        m.insert("id".into(), scalar(f.get("id")));
        m.insert("magnitude".into(), num(p.get("mag")).into());
        m.insert("magnitude_type".into(), text(p.get("magType")).into());
        m.insert("place".into(), text(p.get("place")).into());
        m.insert("time_ms".into(), p.get("time").and_then(Value::as_u64).into());
        m.insert("depth_km".into(), num(c.get(2)).into());
        m.insert("event_type".into(), text(p.get("type")).into());
        m.insert("tsunami".into(), (p.get("tsunami").and_then(Value::as_u64) == Some(1)).into());
        m.insert("url".into(), text(p.get("url")).into());
        feature(lon, lat, m)
    })?;
    kept.parsed(metadata.get("generated").and_then(Value::as_u64), "no features array")
}

const FEET_TO_M: f64 = 0.3048;
const KNOTS_TO_KMH: f64 = 1.852;

/// Aircraft in the ADS-B Exchange v2 shape (adsb.lol, adsb.fi, airplanes.live): `{ac: [...], now}` (`aircraft` in
/// some; the first of the two lists in the body is read).
pub fn adsb_v2(bytes: &[u8], max: usize) -> Result {
    let feed = Feed { lists: &["ac", "aircraft"], null_is_empty: false, scalars: ["now"] };
    let (kept, [now]) = feed.read(bytes, max, |a| {
        let (lon, lat) = (num(a.get("lon"))?, num(a.get("lat"))?);
        let on_ground = a.get("alt_baro").and_then(Value::as_str) == Some("ground");
        let mut m = Map::new();
        m.insert("id".into(), text(a.get("hex")).into());
        m.insert("callsign".into(), text(a.get("flight")).into());
        m.insert("registration".into(), text(a.get("r")).into());
        m.insert("aircraft_type".into(), text(a.get("t")).into());
        m.insert("on_ground".into(), on_ground.into());
        let alt = if on_ground { Some(0.0) } else { num(a.get("alt_baro")).map(|ft| (ft * FEET_TO_M).round()) };
        m.insert("altitude_m".into(), alt.into());
        let speed = num(a.get("gs")).map(|kt| (kt * KNOTS_TO_KMH * 10.0).round() / 10.0);
        m.insert("speed_kmh".into(), speed.into());
        m.insert("track_deg".into(), num(a.get("track")).into());
        m.insert("squawk".into(), text(a.get("squawk")).into());
        m.insert("seen_s".into(), num(a.get("seen_pos").or_else(|| a.get("seen"))).into());
        feature(lon, lat, m)
    })?;
    kept.parsed(now.as_f64().map(|n| n as u64), "no ac array")
}

/// OpenSky `states/all`: positional state vectors (5 lon, 6 lat, 7 baro altitude m, 8 on ground, 9 velocity m/s,
/// 10 track, 14 squawk); vectors without a position are dropped. The answer's `time` is read first (a pass over the
/// top-level members that keeps nothing else): each vector's age is counted from it.
pub fn opensky(bytes: &[u8], max: usize) -> Result {
    let first = Feed { lists: &[], null_is_empty: false, scalars: ["time"] };
    let (_, [time]) = first.read(bytes, max, |_| None)?;
    let time = time.as_u64().ok_or("no time")?;
    let feed = Feed { lists: &["states"], null_is_empty: true, scalars: [] };
    let (kept, []) = feed.read(bytes, max, |s| {
        let s = s.as_array()?;
        let (lon, lat) = (num(s.get(5))?, num(s.get(6))?);
        let mut m = Map::new();
        m.insert("id".into(), text(s.first()).into());
        m.insert("callsign".into(), text(s.get(1)).into());
        m.insert("origin_country".into(), text(s.get(2)).into());
        m.insert("on_ground".into(), s.get(8).and_then(Value::as_bool).unwrap_or(false).into());
        m.insert("altitude_m".into(), num(s.get(7)).map(f64::round).into());
        m.insert("speed_kmh".into(), num(s.get(9)).map(|ms| (ms * 36.0).round() / 10.0).into());
        m.insert("track_deg".into(), num(s.get(10)).into());
        m.insert("squawk".into(), text(s.get(14)).into());
        let last = s.get(4).and_then(Value::as_u64);
        m.insert("seen_s".into(), last.map(|l| time.saturating_sub(l)).into());
        feature(lon, lat, m)
    })?;
    kept.parsed(Some(time.saturating_mul(1_000)), "no states array")
}

/// Digitraffic AIS locations (GeoJSON): AIS "not available" values become null (sog 102.3, cog 360, heading 511).
pub fn digitraffic(bytes: &[u8], max: usize) -> Result {
    let mut newest = 0u64;
    let feed = Feed { lists: &["features"], null_is_empty: false, scalars: ["dataUpdatedTime"] };
    let (kept, [stated]) = feed.read(bytes, max, |f| {
        let c = f.pointer("/geometry/coordinates")?.as_array()?;
        let (lon, lat) = (num(c.first())?, num(c.get(1))?);
        let p = f.get("properties")?;
        let mmsi = f.get("mmsi").or_else(|| p.get("mmsi")).and_then(Value::as_u64);
        let at = p.get("timestampExternal").and_then(Value::as_u64);
        newest = newest.max(at.unwrap_or(0));
        let mut m = Map::new();
        m.insert("id".into(), mmsi.into());
        m.insert("speed_kn".into(), num(p.get("sog")).filter(|s| *s < 102.2).into());
        m.insert("course_deg".into(), num(p.get("cog")).filter(|c| *c < 360.0).into());
        m.insert("heading_deg".into(), num(p.get("heading")).filter(|h| *h < 360.0).into());
        m.insert("nav_status".into(), p.get("navStat").and_then(Value::as_u64).filter(|n| *n != 15).into());
        m.insert("updated_ms".into(), at.into());
        feature(lon, lat, m)
    })?;
    let stated = stated.as_str().and_then(crate::clock::parse_rfc3339_ms);
    kept.parsed(stated.or((newest > 0).then_some(newest)), "no features array")
}

/// OpenTopoData answers (`{results: [{elevation, location: {lat, lng}}], status}`): depth below sea level.
pub fn opentopodata(bytes: &[u8], max: usize) -> Result {
    let feed = Feed { lists: &["results"], null_is_empty: false, scalars: ["status"] };
    let (kept, [status]) = feed.read(bytes, max, |p| {
        let (lat, lon) = (num(p.pointer("/location/lat"))?, num(p.pointer("/location/lng"))?);
        let elevation = num(p.get("elevation"))?;
        let mut m = Map::new();
        m.insert("elevation_m".into(), elevation.into());
        m.insert("depth_m".into(), (if elevation < 0.0 { -elevation } else { 0.0 }).into());
        m.insert("dataset".into(), text(p.get("dataset")).into());
        feature(lon, lat, m)
    })?;
    if status.as_str().is_some_and(|s| s != "OK") {
        return Err(format!("status {status}"));
    }
    kept.parsed(None, "no results array")
}

/// UCDP GED events (`{Result: [{id, latitude, longitude, date_start, country, best, type_of_violence, ...}]}`).
pub fn ucdp(bytes: &[u8], max: usize) -> Result {
    let feed = Feed { lists: &["Result"], null_is_empty: false, scalars: [] };
    let (kept, []) = feed.read(bytes, max, |e| {
        let (lat, lon) = (num(e.get("latitude"))?, num(e.get("longitude"))?);
        let mut m = Map::new();
        m.insert("id".into(), scalar(e.get("id")));
        m.insert("date".into(), text(e.get("date_start")).into());
        m.insert("country".into(), text(e.get("country")).into());
        m.insert("fatalities_best".into(), num(e.get("best")).into());
        m.insert("violence_type".into(), scalar(e.get("type_of_violence")));
        m.insert("source".into(), Value::from("ucdp"));
        feature(lon, lat, m)
    })?;
    kept.parsed(None, "no Result array")
}

/// GDELT 2.0 `lastupdate.txt`: the export file's URL (lines of `size md5 url`).
pub fn gdelt_manifest(bytes: &[u8]) -> std::result::Result<String, String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .find(|u| u.ends_with(".export.CSV.zip"))
        .map(str::to_owned)
        .ok_or_else(|| "no export file in the manifest".into())
}

/// GDELT event roots for conflict: 18 assault, 19 fight, 20 unconventional mass violence.
const CONFLICT_ROOTS: [&str; 3] = ["18", "19", "20"];

/// Columns of a GDELT 2.0 export row.
const GDELT_COLUMNS: usize = 61;

/// A GDELT 2.0 export (61 tab-separated columns): conflict events with a position. Read line by line, each line's
/// columns as slices of the body (at most one more than a row has: a line of a million tabs costs nothing).
pub fn gdelt_events(tsv: &[u8], max: usize) -> Result {
    let mut newest = 0u64;
    let mut kept = Collect::new(max);
    kept.listed = true;
    for line in tsv.split(|&b| b == b'\n') {
        let c: Vec<&str> =
            line.split(|&b| b == b'\t').take(GDELT_COLUMNS + 1).map(|f| std::str::from_utf8(f).unwrap_or("")).collect();
        if c.len() < GDELT_COLUMNS || !c.get(28).is_some_and(|root| CONFLICT_ROOTS.contains(root)) {
            continue;
        }
        if kept.features.count() >= max {
            kept.dropped += 1;
            continue;
        }
        let f = (|| {
            let (lat, lon) = (c.get(56)?.parse::<f64>().ok()?, c.get(57)?.parse::<f64>().ok()?);
            let added = gdelt_time(c.get(59)?);
            newest = newest.max(added.unwrap_or(0));
            let field = |i: usize| c.get(i).map(|s| cut(s.trim_end_matches('\r'))).filter(|s| !s.is_empty());
            let mut m = Map::new();
            m.insert("id".into(), c.first()?.parse::<u64>().ok().into());
            m.insert("event_code".into(), Value::from(cut(c.get(26)?)));
            m.insert("root_code".into(), Value::from(*c.get(28)?));
            m.insert("actor1".into(), field(6).into());
            m.insert("actor2".into(), field(16).into());
            m.insert("goldstein".into(), c.get(30)?.parse::<f64>().ok().into());
            m.insert("mentions".into(), c.get(31)?.parse::<u64>().ok().into());
            m.insert("place".into(), field(52).into());
            m.insert("country_code".into(), field(53).into());
            m.insert("added_ms".into(), added.into());
            m.insert("source_url".into(), field(60).into());
            feature(lon, lat, m)
        })();
        match f {
            Some(f) if kept.features.push(&f, max) => {}
            _ => kept.dropped += 1,
        }
    }
    kept.parsed((newest > 0).then_some(newest), "")
}

/// At most `json::STRING_BYTES_MAX` bytes of `s`, cut at a character boundary (as the JSON feeds' strings are).
fn cut(s: &str) -> &str {
    s.get(..crate::html::floor_char_boundary(s, json::STRING_BYTES_MAX)).unwrap_or_default()
}

/// `YYYYMMDDhhmmss` (UTC) as Unix ms.
fn gdelt_time(s: &str) -> Option<u64> {
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| s.get(a..b)?.parse::<u32>().ok();
    let iso = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        n(0, 4)?,
        n(4, 6)?,
        n(6, 8)?,
        n(8, 10)?,
        n(10, 12)?,
        n(12, 14)?
    );
    crate::clock::parse_rfc3339_ms(&iso)
}

/// The first file of a zip archive, inflated (stored or deflated), at most `max_bytes`.
pub fn unzip_first(zip: &[u8], max_bytes: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let u16_at = |i: usize| Some(u16::from_le_bytes([*zip.get(i)?, *zip.get(i + 1)?]));
    if zip.get(..4) != Some(b"PK\x03\x04") {
        return Err("not a zip archive".into());
    }
    let method = u16_at(8).ok_or("truncated zip header")?;
    let stored_len =
        zip.get(18..22).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes).ok_or("truncated zip header")?;
    let name_len = usize::from(u16_at(26).ok_or("truncated zip header")?);
    let extra_len = usize::from(u16_at(28).ok_or("truncated zip header")?);
    let data = zip.get(30 + name_len + extra_len..).ok_or("truncated zip entry")?;
    let mut out = Vec::new();
    match method {
        // Stored: exactly the entry's own bytes (what follows is the next entry or the central directory).
        0 => {
            if u64::from(stored_len) > max_bytes {
                return Err(format!("the archive's entry is larger than {max_bytes} bytes"));
            }
            out.extend_from_slice(data.get(..stored_len as usize).ok_or("truncated zip entry")?);
        }
        8 => {
            // The size the entry declares, when within the cap: the buffer is that size at once instead of doubling
            // (whose last step would hold twice the cap's room, half of it copied).
            let declared = zip.get(22..26).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes).unwrap_or(0);
            out.reserve_exact(usize::try_from(u64::from(declared).min(max_bytes)).unwrap_or(0));
            flate2::read::DeflateDecoder::new(data)
                .take(max_bytes + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("inflate: {e}"))?;
            if out.len() as u64 > max_bytes {
                return Err(format!("the archive inflates past {max_bytes} bytes"));
            }
        }
        m => return Err(format!("zip compression method {m} is not supported")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_read_in_any_order() {
        let states_first = br#"{"states":[["abc","CS1","X",1,990,8.5,47.1,1000.0,false,100.0,90.0]],"time":1000}"#;
        let p = opensky(states_first, 10).unwrap();
        assert_eq!(p.features.values()[0]["properties"]["seen_s"], 10, "time read before the vectors' ages");
        assert_eq!(p.source_time_ms, Some(1_000_000));
        let p = usgs(br#"{"features":[],"metadata":{"generated":5}}"#, 10).unwrap();
        assert_eq!((p.features.count(), p.source_time_ms), (0, Some(5)));
    }

    #[test]
    fn a_body_of_the_wrong_shape_says_so() {
        assert_eq!(usgs(br#"{"features":{}}"#, 10).unwrap_err(), "no features array");
        assert_eq!(usgs(b"[]", 10).unwrap_err(), "not a JSON object");
        assert!(usgs(br#"{"features":[1,}"#, 10).unwrap_err().starts_with("not JSON"));
        assert_eq!(opensky(br#"{"states":null,"time":1}"#, 10).unwrap().features.count(), 0);
        assert_eq!(opentopodata(br#"{"results":[],"status":"INVALID"}"#, 10).unwrap_err(), r#"status "INVALID""#);
    }

    #[test]
    fn an_id_is_a_number_or_a_string() {
        let body = br#"{"features":[{"id":{"a":[1,2,3]},"geometry":{"coordinates":[1,2]},"properties":{}},
            {"id":"us7000","geometry":{"coordinates":[1,2]},"properties":{}}]}"#;
        let ids: Vec<Value> =
            usgs(body, 10).unwrap().features.values().iter().map(|f| f["properties"]["id"].clone()).collect();
        assert_eq!(ids, [Value::Null, json!("us7000")]);
    }

    #[test]
    fn kept_features_stop_at_their_byte_cap() {
        let mut f = Features::default();
        let big = json!({ "text": "x".repeat(FEATURES_BYTES_MAX / 4) });
        let kept = (0..8).filter(|_| f.push(&big, usize::MAX)).count();
        assert_eq!(kept, 3);
        assert!(f.json().len() <= FEATURES_BYTES_MAX);
        assert_eq!(f.values().len(), 3);
        assert!(!f.push(&json!(1), 3), "the objects cap");
    }

    #[test]
    fn a_gdelt_line_of_many_tabs_keeps_one_row_of_columns() {
        let mut tsv = "\t".repeat(1_000_000).into_bytes();
        tsv.push(b'\n');
        let p = gdelt_events(&tsv, 10).unwrap();
        assert_eq!((p.features.count(), p.dropped), (0, 0));
    }
}
