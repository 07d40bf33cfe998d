//! The feed parsers: bytes of one upstream answer in, GeoJSON features with properties normalised per layer kind
//! out (coordinates `[lon, lat]`, units in the property names), plus the source's own time when it says one. Pure,
//! no I/O, never panics on input; at most `max` features are kept.

use serde_json::{json, Map, Value};

/// What a feed answer held.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub features: Vec<Value>,
    /// The source's own time for the data (Unix ms), when it states one.
    pub source_time_ms: Option<u64>,
    /// Objects the source had beyond the cap, or without a usable position.
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

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn json_of(bytes: &[u8]) -> std::result::Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))
}

fn collect(items: impl Iterator<Item = Option<Value>>, max: usize) -> (Vec<Value>, usize) {
    let mut features = Vec::new();
    let mut dropped = 0;
    for f in items {
        match f {
            Some(f) if features.len() < max => features.push(f),
            _ => dropped += 1,
        }
    }
    (features, dropped)
}

/// USGS earthquake GeoJSON (`summary/*.geojson`): magnitude, place, time, depth.
pub fn usgs(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    let items = v.get("features").and_then(Value::as_array).ok_or("no features array")?;
    let source_time_ms = v.pointer("/metadata/generated").and_then(Value::as_u64);
    let (features, dropped) = collect(
        items.iter().map(|f| {
            let c = f.pointer("/geometry/coordinates")?.as_array()?;
            let (lon, lat) = (num(c.first())?, num(c.get(1))?);
            let p = f.get("properties")?;
            let mut m = Map::new();
            m.insert("id".into(), f.get("id").cloned().unwrap_or(Value::Null));
            m.insert("magnitude".into(), num(p.get("mag")).into());
            m.insert("magnitude_type".into(), text(p.get("magType")).into());
            m.insert("place".into(), text(p.get("place")).into());
            m.insert("time_ms".into(), p.get("time").and_then(Value::as_u64).into());
            m.insert("depth_km".into(), num(c.get(2)).into());
            m.insert("event_type".into(), text(p.get("type")).into());
            m.insert("tsunami".into(), (p.get("tsunami").and_then(Value::as_u64) == Some(1)).into());
            m.insert("url".into(), text(p.get("url")).into());
            feature(lon, lat, m)
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms, dropped })
}

const FEET_TO_M: f64 = 0.3048;
const KNOTS_TO_KMH: f64 = 1.852;

/// Aircraft in the ADS-B Exchange v2 shape (adsb.lol, adsb.fi, airplanes.live): `{ac: [...], now}`.
pub fn adsb_v2(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    let items = v.get("ac").or_else(|| v.get("aircraft")).and_then(Value::as_array).ok_or("no ac array")?;
    let source_time_ms = v.get("now").and_then(Value::as_f64).map(|n| n as u64);
    let (features, dropped) = collect(
        items.iter().map(|a| {
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
            m.insert("speed_kmh".into(), num(a.get("gs")).map(|kt| (kt * KNOTS_TO_KMH * 10.0).round() / 10.0).into());
            m.insert("track_deg".into(), num(a.get("track")).into());
            m.insert("squawk".into(), text(a.get("squawk")).into());
            m.insert("seen_s".into(), num(a.get("seen_pos").or_else(|| a.get("seen"))).into());
            feature(lon, lat, m)
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms, dropped })
}

/// OpenSky `states/all`: positional state vectors (5 lon, 6 lat, 7 baro altitude m, 8 on ground, 9 velocity m/s,
/// 10 track, 14 squawk); vectors without a position are dropped.
pub fn opensky(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    let time = v.get("time").and_then(Value::as_u64).ok_or("no time")?;
    let items = match v.get("states") {
        Some(Value::Array(a)) => a.as_slice(),
        Some(Value::Null) => &[],
        _ => return Err("no states array".into()),
    };
    let (features, dropped) = collect(
        items.iter().map(|s| {
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
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms: Some(time * 1_000), dropped })
}

/// Digitraffic AIS locations (GeoJSON): AIS "not available" values become null (sog 102.3, cog 360, heading 511).
pub fn digitraffic(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    let items = v.get("features").and_then(Value::as_array).ok_or("no features array")?;
    let mut newest = 0u64;
    let (features, dropped) = collect(
        items.iter().map(|f| {
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
        }),
        max,
    );
    let stated = v.get("dataUpdatedTime").and_then(Value::as_str).and_then(crate::clock::parse_rfc3339_ms);
    Ok(Parsed { features, source_time_ms: stated.or((newest > 0).then_some(newest)), dropped })
}

/// OpenTopoData answers (`{results: [{elevation, location: {lat, lng}}], status}`): depth below sea level.
pub fn opentopodata(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    if v.get("status").and_then(Value::as_str).is_some_and(|s| s != "OK") {
        return Err(format!("status {}", v.get("status").cloned().unwrap_or_default()));
    }
    let items = v.get("results").and_then(Value::as_array).ok_or("no results array")?;
    let (features, dropped) = collect(
        items.iter().map(|r| {
            let (lat, lon) = (num(r.pointer("/location/lat"))?, num(r.pointer("/location/lng"))?);
            let elevation = num(r.get("elevation"))?;
            let mut m = Map::new();
            m.insert("elevation_m".into(), elevation.into());
            m.insert("depth_m".into(), (if elevation < 0.0 { -elevation } else { 0.0 }).into());
            m.insert("dataset".into(), text(r.get("dataset")).into());
            feature(lon, lat, m)
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms: None, dropped })
}

/// UCDP GED events (`{Result: [{id, latitude, longitude, date_start, country, best, type_of_violence, ...}]}`).
pub fn ucdp(bytes: &[u8], max: usize) -> Result {
    let v = json_of(bytes)?;
    let items = v.get("Result").and_then(Value::as_array).ok_or("no Result array")?;
    let (features, dropped) = collect(
        items.iter().map(|e| {
            let (lat, lon) = (num(e.get("latitude"))?, num(e.get("longitude"))?);
            let mut m = Map::new();
            m.insert("id".into(), e.get("id").cloned().unwrap_or(Value::Null));
            m.insert("date".into(), text(e.get("date_start")).into());
            m.insert("country".into(), text(e.get("country")).into());
            m.insert("fatalities_best".into(), num(e.get("best")).into());
            m.insert("violence_type".into(), e.get("type_of_violence").cloned().unwrap_or(Value::Null));
            m.insert("source".into(), Value::from("ucdp"));
            feature(lon, lat, m)
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms: None, dropped })
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

/// A GDELT 2.0 export (61 tab-separated columns): conflict events with a position.
pub fn gdelt_events(tsv: &[u8], max: usize) -> Result {
    let text = String::from_utf8_lossy(tsv);
    let mut newest = 0u64;
    let (features, dropped) = collect(
        text.lines().filter_map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            if c.len() < 61 || !CONFLICT_ROOTS.contains(c.get(28)?) {
                return None;
            }
            Some((|| {
                let (lat, lon) = (c.get(56)?.parse::<f64>().ok()?, c.get(57)?.parse::<f64>().ok()?);
                let added = gdelt_time(c.get(59)?);
                newest = newest.max(added.unwrap_or(0));
                let mut m = Map::new();
                m.insert("id".into(), c.first()?.parse::<u64>().ok().into());
                m.insert("event_code".into(), Value::from(*c.get(26)?));
                m.insert("root_code".into(), Value::from(*c.get(28)?));
                m.insert("actor1".into(), Some(*c.get(6)?).filter(|s| !s.is_empty()).into());
                m.insert("actor2".into(), Some(*c.get(16)?).filter(|s| !s.is_empty()).into());
                m.insert("goldstein".into(), c.get(30)?.parse::<f64>().ok().into());
                m.insert("mentions".into(), c.get(31)?.parse::<u64>().ok().into());
                m.insert("place".into(), Some(*c.get(52)?).filter(|s| !s.is_empty()).into());
                m.insert("country_code".into(), Some(*c.get(53)?).filter(|s| !s.is_empty()).into());
                m.insert("added_ms".into(), added.into());
                m.insert("source_url".into(), Some(*c.get(60)?).filter(|s| !s.is_empty()).into());
                feature(lon, lat, m)
            })())
        }),
        max,
    );
    Ok(Parsed { features, source_time_ms: (newest > 0).then_some(newest), dropped })
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

/// A gzip body (RFC 1952, one member), inflated and checked (CRC-32 and length), at most `max_bytes`. The header
/// is read here and the deflate stream handed to flate2, so that no second CRC-32 table is linked in.
pub fn gunzip(body: &[u8], max_bytes: u64) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if body.get(..3) != Some(&[0x1f, 0x8b, 8][..]) {
        return Err("not a gzip body".into());
    }
    let flags = *body.get(3).ok_or("truncated gzip header")?;
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len =
            usize::from(u16::from_le_bytes([*body.get(10).ok_or("truncated")?, *body.get(11).ok_or("truncated")?]));
        at = 12 + len;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let end = body.get(at..).and_then(|r| r.iter().position(|&b| b == 0)).ok_or("truncated gzip header")?;
            at += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    let stream = body.get(at..).ok_or("truncated gzip body")?;
    let mut decoder = flate2::read::DeflateDecoder::new(stream);
    let mut out = Vec::new();
    (&mut decoder).take(max_bytes + 1).read_to_end(&mut out).map_err(|e| format!("gunzip: {e}"))?;
    if out.len() as u64 > max_bytes {
        return Err(format!("the body inflates past {max_bytes} bytes"));
    }
    let used = usize::try_from(decoder.total_in()).map_err(|_| "gzip too large")?;
    let word =
        |i: usize| -> Option<u32> { Some(u32::from_le_bytes(stream.get(used + i..used + i + 4)?.try_into().ok()?)) };
    let (crc, size) = word(0).zip(word(4)).ok_or("the gzip trailer is missing")?;
    if crc != crate::journal::crc32(&out) || size != out.len() as u32 {
        return Err("the gzip checksum does not match".into());
    }
    Ok(out)
}
