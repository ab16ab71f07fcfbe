//! `GET /ui/stacks/{stack}/{version}`: one stack version: who runs it, its source
//! commit and signature, the modules it vendors, its interface, and what changed
//! in the interface as the packager recorded it in the bundle config at build time.

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use semver::Version;
use stackpack_schema::bundle::BundleConfig;
use stackpack_schema::interface::Interface;
use stackpack_schema::media_type;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::oci::ImageManifest;
use stackpack_schema::signature::SignatureEnvelope;
use stackpack_schema::version::Bump;

use super::fleet::rows_table;
use super::html::{badge, error_page, esc, page, respond, short_digest, table, Tone};
use super::{failed, viewer};
use crate::api::Release;
use crate::controllers::ledger::fleet::{page as fleet_page, FleetQuery};
use crate::controllers::ledger::Paging;
use crate::db;
use crate::error::Result;
use crate::state::AppState;
use crate::state::SharedState;

/// A manifest stored here, parsed.
fn manifest(state: &AppState, repo: &str, digest: &str) -> Option<ImageManifest> {
    let stored = state
        .db
        .read_any(|c| db::manifests::get_by_digest(c, repo, digest))
        .ok()??;
    serde_json::from_slice(&stored.content).ok()
}

/// A small blob's bytes (a config, a signature), wherever blobs are stored.
async fn blob(state: &AppState, blob: &Descriptor) -> Option<Vec<u8>> {
    crate::storage::read_small(
        state.blobs.as_ref(),
        &blob.digest,
        blob.size,
        16 * 1024 * 1024,
    )
    .await
    .ok()?
}

/// The bundle config of a release whose bundle lives in this registry.
pub async fn bundle_config(state: &AppState, release: &Release) -> Option<BundleConfig> {
    let manifest = manifest(state, &release.repository, &release.digest.to_string())?;
    serde_json::from_slice(&blob(state, &manifest.config).await?).ok()
}

/// What the signature stored beside the bundle says, in words.
async fn signature(state: &AppState, release: &Release) -> String {
    let referrers = state
        .db
        .read_any(|c| {
            db::manifests::referrers(
                c,
                &release.repository,
                &release.digest.to_string(),
                Some(media_type::SIGNATURE_ARTIFACT),
            )
        })
        .unwrap_or_default();
    let Some(referrer) = referrers.first() else {
        return format!(
            "{} <span class=\"muted\">no signature stored in this registry</span>",
            badge(Tone::Warn, "no signature here")
        );
    };
    let layer = manifest(state, &release.repository, &referrer.digest.to_string())
        .and_then(|m| m.layers.first().cloned());
    let bytes = match layer {
        Some(layer) => blob(state, &layer).await,
        None => None,
    };
    let envelope = bytes.and_then(|bytes| SignatureEnvelope::from_bytes(&bytes).ok());
    let Some(envelope) = envelope else {
        return badge(Tone::Bad, "signature unreadable");
    };
    let matches = envelope.payload.manifest_digest == release.digest;
    match envelope.verify_integrity() {
        Ok(key) if matches => format!(
            "{} key <span class=\"mono\">{}</span>, signed {}",
            badge(Tone::Good, "signature verifies"),
            esc(&key.key_id()),
            super::html::when(&envelope.payload.signed_at)
        ),
        Ok(_) => badge(Tone::Bad, "signature is for another bundle"),
        Err(e) => format!(
            "{} {}",
            badge(Tone::Bad, "signature does not verify"),
            esc(&e.to_string())
        ),
    }
}

