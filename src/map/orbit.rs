//! Satellites: CelesTrak's OMM JSON read into SGP4 elements (the `sgp4` crate), positions propagated at request
//! time and turned from the TEME frame into latitude, longitude (rotation by Greenwich mean sidereal time, IAU 1982)
//! and altitude above the WGS 84 ellipsoid.

use serde_json::{Map, Value};

/// The ground track's span on each side of the moment asked, and its step (minutes).
pub const GROUND_TRACK_HALF_MIN: i64 = 48;
pub const GROUND_TRACK_STEP_MIN: i64 = 3;

/// One satellite, ready to propagate.
pub struct Satellite {
    pub norad_id: u64,
    pub name: Option<String>,
    pub epoch_ms: u64,
    constants: sgp4::Constants,
}

/// Elements from one OMM object (numbers may come as strings; 6-digit catalogue numbers exist).
pub fn elements_from_omm(o: &Value) -> Result<sgp4::Elements, String> {
    let f = |k: &str| -> Result<f64, String> {
        match o.get(k) {
            Some(Value::Number(n)) => n.as_f64().ok_or_else(|| format!("{k} is not a number")),
            Some(Value::String(s)) => s.trim().parse().map_err(|_| format!("{k} is not a number")),
            _ => Err(format!("{k} is missing")),
        }
    };
    let u = |k: &str| -> Result<u64, String> {
        let x = f(k)?;
        (x >= 0.0 && x.fract() == 0.0).then_some(x as u64).ok_or_else(|| format!("{k} is not a whole number"))
    };
    let epoch = o.get("EPOCH").and_then(Value::as_str).ok_or("EPOCH is missing")?;
    // Our own RFC 3339 reader (no offset means UTC, as CelesTrak writes it), to the millisecond: chrono's format
    // parser costs binary size for one field.
    let ms = crate::clock::parse_rfc3339_ms(epoch).ok_or_else(|| format!("EPOCH {epoch:?} is not an RFC 3339 time"))?;
    let datetime = sgp4::chrono::DateTime::from_timestamp_millis(i64::try_from(ms).map_err(|_| "EPOCH out of range")?)
        .ok_or("EPOCH out of range")?
        .naive_utc();
    Ok(sgp4::Elements {
        object_name: o.get("OBJECT_NAME").and_then(Value::as_str).map(str::to_owned),
        international_designator: o.get("OBJECT_ID").and_then(Value::as_str).map(str::to_owned),
        norad_id: u("NORAD_CAT_ID")?,
        classification: sgp4::Classification::Unclassified,
        datetime,
        mean_motion_dot: f("MEAN_MOTION_DOT").unwrap_or(0.0),
        mean_motion_ddot: f("MEAN_MOTION_DDOT").unwrap_or(0.0),
        drag_term: f("BSTAR")?,
        element_set_number: u("ELEMENT_SET_NO").unwrap_or(0),
        inclination: f("INCLINATION")?,
        right_ascension: f("RA_OF_ASC_NODE")?,
        eccentricity: f("ECCENTRICITY")?,
        argument_of_perigee: f("ARG_OF_PERICENTER")?,
        mean_anomaly: f("MEAN_ANOMALY")?,
        mean_motion: f("MEAN_MOTION")?,
        revolution_number: u("REV_AT_EPOCH").unwrap_or(0),
        ephemeris_type: 0,
    })
}

impl Satellite {
    pub fn new(elements: &sgp4::Elements) -> Result<Satellite, String> {
        // The AFSPC-compatible form (WGS 72 constants, AFSPC sidereal time): the one the published elements are
        // fitted with and the verification cases were computed with.
        let constants = sgp4::Constants::from_elements_afspc_compatibility_mode(elements).map_err(|e| e.to_string())?;
        let epoch_ms =
            u64::try_from(elements.datetime.and_utc().timestamp_millis()).map_err(|_| "epoch before 1970")?;
        Ok(Satellite { norad_id: elements.norad_id, name: elements.object_name.clone(), epoch_ms, constants })
    }

    /// TEME position (km) and velocity (km/s) at `minutes` after the epoch.
    pub fn teme(&self, minutes: f64) -> Result<([f64; 3], [f64; 3]), String> {
        let p = self
            .constants
            .propagate_afspc_compatibility_mode(sgp4::MinutesSinceEpoch(minutes))
            .map_err(|e| e.to_string())?;
        Ok((p.position, p.velocity))
    }

