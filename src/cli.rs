//! The command line: `serve` (the default), `search`, `extract`, `mcp`, `check-config`, `health`, `payments`,
//! `journal`, `keygen`, `apikey`, `verify`, `help [CMD]` (and `CMD --help`), `--version`. Exit codes: 0 success,
//! 1 a failure at run time (cannot listen, the search failed), 2 a usage or configuration error (but `health` says 0 or
//! 1 only, as a container's health check must).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::app::App;
use crate::clock::SystemClock;
use crate::config::{Config, Source};
use crate::http::{sys::TerminationSignals, Limits, Server, ServerStats};
use crate::search::{Engine, SearchRequest};

const USAGE: &str = "\
websearchd: a web search service for software agents, paid per call (x402), with signed answers

Usage:
  websearchd [serve]                        run the HTTP server (the default)
  websearchd search QUERY [--max-results N] [--extract]
                                            run one search through the same pipeline, print the JSON answer
  websearchd extract URL|--file PATH [--tokens N] [--query Q]
                                            print a page's main content as markdown (N tokens, default
                                            2000; 0 for no budget); over the budget, with Q, the title,
                                            the lead and the passages most relevant to Q
  websearchd mcp                            an MCP server on stdin/stdout (tools web_search, extract_page;
                                            the same pipeline, no payment)
  websearchd check-config                   print the resolved configuration, secrets hidden
  websearchd health [--url URL]             exit 0 if the server's /health answers 200, else 1 with one line on
                                            stderr (a container's health check); default URL: the configured
                                            listen address's /health, on loopback for a wildcard address
  websearchd payments                       list the payment ledger (one JSON record per line) and a summary
  websearchd journal check FILE             check a journal (payments.journal, notary.journal): records, a torn
                                            tail, the first damaged record and its byte offset
  websearchd journal repair FILE --truncate-at OFFSET
                                            with the server stopped: copy FILE to FILE.<ms>.bak, cut it at the
                                            damaged record at OFFSET, and mark the cut so that no sequence
                                            number is reused
  websearchd keygen                         rotate the card and result keys (old public keys stay published)
  websearchd apikey new [--agent] [--comment TEXT]
                                            add an API key and print it (once): the operator's (the core
                                            endpoints and the Tavily door), or with --agent an agent's (the
                                            Tavily door only)
  websearchd verify --body FILE --headers FILE [--jwks FILE|URL]
                                            check a saved signed answer offline (default key set: this
                                            instance's own keys)
  websearchd verify --mcp FILE [--jwks FILE|URL]
                                            check an MCP tool result as a client saved it (the JSON-RPC
                                            response, its result, or the server-sent event carrying it)
  websearchd verify --receipts FILE [--jwks FILE|URL]
                                            check notary receipts (one JSON receipt, a JSON array, JSON
                                            lines, or the notary journal) and the chain they form
  websearchd help [CMD] | CMD --help       the usage of every command, or of CMD
  websearchd --version

Options:
  --env-file PATH   read variables from PATH (systemd EnvironmentFile syntax) where the environment lacks them

Configuration comes from WEBSEARCHD_* environment variables: see `check-config` and docs/configuration.md.
";

/// The usage of one command: its lines of `USAGE` (each `  websearchd CMD ...` line and the lines that go on under
/// it), then the options and the configuration paragraph; `None` for a command `USAGE` does not name.
fn usage_of(cmd: &str) -> Option<String> {
    let (head, rest) = USAGE.split_once("\nUsage:\n")?;
    let (commands, tail) = rest.split_once("\n\nOptions:")?;
    let mut out = format!("{head}\nUsage:\n");
    let mut taking = false;
    for line in commands.lines() {
        if let Some(named) = line.strip_prefix("  websearchd ") {
            let word = named.split_whitespace().next().unwrap_or("");
            taking = word == cmd || (cmd == "serve" && word == "[serve]");
        }
        if taking {
            out.push_str(line);
            out.push('\n');
        }
    }
    if out.ends_with("\nUsage:\n") {
        return None;
    }
    out.push_str("\nOptions:");
    out.push_str(tail);
    Some(out)
}

#[derive(Debug, PartialEq, Eq)]
enum Command {
    Serve,
    Search {
        query: String,
        max_results: Option<String>,
        extract: bool,
    },
    CheckConfig,
    Health {
        url: Option<String>,
    },
    Payments,
    JournalCheck {
        file: PathBuf,
    },
    JournalRepair {
        file: PathBuf,
        truncate_at: String,
    },
    Extract {
        target: String,
        file: bool,
        tokens: Option<String>,
        query: Option<String>,
    },
    Mcp,
    Keygen,
    Verify {
        body: PathBuf,
        headers: PathBuf,
        jwks: Option<PathBuf>,
    },
    VerifyMcp {
        file: PathBuf,
        jwks: Option<PathBuf>,
    },
    VerifyReceipts {
        receipts: PathBuf,
        jwks: Option<PathBuf>,
    },
    ApiKeyNew {
        comment: Option<String>,
        /// An agent's key: the Tavily door only.
        agent: bool,
    },
    /// The usage of every command, or of the one named (`help CMD`, `CMD --help`).
    Help(Option<String>),
    Version,
}

#[derive(Debug, PartialEq, Eq)]
struct Invocation {
    command: Command,
    env_file: Option<PathBuf>,
}

fn parse_args(args: Vec<OsString>) -> Result<Invocation, String> {
    let mut args = args.into_iter().map(|a| a.into_string().map_err(|a| format!("argument {a:?} is not UTF-8")));
    let mut env_file = None;
    let mut positional = Vec::new();
    let mut max_results = None;
    let mut extract = false;
    let mut body = None;
    let mut file = None;
    let mut tokens = None;
    let mut query = None;
    let mut headers = None;
    let mut jwks = None;
    let mut receipts = None;
    let mut mcp = None;
    let mut comment = None;
    let mut agent = false;
    let mut truncate_at = None;
    let mut url = None;
    let mut help = false;
    let mut version = false;
    while let Some(arg) = args.next() {
        let arg = arg?;
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args.next().ok_or_else(|| format!("{what} needs a value"))?,
            }
        };
        match name.as_str() {
            "-h" | "--help" => help = true,
            "-V" | "--version" => version = true,
            "--env-file" => env_file = Some(PathBuf::from(value("--env-file")?)),
            "--max-results" => max_results = Some(value("--max-results")?),
            "--extract" => extract = true,
            "--agent" => agent = true,
            "--body" => body = Some(PathBuf::from(value("--body")?)),
            "--file" => file = Some(value("--file")?),
            "--tokens" => tokens = Some(value("--tokens")?),
            "--query" => query = Some(value("--query")?),
            "--headers" => headers = Some(PathBuf::from(value("--headers")?)),
            "--jwks" => jwks = Some(PathBuf::from(value("--jwks")?)),
            "--receipts" | "--receipt" => receipts = Some(PathBuf::from(value("--receipts")?)),
            "--mcp" => mcp = Some(PathBuf::from(value("--mcp")?)),
            "--comment" => comment = Some(value("--comment")?),
            "--truncate-at" => truncate_at = Some(value("--truncate-at")?),
            "--url" => url = Some(value("--url")?),
            "--" => {
                for rest in args.by_ref() {
                    positional.push(rest?);
                }
            }
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option {s}")),
            _ => positional.push(arg),
        }
    }
    let command = if help {
        // `CMD --help` is about CMD; `--help` alone about everything.
        Command::Help(positional.into_iter().next().filter(|c| c != "help"))
    } else if positional.first().map(String::as_str) == Some("help") {
        match positional.get(1..).unwrap_or_default() {
            [] => Command::Help(None),
            [cmd] => Command::Help(Some(cmd.clone())),
            [_, extra, ..] => return Err(format!("unexpected argument {extra:?}")),
        }
    } else if version {
        Command::Version
    } else {
        let mut positional = positional.into_iter();
        let command = match positional.next().as_deref() {
            None | Some("serve") => Command::Serve,
            Some("check-config") => Command::CheckConfig,
            Some("health") => Command::Health { url: url.take() },
            Some("mcp") => Command::Mcp,
            Some("payments") => Command::Payments,
            Some("keygen") => Command::Keygen,
            Some("journal") => match (positional.next().as_deref(), positional.next(), truncate_at.take()) {
                (Some("check"), Some(file), None) => Command::JournalCheck { file: file.into() },
                (Some("repair"), Some(file), Some(at)) => Command::JournalRepair { file: file.into(), truncate_at: at },
                _ => return Err("journal needs `check FILE` or `repair FILE --truncate-at OFFSET`".into()),
            },
            Some("extract") => match (file.take(), positional.next()) {
                (Some(path), None) => {
                    Command::Extract { target: path, file: true, tokens: tokens.take(), query: query.take() }
                }
                (None, Some(url)) => {
                    Command::Extract { target: url, file: false, tokens: tokens.take(), query: query.take() }
                }
                _ => return Err("extract needs a URL or --file PATH (not both)".into()),
            },
            Some("verify") => match (body.take(), headers.take(), receipts.take(), mcp.take()) {
                (Some(body), Some(headers), None, None) => Command::Verify { body, headers, jwks: jwks.take() },
                (None, None, Some(receipts), None) => Command::VerifyReceipts { receipts, jwks: jwks.take() },
                (None, None, None, Some(file)) => Command::VerifyMcp { file, jwks: jwks.take() },
                _ => return Err("verify needs --body FILE and --headers FILE, --mcp FILE, or --receipts FILE".into()),
            },
            Some("apikey") => match positional.next().as_deref() {
                Some("new") => Command::ApiKeyNew { comment: comment.take(), agent },
                _ => return Err("apikey needs a subcommand: new".into()),
            },
            Some("search") => {
                let query = positional.by_ref().collect::<Vec<_>>().join(" ");
                if query.trim().is_empty() {
                    return Err("search needs a QUERY".into());
                }
                Command::Search { query, max_results: max_results.take(), extract }
            }
            Some(other) => return Err(format!("unknown command {other:?}")),
        };
        if let Some(extra) = positional.next() {
            return Err(format!("unexpected argument {extra:?}"));
        }
        if truncate_at.is_some() {
            return Err("--truncate-at goes with journal repair".into());
        }
        if url.is_some() {
            return Err("--url goes with health".into());
        }
        if mcp.is_some() {
            return Err("--mcp goes with verify".into());
        }
        if query.is_some() {
            return Err("--query goes with extract".into());
        }
        if !matches!(command, Command::Search { .. }) && (max_results.is_some() || extract) {
            return Err("--max-results and --extract go with search".into());
        }
        command
    };
    Ok(Invocation { command, env_file })
}