/// The interface changes the packager recorded in the bundle config when it built
/// this version: its findings by rule, as it decided the version. Nothing is judged
/// again here, so the page cannot disagree with the packager.
fn recorded_changes(stack: &str, config: &BundleConfig, earlier_stable: bool) -> String {
    let Some(changes) = &config.changes else {
        return if earlier_stable {
            "<p class=\"muted\" id=\"changes-not-recorded\">Not recorded: the build of this version did not record its interface changes (it predates bundles that record them).</p>".into()
        } else {
            "<p class=\"muted\" id=\"changes-not-recorded\">Not compared: there was no stable release to compare this build with.</p>".into()
        };
    };
    let mut out = format!(
        "<p class=\"summary\">Since {}, as the packager found when it built this version:</p>",
        super::fleet::version_link(stack, &changes.since)
    );
    if changes.findings.is_empty() {
        out.push_str("<p id=\"no-changes\">No interface change.</p>");
    } else {
        let rows: Vec<Vec<String>> = changes
            .findings
            .iter()
            .map(|finding| {
                let tone = if finding.bump == Bump::Major {
                    Tone::Bad
                } else {
                    Tone::Info
                };
                vec![
                    super::html::prose(&finding.message),
                    format!("<code>{}</code>", esc(finding.rule.id())),
                    format!("<code>{}</code>", esc(&finding.location())),
                    badge(tone, &finding.bump.to_string()),
                ]
            })
            .collect();
        out.push_str(&table(
            &["Change", "Rule", "Where", "Needs"],
            &rows,
            "changes",
        ));
    }
    out
}

fn interface_tables(interface: &Interface) -> String {
    let inputs: Vec<Vec<String>> = interface
        .inputs
        .iter()
        .map(|i| {
            let mut flags = String::new();
            if i.required {
                flags.push_str(&badge(Tone::Info, "required"));
            }
            if i.sensitive {
                flags.push_str(&badge(Tone::Warn, "sensitive"));
            }
            if let Some(message) = &i.deprecated {
                flags.push_str(&badge(Tone::Warn, &format!("deprecated: {message}")));
            }
            vec![
                format!("<code>{}</code>", esc(&i.name)),
                format!("<code>{}</code>", esc(&i.type_constraint.to_string())),
                i.default
                    .as_ref()
                    .map(|d| format!("<code>{}</code>", esc(&d.to_string())))
                    .unwrap_or_default(),
                flags,
                i.description.as_deref().map(esc).unwrap_or_default(),
            ]
        })
        .collect();
    let outputs: Vec<Vec<String>> = interface
        .outputs
        .iter()
        .map(|o| {
            vec![
                format!("<code>{}</code>", esc(&o.name)),
                if o.sensitive {
                    badge(Tone::Warn, "sensitive")
                } else {
                    String::new()
                },
                o.description.as_deref().map(esc).unwrap_or_default(),
            ]
        })
        .collect();
    let mut out = String::from("<h2>Interface</h2>");
    out.push_str(&table(
        &["Input", "Type", "Default", "", "Description"],
        &inputs,
        "inputs",
    ));
    out.push_str("<h2>Outputs</h2>");
    out.push_str(&table(&["Output", "", "Description"], &outputs, "outputs"));
    out
}

/// The previous release of the same stack, by semver precedence.
fn previous(releases: &[Release], version: &Version) -> Option<Release> {
    releases
        .iter()
        .filter(|r| r.version.cmp_precedence(version).is_lt())
        .max_by(|a, b| a.version.cmp_precedence(&b.version))
        .cloned()
}

struct Facts {
    release: Option<Release>,
    previous: Option<Release>,
    /// A stable release older than this one exists: a build would have compared with it.
    earlier_stable: bool,
    modules: Vec<crate::api::ReleaseModule>,
    /// One page of who runs it.
    runners: Vec<crate::api::FleetRow>,
    /// How many run it, on every page.
    runner_count: u64,
    /// The cursor of the next page of runners.
    next: Option<String>,
}

/// Runners shown on one page of a stack version.
const RUNNER_ROWS: usize = 100;

