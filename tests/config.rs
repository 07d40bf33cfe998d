//! The configuration as the binary reads it from its environment, its env file and the folder it starts in: the
//! state directory's one home (issue 42).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::tempdir::TempDir;

/// The binary with only the variables given, started in `cwd`, its stdin `input`.
fn run_in(cwd: &Path, env: &[(&str, &str)], args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(common::binary())
        .env_clear()
        .env("WEBSEARCHD_MAP_LAYERS", "none")
        .envs(env.iter().copied())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn websearchd");
    // Closing stdin ends an MCP session once its answers are written.
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The value `check-config` prints for `name`, without its comment.
fn printed<'a>(text: &'a str, name: &str) -> &'a str {
    let line = text.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{text}"));
    line.split("  #").next().unwrap()
}

#[test]
fn check_config_from_two_folders_names_the_same_state_directory() {
    let tmp = TempDir::new("home");
    let home = tmp.path().join("home");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b/c"));
    for dir in [&home, &a, &b] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let home_env = [("HOME", home.to_str().unwrap())];
    let mut seen = Vec::new();
    for cwd in [&a, &b] {
        let out = run_in(cwd, &home_env, &["check-config"], b"");
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("# default ($HOME/.local/state/websearchd)\n"), "{text}");
        seen.push(printed(&text, "WEBSEARCHD_STATE_DIR").to_owned());
    }
    let expected = home.join(".local/state/websearchd").display().to_string();
    assert_eq!(seen, [expected.clone(), expected]);
    // systemd's directory comes before the home's.
    let env = [home_env[0], ("STATE_DIRECTORY", "/var/lib/private/websearchd")];
    let text = String::from_utf8(run_in(&a, &env, &["check-config"], b"").stdout).unwrap();
    assert_eq!(printed(&text, "WEBSEARCHD_STATE_DIR"), "/var/lib/private/websearchd", "{text}");
}

/// An MCP client starts `websearchd mcp` in a folder of its own choosing, which it may not write: the session
/// initialises, and nothing is written there.
#[test]
fn mcp_initialises_from_a_folder_it_cannot_write() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new("mcp-cwd");
    let (cwd, home, xdg) = (tmp.path().join("readonly"), tmp.path().join("home"), tmp.path().join("xdg"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::set_permissions(&cwd, std::fs::Permissions::from_mode(0o555)).unwrap();
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
"#;
    let env = [("HOME", home.to_str().unwrap()), ("XDG_STATE_HOME", xdg.to_str().unwrap()), ("WEBSEARCHD_LOG", "info")];
    let out = run_in(&cwd, &env, &["mcp"], init);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let answer: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap_or("")).expect(&stdout);
    assert_eq!(answer["result"]["serverInfo"]["name"], "websearchd", "{answer}");
    let state = xdg.join("websearchd");
    assert!(state.join("keys/result.key").is_file(), "{stderr}");
    assert!(stderr.contains(&format!("state directory {} (default: $XDG_STATE_HOME/websearchd)", state.display())));
    // (As root the mode does not stop a write: the folder must still be empty.)
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0, "something was written in the folder it started in");
    assert!(!home.exists());
}

