//! Inbound HTTP/1.1: a blocking, bounded server built on `httparse`.
//!
//! One reactor thread owns every client connection while it is idle or while its request is still arriving, and
//! waits on all of them at once with `poll(2)`; only a complete request (head and body) is handed to the bounded
//! worker pool. Slow or idle clients therefore cost a file descriptor and a buffer, never a worker thread, and the
//! thread count is fixed at start. ARCHITECTURE.md says why this is not tiny_http.
//!
//! This module knows nothing of routes: it gives `Request`s to a `Handler` and writes the `Response`s back.

pub mod client_addr;
mod request;
mod response;
mod server;
pub mod sys;

pub use request::{parse_head, Framing, Head, HeadError, Headers, Request, RequestId, HEADERS_CAP, HEAD_BYTES_CAP};
pub use response::{reason, Prepared, Reply, Response};
pub use server::{Handler, Limits, Reject, RequestIds, Server, ServerStats, ShutdownHandle, WRITE_PENDING_BYTES_MAX};
