//! Build metadata for run manifests and trace headers: the git commit and whether
//! the tree was dirty (when built from a checkout), the compiler and the target.

use std::path::Path;
use std::process::Command;

/// The trimmed stdout of `cmd args` run in `dir`, if it succeeds.
fn output(cmd: &str, args: &[&str], dir: &Path) -> Option<String> {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&manifest);
    let commit = output("git", &["rev-parse", "HEAD"], dir);
    let dirty = commit.as_ref().and_then(|_| {
        output(
            "git",
            &["status", "--porcelain", "--untracked-files=no"],
            dir,
        )
        .map(|s| if s.is_empty() { "clean" } else { "dirty" }.to_string())
    });
    if let Some(git_dir) = output("git", &["rev-parse", "--absolute-git-dir"], dir) {
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={git_dir}/{f}");
        }
    }
    // The workspace's sources decide whether the tree is dirty.
    let root = dir.parent().unwrap_or(dir);
    for krate in ["tensor", "autograd", "nn", "optim", "models"] {
        let src = root.join(krate).join("src");
        if src.exists() {
            println!("cargo:rerun-if-changed={}", src.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["--version"], dir);
    let target = std::env::var("TARGET").ok();
    for (key, value) in [
        ("MODELS_GIT_COMMIT", commit),
        ("MODELS_GIT_TREE", dirty),
        ("MODELS_RUSTC", version),
        ("MODELS_TARGET", target),
    ] {
        println!(
            "cargo:rustc-env={key}={}",
            value.unwrap_or_else(|| "unknown".into())
        );
    }
}
