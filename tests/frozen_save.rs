//! A save that fails leaves the old file, even when it fails at the end:
//! the directory is opened (to sync the rename) before anything changes.
#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use memkv::FrozenLayer;

#[path = "common/scratch.rs"]
mod scratch;

const CHILD: &str = "MEMKV_TEST_SAVE_INTO";

fn layer(offset: u64) -> FrozenLayer<u64> {
    FrozenLayer::from_sorted_iter((0..1000u64).map(|i| (format!("key/{i:05}"), i + offset)))
        .unwrap()
}

/// The save itself, in this process or (as root, who may open any
/// directory) in a child run as `nobody`: whether it succeeded.
fn save_into(path: &Path) -> Option<bool> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some(layer(1).save(path).is_ok());
    }
    let setpriv = Path::new("/usr/bin/setpriv");
    if !setpriv.exists() {
        return None;
    }
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "child_saves", "--nocapture", "--test-threads=1"])
        .env(CHILD, path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = |ok: bool| stdout.contains(&format!("saved: {ok}"));
    assert!(said(true) || said(false), "the child did not save: {out:?}");
    Some(said(true))
}

/// Run by `save_into` in a child.
#[test]
fn child_saves() {
    if let Some(path) = std::env::var_os(CHILD) {
        let result = layer(1).save(PathBuf::from(path));
        eprintln!("{result:?}");
        println!("saved: {}", result.is_ok());
    }
}

#[test]
fn a_save_into_a_directory_it_cannot_open_keeps_the_old_file() {
    let outer = scratch::dir();
    fs::set_permissions(outer.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let dir = outer.path().join("write-only");
    fs::create_dir(&dir).unwrap();
    let path = dir.join("layer.memkv");
    layer(0).save(&path).unwrap();
    let old = fs::read(&path).unwrap();
    // Anyone may create and rename files here, but not open the directory
    // to sync it.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o333)).unwrap();
    let saved = save_into(&path);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let Some(saved) = saved else {
        eprintln!("skipped: running as root without setpriv");
        return;
    };
    assert!(
        !saved,
        "the directory cannot be opened, so the save must fail"
    );
    assert_eq!(
        fs::read(&path).unwrap(),
        old,
        "a failed save replaced the file"
    );
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        1,
        "a temporary file was left"
    );
}