pub fn main(args: Vec<OsString>) -> ExitCode {
    // Before any thread exists (the arenas are bounded as threads take them).
    crate::http::sys::tune_allocator();
    let invocation = match parse_args(args) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("websearchd: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match invocation.command {
        Command::Help(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Command::Help(Some(cmd)) => {
            return match usage_of(&cmd) {
                Some(usage) => {
                    print!("{usage}");
                    ExitCode::SUCCESS
                }
                None => {
                    eprintln!("websearchd: unknown command {cmd:?}\n\n{USAGE}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Version => {
            println!("websearchd {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        // A journal is named by its path: these work without (and whatever) the configuration.
        Command::JournalCheck { file } => return journal_check(&file),
        Command::JournalRepair { file, truncate_at } => return journal_repair(&file, &truncate_at),
        Command::Health { url: Some(url) } => return health(&url),
        _ => {}
    }
    let config = match Source::from_process(invocation.env_file.as_deref()).and_then(|s| Config::from_source(&s)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("websearchd: {e}");
            // A health check's 2 is reserved (Docker's HEALTHCHECK): a configuration it cannot read is unhealthy.
            return ExitCode::from(if matches!(invocation.command, Command::Health { .. }) { 1 } else { 2 });
        }
    };
    // `serve` and `mcp` log them, `check-config` lists them; the other commands say them before their work.
    if !matches!(invocation.command, Command::Serve | Command::Mcp | Command::CheckConfig) {
        for warning in &config.warnings {
            eprintln!("websearchd: warning: {warning}");
        }
    }
    match invocation.command {
        Command::CheckConfig => check_config(&config),
        Command::Health { .. } => health(&health_url(config.listen)),
        Command::Search { query, max_results, extract } => search(config, &query, max_results, extract),
        Command::Payments => payments(&config),
        Command::Keygen => keygen(&config),
        Command::Extract { target, file, tokens, query } => {
            extract(&config, &target, file, tokens.as_deref(), query.as_deref().unwrap_or(""))
        }
        Command::Verify { body, headers, jwks } => verify(&config, &body, &headers, jwks.as_deref()),
        Command::VerifyMcp { file, jwks } => verify_mcp(&config, &file, jwks.as_deref()),
        Command::VerifyReceipts { receipts, jwks } => verify_receipts(&config, &receipts, jwks.as_deref()),
        Command::ApiKeyNew { comment, agent } => apikey_new(&config, comment.as_deref(), agent),
        Command::Mcp => mcp(config),
        _ => serve(config),
    }
}

/// Prints the resolved configuration; with payments on, asks the facilitator whether it serves the network (exit 2
/// when it answers that it does not, as `serve` would refuse to start). Its warnings (an env file's line that is not
/// a setting, an unknown variable) are said on stderr too, and do not change the exit code: `serve` starts with them.
fn check_config(config: &Config) -> ExitCode {
    use crate::x402::facilitator::{Facilitator, Support};
    print!("{}", config.render(&std::env::current_dir().unwrap_or_default()));
    for name in &config.unknown_vars {
        eprintln!("websearchd: warning: {name} is not a known variable (a typo?)");
    }
    for warning in &config.warnings {
        eprintln!("websearchd: warning: {warning}");
    }
    if config.pay_to.is_none() {
        return ExitCode::SUCCESS;
    }
    let facilitator = match Facilitator::from_config(config) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("websearchd: {e}");
            return ExitCode::from(2);
        }
    };
    let support = facilitator.support(config.network);
    let said = support.describe(facilitator.url(), config.network);
    println!("# {said}");
    match support {
        Support::No(_) => {
            eprintln!("websearchd: {said}");
            ExitCode::from(2)
        }
        Support::Unknown(_) => {
            eprintln!("websearchd: warning: {said}");
            ExitCode::SUCCESS
        }
        Support::Yes | Support::NotOffered => ExitCode::SUCCESS,
    }
}

fn search(config: Config, query: &str, max_results: Option<String>, extract: bool) -> ExitCode {
    crate::logger::init(&config.log);
    let mut body = serde_json::json!({ "query": query, "extract": extract });
    if let Some(n) = max_results {
        match n.parse::<i64>() {
            Ok(n) => {
                if let Some(fields) = body.as_object_mut() {
                    fields.insert("max_results".into(), n.into());
                }
            }
            Err(_) => {
                eprintln!("websearchd: --max-results must be an integer, not {n:?}");
                return ExitCode::from(2);
            }
        }
    }
    let request = match SearchRequest::from_fields(body.as_object().unwrap_or(&Default::default())) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("websearchd: {}", e.message);
            return ExitCode::from(2);
        }
    };
    let engine = Engine::from_config(&config, Arc::new(SystemClock));
    let request_id = crate::http::RequestIds::new().next();
    let (value, code) = match engine.search(&request, &request_id) {
        Ok(mut answer) => {
            if request.extract > 0 {
                let pages = crate::page::Pages::new(&config, 1);
                pages.add_to_answer(
                    crate::page::LOCAL,
                    &mut answer,
                    request.extract,
                    request.extract_tokens,
                    &request.query,
                );
            }
            (answer, ExitCode::SUCCESS)
        }
        Err(e) => (e.body(), ExitCode::from(1)),
    };
    println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    code
}

/// `mcp`: the MCP server on stdio (`crate::mcp`), its keys in the state directory as `serve` keeps them.
fn mcp(config: Config) -> ExitCode {
    crate::logger::init(&config.log);
    log_configuration(&config);
    if let Err(e) = create_state_dir(&config) {
        log::error!("the state directory: {e}");
        return ExitCode::from(1);
    }
    crate::mcp::tools::run(config)
}

fn serve(config: Config) -> ExitCode {
    crate::logger::init(&config.log);
    log_configuration(&config);
    if let Err(e) = create_state_dir(&config) {
        log::error!("the state directory: {e}");
        return ExitCode::from(1);
    }
    // Before any thread exists, so that every thread inherits the mask and only the signal thread sees them.
    let signals = match TerminationSignals::block() {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot block termination signals: {e}");
            return ExitCode::from(1);
        }
    };
    let stats = Arc::new(ServerStats::default());
    let limits = Limits::from_config(&config);
    let listen = config.listen;
    let clock: Arc<dyn crate::clock::Clock> = Arc::new(SystemClock);
    let mut gate = match crate::x402::Gate::from_config(&config, clock.clone()) {
        Ok(g) => g,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::from(1);
        }
    };
    match gate.terms() {
        Some(t) => log::info!(
            "payments on: {} atomic USDC per search on {} to {}, facilitator {}",
            t.price,
            t.network.caip2(),
            crate::x402::eip712::checksum_address(&t.pay_to),
            config.facilitator_url
        ),
        None => log::info!("payments off (no WEBSEARCHD_PAY_TO): searches are free"),
    }
    if let Some(support) = gate.check_facilitator() {
        use crate::x402::facilitator::Support;
        let said = support.describe(&config.facilitator_url, config.network);
        match support {
            Support::Yes => log::info!("{said}"),
            Support::No(_) => {
                log::error!("{said}; not starting");
                log::logger().flush();
                return ExitCode::from(2);
            }
            Support::Unknown(_) => log::warn!(
                "PAYMENTS UNCHECKED: {said}; starting anyway: /health reports it, and it is asked again at the next \
                 payment"
            ),
            Support::NotOffered => log::warn!("{said}"),
        }
    }
    let keys = match crate::sign::Keyring::load_or_create(&config.key_paths()) {
        Ok(k) => Arc::new(k),
        Err(e) => {
            log::error!("cannot load or create the signing keys: {}", serve_state_error(&config, &e));
            return ExitCode::from(1);
        }
    };
    log::info!("signing answers with {} (documents with {})", keys.result.kid, keys.card.kid);
    let mut engine = Engine::from_config(&config, clock.clone());
    if let Some(settings) = config.redis.clone() {
        let url = settings.url.redacted();
        let store = match crate::store::Store::new(settings, &config.redis_prefix) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                log::error!("the shared store {url}: {e}");
                return ExitCode::from(1);
            }
        };
        match store.ping() {
            Ok(()) => log::info!("sharing state with other nodes through {url} (keys under {})", config.redis_prefix),
            // A node starts without it, and refuses paid calls until it answers.
            Err(e) => log::warn!("sharing state through {url}: {e}; paid calls are refused until it answers"),
        }
        gate.share(store.clone());
        engine.share(store);
    }
    let notary_listen = config.notary_listen;
    let app = match App::new(config, stats.clone(), engine, gate, keys, clock) {
        Ok(a) => Arc::new(a),
        Err(e) => {
            log::error!("{e}");
            return ExitCode::from(1);
        }
    };
    // The map's poller: one thread for the life of the process, when a layer is active. Outside polling is opt-in,
    // and the hosts it reaches are said at start.
    match app.map() {
        Some(map) if map.any_active() => {
            let mut hosts: Vec<String> = Vec::new();
            for (_, _, url, _) in map.feed_health() {
                let host = host_of(&url);
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
            log::info!("map: polling {} (WEBSEARCHD_MAP_LAYERS)", hosts.join(", "));
            if let Err(e) = map.spawn_poller(Arc::new(std::sync::atomic::AtomicBool::new(false))) {
                log::error!("cannot start the map poller: {e}");
                return ExitCode::from(1);
            }
        }
        Some(_) => log::info!("map: no layer polled (WEBSEARCHD_MAP_LAYERS names the layers to poll, or all)"),
        None => {}
    }
    // The notary's own listener, if configured: its own workers and limits, the same application.
    let notary_server = match notary_listen {
        None => None,
        Some(addr) => match Server::bind(addr, limits.clone(), app.notary_only(), Arc::new(ServerStats::default())) {
            Ok(s) => Some(s),
            Err(e) => {
                log::error!("cannot listen on {addr} (WEBSEARCHD_NOTARY_LISTEN): {e}");
                return ExitCode::from(1);
            }
        },
    };
    let server = match Server::bind(listen, limits.clone(), app, stats) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot listen on {listen}: {e}");
            return ExitCode::from(1);
        }
    };
    let handle = server.shutdown_handle();
    let notary_handle = notary_server.as_ref().map(Server::shutdown_handle);
    let spawned = std::thread::Builder::new().name("signals".into()).spawn(move || {
        let name = signals.wait();
        log::info!("{name} received: no new connections; finishing requests in flight");
        handle.shutdown();
        if let Some(h) = &notary_handle {
            h.shutdown();
        }
        let name = signals.wait();
        log::warn!("{name} received again: exiting now");
        log::logger().flush();
        std::process::exit(130);
    });
    if let Err(e) = spawned {
        log::error!("cannot start the signal thread: {e}");
        return ExitCode::from(1);
    }
    let notary_thread = match notary_server {
        None => None,
        Some(s) => {
            if let Ok(addr) = s.local_addr() {
                log::info!("notary served on http://{addr} too (WEBSEARCHD_NOTARY_LISTEN)");
            }
            match std::thread::Builder::new().name("notary-server".into()).spawn(move || s.run()) {
                Ok(t) => Some(t),
                Err(e) => {
                    log::error!("cannot start the notary listener: {e}");
                    return ExitCode::from(1);
                }
            }
        }
    };
    let addr = server.local_addr().unwrap_or(listen);
    log::info!(
        "websearchd {} listening on http://{addr} ({} workers, queue {}, {} connections max)",
        env!("CARGO_PKG_VERSION"),
        limits.workers,
        limits.queue_depth,
        limits.connections_max
    );
    let mut result = server.run();
    if let Some(t) = notary_thread {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = result.and(Err(e)),
            Err(_) => log::error!("the notary listener panicked"),
        }
    }
    log::logger().flush();
    match result {
        Ok(()) => {
            log::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("server failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// How long `health` waits for the whole answer.
const HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Bytes of `/health`'s body read at most (it is a few hundred).
const HEALTH_BODY_BYTES_MAX: u64 = 65_536;

/// `/health` of the server listening on `listen`: on loopback when it listens on a wildcard address.
fn health_url(listen: std::net::SocketAddr) -> String {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}/health", std::net::SocketAddr::new(ip, listen.port()))
}

/// `health`: 0 when `url` answers 200, else 1 with one line on stderr. No redirect is followed: a health check asks
/// one server.
fn health(url: &str) -> ExitCode {
    let limits = crate::fetch::Limits::within(HEALTH_TIMEOUT, HEALTH_BODY_BYTES_MAX, 0);
    match crate::fetch::Client::new(limits, crate::fetch::guard::Policy::default()).get(url, &[]) {
        Ok(answer) if answer.status == 200 => ExitCode::SUCCESS,
        Ok(answer) => {
            eprintln!("websearchd health: {url} answered {}", answer.status);
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("websearchd health: {url}: {e}");
            ExitCode::from(1)
        }
    }
}

/// What `serve` and `mcp` say of their configuration at start: unknown variables, the configuration's warnings, and
/// the state directory, absolute, with the rule that chose it when no variable did.
fn log_configuration(config: &Config) {
    for name in &config.unknown_vars {
        log::warn!("{name} is not a known variable (a typo?); it is ignored");
    }
    for warning in &config.warnings {
        log::warn!("{warning}");
    }
    let dir = std::path::absolute(&config.state_dir).unwrap_or_else(|_| config.state_dir.clone());
    let how = match config.resolved.iter().find(|r| r.name == "WEBSEARCHD_STATE_DIR") {
        Some(r) if r.origin == crate::config::Origin::Default => format!("default: {}", r.value),
        Some(r) => format!("WEBSEARCHD_STATE_DIR, {}", r.origin),
        None => String::new(),
    };
    log::info!("state directory {} ({how})", dir.display());
}

/// The host (and port) of a configured URL, for the log: its origin without the scheme, and without any
/// `user:password@`, which is not for a log.
fn host_of(url: &str) -> String {
    let origin = crate::urls::origin(url);
    let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
    authority.rsplit_once('@').map_or(authority, |(_, h)| h).to_owned()
}

/// Prints a page's main content (from a URL through the SSRF guard, or from a file) as markdown, cut to `tokens`
/// for `query` (empty: none).
fn extract(config: &Config, target: &str, file: bool, tokens: Option<&str>, query: &str) -> ExitCode {
    crate::logger::init(&config.log);
    let tokens = match tokens.map(str::parse::<usize>) {
        None => crate::search::EXTRACT_TOKENS_DEFAULT,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("websearchd: --tokens must be a whole number (0 for no budget)");
            return ExitCode::from(2);
        }
    };
    if file {
        let html = match std::fs::read(target) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("websearchd: {target}: {e}");
                return ExitCode::from(2);
            }
        };
        let extract = crate::extract::Extractor::run(&html, crate::extract::Options::default());
        // A cap hit while extracting says truncated too, as for a URL.
        let page = crate::page::Extracted::new(target.to_owned(), extract).fit(tokens, query);
        return print_markdown(target, &page);
    }
    let (policy, limits) = config.fetch_policy();
    match crate::page::extract(target, &policy, &limits, tokens, query) {
        Ok(page) => print_markdown(target, &page),
        Err(e) => {
            eprintln!("websearchd: {target}: {} ({})", e, e.code());
            ExitCode::from(1)
        }
    }
}

