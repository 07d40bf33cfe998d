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
