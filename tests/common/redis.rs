//! A real `redis-server` started on a loopback port for a test (Debian package `redis-server`), stopped on drop;
//! it can be killed and started again on the same port. Absent, `RedisServer::start` prints a notice and gives
//! `None` (a failure under `WEBSEARCHD_REQUIRE_INPUTS=1`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tempdir::TempDir;

pub const BINARY: &str = "redis-server";

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: TempDir,
    /// Options besides the port (TLS, a password); with TLS the port is the TLS port.
    options: Vec<String>,
    tls: bool,
}

/// Whether `redis-server` can be run here.
pub fn available() -> bool {
    Command::new(BINARY).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

impl RedisServer {
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(&[], false)
    }

    /// With these options; `tls`: they configure TLS, which takes the port (plain TCP is off).
    pub fn start_with(options: &[String], tls: bool) -> Option<RedisServer> {
        if !available() {
            super::skip_for(&format!("{BINARY} is absent (apt-get install redis-server)"));
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (dir, options) = (TempDir::new("redis"), options.to_vec());
        let mut server = RedisServer { port, child: None, dir, options, tls };
        server.resume();
        Some(server)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `WEBSEARCHD_REDIS_SECRET_FILE` for a fleet on this server: a file of 64 hex digits (the same for every call
    /// on one server), written beside its data.
    pub fn secret_var(&self) -> (String, String) {
        ("WEBSEARCHD_REDIS_SECRET_FILE".into(), self.dir_file("fleet.secret", &"5e".repeat(32)))
    }

    /// A file of `text` (and a newline) beside the server's data, mode 0600: its path.
    pub fn dir_file(&self, name: &str, text: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path.display().to_string()
    }

    /// One command of any bytes over a new connection, its whole reply read by the service's own parser; `None` if
    /// the server cannot be reached.
    pub fn call(&self, args: &[&[u8]]) -> Option<websearchd::store::resp::Reply> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut out = Vec::new();
        websearchd::store::resp::encode(args, &mut out);
        s.write_all(&out).ok()?;
        let (mut parser, mut buf) = (websearchd::store::resp::Parser::new(), vec![0u8; 64 * 1_024]);
        loop {
            let n = s.read(&mut buf).ok().filter(|n| *n > 0)?;
            let mut input = &buf[..n];
            while !input.is_empty() {
                let (used, reply) = parser.feed(input).ok()?;
                if reply.is_some() {
                    return reply;
                }
                input = &input[used..];
            }
        }
    }

    /// Starts the server (again) on its port, and waits until it answers.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let port = self.port.to_string();
        let ports = if self.tls { ["--port", "0", "--tls-port", &port] } else { ["--port", &port, "--tls-port", "0"] };
        let child = Command::new(BINARY)
            .args(ports)
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(&self.options)
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        let ready = |s: &RedisServer| match s.tls {
            // A TLS server is ready when it accepts; the test's own client speaks only plain RESP.
            true => TcpStream::connect(("127.0.0.1", s.port)).is_ok(),
            false => s.command(&["PING"]).is_some_and(|r| r.starts_with("+PONG") || r.starts_with("-NOAUTH")),
        };
        while !ready(self) {
            assert!(Instant::now() < deadline, "redis-server did not answer on port {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL): what it held is lost, as when a machine dies.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// One command over a new connection; the reply as text (as much as one read brings), `None` if the server
    /// cannot be reached.
    pub fn command(&self, args: &[&str]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(out.as_bytes()).ok()?;
        let mut buf = [0u8; 4_096];
        let n = s.read(&mut buf).ok()?;
        Some(String::from_utf8_lossy(&buf[..n]).into_owned())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
