//! Attestations a customer's own tools can check: the proofs that travel beside a
//! bundle or a release as OCI referrers of its manifest.
//!
//! A short tour:
//!
//! - [`dsse`] is the DSSE envelope (payload type, payload, signatures over its
//!   pre-authentication encoding), as `securesystemslib` and `in-toto` read it.
//! - [`statement`] is the in-toto Statement v1 that every envelope carries.
//! - [`provenance`] is the SLSA v1 provenance predicate: the source, commit and ref a
//!   bundle was built from, the inputs that shaped it, the builder that ran it.
//! - [`sbom`] is the CycloneDX 1.6 bill of materials of a bundle or a release.
//! - [`sigstore`] is the Sigstore bundle v0.3 (`dsseEnvelope` content, a `publicKey`
//!   hint) that `@sigstore/verify` and cosign read, and the check the runner makes.
//!
//! What is signed: every bundle and release gets two Sigstore bundles, one holding a
//! statement that mirrors its Stackpack signature (predicate type
//! [`statement::SIGNATURE_PREDICATE`], cosign's own for `cosign sign`) and one
//! holding its provenance; and one unsigned CycloneDX SBOM whose digest the signed
//! provenance names among its byproducts, so the SBOM is covered by that signature.
//! No I/O here: the packager builds them, the runner checks them.

pub mod dsse;
pub mod provenance;
pub mod sbom;
pub mod sigstore;
pub mod statement;

/// Why an attestation was refused. Each names what was wrong; callers add where.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttestError {
    #[error("it is not valid JSON of its kind: {0}")]
    Malformed(String),
    #[error("its signature does not match its payload: the attestation was altered")]
    BadSignature,
    #[error("its key hint names key `{hint}`, but it was signed by key `{actual}`")]
    HintMismatch { hint: String, actual: String },
    #[error("it was signed by key `{0}`, which is not trusted")]
    Untrusted(String),
    #[error("its subject is `{found}`, not the manifest it is attached to (`{expected}`)")]
    SubjectMismatch { expected: String, found: String },
    #[error("its predicate type is `{found}`, expected `{expected}`")]
    PredicateType { expected: String, found: String },
}
