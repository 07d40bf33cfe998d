//! The documented admin path (issue 16): `sudo websearchd apikey new --env-file /etc/websearchd/websearchd.env` must
//! write where the running service reads (the env file's `WEBSEARCHD_STATE_DIR`), in files the service's own user can
//! read, and a user who cannot reach the state directory must be told which directory and what to do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{tempdir::TempDir, Server};

/// The unprivileged user and group the root-only tests give the state directory to (nobody / nogroup).
const SERVICE_ID: u32 = 65_534;

/// A state directory and an env file naming it, as /etc/websearchd/websearchd.env does under systemd.
fn instance(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let dir = TempDir::new(tag);
    // Other users must reach the files below (the server runs as another user in the root-only tests).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = dir.path().join("data");
    let env_file = dir.path().join("websearchd.env");
    std::fs::write(&env_file, format!("WEBSEARCHD_STATE_DIR={}\nWEBSEARCHD_MAP_LAYERS=none\n", state.display()))
        .unwrap();
    (dir, state, env_file)
}

/// An admin command with nothing but the env file (as `sudo` runs it: not the service's environment).
fn admin(env_file: &Path, args: &[&str], uid: Option<u32>) -> Output {
    let mut cmd = Command::new(common::binary());
    cmd.env_clear().args(args).arg("--env-file").arg(env_file).current_dir(std::env::temp_dir());
    if let Some(id) = uid {
        cmd.uid(id).gid(id);
    }
    cmd.output().unwrap()
}

