//! Test support: start the real `websearchd` binary on 127.0.0.1:0 with a given environment, learn its address from
//! its log, and speak HTTP/1.1 to it over plain sockets.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod fair;
pub mod pay;
pub mod redis;
pub mod upstream;

/// A fixture the project wrote (`fixtures/`).
pub fn own_fixture(rel: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The project's recorded DuckDuckGo results page with its top result pointed at `url` (the page an `extract` test
/// serves from loopback).
pub fn results_pointing_at(url: &str) -> Vec<u8> {
    let page = String::from_utf8(own_fixture("search/ddg_html_results.html")).unwrap();
    let encoded: String = url
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    page.replace("https%3A%2F%2Fwww.rust-lang.org%2F", &encoded).into_bytes()
}

/// A SearXNG answer (JSON) whose results are `urls`, titled `Page 0`, `Page 1`, ...
pub fn searxng_answer(urls: &[impl AsRef<str>]) -> Vec<u8> {
    let results: Vec<serde_json::Value> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| {
            serde_json::json!({ "url": u.as_ref(), "title": format!("Page {i}"), "content": "a page", "engine": "x" })
        })
        .collect();
    serde_json::json!({ "query": "q", "results": results, "unresponsive_engines": [] }).to_string().into_bytes()
}

/// Environment pointing every search source at the loopback upstream `up` (its paths `/html/`, `/lite/`, `/searx`,
/// `/mojeek`, `/bing`, `/brave`, `/w/api.php`), with no minimum interval (tests ask in quick succession) and the
/// sources in the order listed, so that reports are predictable (the rotation has its own tests).
pub fn sources_env(up: &upstream::Upstream, sources: &str) -> Vec<(String, String)> {
    vec![
        ("WEBSEARCHD_SOURCES".into(), sources.into()),
        ("WEBSEARCHD_DDG_HTML_URL".into(), up.url("/html/")),
        ("WEBSEARCHD_DDG_LITE_URL".into(), up.url("/lite/")),
        ("WEBSEARCHD_SEARXNG_URLS".into(), up.url("/searx")),
        ("WEBSEARCHD_MOJEEK_URL".into(), up.url("/mojeek")),
        ("WEBSEARCHD_BING_URL".into(), up.url("/bing")),
        ("WEBSEARCHD_BRAVE_URL".into(), up.url("/brave")),
        ("WEBSEARCHD_WIKIPEDIA_URL".into(), up.url("/w/api.php")),
        ("WEBSEARCHD_SOURCE_INTERVAL_MS".into(), "0".into()),
        ("WEBSEARCHD_SOURCE_ORDER".into(), "fixed".into()),
    ]
}

/// Owned variables as the `(&str, &str)` pairs `Server::start` takes.
pub fn pairs(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The shared third-party folder: `$WEBSEARCHD_SHARED_DIR`, else `../shared` beside the project.
pub fn shared_dir() -> std::path::PathBuf {
    std::env::var_os("WEBSEARCHD_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"))
}

/// The browser test tools (`tests/browser`: Node.js, the npm packages of its package-lock, Chromium), or what is
/// missing. `.ci/run` installs them; `WEBSEARCHD_CHROMIUM` names another Chromium.
pub struct BrowserTools {
    pub node: std::path::PathBuf,
    pub chromium: std::path::PathBuf,
    pub dir: std::path::PathBuf,
}

pub fn browser_tools() -> Result<BrowserTools, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = std::env::var_os("WEBSEARCHD_CHROMIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    let node = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("node")).find(|p| p.is_file()))
        .ok_or("node (Node.js) is not on PATH")?;
    for package in ["playwright-core", "leaflet", "typescript", "@grafana/schema"] {
        if !dir.join("node_modules").join(package).join("package.json").is_file() {
            return Err(format!("tests/browser/node_modules/{package} is absent (cd tests/browser && npm ci)"));
        }
    }
    if !chromium.is_file() {
        return Err(format!("{} is absent (apt-get install chromium)", chromium.display()));
    }
    Ok(BrowserTools { node, chromium, dir })
}