    /// A GeoJSON point at `now_ms`, or `None` when the propagation fails (decayed, diverged).
    pub fn feature_at(&self, now_ms: u64) -> Option<Value> {
        let minutes = (now_ms as f64 - self.epoch_ms as f64) / 60_000.0;
        let (r, v) = self.teme(minutes).ok()?;
        let (lat, lon, alt) = geodetic(r, now_ms);
        let speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        let mut m = Map::new();
        m.insert("id".into(), self.norad_id.into());
        m.insert("name".into(), self.name.clone().into());
        m.insert("altitude_km".into(), ((alt * 10.0).round() / 10.0).into());
        m.insert("speed_km_s".into(), ((speed * 1_000.0).round() / 1_000.0).into());
        m.insert("elements_epoch".into(), crate::clock::rfc3339(self.epoch_ms).into());
        m.insert("elements_age_days".into(), ((minutes / 1_440.0 * 100.0).round() / 100.0).into());
        m.insert("ground_track".into(), self.ground_track(now_ms).into());
        super::feeds::feature(lon, lat, m)
    }

    /// The ground track around `now_ms`: `[lon, lat]` every `GROUND_TRACK_STEP_MIN` minutes from
    /// `GROUND_TRACK_HALF_MIN` before to as long after (about one orbit of a station in low orbit), to 3 decimals.
    /// Points whose propagation fails are left out.
    pub fn ground_track(&self, now_ms: u64) -> Vec<Value> {
        let steps = GROUND_TRACK_HALF_MIN / GROUND_TRACK_STEP_MIN;
        (-steps..=steps)
            .filter_map(|i| {
                let at = now_ms as f64 + (i * GROUND_TRACK_STEP_MIN) as f64 * 60_000.0;
                let (r, _) = self.teme((at - self.epoch_ms as f64) / 60_000.0).ok()?;
                let (lat, lon, _) = geodetic(r, at.max(0.0) as u64);
                let round = |x: f64| (x * 1_000.0).round() / 1_000.0;
                Some(Value::from(vec![round(lon), round(lat)]))
            })
            .collect()
    }
}

/// Greenwich mean sidereal time (radians) at Unix ms (IAU 1982, UT1 taken as UTC).
pub fn gmst(unix_ms: u64) -> f64 {
    let jd = unix_ms as f64 / 86_400_000.0 + 2_440_587.5;
    let t = (jd - 2_451_545.0) / 36_525.0;
    let seconds =
        67_310.548_41 + (876_600.0 * 3_600.0 + 8_640_184.812_866) * t + 0.093_104 * t * t - 6.2e-6 * t * t * t;
    (seconds % 86_400.0 / 240.0).to_radians().rem_euclid(std::f64::consts::TAU)
}

/// Latitude and longitude (degrees) and altitude (km, WGS 84) of a TEME position at Unix ms.
pub fn geodetic(r: [f64; 3], unix_ms: u64) -> (f64, f64, f64) {
    const A: f64 = 6_378.137;
    const F: f64 = 1.0 / 298.257_223_563;
    let e2 = F * (2.0 - F);
    let theta = gmst(unix_ms);
    // TEME to a pseudo Earth-fixed frame: rotate by -GMST about z (polar motion neglected).
    let x = r[0] * theta.cos() + r[1] * theta.sin();
    let y = -r[0] * theta.sin() + r[1] * theta.cos();
    let z = r[2];
    let lon = y.atan2(x).to_degrees();
    let p = (x * x + y * y).sqrt();
    let mut lat = z.atan2(p * (1.0 - e2));
    let mut alt = 0.0;
    for _ in 0..6 {
        let n = A / (1.0 - e2 * lat.sin().powi(2)).sqrt();
        // Stable at the poles too (no division by cos(lat)).
        alt = p * lat.cos() + z * lat.sin() - A * A / n;
        lat = z.atan2(p * (1.0 - e2 * n / (n + alt)));
    }
    let lon = if lon > 180.0 { lon - 360.0 } else { lon };
    (lat.to_degrees(), lon, alt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmst_reference() {
        // Vallado, example 3-5: 1992-08-20 12:14 UT1 gives GMST 152.578787886 degrees.
        let ms = crate::clock::parse_rfc3339_ms("1992-08-20T12:14:00Z").unwrap();
        assert!((gmst(ms).to_degrees() - 152.578_787_886).abs() < 1e-4, "{}", gmst(ms).to_degrees());
    }

    #[test]
    fn geodetic_of_simple_points() {
        // On the equator under Greenwich (x along the Greenwich meridian once rotated) at the surface.
        let t = 0;
        let th = gmst(t);
        let r = [6_378.137 * th.cos(), 6_378.137 * th.sin(), 0.0];
        let (lat, lon, alt) = geodetic(r, t);
        assert!(lat.abs() < 1e-6 && lon.abs() < 1e-6 && alt.abs() < 1e-6, "{lat} {lon} {alt}");
        // Over the north pole, 400 km up: polar radius 6356.752 km.
        let (lat, _, alt) = geodetic([0.0, 0.0, 6_756.752_314], t);
        assert!((lat - 90.0).abs() < 1e-6 && (alt - 400.0).abs() < 1e-3, "{lat} {alt}");
    }
}
