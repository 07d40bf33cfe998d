//! The controls of a search beside its query: the time range, the region, safe search and the domain filters, as a
//! call names them (`/service`'s body, the MCP tool's arguments), parsed once into typed values; and how each source
//! receives them in its own parameters (`Ask`), or why it cannot (`Kind`'s `unsupported`).
//!
//! | control | DuckDuckGo html, lite | SearXNG | Brave | Bing | Mojeek | Wikipedia |
//! |---|---|---|---|---|---|---|
//! | `time_range` | `df` d, w, m, y | `time_range` | `tf` pd, pw, pm, py | `filters=ex1:"ez1"` (2, 3; a year is `ez5_<from>_<to>` in days) | `since` YYYYMMDD | none: not asked |
//! | `region` | `kl` (as given) | `language` de-DE (all) | cookie `country` de (all) | `cc` DE, `setlang` de | `reg` de, fr, uk (its regions), `lb` de | the wiki of the language (`de.wikipedia.org`) |
//! | `safesearch` | `kp` -2, -1, 1 | `safesearch` 0, 1, 2 | cookie `safesearch` | `adlt` off, moderate, strict | `safe` 0, 1, 1 | off and moderate; strict: not asked |
//! | domains | `site:` / `-site:` in `q` | in `q` | in `q` | in `q` | in `q` | not asked when the filters leave out its host |
//!
//! Whatever a source receives, the domain filters are enforced on the results (`Controls::admits`).

use serde_json::{Map, Value};

use super::sources::Kind;
use crate::error::ApiError;

/// Domains `include_domains` and `exclude_domains` each hold at most.
pub const DOMAINS_MAX: usize = 20;
/// Longest domain name (RFC 1035), in bytes once in punycode.
pub const DOMAIN_BYTES_MAX: usize = 253;
/// The query with the `site:` operators added stays within this many bytes (DuckDuckGo refuses queries near 500
/// bytes): the domains that do not fit are enforced on the results alone.
pub const SITE_QUERY_BYTES_MAX: usize = 480;

/// A time range, as the results' pages were published or updated within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeRange {
    Day,
    Week,
    Month,
    Year,
}

impl TimeRange {
    pub const NAMES: [&'static str; 4] = ["day", "week", "month", "year"];

    pub fn name(self) -> &'static str {
        match self {
            TimeRange::Day => "day",
            TimeRange::Week => "week",
            TimeRange::Month => "month",
            TimeRange::Year => "year",
        }
    }

    pub fn from_name(name: &str) -> Option<TimeRange> {
        [TimeRange::Day, TimeRange::Week, TimeRange::Month, TimeRange::Year].into_iter().find(|t| t.name() == name)
    }

    /// The range in days (a month 31, a year 365): Mojeek's and Bing's date bounds.
    fn days(self) -> u64 {
        match self {
            TimeRange::Day => 1,
            TimeRange::Week => 7,
            TimeRange::Month => 31,
            TimeRange::Year => 365,
        }
    }
}

/// Safe search: what the sources are asked to filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SafeSearch {
    Off,
    Moderate,
    Strict,
}

impl SafeSearch {
    pub const NAMES: [&'static str; 3] = ["off", "moderate", "strict"];

    pub fn name(self) -> &'static str {
        match self {
            SafeSearch::Off => "off",
            SafeSearch::Moderate => "moderate",
            SafeSearch::Strict => "strict",
        }
    }

    pub fn from_name(name: &str) -> Option<SafeSearch> {
        [SafeSearch::Off, SafeSearch::Moderate, SafeSearch::Strict].into_iter().find(|s| s.name() == name)
    }

    /// SearXNG's number (0, 1, 2).
    pub fn level(self) -> u8 {
        match self {
            SafeSearch::Off => 0,
            SafeSearch::Moderate => 1,
            SafeSearch::Strict => 2,
        }
    }
}

/// A language alone and the region it is searched in (DuckDuckGo's codes, country first).
pub const LANGUAGE_REGIONS: [(&str, &str); 34] = [
    ("ar", "xa-ar"),
    ("bg", "bg-bg"),
    ("ca", "es-ca"),
    ("cs", "cz-cs"),
    ("da", "dk-da"),
    ("de", "de-de"),
    ("el", "gr-el"),
    ("en", "us-en"),
    ("es", "es-es"),
    ("et", "ee-et"),
    ("fi", "fi-fi"),
    ("fr", "fr-fr"),
    ("he", "il-he"),
    ("hr", "hr-hr"),
    ("hu", "hu-hu"),
    ("id", "id-id"),
    ("it", "it-it"),
    ("ja", "jp-jp"),
    ("ko", "kr-kr"),
    ("lt", "lt-lt"),
    ("lv", "lv-lv"),
    ("nb", "no-no"),
    ("nl", "nl-nl"),
    ("no", "no-no"),
    ("pl", "pl-pl"),
    ("pt", "pt-pt"),
    ("ro", "ro-ro"),
    ("ru", "ru-ru"),
    ("sk", "sk-sk"),
    ("sv", "se-sv"),
    ("th", "th-th"),
    ("tr", "tr-tr"),
    ("uk", "ua-uk"),
    ("vi", "vn-vi"),
];

/// A region-language code as DuckDuckGo writes it (`us-en`, `de-de`, `ch-fr`: the country first), or none
/// (`wt-wt`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Region {
    /// `xx-yy`, lowercase.
    code: String,
}

impl Region {
    pub const NONE: &'static str = "wt-wt";

