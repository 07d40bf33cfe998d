//! Configuration: environment variables (optionally filled in from a systemd-style environment file), parsed once
//! into a typed `Config`. Every variable is listed in `VARS` with its default and bounds; docs/configuration.md's tables
//! say the same and a test keeps the two in step. An invalid value stops start-up with a message that names the
//! variable and what it allows.
//!
//! This module reads no sockets and starts nothing, and reads no file but the env file (`Source::from_process` only
//! looks whether `./data` holds an earlier version's state); `Config::resolved` keeps, for `check-config`, where each
//! value came from, with secrets hidden.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod vars;

pub use vars::{VarDoc, VARS};

/// The x402 facilitator asked unless `WEBSEARCHD_FACILITATOR_URL` names another: testnets only.
pub const FACILITATOR_URL_DEFAULT: &str = "https://x402.org/facilitator";
/// The fewest workers by default, whatever the cores (`WEBSEARCHD_WORKERS`).
pub const WORKERS_MIN_DEFAULT: usize = 8;

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// Without a trailing slash.
    pub public_url: String,
    pub state_dir: PathBuf,
    pub workers: usize,
    pub queue_depth: usize,
    pub connections_max: usize,
    pub connections_per_address_max: usize,
    pub trusted_proxies: Vec<crate::http::client_addr::Cidr>,
    pub forwarded_header: crate::http::client_addr::ForwardedHeader,
    pub header_bytes_max: usize,
    pub headers_max: usize,
    pub body_bytes_max: usize,
    pub request_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub write_timeout_ms: u64,
    pub keepalive_requests_max: u32,
    pub shutdown_grace_ms: u64,
    pub sources: Vec<crate::search::sources::Kind>,
    pub ddg_html_url: String,
    pub ddg_lite_url: String,
    pub searxng_urls: Vec<String>,
    pub mojeek_url: String,
    pub bing_url: String,
    pub brave_url: String,
    pub wikipedia_url: String,
    /// Rotate the starting provider per search (else the configured order).
    pub source_order_rotate: bool,
    pub source_pages_max: u32,
    /// Per-provider pacing overrides: (provider, ms).
    pub provider_intervals_ms: Vec<(String, u64)>,
    /// The region and safe search of a search that names none.
    pub region: crate::search::controls::Region,
    pub safesearch: crate::search::controls::SafeSearch,
    pub source_connect_timeout_ms: u64,
    pub source_timeout_ms: u64,
    pub source_body_bytes_max: u64,
    pub source_interval_ms: u64,
    /// Requests a provider may take at once before its interval holds (the token bucket's size).
    pub source_burst: u32,
    /// The first back-off after a wall or 429 (`breaker_cooldown_ms`) and after another failure.
    pub breaker_cooldown_ms: u64,
    pub breaker_failure_cooldown_ms: u64,
    pub breaker_cooldown_max_ms: u64,
    pub search_deadline_ms: u64,
    pub cache_ttl_s: u64,
    pub cache_entries: usize,
    pub fetch_allow: Vec<(String, u16)>,
    pub fetch_ports: Vec<u16>,
    pub fetch_timeout_ms: u64,
    pub fetch_body_bytes_max: u64,
    /// Pages of one call's results fetched side by side (`extract: k`).
    pub extract_parallel: usize,
    pub pay_to: Option<crate::x402::eip712::Address>,
    pub network: crate::x402::Network,
    pub price_atomic: u128,
    /// Added to the price for each page past the first that a call extracts (`extract: k`); 0: one price.
    pub extract_page_price_atomic: u128,
    /// Price of one page of the reader door (`POST /extract`), a call costing it once per URL asked.
    pub extract_price_atomic: u128,
    pub max_timeout_s: u64,
    pub facilitator_url: String,
    pub facilitator_auth_file: Option<PathBuf>,
    pub facilitator_timeout_ms: u64,
    pub open: bool,
    pub trial_calls_per_day: u32,
    pub free_loopback: bool,
    /// The SearXNG door and the search page (`/search`, `/`, `/opensearch.xml`).
    pub searxng: bool,
    /// Tavily's API under `/tavily` (`tavily`).
    pub tavily: bool,
    /// Origins (lowercase `scheme://host[:port]`, or `*`) allowed to call `/mcp` besides the public URL's and loopback.
    pub mcp_origins: Vec<String>,
    /// Browser origins a free instance answers besides its own (`origins`; `*`: every origin).
    pub allowed_origins: Vec<String>,
    /// The shared store, when `WEBSEARCHD_REDIS_URL` names one.
    pub redis: Option<crate::store::Settings>,
    pub redis_prefix: String,
    /// Base paths without a trailing slash; `None` when off.
    pub notary_path: Option<String>,
    pub notary_listen: Option<SocketAddr>,
    /// Without a trailing slash.
    pub notary_url: String,
    pub notary_price_atomic: u128,
    pub core_path: Option<String>,
    pub api_keys_file: PathBuf,
    pub map_path: Option<String>,
    pub map: crate::map::Settings,
    pub map_page: crate::map::page::Settings,
    pub card_key_file: Option<PathBuf>,
    pub result_key_file: Option<PathBuf>,
    pub log: String,
    /// What each variable resolved to and where it came from, for `check-config`.
    pub resolved: Vec<Resolved>,
    /// `WEBSEARCHD_*` names that were set but are not known: most likely typos.
    pub unknown_vars: Vec<String>,
    /// What an operator should see at start and in `check-config`, in one line each (an earlier version's `./data`
    /// in use, the env file's lines that are not settings).
    pub warnings: Vec<String>,
    /// What `check-config` adds: the env file's settings that systemd's `EnvironmentFile=` reads otherwise.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: &'static str,
    /// Already hidden for secrets.
    pub value: String,
    pub origin: Origin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Env,
    File,
    /// Given on the command line (`--env-file`).
    Flag,
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Env => "environment",
            Origin::File => "env file",
            Origin::Flag => "--env-file",
            Origin::Default => "default",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub var: String,
    pub value: String,
    pub allowed: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}={:?}: allowed: {}", self.var, self.value, self.allowed)
    }
}

impl std::error::Error for ConfigError {}

/// Where variables come from: the environment, then the environment file for names the environment lacks.
#[derive(Debug, Clone, Default)]
pub struct Source {
    env: BTreeMap<String, String>,
    file: BTreeMap<String, String>,
    /// The env file named by `--env-file`, which takes the place of `WEBSEARCHD_ENV_FILE`.
    flag_env_file: Option<String>,
    /// `./data` of the folder the command started in, made absolute, when it holds an earlier version's state
    /// (`holds_state`): the default before the state had one home, still used so that no identity is lost.
    legacy_state_dir: Option<PathBuf>,
    /// The env file's lines that are not settings (`EnvFile::stray`), said with the file's path: warnings.
    file_warnings: Vec<String>,
    /// The env file's settings systemd reads otherwise (`EnvFile::systemd_differs`), for `check-config`.
    file_notes: Vec<String>,
}

impl Source {
    /// The process environment, plus the file named by `WEBSEARCHD_ENV_FILE` or `env_file`.
    pub fn from_process(env_file: Option<&Path>) -> Result<Source, ConfigError> {
        let mut source = Source::from_pairs(
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
            env_file,
        )?;
        source.legacy_state_dir = std::env::current_dir().ok().map(|cwd| cwd.join("data")).filter(|d| holds_state(d));
        Ok(source)
    }

    pub fn from_pairs(
        pairs: impl IntoIterator<Item = (String, String)>,
        env_file: Option<&Path>,
    ) -> Result<Source, ConfigError> {
        let env: BTreeMap<String, String> = pairs.into_iter().collect();
        let path = env_file.map(Path::to_path_buf).or_else(|| env.get("WEBSEARCHD_ENV_FILE").map(PathBuf::from));
        let mut source = Source {
            env,
            file: BTreeMap::new(),
            flag_env_file: env_file.map(|p| p.display().to_string()),
            legacy_state_dir: None,
            file_warnings: Vec::new(),
            file_notes: Vec::new(),
        };
        if let Some(path) = path {
            let text = read_env_file(&path).map_err(|e| ConfigError {
                var: "WEBSEARCHD_ENV_FILE".into(),
                value: path.display().to_string(),
                allowed: format!("a readable UTF-8 file of at most {ENV_FILE_BYTES_MAX} bytes ({e})"),
            })?;
            let parsed = parse_env_file(&text);
            let said = |(line, why): &(usize, String)| format!("{} line {line}: {why}", path.display());
            source.file_warnings = parsed.stray.iter().map(said).collect();
            source.file_notes = parsed.systemd_differs.iter().map(said).collect();
            source.file = parsed.vars;
        }
        Ok(source)
    }

    fn lookup(&self, name: &str) -> Option<(&str, Origin)> {
        if let (Some(v), "WEBSEARCHD_ENV_FILE") = (&self.flag_env_file, name) {
            return Some((v, Origin::Flag));
        }
        if let Some(v) = self.env.get(name) {
            return Some((v, Origin::Env));
        }
        self.file.get(name).map(|v| (v.as_str(), Origin::File))
    }
}

/// Bytes of an env file read at most.
pub const ENV_FILE_BYTES_MAX: u64 = 1_048_576;

fn read_env_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(ENV_FILE_BYTES_MAX + 1).read_to_string(&mut text)?;
    if text.len() as u64 > ENV_FILE_BYTES_MAX {
        return Err(std::io::Error::other("larger than that"));
    }
    Ok(text)
}