/// Whether every test input must be present: `WEBSEARCHD_REQUIRE_INPUTS=1`, as `.ci/run` sets it.
pub fn inputs_required() -> bool {
    std::env::var_os("WEBSEARCHD_REQUIRE_INPUTS").is_some_and(|v| v == "1")
}

/// A check skips for a missing input (`why` says which, and how to get it): a notice, or a panic when every input
/// is required.
pub fn skip_for(why: &str) {
    assert!(!inputs_required(), "WEBSEARCHD_REQUIRE_INPUTS=1 and a test input is missing: {why}");
    eprintln!("notice: {why}; skipping");
}

/// Runs the browser checks `script` of `tests/browser` with Node against `base`, with what it is to find
/// (`WS_EXPECT`), where its screenshots go (`target/browser`, returned) and `env`; fails the test when a check fails,
/// and returns the script's output with the screenshots' folder.
pub fn run_browser_checks(
    tools: &BrowserTools,
    script: &str,
    base: &str,
    expected: &serde_json::Value,
    env: &[(&str, &str)],
) -> (String, std::path::PathBuf) {
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser");
    let run = Command::new(&tools.node)
        .arg(tools.dir.join(script))
        .current_dir(&tools.dir)
        .env("WS_BASE", base)
        .env("WS_EXPECT", expected.to_string())
        .envs(env.iter().copied())
        .env("WS_SCREENSHOT_DIR", &shots)
        .env("WS_CHROMIUM", &tools.chromium)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    eprintln!("{out}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the browser checks failed:\n{out}");
    (out, shots)
}

/// The browser tools, or `None` after a notice; a panic when `WEBSEARCHD_REQUIRE_INPUTS=1` (CI) asks for every input.
pub fn browser_tools_or_skip() -> Option<BrowserTools> {
    browser_tools().inspect_err(|why| skip_for(why)).ok()
}

/// A recorded file from the shared folder, or `None` with a notice when it is absent (a user's fresh clone).
pub fn shared_fixture(rel: &str) -> Option<Vec<u8>> {
    let path = shared_dir().join("fixtures").join(rel);
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("notice: {} is absent; skipping (set WEBSEARCHD_SHARED_DIR)", path.display());
            None
        }
    }
}

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
    pub state_dir: tempdir::TempDir,
}

