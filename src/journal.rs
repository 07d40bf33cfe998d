//! An append-only journal of JSON records: each record is one line `<crc32 hex> <compact JSON>\n`, written with one
//! `write`. `append` fsyncs it before returning (durable across kill -9 and power loss). `write` only writes it (it
//! survives the process, in the page cache, but not a power loss) and `sync_through` later waits until it is on disk:
//! callers that find a sync running that covers their record wait for it instead of issuing their own (group commit),
//! and no lock is held during a sync. An fsync that fails leaves the records not yet known on disk and written before
//! it returned in doubt until the journal is reopened (the kernel may have dropped any page dirty while it ran):
//! `sync_through` fails for them even if a later fsync succeeds.
//!
//! On open, two kinds of bad ending are told apart. A **torn tail** (a last line without its newline) is a write
//! that never completed, so it was never acknowledged to anyone: it is cut. A **damaged record** (a line that has
//! its newline but fails its checksum or is not JSON), anywhere in the file including the last line, was complete
//! once and may have been acknowledged: the journal refuses to open, naming the line and its byte offset, and an
//! operator decides (`websearchd journal check FILE`, `websearchd journal repair FILE --truncate-at OFFSET`).
//!
//! A failed append (ENOSPC, EIO, EFBIG) is cut back to the last complete record before the error is returned, and
//! the next append first makes sure it was: a half-written line never ends up before a good one.
//!
//! A repair keeps a backup copy and appends a marker record `{"journal_repair": {...}}` that says how many complete
//! records were cut, so that users of the journal can keep their sequence numbers from going backwards.
//!
//! Used by the payment ledger and the notary chain.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::{json, Value};

/// The member that marks a repair record.
pub const REPAIR_KEY: &str = "journal_repair";

pub struct Journal {
    path: PathBuf,
    file: Mutex<Tail>,
    /// The same open file, for syncs and reads made without holding `file`.
    syncer: File,
    synced: Mutex<Synced>,
    sync_done: Condvar,
    waits: SyncWaits,
}

/// What is known to be on disk.
struct Synced {
    /// Bytes of the file on disk.
    durable: u64,
    /// A sync is running; it covers what was written before it started.
    running: bool,
    /// Bytes failed syncs covered, `(durable then, the length when it failed]`, merged: records ending there are in
    /// doubt.
    doubt: Option<(u64, u64)>,
}

impl Synced {
    /// A sync ended: a success covered the file up to `written` (its length when the sync started); a failure puts
    /// what was not known durable, up to `written` (its length when the sync returned), in doubt.
    fn done(&mut self, ok: bool, written: u64) {
        self.running = false;
        if ok {
            self.durable = self.durable.max(written);
            return;
        }
        let (from, through) = self.doubt.unwrap_or((self.durable, written));
        self.doubt = Some((from.min(self.durable), through.max(written)));
    }

    /// Whether the record ending at `end` was covered by a failed sync.
    fn in_doubt(&self, end: u64) -> Option<(u64, u64)> {
        self.doubt.filter(|&(from, through)| end > from && end <= through)
    }
}

/// Time callers spent waiting for this journal's syncs, for `/metrics`.
#[derive(Default)]
struct SyncWaits {
    count: AtomicU64,
    micros: AtomicU64,
}

impl SyncWaits {
    fn add(&self, since: Instant) {
        self.count.fetch_add(1, Relaxed);
        self.micros.fetch_add(since.elapsed().as_micros() as u64, Relaxed);
    }
}

struct Tail {
    file: File,
    /// Where the next record starts: the end of the last complete record.
    len: u64,
    /// A failed append may have left bytes past `len` that could not be cut yet.
    dirty: bool,
}

/// What `open` found.
#[derive(Debug)]
pub struct Opened {
    pub records: Vec<Value>,
    /// Where each record starts in the file (for `read_at`).
    pub offsets: Vec<u64>,
    /// Bytes of a torn tail that were cut off (0 if none).
    pub torn_bytes: u64,
}

/// A complete line (newline-terminated) that fails its checksum or is not a JSON record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Complete lines after it.
    pub lines_after: u64,
    pub reason: &'static str,
}

