//! The bodies of `POST /tavily/search` and `POST /tavily/extract`, parsed once into typed calls. Every field Tavily's
//! clients send is either honoured or refused with a 400 naming it; a field we do not know is refused too (Tavily's
//! SDK passes unknown keyword arguments through as body fields: a misspelt control must not pass unnoticed).

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::search::controls::Region;
use crate::search::{SearchRequest, MAX_RESULTS_MAX};

/// URLs one extract call may name (Tavily's limit).
pub const URLS_MAX: usize = 20;
/// Passages a search result's `content` holds at most with `search_depth: advanced` (Tavily's range), and the
/// default.
pub const SEARCH_CHUNKS_MAX: usize = 3;
/// Passages an extracted page is cut to at most with a `query` (Tavily's range).
pub const EXTRACT_CHUNKS_MAX: usize = 5;
/// Bytes of a URL that cannot be read repeated in its `failed_results` entry at most.
pub const ASKED_BYTES_MAX: usize = 256;
/// Longest `timeout` or `fetch_timeout` read (a day); a longer one is read as this.
const SECONDS_MAX: f64 = 86_400.0;
/// The window of `topic: news` when `days` is not given (Tavily's default).
pub const NEWS_DAYS_DEFAULT: u64 = 7;
/// Longest `days` (ten years): past it the bound is no bound.
pub const DAYS_MAX: u64 = 3_650;

/// The fields of a search body, each read below.
const SEARCH_FIELDS: [&str; 28] = [
    "query",
    "max_results",
    "search_depth",
    "topic",
    "time_range",
    "days",
    "start_date",
    "end_date",
    "max_age_hours",
    "include_domains",
    "exclude_domains",
    "include_domains_mode",
    "include_answer",
    "include_raw_content",
    "include_images",
    "include_image_descriptions",
    "include_favicon",
    "include_usage",
    "country",
    "language",
    "filter_by_language",
    "chunks_per_source",
    "auto_parameters",
    "exact_match",
    "timeout",
    "fetch_timeout",
    "cache_fallback",
    "api_key",
];

/// The fields of an extract body.
const EXTRACT_FIELDS: [&str; 10] = [
    "urls",
    "format",
    "extract_depth",
    "query",
    "chunks_per_source",
    "include_images",
    "include_favicon",
    "include_usage",
    "timeout",
    "api_key",
];

/// How a page is given: markdown as extracted, or its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    General,
    News,
    Finance,
}

