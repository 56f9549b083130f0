//! Records, for the run manifest, the git commit (if any) and the exact
//! versions of the crates that random draws depend on (from Cargo.lock).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=CONVOY_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");

    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let wanted = ["rand", "rand_core", "rand_chacha", "rand_distr", "blake3"];
    let mut found = Vec::new();
    let mut name = String::new();
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = n.trim_matches('"').to_string();
        } else if let Some(v) = line.strip_prefix("version = ") {
            if wanted.contains(&name.as_str()) {
                found.push(format!("{name}={}", v.trim_matches('"')));
            }
        }
    }
    found.sort();
    println!("cargo:rustc-env=CONVOY_RNG_STACK={}", found.join(","));
    println!("cargo:rerun-if-changed=../Cargo.lock");
}
