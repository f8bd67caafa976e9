//! Helpers shared by the integration tests (each test binary uses a subset).
#![allow(dead_code)]

use std::path::PathBuf;

/// A fresh directory under the system temporary directory, unique to this process.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("models-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Command-line arguments as owned strings.
pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}