/// Prints an extract on stdout. A page with no main content prints nothing and fails (exit 1) with a one-line
/// reason on stderr, so that a script can tell it from a page that said something. A reader that goes away early
/// (`| head`) ends the output quietly: that is not an error. A page cut says so on stderr, and which cut.
fn print_markdown(target: &str, page: &crate::page::Page) -> ExitCode {
    use std::io::Write;
    let markdown = &page.markdown;
    if markdown.trim().is_empty() {
        eprintln!("websearchd: {target}: no main content was found on the page");
        return ExitCode::from(1);
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{markdown}").and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("websearchd: writing the extract: {e}");
            return ExitCode::from(1);
        }
    }
    if page.truncated {
        let cut = match page.cut {
            crate::extract::budget::Cut::Query => ", the passages most relevant to the query",
            _ => "",
        };
        eprintln!("(truncated to about {} tokens{cut})", page.tokens);
    }
    ExitCode::SUCCESS
}

/// Rotates both keys; the running server picks them up on its next start.
fn keygen(config: &Config) -> ExitCode {
    crate::logger::init(&config.log);
    let now = crate::clock::Clock::now_unix_ms(&SystemClock);
    let paths = config.key_paths();
    match crate::sign::Keyring::rotate(&paths, now) {
        Ok((k, retired)) => {
            println!("card key:   {}\nresult key: {}", k.card.kid, k.result.kid);
            if retired > 0 {
                println!("the previous keys stay published as retired; restart the server to sign with the new ones");
            } else {
                println!("there were no keys before: none retired");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("websearchd: cannot rotate the keys: {}", state_error(config, &e));
            ExitCode::from(1)
        }
    }
}

/// Checks a saved answer: the body bytes, the response headers (as `curl -D` writes them), and a JWKS.
fn verify(
    config: &Config,
    body: &std::path::Path,
    headers: &std::path::Path,
    jwks: Option<&std::path::Path>,
) -> ExitCode {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let loaded = (|| -> Result<(Vec<u8>, String, serde_json::Value), String> {
        let body = read(body)?;
        let headers = String::from_utf8_lossy(&read(headers)?).into_owned();
        Ok((body, headers, key_set(config, jwks)?))
    })();
    let (body, headers, jwks) = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("websearchd: {e}");
            return ExitCode::from(2);
        }
    };
    let lookup = |name: &str| {
        headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    match crate::sign::verify_answer(&body, lookup, &crate::sign::keys_from_jwks(&jwks)) {
        Ok(v) => {
            println!("ok: signed by {} ({} key), over the {} form", v.kid, v.status, v.object.name());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("not valid: {e}");
            ExitCode::from(1)
        }
    }
}

