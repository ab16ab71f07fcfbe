//! `GET /ui/stacks/{stack}/{version}`: one stack version: who runs it, its source
//! commit and signature, the modules it vendors, its interface, and what changed
//! in the interface as the packager recorded it in the bundle config at build time.

use std::collections::HashMap;

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

use super::fleet::{pager, rows_table, version_link};
use super::html::{
    badge, digest, error_page, html, mono, muted, page, prose, respond, table, when, Markup, Tone,
};
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
async fn signature(state: &AppState, release: &Release) -> Markup {
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
        return html! {
            (badge(Tone::Warn, "no signature here")) " "
            (muted("no signature stored in this registry"))
        };
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
        Ok(key) if matches => html! {
            (badge(Tone::Good, "signature verifies")) " key " (mono(&key.key_id()))
            ", signed " (when(&envelope.payload.signed_at))
        },
        Ok(_) => badge(Tone::Bad, "signature is for another bundle"),
        Err(e) => html! { (badge(Tone::Bad, "signature does not verify")) " " (e.to_string()) },
    }
}

/// The interface changes the packager recorded in the bundle config when it built
/// this version: its findings by rule, as it decided the version. Nothing is judged
/// again here, so the page cannot disagree with the packager.
fn recorded_changes(stack: &str, config: &BundleConfig, earlier_stable: bool) -> Markup {
    let Some(changes) = &config.changes else {
        return html! {
            p.muted id="changes-not-recorded" {
                @if earlier_stable {
                    "Not recorded: the build of this version did not record its interface changes (it predates bundles that record them)."
                } @else {
                    "Not compared: there was no stable release to compare this build with."
                }
            }
        };
    };
    let rows: Vec<Vec<Markup>> = changes
        .findings
        .iter()
        .map(|finding| {
            let tone = if finding.bump == Bump::Major {
                Tone::Bad
            } else {
                Tone::Info
            };
            vec![
                prose(&finding.message),
                html! { code { (finding.rule.id()) } },
                html! { code { (finding.location()) } },
                badge(tone, &finding.bump.to_string()),
            ]
        })
        .collect();
    html! {
        p.summary {
            "Since " (version_link(stack, &changes.since))
            ", as the packager found when it built this version:"
        }
        @if rows.is_empty() {
            p id="no-changes" { "No interface change." }
        } @else {
            (table(&["Change", "Rule", "Where", "Needs"], &rows, "changes"))
        }
    }
}