/// An env file as `parse_env_file` read it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EnvFile {
    pub vars: BTreeMap<String, String>,
    /// Lines that are not settings (no `=`, not a variable name before it, a quote left open), by number (from 1),
    /// said without their text, which may hold a secret: they are ignored.
    pub stray: Vec<(usize, String)>,
    /// Settings read here that systemd's `EnvironmentFile=` reads otherwise: an `export` line, which systemd ignores,
    /// and a comment after a value, which systemd keeps in it.
    pub systemd_differs: Vec<(usize, String)>,
}

/// Parses an env file as people write them for systemd's `EnvironmentFile=` and for a shell: `NAME=value` lines,
/// `export NAME=value`, values in single quotes (literal) or double quotes (`\"`, `\\`, `\$` and `` \` `` escaped,
/// any other backslash kept, as systemd and the shell do), a backslash outside quotes taking the next character as
/// it is, `#` and `;` comment lines, a `#` comment after a blank outside quotes, blank lines. A value is one line.
/// Linear in the text.
pub fn parse_env_file(text: &str) -> EnvFile {
    let mut file = EnvFile::default();
    for (number, line) in (1..).zip(text.lines()) {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let exported = line.strip_prefix("export").filter(|rest| rest.starts_with([' ', '\t']));
        let Some((name, raw)) = exported.unwrap_or(line).split_once('=') else {
            file.stray.push((number, "not a setting (NAME=value): ignored".into()));
            continue;
        };
        let name = name.trim();
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            file.stray.push((
                number,
                "not a setting: the text before `=` is not a variable name (letters, digits and _): ignored".into(),
            ));
            continue;
        }
        match env_value(raw) {
            Err(quote) => {
                file.stray.push((number, format!("{name}: a {quote} quote is not closed on its line: ignored")))
            }
            Ok((value, comment)) => {
                if exported.is_some() {
                    file.systemd_differs.push((
                        number,
                        format!("{name}: read here, but systemd's EnvironmentFile= ignores an `export` line"),
                    ));
                }
                if comment {
                    file.systemd_differs.push((
                        number,
                        format!(
                            "{name}: the comment after the value is left out here, but systemd's EnvironmentFile= \
                                 keeps it in the value"
                        ),
                    ));
                }
                file.vars.insert(name.to_owned(), value);
            }
        }
    }
    file
}

/// The value of a setting (the text after `=`, without a trailing comment) and whether a comment followed it, or the
/// quote left open.
fn env_value(raw: &str) -> Result<(String, bool), char> {
    let mut value = String::with_capacity(raw.len());
    // Blanks outside quotes, kept only if more of the value follows them (not at its start).
    let mut blanks = String::new();
    let mut started = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == ' ' || c == '\t' {
            blanks.push(c);
            continue;
        }
        // `#` after a blank starts a comment (`A=x # why`, `A= # none`); elsewhere it is part of the value.
        if c == '#' && !blanks.is_empty() {
            return Ok((value, true));
        }
        if started {
            value.push_str(&blanks);
        }
        blanks.clear();
        started = true;
        match c {
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err('\''),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c @ ('"' | '\\' | '$' | '`')) => value.push(c),
                        Some(c) => value.extend(['\\', c]),
                        None => return Err('"'),
                    },
                    Some(c) => value.push(c),
                    None => return Err('"'),
                }
            },
            '\\' => value.extend(chars.next()),
            c => value.push(c),
        }
    }
    Ok((value, false))
}

/// Reads variables off a `Source`, recording each resolution.
struct Resolver<'a> {
    source: &'a Source,
    resolved: Vec<Resolved>,
}