impl Topic {
    pub fn name(self) -> &'static str {
        match self {
            Topic::General => "general",
            Topic::News => "news",
            Topic::Finance => "finance",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchCall {
    /// The search asked of the sources (at least one result; `max_results: 0` asks for the default and gives none).
    pub search: SearchRequest,
    /// 0 to `MAX_RESULTS_MAX`.
    pub max_results: usize,
    pub advanced: bool,
    /// Passages in each `content` with `advanced`.
    pub chunks: usize,
    pub raw: Option<Format>,
    pub answer: bool,
    pub favicon: bool,
    pub usage: bool,
    pub topic: Topic,
    /// The first day (days since 1970) a dated result may have (`days` with news, `start_date`: the later of the
    /// two); results the source dates earlier are left out, undated ones stay.
    pub oldest: Option<u64>,
    /// The last day (days since 1970) a dated result may have (`end_date`).
    pub newest: Option<u64>,
    /// `include_domains_mode: prefer`: these domains' results first, the others after.
    pub prefer: Vec<String>,
    /// `exact_match`: the query's quoted phrases, each of which a result's title or snippet must hold.
    pub phrases: Vec<String>,
    pub auto_parameters: bool,
    /// The depth as asked (`basic`, `advanced`, `fast`, `ultra-fast`), for `auto_parameters`.
    pub depth: &'static str,
    /// The API key, as older clients send it in the body.
    pub api_key: Option<String>,
    /// `fetch_timeout`: the pages' deadline when shorter than the instance's.
    pub fetch_timeout: Option<std::time::Duration>,
}

/// A URL an extract call asks for: checked as the reader checks its own, or what was asked and why it cannot be
/// read (a `failed_results` entry).
pub type Asked = Result<String, (String, String)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractCall {
    /// Each URL asked, in order.
    pub urls: Vec<Asked>,
    pub format: Format,
    /// What the pages are read for (empty: nothing said), and how many passages of each are given then.
    pub query: String,
    pub chunks: usize,
    pub favicon: bool,
    pub usage: bool,
    pub api_key: Option<String>,
    /// `timeout`: the whole call's deadline, when shorter than the instance's (`EXTRACT_CALL_MAX`).
    pub timeout: Option<std::time::Duration>,
}

/// An extract call's pages are read within one fetch deadline (`WEBSEARCHD_FETCH_TIMEOUT_MS`) for each round of
/// `WEBSEARCHD_EXTRACT_PARALLEL` pages, and never longer than this, whatever `timeout` asks.
pub const EXTRACT_CALL_MAX: std::time::Duration = std::time::Duration::from_secs(30);

/// What the instance is, for the fields honoured by its configuration: today (days since 1970), how long it keeps
/// answers (`max_age_hours`), and how long a search can take at most (its deadline and the pages' after it:
/// `timeout`).
#[derive(Debug, Clone, Copy)]
pub struct Context {
    pub today: u64,
    pub cache_ttl_s: u64,
    pub answer_within: std::time::Duration,
}

impl SearchCall {
    pub fn from_json(body: &[u8], context: Context) -> Result<SearchCall, ApiError> {
        SearchCall::from_fields(&crate::search::json_object(body)?, context)
    }

    pub fn from_fields(fields: &Map<String, Value>, context: Context) -> Result<SearchCall, ApiError> {
        known(fields, &SEARCH_FIELDS)?;
        let max_results = crate::search::integer_field(
            fields,
            "max_results",
            crate::search::MAX_RESULTS_DEFAULT,
            0..=MAX_RESULTS_MAX,
            ["max_results_out_of_range", "max_results_not_integer"],
        )?;
        let depth = one_of(fields, "search_depth", &["basic", "advanced", "fast", "ultra-fast"])?.unwrap_or("basic");
        let topic = match one_of(fields, "topic", &["general", "news", "finance"])? {
            Some("news") => Topic::News,
            Some("finance") => Topic::Finance,
            _ => Topic::General,
        };
        let chunks = crate::search::integer_field(
            fields,
            "chunks_per_source",
            SEARCH_CHUNKS_MAX,
            1..=SEARCH_CHUNKS_MAX,
            ["chunks_per_source_out_of_range", "chunks_per_source_not_integer"],
        )?;
        if fields.get("chunks_per_source").is_some_and(|v| !v.is_null()) && depth != "advanced" {
            return Err(refused("chunks_per_source", "passages are read with `search_depth: advanced` only"));
        }
        let raw = match fields.get("include_raw_content") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(Format::Markdown),
            Some(Value::String(s)) if s == "markdown" => Some(Format::Markdown),
            Some(Value::String(s)) if s == "text" => Some(Format::Text),
            Some(_) => return Err(invalid("include_raw_content", "true, false, \"markdown\" or \"text\"")),
        };
        let answer = match fields.get("include_answer") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(Value::String(s)) if s == "basic" || s == "advanced" => true,
            Some(_) => return Err(invalid("include_answer", "true, false, \"basic\" or \"advanced\"")),
        };
        let flag = |name: &str| boolean(fields, name);
        let (favicon, usage, auto_parameters) =
            (flag("include_favicon")?, flag("include_usage")?, flag("auto_parameters")?);
        // Presentation fields with nothing to give: `images` is empty.
        flag("include_images")?;
        flag("include_image_descriptions")?;
        if let Some(t) = seconds(fields, "timeout")?.filter(|t| *t < context.answer_within) {
            return Err(refused(
                "timeout",
                format!(
                    "a search here may take up to {} s (WEBSEARCHD_SEARCH_DEADLINE_MS and the pages' \
                     WEBSEARCHD_FETCH_TIMEOUT_MS), more than {:.1} s",
                    context.answer_within.as_secs(),
                    t.as_secs_f64()
                ),
            ));
        }
        let fetch_timeout = seconds(fields, "fetch_timeout")?;
        if flag("filter_by_language")? {
            return Err(refused(
                "filter_by_language",
                "results are not filtered by their language: `language` asks the sources for results in it, which \
                 is what they give",
            ));
        }
        if flag("cache_fallback")? {
            return Err(refused("cache_fallback", "there is no cache of other searches to fall back on"));
        }
        if let Some(hours) = optional_integer(fields, "max_age_hours")? {
            if context.cache_ttl_s > hours.saturating_mul(3_600) {
                return Err(refused(
                    "max_age_hours",
                    format!(
                        "this instance keeps answers for {} s (WEBSEARCHD_CACHE_TTL_S), longer than {hours} h",
                        context.cache_ttl_s
                    ),
                ));
            }
        }

        // The search itself: the fields `SearchRequest` reads (its errors name them).
        let mut search_fields = Map::new();
        for name in ["query", "exclude_domains"] {
            if let Some(v) = fields.get(name) {
                search_fields.insert(name.into(), v.clone());
            }
        }
        search_fields.insert("max_results".into(), max_results.max(1).into());
        let prefer_mode = one_of(fields, "include_domains_mode", &["restrict", "prefer"])? == Some("prefer");
        let mut prefer = Vec::new();
        if let Some(v) = fields.get("include_domains") {
            search_fields.insert("include_domains".into(), v.clone());
        }
        let time_range = match fields.get("time_range") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(match s.trim().to_ascii_lowercase().as_str() {
                "day" | "d" => "day",
                "week" | "w" => "week",
                "month" | "m" => "month",
                "year" | "y" => "year",
                _ => return Err(invalid("time_range", "day, week, month or year (or d, w, m, y)")),
            }),
            Some(_) => return Err(invalid("time_range", "day, week, month or year (or d, w, m, y)")),
        };
        let days = optional_integer(fields, "days")?;
        if days == Some(0) {
            return Err(invalid("days", "a whole number of days from 1"));
        }
        // As Tavily reads it: `days` bounds news (7 by default), and a general search is not bounded by it
        // (tavily-python's qna_search sends `days: 7` with `topic: general`).
        let days = if topic == Topic::News { days.or(Some(NEWS_DAYS_DEFAULT)) } else { None };
        let days = days.filter(|d| *d <= DAYS_MAX);
        let start = date(fields, "start_date")?;
        let end = date(fields, "end_date")?;
        if start.is_some_and(|s| s > context.today + 1) {
            return Err(refused("start_date", "it is after today"));
        }
        // A day of slack: a caller west of UTC names its own today.
        if end.is_some_and(|e| e + 1 < context.today) {
            return Err(refused(
                "end_date",
                "the sources cannot be asked for results before a date; an end_date of today or later is served",
            ));
        }
        if start.zip(end).is_some_and(|(s, e)| s > e) {
            return Err(refused("start_date", "it is after end_date"));
        }
        // The later of the two bounds.
        let oldest = start.into_iter().chain(days.map(|d| context.today.saturating_sub(d))).max();
        // The sources are asked for the shortest range that holds the window (a window of 3 days asks for a week);
        // `oldest` then leaves out what their dates put before it.
        let window = oldest.map(|day| context.today.saturating_sub(day).max(1));
        let range = window.and_then(|w| match w {
            0..=1 => Some("day"),
            2..=7 => Some("week"),
            8..=31 => Some("month"),
            32..=365 => Some("year"),
            _ => None,
        });
        // With both, the narrower wins: a time_range of a day and days 7 is a day.
        let order = |r: &str| ["day", "week", "month", "year"].iter().position(|n| *n == r);
        let narrowest = match (time_range, range) {
            (Some(a), Some(b)) => Some(if order(a) <= order(b) { a } else { b }),
            (a, b) => a.or(b),
        };
        if let Some(r) = narrowest {
            search_fields.insert("time_range".into(), r.into());
        }
        if let Some(region) = region(fields)? {
            search_fields.insert("region".into(), region.code().into());
        }
        let phrases = if flag("exact_match")? { phrases_of(fields) } else { Vec::new() };
        // Results the door leaves out after the search (by date, phrase) or puts first (prefer): the search asks
        // for as many as a search may have, so that `max_results` are left after them.
        if oldest.is_some() || end.is_some() || !phrases.is_empty() || prefer_mode {
            search_fields.insert("max_results".into(), MAX_RESULTS_MAX.into());
        }
        let mut search = SearchRequest::from_fields(&search_fields)?;
        if prefer_mode {
            prefer = std::mem::take(&mut search.controls.include_domains);
        }
        Ok(SearchCall {
            search,
            max_results,
            advanced: depth == "advanced",
            chunks,
            raw,
            answer,
            favicon,
            usage,
            topic,
            oldest,
            newest: end,
            prefer,
            phrases,
            auto_parameters,
            depth: match depth {
                "advanced" => "advanced",
                "fast" => "fast",
                "ultra-fast" => "ultra-fast",
                _ => "basic",
            },
            api_key: api_key(fields)?,
            fetch_timeout,
        })
    }

    /// Pages fetched for the call: its first results' (as many as a search extracts in one call) when they give
    /// raw content, passages or the answer; none otherwise.
    pub fn pages(&self) -> usize {
        if self.raw.is_some() || self.answer || self.advanced {
            self.max_results.min(crate::search::EXTRACT_PAGES_MAX)
        } else {
            0
        }
    }
}