/// Checks a saved MCP tool result (`web_search`, `extract_page`, from `websearchd mcp` or `/mcp`) with nothing written
/// by hand: the text of `content[0]` against `structuredContent.signature`, as `mcp::tools::verify` does. The file is
/// what a client saves: the JSON-RPC response, its `result` alone, or a Streamable HTTP answer as server-sent events
/// (the message on its last `data:` line).
fn verify_mcp(config: &Config, file: &std::path::Path, jwks: Option<&std::path::Path>) -> ExitCode {
    use serde_json::Value;
    let loaded = (|| -> Result<(Value, Value), String> {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let message = serde_json::from_slice::<Value>(&bytes).or_else(|e| {
            let text = String::from_utf8_lossy(&bytes);
            let data = text.lines().rev().find_map(|l| l.strip_prefix("data:"));
            data.map_or(Err(e), serde_json::from_str).map_err(|e| {
                format!("{}: neither a JSON-RPC message nor server-sent events carrying one: {e}", file.display())
            })
        })?;
        Ok((message, key_set(config, jwks)?))
    })();
    let (message, jwks) = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("websearchd: {e}");
            return ExitCode::from(2);
        }
    };
    let result = message.get("result").unwrap_or(&message);
    let text = result.pointer("/content/0/text").and_then(Value::as_str);
    let signature = result.pointer("/structuredContent/signature");
    let (Some(text), Some(signature)) = (text, signature) else {
        let why = if message.get("error").is_some() || result.get("isError") == Some(&Value::Bool(true)) {
            "it is an error, and errors are not signed"
        } else {
            "it has no content[0].text and structuredContent.signature (is it a tools/call result?)"
        };
        println!("not valid: {}: {why}", file.display());
        return ExitCode::from(1);
    };
    match crate::mcp::tools::verify(text, signature, &crate::sign::keys_from_jwks(&jwks)) {
        Ok(v) => {
            println!("ok: signed by {} ({} key), over the text of content[0]", v.kid, v.status);
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("not valid: {e}");
            ExitCode::from(1)
        }
    }
}

