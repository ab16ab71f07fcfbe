//! The bundle library that the packager and the runner share.
//!
//! A short tour:
//!
//! - [`layout`] reads and writes OCI image layouts: `oci-layout`, `index.json`,
//!   `blobs/sha256/…`. Blobs are streamed to a temporary file, checked against their
//!   digest, then renamed into place, so a blob is visible only once it is whole.
//! - [`layout_tar`] reads a layout from a tar file (what `stackpack export` writes)
//!   into a staging layout, streamed and checked blob by blob.
//! - [`archive`] walks and unpacks a stack layer (`tar+gzip`) with explicit limits,
//!   refusing absolute paths, `..`, links, devices and decompression bombs.
//! - [`verify`] checks a bundle in a layout end to end: the signature by a trusted
//!   key, the manifest, config and layer digests, and every file against the signed
//!   config. The packager runs the same code on what it publishes.
//! - [`release`] writes and verifies releases: a signed index pinning every
//!   bundle and service of a customer environment.
//! - [`channel`] writes and reads the vendor's channel statements ("R@V is approved
//!   for channel C") as OCI artifacts whose subject is the release.
//! - [`attest`] writes and checks the attestations beside a signature: the SBOM,
//!   the SLSA provenance and the Sigstore bundles a customer's own tools verify.
//! - [`sign`] writes the signature artifact of a bundle or a release.
//! - [`trust`] loads the public keys a caller trusts.
//! - [`carried_engine`] packs the engine a release carries (one binary per
//!   platform, pinned by the signed description) and installs it on the runner.
//! - [`engine_env`] is the allow-list of variables the engine gets, wherever it runs.
//! - [`freshness`] signs and checks each stack's newest-version statement (freeze
//!   protection).
//! - [`provider`] hashes provider packages the way lock files pin them, and lays
//!   them out as a `filesystem_mirror` for the engine.
//! - [`policy`] evaluates Rego policies (conftest's layout) on a plan: the runner
//!   before it applies, the packager's forecast to know what the vendor calls stateful.
//! - [`error`] is the user-facing error both programs print: what, where, a hint.
//! - [`remote`] talks to OCI registries (and, through [`remote::http`], to the
//!   ledger's plain JSON API); [`transfer`] moves bundles between registries,
//!   layouts and tar files.
//!
//! Verification always streams: memory does not grow with the size of a bundle.

pub mod archive;
pub mod attest;
pub mod carried_engine;
pub mod channel;
pub mod engine_env;
pub mod error;
pub mod freshness;
pub mod gzip;
pub mod kit;
pub mod layout;
pub mod layout_tar;
pub mod policy;
pub mod provider;
pub mod release;
pub mod remote;
pub mod sign;
pub mod transfer;
pub mod trust;
pub mod verify;