impl Resolver<'_> {
    fn raw(&mut self, name: &'static str) -> Option<(String, Origin)> {
        self.source.lookup(name).map(|(v, o)| (v.trim().to_owned(), o)).filter(|(v, _)| !v.is_empty())
    }

    fn record(&mut self, name: &'static str, value: String, origin: Origin) {
        self.resolved.push(Resolved { name, value, origin });
    }

    fn parsed<T: FromStr + fmt::Display>(
        &mut self,
        name: &'static str,
        default: T,
        allowed: &str,
        check: impl Fn(&T) -> bool,
    ) -> Result<T, ConfigError> {
        let Some((raw, origin)) = self.raw(name) else {
            self.record(name, default.to_string(), Origin::Default);
            return Ok(default);
        };
        match raw.parse::<T>() {
            Ok(v) if check(&v) => {
                self.record(name, v.to_string(), origin);
                Ok(v)
            }
            _ => Err(ConfigError { var: name.into(), value: raw, allowed: allowed.into() }),
        }
    }

    fn int<T>(&mut self, name: &'static str, default: T, range: RangeInclusive<T>) -> Result<T, ConfigError>
    where
        T: FromStr + fmt::Display + PartialOrd + Copy,
    {
        let allowed = format!("an integer from {} to {}", range.start(), range.end());
        self.parsed(name, default, &allowed, |v| range.contains(v))
    }

    /// A comma-separated list, converted as a whole by `convert` (None: invalid).
    fn list<T>(
        &mut self,
        name: &'static str,
        default: &str,
        allowed: &str,
        convert: impl Fn(&[&str]) -> Option<Vec<T>>,
    ) -> Result<Vec<T>, ConfigError> {
        let (raw, origin) = self.raw(name).unwrap_or_else(|| (default.to_owned(), Origin::Default));
        let items: Vec<&str> = raw.split(',').map(str::trim).filter(|i| !i.is_empty()).collect();
        let value = convert(&items).ok_or_else(|| ConfigError {
            var: name.into(),
            value: raw.clone(),
            allowed: allowed.into(),
        })?;
        self.record(name, items.join(","), origin);
        Ok(value)
    }

    /// A value turned into its type by `parse` (`None`: not an allowed one), such as one word of a fixed set.
    fn choice<T>(
        &mut self,
        name: &'static str,
        default: &str,
        allowed: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, ConfigError> {
        let (raw, origin) = self.raw(name).unwrap_or_else(|| (default.to_owned(), Origin::Default));
        let value =
            parse(&raw).ok_or_else(|| ConfigError { var: name.into(), value: raw.clone(), allowed: allowed.into() })?;
        self.record(name, raw, origin);
        Ok(value)
    }

    fn url(&mut self, name: &'static str, default: &str) -> Result<String, ConfigError> {
        let (raw, origin) = self.raw(name).unwrap_or_else(|| (default.to_owned(), Origin::Default));
        match raw.strip_prefix("http://").or_else(|| raw.strip_prefix("https://")) {
            Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !raw.contains(' ') => {
                self.record(name, raw.clone(), origin);
                Ok(raw)
            }
            _ => Err(ConfigError { var: name.into(), value: raw, allowed: "an http:// or https:// URL".into() }),
        }
    }

    fn flag(&mut self, name: &'static str) -> Result<bool, ConfigError> {
        self.parsed(name, 0u8, "0 or 1", |v| *v <= 1).map(|v| v == 1)
    }

    fn path_opt(&mut self, name: &'static str) -> Option<PathBuf> {
        let (raw, origin) = self.raw(name)?;
        self.record(name, raw.clone(), origin);
        Some(PathBuf::from(raw))
    }

    /// A base URL clients see (no trailing slash, no query or fragment), or `default`.
    fn base_url(&mut self, name: &'static str, default: String) -> Result<String, ConfigError> {
        let Some((raw, origin)) = self.raw(name) else {
            self.record(name, default.clone(), Origin::Default);
            return Ok(default);
        };
        let url = parse_base_url(&raw).ok_or_else(|| ConfigError {
            var: name.into(),
            value: raw.clone(),
            allowed: "an http:// or https:// URL with a host and no query or fragment".into(),
        })?;
        self.record(name, url.clone(), origin);
        Ok(url)
    }

    /// A base path such as `/notary`, or `None` for `off`.
    fn base_path(&mut self, name: &'static str, default: &str) -> Result<Option<String>, ConfigError> {
        let (raw, origin) = self.raw(name).unwrap_or_else(|| (default.to_owned(), Origin::Default));
        self.record(name, raw.clone(), origin);
        if raw == "off" {
            return Ok(None);
        }
        let valid = raw.len() > 1
            && raw.starts_with('/')
            && !raw.ends_with('/')
            && !raw.contains("//")
            && raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_'));
        if !valid {
            return Err(ConfigError {
                var: name.into(),
                value: raw,
                allowed: "a path like /notary (letters, digits, -, _ and /; no trailing slash), or off".into(),
            });
        }
        Ok(Some(raw))
    }

    /// The shared store's settings, when `WEBSEARCHD_REDIS_URL` is set (its password recorded hidden).
    fn redis(&mut self) -> Result<Option<crate::store::Settings>, ConfigError> {
        let timeout_ms = self.int("WEBSEARCHD_REDIS_TIMEOUT_MS", 250u64, 10..=5_000)?;
        let connections_max = self.int("WEBSEARCHD_REDIS_CONNECTIONS_MAX", 8usize, 1..=256)?;
        let ca_file = self.path_opt("WEBSEARCHD_REDIS_CA_FILE");
        let secret_file = self.path_opt("WEBSEARCHD_REDIS_SECRET_FILE");
        let Some((raw, origin)) = self.raw("WEBSEARCHD_REDIS_URL") else { return Ok(None) };
        let url = crate::store::Url::parse(&raw).ok_or_else(|| ConfigError {
            var: "WEBSEARCHD_REDIS_URL".into(),
            // The value may hold a password: only its scheme is repeated.
            value: format!("{}://...", raw.split("://").next().unwrap_or("")),
            allowed: "redis://[user:password@]host[:port][/db], or rediss:// for TLS".into(),
        })?;
        self.record("WEBSEARCHD_REDIS_URL", url.redacted(), origin);
        let timeout = std::time::Duration::from_millis(timeout_ms);
        Ok(Some(crate::store::Settings { url, timeout, connections_max, ca_file, secret_file }))
    }

    fn string(&mut self, name: &'static str, default: &str) -> String {
        let (value, origin) = self.raw(name).unwrap_or_else(|| (default.to_owned(), Origin::Default));
        self.record(name, value.clone(), origin);
        value
    }
}

/// The payment ledger's file in the state directory.
pub const LEDGER_FILE: &str = "payments.journal";
/// The notary journal's file in the state directory.
pub const NOTARY_JOURNAL_FILE: &str = "notary.journal";

impl Config {
    /// Where the payment ledger is.
    pub fn ledger_path(&self) -> PathBuf {
        self.state_dir.join(LEDGER_FILE)
    }

    /// Where the notary journal is.
    pub fn notary_journal_path(&self) -> PathBuf {
        self.state_dir.join(NOTARY_JOURNAL_FILE)
    }

    pub fn from_source(source: &Source) -> Result<Config, ConfigError> {
        let mut r = Resolver { source, resolved: Vec::new() };
        let env_file = r.string("WEBSEARCHD_ENV_FILE", "");
        if env_file.is_empty() {
            r.resolved.pop();
        }
        let listen: SocketAddr = r.parsed(
            "WEBSEARCHD_LISTEN",
            SocketAddr::from(([127, 0, 0, 1], 8402)),
            "an IP address and port, like 127.0.0.1:8402 or [::]:8402",
            |_| true,
        )?;
        let public_url = r.base_url("WEBSEARCHD_PUBLIC_URL", format!("http://{listen}"))?;
        let mut warnings = source.file_warnings.clone();
        let state_dir = match r.raw("WEBSEARCHD_STATE_DIR") {
            Some((raw, origin)) => {
                r.record("WEBSEARCHD_STATE_DIR", raw.clone(), origin);
                PathBuf::from(raw)
            }
            None => {
                let (home, rule) = state_home(&source.env);
                let (dir, rule) = match &source.legacy_state_dir {
                    Some(legacy) => {
                        warnings.push(legacy_warning(legacy, &home));
                        (legacy.clone(), "./data, an earlier version's default: see the warning")
                    }
                    None => (home, rule),
                };
                r.record("WEBSEARCHD_STATE_DIR", rule.into(), Origin::Default);
                dir
            }
        };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Searches are I/O-bound: in bad weather one holds its worker for seconds (a provider that times out, a wait
        // for a provider's slot), so a small machine still gets 8.
        let workers = r.int("WEBSEARCHD_WORKERS", (2 * cores).clamp(WORKERS_MIN_DEFAULT, 256), 1..=256)?;
        let queue_depth = r.int("WEBSEARCHD_QUEUE_DEPTH", 64, 1..=4_096)?;
        let connections_max = r.int("WEBSEARCHD_CONNECTIONS_MAX", 512, 4..=65_536)?;
        let connections_per_address_max = r.int("WEBSEARCHD_CONNECTIONS_PER_ADDRESS_MAX", 32, 1..=65_536)?;
        let trusted_proxies = r.list(
            "WEBSEARCHD_TRUSTED_PROXIES",
            "",
            "a comma-separated list of IP addresses or CIDR ranges (no host bits set), like 127.0.0.1,::1",
            |items| items.iter().map(|i| crate::http::client_addr::Cidr::parse(i)).collect(),
        )?;
        let forwarded_header = r.choice(
            "WEBSEARCHD_FORWARDED_HEADER",
            "x-forwarded-for",
            "x-forwarded-for or forwarded",
            crate::http::client_addr::ForwardedHeader::from_name,
        )?;
        let header_bytes_max = r.int("WEBSEARCHD_HEADER_BYTES_MAX", 8_192, 1_024..=65_536)?;
        let headers_max = r.int("WEBSEARCHD_HEADERS_MAX", 64, 8..=256)?;
        let body_bytes_max = r.int("WEBSEARCHD_BODY_BYTES_MAX", 16_384, 256..=1_048_576)?;
        let request_timeout_ms = r.int("WEBSEARCHD_REQUEST_TIMEOUT_MS", 10_000, 100..=120_000)?;
        let idle_timeout_ms = r.int("WEBSEARCHD_IDLE_TIMEOUT_MS", 5_000, 100..=600_000)?;
        let write_timeout_ms = r.int("WEBSEARCHD_WRITE_TIMEOUT_MS", 10_000, 100..=120_000)?;
        let keepalive_requests_max = r.int("WEBSEARCHD_KEEPALIVE_REQUESTS_MAX", 100, 1..=100_000)?;
        let shutdown_grace_ms = r.int("WEBSEARCHD_SHUTDOWN_GRACE_MS", 10_000, 0..=300_000)?;
        let sources = r.list(
            "WEBSEARCHD_SOURCES",
            "ddg_html,ddg_lite,brave,bing,mojeek,wikipedia,searxng",
            "a comma-separated list of \
            ddg_html, ddg_lite, brave, bing, mojeek, wikipedia, searxng, each at most once",
            |items| {
                let kinds: Option<Vec<_>> = items.iter().map(|i| crate::search::sources::Kind::from_name(i)).collect();
                kinds.filter(|k| !k.is_empty() && k.iter().enumerate().all(|(i, x)| !k.iter().take(i).any(|y| y == x)))
            },
        )?;
        let ddg_html_url = r.url("WEBSEARCHD_DDG_HTML_URL", "https://html.duckduckgo.com/html/")?;
        let ddg_lite_url = r.url("WEBSEARCHD_DDG_LITE_URL", "https://lite.duckduckgo.com/lite/")?;
        let searxng_urls =
            r.list("WEBSEARCHD_SEARXNG_URLS", "", "a comma-separated list of http(s) base URLs", |items| {
                items.iter().map(|i| parse_base_url(i)).collect()
            })?;
        let mojeek_url = r.url("WEBSEARCHD_MOJEEK_URL", "https://www.mojeek.com/search")?;
        let bing_url = r.url("WEBSEARCHD_BING_URL", "https://www.bing.com/search")?;
        let brave_url = r.url("WEBSEARCHD_BRAVE_URL", "https://search.brave.com/search")?;
        let wikipedia_url = r.url("WEBSEARCHD_WIKIPEDIA_URL", "https://en.wikipedia.org/w/api.php")?;
        let source_order_rotate = r.choice("WEBSEARCHD_SOURCE_ORDER", "rotate", "rotate or fixed", |v| match v {
            "rotate" => Some(true),
            "fixed" => Some(false),
            _ => None,
        })?;
        let source_pages_max = r.int("WEBSEARCHD_SOURCE_PAGES_MAX", 2, 1..=5)?;
        let provider_intervals_ms = r.list(
            "WEBSEARCHD_PROVIDER_INTERVALS_MS",
            "",
            "a comma-separated list of provider=ms (duckduckgo, brave, bing, mojeek, wikipedia, searxng), 0 to 600000",
            |items| {
                items
                    .iter()
                    .map(|i| {
                        let (name, ms) = i.split_once('=')?;
                        let name = name.trim();
                        let known = crate::search::sources::Kind::ALL.iter().any(|k| k.provider() == name);
                        let ms: u64 = ms.trim().parse().ok().filter(|ms| *ms <= 600_000)?;
                        known.then(|| (name.to_owned(), ms))
                    })
                    .collect()
            },
        )?;
        let region = r.string("WEBSEARCHD_REGION", "wt-wt");
        let region = crate::search::controls::Region::parse(&region).ok_or_else(|| ConfigError {
            var: "WEBSEARCHD_REGION".into(),
            value: region.clone(),
            allowed: "a region-language code like wt-wt, us-en or de-de".into(),
        })?;
        let safesearch = r.string("WEBSEARCHD_SAFESEARCH", "moderate");
        let safesearch = crate::search::controls::SafeSearch::from_name(&safesearch).ok_or_else(|| ConfigError {
            var: "WEBSEARCHD_SAFESEARCH".into(),
            value: safesearch.clone(),
            allowed: "off, moderate or strict".into(),
        })?;
        let source_connect_timeout_ms = r.int("WEBSEARCHD_SOURCE_CONNECT_TIMEOUT_MS", 2_000, 100..=30_000)?;
        let source_timeout_ms = r.int("WEBSEARCHD_SOURCE_TIMEOUT_MS", 5_000, 200..=60_000)?;
        let source_body_bytes_max = r.int("WEBSEARCHD_SOURCE_BODY_BYTES_MAX", 2_097_152, 4_096..=33_554_432)?;
        let source_interval_ms = r.int("WEBSEARCHD_SOURCE_INTERVAL_MS", 1_000, 0..=600_000)?;
        let source_burst = r.int("WEBSEARCHD_SOURCE_BURST", 3, 1..=20)?;
        let breaker_cooldown_ms = r.int("WEBSEARCHD_BREAKER_COOLDOWN_MS", 3_000, 1_000..=86_400_000)?;
        let breaker_failure_cooldown_ms = r.int("WEBSEARCHD_BREAKER_FAILURE_COOLDOWN_MS", 1_000, 100..=86_400_000)?;
        let breaker_cooldown_max_ms = r.int("WEBSEARCHD_BREAKER_COOLDOWN_MAX_MS", 1_800_000, 1_000..=86_400_000)?;
        let search_deadline_ms = r.int("WEBSEARCHD_SEARCH_DEADLINE_MS", 15_000, 500..=120_000)?;
        let cache_ttl_s = r.int("WEBSEARCHD_CACHE_TTL_S", 600, 0..=86_400)?;
        let cache_entries = r.int("WEBSEARCHD_CACHE_ENTRIES", 512, 0..=100_000)?;
        let fetch_allow = r.list("WEBSEARCHD_FETCH_ALLOW", "", "a comma-separated list of host:port", |items| {
            items
                .iter()
                .map(|i| {
                    let (h, p) = i.rsplit_once(':')?;
                    let host = crate::fetch::guard::normalize_host(h).ok()?;
                    Some((host, p.parse::<u16>().ok()?))
                })
                .collect()
        })?;
        let fetch_ports =
            r.list("WEBSEARCHD_FETCH_PORTS", "", "a comma-separated list of ports (1 to 65535)", |items| {
                items.iter().map(|i| i.parse::<u16>().ok().filter(|p| *p > 0)).collect()
            })?;
        let fetch_timeout_ms = r.int("WEBSEARCHD_FETCH_TIMEOUT_MS", 8_000, 1_000..=60_000)?;
        let fetch_body_bytes_max = r.int("WEBSEARCHD_FETCH_BODY_BYTES_MAX", 3_145_728, 65_536..=16_777_216)?;
        let extract_parallel = r.int("WEBSEARCHD_EXTRACT_PARALLEL", 3, 1..=crate::search::EXTRACT_PAGES_MAX)?;
        let pay_to = match r.raw("WEBSEARCHD_PAY_TO") {
            None => {
                r.record("WEBSEARCHD_PAY_TO", "(none: payments off)".into(), Origin::Default);
                None
            }
            Some((raw, origin)) => {
                let address = crate::x402::eip712::parse_address(&raw)
                    .filter(|_| crate::x402::eip712::checksum_ok(&raw))
                    .filter(|a| *a != [0u8; 20])
                    .ok_or_else(|| ConfigError {
                        var: "WEBSEARCHD_PAY_TO".into(),
                        value: raw.clone(),
                        allowed: "an Ethereum address: 0x and 40 hex digits, with a valid EIP-55 checksum if mixed \
                                  case, not the zero address"
                            .into(),
                    })?;
                r.record("WEBSEARCHD_PAY_TO", crate::x402::eip712::checksum_address(&address), origin);
                Some(address)
            }
        };
        let network =
            r.choice("WEBSEARCHD_NETWORK", "base", "base or base-sepolia", crate::x402::Network::from_name)?;
        let price_atomic = r.int("WEBSEARCHD_PRICE_ATOMIC", 5_000u128, 1..=1_000_000_000)?;
        let extract_page_price_atomic = r.int("WEBSEARCHD_EXTRACT_PAGE_PRICE_ATOMIC", 0u128, 0..=1_000_000_000)?;
        let extract_price_atomic = r.int("WEBSEARCHD_EXTRACT_PRICE_ATOMIC", price_atomic, 1..=1_000_000_000)?;
        let max_timeout_s = r.int("WEBSEARCHD_MAX_TIMEOUT_S", 60, 10..=3_600)?;
        let facilitator_url = r.url("WEBSEARCHD_FACILITATOR_URL", FACILITATOR_URL_DEFAULT)?;
        // The default facilitator serves testnets only: payments on Base mainnet through it would all fail. An
        // explicit URL is asked at start instead (`/supported`).
        if pay_to.is_some() && network == crate::x402::Network::Base && r.raw("WEBSEARCHD_FACILITATOR_URL").is_none() {
            return Err(ConfigError {
                var: "WEBSEARCHD_FACILITATOR_URL".into(),
                value: format!("{FACILITATOR_URL_DEFAULT} (the default, with WEBSEARCHD_NETWORK=base)"),
                allowed: "a facilitator that serves Base mainnet (the default serves testnets only): set \
                          WEBSEARCHD_FACILITATOR_URL (and WEBSEARCHD_FACILITATOR_AUTH_FILE if it takes an API key), \
                          or WEBSEARCHD_NETWORK=base-sepolia to take testnet payments"
                    .into(),
            });
        }
        let facilitator_auth_file = r.path_opt("WEBSEARCHD_FACILITATOR_AUTH_FILE");
        let facilitator_timeout_ms = r.int("WEBSEARCHD_FACILITATOR_TIMEOUT_MS", 10_000, 500..=60_000)?;
        let open = r.flag("WEBSEARCHD_OPEN")?;
        let trial_calls_per_day = r.int("WEBSEARCHD_TRIAL_CALLS_PER_DAY", 0, 0..=1_000_000)?;
        let free_loopback = r.flag("WEBSEARCHD_FREE_LOOPBACK")?;
        let searxng = r.parsed("WEBSEARCHD_SEARXNG_API", 1u8, "0 or 1", |v| *v <= 1)? == 1;
        let tavily = r.parsed("WEBSEARCHD_TAVILY_API", 1u8, "0 or 1", |v| *v <= 1)? == 1;
        let mcp_origins = r.list("WEBSEARCHD_MCP_ORIGINS", "", "a comma-separated list of origins, or *", |items| {
            items.iter().map(|i| (*i == "*").then(|| "*".to_owned()).or_else(|| origin_of(i))).collect()
        })?;
        let allowed_origins =
            r.list("WEBSEARCHD_ALLOWED_ORIGINS", "", "a comma-separated list of origins, or *", |items| {
                items.iter().map(|i| (*i == "*").then(|| "*".to_owned()).or_else(|| origin_of(i))).collect()
            })?;
        let redis = r.redis()?;
        let redis_prefix =
            r.choice("WEBSEARCHD_REDIS_PREFIX", "websearchd:", "1 to 64 letters, digits, and : . _ -", |p| {
                let ok =
                    (1..=64).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric() || b":._-".contains(&b));
                ok.then(|| p.to_owned())
            })?;
        let notary_path = r.base_path("WEBSEARCHD_NOTARY_PATH", "/notary")?;
        let notary_listen = match r.raw("WEBSEARCHD_NOTARY_LISTEN") {
            None => None,
            Some((raw, origin)) => {
                let addr =
                    raw.parse::<SocketAddr>().ok().filter(|a| *a != listen || a.port() == 0).ok_or_else(|| {
                        ConfigError {
                            var: "WEBSEARCHD_NOTARY_LISTEN".into(),
                            value: raw.clone(),
                            allowed: "an IP address and port other than WEBSEARCHD_LISTEN".into(),
                        }
                    })?;
                r.record("WEBSEARCHD_NOTARY_LISTEN", addr.to_string(), origin);
                Some(addr)
            }
        };
        let notary_url = r.base_url(
            "WEBSEARCHD_NOTARY_URL",
            format!("{public_url}{}", notary_path.as_deref().unwrap_or("/notary")),
        )?;
        let notary_price_atomic = r.int("WEBSEARCHD_NOTARY_PRICE_ATOMIC", 5_000u128, 1..=1_000_000_000)?;
        let core_path = r.base_path("WEBSEARCHD_CORE_PATH", "/core")?;
        let api_keys_file =
            r.path_opt("WEBSEARCHD_API_KEYS_FILE").unwrap_or_else(|| state_dir.join(crate::apikeys::API_KEYS_FILE));
        let map_path = r.base_path("WEBSEARCHD_MAP_PATH", "/map")?;
        let map_page = crate::map::page::Settings {
            assets_url: r.choice(
                "WEBSEARCHD_MAP_ASSETS_URL",
                crate::map::page::ASSETS_URL_DEFAULT,
                "an http:// or https:// URL without query or fragment, in plain characters",
                crate::map::page::assets_url,
            )?,
            tiles_url: r.choice(
                "WEBSEARCHD_MAP_TILES_URL",
                crate::map::page::TILES_URL_DEFAULT,
                "an http:// or https:// tile URL template with {z}, {x} and {y} (no {s}), or off",
                |raw| if raw == "off" { Some(None) } else { crate::map::page::tiles_url(raw).map(Some) },
            )?,
        };
        let mut map = crate::map::Settings::defaults();
        map.redirect_policy = crate::fetch::guard::Policy { allow: fetch_allow.clone(), ports: fetch_ports.clone() };
        map.layers = r.list(
            "WEBSEARCHD_MAP_LAYERS",
            crate::map::DEFAULT_LAYERS,
            "a comma-separated list of map layer slugs, all, or none",
            |items| {
                if items == ["none"] {
                    return Some(Vec::new());
                }
                if items == ["all"] {
                    return Some(crate::map::SLUGS.iter().map(|s| (*s).to_owned()).collect());
                }
                items.iter().map(|i| crate::map::SLUGS.contains(i).then(|| (*i).to_owned())).collect()
            },
        )?;
        map.urls.push(("vuelos".into(), r.url("WEBSEARCHD_MAP_VUELOS_URL", crate::map::URL_VUELOS)?));
        map.vuelos_fallback_url = r.url("WEBSEARCHD_MAP_VUELOS_FALLBACK_URL", crate::map::URL_VUELOS_FALLBACK)?;
        map.urls.push(("buques".into(), r.url("WEBSEARCHD_MAP_BUQUES_URL", crate::map::URL_BUQUES)?));
        map.urls.push(("terremotos".into(), r.url("WEBSEARCHD_MAP_TERREMOTOS_URL", crate::map::URL_TERREMOTOS)?));
        map.urls.push(("satelites".into(), r.url("WEBSEARCHD_MAP_SATELITES_URL", crate::map::URL_SATELITES)?));
        map.urls.push(("conflictos".into(), r.url("WEBSEARCHD_MAP_CONFLICTOS_URL", crate::map::URL_CONFLICTOS)?));
        map.urls.push(("fondo-marino".into(), r.url("WEBSEARCHD_MAP_FONDO_MARINO_URL", crate::map::URL_FONDO_MARINO)?));
        map.urls.push(("conflictos-ucdp".into(), r.url("WEBSEARCHD_MAP_UCDP_URL", crate::map::URL_UCDP)?));
        map.refresh_s =
            r.list("WEBSEARCHD_MAP_REFRESH_S", "", "a comma-separated list of slug=seconds, 15 to 604800", |items| {
                items
                    .iter()
                    .map(|i| {
                        let (slug, secs) = i.split_once('=')?;
                        let secs = secs.trim().parse::<u64>().ok().filter(|s| (15..=604_800).contains(s))?;
                        crate::map::SLUGS.contains(&slug.trim()).then(|| (slug.trim().to_owned(), secs))
                    })
                    .collect()
            })?;
        map.objects_max = r.int("WEBSEARCHD_MAP_OBJECTS_MAX", 5_000, 1..=100_000)?;
        map.bytes_max = r.int("WEBSEARCHD_MAP_BYTES_MAX", 16_777_216, 65_536..=134_217_728)?;
        map.timeout = std::time::Duration::from_millis(r.int(
            "WEBSEARCHD_MAP_TIMEOUT_MS",
            crate::map::TIMEOUT_MS_DEFAULT,
            1_000..=120_000,
        )?);
        if let Some((raw, origin)) = r.raw("WEBSEARCHD_MAP_SEABED_POINTS") {
            map.seabed_points = crate::map::parse_points(&raw)
                .filter(|p| !p.is_empty() && p.len() <= crate::map::SEABED_POINTS_MAX)
                .ok_or_else(|| ConfigError {
                    var: "WEBSEARCHD_MAP_SEABED_POINTS".into(),
                    value: raw.clone(),
                    allowed: "lat,lon pairs separated by ; (1 to 100, in range)".into(),
                })?;
            r.record("WEBSEARCHD_MAP_SEABED_POINTS", raw, origin);
        }
        if let Some((raw, origin)) = r.raw("WEBSEARCHD_MAP_UCDP_TOKEN").filter(|(t, _)| !t.trim().is_empty()) {
            map.ucdp_token = Some(raw.trim().to_owned());
            r.record("WEBSEARCHD_MAP_UCDP_TOKEN", "(set, hidden)".into(), origin);
        }
        map.digitraffic_user = r.string("WEBSEARCHD_DIGITRAFFIC_USER", &map.digitraffic_user.clone());
        let card_key_file = r.path_opt("WEBSEARCHD_CARD_KEY_FILE");
        let result_key_file = r.path_opt("WEBSEARCHD_RESULT_KEY_FILE");
        // A wildcard address is no URL a client can use: without WEBSEARCHD_PUBLIC_URL the discovery documents,
        // /opensearch.xml and the 402 would name http://0.0.0.0:8402.
        let unnamed_wildcard = listen.ip().is_unspecified() && r.raw("WEBSEARCHD_PUBLIC_URL").is_none();
        let public_url_hint = if unnamed_wildcard {
            ", with WEBSEARCHD_PUBLIC_URL naming the URL clients reach it at, like http://192.168.1.20:8402"
        } else {
            ""
        };
        if pay_to.is_none() && !open && !listen.ip().is_loopback() {
            return Err(ConfigError {
                var: "WEBSEARCHD_LISTEN".into(),
                value: listen.to_string(),
                allowed: format!(
                    "a loopback address while payments are off (set WEBSEARCHD_PAY_TO to take payments, or \
                     WEBSEARCHD_OPEN=1 to serve for free on this address{public_url_hint})"
                ),
            });
        }
        if unnamed_wildcard {
            return Err(ConfigError {
                var: "WEBSEARCHD_PUBLIC_URL".into(),
                value: format!("(unset, with WEBSEARCHD_LISTEN={listen})"),
                allowed: format!(
                    "the URL clients reach this server at, like http://192.168.1.20:{} or https://search.example.org \
                     ({} is a wildcard address, which the discovery documents and payment challenges would name)",
                    if listen.port() == 0 { 8402 } else { listen.port() },
                    listen.ip()
                ),
            });
        }
        let log_default = source.lookup("RUST_LOG").map_or("info", |(v, _)| v).to_owned();
        let log = r.string("WEBSEARCHD_LOG", &log_default);
        if !valid_log_filter(&log) {
            return Err(ConfigError {
                var: "WEBSEARCHD_LOG".into(),
                value: log,
                allowed: "off, error, warn, info, debug or trace, or a comma-separated list of them and \
                          module=level"
                    .into(),
            });
        }

        let known: Vec<&str> = VARS.iter().map(|v| v.name).collect();
        let unknown_vars = source
            .env
            .keys()
            .chain(source.file.keys())
            .filter(|k| k.starts_with("WEBSEARCHD_") && !known.contains(&k.as_str()))
            .cloned()
            .collect();

        Ok(Config {
            listen,
            public_url,
            state_dir,
            workers,
            queue_depth,
            connections_max,
            connections_per_address_max,
            trusted_proxies,
            forwarded_header,
            header_bytes_max,
            headers_max,
            body_bytes_max,
            request_timeout_ms,
            idle_timeout_ms,
            write_timeout_ms,
            keepalive_requests_max,
            shutdown_grace_ms,
            sources,
            ddg_html_url,
            ddg_lite_url,
            searxng_urls,
            mojeek_url,
            bing_url,
            brave_url,
            wikipedia_url,
            source_order_rotate,
            source_pages_max,
            provider_intervals_ms,
            region,
            safesearch,
            source_connect_timeout_ms,
            source_timeout_ms,
            source_body_bytes_max,
            source_interval_ms,
            source_burst,
            breaker_cooldown_ms,
            breaker_failure_cooldown_ms,
            breaker_cooldown_max_ms,
            search_deadline_ms,
            cache_ttl_s,
            cache_entries,
            fetch_allow,
            fetch_ports,
            fetch_timeout_ms,
            extract_parallel,
            fetch_body_bytes_max,
            pay_to,
            network,
            price_atomic,
            extract_page_price_atomic,
            extract_price_atomic,
            max_timeout_s,
            facilitator_url,
            facilitator_auth_file,
            facilitator_timeout_ms,
            open,
            trial_calls_per_day,
            free_loopback,
            searxng,
            tavily,
            mcp_origins,
            allowed_origins,
            redis,
            redis_prefix,
            notary_path,
            notary_listen,
            notary_url,
            notary_price_atomic,
            core_path,
            api_keys_file,
            map_path,
            map,
            map_page,
            card_key_file,
            result_key_file,
            log,
            resolved: r.resolved,
            unknown_vars,
            warnings,
            notes: source.file_notes.clone(),
        })
    }

    /// The defaults, as if no variable were set.
    pub fn defaults() -> Config {
        match Config::from_source(&Source::default()) {
            Ok(config) => config,
            Err(e) => unreachable!("the defaults are valid: {e}"),
        }
    }

    /// The SSRF policy and limits for fetching pages to extract.
    pub fn fetch_policy(&self) -> (crate::fetch::guard::Policy, crate::fetch::untrusted::Limits) {
        (
            crate::fetch::guard::Policy { allow: self.fetch_allow.clone(), ports: self.fetch_ports.clone() },
            crate::fetch::untrusted::Limits {
                connect_timeout: crate::fetch::CONNECT_TIMEOUT_MAX
                    .min(std::time::Duration::from_millis(self.fetch_timeout_ms)),
                deadline: std::time::Duration::from_millis(self.fetch_timeout_ms),
                body_bytes_max: self.fetch_body_bytes_max,
            },
        )
    }

    /// Where the signing keys are.
    pub fn key_paths(&self) -> crate::sign::keys::KeyPaths {
        crate::sign::keys::KeyPaths::new(
            &self.state_dir,
            self.card_key_file.as_deref(),
            self.result_key_file.as_deref(),
        )
    }

    /// `check-config` output: one `NAME=value  # origin` line per variable, in the table's order, those left unset
    /// with what they resolve to (`# default`); every path absolute (relative ones are read against `cwd`, the
    /// directory the server starts in), then the state directory's files that no variable names.
    pub fn render(&self, cwd: &Path) -> String {
        let abs = |p: &Path| absolute(cwd, p).display().to_string();
        let keys = self.key_paths();
        let path_value = |name: &str, given: Option<&Resolved>| -> Option<String> {
            match name {
                "WEBSEARCHD_STATE_DIR" => Some(abs(&self.state_dir)),
                "WEBSEARCHD_API_KEYS_FILE" => Some(abs(&self.api_keys_file)),
                "WEBSEARCHD_CARD_KEY_FILE" => Some(abs(&keys.card)),
                "WEBSEARCHD_RESULT_KEY_FILE" => Some(abs(&keys.result)),
                "WEBSEARCHD_FACILITATOR_AUTH_FILE" => self.facilitator_auth_file.as_deref().map(abs),
                "WEBSEARCHD_ENV_FILE" => given.map(|r| abs(Path::new(&r.value))),
                _ => None,
            }
        };
        let mut out = String::new();
        for var in VARS {
            let given = self.resolved.iter().find(|r| r.name == var.name);
            let value = path_value(var.name, given)
                .or_else(|| given.map(|r| r.value.clone()))
                .unwrap_or_else(|| var.default.to_owned());
            let origin = given.map_or(Origin::Default, |r| r.origin);
            let written = match given {
                Some(r) if r.value != value => format!(" ({})", r.value),
                _ => String::new(),
            };
            out.push_str(&format!("{}={value}  # {origin}{written}\n", var.name));
        }
        for r in self.resolved.iter().filter(|r| !VARS.iter().any(|v| v.name == r.name)) {
            out.push_str(&format!("{}={}  # {}\n", r.name, r.value, r.origin));
        }
        let state = |file: &str| abs(&self.state_dir.join(file));
        out.push_str(&format!(
            "# files in the state directory:\n#   payments ledger  {}\n#   notary journal   {}{}\n#   retired keys     \
             {}\n",
            state(LEDGER_FILE),
            state(NOTARY_JOURNAL_FILE),
            if self.notary_path.is_none() { " (the notary is off)" } else { "" },
            abs(&keys.retired)
        ));
        for name in &self.unknown_vars {
            out.push_str(&format!("# warning: {name} is not a known variable (a typo?)\n"));
        }
        for warning in &self.warnings {
            out.push_str(&format!("# warning: {warning}\n"));
        }
        for note in &self.notes {
            out.push_str(&format!("# note: {note}\n"));
        }
        out
    }
}

/// The state directory's one home when `WEBSEARCHD_STATE_DIR` is not set, whatever folder a command starts in, and
/// the rule that chose it (for `check-config`): systemd's `$STATE_DIRECTORY` (the first of its paths), else
/// `$XDG_STATE_HOME/websearchd` (an absolute one, as the XDG specification asks), else
/// `$HOME/.local/state/websearchd`, else, without a home (`HOME` unset, relative or `/`: root in a container, a
/// service user without one), `/var/lib/websearchd`.
fn state_home(env: &BTreeMap<String, String>) -> (PathBuf, &'static str) {
    let var = |name: &str| env.get(name).map(String::as_str).filter(|v| !v.is_empty());
    if let Some(dir) = var("STATE_DIRECTORY").and_then(|v| v.split(':').next()).filter(|v| !v.is_empty()) {
        return (PathBuf::from(dir), "$STATE_DIRECTORY");
    }
    if let Some(dir) = var("XDG_STATE_HOME").filter(|v| v.starts_with('/')) {
        return (Path::new(dir).join("websearchd"), "$XDG_STATE_HOME/websearchd");
    }
    match var("HOME").filter(|v| v.starts_with('/') && !v.trim_end_matches('/').is_empty()) {
        Some(home) => (Path::new(home).join(".local/state/websearchd"), "$HOME/.local/state/websearchd"),
        None => (PathBuf::from(STATE_DIR_WITHOUT_HOME), "no $HOME"),
    }
}

/// The state directory of a process without a home (`state_home`), and the image's volume.
pub const STATE_DIR_WITHOUT_HOME: &str = "/var/lib/websearchd";

/// Whether `dir` holds an earlier version's state: a signing key, a journal or the API keys file.
fn holds_state(dir: &Path) -> bool {
    let keys = crate::sign::keys::KeyPaths::new(dir, None, None);
    [
        keys.card,
        keys.result,
        dir.join(LEDGER_FILE),
        dir.join(NOTARY_JOURNAL_FILE),
        dir.join(crate::apikeys::API_KEYS_FILE),
    ]
    .iter()
    .any(|p| std::fs::symlink_metadata(p).is_ok())
}

/// The warning that an earlier version's `./data` is used, with the command that moves it to `home`.
fn legacy_warning(legacy: &Path, home: &Path) -> String {
    let keep = format!("or set WEBSEARCHD_STATE_DIR={} to keep it there", legacy.display());
    let how = match home.parent() {
        _ if home.exists() => format!("{} exists already: merge the two by hand, {keep}", home.display()),
        Some(parent) => {
            format!(
                "move it with `mkdir -p {} && mv {} {}`, {keep}",
                parent.display(),
                legacy.display(),
                home.display()
            )
        }
        None => keep,
    };
    format!(
        "the state directory is {}, ./data of the folder this command started in, which holds keys or journals of \
         an earlier version (whose default it was); a command started in another folder uses {} instead: {how}",
        legacy.display(),
        home.display()
    )
}

/// `path` made absolute against `cwd`, without its `.` components (`..` is kept: it may cross a symbolic link).
fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) };
    joined.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}

