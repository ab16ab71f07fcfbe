//! End-to-end scenarios across the three programs live in `tests/tests/`; what they
//! share with every other suite (running programs, servers, tools) is the
//! `stackpack-test-support` crate in `tests/support/`.