pub mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A directory under the system temp dir, removed on drop.
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new(tag: &str) -> TempDir {
            static N: AtomicU32 = AtomicU32::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("websearchd-test-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("create temp dir");
            TempDir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// An API keys file holding `key` (mode 0600, as the server requires), in a directory removed on drop, and the
/// variable that names it.
pub fn api_keys_file(key: &str) -> (tempdir::TempDir, (String, String)) {
    let dir = tempdir::TempDir::new("api-keys");
    let file = dir.path().join("api-keys");
    std::fs::write(&file, format!("# the operator's\n{key}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    (dir, ("WEBSEARCHD_API_KEYS_FILE".into(), file.display().to_string()))
}

/// The `websearchd` the tests and benches start: cargo's build beside them, or `$WEBSEARCHD_BIN` (for example the
/// static musl release, to soak the binary that ships: `WEBSEARCHD_BIN=... cargo bench --bench soak`).
pub fn binary() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| std::env::var("WEBSEARCHD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_websearchd").into()))
}

impl Server {
    /// Starts the server with these variables (plus a fresh state dir and port 0) and waits for its address.
    pub fn start(env: &[(&str, &str)]) -> Server {
        Server::start_with(env, |c| c)
    }

    /// Like `start`, with a hook to adjust the command (for example to run it under `sh -c 'ulimit ...'`).
    pub fn start_with(env: &[(&str, &str)], adjust: impl FnOnce(&mut Command) -> &mut Command) -> Server {
        Server::start_in(tempdir::TempDir::new("state"), env, adjust)
    }

    /// Starts the server with a given state directory (kept by the returned `Server`), for restart tests.
    pub fn start_in(
        state_dir: tempdir::TempDir,
        env: &[(&str, &str)],
        adjust: impl FnOnce(&mut Command) -> &mut Command,
    ) -> Server {
        let mut cmd = Command::new(binary());
        cmd.env_clear()
            .env("WEBSEARCHD_LISTEN", "127.0.0.1:0")
            .env("WEBSEARCHD_STATE_DIR", state_dir.path().join("data"))
            .env("WEBSEARCHD_LOG", "info")
            // No test reaches the internet: the map's feeds are off unless a test points them at loopback.
            .env("WEBSEARCHD_MAP_LAYERS", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        adjust(&mut cmd);
        let mut child = cmd.spawn().expect("spawn websearchd");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.split("listening on http://").nth(1) {
                    let addr = addr.split_whitespace().next().unwrap_or("").to_string();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("address"),
            Err(_) => {
                let _ = child.kill();
                panic!("server did not start; log: {:?}", log.lock().unwrap());
            }
        };
        Server { child, addr, log, state_dir }
    }

    /// Kills the server (SIGKILL) and hands back its state directory, for a restart on the same state.
    pub fn kill_keep_state(mut self) -> tempdir::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.state_dir, tempdir::TempDir::new("unused"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A size field of the server's `/proc/<pid>/status` (`"VmHWM:"`, the peak resident set; `"VmRSS:"`), in bytes.
    pub fn status_bytes(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{field} missing"));
        kb * 1_024
    }

    /// Threads of the server process, from /proc.
    pub fn threads(&self) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("Threads line")
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The log once it holds `needle` (it is read from the server's stderr by a thread: a line may land just after
    /// the response), or as it is after 5 s.
    pub fn log_with(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let text = self.log_text();
            if text.contains(needle) || std::time::Instant::now() >= deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill").arg(format!("-{sig}")).arg(self.pid().to_string()).status().expect("kill");
        assert!(ok.success());
    }

    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        request(self.addr, method, path, headers, body)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &str) -> Reply {
        self.request("POST", path, &[("Content-Type", "application/json")], body.as_bytes())
    }

    /// A value from `/metrics`: the line that starts with `series` (a name, with labels if any) and a space.
    pub fn metric(&self, series: &str) -> u64 {
        let text = self.get("/metrics").text();
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} not in metrics"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of the header `name`, in order (a header sent twice shows twice).
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or("").to_string()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request on a new connection.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write_request(&mut stream, method, path, headers, body);
    read_reply_to(&mut stream, method == "HEAD").expect("a reply")
}

pub fn write_request(stream: &mut TcpStream, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
    // The server's own address, as a client that was given it names it (a free instance answers its own names).
    let host = stream.peer_addr().map_or_else(|_| "localhost".to_owned(), |a| a.to_string());
    let mut raw = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        raw.push_str(&format!("Host: {host}\r\n"));
    }
    for (k, v) in headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        raw.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    raw.push_str("\r\n");
    let mut bytes = raw.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).expect("write request");
}

/// Reads one response (framed by Content-Length) from a stream; None on EOF before a status line.
pub fn read_reply(stream: &mut TcpStream) -> Option<Reply> {
    read_reply_to(stream, false)
}

/// `read_reply`, for a HEAD request when `head` is set (no body follows the headers).
pub fn read_reply_to(stream: &mut TcpStream, head: bool) -> Option<Reply> {
    // The head is read a byte at a time and the body exactly, so that a pipelined reply behind this one stays in
    // the socket for the next call (reading ahead would lose it).
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => return None,
            Ok(_) => buf.push(byte[0]),
        }
        if !buf.ends_with(b"\r\n\r\n") {
            continue;
        }
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(_)) = resp.parse(&buf) else { panic!("unparseable reply head") };
        let status = resp.code.expect("code");
        let headers: Vec<(String, String)> =
            resp.headers.iter().map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned())).collect();
        if status == 100 {
            buf.clear();
            continue;
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().expect("length"))
            .unwrap_or(0);
        let mut body = vec![0u8; if head { 0 } else { len }];
        stream.read_exact(&mut body).expect("EOF inside a body");
        return Some(Reply { status, headers, body });
    }
}