/// What `check` found: the good records before any damage, a torn tail, the first damaged line.
#[derive(Debug)]
pub struct Checked {
    pub records: u64,
    pub torn_bytes: u64,
    pub damage: Option<Damage>,
    pub len: u64,
}

/// What `repair` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    pub backup: PathBuf,
    pub lines_removed: u64,
    pub bytes_removed: u64,
}

impl Journal {
    /// Opens (creating it, mode 0600) the journal at `path` and reads its records; a torn tail is cut, a damaged
    /// record is an `InvalidData` error that names the line, its offset and the recovery command.
    pub fn open(path: &Path) -> io::Result<(Journal, Opened)> {
        use std::os::unix::fs::OpenOptionsExt;
        let existed = path.exists();
        // Never through a link put where the journal goes (`statedir::open_file`).
        let mut file =
            crate::statedir::open_file(path, OpenOptions::new().read(true).append(true).create(true).mode(0o600))?;
        if !existed {
            sync_dir(path)?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let Opened { records, offsets, torn_bytes } = parse_file(path, &bytes)?;
        let good_len = bytes.len() as u64 - torn_bytes;
        if torn_bytes > 0 {
            file.set_len(good_len)?;
            file.sync_all()?;
            log::warn!("{}: cut a torn last record of {torn_bytes} bytes (it never completed)", path.display());
        }
        // Records the previous process wrote without a sync are read from the page cache: on disk before anything
        // is decided on them.
        file.sync_data()?;
        file.seek(SeekFrom::End(0))?;
        let journal = Journal {
            path: path.to_owned(),
            syncer: file.try_clone()?,
            file: Mutex::new(Tail { file, len: good_len, dirty: false }),
            synced: Mutex::new(Synced { durable: good_len, running: false, doubt: None }),
            sync_done: Condvar::new(),
            waits: SyncWaits::default(),
        };
        Ok((journal, Opened { records, offsets, torn_bytes }))
    }

    /// Reads a journal without changing it (a torn tail is reported, not cut): for listing while a server runs.
    pub fn read(path: &Path) -> io::Result<Opened> {
        parse_file(path, &read_whole(path)?)
    }

    /// Appends one record and waits until it is on disk (its own fsync, under the journal's lock); returns where it
    /// starts. On an error nothing of the record stays in the file (or, if even the cut failed, the next append cuts
    /// it first).
    pub fn append(&self, record: &Value) -> io::Result<u64> {
        self.put(record, true).map(|(offset, _)| offset)
    }

    /// Appends one record without waiting for the disk: it is read back after the process ends, but only a sync
    /// (`sync_through` its end, `flush`, or another caller's) keeps it through a power loss. Returns where it starts
    /// and ends. On an error nothing of the record stays in the file, as with `append`.
    pub fn write(&self, record: &Value) -> io::Result<(u64, u64)> {
        self.put(record, false)
    }

    fn put(&self, record: &Value, sync: bool) -> io::Result<(u64, u64)> {
        let line = encode(record)?;
        let mut guard = self.tail();
        let tail = &mut *guard;
        if tail.dirty {
            tail.file.set_len(tail.len)?;
            tail.file.sync_all()?;
            tail.dirty = false;
        }
        let offset = tail.len;
        let synced = tail.file.write_all(line.as_bytes()).and_then(|()| {
            if !sync {
                return Ok(());
            }
            let since = Instant::now();
            let synced = tail.file.sync_data();
            self.waits.add(since);
            synced
        });
        if let Err(e) = synced {
            // Whatever part of the line reached the file is cut, so that the next record does not follow a torn one.
            if tail.file.set_len(offset).and_then(|()| tail.file.sync_all()).is_err() {
                tail.dirty = true;
            }
            return Err(e);
        }
        tail.len += line.len() as u64;
        Ok((offset, tail.len))
    }

    fn tail(&self) -> MutexGuard<'_, Tail> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn synced(&self) -> MutexGuard<'_, Synced> {
        self.synced.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the file is on disk up to `end` (a record's end from `write`), counted in the sync metric.
    pub fn sync_through(&self, end: u64) -> io::Result<()> {
        let since = Instant::now();
        let synced = self.sync_to(end);
        self.waits.add(since);
        synced
    }

    /// Puts everything written so far on disk, if anything is not (a periodic or final sync; not counted).
    pub fn flush(&self) -> io::Result<()> {
        let len = self.tail().len;
        self.sync_to(len)
    }

    /// Bytes of the file known to be on disk.
    pub fn durable(&self) -> u64 {
        self.synced().durable
    }

    /// Whether records were written that are not known to be on disk.
    pub fn behind(&self) -> bool {
        let len = self.tail().len;
        self.synced().durable < len
    }

    /// Group commit: a caller whose bytes a running sync covers waits for it; else, once none runs, it syncs for
    /// everyone who has written so far, holding no lock during the fsync.
    fn sync_to(&self, end: u64) -> io::Result<()> {
        let mut s = self.synced();
        loop {
            if let Some((from, through)) = s.in_doubt(end) {
                return Err(io::Error::other(format!(
                    "an fsync of {} failed: the records between bytes {from} and {through} may not be on disk \
                     (they are read again when the journal is reopened)",
                    self.path.display()
                )));
            }
            if s.durable >= end {
                return Ok(());
            }
            if !s.running {
                break;
            }
            s = self.sync_done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.running = true;
        drop(s);
        // Everything written before this point is covered (the page cache holds it); later records may be too.
        let target = self.tail().len;
        let synced = self.syncer.sync_data();
        // A failed fsync may have lost any page dirty while it ran: records written after `target` was read too.
        let written = if synced.is_ok() { target } else { self.tail().len };
        self.synced().done(synced.is_ok(), written);
        self.sync_done.notify_all();
        synced
    }

    /// The record that starts at `offset` (from `append` or `Opened::offsets`), checked against its checksum.
    pub fn read_at(&self, offset: u64) -> io::Result<Value> {
        let len = self.tail().len;
        let line = Forward::new(&self.syncer, offset, len).line()?;
        let line =
            line.ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no complete record at this offset"))?;
        record_of(&line)
    }

    /// The record whose `key` is `target`, in a journal whose records' keys increase through the file (records
    /// without a key, such as repair markers, are passed over); `None` if no record has it. Found by bisecting the
    /// file's bytes, so that no index of the records is kept in memory: a probe halves the byte range until it is
    /// shorter than a record, about log2(records) + 1 probes (22 for the 1.8 million notary receipts of a 1 GB
    /// journal), each reading the end of the line it lands in and the line after (one read of `READ_CHUNK_BYTES`
    /// when both fit), plus any keyless lines after that.
    pub fn find(&self, target: u64, key: impl Fn(&Value) -> Option<u64>) -> io::Result<Option<Value>> {
        let len = self.tail().len;
        // A line damaged since the start (its checksum fails) is passed over like a keyless one, so that it costs only
        // its own record: it is an error only when the record is not found elsewhere (it could be that line).
        let mut damaged = None;
        // The record sought, if any, starts in [lo, hi).
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let mut reader = Forward::new(&self.syncer, mid.saturating_sub(1), len);
            if mid > 0 {
                // The rest of the line `mid` falls in (just its newline if a line starts at `mid`).
                reader.line()?;
            }
            // The first keyed record that starts in [mid, hi).
            let found = loop {
                let start = reader.at();
                if start >= hi {
                    break None;
                }
                let Some(line) = reader.line()? else {
                    break None;
                };
                let record = match record_of(&line) {
                    Ok(record) => record,
                    Err(e) => {
                        damaged = Some(e);
                        continue;
                    }
                };
                if let Some(k) = key(&record) {
                    break Some((k, reader.at(), record));
                }
            };
            match found {
                Some((k, _, record)) if k == target => return Ok(Some(record)),
                Some((k, end, _)) if k < target => lo = end,
                // Past it, or no keyed record starts in [mid, hi): it starts before `mid`.
                _ => hi = mid,
            }
        }
        damaged.map_or(Ok(None), Err)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A Prometheus summary `name` of the time callers waited for this journal's syncs (seconds, and waits).
    pub fn sync_metric(&self, out: &mut String, name: &str, help: &str) {
        crate::metrics::family(out, name, "summary", help);
        let seconds = self.waits.micros.load(Relaxed) as f64 / 1e6;
        out.push_str(&format!("{name}_sum {seconds}\n{name}_count {}\n", self.waits.count.load(Relaxed)));
    }
}

/// A record as one journal line: `<crc32> <json>\n`.
fn encode(record: &Value) -> io::Result<String> {
    let json = serde_json::to_string(record).map_err(io::Error::other)?;
    Ok(format!("{:08x} {json}\n", crc32(json.as_bytes())))
}

/// Bytes one read asks for when a record is read back (`read_at`, `find`): a notary record is about 560 bytes, so one
/// read holds a whole line and usually the next.
const READ_CHUNK_BYTES: usize = 4_096;

/// Reads a journal's lines forward from a byte offset, in reads of `READ_CHUNK_BYTES`, up to `len` (the end of its
/// last complete record).
struct Forward<'a> {
    file: &'a File,
    /// The file offset of `chunk`'s first byte.
    chunk_at: u64,
    chunk: Vec<u8>,
    /// Bytes of `chunk` already handed out.
    used: usize,
    len: u64,
}

impl<'a> Forward<'a> {
    fn new(file: &'a File, at: u64, len: u64) -> Forward<'a> {
        Forward { file, chunk_at: at, chunk: Vec::new(), used: 0, len }
    }

    /// The offset of the next byte `line` hands out.
    fn at(&self) -> u64 {
        self.chunk_at + self.used as u64
    }

    /// The bytes up to and including the next newline; `None` at `len`, an error if the file ends inside a line.
    fn line(&mut self) -> io::Result<Option<Vec<u8>>> {
        use std::os::unix::fs::FileExt;
        let mut line = Vec::new();
        loop {
            let rest = self.chunk.get(self.used..).unwrap_or_default();
            if let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                line.extend_from_slice(rest.get(..=nl).unwrap_or_default());
                self.used += nl + 1;
                return Ok(Some(line));
            }
            line.extend_from_slice(rest);
            self.chunk_at += self.chunk.len() as u64;
            self.used = 0;
            let want = usize::try_from((self.len.saturating_sub(self.chunk_at)).min(READ_CHUNK_BYTES as u64))
                .unwrap_or(READ_CHUNK_BYTES);
            self.chunk.resize(want, 0);
            let n = if want == 0 { 0 } else { self.file.read_at(&mut self.chunk, self.chunk_at)? };
            self.chunk.truncate(n);
            if n == 0 {
                if line.is_empty() {
                    return Ok(None);
                }
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the journal ends inside a record"));
            }
        }
    }
}

/// A line read back (with its newline), checked against its checksum.
fn record_of(line: &[u8]) -> io::Result<Value> {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    parse_line(text).map_err(|why| io::Error::new(io::ErrorKind::InvalidData, format!("the record {why}")))
}

/// Sequence numbers a repair marker says were cut (`None` for an ordinary record).
pub fn repair_removed(record: &Value) -> Option<u64> {
    let marker = record.get(REPAIR_KEY)?;
    Some(marker.get("lines_removed").and_then(Value::as_u64).unwrap_or(0))
}

/// Reads a journal without changing it and describes it: for `websearchd journal check`.
pub fn check(path: &Path) -> io::Result<Checked> {
    let bytes = read_whole(path)?;
    let len = bytes.len() as u64;
    Ok(match parse(&bytes) {
        Ok((records, _, good_len)) => {
            Checked { records: records.len() as u64, torn_bytes: len - good_len as u64, damage: None, len }
        }
        Err((records, damage)) => Checked { records, torn_bytes: 0, damage: Some(damage), len },
    })
}

/// Cuts the journal at `offset` (the start of a line; everything before it must be intact), after copying the whole
/// file to `<path>.<unix ms>.bak`, and ends it with a repair marker naming the copy and how many sequence numbers
/// were cut (`lines_removed`: one per complete line, or what an earlier marker among them had cut). The cut and the
/// marker land together: the new file is written beside the old and renamed over it, so a crash leaves either. The
/// server must not be running on this file.
pub fn repair(path: &Path, offset: u64, now_ms: u64) -> io::Result<Repaired> {
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {m}", path.display()));
    // The journal's directory is opened once and the journal, its copy and the new file are reached in it, never
    // through a link (`statedir`): run as root in the service's directory, a planted link must not redirect a write.
    let (mut dir, name) = crate::statedir::locate(path.parent().unwrap_or(Path::new("")), path, false)?;
    let mut bytes = Vec::new();
    let file = dir.open_read(&name)?.ok_or_else(|| named(path, io::ErrorKind::NotFound.into()))?;
    // The new journal and its backup keep the owner the journal had (the service's user, repaired with sudo).
    {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata().map_err(|e| named(path, e))?;
        dir.give_new_files_to(meta.uid(), meta.gid());
    }
    (&file).read_to_end(&mut bytes).map_err(|e| named(path, e))?;
    let at = usize::try_from(offset)
        .ok()
        .filter(|&o| o <= bytes.len())
        .ok_or_else(|| invalid(format!("offset {offset} is past the end of the file ({} bytes)", bytes.len())))?;
    if at > 0 && bytes.get(at - 1) != Some(&b'\n') {
        return Err(invalid(format!("offset {offset} is not the start of a line")));
    }
    let (head, cut) = bytes.split_at(at);
    match parse(head) {
        Ok((_, _, good)) if good == head.len() => {}
        Ok(_) => return Err(invalid(format!("offset {offset} is not the start of a line"))),
        Err((_, d)) => {
            return Err(invalid(format!(
                "line {} (offset {}) before {offset} is damaged too: cut there instead",
                d.line, d.offset
            )))
        }
    }
    // A line that does not read (the damage) still held a number.
    let lines_removed = cut
        .split(|&b| b == b'\n')
        .take(cut.iter().filter(|&&b| b == b'\n').count())
        .map(|line| parse_line(line).ok().and_then(|r| repair_removed(&r)).unwrap_or(1))
        .sum::<u64>();
    let mut backup_name = name.clone();
    backup_name.push(format!(".{now_ms}.bak"));
    let backup = dir.path().join(&backup_name);
    dir.create_new(&backup_name, &[&bytes], 0o600)?;
    let marker = encode(&json!({
        REPAIR_KEY: {
            "at": now_ms,
            "truncated_at": offset,
            "lines_removed": lines_removed,
            "bytes_removed": cut.len(),
            "backup": backup.display().to_string(),
        }
    }))?;
    if let Err(e) = dir.write_atomically(&name, &[head, marker.as_bytes()], 0o600) {
        // Nothing was changed: the copy of an unchanged journal is not left behind.
        let _ = dir.remove(&backup_name);
        return Err(e);
    }
    Ok(Repaired { backup, lines_removed, bytes_removed: cut.len() as u64 })
}

/// A journal's bytes, read without following a link at its name: all of them (the server's own record, read by its
/// operator's tools; the server reads it as it opens it).
fn read_whole(path: &Path) -> io::Result<Vec<u8>> {
    crate::statedir::read_file(path, u64::MAX)
}

/// `e` with the path it is about.
fn named(path: &Path, e: io::Error) -> io::Error {
    crate::statedir::named(path, "", e)
}

/// The records of a journal's bytes, and how many bytes of torn tail follow them.
fn parse_file(path: &Path, bytes: &[u8]) -> io::Result<Opened> {
    let (records, offsets, good_len) = parse(bytes).map_err(|(_, d)| {
        let p = path.display();
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{p}: line {} (byte offset {}) is a complete record that {}: damage, not a torn write, so it is not \
                 cut automatically ({} complete line(s) follow it). Inspect: `websearchd journal check {p}`; to cut \
                 it and what follows (a backup copy is kept; their sequence numbers are never reused): \
                 `websearchd journal repair {p} --truncate-at {}`",
                d.line, d.offset, d.reason, d.lines_after, d.offset
            ),
        )
    })?;
    Ok(Opened { records, offsets, torn_bytes: (bytes.len() - good_len) as u64 })
}

/// Parses the records: `Ok((records, offsets, bytes of complete records))`, or the number of good records before
/// the first damaged complete line and that damage.
#[allow(clippy::type_complexity)]
fn parse(bytes: &[u8]) -> Result<(Vec<Value>, Vec<u64>, usize), (u64, Damage)> {
    let mut records = Vec::new();
    let mut offsets = Vec::new();
    let mut offset = 0;
    let mut line_no = 0;
    while offset < bytes.len() {
        line_no += 1;
        let rest = bytes.get(offset..).unwrap_or_default();
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            // No newline: the last write was cut short.
            return Ok((records, offsets, offset));
        };
        match parse_line(rest.get(..nl).unwrap_or_default()) {
            Ok(v) => {
                records.push(v);
                offsets.push(offset as u64);
            }
            Err(reason) => {
                let after = rest.get(nl + 1..).unwrap_or_default();
                let lines_after = after.iter().filter(|&&b| b == b'\n').count() as u64;
                let damage = Damage { line: line_no, offset: offset as u64, lines_after, reason };
                return Err((records.len() as u64, damage));
            }
        }
        offset += nl + 1;
    }
    Ok((records, offsets, offset))
}

