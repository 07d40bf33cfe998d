//! A loopback HTTP server standing in for an upstream (a search source, later a facilitator or a page): it records
//! each request and answers as the test's function says, including the ways real upstreams fail.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A form field or query parameter, percent-decoded (`+` as space).
    pub fn param(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?').map(|(_, q)| q.to_string()).unwrap_or_default();
        let body = String::from_utf8_lossy(&self.body).into_owned();
        [query, body].iter().flat_map(|s| s.split('&').map(str::to_string).collect::<Vec<_>>()).find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == name).then(|| decode(v))
        })
    }
}

fn decode(v: &str) -> String {
    let v = v.replace('+', " ");
    let mut out = Vec::new();
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(x) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How to answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A response with extra headers.
    WithHeaders(Box<Answer>, Vec<(String, String)>),
    Respond {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// Wait, then answer.
    Delay(Duration, Box<Answer>),
    /// Accept and say nothing for this long, then close.
    Hang(Duration),
    /// Close the connection with a reset.
    Reset,
    /// Send bytes that are not HTTP.
    Garbage(Vec<u8>),
}

impl Answer {
    pub fn html(status: u16, body: impl Into<Vec<u8>>) -> Answer {
        Answer::Respond { status, content_type: "text/html; charset=utf-8", body: body.into() }
    }

    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Answer {
        Answer::Respond { status, content_type: "application/json", body: body.into() }
    }

    pub fn with_location(self, to: &str) -> Answer {
        Answer::WithHeaders(Box::new(self), vec![("Location".into(), to.into())])
    }
}

type Route = dyn Fn(&Seen) -> Answer + Send + Sync;

pub struct Upstream {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Paths answered but left out of `seen()` (still counted by `count`).
    unlisted: &'static [&'static str],
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Upstream {
    pub fn start(route: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Upstream {
        Upstream::start_unlisting(&[], route)
    }

    /// Like `start`, with requests to `unlisted` paths left out of `seen()`: a facilitator's `/supported`, which the
    /// server asks at start, is not one of the payment calls that tests list.
    pub fn start_unlisting(
        unlisted: &'static [&'static str],
        route: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
    ) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let route: Arc<Route> = Arc::new(route);
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (route, seen) = (route.clone(), seen2.clone());
                std::thread::spawn(move || serve(stream, &*route, &seen));
            }
        });
        Upstream { addr, seen, unlisted, stop, thread: Some(thread) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().iter().filter(|s| !self.unlisted.contains(&s.path())).cloned().collect()
    }

    pub fn count(&self, path: &str) -> usize {
        self.seen.lock().unwrap().iter().filter(|s| s.path() == path).count()
    }

    /// Waits until a request to `path` has arrived (bounded).
    pub fn wait_for(&self, path: &str, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.count(path) < n {
            assert!(std::time::Instant::now() < deadline, "no request to {path} arrived");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut stream: TcpStream, route: &Route, seen: &Mutex<Vec<Seen>>) {
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let request = loop {
        let parsed = {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&buf) {
                Ok(httparse::Status::Complete(n)) => Some((
                    n,
                    req.method.unwrap_or("").to_string(),
                    req.path.unwrap_or("").to_string(),
                    req.headers
                        .iter()
                        .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
                        .collect::<Vec<_>>(),
                )),
                _ => None,
            }
        };
        if let Some((n, method, target, headers)) = parsed {
            let len: usize = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < n + len {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(got) => buf.extend_from_slice(&chunk[..got]),
                }
            }
            break Seen { method, target, headers, body: buf[n..n + len].to_vec() };
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(got) => buf.extend_from_slice(&chunk[..got]),
        }
    };
    let answer = route(&request);
    seen.lock().unwrap().push(request);
    answer_with(&mut stream, answer);
}

fn answer_with(stream: &mut TcpStream, answer: Answer) {
    answer_with_headers(stream, answer, &[]);
}

fn answer_with_headers(stream: &mut TcpStream, answer: Answer, extra: &[(String, String)]) {
    match answer {
        Answer::WithHeaders(inner, headers) => answer_with_headers(stream, *inner, &headers),
        Answer::Respond { status, content_type, body } => {
            let more: String = extra.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{more}Connection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            let _ = stream.shutdown(Shutdown::Write);
            // Let the client read everything before the socket closes.
            let _ = stream.read(&mut [0u8; 64]);
        }
        Answer::Delay(d, inner) => {
            std::thread::sleep(d);
            answer_with(stream, *inner);
        }
        Answer::Hang(d) => std::thread::sleep(d),
        Answer::Reset => reset(stream),
        Answer::Garbage(bytes) => {
            let _ = stream.write_all(&bytes);
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Closes with a TCP reset: SO_LINGER with a zero timeout makes close() send RST.
fn reset(stream: &mut TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a valid socket descriptor and a pointer to a live `linger` of the size passed.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}