impl ExtractCall {
    pub fn from_json(body: &[u8]) -> Result<ExtractCall, ApiError> {
        ExtractCall::from_fields(&crate::search::json_object(body)?)
    }

    pub fn from_fields(fields: &Map<String, Value>) -> Result<ExtractCall, ApiError> {
        known(fields, &EXTRACT_FIELDS)?;
        let urls = match fields.get("urls") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid_field("urls_missing", "urls", "the field `urls` is required"))
            }
            Some(v @ Value::String(_)) => url_list(std::slice::from_ref(v))?,
            Some(Value::Array(items)) => url_list(items)?,
            Some(_) => return Err(invalid("urls", "a URL or a list of URLs")),
        };
        let format = match one_of(fields, "format", &["markdown", "text"])? {
            Some("text") => Format::Text,
            _ => Format::Markdown,
        };
        one_of(fields, "extract_depth", &["basic", "advanced"])?;
        let query = match fields.get("query") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(q)) => q.split_whitespace().collect::<Vec<_>>().join(" "),
            Some(_) => return Err(ApiError::invalid_field("query_not_string", "query", "`query` must be a string")),
        };
        if query.len() > crate::extract::focus::QUERY_BYTES_MAX {
            return Err(ApiError::invalid_field(
                "query_too_long",
                "query",
                format!("`query` is at most {} bytes", crate::extract::focus::QUERY_BYTES_MAX),
            ));
        }
        let chunks = crate::search::integer_field(
            fields,
            "chunks_per_source",
            3,
            1..=EXTRACT_CHUNKS_MAX,
            ["chunks_per_source_out_of_range", "chunks_per_source_not_integer"],
        )?;
        if fields.get("chunks_per_source").is_some_and(|v| !v.is_null()) && query.is_empty() {
            return Err(refused("chunks_per_source", "passages are chosen for a `query`, and none is given"));
        }
        let flag = |name: &str| boolean(fields, name);
        flag("include_images")?;
        let timeout = seconds(fields, "timeout")?;
        let (favicon, usage) = (flag("include_favicon")?, flag("include_usage")?);
        Ok(ExtractCall { urls, format, query, chunks, favicon, usage, api_key: api_key(fields)?, timeout })
    }

    /// The URLs that can be read (the others are the call's `failed_results` without a fetch).
    pub fn readable(&self) -> Vec<String> {
        self.urls.iter().filter_map(|u| u.as_ref().ok().cloned()).collect()
    }
}

