//! Embeds the suite data (registry, scenarios, schemas) into the binary, so `toolcert run`
//! works from any directory and a user's clone needs nothing else at run time.
//!
//! The data lives at the workspace root (`scenarios/`, `schemas/`), one level above this
//! crate; each file is keyed by its path from that root, as the loader and reports name it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = crate_dir.parent().unwrap().to_path_buf();
    let mut code = String::from(
        "/// Suite files embedded at build time: (path relative to the repo, contents).\npub static FILES: &[(&str, &str)] = &[\n",
    );
    for dir in ["scenarios", "schemas"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
        let mut files = Vec::new();
        collect(&root.join(dir), &mut files);
        for file in files {
            let rel = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            println!("cargo:rerun-if-changed={}", file.display());
            writeln!(
                code,
                "    ({rel:?}, include_str!({:?})),",
                file.display().to_string()
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("embedded_suite.rs");
    std::fs::write(out, code).unwrap();
}
