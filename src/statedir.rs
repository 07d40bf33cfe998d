//! Files in the state directory, opened so that nothing the service's user puts there can turn a command run as root
//! against a file elsewhere (issue 33, finding 3): `sudo websearchd keygen`, `apikey new` or `journal repair` in a
//! directory the service's user owns never follow a link in it, never write through a temporary name that user chose,
//! and never change a file of someone else's.
//!
//! - A directory is opened once and every name is then looked up in it, not by its path again: through
//!   `/proc/self/fd/<fd>/<name>`, which the kernel resolves to the open directory itself as `openat(2)` would (std
//!   has no `openat`, and only `http::sys` holds `unsafe`); where /proc is not mounted, by its path.
//! - Every file is opened with `O_NOFOLLOW` (a link is refused, never followed) and checked on its descriptor: a
//!   regular file, one link, owned by the directory's owner (the service's user) or root (or anyone, in a directory
//!   of root's that no one else may write: nobody else could have put it there). A subdirectory (`keys/`) is opened
//!   the same way. Anything else is refused in one line that names it.
//! - A file is replaced through a temporary file of a random name made with `O_CREAT|O_EXCL`, its mode and owner set
//!   on the descriptor, renamed over the target; on any failure the temporary file is removed.
//! - What root creates in a directory another user owns is given to that user (on the descriptor), so the service can
//!   read it; modes are kept.
//!
//! The state directory itself may be a link (root's, to a bigger disk on a Pi; or a user's, to a directory of their
//! own): it is followed. A link to it made by another user, to a directory not theirs, is refused.
//!
//! Every error names the path it is about.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Bytes read at most of a small file of the state directory (a key, the retired keys' list) or of the API keys file.
pub const SMALL_FILE_BYTES_MAX: u64 = 1_048_576;

/// An open directory of the state directory, and whose it is.
pub struct Dir {
    fd: File,
    /// Where names are looked up: the open directory itself (`/proc/self/fd/<fd>`), or its path without /proc.
    base: PathBuf,
    /// Its path, for messages.
    path: PathBuf,
    /// The state directory's owner: the service's user. Files and directories in it must be its or root's.
    uid: u32,
    gid: u32,
    /// Root's and writable by no one else: nothing in it was put there by another user, so any owner is accepted
    /// (a key file an operator configured in /etc/websearchd/ and gave to the service's user).
    trusted: bool,
    /// Who gets what root creates here (`give_new_files_to`): the state directory's owner unless said otherwise.
    heir: (u32, u32),
}

