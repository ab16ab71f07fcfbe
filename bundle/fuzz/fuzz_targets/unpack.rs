//! Any bytes, as a stack layer: unpacking never panics, never writes beside or
//! outside its destination, and never leaves a half-unpacked destination behind.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stackpack_bundle::archive::{unpack, Limits};

fuzz_target!(|data: &[u8]| {
    let root = tempfile::tempdir().unwrap();
    let destination = root.path().join("bundle");
    let limits = Limits {
        max_total_bytes: 1 << 20,
        max_file_bytes: 1 << 20,
        ratio_grace_bytes: 1 << 20,
        ..Limits::default()
    };
    let result = unpack(data, Some(data.len() as u64), &destination, &limits);
    if result.is_err() {
        assert!(!destination.exists());
    }
    for entry in std::fs::read_dir(root.path()).unwrap() {
        assert_eq!(entry.unwrap().file_name(), "bundle");
    }
});