fn gather(state: &AppState, stack: &str, version: &str, after: Option<String>) -> Result<Facts> {
    let (release, releases, modules, runner_count) = state.db.support_any(|c| {
        Ok((
            db::ledger::release(c, stack, version)?,
            db::ledger::releases(c, Some(stack))?,
            db::ledger::release_modules(c, stack, version)?,
            db::fleet::runner_count(c, stack, version)?,
        ))
    })?;
    let parsed = Version::parse(version).ok();
    let previous = parsed.as_ref().and_then(|v| previous(&releases, v));
    let earlier_stable = parsed.as_ref().is_some_and(|version| {
        releases
            .iter()
            .map(|r| &r.version)
            .any(|v| v.pre.is_empty() && v.cmp_precedence(version).is_lt())
    });
    let (runners, next) = fleet_page(
        state,
        &FleetQuery {
            stack: Some(stack.to_string()),
            version: Some(version.to_string()),
            stale_after_secs: 7 * 24 * 3600,
            ..FleetQuery::default()
        },
        &Paging {
            after,
            limit: RUNNER_ROWS,
        },
    )?;
    Ok(Facts {
        release,
        previous,
        earlier_stable,
        modules,
        runners,
        runner_count,
        next,
    })
}

/// Who recorded a stack version: the token's name, or its id when it has none.
fn pushed_by(state: &AppState, stack: &str, version: &str) -> String {
    match state.db.read_any(|c| db::ledger::pusher(c, stack, version)) {
        Ok(Some((_, Some(name)))) => format!("token <code>{}</code>", esc(&name)),
        Ok(Some((id, None))) => format!("unnamed token <code>{}</code>", esc(&id)),
        Ok(None) => {
            "<span class=\"muted\">not recorded (pushed before tokens were kept)</span>".into()
        }
        Err(e) => super::html::prose(&e.message),
    }
}

/// The release's facts (bundle, source, signature, previous version, who pushed
/// it), or why there are none.
fn release_facts(state: &AppState, stack: &str, facts: &Facts, signature: &str) -> String {
    let mut body = String::new();
    match &facts.release {
        Some(release) => {
            let source = &release.source;
            let _ = write!(
                body,
                "<dl class=\"facts\"><dt>Bundle</dt><dd class=\"mono\" id=\"digest\">{}</dd>\
                 <dt>Repository</dt><dd class=\"mono\">{}</dd>\
                 <dt>Source commit</dt><dd class=\"mono\" id=\"commit\">{}</dd>\
                 <dt>Branch</dt><dd>{}</dd><dt>Source</dt><dd class=\"mono\">{}</dd>\
                 <dt>Created</dt><dd>{}</dd><dt>Published here</dt><dd>{}</dd>\
                 <dt>Channel</dt><dd>{}</dd><dt>Signature</dt><dd id=\"signature\">{}</dd>\
                 <dt>Previous version</dt><dd>{}</dd><dt>Pushed by</dt><dd id=\"pushed-by\">{}</dd></dl>",
                esc(&release.digest.to_string()),
                esc(&release.repository),
                source.commit.as_deref().map(esc).unwrap_or_default(),
                source.branch.as_deref().map(esc).unwrap_or_default(),
                source.repository.as_deref().map(esc).unwrap_or_default(),
                release.created.as_ref().map(|t| super::html::when(t.as_str())).unwrap_or_default(),
                super::html::when(release.published_at.as_str()),
                if release.prerelease {
                    badge(Tone::Info, "prerelease")
                } else {
                    badge(Tone::Good, "stable")
                },
                signature,
                facts
                    .previous
                    .as_ref()
                    .map(|p| super::fleet::version_link(stack, &p.version))
                    .unwrap_or_else(|| "<span class=\"muted\">none: the first release</span>".into()),
                pushed_by(state, stack, &release.version.to_string()),
            );
        }
        None => body.push_str(
            "<p class=\"error\">Not recorded as a release here: customers report running it, but its bundle was never pushed to or recorded in this registry.</p>",
        ),
    }
    body
}