fn parse_line(line: &[u8]) -> Result<Value, &'static str> {
    const MALFORMED: &str = "is not `<crc32> <json>`";
    let (crc, json) = (line.get(..8).ok_or(MALFORMED)?, line.get(9..).ok_or(MALFORMED)?);
    if line.get(8) != Some(&b' ') {
        return Err(MALFORMED);
    }
    let crc = std::str::from_utf8(crc).ok().and_then(|c| u32::from_str_radix(c, 16).ok()).ok_or(MALFORMED)?;
    if crc != crc32(json) {
        return Err("fails its checksum");
    }
    serde_json::from_slice(json).map_err(|_| "is not JSON")
}

/// Makes a new file's directory entry durable.
fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}

/// CRC-32 (IEEE 802.3, the zlib polynomial).
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            // A const context: indexing is checked at compile time (i < 256).
            #[allow(clippy::indexing_slicing)]
            {
                table[i] = c;
            }
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE.get(usize::from((crc as u8) ^ b)).copied().unwrap_or(0) ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("websearchd-journal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("journal")
    }

    /// A closed journal of `n` records `{"n": 1}` .. `{"n": n}`, and where each starts.
    fn written(name: &str, n: u64) -> (PathBuf, Vec<u64>) {
        let path = temp(name);
        let (j, _) = Journal::open(&path).unwrap();
        let offsets = (1..=n).map(|i| j.append(&json!({"n": i})).unwrap()).collect();
        (path, offsets)
    }

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn append_and_reopen() {
        let path = temp("reopen");
        let (j, opened) = Journal::open(&path).unwrap();
        assert!(opened.records.is_empty());
        let first = j.append(&json!({"n": 1})).unwrap();
        let second = j.append(&json!({"n": 2, "s": "é\n"})).unwrap();
        assert_eq!(j.read_at(second).unwrap(), json!({"n": 2, "s": "é\n"}));
        assert_eq!(j.read_at(first).unwrap(), json!({"n": 1}));
        assert!(j.read_at(second + 3).is_err());
        drop(j);
        let (j, opened) = Journal::open(&path).unwrap();
        assert_eq!(opened.records, vec![json!({"n": 1}), json!({"n": 2, "s": "é\n"})]);
        assert_eq!(opened.offsets, vec![first, second]);
        assert_eq!(opened.torn_bytes, 0);
        assert_eq!(j.read_at(second).unwrap(), json!({"n": 2, "s": "é\n"}));
    }

    #[test]
    fn written_records_are_read_back_and_synced_on_demand() {
        let path = temp("unsynced");
        let (j, _) = Journal::open(&path).unwrap();
        let (_, first_end) = j.write(&json!({"n": 1})).unwrap();
        let (second, second_end) = j.write(&json!({"n": 2})).unwrap();
        assert_eq!((second, j.durable()), (first_end, 0));
        assert!(j.behind());
        j.sync_through(first_end).unwrap();
        assert!(j.durable() >= first_end);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let j = &j;
                move || {
                    (0..10)
                        .map(|i| j.write(&json!({"i": i})).and_then(|(_, end)| j.sync_through(end)))
                        .collect::<io::Result<Vec<()>>>()
                }
            })
            .collect();
        std::thread::scope(|s| {
            for h in threads.into_iter().map(|t| s.spawn(t)).collect::<Vec<_>>() {
                h.join().unwrap().unwrap();
            }
        });
        assert!(j.durable() > second_end && !j.behind());
        drop(j);
        let (_, opened) = Journal::open(&path).unwrap();
        assert_eq!(opened.records.len(), 42);
    }

    /// A failed sync leaves what it covered in doubt even after later syncs succeed; doubts merge; what was durable
    /// before it stays durable.
    #[test]
    fn a_failed_sync_leaves_its_records_in_doubt() {
        let mut s = Synced { durable: 100, running: true, doubt: None };
        s.done(false, 250);
        assert!(!s.running);
        assert_eq!(
            (s.in_doubt(100), s.in_doubt(101), s.in_doubt(250), s.in_doubt(251)),
            (None, Some((100, 250)), Some((100, 250)), None)
        );
        s.done(true, 300);
        assert_eq!((s.durable, s.in_doubt(200)), (300, Some((100, 250))), "a later success does not clear the doubt");
        s.done(false, 400);
        assert_eq!((s.in_doubt(200), s.in_doubt(400), s.in_doubt(401)), (Some((100, 400)), Some((100, 400)), None));
        s.done(true, 250);
        assert_eq!(s.durable, 300, "a sync that covered less than known leaves durable where it was");
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_length() {
        let (path, _) = written("torn", 2);
        let full = std::fs::read(&path).unwrap();
        let first_len = full.iter().position(|&b| b == b'\n').unwrap() + 1;
        for cut in first_len + 1..full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            let (j, opened) = Journal::open(&path).unwrap();
            assert_eq!(opened.records, vec![json!({"n": 1})], "cut at {cut}");
            assert_eq!(opened.torn_bytes as usize, cut - first_len);
            // Appending after the repair continues cleanly.
            j.append(&json!({"n": 3})).unwrap();
            drop(j);
            let (_, again) = Journal::open(&path).unwrap();
            assert_eq!(again.records, vec![json!({"n": 1}), json!({"n": 3})]);
        }
    }

    #[test]
    fn a_damaged_last_record_is_refused_and_repaired_with_a_backup() {
        let (path, offsets) = written("damaged-last", 2);
        let second = offsets[1];
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let Err(e) = Journal::open(&path) else { panic!("a damaged record must not open") };
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let text = e.to_string();
        assert!(text.contains(&format!("line 2 (byte offset {second})")), "{text}");
        assert!(text.contains(&format!("journal repair {} --truncate-at {second}", path.display())), "{text}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing is cut automatically");
        assert!(Journal::read(&path).is_err());
        let c = check(&path).unwrap();
        assert_eq!((c.records, c.torn_bytes), (1, 0));
        assert_eq!(c.damage, Some(Damage { line: 2, offset: second, lines_after: 0, reason: "fails its checksum" }));

        assert!(repair(&path, second + 1, 7).is_err(), "not the start of a line");
        assert!(repair(&path, bytes.len() as u64 + 1, 7).is_err(), "past the end");
        let r = repair(&path, second, 7).unwrap();
        assert_eq!((r.lines_removed, r.bytes_removed), (1, bytes.len() as u64 - second));
        assert_eq!(std::fs::read(&r.backup).unwrap(), bytes, "the backup is the file as it was");
        let (j, opened) = Journal::open(&path).unwrap();
        assert_eq!(opened.records[0], json!({"n": 1}));
        assert_eq!(repair_removed(&opened.records[1]), Some(1));
        assert_eq!(repair_removed(&opened.records[0]), None);
        j.append(&json!({"n": 3})).unwrap();
        assert_eq!(check(&path).unwrap().records, 3);
    }

    /// `find` bisects the file for a record by an increasing key, passing over keyless records (repair markers),
    /// whatever the records' lengths (one longer than a read, many shorter).
    #[test]
    fn records_are_found_by_an_increasing_key_without_an_index() {
        let path = temp("find");
        let (j, _) = Journal::open(&path).unwrap();
        let mut keys = Vec::new();
        for n in (1..=400u64).filter(|n| n % 7 != 0) {
            if n % 50 == 0 {
                j.append(&json!({REPAIR_KEY: {"lines_removed": 1}})).unwrap();
            }
            let pad = if n == 123 { "x".repeat(3 * READ_CHUNK_BYTES) } else { "y".repeat((n % 13) as usize) };
            j.append(&json!({"n": n, "pad": pad})).unwrap();
            keys.push(n);
        }
        let key = |r: &Value| r.get("n").and_then(Value::as_u64);
        for &n in &keys {
            assert_eq!(j.find(n, key).unwrap().and_then(|r| key(&r)), Some(n), "{n}");
        }
        for n in [0, 7, 49, 50 * 7, 401, u64::MAX] {
            assert_eq!(j.find(n, key).unwrap(), None, "{n}");
        }
        let (empty, _) = Journal::open(&temp("find-empty")).unwrap();
        assert_eq!(empty.find(1, key).unwrap(), None);

        // A line damaged after the start costs its own record only: every other is still found, and the damaged
        // one (or one that is nowhere) is an error, not "no such record", once the search passed the damage.
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(9).position(|w| w == br#"{"n":200,"#).unwrap() + 5;
        bytes[at] = b'9';
        std::fs::write(&path, &bytes).unwrap();
        for &n in keys.iter().filter(|&&n| n != 200) {
            assert_eq!(j.find(n, key).unwrap().and_then(|r| key(&r)), Some(n), "{n}");
        }
        assert!(j.find(200, key).is_err());
    }

    /// A second repair that cuts the first one's marker counts the numbers that marker had cut, so none is reused.
    #[test]
    fn a_repair_that_cuts_an_earlier_marker_keeps_its_count() {
        let (path, offsets) = written("repair-twice", 3);
        let second = offsets[1];
        assert_eq!(repair(&path, second, 7).unwrap().lines_removed, 2);
        let (j, opened) = Journal::open(&path).unwrap();
        let marker_at = opened.offsets[1];
        j.append(&json!({"n": 4})).unwrap();
        drop(j);
        // The marker (2 numbers) and record 4 (1): 3 numbers.
        let r = repair(&path, marker_at, 8).unwrap();
        assert_eq!(r.lines_removed, 3);
        let opened = Journal::read(&path).unwrap();
        assert_eq!(opened.records.len(), 2);
        assert_eq!(repair_removed(&opened.records[1]), Some(3));
        assert!(!path.with_extension("repair").exists() && !Path::new(&format!("{}.repair", path.display())).exists());
    }

    #[test]
    fn damage_in_the_middle_is_cut_from_there() {
        let (path, offsets) = written("damaged-middle", 3);
        let second = offsets[1];
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[second as usize + 12] = b'X';
        bytes.extend_from_slice(b"0000");
        std::fs::write(&path, &bytes).unwrap();
        let c = check(&path).unwrap();
        assert_eq!(c.damage.as_ref().map(|d| (d.line, d.lines_after)), Some((2, 1)));
        assert!(repair(&path, bytes.len() as u64, 1).is_err(), "damage before the cut");
        assert_eq!(repair(&path, second, 1).unwrap().lines_removed, 2);
        let (_, opened) = Journal::open(&path).unwrap();
        assert_eq!(opened.records.len(), 2);
    }

    #[test]
    fn damage_before_the_end_is_an_error() {
        let (path, _) = written("damage", 2);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[12] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert!(Journal::open(&path).is_err());
    }
}