/// Normalises a base URL: scheme http or https, a host, no query or fragment, no trailing slash.
fn parse_base_url(raw: &str) -> Option<String> {
    let rest = raw.strip_prefix("http://").or_else(|| raw.strip_prefix("https://"))?;
    let host = rest.split('/').next()?;
    if host.is_empty() || raw.contains(['?', '#', ' ']) || host.contains('@') {
        return None;
    }
    Some(raw.trim_end_matches('/').to_owned())
}

/// The origin of a URL as browsers send it in `Origin` (`scheme://host[:port]`, lowercase, no path), if it is an
/// http(s) URL with a host and nothing after the authority but an optional `/`.
pub fn origin_of(url: &str) -> Option<String> {
    let url = url.to_ascii_lowercase();
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let valid =
        matches!(scheme, "http" | "https") && !authority.is_empty() && !authority.contains(['/', '?', '#', '@', ' ']);
    valid.then(|| format!("{scheme}://{authority}"))
}

/// The origin of a base URL (its scheme and authority, whatever path follows: a public URL behind a proxy may have
/// one), as browsers send it in `Origin`.
pub fn base_origin(base: &str) -> Option<String> {
    let (scheme, rest) = base.split_once("://")?;
    origin_of(&format!("{scheme}://{}", rest.split('/').next()?))
}