/// The URLs of `urls` (1 to `URLS_MAX` strings): each checked as the reader checks its own
/// (`mcp::tools::url_argument`); one that is not a URL it could read is kept with why, for `failed_results`, as
/// Tavily answers it. What is not a string is a 400.
fn url_list(items: &[Value]) -> Result<Vec<Asked>, ApiError> {
    crate::reader::url_count(items.len(), URLS_MAX)?;
    let mut urls = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(text) = item else {
            return Err(ApiError::invalid_field("url_not_string", &format!("urls[{i}]"), "each URL must be a string"));
        };
        let checked = crate::mcp::tools::url_argument(Some(item), &format!("urls[{i}]"));
        // A URL too long to read is kept in part: the answer repeats what was asked, within bounds.
        let asked =
            || text.get(..crate::html::floor_char_boundary(text, ASKED_BYTES_MAX)).unwrap_or_default().to_owned();
        urls.push(checked.map_err(|e| (asked(), format!("{}: {}", e.code, e.message))));
    }
    Ok(urls)
}

/// `api_key` in the body (older clients send it there rather than in `Authorization`).
fn api_key(fields: &Map<String, Value>) -> Result<Option<String>, ApiError> {
    match fields.get("api_key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(k)) => Ok(Some(k.trim().to_owned()).filter(|k| !k.is_empty())),
        Some(_) => Err(invalid("api_key", "a string")),
    }
}

