//! The table of every variable the service reads (`VARS`): its default, what it allows and what it means. The
//! tables of docs/configuration.md say the same (a test in `config` keeps the two in step); `check-config` prints
//! the variables in its order.

use super::FACILITATOR_URL_DEFAULT;

/// One documented variable.
#[derive(Debug, Clone, Copy)]
pub struct VarDoc {
    pub name: &'static str,
    pub default: &'static str,
    pub allowed: &'static str,
    pub meaning: &'static str,
}

/// Every variable the service reads. Order is the order of `check-config` and of docs/configuration.md.
pub const VARS: &[VarDoc] = &[
    VarDoc {
        name: "WEBSEARCHD_ENV_FILE",
        default: "(none)",
        allowed: "a file path",
        meaning: "An environment file read at start (`NAME=value` lines, as systemd's `EnvironmentFile=` and a \
                  shell read them: [Env files](#env-files)); variables already in the environment win.",
    },
    VarDoc {
        name: "WEBSEARCHD_LISTEN",
        default: "127.0.0.1:8402",
        allowed: "IP:port (port 0 picks a free port)",
        meaning: "Address the HTTP server listens on.",
    },
    VarDoc {
        name: "WEBSEARCHD_PUBLIC_URL",
        default: "http://<WEBSEARCHD_LISTEN>",
        allowed: "an http:// or https:// URL without query or fragment",
        meaning: "Base URL that clients see (behind a reverse proxy, the proxy's URL); used in payment challenges \
                  and discovery documents.",
    },
    VarDoc {
        name: "WEBSEARCHD_STATE_DIR",
        default: "$STATE_DIRECTORY, $XDG_STATE_HOME/websearchd or ~/.local/state/websearchd",
        allowed: "a directory path",
        meaning: "Keys and journals; created with mode 0700 on first start. Unset: systemd's `$STATE_DIRECTORY` \
                  (its first path), else `$XDG_STATE_HOME/websearchd`, else `~/.local/state/websearchd`, else \
                  (no home) `/var/lib/websearchd`, whatever folder a command starts in; but an earlier version's \
                  `./data` that holds keys or journals is used first, with a warning naming the command that moves \
                  it. The start logs the directory.",
    },
    VarDoc {
        name: "WEBSEARCHD_WORKERS",
        default: "2 x cores, at least 8",
        allowed: "1 to 256",
        meaning: "Worker threads that run requests. A search holds its worker while it waits on providers (seconds \
                  in bad weather); at most all but one wait for a provider's slot at once.",
    },
    VarDoc {
        name: "WEBSEARCHD_QUEUE_DEPTH",
        default: "64",
        allowed: "1 to 4096",
        meaning: "Complete requests waiting for a worker; past it a request gets 503 with Retry-After at once.",
    },
    VarDoc {
        name: "WEBSEARCHD_CONNECTIONS_MAX",
        default: "512",
        allowed: "4 to 65536",
        meaning: "Open client connections; past it a new connection gets 503 and is closed.",
    },
    VarDoc {
        name: "WEBSEARCHD_CONNECTIONS_PER_ADDRESS_MAX",
        default: "32",
        allowed: "1 to 65536",
        meaning: "Open connections from one client address (IPv6: one /64); past it a new connection from there gets \
                  503 `too_many_connections_from_address` and is closed. Trusted proxies are exempt.",
    },
    VarDoc {
        name: "WEBSEARCHD_TRUSTED_PROXIES",
        default: "(none)",
        allowed: "a comma-separated list of IP addresses or CIDR ranges (like 127.0.0.1,::1 or 10.0.0.0/8)",
        meaning: "Reverse proxies in front of the service: from these peers only, the client address is read from \
                  `WEBSEARCHD_FORWARDED_HEADER` (right to left, skipping listed hops), for trials, the free \
                  loopback rule and the logs. Set it when a proxy runs in front: otherwise every client looks like the \
                  proxy.",
    },
    VarDoc {
        name: "WEBSEARCHD_FORWARDED_HEADER",
        default: "x-forwarded-for",
        allowed: "x-forwarded-for or forwarded",
        meaning:
            "The one header trusted proxies write the client into; the other is ignored (a proxy passes it through \
                  as the client sent it).",
    },
    VarDoc {
        name: "WEBSEARCHD_HEADER_BYTES_MAX",
        default: "8192",
        allowed: "1024 to 65536",
        meaning: "Bytes of a request line plus headers (else 431).",
    },
    VarDoc {
        name: "WEBSEARCHD_HEADERS_MAX",
        default: "64",
        allowed: "8 to 256",
        meaning: "Header fields in one request (else 431).",
    },
    VarDoc {
        name: "WEBSEARCHD_BODY_BYTES_MAX",
        default: "16384",
        allowed: "256 to 1048576",
        meaning: "Bytes of a request body (else 413).",
    },
    VarDoc {
        name: "WEBSEARCHD_REQUEST_TIMEOUT_MS",
        default: "10000",
        allowed: "100 to 120000",
        meaning: "Time to receive a whole request once its first byte has arrived (else 408 and close): the \
                  bound on slow clients.",
    },
    VarDoc {
        name: "WEBSEARCHD_IDLE_TIMEOUT_MS",
        default: "5000",
        allowed: "100 to 600000",
        meaning: "Time an idle keep-alive connection is kept open.",
    },
    VarDoc {
        name: "WEBSEARCHD_WRITE_TIMEOUT_MS",
        default: "10000",
        allowed: "100 to 120000",
        meaning: "Time allowed to write one response to a client.",
    },
    VarDoc {
        name: "WEBSEARCHD_KEEPALIVE_REQUESTS_MAX",
        default: "100",
        allowed: "1 to 100000",
        meaning: "Requests served on one connection before it is closed.",
    },
    VarDoc {
        name: "WEBSEARCHD_SHUTDOWN_GRACE_MS",
        default: "10000",
        allowed: "0 to 300000",
        meaning: "On SIGTERM or SIGINT, how long requests in flight may take to finish.",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCES",
        default: "ddg_html,ddg_lite,brave,bing,mojeek,wikipedia,searxng",
        allowed: "a comma-separated list of ddg_html, ddg_lite, brave, bing, mojeek, wikipedia, searxng",
        meaning: "Search sources; leave one out to turn it off. The order is the base order of \
                  WEBSEARCHD_SOURCE_ORDER (Wikipedia, encyclopaedic, is asked after the web engines).",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_ORDER",
        default: "rotate",
        allowed: "rotate or fixed",
        meaning: "`rotate`: each search starts at the next web provider in turn, and providers cooling down, \
                  failing or slow go last; `fixed`: the order of WEBSEARCHD_SOURCES, healthy ones still first.",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_PAGES_MAX",
        default: "2",
        allowed: "1 to 5",
        meaning: "Result pages asked of one endpoint in one search when its first page holds fewer results than \
                  `max_results` (DuckDuckGo html by its next-page form; Bing, Brave, Mojeek, Wikipedia, SearXNG by \
                  offset; DuckDuckGo lite not at all).",
    },
    VarDoc {
        name: "WEBSEARCHD_PROVIDER_INTERVALS_MS",
        default: "(none: WEBSEARCHD_SOURCE_INTERVAL_MS for every provider)",
        allowed: "a comma-separated list of provider=ms (duckduckgo, brave, bing, mojeek, wikipedia, searxng), \
                  0 to 600000",
        meaning: "Minimum time between two searches sent to one provider, per provider.",
    },
    VarDoc {
        name: "WEBSEARCHD_DDG_HTML_URL",
        default: "https://html.duckduckgo.com/html/",
        allowed: "an http:// or https:// URL",
        meaning: "DuckDuckGo's HTML endpoint.",
    },
    VarDoc {
        name: "WEBSEARCHD_DDG_LITE_URL",
        default: "https://lite.duckduckgo.com/lite/",
        allowed: "an http:// or https:// URL",
        meaning: "DuckDuckGo's lite endpoint.",
    },
    VarDoc {
        name: "WEBSEARCHD_SEARXNG_URLS",
        default: "(none)",
        allowed: "a comma-separated list of http(s) base URLs",
        meaning: "SearXNG instances (the operator's own first), each asked at `<url>/search?q=...&format=json`; \
                  JSON output must be enabled on the instance.",
    },
    VarDoc {
        name: "WEBSEARCHD_MOJEEK_URL",
        default: "https://www.mojeek.com/search",
        allowed: "an http:// or https:// URL",
        meaning: "Mojeek's results page.",
    },
    VarDoc {
        name: "WEBSEARCHD_BING_URL",
        default: "https://www.bing.com/search",
        allowed: "an http:// or https:// URL",
        meaning: "Bing's results page.",
    },
    VarDoc {
        name: "WEBSEARCHD_BRAVE_URL",
        default: "https://search.brave.com/search",
        allowed: "an http:// or https:// URL",
        meaning: "Brave Search's results page.",
    },
    VarDoc {
        name: "WEBSEARCHD_WIKIPEDIA_URL",
        default: "https://en.wikipedia.org/w/api.php",
        allowed: "an http:// or https:// URL",
        meaning: "A MediaWiki search API (`action=query&list=search`); another language's wiki by its own URL. \
                  Article links are made from its origin.",
    },
    VarDoc {
        name: "WEBSEARCHD_REGION",
        default: "wt-wt",
        allowed: "a region-language code such as wt-wt, us-en, de-de",
        meaning: "Region of a search that names none (`region`): each source gets it in its own parameter (DuckDuckGo `kl`, SearXNG `language`, Bing `cc`/`setlang`, ...).",
    },
    VarDoc {
        name: "WEBSEARCHD_SAFESEARCH",
        default: "moderate",
        allowed: "off, moderate, strict",
        meaning: "Safe search of a search that names none (`safesearch`).",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_CONNECT_TIMEOUT_MS",
        default: "2000",
        allowed: "100 to 30000",
        meaning: "Connect timeout (DNS, TCP, TLS) for a search source.",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_TIMEOUT_MS",
        default: "5000",
        allowed: "200 to 60000",
        meaning: "Total time for one source's answer, body included.",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_BODY_BYTES_MAX",
        default: "2097152",
        allowed: "4096 to 33554432",
        meaning: "Largest source response read; a larger one is a failure (`too_large`).",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_INTERVAL_MS",
        default: "1000",
        allowed: "0 to 600000",
        meaning: "Sustained time between two requests to one provider (its endpoints share it; each SearXNG instance \
                  has its own, at most 250 ms unless WEBSEARCHD_PROVIDER_INTERVALS_MS names searxng): a token bucket \
                  of WEBSEARCHD_SOURCE_BURST requests. A search waits for a provider's next slot when it comes \
                  before the search's deadline. WEBSEARCHD_PROVIDER_INTERVALS_MS overrides it per provider.",
    },
    VarDoc {
        name: "WEBSEARCHD_SOURCE_BURST",
        default: "3",
        allowed: "1 to 20",
        meaning: "Requests a provider may take at once before its interval holds (the token bucket's size).",
    },
    VarDoc {
        name: "WEBSEARCHD_BREAKER_COOLDOWN_MS",
        default: "3000",
        allowed: "1000 to 86400000",
        meaning: "How long a source that walled us (a bot wall, captcha, 403 or 429) is backed off; twice as long \
                  for each wall in a row before it (3, 6, 12, 24 s ...; 80% to 120% of it, at random), then \
                  one trial request decides. A longer Retry-After is kept.",
    },
    VarDoc {
        name: "WEBSEARCHD_BREAKER_FAILURE_COOLDOWN_MS",
        default: "1000",
        allowed: "100 to 86400000",
        meaning: "How long a source that failed otherwise is backed off (a timeout, a reset, a 5xx or broken HTTP \
                  from the second in a row: a first one costs none; another status, an unreadable page, a refused \
                  redirect from the first); doubles on each further failure, then one trial request decides.",
    },
    VarDoc {
        name: "WEBSEARCHD_BREAKER_COOLDOWN_MAX_MS",
        default: "1800000",
        allowed: "1000 to 86400000",
        meaning: "Upper bound of the growing back-off.",
    },
    VarDoc {
        name: "WEBSEARCHD_SEARCH_DEADLINE_MS",
        default: "15000",
        allowed: "500 to 120000",
        meaning: "Time for a whole search across fallbacks; sources not tried by then are reported skipped.",
    },
    VarDoc {
        name: "WEBSEARCHD_CACHE_TTL_S",
        default: "600",
        allowed: "0 (off) to 86400",
        meaning: "How long an answer is served from the in-memory cache.",
    },
    VarDoc {
        name: "WEBSEARCHD_CACHE_ENTRIES",
        default: "512",
        allowed: "0 (off) to 100000",
        meaning: "Answers kept in the cache, within 16 MiB in all (the oldest is dropped first).",
    },
    VarDoc {
        name: "WEBSEARCHD_FETCH_ALLOW",
        default: "(none)",
        allowed: "a comma-separated list of host:port",
        meaning: "Hosts that `extract`, and the redirects of sources and map feeds out of their own origin, may reach \
                  whatever their address (the SSRF guard refuses private, loopback and reserved addresses otherwise).",
    },
    VarDoc {
        name: "WEBSEARCHD_FETCH_PORTS",
        default: "(none: 80 and 443 only)",
        allowed: "a comma-separated list of ports",
        meaning: "Ports `extract`, and the redirects of sources and map feeds out of their own origin, may reach \
                  besides 80 and 443.",
    },
    VarDoc {
        name: "WEBSEARCHD_FETCH_TIMEOUT_MS",
        default: "8000",
        allowed: "1000 to 60000",
        meaning: "Deadline for fetching the page to extract, redirects included; with `extract: k`, for all k pages together.",
    },
    VarDoc {
        name: "WEBSEARCHD_FETCH_BODY_BYTES_MAX",
        default: "3145728",
        allowed: "65536 to 16777216",
        meaning: "Largest page read for `extract`.",
    },
    VarDoc {
        name: "WEBSEARCHD_EXTRACT_PARALLEL",
        default: "3",
        allowed: "1 to 5",
        meaning: "Pages of one call's results fetched side by side (`extract: k`). The extraction pool holds max(this, `WEBSEARCHD_WORKERS`) threads, fixed at start: no more pages are extracted at once than workers.",
    },
    VarDoc {
        name: "WEBSEARCHD_PAY_TO",
        default: "(none: payments off)",
        allowed: "an Ethereum address, 0x and 40 hex digits (EIP-55 checksum checked when mixed case)",
        meaning: "The operator's public address that payments go to. Without it payments are off and the server \
                  listens only on loopback unless WEBSEARCHD_OPEN=1.",
    },
    VarDoc {
        name: "WEBSEARCHD_NETWORK",
        default: "base",
        allowed: "base, base-sepolia",
        meaning: "Where USDC is paid: Base mainnet (eip155:8453) or the Base Sepolia testnet (eip155:84532).",
    },
    VarDoc {
        name: "WEBSEARCHD_PRICE_ATOMIC",
        default: "5000",
        allowed: "1 to 1000000000",
        meaning: "Price of one search in atomic USDC units (6 decimals: 5000 = 0.005 USDC).",
    },
    VarDoc {
        name: "WEBSEARCHD_EXTRACT_PAGE_PRICE_ATOMIC",
        default: "0",
        allowed: "0 to 1000000000",
        meaning: "Added to a search's price for each page past the first it extracts (`extract: k`, on every door); 0: a search costs one price whatever it extracts.",
    },
    VarDoc {
        name: "WEBSEARCHD_EXTRACT_PRICE_ATOMIC",
        default: "(WEBSEARCHD_PRICE_ATOMIC)",
        allowed: "1 to 1000000000",
        meaning: "Price of one page of the reader door (`POST /extract`); a call costs it once per URL it asks for.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAX_TIMEOUT_S",
        default: "60",
        allowed: "10 to 3600",
        meaning: "`maxTimeoutSeconds` of the payment requirement.",
    },
    VarDoc {
        name: "WEBSEARCHD_FACILITATOR_URL",
        default: FACILITATOR_URL_DEFAULT,
        allowed: "an http:// or https:// URL",
        meaning: "The x402 facilitator (`/verify`, `/settle`; its `/supported` is asked at start, and a network it \
                  does not serve stops the start). The default serves testnets only: with WEBSEARCHD_NETWORK=base, set \
                  another (the start refuses otherwise).",
    },
    VarDoc {
        name: "WEBSEARCHD_FACILITATOR_AUTH_FILE",
        default: "(none)",
        allowed: "a file path (mode 0600)",
        meaning: "A file whose content is sent as the `Authorization` header to the facilitator (secret; never \
                  printed).",
    },
    VarDoc {
        name: "WEBSEARCHD_FACILITATOR_TIMEOUT_MS",
        default: "10000",
        allowed: "500 to 60000",
        meaning: "Total time for one facilitator call.",
    },
    VarDoc {
        name: "WEBSEARCHD_OPEN",
        default: "0",
        allowed: "0 or 1",
        meaning: "1 allows listening on a non-loopback address with payments off (an open, free service). On a \
                  wildcard address (0.0.0.0, ::), free or paid, WEBSEARCHD_PUBLIC_URL must name the URL clients \
                  reach: the start refuses it otherwise.",
    },
    VarDoc {
        name: "WEBSEARCHD_TRIAL_CALLS_PER_DAY",
        default: "0",
        allowed: "0 (off) to 1000000",
        meaning: "Free calls per client address (IPv6: per /64) per UTC day before payment is asked; announced in \
                  the challenge.",
    },
    VarDoc {
        name: "WEBSEARCHD_FREE_LOOPBACK",
        default: "0",
        allowed: "0 or 1",
        meaning: "1 lets calls from this machine through without payment (the operator's own agents); announced in \
                  the challenge. A request relayed by a proxy is not local unless the proxy is trusted and forwards a \
                  loopback client.",
    },
    VarDoc {
        name: "WEBSEARCHD_SEARXNG_API",
        default: "1",
        allowed: "0 or 1",
        meaning: "1 serves SearXNG's search API (`/search`, and `/` with `q`) and the search page for people (`/`, \
                  `/opensearch.xml`); on a paid instance only to the callers the free rules admit. 0 turns them off.",
    },
    VarDoc {
        name: "WEBSEARCHD_TAVILY_API",
        default: "1",
        allowed: "0 or 1",
        meaning: "1 serves Tavily's search API under `/tavily` (`POST /tavily/search`, `POST /tavily/extract`: point \
                  a Tavily client's base URL at `http://HOST:PORT/tavily`); on a paid instance to the holders of an \
                  API key (`websearchd apikey new`), to callers paying through x402, and to those the free rules \
                  admit. 0 turns it off.",
    },
    VarDoc {
        name: "WEBSEARCHD_ALLOWED_ORIGINS",
        default: "(none)",
        allowed: "a comma-separated list of origins (scheme://host[:port]), or *",
        meaning: "Browser origins a free instance answers besides its own (a request from a page with another \
                  `Origin` gets 403 `origin_refused`, one naming a host that is not the instance's 403 \
                  `host_refused`): a browser tool of yours, or another name you reach it by (its host becomes one of \
                  the instance's names); * allows every origin. A paid instance answers every origin (the loopback \
                  rule's free calls are checked as on a free instance).",
    },
    VarDoc {
        name: "WEBSEARCHD_MCP_ORIGINS",
        default: "(none)",
        allowed: "a comma-separated list of origins (scheme://host[:port]), or *",
        meaning: "Browser origins that may call `/mcp` besides the public URL's own and loopback ones (a request with \
                  another `Origin` gets 403: the DNS-rebinding guard MCP requires); * allows every origin.",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_URL",
        default: "(none: each node keeps its state in memory)",
        allowed: "redis://[user:password@]host[:port][/db], or rediss:// for TLS",
        meaning: "A Redis (or Valkey) that several nodes share: the replay guard, the answer cache, breakers and \
                  pacing, trial counters (docs/deploy.md, Several nodes). The password is hidden by check-config.",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_PREFIX",
        default: "websearchd:",
        allowed: "1 to 64 letters, digits, and : . _ -",
        meaning: "Prefix of every key the service writes (one per fleet sharing a Redis).",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_TIMEOUT_MS",
        default: "250",
        allowed: "10 to 5000",
        meaning: "The most a request waits on Redis in one call (connecting included); after a failure Redis is \
                  not asked for a second, and paid calls get 503.",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_CONNECTIONS_MAX",
        default: "8",
        allowed: "1 to 256",
        meaning: "Connections a node keeps to Redis at most.",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_CA_FILE",
        default: "(none: the webpki roots)",
        allowed: "a PEM file path",
        meaning: "Certificates trusted for a rediss:// server instead of the public roots.",
    },
    VarDoc {
        name: "WEBSEARCHD_REDIS_SECRET_FILE",
        default: "(none: answers are not shared)",
        allowed: "a file path (mode 0600) holding at least 32 bytes",
        meaning: "The fleet's secret (the same file on every node, e.g. `openssl rand -hex 32`): each answer shared \
                  through Redis is sealed with an HMAC under it, and one that does not open is a miss. Without it \
                  the other shared state still is.",
    },
    VarDoc {
        name: "WEBSEARCHD_NOTARY_PATH",
        default: "/notary",
        allowed: "a path like /notary (letters, digits, -, _ and /; no trailing slash), or off",
        meaning: "Base path of the notary: `POST <path>/service`, `GET <path>/receipts/<seq>`. off disables it.",
    },
    VarDoc {
        name: "WEBSEARCHD_NOTARY_LISTEN",
        default: "(none: on WEBSEARCHD_LISTEN)",
        allowed: "IP:port",
        meaning: "A second address that serves the notary (and /health) only, with its own workers.",
    },
    VarDoc {
        name: "WEBSEARCHD_NOTARY_URL",
        default: "<WEBSEARCHD_PUBLIC_URL><WEBSEARCHD_NOTARY_PATH>",
        allowed: "an http:// or https:// URL without query or fragment",
        meaning: "The notary's base URL as clients see it: the issuer of receipts and the resource of its challenge.",
    },
    VarDoc {
        name: "WEBSEARCHD_NOTARY_PRICE_ATOMIC",
        default: "5000",
        allowed: "1 to 1000000000",
        meaning: "Price of one notarisation in atomic USDC units (5000 = 0.005 USDC).",
    },
    VarDoc {
        name: "WEBSEARCHD_CORE_PATH",
        default: "/core",
        allowed: "a path like /core (letters, digits, -, _ and /; no trailing slash), or off",
        meaning: "Base path of the key-protected core endpoints `<path>/state` and `<path>/meshgraph`. off \
                  disables them.",
    },
    VarDoc {
        name: "WEBSEARCHD_API_KEYS_FILE",
        default: "<state>/api-keys",
        allowed: "a file path",
        meaning: "API keys for the core endpoints (header X-WALLET) and the Tavily door (its API key), one per line, # \
                  comments; `websearchd apikey new` adds one. Re-read when it changes.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_PATH",
        default: "/map",
        allowed: "a path like /map (letters, digits, -, _ and /; no trailing slash), or off",
        meaning: "Base path of the public map: the page `<path>/` (and its script `<path>/map.js`), `<path>/mapstate` \
                  and `<path>/api/capa/<slug>`. off disables them.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_ASSETS_URL",
        default: "https://unpkg.com/leaflet@1.9.4/dist",
        allowed: "an http:// or https:// URL without query or fragment (letters, digits and -._~/:@%+=!$()*[])",
        meaning: "Where the map page loads Leaflet 1.9.4 from (`leaflet.js`, `leaflet.css`); pinned by Subresource \
                  Integrity, so an operator's own copy must be the npm package's `dist/` files unchanged.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_TILES_URL",
        default: "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
        allowed: "an http:// or https:// tile URL template with {z}, {x} and {y} (no {s}), or off",
        meaning: "Base map tiles of the map page (its CSP allows images from this origin only); off draws the \
                  layers on a plain background.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_LAYERS",
        default: "none",
        allowed: "a comma-separated list of vuelos, buques, terremotos, satelites, conflictos, fondo-marino, \
                  conflictos-ucdp; all; or none",
        meaning: "Layers polled in the background, each from an outside service (opt-in: none by default; the start \
                  logs the hosts polled); the others are listed as disabled with the reason.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_VUELOS_URL",
        default: "https://api.adsb.lol/v2/point/50.0/8.5/250",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: adsb.lol `/v2/point/...` (ADS-B Exchange v2 JSON).",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_VUELOS_FALLBACK_URL",
        default: "https://opensky-network.org/api/states/all?lamin=45.8&lomin=5.9&lamax=55.1&lomax=15.1",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: OpenSky `states/all` with a bounding box, asked when the first fails.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_BUQUES_URL",
        default: "https://meri.digitraffic.fi/api/ais/v1/locations",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: Digitraffic AIS locations (GeoJSON, gzip).",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_TERREMOTOS_URL",
        default: "https://earthquake.usgs.gov/earthquakes/feed/v1.0/summary/all_day.geojson",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: a USGS summary GeoJSON feed.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_SATELITES_URL",
        default: "https://celestrak.org/NORAD/elements/gp.php?GROUP=stations&FORMAT=json",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: CelesTrak GP elements as OMM JSON.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_CONFLICTOS_URL",
        default: "http://data.gdeltproject.org/gdeltv2/lastupdate.txt",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: GDELT 2.0 `lastupdate.txt` (the export is fetched from the same host).",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_FONDO_MARINO_URL",
        default: "https://api.opentopodata.org/v1/gebco2020",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: an OpenTopoData dataset endpoint (`?locations=` is added).",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_UCDP_URL",
        default: "https://ucdpapi.pcr.uu.se/api/gedevents/25.1?pagesize=1000",
        allowed: "an http:// or https:// URL",
        meaning: "Feed of the map: the UCDP GED events API.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_REFRESH_S",
        default: "(per layer: 60 flights, ships, earthquakes; 7200 satellites; 900 GDELT; 86400 UCDP; 604800 seabed)",
        allowed: "a comma-separated list of slug=seconds (15 to 604800; satellites and seabed at least 3600)",
        meaning: "Poll intervals; errors back off (doubling, at most an hour; CelesTrak six hours after a non-200).",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_OBJECTS_MAX",
        default: "5000",
        allowed: "1 to 100000",
        meaning: "Objects kept per layer (memory bound); the rest are counted as dropped.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_BYTES_MAX",
        default: "16777216",
        allowed: "65536 to 134217728",
        meaning: "Largest feed body, after decompression.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_TIMEOUT_MS",
        default: "20000",
        allowed: "1000 to 120000",
        meaning: "Total time for one feed request (GDELT makes two), from connecting to the last byte.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_SEABED_POINTS",
        default: "(12 sample points: trenches, basins, shelves)",
        allowed: "lat,lon pairs separated by ; (at most 100)",
        meaning: "Where the seabed layer samples the depth.",
    },
    VarDoc {
        name: "WEBSEARCHD_MAP_UCDP_TOKEN",
        default: "(none: conflictos-ucdp disabled)",
        allowed: "the access token UCDP issued",
        meaning: "Enables the conflictos-ucdp layer (header x-ucdp-access-token). A secret: hidden by check-config.",
    },
    VarDoc {
        name: "WEBSEARCHD_DIGITRAFFIC_USER",
        default: "websearchd/<version>",
        allowed: "text",
        meaning: "The Digitraffic-User header Digitraffic asks its clients to send (an app name and contact).",
    },
    VarDoc {
        name: "WEBSEARCHD_CARD_KEY_FILE",
        default: "<state>/keys/card.key",
        allowed: "a file path (64 hex digits: an Ed25519 seed; created 0600 if missing)",
        meaning: "The card key: signs the agent card, /pubkey and the catalogue (secret; never printed).",
    },
    VarDoc {
        name: "WEBSEARCHD_RESULT_KEY_FILE",
        default: "<state>/keys/result.key",
        allowed: "a file path (64 hex digits: an Ed25519 seed; created 0600 if missing)",
        meaning: "The result key: signs answers and notary receipts (secret; never printed).",
    },
    VarDoc {
        name: "WEBSEARCHD_LOG",
        default: "info",
        allowed: "off, error, warn, info, debug, trace, or a list like `info,websearchd::http=debug`",
        meaning: "Log level filter (RUST_LOG is read when this is unset). Release builds compile debug and trace out.",
    },
];