/// Who runs the version, a page at a time.
fn runners_section(
    facts: &Facts,
    paged: bool,
    uri: &Uri,
    query: &HashMap<String, String>,
) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h2>Who runs it</h2><p class=\"summary\" id=\"runners-count\">{} customer{}</p>",
        facts.runner_count,
        if facts.runner_count == 1 { "" } else { "s" }
    );
    if !facts.runners.is_empty() {
        body.push_str(&rows_table(&facts.runners, true, "runners"));
    }
    if paged || facts.next.is_some() {
        let path = uri.path();
        body.push_str("<p class=\"pager\">");
        if paged {
            body.push_str(&super::fleet::first_link(path, query));
            body.push(' ');
        }
        if let Some(next) = &facts.next {
            body.push_str(&super::fleet::next_link(path, query, next));
        }
        body.push_str("</p>");
    }
    body
}

/// The modules the bundle vendors, when it vendors any.
fn modules_section(facts: &Facts) -> String {
    let mut body = String::new();
    if !facts.modules.is_empty() {
        let rows: Vec<Vec<String>> = facts
            .modules
            .iter()
            .map(|m| {
                vec![
                    esc(&m.name),
                    format!("<code>{}</code>", esc(&m.path)),
                    m.version
                        .as_deref()
                        .map(esc)
                        .unwrap_or_else(|| "<span class=\"muted\">not recorded</span>".into()),
                    format!(
                        "<span class=\"mono\" title=\"{}\">{}</span>",
                        esc(&m.digest),
                        esc(&short_digest(&m.digest))
                    ),
                ]
            })
            .collect();
        body.push_str("<h2>Vendored modules</h2>");
        body.push_str(&table(
            &["Module", "Path", "Version", "Files"],
            &rows,
            "modules",
        ));
    }
    body
}

pub async fn show(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
    Path((stack, version)): Path<(String, String)>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let query: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&uri)
            .map(|q| q.0)
            .unwrap_or_default();
    let after = query.get("after").filter(|a| !a.is_empty()).cloned();
    let facts = match gather(&state, &stack, &version, after.clone()) {
        Ok(facts) => facts,
        Err(e) => return failed(e),
    };
    if facts.release.is_none() && facts.runner_count == 0 {
        let message = format!("`{stack}@{version}` is not a recorded release and nobody runs it");
        return error_page(StatusCode::NOT_FOUND, &message, true);
    }
    let mut body = format!("<h1 id=\"release\">{}@{}</h1>", esc(&stack), esc(&version));
    let config = match &facts.release {
        Some(release) => bundle_config(&state, release).await,
        None => None,
    };
    let signature = match &facts.release {
        Some(release) => signature(&state, release).await,
        None => String::new(),
    };
    body.push_str(&release_facts(&state, &stack, &facts, &signature));

    body.push_str(&runners_section(&facts, after.is_some(), &uri, &query));

    body.push_str("<h2>Interface changes</h2>");
    match &config {
        Some(config) => {
            body.push_str(&recorded_changes(&stack, config, facts.earlier_stable));
            if !config.allowed_breaking.is_empty() {
                let _ = write!(
                    body,
                    "<p>{} for: {}</p>",
                    badge(Tone::Warn, "published with --allow-breaking"),
                    esc(&config.allowed_breaking.join(", "))
                );
            }
        }
        None => body.push_str(
            "<p class=\"muted\">Not known: the bundle is not stored in this registry.</p>",
        ),
    }

    body.push_str(&modules_section(&facts));
    match &config {
        Some(config) => body.push_str(&interface_tables(&config.interface)),
        None => body.push_str(
            "<h2>Interface</h2><p class=\"muted\">Not known: the bundle is not stored in this registry.</p>",
        ),
    }
    respond(
        StatusCode::OK,
        page(&format!("{stack}@{version}"), true, &body),
    )
}
