//! An append-only journal of JSON records, durable across kill -9 and power loss: each record is one line
//! `<crc32 hex> <compact JSON>\n`, written with one `write` and fsynced before `append` returns. On open, a torn last
//! record (no newline, a bad checksum, or bad JSON) is detected and cut off; damage anywhere else is an error, for an
//! operator to look at, never silently dropped.
//!
//! Used by the payment ledger and the notary chain.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

pub struct Journal {
    path: PathBuf,
    /// The file and its length (where the next record starts).
    file: Mutex<(File, u64)>,
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

impl Journal {
    /// Opens (creating it, mode 0600) the journal at `path` and reads its records.
    pub fn open(path: &Path) -> io::Result<(Journal, Opened)> {
        use std::os::unix::fs::OpenOptionsExt;
        let existed = path.exists();
        let mut file = OpenOptions::new().read(true).append(true).create(true).mode(0o600).open(path)?;
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
            log::warn!("{}: cut a torn last record of {torn_bytes} bytes", path.display());
        }
        file.seek(SeekFrom::End(0))?;
        let journal = Journal { path: path.to_owned(), file: Mutex::new((file, good_len)) };
        Ok((journal, Opened { records, offsets, torn_bytes }))
    }

    /// Reads a journal without changing it (a torn tail is reported, not cut): for listing while a server runs.
    pub fn read(path: &Path) -> io::Result<Opened> {
        parse_file(path, &std::fs::read(path)?)
    }

    /// Appends one record and waits until it is on disk; returns where it starts.
    pub fn append(&self, record: &Value) -> io::Result<u64> {
        let json = serde_json::to_string(record).map_err(io::Error::other)?;
        let line = format!("{:08x} {json}\n", crc32(json.as_bytes()));
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (file, len) = &mut *guard;
        let offset = *len;
        if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.sync_data()) {
            // Whatever part of the line reached the file is cut, so that the next record does not follow a torn one.
            let _ = file.set_len(offset).and_then(|()| file.seek(SeekFrom::End(0)).map(|_| ()));
            return Err(e);
        }
        *len += line.len() as u64;
        Ok(offset)
    }

    /// The record that starts at `offset` (from `append` or `Opened::offsets`), checked against its checksum.
    pub fn read_at(&self, offset: u64) -> io::Result<Value> {
        use std::os::unix::fs::FileExt;
        let guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (file, len) = &*guard;
        let mut line = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut at = offset;
        while at < *len {
            let want = usize::try_from((*len - at).min(chunk.len() as u64)).unwrap_or(chunk.len());
            let n = file.read_at(chunk.get_mut(..want).unwrap_or_default(), at)?;
            if n == 0 {
                break;
            }
            let got = chunk.get(..n).unwrap_or_default();
            if let Some(nl) = got.iter().position(|&b| b == b'\n') {
                line.extend_from_slice(got.get(..nl).unwrap_or_default());
                return parse_line(&line)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "the record fails its checksum"));
            }
            line.extend_from_slice(got);
            at += n as u64;
        }
        Err(io::Error::new(io::ErrorKind::UnexpectedEof, "no complete record at this offset"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The records of a journal's bytes, and how many bytes of torn tail follow them.
fn parse_file(path: &Path, bytes: &[u8]) -> io::Result<Opened> {
    let (records, offsets, good_len) = parse(bytes).map_err(|line| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: record {line} is damaged and is not the last one; refusing to guess", path.display()),
        )
    })?;
    Ok(Opened { records, offsets, torn_bytes: (bytes.len() - good_len) as u64 })
}

/// Parses the records; `Ok((records, bytes of complete records))`, or `Err(line number)` for damage before the end.
#[allow(clippy::type_complexity)]
fn parse(bytes: &[u8]) -> Result<(Vec<Value>, Vec<u64>, usize), usize> {
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
        let line = rest.get(..nl).unwrap_or_default();
        match parse_line(line) {
            Some(v) => {
                records.push(v);
                offsets.push(offset as u64);
            }
            None if offset + nl + 1 == bytes.len() => return Ok((records, offsets, offset)),
            None => return Err(line_no),
        }
        offset += nl + 1;
    }
    Ok((records, offsets, offset))
}

fn parse_line(line: &[u8]) -> Option<Value> {
    let (crc, json) = (line.get(..8)?, line.get(9..)?);
    if line.get(8) != Some(&b' ') {
        return None;
    }
    let crc = u32::from_str_radix(std::str::from_utf8(crc).ok()?, 16).ok()?;
    if crc != crc32(json) {
        return None;
    }
    serde_json::from_slice(json).ok()
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
    fn a_torn_tail_is_cut_at_every_length() {
        let path = temp("torn");
        let (j, _) = Journal::open(&path).unwrap();
        j.append(&json!({"n": 1})).unwrap();
        j.append(&json!({"n": 2})).unwrap();
        drop(j);
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
    fn damage_before_the_end_is_an_error() {
        let path = temp("damage");
        let (j, _) = Journal::open(&path).unwrap();
        j.append(&json!({"n": 1})).unwrap();
        j.append(&json!({"n": 2})).unwrap();
        drop(j);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[12] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        assert!(Journal::open(&path).is_err());
    }
}