fn new_key(env_file: &Path) -> String {
    let out = admin(env_file, &["apikey", "new"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The server started with the same env file only (its state directory from the file, not from the environment).
fn serve(dir: TempDir, env_file: &Path, uid: Option<u32>) -> Server {
    let env_file = env_file.to_owned();
    Server::start_in(dir, &[], move |c| {
        c.env_remove("WEBSEARCHD_STATE_DIR").arg("--env-file").arg(&env_file);
        if let Some(id) = uid {
            c.uid(id).gid(id);
        }
        c
    })
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// As root: an instance whose state directory exists (0700) and belongs to `owner`; `None`, with a notice, when the
/// tests do not run as root.
fn root_instance(tag: &str, owner: u32, why: &str) -> Option<(TempDir, PathBuf, PathBuf)> {
    if !is_root() {
        eprintln!("notice: not root; skipping {why} (CI runs it as root)");
        return None;
    }
    let (dir, state, env_file) = instance(tag);
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&state, Some(owner), Some(owner)).unwrap();
    Some((dir, state, env_file))
}

#[test]
fn admin_commands_write_where_the_env_file_says_and_the_server_accepts_the_key() {
    let (dir, state, env_file) = instance("admin-env");
    let key = new_key(&env_file);
    assert!(state.join("api-keys").exists(), "the key went to the env file's WEBSEARCHD_STATE_DIR");
    let server = serve(dir, &env_file, None);
    let r = server.request("GET", "/core/state", &[("X-WALLET", &key)], b"");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Run as root against a state directory owned by the service's user, the files written are given to that user
/// (modes kept), and the server running as that user reads them: the key is accepted, the rotated keys sign.
#[test]
fn as_root_the_files_written_go_to_the_state_directorys_owner() {
    let Some((dir, state, env_file)) = root_instance("admin-root", SERVICE_ID, "the ownership check") else { return };

    let key = new_key(&env_file);
    let out = admin(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (path, mode) in [
        (state.join("api-keys"), 0o600),
        (state.join("keys"), 0o700),
        (state.join("keys/card.key"), 0o600),
        (state.join("keys/result.key"), 0o600),
        (state.join("keys/retired.json"), 0o644),
    ] {
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((meta.uid(), meta.gid()), (SERVICE_ID, SERVICE_ID), "{}", path.display());
        assert_eq!(meta.mode() & 0o777, mode, "{}", path.display());
    }
    let server = serve(dir, &env_file, Some(SERVICE_ID));
    let r = server.request("GET", "/core/state", &[("X-WALLET", &key)], b"");
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A user who cannot read the state directory is told which directory, whose it is, and how to run the command.
#[test]
fn permission_denied_names_the_state_directory_and_the_fix() {
    let Some((_dir, state, env_file)) = root_instance("admin-denied", 0, "the permission message check") else {
        return;
    };
    let out = admin(&env_file, &["apikey", "new"], Some(SERVICE_ID));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Permission denied"), "{err}");
    assert!(err.contains(&format!("the state directory {} belongs to root", state.display())), "{err}");
    assert!(err.contains("sudo"), "{err}");
}

/// An admin command run with a file-size limit of `bytes` (SIGXFSZ ignored, so a write past it is an EFBIG error, as
/// ENOSPC would be on a full disk) and umask 022 (a system's usual one).
fn admin_limited(env_file: &Path, args: &[&str], bytes: Option<u64>) -> Output {
    let mut cmd = Command::new(common::binary());
    cmd.env_clear().args(args).arg("--env-file").arg(env_file).current_dir(std::env::temp_dir());
    // SAFETY: between fork and exec only async-signal-safe calls are made, on values owned by the closure.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(0o022);
            if let Some(bytes) = bytes {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit { rlim_cur: bytes, rlim_max: libc::RLIM_INFINITY };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
    cmd.output().unwrap()
}

/// The names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A journal line as `journal` writes it.
fn journal_line(json: &str) -> String {
    format!("{:08x} {json}\n", websearchd::journal::crc32(json.as_bytes()))
}

/// A journal of two good records and a damaged third (a complete line whose checksum fails), and the damage's offset.
fn damaged_journal(path: &Path) -> u64 {
    let good = journal_line(r#"{"seq":1}"#) + &journal_line(r#"{"seq":2}"#);
    std::fs::write(path, format!("{good}00000000 {{\"seq\":3}}\n")).unwrap();
    good.len() as u64
}

/// Issue 34: `keygen` on a fresh directory makes keys and retires none (a key that never signed is not published as
/// retired); the state directory it creates is 0700, as is the one `apikey new` creates.
#[test]
fn first_commands_on_a_fresh_directory() {
    let (_dir, state, env_file) = instance("fresh-keygen");
    let out = admin_limited(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("none retired"), "{}", String::from_utf8_lossy(&out.stdout));
    let retired: serde_json::Value =
        serde_json::from_slice(&std::fs::read(state.join("keys/retired.json")).unwrap()).unwrap();
    assert_eq!(retired, serde_json::json!([]), "no key that never signed is listed as retired");
    assert_eq!(std::fs::metadata(&state).unwrap().mode() & 0o777, 0o700, "the state directory keygen made");
    // A second rotation retires the two keys the first made.
    let out = admin_limited(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let retired: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(state.join("keys/retired.json")).unwrap()).unwrap();
    assert_eq!(retired.len(), 2);

    let (_dir, state, env_file) = instance("fresh-apikey");
    let out = admin_limited(&env_file, &["apikey", "new"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(&state).unwrap().mode() & 0o777, 0o700, "the state directory apikey new made");
}

/// Issue 33, finding 11: a `keygen` or `journal repair` that fails writing (the disk full) leaves the directory as it
/// was: no empty temporary file, no empty backup.
#[test]
fn a_failed_keygen_or_repair_leaves_nothing_behind() {
    let (_dir, state, env_file) = instance("failed-writes");
    let out = admin_limited(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keys = state.join("keys");
    let before: Vec<(String, Vec<u8>)> =
        names(&keys).into_iter().map(|n| (n.clone(), std::fs::read(keys.join(&n)).unwrap())).collect();
    let out = admin_limited(&env_file, &["keygen"], Some(0));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let after: Vec<(String, Vec<u8>)> =
        names(&keys).into_iter().map(|n| (n.clone(), std::fs::read(keys.join(&n)).unwrap())).collect();
    assert_eq!(after, before, "the keys are as they were, and nothing else is there");

    let journal = state.join("notary.journal");
    let offset = damaged_journal(&journal);
    let bytes = std::fs::read(&journal).unwrap();
    let listed = names(&state);
    let at = offset.to_string();
    let journal_arg = journal.to_str().unwrap();
    let out = admin_limited(&env_file, &["journal", "repair", journal_arg, "--truncate-at", &at], Some(10));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&state), listed, "no backup or temporary file is left");
    assert_eq!(std::fs::read(&journal).unwrap(), bytes, "the journal is as it was");
    // Without the limit the same repair works.
    let out = admin_limited(&env_file, &["journal", "repair", journal_arg, "--truncate-at", &at], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&state).len(), listed.len() + 1, "the backup");
}

/// A root-owned file outside the state directory, which no admin command may change.
struct Outside {
    path: PathBuf,
    content: &'static [u8],
}

impl Outside {
    fn new(dir: &Path, name: &str) -> Outside {
        let path = dir.join(name);
        let content: &[u8] = b"root's own file\n";
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Outside { path, content }
    }

    #[track_caller]
    fn unchanged(&self) {
        let meta = std::fs::symlink_metadata(&self.path).unwrap();
        assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (0, 0, 0o600), "{}", self.path.display());
        assert_eq!(std::fs::read(&self.path).unwrap(), self.content, "{}", self.path.display());
    }
}

/// A symbolic link at `link` to `target`, made by the service's user (as that user would plant it).
fn plant(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
    std::os::unix::fs::lchown(link, Some(SERVICE_ID), Some(SERVICE_ID)).unwrap();
}

#[track_caller]
fn refused(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(what) && err.contains("refused"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// Issue 33, finding 3: run as root in a state directory the service's user owns, `apikey new`, `keygen` and `journal
/// repair` never follow a link that user planted there (to a file of root's, or a directory), never write through a
/// temporary name it chose, and refuse a file of another user's or one with another name, each in one line.
#[test]
fn as_root_admin_commands_never_follow_the_service_users_links() {
    let Some((dir, state, env_file)) = root_instance("admin-links", SERVICE_ID, "the link checks") else { return };
    let outside = Outside::new(dir.path(), "outside");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();

    // apikey new: the keys file is a link to root's file.
    let keys_file = state.join("api-keys");
    plant(&outside.path, &keys_file);
    let err = refused(&admin(&env_file, &["apikey", "new"], None), "is a symbolic link");
    assert!(err.contains(&keys_file.display().to_string()), "{err}");
    outside.unchanged();
    std::fs::remove_file(&keys_file).unwrap();

    // keygen: the keys' files are links to root's file; then the keys' directory is a link to a directory of root's.
    let keys = state.join("keys");
    std::fs::create_dir(&keys).unwrap();
    std::os::unix::fs::chown(&keys, Some(SERVICE_ID), Some(SERVICE_ID)).unwrap();
    for name in ["card.key", "result.key", "retired.json"] {
        plant(&outside.path, &keys.join(name));
        refused(&admin(&env_file, &["keygen"], None), "is a symbolic link");
        outside.unchanged();
        std::fs::remove_file(keys.join(name)).unwrap();
    }
    std::fs::remove_dir(&keys).unwrap();
    plant(&elsewhere, &keys);
    refused(&admin(&env_file, &["keygen"], None), "is a symbolic link");
    assert!(names(&elsewhere).is_empty(), "nothing written through the link: {:?}", names(&elsewhere));
    std::fs::remove_file(&keys).unwrap();

    // keygen with real keys: the temporary names the last version used are links to root's file; the new keys are
    // written beside them (a random name, O_EXCL) and given to the service's user.
    let out = admin(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for name in [".card.key.tmp", ".result.key.tmp", ".retired.json.tmp"] {
        plant(&outside.path, &keys.join(name));
    }
    let out = admin(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    outside.unchanged();
    for name in ["card.key", "result.key", "retired.json"] {
        let meta = std::fs::symlink_metadata(keys.join(name)).unwrap();
        assert!(meta.is_file(), "{name}");
        assert_eq!((meta.uid(), meta.gid()), (SERVICE_ID, SERVICE_ID), "{name}");
    }

    // journal repair: the journal's old temporary name is a link to root's file (the service's user can provoke the
    // repair: a damaged record makes `journal check` print the command); then the journal itself is a link.
    let journal = state.join("notary.journal");
    let offset = damaged_journal(&journal);
    std::os::unix::fs::chown(&journal, Some(SERVICE_ID), Some(SERVICE_ID)).unwrap();
    plant(&outside.path, &state.join("notary.journal.repair"));
    let at = offset.to_string();
    let out = admin(&env_file, &["journal", "repair", journal.to_str().unwrap(), "--truncate-at", &at], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    outside.unchanged();
    let meta = std::fs::symlink_metadata(&journal).unwrap();
    assert!(meta.is_file());
    assert_eq!((meta.uid(), meta.mode() & 0o777), (SERVICE_ID, 0o600), "the repaired journal stays the service's");
    std::fs::remove_file(&journal).unwrap();
    plant(&outside.path, &journal);
    let out = admin(&env_file, &["journal", "repair", journal.to_str().unwrap(), "--truncate-at", "0"], None);
    refused(&out, "is a symbolic link");
    outside.unchanged();
    std::fs::remove_file(&journal).unwrap();

    // A keys file of another user's, and one that is another name of root's file (a hard link), are refused.
    std::fs::write(&keys_file, "").unwrap();
    std::os::unix::fs::chown(&keys_file, Some(12_345), Some(12_345)).unwrap();
    refused(&admin(&env_file, &["apikey", "new"], None), "belongs to uid 12345");
    std::fs::remove_file(&keys_file).unwrap();
    std::fs::hard_link(&outside.path, &keys_file).unwrap();
    refused(&admin(&env_file, &["apikey", "new"], None), "hard links");
    outside.unchanged();
    std::fs::remove_file(&keys_file).unwrap();
}

/// The state directory itself may be a link root made (to a bigger disk): it is followed. One the service's user made,
/// to a directory of root's, is refused.
#[test]
fn the_state_directory_may_be_roots_link() {
    let Some((dir, state, env_file)) = root_instance("admin-state-link", SERVICE_ID, "the state link check") else {
        return;
    };
    let disk = dir.path().join("disk");
    std::fs::rename(&state, &disk).unwrap();
    std::os::unix::fs::symlink(&disk, &state).unwrap();
    new_key(&env_file);
    let meta = std::fs::metadata(disk.join("api-keys")).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (SERVICE_ID, 0o600));

    let roots = dir.path().join("roots");
    std::fs::create_dir(&roots).unwrap();
    std::fs::remove_file(&state).unwrap();
    plant(&roots, &state);
    refused(&admin(&env_file, &["apikey", "new"], None), "is a symbolic link made by uid 65534");
    assert!(names(&roots).is_empty());
}

/// Issue 33, finding 11: `serve` on a state directory its user cannot write says which directory, whose it is, and
/// who the server runs as (it said only "Permission denied").
#[test]
fn serve_on_a_state_directory_it_cannot_write_names_it() {
    let Some((_dir, state, env_file)) = root_instance("serve-denied", 0, "the serve permission check") else { return };
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new(common::binary());
    cmd.env_clear().arg("serve").arg("--env-file").arg(&env_file).env("WEBSEARCHD_LISTEN", "127.0.0.1:0");
    let out = cmd.uid(SERVICE_ID).gid(SERVICE_ID).current_dir(std::env::temp_dir()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("Permission denied")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(&format!("{}/keys", state.display())), "{line}");
    assert!(line.contains(&format!("the state directory {} belongs to root", state.display())), "{line}");
}

/// A key file an operator configured in a directory of root's that no one else may write (/etc/websearchd/) may
/// belong to the service's user: nobody else could have put it there. In a directory others may write, it may not.
#[test]
fn a_key_file_in_roots_own_directory_may_be_the_services() {
    let Some((dir, _state, env_file)) = root_instance("admin-etc-key", SERVICE_ID, "the configured key file check")
    else {
        return;
    };
    let etc = dir.path().join("etc");
    std::fs::create_dir(&etc).unwrap();
    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let card = etc.join("card.key");
    std::fs::write(&card, format!("{}\n", "11".repeat(32))).unwrap();
    std::os::unix::fs::chown(&card, Some(SERVICE_ID), Some(SERVICE_ID)).unwrap();
    let mut text = std::fs::read_to_string(&env_file).unwrap();
    text.push_str(&format!("WEBSEARCHD_CARD_KEY_FILE={}\n", card.display()));
    std::fs::write(&env_file, text).unwrap();
    let out = admin(&env_file, &["keygen"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_ne!(std::fs::read_to_string(&card).unwrap().trim(), "11".repeat(32), "rotated");
    let meta = std::fs::metadata(&card).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (SERVICE_ID, 0o600), "the new key is the service's to read");

    std::fs::set_permissions(&etc, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&card, Some(SERVICE_ID), Some(SERVICE_ID)).unwrap();
    refused(&admin(&env_file, &["keygen"], None), "belongs to uid 65534");
}
