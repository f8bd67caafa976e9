//! The design's promise made mechanical: `unsafe` appears only in `tensor::kernels`,
//! and every package of the workspace inherits the lints that deny it.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The workspace's packages.
const MEMBERS: [&str; 8] = [
    "tensor",
    "autograd",
    "nn",
    "ferrotape",
    "optim",
    "models",
    "benches",
    "fuzz/checks",
];

#[test]
fn unsafe_lives_only_in_the_kernels() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let kernels = root.join("tensor/src/kernels");
    let mut files = Vec::new();
    for member in MEMBERS {
        rust_files(&root.join(member), &mut files);
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let this = Path::new(file!()).file_name().unwrap();
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&kernels) && f.file_name().unwrap() != this)
        .filter(|f| {
            std::fs::read_to_string(f).unwrap().lines().any(|l| {
                let code = l.split("//").next().unwrap_or("");
                code.contains("unsafe ")
                    || code.contains("unsafe{")
                    || code.contains("allow(unsafe_code")
            })
        })
        .map(|f| f.display().to_string())
        .collect();
    // tensor/src/lib.rs carries `allow(unsafe_code)` only on `mod kernels` (declared
    // twice: public with the `internals` feature, crate-private without).
    let lib = root.join("tensor/src/lib.rs").display().to_string();
    let offenders: Vec<&String> = offenders.iter().filter(|f| **f != lib).collect();
    assert!(
        offenders.is_empty(),
        "unsafe outside tensor::kernels: {offenders:?}"
    );
    let lib_text = std::fs::read_to_string(&lib).unwrap();
    assert!(lib_text.contains("#[allow(unsafe_code)]\npub mod kernels;"));
    assert!(lib_text.contains("#[allow(unsafe_code)]\npub(crate) mod kernels;"));
    assert_eq!(lib_text.matches("allow(unsafe_code)").count(), 2);
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("unsafe_code = \"deny\""));
    for member in MEMBERS {
        let m = std::fs::read_to_string(root.join(member).join("Cargo.toml")).unwrap();
        assert!(
            m.contains("[lints]\nworkspace = true"),
            "{member} does not inherit the lints"
        );
    }
}
