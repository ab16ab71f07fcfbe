//! The schema's integration tests, one binary: each module is a file that was a
//! test binary of its own (one binary per crate keeps link time and disk down).

mod bundle_config_format;