fn valid_log_filter(filter: &str) -> bool {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let is_level = |s: &str| LEVELS.contains(&s.to_ascii_lowercase().as_str());
    filter.split(',').map(str::trim).filter(|d| !d.is_empty()).all(|d| match d.split_once('=') {
        Some((module, level)) => !module.is_empty() && is_level(level),
        None => is_level(d),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let source =
            Source::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())), None).expect("source");
        Config::from_source(&source)
    }

    #[track_caller]
    fn check_invalid(var: &str, value: &str, allowed_contains: &str) {
        let err = config(&[(var, value)]).expect_err("must be refused");
        assert_eq!(err.var, var);
        assert!(err.allowed.contains(allowed_contains), "{err}");
        assert!(err.to_string().contains(var), "{err}");
    }

    #[test]
    fn defaults() {
        let c = Config::defaults();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8402");
        assert_eq!(c.public_url, "http://127.0.0.1:8402");
        assert_eq!(c.state_dir, PathBuf::from("/var/lib/websearchd"), "no $HOME");
        assert!(c.workers >= 2);
        assert_eq!(c.body_bytes_max, 16_384);
        assert!(c.resolved.iter().all(|r| r.origin == Origin::Default));
    }

    #[test]
    fn invalid_values_name_the_variable() {
        check_invalid("WEBSEARCHD_WORKERS", "0", "1 to 256");
        check_invalid("WEBSEARCHD_WORKERS", "many", "1 to 256");
        check_invalid("WEBSEARCHD_LISTEN", "localhost", "IP address and port");
        check_invalid("WEBSEARCHD_PUBLIC_URL", "ftp://x", "http://");
        check_invalid("WEBSEARCHD_PUBLIC_URL", "https://x/?a=b", "no query");
        check_invalid("WEBSEARCHD_BODY_BYTES_MAX", "10", "256 to 1048576");
        check_invalid("WEBSEARCHD_LOG", "loud", "comma-separated");
        check_invalid("WEBSEARCHD_SOURCES", "ddg_html,google", "ddg_lite");
        check_invalid("WEBSEARCHD_SOURCE_ORDER", "random", "rotate or fixed");
        check_invalid("WEBSEARCHD_FORWARDED_HEADER", "x-real-ip", "x-forwarded-for or forwarded");
        check_invalid("WEBSEARCHD_FORWARDED_HEADER", "x-forwarded-for,forwarded", "x-forwarded-for or forwarded");
        check_invalid("WEBSEARCHD_SOURCE_PAGES_MAX", "9", "1 to 5");
        check_invalid("WEBSEARCHD_PROVIDER_INTERVALS_MS", "google=100", "provider=ms");
        check_invalid("WEBSEARCHD_PROVIDER_INTERVALS_MS", "bing=fast", "provider=ms");
        check_invalid("WEBSEARCHD_BING_URL", "www.bing.com", "http");
        check_invalid("WEBSEARCHD_SOURCES", "ddg_html,ddg_html", "at most once");
        check_invalid("WEBSEARCHD_SOURCES", ",", "ddg_lite");
        check_invalid("WEBSEARCHD_SEARXNG_URLS", "https://ok.example,notaurl", "http(s)");
        check_invalid("WEBSEARCHD_DDG_HTML_URL", "html.duckduckgo.com", "http");
        check_invalid("WEBSEARCHD_REGION", "x y", "wt-wt");
        check_invalid("WEBSEARCHD_PAY_TO", "0x1234", "40 hex");
        check_invalid("WEBSEARCHD_PAY_TO", "0x833589FCD6eDb6E08f4c7C32D4f71b54bdA02913", "checksum");
        check_invalid("WEBSEARCHD_PAY_TO", "0x0000000000000000000000000000000000000000", "zero");
        check_invalid("WEBSEARCHD_NETWORK", "ethereum", "base-sepolia");
        check_invalid("WEBSEARCHD_OPEN", "yes", "0 or 1");
        check_invalid("WEBSEARCHD_FETCH_ALLOW", "localhost", "host:port");
        check_invalid("WEBSEARCHD_MCP_ORIGINS", "https://a.example/path", "origins");
        check_invalid("WEBSEARCHD_MCP_ORIGINS", "a.example", "origins");
        check_invalid("WEBSEARCHD_REDIS_PREFIX", "a b", "letters, digits");
        check_invalid("WEBSEARCHD_REDIS_PREFIX", &"p".repeat(65), "1 to 64");
        check_invalid("WEBSEARCHD_FETCH_PORTS", "0", "ports");
        check_invalid("WEBSEARCHD_LISTEN", "0.0.0.0:8402", "loopback address while payments are off");
    }

    #[test]
    fn values_are_trimmed_and_recorded() {
        let c = config(&[("WEBSEARCHD_WORKERS", " 3 "), ("WEBSEARCHD_PUBLIC_URL", "https://search.example/")])
            .expect("valid");
        assert_eq!(c.workers, 3);
        assert_eq!(c.public_url, "https://search.example");
        let workers = c.resolved.iter().find(|r| r.name == "WEBSEARCHD_WORKERS").expect("recorded");
        assert_eq!((workers.value.as_str(), workers.origin), ("3", Origin::Env));
    }

    #[test]
    fn public_listen_needs_payments_or_open() {
        let pay_to = ("WEBSEARCHD_PAY_TO", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C");
        let testnet = ("WEBSEARCHD_NETWORK", "base-sepolia");
        let public_url = ("WEBSEARCHD_PUBLIC_URL", "https://search.example.org");
        let c = config(&[("WEBSEARCHD_LISTEN", "0.0.0.0:8402"), pay_to, testnet, public_url]).expect("payments on");
        assert!(c.pay_to.is_some());
        assert!(config(&[("WEBSEARCHD_LISTEN", "192.168.1.20:8402"), ("WEBSEARCHD_OPEN", "1")]).is_ok());
        assert!(config(&[("WEBSEARCHD_LISTEN", "[::1]:8402")]).is_ok());
    }

    /// Issue 42: `WEBSEARCHD_OPEN=1` on `0.0.0.0` advertised `http://0.0.0.0:8402` in /opensearch.xml, llms.txt and
    /// the OpenAPI servers. A wildcard address needs `WEBSEARCHD_PUBLIC_URL`, free or paid.
    #[test]
    fn a_wildcard_address_needs_a_public_url() {
        let pay_to = ("WEBSEARCHD_PAY_TO", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C");
        let testnet = ("WEBSEARCHD_NETWORK", "base-sepolia");
        for listen in ["0.0.0.0:8402", "[::]:8402"] {
            let listen = ("WEBSEARCHD_LISTEN", listen);
            for mode in [&[("WEBSEARCHD_OPEN", "1")][..], &[pay_to, testnet]] {
                let env = [&[listen][..], mode].concat();
                let err = config(&env).expect_err("a wildcard without a public URL");
                assert_eq!(err.var, "WEBSEARCHD_PUBLIC_URL", "{env:?}");
                let said = err.to_string();
                assert!(said.contains("http://192.168.1.20:8402") && !said.contains('\n'), "{said}");
                let env = [&env[..], &[("WEBSEARCHD_PUBLIC_URL", "http://192.168.1.20:8402")]].concat();
                assert_eq!(config(&env).unwrap().public_url, "http://192.168.1.20:8402");
            }
            // Neither free nor paid: the first error says both what to set and the public URL.
            let err = config(&[listen]).unwrap_err();
            assert_eq!(err.var, "WEBSEARCHD_LISTEN");
            assert!(
                err.allowed.contains("WEBSEARCHD_OPEN=1") && err.allowed.contains("WEBSEARCHD_PUBLIC_URL"),
                "{err}"
            );
        }
    }

    /// Issue 16: `WEBSEARCHD_PAY_TO` alone meant Base mainnet through the default facilitator, which serves testnets
    /// only: every payment would fail. That is a configuration error, naming what to set.
    #[test]
    fn mainnet_needs_a_facilitator_other_than_the_default() {
        let pay_to = ("WEBSEARCHD_PAY_TO", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C");
        let err = config(&[pay_to]).expect_err("the default facilitator serves testnets only");
        assert_eq!(err.var, "WEBSEARCHD_FACILITATOR_URL");
        assert!(err.to_string().contains("WEBSEARCHD_NETWORK=base-sepolia"), "{err}");
        assert!(config(&[pay_to, ("WEBSEARCHD_NETWORK", "base-sepolia")]).is_ok());
        assert!(config(&[pay_to, ("WEBSEARCHD_FACILITATOR_URL", "https://facilitator.example")]).is_ok());
    }

    /// Issue 16: `check-config` left out unset optional variables, among them where keys and journals live.
    #[test]
    fn check_config_shows_every_variable_and_absolute_paths() {
        let text = config(&[("HOME", "/home/ann")]).unwrap().render(Path::new("/srv/websearchd"));
        for var in VARS {
            let lines = text.lines().filter(|l| l.starts_with(&format!("{}=", var.name))).count();
            assert_eq!(lines, 1, "{}: {text}", var.name);
        }
        let state = "/home/ann/.local/state/websearchd";
        for line in [
            format!("WEBSEARCHD_STATE_DIR={state}  # default ($HOME/.local/state/websearchd)"),
            format!("WEBSEARCHD_API_KEYS_FILE={state}/api-keys  # default"),
            format!("WEBSEARCHD_CARD_KEY_FILE={state}/keys/card.key  # default"),
            format!("WEBSEARCHD_RESULT_KEY_FILE={state}/keys/result.key  # default"),
            "WEBSEARCHD_FACILITATOR_AUTH_FILE=(none)  # default".into(),
            format!("#   payments ledger  {state}/payments.journal"),
            format!("#   notary journal   {state}/notary.journal"),
            format!("#   retired keys     {state}/keys/retired.json"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
        let c = config(&[("WEBSEARCHD_STATE_DIR", "/var/lib/websearchd"), ("WEBSEARCHD_API_KEYS_FILE", "keys.txt")])
            .unwrap();
        let text = c.render(Path::new("/etc/websearchd"));
        assert!(text.contains("WEBSEARCHD_STATE_DIR=/var/lib/websearchd  # environment\n"), "{text}");
        assert!(text.contains("WEBSEARCHD_API_KEYS_FILE=/etc/websearchd/keys.txt  # environment (keys.txt)"), "{text}");
    }

    /// Issue 42: the state directory was `./data` of whatever folder a command started in. Unset, it has one home:
    /// systemd's, else the XDG state directory, else root's without a home; an earlier version's `./data` that holds
    /// state comes first, with a warning naming the command that moves it.
    #[test]
    fn the_state_directory_has_one_home() {
        #[track_caller]
        fn check(env: &[(&str, &str)], dir: &str, rule: &str) {
            let c = config(env).unwrap();
            assert_eq!(c.state_dir, Path::new(dir), "{env:?}");
            let recorded = c.resolved.iter().find(|r| r.name == "WEBSEARCHD_STATE_DIR").unwrap();
            assert_eq!((recorded.value.as_str(), recorded.origin), (rule, Origin::Default), "{env:?}");
            assert!(c.warnings.is_empty());
        }
        let home = ("HOME", "/home/ann");
        check(&[home], "/home/ann/.local/state/websearchd", "$HOME/.local/state/websearchd");
        check(&[home, ("XDG_STATE_HOME", "/xdg")], "/xdg/websearchd", "$XDG_STATE_HOME/websearchd");
        // A relative XDG_STATE_HOME is ignored, as the specification says.
        check(&[home, ("XDG_STATE_HOME", "xdg")], "/home/ann/.local/state/websearchd", "$HOME/.local/state/websearchd");
        let systemd = ("STATE_DIRECTORY", "/var/lib/websearchd:/var/lib/other");
        check(&[home, ("XDG_STATE_HOME", "/xdg"), systemd], "/var/lib/websearchd", "$STATE_DIRECTORY");
        for no_home in [&[][..], &[("HOME", "/")], &[("HOME", "")], &[("HOME", "relative")]] {
            check(no_home, "/var/lib/websearchd", "no $HOME");
        }
        let c = config(&[home, systemd, ("WEBSEARCHD_STATE_DIR", "state")]).unwrap();
        assert_eq!(c.state_dir, Path::new("state"));

        // An earlier version's ./data that holds a key is used, and the warning says how to move it.
        let dir = std::env::temp_dir().join(format!("websearchd-config-legacy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let legacy = dir.join("data");
        std::fs::create_dir_all(legacy.join("keys")).unwrap();
        assert!(!holds_state(&legacy), "an empty keys/ is no state");
        std::fs::write(legacy.join("keys/result.key"), "").unwrap();
        assert!(holds_state(&legacy));
        let home_dir = dir.join("home");
        let env = [("HOME".to_string(), home_dir.display().to_string())];
        let mut source = Source::from_pairs(env, None).unwrap();
        source.legacy_state_dir = Some(legacy.clone());
        let c = Config::from_source(&source).unwrap();
        assert_eq!(c.state_dir, legacy);
        let new_home = home_dir.join(".local/state/websearchd");
        let mv = format!(
            "`mkdir -p {} && mv {} {}`",
            new_home.parent().unwrap().display(),
            legacy.display(),
            new_home.display()
        );
        assert!(c.warnings.len() == 1 && c.warnings[0].contains(&mv), "{:?}", c.warnings);
        let text = c.render(Path::new("/"));
        assert!(text.contains(&format!("# warning: the state directory is {}", legacy.display())), "{text}");
        // The new home exists already: no `mv` into it (it would move ./data inside).
        std::fs::create_dir_all(&new_home).unwrap();
        let c = Config::from_source(&source).unwrap();
        assert!(c.warnings[0].contains("exists already") && !c.warnings[0].contains("mv "), "{:?}", c.warnings);
        // WEBSEARCHD_STATE_DIR wins over it, without a warning.
        source.env.insert("WEBSEARCHD_STATE_DIR".into(), "/srv/state".into());
        let c = Config::from_source(&source).unwrap();
        assert_eq!((c.state_dir.as_path(), c.warnings.len()), (Path::new("/srv/state"), 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The shared store's URL is read as redis-cli reads it, and its password never printed.
    #[test]
    fn the_redis_url_is_parsed_and_its_password_hidden() {
        let c = config(&[("WEBSEARCHD_REDIS_URL", "rediss://app:s3cret@cache.internal:6380/2")]).expect("valid");
        let redis = c.redis.as_ref().expect("set");
        assert_eq!((redis.url.port, redis.url.db, redis.url.password.as_deref()), (6380, 2, Some("s3cret")));
        let text = c.render(Path::new("/"));
        assert!(
            text.contains("WEBSEARCHD_REDIS_URL=rediss://app:(hidden)@cache.internal:6380/2  # environment"),
            "{text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
        let err = config(&[("WEBSEARCHD_REDIS_URL", "redis://app:s3cret@host:notaport")]).expect_err("invalid");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert!(config(&[]).expect("valid").redis.is_none());
        assert!(config(&[("WEBSEARCHD_REDIS_PREFIX", "a b")]).is_err());
    }

    #[test]
    fn unknown_variables_are_reported() {
        let c = config(&[("WEBSEARCHD_WORKRES", "3")]).expect("valid");
        assert_eq!(c.unknown_vars, vec!["WEBSEARCHD_WORKRES".to_string()]);
        assert!(c.render(Path::new("/")).contains("WEBSEARCHD_WORKRES is not a known variable"));
    }

    /// Issue 42: env files as people write them (`export`, quotes, comments after a value) are read, and a line that
    /// is not a setting is named by its number, never silently dropped; what systemd reads otherwise is noted.
    #[test]
    fn env_file_syntax() {
        #[track_caller]
        fn check(line: &str, expected: Option<&str>) {
            let file = parse_env_file(&format!("# before\n{line}\n"));
            assert_eq!(file.vars.get("A").map(String::as_str), expected, "{line:?}");
            assert_eq!(file.stray.is_empty(), expected.is_some(), "{line:?}: {:?}", file.stray);
            assert!(file.stray.iter().all(|(n, _)| *n == 2), "{line:?}: {:?}", file.stray);
        }
        for (line, expected) in [
            ("A=4", Some("4")),
            ("  A = 'x y'  ", Some("x y")),
            ("export A=1", Some("1")),
            ("export\tA=1", Some("1")),
            ("A=\"debug\"", Some("debug")),
            ("A=\"a \\\"b\\\" \\\\ \\$HOME \\n\"", Some("a \"b\" \\ $HOME \\n")),
            ("A='a \\\"b # not a comment'", Some("a \\\"b # not a comment")),
            ("A=x # why", Some("x")),
            ("A=\"x y\" # why", Some("x y")),
            ("A= # nothing", Some("")),
            ("A=", Some("")),
            ("A=https://h.example/#frag", Some("https://h.example/#frag")),
            ("A=#x", Some("#x")),
            ("A=x y", Some("x y")),
            ("A=a\\ b", Some("a b")),
            ("A='it'\"'\"'s'", Some("it's")),
            ("A=é", Some("é")),
            ("not a setting", None),
            ("exported A", None),
            ("=novalue", None),
            ("1A=x", None),
            ("my-var=x", None),
            ("A='open", None),
            ("A=\"open \\\"", None),
        ] {
            check(line, expected);
        }
        // `export` alone is a variable's name, as in systemd.
        assert_eq!(parse_env_file("export=1\n").vars.get("export").map(String::as_str), Some("1"));

        let file = parse_env_file("export A=1\nB=2 # two\nC=3\nsecret-token=abc\nD='x\n");
        assert_eq!(file.vars.len(), 3);
        assert_eq!(file.stray.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [4, 5]);
        // Said without the line's text, which may be a secret.
        assert!(file.stray.iter().all(|(_, why)| !why.contains("abc") && !why.contains("token")), "{file:?}");
        assert!(file.stray[1].1.starts_with("D: a ' quote is not closed"), "{file:?}");
        let differs: Vec<_> =
            file.systemd_differs.iter().map(|(n, why)| (*n, why.split(':').next().unwrap())).collect();
        assert_eq!(differs, [(1, "A"), (2, "B")]);
        assert!(file.systemd_differs[0].1.contains("ignores an `export` line"));
        assert!(file.systemd_differs[1].1.contains("keeps it in the value"));
    }

    /// The env file's stray lines are warnings of the configuration (at start, in `check-config`), its settings that
    /// systemd reads otherwise notes of `check-config`.
    #[test]
    fn env_file_lines_are_reported_with_the_file() {
        let dir = std::env::temp_dir().join(format!("websearchd-config-stray-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("env");
        std::fs::write(&path, "export WEBSEARCHD_WORKERS=4\nWEBSEARCHD_LISTEN 127.0.0.1:9\n").unwrap();
        let c = Config::from_source(&Source::from_pairs([], Some(&path)).unwrap()).unwrap();
        assert_eq!(c.workers, 4);
        assert_eq!(c.warnings, [format!("{} line 2: not a setting (NAME=value): ignored", path.display())]);
        let text = c.render(Path::new("/"));
        assert!(text.contains(&format!("# warning: {} line 2: not a setting", path.display())), "{text}");
        assert!(text.contains(&format!("# note: {} line 1: WEBSEARCHD_WORKERS: read here", path.display())), "{text}");
        std::fs::write(&path, vec![b'#'; ENV_FILE_BYTES_MAX as usize + 1]).unwrap();
        let err = Source::from_pairs([], Some(&path)).expect_err("too large");
        assert!(err.allowed.contains("at most 1048576 bytes"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn environment_wins_over_file() {
        let dir = std::env::temp_dir().join(format!("websearchd-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("env");
        std::fs::write(&file, "WEBSEARCHD_WORKERS=4\nWEBSEARCHD_QUEUE_DEPTH=7\n").expect("write");
        let source =
            Source::from_pairs([("WEBSEARCHD_WORKERS".to_string(), "5".to_string())], Some(&file)).expect("source");
        let c = Config::from_source(&source).expect("valid");
        assert_eq!((c.workers, c.queue_depth), (5, 7));
        let depth = c.resolved.iter().find(|r| r.name == "WEBSEARCHD_QUEUE_DEPTH").expect("recorded");
        assert_eq!(depth.origin, Origin::File);
        // check-config names the file given on the command line.
        let named = c.resolved.iter().find(|r| r.name == "WEBSEARCHD_ENV_FILE").expect("recorded");
        assert_eq!((named.value.as_str(), named.origin), (file.to_str().expect("utf-8"), Origin::Flag));
        std::fs::remove_dir_all(&dir).ok();
    }

    /// docs/configuration.md's tables say what `VARS` says, and name no other variable.
    #[test]
    fn configuration_page_documents_every_variable() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md"))
            .expect("docs/configuration.md");
        // Each row whole (what it means too), in the order of VARS and `check-config`.
        let mut after = 0;
        for v in VARS {
            let row = format!("| `{}` | `{}` | {} | {} |", v.name, v.default, v.allowed, v.meaning);
            let at = page.find(&row).unwrap_or_else(|| panic!("docs/configuration.md lacks the row\n{row}\n"));
            assert!(at > after, "docs/configuration.md's row of {} is out of the order of VARS", v.name);
            after = at;
        }
        let rows = page.lines().filter(|l| l.starts_with("| `WEBSEARCHD_")).count();
        assert_eq!(rows, VARS.len(), "docs/configuration.md has a row for a variable VARS does not name");
    }

    #[test]
    fn missing_env_file_is_an_error() {
        let err = Source::from_pairs([], Some(Path::new("/nonexistent/websearchd.env"))).expect_err("missing");
        assert_eq!(err.var, "WEBSEARCHD_ENV_FILE");
    }
}