    /// A code of two letters, a hyphen and two or three letters (any case; DuckDuckGo writes Taiwan's and Hong
    /// Kong's `tw-tzh`, `hk-tzh`); `None` otherwise.
    pub fn parse(code: &str) -> Option<Region> {
        let b = code.as_bytes();
        let letters = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_alphabetic));
        let tail = b.len().checked_sub(3).filter(|n| (2..=3).contains(n))?;
        (letters(0..2) && b.get(2) == Some(&b'-') && letters(3..3 + tail))
            .then(|| Region { code: code.to_ascii_lowercase() })
    }

    pub fn code(&self) -> &str {
        &self.code
    }

    /// No region: worldwide.
    pub fn is_none(&self) -> bool {
        self.code == Region::NONE
    }

    /// The country, lowercase (`uk` is ISO's `gb`); `None` worldwide or for DuckDuckGo's regions of no country
    /// (`xa` Arabia, `xl` Latin America).
    pub fn country(&self) -> Option<&str> {
        match self.code.get(..2)? {
            "wt" | "xa" | "xl" | "ct" => None,
            "uk" => Some("gb"),
            c => Some(c),
        }
    }

    /// The language (ISO 639-1), lowercase; `None` worldwide. DuckDuckGo writes a few by their country: `jp-jp`
    /// is Japanese, `kr-kr` Korean, `tw-tzh` Chinese.
    pub fn language(&self) -> Option<&str> {
        match self.code.get(3..).filter(|_| !self.is_none())? {
            "jp" => Some("ja"),
            "kr" => Some("ko"),
            "tzh" => Some("zh"),
            other => Some(other),
        }
    }

    /// The `Accept-Language` the pages of the web providers are asked with: the region's language first, English
    /// after (`de-DE,de;q=0.9,en;q=0.5`); worldwide, English as before (`en-US,en;q=0.5`).
    pub fn accept_language(&self) -> String {
        match (self.tag(), self.language()) {
            (Some(tag), Some("en")) if tag != "en" => format!("{tag},en;q=0.9"),
            (Some(tag), Some(language)) if tag != language => format!("{tag},{language};q=0.9,en;q=0.5"),
            (Some(tag), _) if tag != "en" => format!("{tag},en;q=0.5"),
            _ => "en-US,en;q=0.5".to_owned(),
        }
    }

    /// The region of a language tag as SearXNG's `language` writes it: `de-DE` -> `de-de`, `en-GB` -> `uk-en`,
    /// `ja-JP` -> `jp-jp`, `zh-TW` -> `tw-tzh`, a language alone -> its main region (`de` -> `de-de`,
    /// `LANGUAGE_REGIONS`); the inverse of `tag` (`Region::from_tag(t).tag() == t` for the tags the page offers).
    /// `None` for what is not a language, or a language and a country, of two letters each.
    pub fn from_tag(tag: &str) -> Option<Region> {
        let lower = tag.trim().to_ascii_lowercase();
        let letters = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_alphabetic());
        let main = |language: &str| LANGUAGE_REGIONS.iter().find(|(l, _)| *l == language).map(|(_, r)| *r);
        let code = match lower.split_once('-') {
            None => main(&lower)?.to_owned(),
            Some((language, country)) if letters(language) && letters(country) => {
                let country = if country == "gb" { "uk" } else { country };
                match (language, country) {
                    // DuckDuckGo writes traditional Chinese regions with `tzh`.
                    ("zh", "tw" | "hk") => format!("{country}-tzh"),
                    // The language's main region when it is in this country, as DuckDuckGo writes it (jp-jp).
                    _ => main(language)
                        .filter(|r| r.starts_with(country))
                        .map_or_else(|| format!("{country}-{language}"), str::to_owned),
                }
            }
            Some(_) => return None,
        };
        Region::parse(&code)
    }

    /// The BCP 47 tag, language first (`de-DE`, `fr-CH`; the language alone without a country; `None` worldwide).
    fn tag(&self) -> Option<String> {
        let language = self.language()?;
        Some(match self.country() {
            Some(c) => format!("{language}-{}", c.to_ascii_uppercase()),
            None => language.to_owned(),
        })
    }
}

/// The controls of one search, resolved (the defaults filled in from the configuration).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Controls {
    pub time_range: Option<TimeRange>,
    pub region: Region,
    pub safesearch: SafeSearch,
    /// Host names, lowercase ASCII (IDNs in punycode); each covers its subdomains.
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
}

/// The controls as a call gave them: what it did not give is `None` (the engine's defaults then apply).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked {
    pub time_range: Option<TimeRange>,
    pub region: Option<Region>,
    pub safesearch: Option<SafeSearch>,
    pub include_domains: Vec<String>,
    pub exclude_domains: Vec<String>,
}

impl Asked {
    /// Reads the controls from a JSON object (`/service`'s body, the MCP tool's arguments). Every malformed control
    /// is a 400 whose code names its field.
    pub fn from_fields(fields: &Map<String, Value>) -> Result<Asked, ApiError> {
        let time_range = named(fields, "time_range", "time_range_invalid", &TimeRange::NAMES, TimeRange::from_name)?;
        let safesearch = named(fields, "safesearch", "safesearch_invalid", &SafeSearch::NAMES, SafeSearch::from_name)?;
        let region = match fields.get("region") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Region::parse(s.trim()).ok_or_else(|| {
                ApiError::invalid_field(
                    "region_invalid",
                    "region",
                    "`region` must be a region-language code such as \"us-en\" or \"de-de\" (\"wt-wt\": none)",
                )
            })?),
            Some(_) => return Err(ApiError::invalid_field("region_not_string", "region", "`region` must be a string")),
        };
        Ok(Asked {
            time_range,
            region,
            safesearch,
            include_domains: domains(fields, "include_domains", &INCLUDE_DOMAINS_CODES)?,
            exclude_domains: domains(fields, "exclude_domains", &EXCLUDE_DOMAINS_CODES)?,
        })
    }

    /// The controls with the defaults filled in.
    pub fn resolve(&self, region: &Region, safesearch: SafeSearch) -> Controls {
        Controls {
            time_range: self.time_range,
            region: self.region.clone().unwrap_or_else(|| region.clone()),
            safesearch: self.safesearch.unwrap_or(safesearch),
            include_domains: self.include_domains.clone(),
            exclude_domains: self.exclude_domains.clone(),
        }
    }
}

/// A control whose value is one of `names` (`code`: the error's when it is not).
fn named<T>(
    fields: &Map<String, Value>,
    field: &'static str,
    code: &'static str,
    names: &[&str],
    from_name: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let invalid = || {
        let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        ApiError::invalid_field(code, field, format!("`{field}` must be one of {}", list.join(", ")))
    };
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => from_name(&s.trim().to_ascii_lowercase()).map(Some).ok_or_else(invalid),
        Some(_) => Err(invalid()),
    }
}