/// Largest key set read from `--jwks URL`, and the time allowed to fetch it.
const JWKS_BYTES_MAX: u64 = 1_048_576;
const JWKS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Redirects followed to a `--jwks` URL (a site moved to https, or to a trailing slash).
const JWKS_REDIRECTS_MAX: u32 = 3;

/// The key set to verify against: `--jwks` (a file, or an http(s) URL such as a service's
/// `/.well-known/jwks.json`), else this instance's own keys. Those are only read, never created: keys made here
/// would have signed nothing, and `verify` would leave a key pair behind on a machine that only checks answers.
fn key_set(config: &Config, jwks: Option<&std::path::Path>) -> Result<serde_json::Value, String> {
    let Some(source) = jwks else {
        let paths = config.key_paths();
        if let Some(absent) = [&paths.card, &paths.result].into_iter().find(|p| !p.exists()) {
            return Err(format!(
                "this machine has no signing keys of its own ({} is absent); give the key set of the service that \
                 signed: --jwks URL (its /.well-known/jwks.json) or --jwks FILE",
                absent.display()
            ));
        }
        return crate::sign::Keyring::load_or_create(&paths).map(|k| k.jwks()).map_err(|e| state_error(config, &e));
    };
    let text = source.to_string_lossy();
    let bytes = if text.starts_with("http://") || text.starts_with("https://") {
        let limits = crate::fetch::Limits::within(JWKS_TIMEOUT, JWKS_BYTES_MAX, JWKS_REDIRECTS_MAX);
        let client = crate::fetch::Client::new(limits, crate::fetch::guard::Policy::default());
        let fetched = client.get(&text, &[("Accept", "application/json")]).map_err(|e| format!("{text}: {e}"))?;
        if fetched.status != 200 {
            return Err(format!("{text}: HTTP {}", fetched.status));
        }
        fetched.body
    } else {
        std::fs::read(source).map_err(|e| format!("{text}: {e}"))?
    };
    serde_json::from_slice(&bytes).map_err(|e| format!("{text}: not a JSON key set: {e}"))
}