/// A field of no call of this door: 400 naming it and the fields read.
fn known(fields: &Map<String, Value>, names: &[&str]) -> Result<(), ApiError> {
    match fields.keys().find(|k| !names.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(ApiError::invalid_field(
            "field_unknown",
            k,
            format!("the field `{k}` is not one this door reads; it reads {}", names.join(", ")),
        )),
    }
}

/// 400 for a field of a wrong value: `expected` says what it may be.
fn invalid(field: &str, expected: &str) -> ApiError {
    ApiError::invalid_field("field_invalid", field, format!("`{field}` must be {expected}"))
}

/// 400 for a field the door cannot honour, and why.
fn refused(field: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::invalid_field("field_not_honoured", field, format!("`{field}` cannot be honoured here: {why}"))
}

/// A string field that is one of `names`, or absent.
fn one_of<'n>(fields: &Map<String, Value>, field: &str, names: &[&'n str]) -> Result<Option<&'n str>, ApiError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => names
            .iter()
            .copied()
            .find(|n| n.eq_ignore_ascii_case(s.trim()))
            .map(Some)
            .ok_or_else(|| invalid(field, &format!("one of {}", names.join(", ")))),
        Some(_) => Err(invalid(field, &format!("one of {}", names.join(", ")))),
    }
}

fn boolean(fields: &Map<String, Value>, field: &str) -> Result<bool, ApiError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(field, "true or false")),
    }
}

/// A whole number of at least 0, or absent.
fn optional_integer(fields: &Map<String, Value>, field: &str) -> Result<Option<u64>, ApiError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| invalid(field, "a whole number from 0")),
        Some(_) => Err(invalid(field, "a whole number from 0")),
    }
}

/// A time in seconds (`timeout`, `fetch_timeout`): a positive number (at most a day).
fn seconds(fields: &Map<String, Value>, field: &str) -> Result<Option<std::time::Duration>, ApiError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|s| *s > 0.0)
            .map(|s| Some(std::time::Duration::from_secs_f64(s.min(SECONDS_MAX))))
            .ok_or_else(|| invalid(field, "a number of seconds above 0")),
        Some(_) => Err(invalid(field, "a number of seconds above 0")),
    }
}

/// A `YYYY-MM-DD` date as days since 1970-01-01.
fn date(fields: &Map<String, Value>, field: &str) -> Result<Option<u64>, ApiError> {
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().len() == 10 => {
            crate::clock::parse_rfc3339_ms(&format!("{}T00:00:00Z", s.trim()))
                .map(|ms| Some(ms / 86_400_000))
                .ok_or_else(|| invalid(field, "a date written YYYY-MM-DD"))
        }
        Some(_) => Err(invalid(field, "a date written YYYY-MM-DD")),
    }
}