fn interface_tables(interface: &Interface) -> Markup {
    let inputs: Vec<Vec<Markup>> = interface
        .inputs
        .iter()
        .map(|i| {
            let flags = html! {
                @if i.required { (badge(Tone::Info, "required")) }
                @if i.sensitive { (badge(Tone::Warn, "sensitive")) }
                @if let Some(message) = &i.deprecated {
                    (badge(Tone::Warn, &format!("deprecated: {message}")))
                }
            };
            vec![
                html! { code { (i.name) } },
                html! { code { (i.type_constraint.to_string()) } },
                html! { @if let Some(d) = &i.default { code { (d.to_string()) } } },
                flags,
                html! { (i.description.as_deref().unwrap_or_default()) },
            ]
        })
        .collect();
    let outputs: Vec<Vec<Markup>> = interface
        .outputs
        .iter()
        .map(|o| {
            vec![
                html! { code { (o.name) } },
                html! { @if o.sensitive { (badge(Tone::Warn, "sensitive")) } },
                html! { (o.description.as_deref().unwrap_or_default()) },
            ]
        })
        .collect();
    html! {
        h2 { "Interface" }
        (table(&["Input", "Type", "Default", "", "Description"], &inputs, "inputs"))
        h2 { "Outputs" }
        (table(&["Output", "", "Description"], &outputs, "outputs"))
    }
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
fn pushed_by(state: &AppState, stack: &str, version: &str) -> Markup {
    match state.db.read_any(|c| db::ledger::pusher(c, stack, version)) {
        Ok(Some((_, Some(name)))) => html! { "token " code { (name) } },
        Ok(Some((id, None))) => html! { "unnamed token " code { (id) } },
        Ok(None) => muted("not recorded (pushed before tokens were kept)"),
        Err(e) => prose(&e.message),
    }
}

/// The release's facts (bundle, source, signature, previous version, who pushed
/// it), or why there are none.
fn release_facts(state: &AppState, stack: &str, facts: &Facts, signature: Markup) -> Markup {
    let Some(release) = &facts.release else {
        return html! {
            p.error {
                "Not recorded as a release here: customers report running it, but its bundle was never pushed to or recorded in this registry."
            }
        };
    };
    let source = &release.source;
    let text = |v: &Option<String>| html! { (v.as_deref().unwrap_or_default()) };
    html! {
        dl.facts {
            dt { "Bundle" } dd.mono id="digest" { (release.digest.to_string()) }
            dt { "Repository" } dd.mono { (release.repository) }
            dt { "Source commit" } dd.mono id="commit" { (text(&source.commit)) }
            dt { "Branch" } dd { (text(&source.branch)) }
            dt { "Source" } dd.mono { (text(&source.repository)) }
            dt { "Created" }
            dd { @if let Some(t) = &release.created { (when(t.as_str())) } }
            dt { "Published here" } dd { (when(release.published_at.as_str())) }
            dt { "Channel" }
            dd {
                @if release.prerelease { (badge(Tone::Info, "prerelease")) }
                @else { (badge(Tone::Good, "stable")) }
            }
            dt { "Signature" } dd id="signature" { (signature) }
            dt { "Previous version" }
            dd {
                @match &facts.previous {
                    Some(p) => (version_link(stack, &p.version)),
                    None => (muted("none: the first release")),
                }
            }
            dt { "Pushed by" }
            dd id="pushed-by" { (pushed_by(state, stack, &release.version.to_string())) }
        }
    }
}

/// Who runs the version, a page at a time.
fn runners_section(
    facts: &Facts,
    paged: bool,
    uri: &Uri,
    query: &HashMap<String, String>,
) -> Markup {
    html! {
        h2 { "Who runs it" }
        p.summary id="runners-count" {
            (facts.runner_count) " customer" @if facts.runner_count != 1 { "s" }
        }
        @if !facts.runners.is_empty() {
            (rows_table(&facts.runners, true, "runners"))
        }
        (pager(uri.path(), query, paged, facts.next.as_deref()))
    }
}

/// The modules the bundle vendors, when it vendors any.
fn modules_section(facts: &Facts) -> Markup {
    if facts.modules.is_empty() {
        return html! {};
    }
    let rows: Vec<Vec<Markup>> = facts
        .modules
        .iter()
        .map(|m| {
            vec![
                html! { (m.name) },
                html! { code { (m.path) } },
                m.version
                    .as_deref()
                    .map_or_else(|| muted("not recorded"), |v| html! { (v) }),
                digest(&m.digest),
            ]
        })
        .collect();
    html! {
        h2 { "Vendored modules" }
        (table(&["Module", "Path", "Version", "Files"], &rows, "modules"))
    }
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
    let config = match &facts.release {
        Some(release) => bundle_config(&state, release).await,
        None => None,
    };
    let signature = match &facts.release {
        Some(release) => signature(&state, release).await,
        None => html! {},
    };
    let not_known = "Not known: the bundle is not stored in this registry.";
    let body = html! {
        h1 id="release" { (stack) "@" (version) }
        (release_facts(&state, &stack, &facts, signature))
        (runners_section(&facts, after.is_some(), &uri, &query))
        h2 { "Interface changes" }
        @match &config {
            Some(config) => {
                (recorded_changes(&stack, config, facts.earlier_stable))
                @if !config.allowed_breaking.is_empty() {
                    p {
                        (badge(Tone::Warn, "published with --allow-breaking")) " for: "
                        (config.allowed_breaking.join(", "))
                    }
                }
            }
            None => p.muted { (not_known) },
        }
        (modules_section(&facts))
        @match &config {
            Some(config) => (interface_tables(&config.interface)),
            None => { h2 { "Interface" } p.muted { (not_known) } },
        }
    };
    respond(
        StatusCode::OK,
        page(&format!("{stack}@{version}"), true, body),
    )
}