/// Adds an API key to the keys file and prints it: the only time it is shown.
fn apikey_new(config: &Config, comment: Option<&str>, agent: bool) -> ExitCode {
    let prefix = if agent { crate::apikeys::AGENT_KEY_PREFIX } else { crate::apikeys::KEY_PREFIX };
    match crate::apikeys::add_new_key_with(&config.state_dir, &config.api_keys_file, comment, prefix) {
        Ok(key) => {
            println!("{key}");
            let file = config.api_keys_file.display();
            if agent {
                eprintln!("added to {file} (an agent's key: the Tavily door's API key; it is not shown again)");
            } else {
                eprintln!(
                    "added to {file} (send it in the X-WALLET header to {}{{/state,/meshgraph}}, or as the Tavily \
                     door's API key; it is not shown again)",
                    config.core_path.as_deref().unwrap_or("(core off)")
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("websearchd: {}", state_error(config, &e));
            ExitCode::from(1)
        }
    }
}

/// Receipt records from a file: one JSON object, a JSON array, JSON lines, or journal lines (`<crc> <json>`).
fn read_receipts(bytes: &[u8]) -> Result<Vec<serde_json::Value>, String> {
    use serde_json::Value;
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return match v {
            Value::Array(items) => Ok(items),
            Value::Object(_) => Ok(vec![v]),
            _ => Err("the file holds neither a receipt nor a list of receipts".into()),
        };
    }
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let json = match line.split_once(' ') {
            Some((crc, rest)) if crc.len() == 8 && crc.bytes().all(|b| b.is_ascii_hexdigit()) => rest,
            _ => line,
        };
        out.push(serde_json::from_str(json).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok(out)
}

/// Checks each receipt's signature, then the links between consecutive receipts (gaps are reported).
fn verify_receipts(config: &Config, path: &std::path::Path, jwks: Option<&std::path::Path>) -> ExitCode {
    let loaded = (|| -> Result<(Vec<serde_json::Value>, serde_json::Value), String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut records = read_receipts(&bytes)?;
        // A notary journal may hold repair markers: they are not receipts.
        records.retain(|r| crate::journal::repair_removed(r).is_none());
        Ok((records, key_set(config, jwks)?))
    })();
    let (records, jwks) = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("websearchd: {e}");
            return ExitCode::from(2);
        }
    };
    if records.is_empty() {
        println!("not valid: no receipt in {}", path.display());
        return ExitCode::from(1);
    }
    let keys = crate::sign::keys_from_jwks(&jwks);
    let mut bad = 0;
    let mut chain: Vec<(u64, &serde_json::Value)> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        match crate::notary::verify_record(r, &keys) {
            Ok(seq) => chain.push((seq, r.get("receipt").unwrap_or(r))),
            Err(e) => {
                let seq = r.pointer("/receipt/seq").cloned().unwrap_or_default();
                println!("receipt {seq} (record {}): not valid: {e}", i + 1);
                bad += 1;
            }
        }
    }
    chain.sort_unstable_by_key(|(seq, _)| *seq);
    let mut gaps = Vec::new();
    for pair in chain.windows(2) {
        let [(a, ra), (b, rb)] = pair else { continue };
        if b == a {
            println!("receipt {b}: appears twice");
            bad += 1;
        } else if *b != a + 1 {
            gaps.push(format!("{}..{}", a + 1, b - 1));
        } else if !crate::notary::follows(ra, rb) {
            println!("receipt {b}: prev is not the hash of receipt {a}: the chain is broken here");
            bad += 1;
        }
    }
    if let Some((1, first)) = chain.first() {
        if first.get("prev").and_then(serde_json::Value::as_str) != Some(crate::notary::GENESIS) {
            println!("receipt 1: prev is not the genesis value (64 zeros)");
            bad += 1;
        }
    }
    if bad > 0 {
        println!("not valid: {bad} problem(s) in {} receipt(s)", records.len());
        return ExitCode::from(1);
    }
    let (first, last) = (chain.first().map_or(0, |c| c.0), chain.last().map_or(0, |c| c.0));
    if gaps.is_empty() {
        println!("ok: {} receipt(s), seq {first} to {last}, signatures and chain links verify", chain.len());
    } else {
        println!(
            "ok: {} receipt(s), seq {first} to {last}, signatures and the links present verify; not given: {}",
            chain.len(),
            gaps.join(", ")
        );
    }
    ExitCode::SUCCESS
}