impl Dir {
    /// Opens the directory at `path` (the state directory, or the directory of a file an operator named), creating it
    /// and its missing parents with mode 0700 when `create` is set and it does not exist.
    pub fn open(path: &Path, create: bool) -> io::Result<Dir> {
        let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        let link = match std::fs::symlink_metadata(path) {
            Ok(meta) => meta.file_type().is_symlink().then_some(meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(path)
                    .map_err(|e| named(path, "cannot create the directory", e))?;
                None
            }
            Err(e) => return Err(named(path, "", e)),
        };
        // The directory's own name is followed only when it is a link: a link put in its place after the look above
        // makes the open fail (ELOOP) instead of being followed.
        let nofollow = if link.is_some() { 0 } else { libc::O_NOFOLLOW };
        let fd = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | nofollow)
            .open(path)
            .map_err(|e| refusal_or(path, "cannot open the directory", e))?;
        let meta = fd.metadata().map_err(|e| named(path, "", e))?;
        if let Some(link) = link {
            if link.uid() != 0 && link.uid() != meta.uid() {
                return Err(refused(
                    path,
                    format!(
                        "is a symbolic link made by uid {} to a directory of uid {} (a link is followed there only if \
                         root or the directory's owner made it)",
                        link.uid(),
                        meta.uid()
                    ),
                ));
            }
        }
        Ok(Dir::new(fd, path.to_owned(), &meta, (meta.uid(), meta.gid())))
    }

    fn new(fd: File, path: PathBuf, meta: &std::fs::Metadata, (uid, gid): (u32, u32)) -> Dir {
        use std::os::fd::AsRawFd;
        let proc = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let same = |m: std::fs::Metadata| (m.dev(), m.ino()) == (meta.dev(), meta.ino());
        let base = if std::fs::metadata(&proc).is_ok_and(same) { proc } else { path.clone() };
        let trusted = meta.uid() == 0 && meta.mode() & 0o022 == 0;
        Dir { fd, base, path, uid, gid, trusted, heir: (uid, gid) }
    }

    /// What root creates here from now on goes to `uid` and `gid` (a repaired journal keeps its owner).
    pub fn give_new_files_to(&mut self, uid: u32, gid: u32) {
        self.heir = (uid, gid);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` in this one (never a link), created with mode 0700 when `create` is set and it does not
    /// exist.
    pub fn sub(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
        let path = self.path.join(name);
        if create {
            match std::fs::DirBuilder::new().mode(0o700).create(self.at(name)?) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(named(&path, "cannot create the directory", e)),
            }
        }
        let fd = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(self.at(name)?)
            .map_err(|e| refusal_or(&path, "cannot open the directory", e))?;
        let meta = fd.metadata().map_err(|e| named(&path, "", e))?;
        self.check_owner(&path, &meta)?;
        self.hand_over(&path, &fd, &meta)?;
        // In a directory of root's, a subdirectory's owner is as good as root; elsewhere the state directory's owner
        // stays the one, and gets what root makes.
        if self.trusted {
            return Ok(Dir::new(fd, path, &meta, (meta.uid(), meta.gid())));
        }
        let mut sub = Dir::new(fd, path, &meta, (self.uid, self.gid));
        sub.heir = self.heir;
        Ok(sub)
    }

    /// The file `name` opened to read, or `None` when there is none.
    pub fn open_read(&self, name: &OsStr) -> io::Result<Option<File>> {
        // O_NONBLOCK: a FIFO put there must not hang the command; it is refused below as not a regular file.
        let opened =
            OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(self.at(name)?);
        match opened {
            Ok(file) => self.checked(name, file).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(refusal_or(&self.path.join(name), "cannot open", e)),
        }
    }

    /// The content of the small file `name` (at most `SMALL_FILE_BYTES_MAX`), or `None` when there is none.
    pub fn read(&self, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        let Some(file) = self.open_read(name)? else { return Ok(None) };
        let mut bytes = Vec::new();
        file.take(SMALL_FILE_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(|e| named(&self.path.join(name), "", e))?;
        if bytes.len() as u64 > SMALL_FILE_BYTES_MAX {
            return Err(refused(&self.path.join(name), format!("is larger than {SMALL_FILE_BYTES_MAX} bytes")));
        }
        Ok(Some(bytes))
    }

    /// The file `name` opened to append, created with `mode` if it does not exist; its mode is set to `mode` (a file
    /// made by hand may be wider open).
    pub fn open_append(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let path = self.path.join(name);
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.at(name)?)
            .map_err(|e| refusal_or(&path, "cannot open", e))?;
        let file = self.checked(name, file)?;
        let meta = file.metadata().map_err(|e| named(&path, "", e))?;
        self.hand_over(&path, &file, &meta)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(|e| named(&path, "", e))?;
        Ok(file)
    }

    /// Makes the new file `name` (never an existing one) holding `parts` one after the other, on disk before it
    /// returns; on a failure nothing of it is left.
    pub fn create_new(&self, name: &OsStr, parts: &[&[u8]], mode: u32) -> io::Result<()> {
        self.create(name, parts, mode)?;
        let synced = self.sync();
        if synced.is_err() {
            let _ = self.remove(name);
        }
        synced
    }

    /// `create_new` but for the directory's entry, which the caller syncs (`write_atomically` syncs it once, after
    /// the rename): the file's content is on disk before it returns; on a failure nothing of it is left.
    fn create(&self, name: &OsStr, parts: &[&[u8]], mode: u32) -> io::Result<()> {
        let path = self.path.join(name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.at(name)?)
            .map_err(|e| named(&path, "cannot create", e))?;
        let written = self.fill(&path, file, parts, mode);
        if written.is_err() {
            let _ = self.remove(name);
        }
        written
    }

    /// Replaces (or makes) the file `name` so that a crash leaves either the old content or the new (`parts` one after
    /// the other), never a mix: a new temporary file of a random name, synced, renamed over it, and the directory
    /// synced. On a failure the temporary file is removed and `name` is as it was.
    pub fn write_atomically(&self, name: &OsStr, parts: &[&[u8]], mode: u32) -> io::Result<()> {
        let path = self.path.join(name);
        let random = crate::sign::keys::random_bytes::<8>().map_err(|e| named(&path, "", e))?;
        let mut tmp = std::ffi::OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".{}.tmp", crate::codec::hex_encode(&random)));
        // The temporary file's entry needs no sync of its own: the rename's sync below puts the directory on disk,
        // and a crash before it leaves at worst a stray temporary file (the old content is still under `name`).
        self.create(&tmp, parts, mode)?;
        let renamed = std::fs::rename(self.at(&tmp)?, self.at(name)?)
            .map_err(|e| named(&path, "cannot replace", e))
            .and_then(|()| self.sync());
        if renamed.is_err() {
            let _ = self.remove(&tmp);
        }
        renamed
    }

    /// Removes the file `name` (a link itself, never what it points to).
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        std::fs::remove_file(self.at(name)?).map_err(|e| named(&self.path.join(name), "cannot remove", e))
    }

    /// Puts the directory's entries (a new or renamed file) on disk.
    pub fn sync(&self) -> io::Result<()> {
        self.fd.sync_all().map_err(|e| named(&self.path, "", e))
    }

    fn fill(&self, path: &Path, mut file: File, parts: &[&[u8]], mode: u32) -> io::Result<()> {
        let meta = file.metadata().map_err(|e| named(path, "", e))?;
        self.hand_over(path, &file, &meta)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .and_then(|()| parts.iter().try_for_each(|part| file.write_all(part)))
            .and_then(|()| file.sync_all())
            .map_err(|e| named(path, "", e))
    }

    /// Where `name` is looked up; a name that is not one plain component is refused.
    fn at(&self, name: &OsStr) -> io::Result<PathBuf> {
        let mut components = Path::new(name).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(n)), None) if n == name => Ok(self.base.join(name)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a plain file name", self.path.join(name).display()),
            )),
        }
    }

    /// `file` if it is a regular file with one link, owned by the directory's owner or root.
    fn checked(&self, name: &OsStr, file: File) -> io::Result<File> {
        let path = self.path.join(name);
        let meta = file.metadata().map_err(|e| named(&path, "", e))?;
        if !meta.file_type().is_file() {
            return Err(refused(&path, "is not a regular file".into()));
        }
        if meta.nlink() > 1 {
            return Err(refused(
                &path,
                format!("has {} hard links (a file of the state directory never has another name)", meta.nlink()),
            ));
        }
        self.check_owner(&path, &meta)?;
        Ok(file)
    }

    fn check_owner(&self, path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
        if self.trusted || meta.uid() == self.uid || meta.uid() == 0 {
            return Ok(());
        }
        Err(refused(
            path,
            format!("belongs to uid {}, neither the state directory's owner (uid {}) nor root", meta.uid(), self.uid),
        ))
    }

    /// Gives a root-owned file or directory in a directory another user owns to that user (the service's, which must
    /// read it), or to the heir named, on its descriptor.
    fn hand_over(&self, path: &Path, file: &File, meta: &std::fs::Metadata) -> io::Result<()> {
        let (uid, gid) = self.heir;
        if meta.uid() != 0 || uid == 0 {
            return Ok(());
        }
        std::os::unix::fs::fchown(file, Some(uid), Some(gid)).map_err(|e| {
            named(path, &format!("cannot give it to uid {uid} gid {gid} (the state directory's owner)"), e)
        })
    }
}

/// The directory that holds `path` and the file's name in it. A path under `state_dir` is reached from the state
/// directory one component at a time, none of them followed if it is a link (`keys/card.key`); a path elsewhere (a
/// file an operator configured) from its own directory. Directories are created (0700) when `create` is set.
pub fn locate(state_dir: &Path, path: &Path, create: bool) -> io::Result<(Dir, std::ffi::OsString)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not the path of a file", path.display()))
    })?;
    let parent = path.parent().unwrap_or(Path::new(""));
    let Ok(rest) = parent.strip_prefix(state_dir) else {
        let mut dir = Dir::open(parent, create)?;
        // What root writes there is for the service, as in the state directory.
        if let Ok(meta) = std::fs::metadata(state_dir) {
            dir.give_new_files_to(meta.uid(), meta.gid());
        }
        return Ok((dir, name.to_owned()));
    };
    let mut dir = Dir::open(state_dir, create)?;
    for component in rest.components() {
        match component {
            Component::Normal(n) => dir = dir.sub(n, create)?,
            Component::CurDir => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: `..` is not followed in the state directory", path.display()),
                ))
            }
        }
    }
    Ok((dir, name.to_owned()))
}

/// Opens the file at `path` with `options`, never through a link at its own name, and only if it is a regular file.
/// For files the server itself opens by path (its journals, the facilitator's secret). Errors do not name the path:
/// callers do.
pub fn open_file(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::other("is a symbolic link, refused (a file the server opens by path, a journal or a secret, is never opened through a link)")
        } else {
            e
        }
    })?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::other("is not a regular file: refused"));
    }
    Ok(file)
}

/// A refusal of `path`, said in one line.
fn refused(path: &Path, why: String) -> io::Error {
    io::Error::other(format!("{} {why}: refused, nothing was written", path.display()))
}

/// `e` about `path`, or the refusal of a link when opening with `O_NOFOLLOW` met one (ELOOP), or of something that is
/// not a directory where one was asked for (ENOTDIR).
fn refusal_or(path: &Path, doing: &str, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        // O_NOFOLLOW|O_DIRECTORY on a link says ENOTDIR.
        Some(libc::ELOOP | libc::ENOTDIR) if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) => {
            refused(path, "is a symbolic link (a link in the state directory is never followed)".into())
        }
        Some(libc::ENOTDIR) => refused(path, "is not a directory".into()),
        _ => named(path, doing, e),
    }
}

/// The bytes of the file at `path` (opened as `open_file` opens it), at most `bytes_max`: a larger file is an
/// `InvalidData` error. Errors do not name the path: callers do.
pub(crate) fn read_file(path: &Path, bytes_max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_file(path, OpenOptions::new().read(true))?.take(bytes_max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > bytes_max {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("is larger than {bytes_max} bytes")));
    }
    Ok(bytes)
}

/// `e` with the path it is about (and what was being done), its kind kept.
pub(crate) fn named(path: &Path, doing: &str, e: io::Error) -> io::Error {
    let doing = if doing.is_empty() { String::new() } else { format!("{doing}: ") };
    io::Error::new(e.kind(), format!("{}: {doing}{e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("websearchd-statedir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Links in the directory are refused, never followed, for a file and for a directory; what they point to is
    /// unchanged.
    #[test]
    fn links_are_refused_not_followed() {
        let root = temp("links");
        let state = root.join("state");
        let dir = Dir::open(&state, true).unwrap();
        assert_eq!(std::fs::metadata(&state).unwrap().permissions().mode() & 0o777, 0o700);
        let target = root.join("target");
        std::fs::write(&target, "kept\n").unwrap();
        std::os::unix::fs::symlink(&target, state.join("file")).unwrap();
        std::os::unix::fs::symlink(&root, state.join("sub")).unwrap();
        let name = OsStr::new("file");
        for e in [dir.open_append(name, 0o600).unwrap_err(), dir.read(name).unwrap_err()] {
            assert!(e.to_string().contains("is a symbolic link") && e.to_string().contains("refused"), "{e}");
        }
        let e = dir.sub(OsStr::new("sub"), true).err().unwrap();
        assert!(e.to_string().contains("sub is a symbolic link"), "{e}");
        let e = locate(&state, &state.join("sub/x"), true).err().unwrap();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"kept\n");
        assert!(!root.join("x").exists());
        // `..` and names of more than one component are refused too.
        for bad in ["..", "a/b", "."] {
            assert!(dir.read(OsStr::new(bad)).is_err(), "{bad}");
        }
        assert!(locate(&state, &state.join("../target"), false).is_err());
    }

    /// A file is replaced whole through a temporary file of its own; a name planted where the temporary file could
    /// go is left alone, and nothing but the file is left behind.
    #[test]
    fn files_are_replaced_through_a_temporary_file_of_a_random_name() {
        let root = temp("atomic");
        let dir = Dir::open(&root, false).unwrap();
        let target = root.join("elsewhere");
        std::fs::write(&target, "kept\n").unwrap();
        std::os::unix::fs::symlink(&target, root.join(".key.tmp")).unwrap();
        dir.write_atomically(OsStr::new("key"), &[b"one", b"\n"], 0o600).unwrap();
        dir.write_atomically(OsStr::new("key"), &[b"two\n"], 0o640).unwrap();
        assert_eq!(std::fs::read(root.join("key")).unwrap(), b"two\n");
        assert_eq!(std::fs::metadata(root.join("key")).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read(&target).unwrap(), b"kept\n");
        let mut names: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort_unstable();
        assert_eq!(names, [".key.tmp", "elsewhere", "key"]);
        // A file of that name exists: create_new refuses it and leaves it.
        assert!(dir.create_new(OsStr::new("key"), &[b"three\n"], 0o600).is_err());
        assert_eq!(std::fs::read(root.join("key")).unwrap(), b"two\n");
        // A hard link is refused.
        std::fs::hard_link(root.join("key"), root.join("other")).unwrap();
        let e = dir.open_append(OsStr::new("key"), 0o600).unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
    }
}