/// The region of `country` (a country's English name, as Tavily takes it) and `language` (a language tag): the
/// country's region in the language asked when DuckDuckGo has it, else the country's own; a language alone, its main
/// region.
fn region(fields: &Map<String, Value>) -> Result<Option<Region>, ApiError> {
    let text = |field: &str| match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_ascii_lowercase())),
        Some(_) => Err(invalid(field, "a non-empty string")),
    };
    let country = match text("country")? {
        None => None,
        Some(name) => Some(
            COUNTRY_REGIONS.iter().find(|(n, _)| *n == name).and_then(|(_, r)| Region::parse(r)).ok_or_else(|| {
                ApiError::invalid_field(
                    "country_unsupported",
                    "country",
                    format!(
                        "no source searches in the country {name:?}; the countries served are {}",
                        COUNTRY_REGIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ),
                )
            })?,
        ),
    };
    let Some(language) = text("language")? else { return Ok(country) };
    let tagged = match country.as_ref().and_then(Region::country) {
        Some(c) => Region::from_tag(&format!("{language}-{c}")),
        None => Region::from_tag(&language),
    };
    match (tagged, country) {
        (Some(r), _) => Ok(Some(r)),
        (None, Some(c)) => Ok(Some(c)),
        (None, None) => Err(invalid("language", "a language (en, de) or a language and country (en-US)")),
    }
}

/// The quoted phrases of the query (`"rust async" runtime` -> `rust async`), lowercase, inner spaces collapsed.
fn phrases_of(fields: &Map<String, Value>) -> Vec<String> {
    let query = fields.get("query").and_then(Value::as_str).unwrap_or("");
    let phrase = |p: &str| p.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    query.split('"').skip(1).step_by(2).map(phrase).filter(|p| !p.is_empty()).collect()
}

/// Tavily's country names (lowercase English) and the region the sources search them in (DuckDuckGo's codes).
pub const COUNTRY_REGIONS: [(&str, &str); 61] = [
    ("argentina", "ar-es"),
    ("australia", "au-en"),
    ("austria", "at-de"),
    ("belgium", "be-nl"),
    ("brazil", "br-pt"),
    ("bulgaria", "bg-bg"),
    ("canada", "ca-en"),
    ("chile", "cl-es"),
    ("china", "cn-zh"),
    ("colombia", "co-es"),
    ("croatia", "hr-hr"),
    ("czech republic", "cz-cs"),
    ("czechia", "cz-cs"),
    ("denmark", "dk-da"),
    ("estonia", "ee-et"),
    ("finland", "fi-fi"),
    ("france", "fr-fr"),
    ("germany", "de-de"),
    ("greece", "gr-el"),
    ("hong kong", "hk-tzh"),
    ("hungary", "hu-hu"),
    ("india", "in-en"),
    ("indonesia", "id-id"),
    ("ireland", "ie-en"),
    ("israel", "il-he"),
    ("italy", "it-it"),
    ("japan", "jp-jp"),
    ("latvia", "lv-lv"),
    ("lithuania", "lt-lt"),
    ("malaysia", "my-ms"),
    ("mexico", "mx-es"),
    ("netherlands", "nl-nl"),
    ("new zealand", "nz-en"),
    ("norway", "no-no"),
    ("pakistan", "pk-en"),
    ("peru", "pe-es"),
    ("philippines", "ph-en"),
    ("poland", "pl-pl"),
    ("portugal", "pt-pt"),
    ("romania", "ro-ro"),
    ("russia", "ru-ru"),
    ("saudi arabia", "xa-ar"),
    ("singapore", "sg-en"),
    ("slovakia", "sk-sk"),
    ("slovenia", "sl-sl"),
    ("south africa", "za-en"),
    ("south korea", "kr-kr"),
    ("spain", "es-es"),
    ("sweden", "se-sv"),
    ("switzerland", "ch-de"),
    ("taiwan", "tw-tzh"),
    ("thailand", "th-th"),
    ("turkey", "tr-tr"),
    ("ukraine", "ua-uk"),
    ("united arab emirates", "xa-ar"),
    ("united kingdom", "uk-en"),
    ("united states", "us-en"),
    ("venezuela", "ve-es"),
    ("vietnam", "vn-vi"),
    ("egypt", "xa-ar"),
    ("morocco", "xa-ar"),
];

#[cfg(test)]
mod tests;