/// Prints the payment ledger: every record as a JSON line, then counts by event (to stderr).
fn payments(config: &Config) -> ExitCode {
    let path = config.ledger_path();
    let opened = match crate::journal::Journal::read(&path) {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("no payment ledger at {} (no payment has been verified yet)", path.display());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            let e = std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
            eprintln!("websearchd: {}", state_error(config, &e));
            return ExitCode::from(1);
        }
    };
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut settled_value: u128 = 0;
    for r in &opened.records {
        println!("{}", readable_times(r));
        let event = r.get("event").and_then(|e| e.as_str()).unwrap_or("?").to_owned();
        if event == "settled" {
            settled_value += r.get("value").and_then(|v| v.as_str()).and_then(|v| v.parse::<u128>().ok()).unwrap_or(0);
        }
        *counts.entry(event).or_default() += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    eprintln!(
        "{} records ({}); settled {} atomic USDC{}",
        opened.records.len(),
        summary.join(", "),
        settled_value,
        if opened.torn_bytes > 0 {
            format!("; a torn last record of {} bytes", opened.torn_bytes)
        } else {
            String::new()
        }
    );
    // Where each payment stands (its last record): the figures an operator reconciles against the chain.
    let standing = crate::x402::ledger::standing(&opened.records);
    let mut states = std::collections::BTreeMap::<&str, u64>::new();
    for r in &standing {
        *states.entry(r.get("event").and_then(|e| e.as_str()).unwrap_or("?")).or_default() += 1;
    }
    let states: Vec<String> = states.iter().map(|(k, v)| format!("{k} {v}")).collect();
    eprintln!("{} payments by their last record: {}", standing.len(), states.join(", "));
    for r in standing.iter().filter(|r| matches!(r.get("event").and_then(|e| e.as_str()), Some("settling" | "unknown")))
    {
        let r = &readable_times(r);
        let field = |k: &str| r.get(k).map(|v| v.to_string().trim_matches('"').to_owned()).unwrap_or_default();
        eprintln!(
            "{}: payer {} nonce {} value {} valid_before {} request {}: may have settled; check the chain \
             (USDC authorizationState(payer, nonce)){}",
            field("event"),
            field("payer"),
            field("nonce"),
            field("value"),
            field("valid_before"),
            field("request_id"),
            if field("event") == "settling" {
                "; settling in progress, or the server stopped during it (the next start records it as unknown)"
            } else {
                ""
            }
        );
    }
    ExitCode::SUCCESS
}

/// A ledger record as `payments` prints it: its times in RFC 3339 UTC (`at` is kept in Unix milliseconds and
/// `valid_before` in Unix seconds, as EIP-3009 has it).
fn readable_times(record: &serde_json::Value) -> serde_json::Value {
    let mut r = record.clone();
    if let Some(map) = r.as_object_mut() {
        if let Some(ms) = map.get("at").and_then(serde_json::Value::as_u64) {
            map.insert("at".into(), crate::clock::rfc3339_ms(ms).into());
        }
        if let Some(s) = map.get("valid_before").and_then(serde_json::Value::as_u64) {
            map.insert("valid_before".into(), crate::clock::rfc3339(s.saturating_mul(1_000)).into());
        }
    }
    r
}

/// `journal check FILE`: 0 when the journal opens (a torn tail is normal: it is cut on open), 1 when a complete
/// record is damaged, 2 when the file cannot be read.
fn journal_check(file: &std::path::Path) -> ExitCode {
    let checked = match crate::journal::check(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("websearchd: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    println!("{}: {} bytes, {} good record(s) from the start", file.display(), checked.len, checked.records);
    if checked.torn_bytes > 0 {
        println!(
            "a torn last record of {} bytes at offset {} (a write that never completed; cut when the server opens it)",
            checked.torn_bytes,
            checked.len - checked.torn_bytes
        );
    }
    match checked.damage {
        None => {
            println!("ok: no damaged record");
            ExitCode::SUCCESS
        }
        Some(d) => {
            println!(
                "damaged: line {} at byte offset {} {} ({} complete line(s) after it)",
                d.line, d.offset, d.reason, d.lines_after
            );
            println!(
                "to cut it and everything after it, with the server stopped (a backup copy is kept): websearchd \
                 journal repair {} --truncate-at {}",
                file.display(),
                d.offset
            );
            ExitCode::from(1)
        }
    }
}

/// `journal repair FILE --truncate-at OFFSET`: backup, cut, marker.
fn journal_repair(file: &std::path::Path, truncate_at: &str) -> ExitCode {
    let Ok(offset) = truncate_at.parse::<u64>() else {
        eprintln!("websearchd: --truncate-at must be a byte offset (a whole number), as `journal check` prints it");
        return ExitCode::from(2);
    };
    let now = crate::clock::Clock::now_unix_ms(&SystemClock);
    // The new journal and its backup keep the owner the journal had (the service's user, when an operator repairs it
    // with sudo); `statedir` never follows a link in its directory.
    match crate::journal::repair(file, offset, now) {
        Ok(r) => {
            println!(
                "kept a copy of {} in {}; cut {} complete record(s) ({} bytes) at offset {}; the cut is recorded in \
                 the journal so that their sequence numbers are never issued again",
                file.display(),
                r.backup.display(),
                r.lines_removed,
                r.bytes_removed,
                offset
            );
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            eprintln!("websearchd: {e}; nothing was changed");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("websearchd: {e}");
            ExitCode::from(1)
        }
    }
}

/// An I/O error on a file of the state directory (its message names the file), said so that an operator can act on
/// it: "Permission denied" names the state directory, its owner, and how to run the command as a user who may read
/// it.
fn state_error(config: &Config, e: &std::io::Error) -> String {
    use std::os::unix::fs::MetadataExt;
    if e.kind() != std::io::ErrorKind::PermissionDenied {
        return e.to_string();
    }
    let dir = config.state_dir.display();
    match std::fs::metadata(&config.state_dir) {
        Ok(meta) => {
            let owner = user_name(meta.uid()).unwrap_or_else(|| format!("uid {}", meta.uid()));
            format!(
                "{e}: the state directory {dir} belongs to {owner} (mode {:04o}); run the command as root (sudo \
                 websearchd ..., which gives the files it writes to {owner}) or as that user (sudo -u {owner} \
                 websearchd ...), with the same --env-file",
                meta.mode() & 0o7777
            )
        }
        Err(_) => format!(
            "{e}: the state directory {dir} cannot be reached by this user; run the command as root (sudo) or as \
             the service's user, with the same --env-file"
        ),
    }
}

/// The server's own error on its state directory: the path, its owner and mode, and who this process runs as.
fn serve_state_error(config: &Config, e: &std::io::Error) -> String {
    use std::os::unix::fs::MetadataExt;
    let (Some(meta), true) =
        (std::fs::metadata(&config.state_dir).ok(), e.kind() == std::io::ErrorKind::PermissionDenied)
    else {
        return e.to_string();
    };
    let me = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(u32::MAX);
    let name = |uid: u32| user_name(uid).unwrap_or_else(|| format!("uid {uid}"));
    format!(
        "{e}: the state directory {} belongs to {} (mode {:04o}) and this process runs as {}; the server needs a \
         state directory of its own user (WEBSEARCHD_STATE_DIR, or chown it)",
        config.state_dir.display(),
        name(meta.uid()),
        meta.mode() & 0o7777,
        name(me)
    )
}

/// Lines of /etc/passwd read at most, to name a uid.
const PASSWD_LINES_MAX: usize = 10_000;

/// The name of a user id, from /etc/passwd.
fn user_name(uid: u32) -> Option<String> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().take(PASSWD_LINES_MAX).find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?.parse::<u32>().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_owned())
    })
}

