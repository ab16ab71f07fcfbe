//! Stamps the version line every program prints for `--version`: the package
//! version, the commit it was built from and that commit's date, and the target.
//!
//! The commit comes from `STACKPACK_COMMIT` and `STACKPACK_COMMIT_DATE`, which
//! `scripts/dist.sh` sets from git; a plain `cargo build` says "built from source"
//! instead of asking git itself, so moving between commits does not rebuild the
//! whole workspace. Never the clock: two builds of one commit print the same line.

fn main() {
    println!("cargo:rerun-if-env-changed=STACKPACK_COMMIT");
    println!("cargo:rerun-if-env-changed=STACKPACK_COMMIT_DATE");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    // `scripts/dist.sh` builds for `x86_64-unknown-linux-gnu.2.17` through zig; cargo
    // reports the plain triple, and the glibc floor is what a customer asks about.
    let glibc = std::env::var("STACKPACK_GLIBC")
        .ok()
        .filter(|v| !v.is_empty());
    let target = match glibc {
        Some(floor) => format!("{target}, glibc {floor}"),
        None => target,
    };
    println!("cargo:rerun-if-env-changed=STACKPACK_GLIBC");
    let commit = std::env::var("STACKPACK_COMMIT")
        .ok()
        .filter(|c| !c.is_empty());
    let date = std::env::var("STACKPACK_COMMIT_DATE")
        .ok()
        .filter(|d| !d.is_empty());
    let line = match (commit, date) {
        (Some(commit), Some(date)) => {
            let short: String = commit.chars().take(12).collect();
            format!("{version} (commit {short} {date}, {target})")
        }
        (Some(commit), None) => {
            let short: String = commit.chars().take(12).collect();
            format!("{version} (commit {short}, {target})")
        }
        _ => format!("{version} (built from source, {target})"),
    };
    println!("cargo:rustc-env=STACKPACK_VERSION_LINE={line}");
}
