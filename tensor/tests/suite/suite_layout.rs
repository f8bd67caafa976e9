//! Each crate's integration tests are modules of one binary, `tests/suite/main.rs`,
//! so a file there that `main.rs` does not name would never be compiled: every file
//! and folder of every `tests/suite/` must be a declared module.

use std::path::Path;

#[test]
fn every_file_of_a_suite_is_a_declared_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut suites = 0;
    for member in ["tensor", "autograd", "nn", "optim", "models"] {
        let dir = root.join(member).join("tests/suite");
        let main = std::fs::read_to_string(dir.join("main.rs"))
            .unwrap_or_else(|e| panic!("{member}/tests/suite/main.rs: {e}"));
        suites += 1;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let module = if path.is_dir() {
                name
            } else if let Some(stem) = name.strip_suffix(".rs") {
                stem.to_string()
            } else {
                continue; // proptest-regressions files and the like
            };
            if module == "main" {
                continue;
            }
            assert!(
                main.lines().any(|l| l.trim() == format!("mod {module};")),
                "{member}/tests/suite/{module} is not declared in main.rs: it is never compiled"
            );
        }
    }
    assert_eq!(suites, 5);
}