/// Opens the state directory, creating it (mode 0700, and any missing parents) if it does not exist.
fn create_state_dir(config: &Config) -> Result<(), String> {
    crate::statedir::Dir::open(&config.state_dir, true).map(drop).map_err(|e| {
        let said = serve_state_error(config, &e);
        let named = config
            .resolved
            .iter()
            .any(|r| r.name == "WEBSEARCHD_STATE_DIR" && r.origin != crate::config::Origin::Default);
        if named {
            said
        } else {
            format!("{said} (the default state directory; WEBSEARCHD_STATE_DIR names another)")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, String> {
        parse_args(args.iter().map(OsString::from).collect())
    }

    #[test]
    fn commands() {
        assert_eq!(parse(&[]).map(|i| i.command), Ok(Command::Serve));
        assert_eq!(parse(&["serve"]).map(|i| i.command), Ok(Command::Serve));
        assert_eq!(parse(&["check-config"]).map(|i| i.command), Ok(Command::CheckConfig));
        assert_eq!(parse(&["mcp"]).map(|i| i.command), Ok(Command::Mcp));
        assert_eq!(parse(&["--version"]).map(|i| i.command), Ok(Command::Version));
        assert_eq!(parse(&["search", "-h"]).map(|i| i.command), Ok(Command::Help(Some("search".into()))));
        assert_eq!(parse(&["--help"]).map(|i| i.command), Ok(Command::Help(None)));
        assert_eq!(parse(&["help"]).map(|i| i.command), Ok(Command::Help(None)));
        assert_eq!(parse(&["help", "extract"]).map(|i| i.command), Ok(Command::Help(Some("extract".into()))));
        assert!(parse(&["help", "extract", "more"]).is_err());
        assert_eq!(
            parse(&["search", "rust", "lang", "--max-results=3", "--extract"]).map(|i| i.command),
            Ok(Command::Search { query: "rust lang".into(), max_results: Some("3".into()), extract: true })
        );
        assert_eq!(
            parse(&["journal", "check", "data/notary.journal"]).map(|i| i.command),
            Ok(Command::JournalCheck { file: "data/notary.journal".into() })
        );
        assert_eq!(
            parse(&["journal", "repair", "j", "--truncate-at=120"]).map(|i| i.command),
            Ok(Command::JournalRepair { file: "j".into(), truncate_at: "120".into() })
        );
        assert_eq!(
            parse(&["verify", "--mcp", "answer.json"]).map(|i| i.command),
            Ok(Command::VerifyMcp { file: "answer.json".into(), jwks: None })
        );
        assert_eq!(parse(&["health"]).map(|i| i.command), Ok(Command::Health { url: None }));
        assert_eq!(
            parse(&["health", "--url", "http://[::1]:9/health"]).map(|i| i.command),
            Ok(Command::Health { url: Some("http://[::1]:9/health".into()) })
        );
        let inv = parse(&["--env-file", "/etc/x.env", "serve"]).expect("valid");
        assert_eq!(inv.env_file, Some(PathBuf::from("/etc/x.env")));
    }

    #[test]
    fn health_asks_loopback_for_a_wildcard_address() {
        let url = |listen: &str| health_url(listen.parse().unwrap());
        assert_eq!(url("0.0.0.0:8402"), "http://127.0.0.1:8402/health");
        assert_eq!(url("[::]:8402"), "http://[::1]:8402/health");
        assert_eq!(url("192.168.1.20:80"), "http://192.168.1.20:80/health");
    }

    #[test]
    fn the_logged_host_of_a_feed_keeps_no_credentials() {
        assert_eq!(host_of("https://api.example.org:8443/v2/point?x=1"), "api.example.org:8443");
        assert_eq!(host_of("https://user:secret@feeds.example.org/data.json"), "feeds.example.org");
    }

    /// `help CMD` and `CMD --help` print that command's lines of the usage, with the options; every command of the
    /// usage has some, and an unknown one none.
    #[test]
    fn each_command_has_its_own_usage() {
        let extract = usage_of("extract").expect("extract");
        assert!(extract.contains("websearchd extract URL|--file PATH"), "{extract}");
        assert!(extract.contains("the lead and the passages most relevant to Q"), "{extract}");
        assert!(!extract.contains("websearchd search"), "{extract}");
        assert!(extract.contains("--env-file PATH"), "{extract}");
        let verify = usage_of("verify").expect("verify");
        assert_eq!(verify.matches("  websearchd verify").count(), 3, "{verify}");
        for cmd in ["serve", "search", "mcp", "check-config", "health", "payments", "journal", "keygen", "apikey"] {
            assert!(usage_of(cmd).is_some_and(|u| u.contains("websearchd ")), "{cmd}");
        }
        assert_eq!(usage_of("frobnicate"), None);
    }

    #[test]
    fn usage_errors() {
        assert!(parse(&["frobnicate"]).is_err());
        assert!(parse(&["search"]).is_err());
        assert!(parse(&["serve", "extra"]).is_err());
        assert!(parse(&["serve", "--extract"]).is_err());
        assert!(parse(&["--env-file"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["journal"]).is_err());
        assert!(parse(&["journal", "repair", "f"]).is_err(), "repair needs --truncate-at");
        assert!(parse(&["journal", "check", "f", "--truncate-at", "3"]).is_err());
        assert!(parse(&["serve", "--truncate-at", "3"]).is_err());
        assert!(parse(&["verify", "--mcp", "a", "--body", "b"]).is_err());
        assert!(parse(&["search", "q", "--mcp", "a"]).is_err());
        assert!(parse(&["serve", "--url", "http://x"]).is_err(), "--url goes with health");
    }
}