/// The error codes of a list of domains, by fault: not an array, too many, an item not a string, then `domain`'s
/// faults (empty, url, path, port, and any other: invalid).
struct DomainsCodes([&'static str; 8]);

const INCLUDE_DOMAINS_CODES: DomainsCodes = DomainsCodes([
    "include_domains_not_array",
    "include_domains_too_many",
    "include_domains_not_string",
    "include_domains_empty_name",
    "include_domains_url",
    "include_domains_path",
    "include_domains_port",
    "include_domains_invalid",
]);

const EXCLUDE_DOMAINS_CODES: DomainsCodes = DomainsCodes([
    "exclude_domains_not_array",
    "exclude_domains_too_many",
    "exclude_domains_not_string",
    "exclude_domains_empty_name",
    "exclude_domains_url",
    "exclude_domains_path",
    "exclude_domains_port",
    "exclude_domains_invalid",
]);

impl DomainsCodes {
    /// The code of the fault `what`.
    fn of(&self, what: &str) -> &'static str {
        let [not_array, too_many, not_string, empty, url, path, port, invalid] = self.0;
        match what {
            "not_array" => not_array,
            "too_many" => too_many,
            "not_string" => not_string,
            "empty" => empty,
            "url" => url,
            "path" => path,
            "port" => port,
            _ => invalid,
        }
    }
}

/// A list of domains: at most `DOMAINS_MAX` host names, each checked and put in its one form (`domain`); `codes`
/// are its errors'.
fn domains(fields: &Map<String, Value>, field: &'static str, codes: &DomainsCodes) -> Result<Vec<String>, ApiError> {
    let code = |what: &str| codes.of(what);
    let items = match fields.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ApiError::invalid_field(
                code("not_array"),
                field,
                format!("`{field}` must be an array of host names"),
            ))
        }
    };
    if items.len() > DOMAINS_MAX {
        return Err(ApiError::invalid_field(
            code("too_many"),
            field,
            format!("`{field}` holds {} names; at most {DOMAINS_MAX} are allowed", items.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(raw) = item else {
            return Err(ApiError::invalid_field(code("not_string"), field, format!("`{field}` must hold strings")));
        };
        let name = domain(raw).map_err(|(what, why)| {
            let shown: String = raw.chars().take(80).collect();
            ApiError::invalid_field(code(what), field, format!("`{field}`: {shown:?} {why}"))
        })?;
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Ok(out)
}

/// A host name in its one form: trimmed, as a browser reads a host (`urls::Host`: lowercase, compatibility forms
/// mapped, each label of other than ASCII in punycode, `xn--`; an IPv4 address in any form dotted), a final dot
/// dropped. Refused, with the kind of fault and why: an empty name, a URL, a path, a port, or a name that is not a
/// host name (one a browser cannot read, a character outside letters, digits and hyphens, an empty label, a label
/// over 63 bytes, a name over `DOMAIN_BYTES_MAX`).
pub fn domain(raw: &str) -> Result<String, (&'static str, &'static str)> {
    let name = raw.trim();
    if name.is_empty() || name == "." {
        return Err(("empty", "is empty"));
    }
    if name.contains("://") || name.starts_with("//") {
        return Err(("url", "is a URL: give the host name alone (docs.python.org)"));
    }
    if name.contains(['/', '?', '#']) {
        return Err(("path", "has a path: give the host name alone (docs.python.org)"));
    }
    if name.contains(':') {
        return Err(("port", "has a port: give the host name alone (a domain covers every port)"));
    }
    // Bounds first: the punycode of a label costs the square of its length (a label has at most 63 characters).
    if name.len() > DOMAIN_BYTES_MAX * 4 {
        return Err(("invalid", "is not a host name"));
    }
    // The name as a browser reads a host (`urls::Host`: compatibility forms such as `ｅ` or `ⓔ`, case, the
    // ideographic full stops, punycode), so that it is compared with the results' hosts read the same way.
    let host = crate::urls::Host::parse(name).ok_or(("invalid", "is not a host name"))?.to_string();
    let out = host.strip_suffix('.').unwrap_or(&host).to_owned();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if out.len() > DOMAIN_BYTES_MAX || !out.split('.').all(label_ok) {
        return Err(("invalid", "is not a host name"));
    }
    Ok(out)
}

/// Whether `host` (as `urls::host` gives it, a final dot aside) is `domain` or one of its subdomains; an IP address
/// is only itself.
fn covers(domain: &str, host: &str) -> bool {
    let ip = host.starts_with('[') || host.rsplit('.').next().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    host == domain || !ip && host.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.'))
}

/// What a source is sent for a search: the query (with its `site:` operators), the parameters to add to its URL or
/// form, and its cookies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    pub query: String,
    pub params: Vec<(&'static str, String)>,
    pub cookies: Vec<(&'static str, String)>,
}

impl Ask {
    /// The `Cookie` header's value, when there are cookies.
    pub fn cookie_header(&self) -> Option<String> {
        (!self.cookies.is_empty())
            .then(|| self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; "))
    }
}

impl Controls {
    /// Whether a result at `url` passes the domain filters. Its host is the one a browser opens (`urls::host`):
    /// `https://ⓔⓥⓘⓛ.com/` is evil.com and `http://2130706433/` is 127.0.0.1; a URL whose host a browser cannot
    /// read passes no filter.
    pub fn admits(&self, url: &str) -> bool {
        if self.include_domains.is_empty() && self.exclude_domains.is_empty() {
            return true;
        }
        let Some(host) = super::url::host(url) else { return false };
        let host = host.strip_suffix('.').unwrap_or(&host);
        (self.include_domains.is_empty() || self.include_domains.iter().any(|d| covers(d, host)))
            && !self.exclude_domains.iter().any(|d| covers(d, host))
    }

    /// The control `kind` cannot honour for this search (its name), or why the source cannot add a result (its
    /// host is left out by the domain filters); `None` when it can be asked. `wiki_language` is the language of the
    /// configured Wikipedia (`Some` when it can be chosen by its host, see `wikipedia_url`), `default_region` the
    /// engine's own.
    pub fn unsupported(&self, kind: Kind, endpoint: &str, default_region: &Region) -> Option<&'static str> {
        if kind != Kind::Wikipedia {
            return None;
        }
        if self.time_range.is_some() {
            return Some("time_range");
        }
        if self.safesearch == SafeSearch::Strict {
            return Some("safesearch");
        }
        // The wiki of another language is asked at its own host; a configured URL that is not Wikipedia's own
        // (a mirror) serves only the default region's language.
        let other_language = self.region.language().is_some() && self.region.language() != default_region.language();
        let known = self.region.language().is_some_and(|l| WIKI_LANGUAGES.contains(&l));
        if other_language && (wiki_host(endpoint).is_none() || !known) {
            return Some("region");
        }
        let host = super::url::host(&wikipedia_url(endpoint, &self.region)).unwrap_or_default();
        if !self.include_domains.is_empty() && !self.include_domains.iter().any(|d| covers(d, &host)) {
            return Some("include_domains");
        }
        if self.exclude_domains.iter().any(|d| covers(d, &host)) {
            return Some("exclude_domains");
        }
        None
    }

    /// What `kind` is sent: the query with the domains as `site:` operators (where the source reads them and they
    /// fit in `SITE_QUERY_BYTES_MAX`) and the controls in the source's own parameters. `today_unix_day` is the day
    /// (days since 1970) for the sources that take a date bound.
    pub fn ask(&self, kind: Kind, query: &str, today_unix_day: u64) -> Ask {
        let mut ask = Ask { query: self.site_query(kind, query), ..Ask::default() };
        let region = &self.region;
        let (p, c) = (&mut ask.params, &mut ask.cookies);
        match kind {
            Kind::DdgHtml | Kind::DdgLite => {
                p.push(("kl", region.code().to_owned()));
                if let Some(t) = self.time_range {
                    p.push(("df", t.name().get(..1).unwrap_or_default().to_owned()));
                }
                let kp = match self.safesearch {
                    SafeSearch::Off => "-2",
                    SafeSearch::Moderate => "-1",
                    SafeSearch::Strict => "1",
                };
                p.push(("kp", kp.to_owned()));
            }
            Kind::Searxng => {
                if let Some(t) = self.time_range {
                    p.push(("time_range", t.name().to_owned()));
                }
                p.push(("language", region.tag().unwrap_or_else(|| "all".to_owned())));
                p.push(("safesearch", self.safesearch.level().to_string()));
            }
            Kind::Brave => {
                if let Some(t) = self.time_range {
                    let tf = match t {
                        TimeRange::Day => "pd",
                        TimeRange::Week => "pw",
                        TimeRange::Month => "pm",
                        TimeRange::Year => "py",
                    };
                    p.push(("tf", tf.to_owned()));
                }
                c.push(("country", region.country().unwrap_or("all").to_owned()));
                c.push(("safesearch", self.safesearch.name().to_owned()));
                c.push(("useLocation", "0".to_owned()));
            }
            Kind::Bing => {
                if let Some(t) = self.time_range {
                    let ez = match t {
                        TimeRange::Year => format!("ez5_{}_{today_unix_day}", today_unix_day.saturating_sub(t.days())),
                        TimeRange::Day => "ez1".to_owned(),
                        TimeRange::Week => "ez2".to_owned(),
                        TimeRange::Month => "ez3".to_owned(),
                    };
                    p.push(("filters", format!("ex1:\"{ez}\"")));
                }
                if let Some(country) = region.country() {
                    p.push(("cc", country.to_ascii_uppercase()));
                }
                if let Some(language) = region.language() {
                    p.push(("setlang", language.to_owned()));
                }
                p.push(("adlt", self.safesearch.name().to_owned()));
            }
            Kind::Mojeek => {
                if let Some(t) = self.time_range {
                    p.push(("since", yyyymmdd(today_unix_day.saturating_sub(t.days()))));
                }
                // Mojeek's own results page offers the regions it has as `reg` (de, fr, uk); elsewhere its language
                // bias `lb` carries the region's language alone.
                match region.country() {
                    Some("gb") => p.push(("reg", "uk".to_owned())),
                    Some(c @ ("de" | "fr")) => p.push(("reg", c.to_owned())),
                    _ => {}
                }
                if let Some(language) = region.language() {
                    p.push(("lb", language.to_owned()));
                }
                p.push(("safe", u8::from(self.safesearch != SafeSearch::Off).to_string()));
            }
            Kind::Wikipedia => {}
        }
        ask
    }

    /// The query with `site:` operators for the domains, for the sources that read them (not Wikipedia's search):
    /// one included domain as `site:`, several are enforced on the results alone (an `OR` of them is not read alike
    /// by every engine), each excluded one as `-site:`, as many as fit in `SITE_QUERY_BYTES_MAX`.
    fn site_query(&self, kind: Kind, query: &str) -> String {
        let mut q = query.to_owned();
        if kind == Kind::Wikipedia {
            return q;
        }
        let include = match self.include_domains.as_slice() {
            [one] => Some(format!("site:{one}")),
            _ => None,
        };
        let exclude = self.exclude_domains.iter().map(|d| format!("-site:{d}"));
        for op in include.into_iter().chain(exclude) {
            if q.len() + 1 + op.len() > SITE_QUERY_BYTES_MAX {
                break;
            }
            q.push(' ');
            q.push_str(&op);
        }
        q
    }

    /// The cache key's part for the controls: every control, so two searches that differ in one never share an
    /// answer.
    pub fn key(&self) -> String {
        let sorted = |list: &[String]| {
            let mut list = list.to_vec();
            list.sort_unstable();
            list.join(",")
        };
        format!(
            "{}|{}|{}|{}|{}",
            self.time_range.map_or("any", TimeRange::name),
            self.region.code(),
            self.safesearch.name(),
            sorted(&self.include_domains),
            sorted(&self.exclude_domains)
        )
    }
}

/// The languages whose Wikipedia a search of another region may be sent to (the larger wikis, by ISO 639-1 code):
/// a region naming another language is not asked of Wikipedia, so a made-up code never sends a request to a host
/// that does not exist (whose failures would cool the configured wiki down).
const WIKI_LANGUAGES: [&str; 44] = [
    "ar", "bg", "ca", "cs", "da", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fr", "he", "hi", "hr", "hu", "id",
    "it", "ja", "ko", "lt", "lv", "ms", "nl", "no", "pl", "pt", "ro", "ru", "sk", "sl", "sr", "sv", "th", "tl", "tr",
    "uk", "ur", "vi", "zh", "gl", "bn",
];

/// The language of a configured Wikipedia URL whose host is a language's wiki (`en.wikipedia.org`).
fn wiki_host(endpoint: &str) -> Option<String> {
    let host = super::url::host(endpoint)?;
    let language = host.strip_suffix(".wikipedia.org")?;
    (!language.is_empty() && !language.contains('.')).then(|| language.to_owned())
}

/// The URL Wikipedia is asked at for `region`: the configured one, with its host's language replaced by the
/// region's when the host is a language's wiki (`en.wikipedia.org` to `de.wikipedia.org`).
pub fn wikipedia_url(endpoint: &str, region: &Region) -> String {
    let (Some(own), Some(language)) = (wiki_host(endpoint), region.language()) else { return endpoint.to_owned() };
    // The language is the host's first label, however the configured URL writes it (`EN.wikipedia.org`).
    let Some((scheme, rest)) = endpoint.split_once("://") else { return endpoint.to_owned() };
    let start = rest.split(['/', '?', '#']).next().and_then(|a| a.rfind('@')).map_or(0, |i| i + 1);
    match (rest.get(..start), rest.get(start..start + own.len()), rest.get(start + own.len()..)) {
        (Some(userinfo), Some(label), Some(after)) if own != language && label.eq_ignore_ascii_case(&own) => {
            format!("{scheme}://{userinfo}{language}{after}")
        }
        _ => endpoint.to_owned(),
    }
}

/// A day (days since 1970-01-01) as `YYYYMMDD`.
fn yyyymmdd(unix_day: u64) -> String {
    let c = crate::clock::Civil::from_unix_ms(unix_day.saturating_mul(crate::clock::DAY_MS));
    format!("{:04}{:02}{:02}", c.year, c.month, c.day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(body: &str) -> Result<Asked, &'static str> {
        let fields: Map<String, Value> = serde_json::from_str(body).unwrap();
        Asked::from_fields(&fields).map_err(|e| e.code)
    }

    fn controls(body: &str) -> Controls {
        asked(body).unwrap().resolve(&Region::parse("us-en").unwrap(), SafeSearch::Moderate)
    }

    #[test]
    fn controls_are_read_and_resolved() {
        let c = controls(r#"{}"#);
        assert_eq!((c.time_range, c.region.code(), c.safesearch), (None, "us-en", SafeSearch::Moderate));
        let c = controls(
            r#"{"time_range":"Week","region":"DE-de","safesearch":"strict",
                "include_domains":["Docs.Python.org.","bücher.de"],"exclude_domains":["pinterest.com"]}"#,
        );
        assert_eq!(c.time_range, Some(TimeRange::Week));
        assert_eq!(c.region.code(), "de-de");
        assert_eq!(c.safesearch, SafeSearch::Strict);
        assert_eq!(c.include_domains, ["docs.python.org", "xn--bcher-kva.de"]);
        assert_eq!(c.exclude_domains, ["pinterest.com"]);
        let nulls = r#"{"time_range":null,"region":null,"safesearch":null,"include_domains":null}"#;
        assert_eq!(asked(nulls), Ok(Asked::default()));
    }

    #[test]
    fn each_bad_control_has_its_code() {
        let cases = [
            (r#"{"time_range":"fortnight"}"#, "time_range_invalid"),
            (r#"{"time_range":7}"#, "time_range_invalid"),
            (r#"{"safesearch":"on"}"#, "safesearch_invalid"),
            (r#"{"safesearch":1}"#, "safesearch_invalid"),
            (r#"{"region":"germany"}"#, "region_invalid"),
            (r#"{"region":"de_de"}"#, "region_invalid"),
            (r#"{"region":"d1-de"}"#, "region_invalid"),
            (r#"{"region":5}"#, "region_not_string"),
            (r#"{"include_domains":"a.com"}"#, "include_domains_not_array"),
            (r#"{"include_domains":[5]}"#, "include_domains_not_string"),
            (r#"{"include_domains":[""]}"#, "include_domains_empty_name"),
            (r#"{"include_domains":["https://a.com"]}"#, "include_domains_url"),
            (r#"{"include_domains":["a.com/docs"]}"#, "include_domains_path"),
            (r#"{"include_domains":["a.com:8080"]}"#, "include_domains_port"),
            (r#"{"include_domains":["a..com"]}"#, "include_domains_invalid"),
            (r#"{"include_domains":["a_b.com"]}"#, "include_domains_invalid"),
            (r#"{"include_domains":["-a.com"]}"#, "include_domains_invalid"),
            (r#"{"exclude_domains":["  "]}"#, "exclude_domains_empty_name"),
            (r#"{"exclude_domains":["http://x.org/"]}"#, "exclude_domains_url"),
            (r#"{"exclude_domains":["x.org?q"]}"#, "exclude_domains_path"),
            (r#"{"exclude_domains":["[::1]:80"]}"#, "exclude_domains_port"),
            (r#"{"exclude_domains":{}}"#, "exclude_domains_not_array"),
        ];
        for (body, code) in cases {
            assert_eq!(asked(body), Err(code), "{body}");
        }
        let many: Vec<String> = (0..=DOMAINS_MAX).map(|i| format!("\"d{i}.com\"")).collect();
        let body = format!(r#"{{"exclude_domains":[{}]}}"#, many.join(","));
        assert_eq!(asked(&body), Err("exclude_domains_too_many"));
        let long = format!(r#"{{"include_domains":["{}.com"]}}"#, "a".repeat(64));
        assert_eq!(asked(&long), Err("include_domains_invalid"), "a label over 63 bytes");
    }

    /// The names as browsers read them.
    #[test]
    fn domains_are_read_as_browsers_read_hosts() {
        assert_eq!(domain("ÄPFEL.de"), Ok("xn--pfel-koa.de".to_owned()));
        for look_alike in ["ｅvil。com", "𝐞𝐯𝐢𝐥.com", "ⓔⓥⓘⓛ.com", "eviⅼ.com", "evil.cℴm", "EVIL.COM.", "xn--evil-.com"]
        {
            let expected = if look_alike.starts_with("xn--") { Err("invalid") } else { Ok("evil.com".to_owned()) };
            assert_eq!(domain(look_alike).map_err(|e| e.0), expected, "{look_alike}");
        }
        for numeric in ["127.0.0.1", "2130706433", "0x7f.1", "127.1", "0177.0.0.1"] {
            assert_eq!(domain(numeric), Ok("127.0.0.1".to_owned()), "{numeric}");
        }
        assert_eq!(domain("1.2.3.4.5").map_err(|e| e.0), Err("invalid"), "a number last, and no IPv4 address");
    }

    /// A name's bounds are checked before its conversion, whose cost is the square of a label's length: a 16 KB
    /// label of CJK characters took 52 ms, a 1 MB body would take minutes.
    #[test]
    fn long_names_are_refused_before_they_are_converted() {
        let started = std::time::Instant::now();
        assert_eq!(domain(&"例".repeat(100_000)).map_err(|e| e.0), Err("invalid"));
        assert_eq!(domain(&format!("{}.com", "例".repeat(64))).map_err(|e| e.0), Err("invalid"));
        assert!(domain(&format!("{}.com", "例".repeat(15))).is_ok(), "a label that fits in punycode");
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    }

    /// Issue 41: a host is the one a browser opens, whatever its notation: compatibility forms (fullwidth,
    /// mathematical, enclosed, Roman numerals, letterlike symbols), the ideographic full stops, escapes, a backslash
    /// (the end of the authority to a browser), numeric IPv4 forms.
    #[track_caller]
    fn left_out(c: &Controls, urls: &[&str]) {
        for url in urls {
            assert!(!c.admits(url), "{url:?}");
        }
    }

    #[test]
    fn a_host_written_to_look_like_another_is_that_host() {
        let x = controls(r#"{"exclude_domains":["evil.com"]}"#);
        let look_alikes = [
            "https://ｅvil.com/",
            "https://evil。com/",
            "https://evil%2Ecom/",
            "https://𝐞𝐯𝐢𝐥.com/",
            "https://ⓔⓥⓘⓛ.com/",
            "https://eviⅼ.com/",
            "https://evil.cℴm/",
            "https://ＥＶＩＬ．ＣＯＭ/",
            "https://ev\u{AD}il.com/",
            "https://www.𝓮𝓿𝓲𝓵.com/",
            "https://evil.com\\@good.com/",
        ];
        left_out(&x, &look_alikes);
        assert!(
            x.admits("https://good.com/")
                && x.admits("https://notevil.com/")
                && x.admits("https://good.com\\@evil.com/")
        );
        let ip = controls(r#"{"exclude_domains":["127.0.0.1"]}"#);
        left_out(
            &ip,
            &["http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://0177.0.0.1/", "http://１２７.０.０.１/"],
        );
        assert!(ip.admits("http://127.0.0.2/") && ip.admits("http://1.127.0.0.1.example/"));
        let c = controls(r#"{"include_domains":["python.org"]}"#);
        assert!(!c.admits("https://evil.com\\@python.org/"), "a backslash ends the authority in a browser");
        assert!(c.admits("https://python%2Eorg/") && c.admits("https://ｐｙｔｈｏｎ.org/"));
    }

    /// With a filter set, a host a browser cannot read is left out (without one, everything passes).
    #[test]
    fn a_host_no_browser_reads_passes_no_filter() {
        let x = controls(r#"{"exclude_domains":["evil.com"]}"#);
        let unreadable = [
            "https://evil\u{0}.com/",
            "https://e%ffvil.com/",
            "https://xn--evil-.com/",
            "https://1.2.3.4.5/",
            "https://a\u{2488}.com/",
            "https://exa mple.com/",
            "https:///",
        ];
        left_out(&x, &unreadable);
        assert!(controls("{}").admits("https://1.2.3.4.5/"));
    }

    #[test]
    fn duckduckgo_regions_name_their_language() {
        let lang = |code: &str| Region::parse(code).and_then(|r| r.language().map(str::to_owned));
        assert_eq!(lang("jp-jp").as_deref(), Some("ja"));
        assert_eq!(lang("kr-kr").as_deref(), Some("ko"));
        assert_eq!(lang("tw-tzh").as_deref(), Some("zh"));
        assert_eq!(lang("de-de").as_deref(), Some("de"));
        assert_eq!(lang("wt-wt"), None);
        assert_eq!(Region::parse("tw-tzhx"), None);
        assert_eq!(Region::parse("t-tzh"), None);
        let tw = controls(r#"{"region":"tw-tzh"}"#);
        assert_eq!(tw.ask(Kind::Searxng, "q", 0).params[0], ("language", "zh-TW".to_owned()));
        let us = Region::parse("us-en").unwrap();
        let wiki = "https://en.wikipedia.org/w/api.php";
        let jp = controls(r#"{"region":"jp-jp"}"#);
        assert_eq!(jp.unsupported(Kind::Wikipedia, wiki, &us), None);
        assert_eq!(wikipedia_url(wiki, &jp.region), "https://ja.wikipedia.org/w/api.php");
        let made_up = controls(r#"{"region":"zz-zz"}"#);
        assert_eq!(made_up.unsupported(Kind::Wikipedia, wiki, &us), Some("region"), "no request to zz.wikipedia.org");
    }

    #[test]
    fn a_language_tag_names_its_region_and_back() {
        let code = |t: &str| Region::from_tag(t).map(|r| r.code().to_owned());
        assert_eq!(code("de-DE").as_deref(), Some("de-de"));
        assert_eq!(code("en-GB").as_deref(), Some("uk-en"));
        assert_eq!(code("ja-JP").as_deref(), Some("jp-jp"));
        assert_eq!(code("de").as_deref(), Some("de-de"));
        assert_eq!(code("fr-CH").as_deref(), Some("ch-fr"));
        assert_eq!(code("zh-TW").as_deref(), Some("tw-tzh"), "DuckDuckGo's code, not tw-zh");
        assert_eq!(code("zh-HK").as_deref(), Some("hk-tzh"));
        assert_eq!(code("xx"), None, "a language without a region");
        assert_eq!(code("de-DE-1996"), None);
        // The tags the search page offers (searx::page::LANGUAGES) come back as they were.
        for tag in ["en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "it-IT", "nl-NL", "pt-BR", "pl-PL", "sv-SE", "ja-JP"] {
            assert_eq!(Region::from_tag(tag).and_then(|r| r.tag()).as_deref(), Some(tag));
        }
        assert_eq!(Region::from_tag("zh-TW").and_then(|r| r.tag()).as_deref(), Some("zh-TW"));
    }

    #[test]
    fn the_pages_are_asked_in_the_region_s_language() {
        let al = |code: &str| Region::parse(code).map(|r| r.accept_language());
        assert_eq!(al("wt-wt").as_deref(), Some("en-US,en;q=0.5"), "worldwide: as before the controls");
        assert_eq!(al("de-de").as_deref(), Some("de-DE,de;q=0.9,en;q=0.5"));
        assert_eq!(al("ch-fr").as_deref(), Some("fr-CH,fr;q=0.9,en;q=0.5"));
        assert_eq!(al("uk-en").as_deref(), Some("en-GB,en;q=0.9"));
        assert_eq!(al("us-en").as_deref(), Some("en-US,en;q=0.9"));
        assert_eq!(al("jp-jp").as_deref(), Some("ja-JP,ja;q=0.9,en;q=0.5"));
        assert_eq!(al("xa-ar").as_deref(), Some("ar,en;q=0.5"), "a region of no country: the language alone");
        assert_eq!(al("xl-es").as_deref(), Some("es,en;q=0.5"));
    }

    #[test]
    fn a_domain_covers_its_subdomains_and_nothing_else() {
        let c = controls(r#"{"include_domains":["python.org"],"exclude_domains":["wiki.python.org"]}"#);
        assert!(c.admits("https://docs.python.org/3/"));
        assert!(c.admits("https://python.org/"));
        assert!(c.admits("https://PYTHON.ORG./about"));
        assert!(!c.admits("https://wiki.python.org/moin/"), "excluded below an included domain");
        assert!(!c.admits("https://notpython.org/"), "a suffix is not a subdomain");
        assert!(!c.admits("https://python.org.evil.com/"));
        assert!(!c.admits("not a url"));
        assert!(controls("{}").admits("not a url"), "no filters: everything");
    }

    /// A host that is no domain name a filter could hold (an underscore, an IPv6 literal) is a host all the same:
    /// covered by a domain it is under, never by another.
    #[test]
    fn a_host_no_filter_can_name_is_covered_by_its_domain() {
        let x = controls(r#"{"exclude_domains":["evil.com"]}"#);
        assert!(x.admits("https://my_host.example.com/"));
        assert!(x.admits("http://[::1]:8080/"));
        assert!(!x.admits("https://my_host.evil.com/"), "an excluded domain's host with an underscore");
        assert!(!x.admits("https://My_Host.Evil.com./"));
        let c = controls(r#"{"include_domains":["example.com"]}"#);
        assert!(c.admits("https://my_host.example.com/"));
        assert!(!c.admits("http://[::1]/"));
    }

    /// Each fault of a list of domains has its field's own code, and each named control its own.
    #[test]
    fn each_fault_has_its_fields_code() {
        let too_many: Vec<String> = (0..=DOMAINS_MAX).map(|i| format!("\"d{i}.com\"")).collect();
        let too_many = format!("[{}]", too_many.join(","));
        let faults = [
            ("\"a.com\"", "not_array"),
            (too_many.as_str(), "too_many"),
            ("[7]", "not_string"),
            ("[\" \"]", "empty_name"),
            ("[\"https://a.com\"]", "url"),
            ("[\"a.com/x\"]", "path"),
            ("[\"a.com:80\"]", "port"),
            ("[\"a b.com\"]", "invalid"),
        ];
        for field in ["include_domains", "exclude_domains"] {
            for (value, fault) in faults {
                let code = asked(&format!(r#"{{"{field}":{value}}}"#)).map(|_| ()).unwrap_err();
                assert_eq!(code, format!("{field}_{fault}"), "{field}: {value}");
            }
        }
        assert_eq!(asked(r#"{"time_range":"decade"}"#), Err("time_range_invalid"));
        assert_eq!(asked(r#"{"safesearch":7}"#), Err("safesearch_invalid"));
    }

    #[test]
    fn days_are_written_as_mojeek_reads_them() {
        assert_eq!(yyyymmdd(0), "19700101");
        assert_eq!(yyyymmdd(11_016), "20000229");
        assert_eq!(yyyymmdd(20_000), "20241004");
    }

    #[test]
    fn each_source_gets_the_controls_in_its_own_parameters() {
        let c = controls(r#"{"time_range":"week","region":"de-de","safesearch":"strict"}"#);
        let day = 20_000; // 2024-10-04
        let params = |k: Kind| c.ask(k, "q", day).params;
        let own = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
            pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
        };
        assert_eq!(params(Kind::DdgHtml), own(&[("kl", "de-de"), ("df", "w"), ("kp", "1")]));
        assert_eq!(params(Kind::DdgLite), params(Kind::DdgHtml));
        assert_eq!(params(Kind::Searxng), own(&[("time_range", "week"), ("language", "de-DE"), ("safesearch", "2")]));
        assert_eq!(params(Kind::Brave), own(&[("tf", "pw")]));
        assert_eq!(
            c.ask(Kind::Brave, "q", day).cookie_header().as_deref(),
            Some("country=de; safesearch=strict; useLocation=0")
        );
        assert_eq!(
            params(Kind::Bing),
            own(&[("filters", "ex1:\"ez2\""), ("cc", "DE"), ("setlang", "de"), ("adlt", "strict")])
        );
        assert_eq!(params(Kind::Mojeek), own(&[("since", "20240927"), ("reg", "de"), ("lb", "de"), ("safe", "1")]));
        let uk = controls(r#"{"region":"uk-en"}"#);
        assert_eq!(uk.ask(Kind::Mojeek, "q", day).params, own(&[("reg", "uk"), ("lb", "en"), ("safe", "1")]));
        let us = controls(r#"{"region":"us-en"}"#);
        assert_eq!(us.ask(Kind::Mojeek, "q", day).params, own(&[("lb", "en"), ("safe", "1")]), "no US region");
        let year = controls(r#"{"time_range":"year","region":"wt-wt","safesearch":"off"}"#);
        assert_eq!(
            year.ask(Kind::Bing, "q", day).params,
            own(&[("filters", "ex1:\"ez5_19635_20000\""), ("adlt", "off")])
        );
        assert_eq!(
            year.ask(Kind::Searxng, "q", day).params,
            own(&[("time_range", "year"), ("language", "all"), ("safesearch", "0")])
        );
        assert_eq!(year.ask(Kind::DdgLite, "q", day).params, own(&[("kl", "wt-wt"), ("df", "y"), ("kp", "-2")]));
        let uk = controls(r#"{"region":"uk-en"}"#);
        assert_eq!(uk.ask(Kind::Searxng, "q", day).params[0], ("language", "en-GB".to_owned()));
    }

    #[test]
    fn domains_go_out_as_site_operators_that_fit() {
        let c = controls(r#"{"include_domains":["docs.python.org"],"exclude_domains":["a.com","b.org"]}"#);
        assert_eq!(c.ask(Kind::Bing, "asyncio", 0).query, "asyncio site:docs.python.org -site:a.com -site:b.org");
        assert_eq!(c.ask(Kind::Wikipedia, "asyncio", 0).query, "asyncio", "Wikipedia's search reads no operators");
        let two = controls(r#"{"include_domains":["a.com","b.com"]}"#);
        assert_eq!(two.ask(Kind::DdgHtml, "q", 0).query, "q", "several: enforced on the results alone");
        let many: Vec<String> = (0..20).map(|i| format!("\"{}{i}.com\"", "d".repeat(40))).collect();
        let c = controls(&format!(r#"{{"exclude_domains":[{}]}}"#, many.join(",")));
        let q = c.ask(Kind::DdgHtml, "q", 0).query;
        assert!(q.len() <= SITE_QUERY_BYTES_MAX && q.matches("-site:").count() >= 8, "{}", q.len());
    }

    #[test]
    fn wikipedia_is_not_asked_for_what_it_cannot_honour() {
        let us = Region::parse("us-en").unwrap();
        let wiki = "https://en.wikipedia.org/w/api.php";
        let mirror = "http://127.0.0.1:9/w/api.php";
        let check = |body: &str, endpoint: &str| controls(body).unsupported(Kind::Wikipedia, endpoint, &us);
        assert_eq!(check("{}", wiki), None);
        assert_eq!(check(r#"{"time_range":"day"}"#, wiki), Some("time_range"));
        assert_eq!(check(r#"{"safesearch":"strict"}"#, wiki), Some("safesearch"));
        assert_eq!(check(r#"{"safesearch":"off"}"#, wiki), None);
        assert_eq!(check(r#"{"region":"de-de"}"#, wiki), None, "asked at de.wikipedia.org");
        assert_eq!(check(r#"{"region":"de-de"}"#, mirror), Some("region"));
        assert_eq!(check(r#"{"region":"uk-en"}"#, mirror), None, "the same language");
        assert_eq!(check(r#"{"include_domains":["python.org"]}"#, wiki), Some("include_domains"));
        assert_eq!(check(r#"{"include_domains":["wikipedia.org"]}"#, wiki), None);
        assert_eq!(check(r#"{"exclude_domains":["en.wikipedia.org"]}"#, wiki), Some("exclude_domains"));
        assert_eq!(controls(r#"{"time_range":"day"}"#).unsupported(Kind::Bing, wiki, &us), None);
        let de = Region::parse("de-de").unwrap();
        assert_eq!(wikipedia_url(wiki, &de), "https://de.wikipedia.org/w/api.php");
        assert_eq!(wikipedia_url(mirror, &de), mirror);
        assert_eq!(wikipedia_url(wiki, &Region::parse("wt-wt").unwrap()), wiki);
        // The host as the configuration writes it: the region's wiki all the same, as `unsupported` believes.
        let upper = "https://EN.Wikipedia.org/w/api.php";
        assert_eq!(wikipedia_url(upper, &de), "https://de.Wikipedia.org/w/api.php");
        assert_eq!(check(r#"{"region":"de-de","exclude_domains":["en.wikipedia.org"]}"#, upper), None);
        let with_user = "https://u@EN.wikipedia.org/w/api.php";
        assert_eq!(wikipedia_url(with_user, &de), "https://u@de.wikipedia.org/w/api.php");
    }

    #[test]
    fn the_key_differs_in_every_control() {
        let bodies = [
            "{}",
            r#"{"time_range":"day"}"#,
            r#"{"region":"de-de"}"#,
            r#"{"safesearch":"off"}"#,
            r#"{"include_domains":["a.com"]}"#,
            r#"{"exclude_domains":["a.com"]}"#,
        ];
        let keys: std::collections::HashSet<String> = bodies.iter().map(|b| controls(b).key()).collect();
        assert_eq!(keys.len(), bodies.len());
        let ab = controls(r#"{"include_domains":["a.com","b.com"]}"#).key();
        assert_eq!(ab, controls(r#"{"include_domains":["b.com","a.com"]}"#).key(), "the same filters in any order");
    }
}
