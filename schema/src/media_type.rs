//! Media types and artifact types. One place, so that no two parts spell them apart.

/// `artifactType` of a bundle manifest.
pub const BUNDLE_ARTIFACT: &str = "application/vnd.stackpack.bundle.v1";
/// Media type of a bundle's config blob.
pub const BUNDLE_CONFIG: &str = "application/vnd.stackpack.bundle.config.v1+json";
/// Media type of the stack layer: the stack and its vendored modules as tar+gzip.
pub const STACK_LAYER: &str = "application/vnd.stackpack.stack.v1.tar+gzip";
/// Media type of a provider package layer: the registry's own zip for one platform,
/// stored as it is (never compressed again).
pub const PROVIDER_PACKAGE: &str = "application/vnd.stackpack.provider.v1.zip";
/// Media type of a file layer: one large, already-compressed file of the stack,
/// exactly its bytes (so the layer digest is the file's digest), never compressed
/// again; annotated with its path (`org.opencontainers.image.title`).
pub const FILE_LAYER: &str = "application/vnd.stackpack.file.v1";
/// `artifactType` of a signature manifest.
pub const SIGNATURE_ARTIFACT: &str = "application/vnd.stackpack.signature.v1";
/// `artifactType` of a stack's "newest version" statement: signed by the vendor on
/// every publish run, so a registry that keeps serving old versions is noticed.
pub const LATEST_ARTIFACT: &str = "application/vnd.stackpack.latest.v1";
/// The tag a stack's latest statement is kept under (moved on every publish run).
pub const LATEST_TAG: &str = "stackpack-latest";
/// Media type of the signature layer: a JSON [`crate::signature::SignatureEnvelope`].
pub const SIGNATURE_LAYER: &str = "application/vnd.stackpack.signature.v1+json";

/// `artifactType` of a release: the OCI image index in `<namespace>/releases/<name>`
/// that pins every stack bundle and service of a customer environment by digest.
pub const RELEASE_ARTIFACT: &str = "application/vnd.stackpack.release.v1";
/// `artifactType` of a release's description manifest: the first entry of the
/// release index, whose config blob is a [`crate::release::ReleaseDescription`].
pub const RELEASE_DESCRIPTION_ARTIFACT: &str = "application/vnd.stackpack.release.description.v1";
/// Media type of a release description's config blob.
pub const RELEASE_CONFIG: &str = "application/vnd.stackpack.release.config.v1+json";

/// `artifactType` of an OpenTofu module package.
/// A vendor's signed "release R version V is approved for channel C"
/// (`stackpack promote`): an artifact whose `subject` is the release index (or the
/// bundle, for a stack) and whose one layer is the signed statement.
pub const CHANNEL_STATEMENT_ARTIFACT: &str = "application/vnd.stackpack.channel-statement.v1";
/// The channel statement layer: `stackpack_schema::rollout::SignedChannelStatement`.
pub const CHANNEL_STATEMENT_LAYER: &str = "application/vnd.stackpack.channel-statement.v1+json";
/// The engine a release carries (see [`crate::release::ReleaseEngine`]): an image
/// manifest with an empty config and one layer per platform.
pub const ENGINE_ARTIFACT: &str = "application/vnd.stackpack.engine.v1";
/// One platform's engine binary, stored as is (executable, uncompressed: the
/// runner checks its digest before every run without unpacking it).
pub const ENGINE_BINARY: &str = "application/vnd.stackpack.engine.binary.v1";
pub const OPENTOFU_MODULE_ARTIFACT: &str = "application/vnd.opentofu.modulepkg";
/// Layer media type of an OpenTofu module package.
pub const ZIP_ARCHIVE: &str = "archive/zip";

/// A Sigstore bundle v0.3 (`crate::attest::sigstore`): the `artifactType` and
/// layer media type of a signed attestation referrer, as cosign writes them.
pub const SIGSTORE_BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// A CycloneDX JSON SBOM (`crate::attest::sbom`): artifact and layer type.
pub const CYCLONEDX_JSON: &str = "application/vnd.cyclonedx+json";
/// Every referrer a bundle or release carries beside its signature, which travel
/// with it wherever it goes (pull, export, kits, mirrors).
pub const ATTESTATION_ARTIFACTS: [&str; 2] = [SIGSTORE_BUNDLE, CYCLONEDX_JSON];

/// OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The OCI empty descriptor's media type (`{}`).
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// Docker schema 2 manifest, read when other tools push it.
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Docker manifest list.
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// The content of the OCI empty blob.
pub const EMPTY_BLOB: &[u8] = b"{}";

/// Standard annotation keys.
pub mod annotation {
    pub const VERSION: &str = "org.opencontainers.image.version";
    pub const REVISION: &str = "org.opencontainers.image.revision";
    pub const SOURCE: &str = "org.opencontainers.image.source";
    pub const CREATED: &str = "org.opencontainers.image.created";
    pub const TITLE: &str = "org.opencontainers.image.title";
    /// On a Sigstore bundle referrer: the predicate type of the statement it holds
    /// (cosign's annotation, so `cosign tree` and policies can tell them apart).
    pub const PREDICATE_TYPE: &str = "dev.sigstore.bundle.predicateType";
    pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
    /// Our own: the stack (or module) name, on index entries of an image layout.
    pub const STACK: &str = "dev.stackpack.stack";
    /// Our own: the kind of artifact (`bundle`, `signature`, `module`) on layout entries.
    pub const KIND: &str = "dev.stackpack.kind";
    /// Our own, on a release index's entries: the service name of a service entry.
    pub const SERVICE: &str = "dev.stackpack.service";
    /// Our own, on a release index and image layout entries: the release name.
    pub const RELEASE: &str = "dev.stackpack.release";
    /// On a channel statement: the channel it approves for.
    pub const CHANNEL: &str = "dev.stackpack.channel";
    /// Our own, on provider package layers: source address, version and platform.
    pub const PROVIDER_SOURCE: &str = "dev.stackpack.provider.source";
    pub const PROVIDER_VERSION: &str = "dev.stackpack.provider.version";
    pub const PROVIDER_PLATFORM: &str = "dev.stackpack.provider.platform";
    /// On a release index's entry for its engine: the engine's name.
    pub const ENGINE: &str = "dev.stackpack.engine";
    /// On an engine layer: its platform, as Terraform names them (`linux_amd64`).
    pub const ENGINE_PLATFORM: &str = "dev.stackpack.engine.platform";
}

/// True for the manifest media types we can parse as an image manifest.
pub fn is_image_manifest(media_type: &str) -> bool {
    media_type == OCI_MANIFEST || media_type == DOCKER_MANIFEST
}

/// True for the manifest media types that are indexes.
pub fn is_index(media_type: &str) -> bool {
    media_type == OCI_INDEX || media_type == DOCKER_MANIFEST_LIST
}