/// Today's `./data` holding an earlier version's keys is used (the identity is kept), with a warning naming the
/// command that moves it, in `check-config` and at the start of `mcp`.
#[test]
fn an_earlier_versions_data_folder_is_used_with_a_warning() {
    let tmp = TempDir::new("legacy");
    let (cwd, home) = (tmp.path().join("project"), tmp.path().join("home"));
    std::fs::create_dir_all(&cwd).unwrap();
    let legacy = cwd.join("data");
    let out = run_in(&cwd, &[("WEBSEARCHD_STATE_DIR", legacy.to_str().unwrap())], &["keygen"], b"");
    assert!(out.status.success(), "{out:?}");
    let keygen = String::from_utf8(out.stdout).unwrap();
    let kid = keygen.lines().find_map(|l| l.strip_prefix("result key: ")).expect(&keygen).trim().to_owned();

    let home_env = [("HOME", home.to_str().unwrap()), ("WEBSEARCHD_LOG", "info")];
    let out = run_in(&cwd, &home_env, &["check-config"], b"");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed(&text, "WEBSEARCHD_STATE_DIR"), legacy.display().to_string(), "{text}");
    let new_home = home.join(".local/state/websearchd");
    let mv = format!("mv {} {}", legacy.display(), new_home.display());
    let warning = text.lines().find(|l| l.starts_with("# warning: the state directory is")).expect(&text);
    assert!(warning.contains(&mv), "{warning}");

    let out = run_in(&cwd, &home_env, &["mcp"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&mv) && stderr.contains(" WARN "), "{stderr}");
    assert!(stderr.contains(&format!("signing with {kid}")), "the earlier identity is kept: {stderr}");
    assert!(!home.exists(), "nothing was made in the new home");
}

/// Issue 42: an env file's `export` line is read, and a line that is not a setting is named by its number in
/// `check-config` (stdout and stderr, exit 0) and at the start of `serve`, which starts anyway.
#[test]
fn an_env_files_export_line_is_read_and_a_stray_line_named() {
    let tmp = TempDir::new("env-file");
    let file = tmp.path().join("websearchd.env");
    std::fs::write(
        &file,
        "# websearchd\nexport WEBSEARCHD_QUEUE_DEPTH=9\nWEBSEARCHD_WORKERS 3\nWEBSEARCHD_LOG='info' # quoted\n",
    )
    .unwrap();
    let env = [("WEBSEARCHD_STATE_DIR", tmp.path().to_str().unwrap())];
    let out = run_in(tmp.path(), &env, &["check-config", "--env-file", file.to_str().unwrap()], b"");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("WEBSEARCHD_QUEUE_DEPTH=9  # env file"), "{stdout}");
    let stray = format!("{} line 3: not a setting (NAME=value): ignored", file.display());
    assert!(stdout.contains(&format!("# warning: {stray}\n")), "{stdout}");
    assert!(stderr.contains(&format!("websearchd: warning: {stray}\n")), "{stderr}");
    assert!(stdout.contains("line 2: WEBSEARCHD_QUEUE_DEPTH: read here, but systemd's EnvironmentFile= ignores"));
    assert!(stdout.contains("line 4: WEBSEARCHD_LOG: the comment after the value is left out here"), "{stdout}");

    let server = common::Server::start(&[("WEBSEARCHD_ENV_FILE", file.to_str().unwrap())]);
    let log = server.log_with(&stray);
    assert!(log.lines().any(|l| l.contains(" WARN ") && l.ends_with(&stray)), "{log}");
    assert_eq!(server.get("/health").status, 200);
}

/// Issue 42: free on a wildcard address without a public URL is refused at start, in one line, as other
/// configuration errors are; with the URL it serves, and its documents name that URL.
#[test]
fn open_on_a_wildcard_address_needs_a_public_url() {
    let tmp = TempDir::new("wildcard");
    let env = [("WEBSEARCHD_OPEN", "1"), ("WEBSEARCHD_LISTEN", "0.0.0.0:0"), ("WEBSEARCHD_STATE_DIR", "state")];
    let out = run_in(tmp.path(), &env, &["serve"], b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("websearchd: invalid WEBSEARCHD_PUBLIC_URL=") && stderr.contains("wildcard"),
        "{stderr}"
    );
    assert!(!tmp.path().join("state").exists(), "refused before anything was written");

    let url = "http://192.168.1.20:8402";
    let server = common::Server::start(&[env[0], env[1], ("WEBSEARCHD_PUBLIC_URL", url)]);
    let opensearch = server.get("/opensearch.xml").text();
    assert!(opensearch.contains(url) && !opensearch.contains("0.0.0.0"), "{opensearch}");
}
