//! `GET /ui/releases/{name}/{version}`: one release version (a customer's whole
//! environment as one version): each stack's version and bundle digest in apply
//! order, each service's digest, and who runs it, with the stacks that deviate.
//! Not to be confused with `/ui/stacks/{stack}/{version}` ([`super::stack_version`]),
//! one stack version.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use semver::Version;

use super::fleet::{customer_link, version_link};
pub use super::html::digest;
use super::html::{badge, br, html, joined, mono, page, respond, table, url, Markup, Tone};
use super::{failed, viewer};
use crate::api::{MixedStack, ReleaseFleetRow, ReleaseServicePart, ReleaseSnapshot};
use crate::controllers::ledger::release_versions::snapshot;
use crate::state::SharedState;

/// A link to a release version's page.
pub fn release_link(name: &str, version: &Version) -> Markup {
    let version = version.to_string();
    html! {
        a href={ "/ui/releases/" (url(name)) "/" (url(&version)) } { (name) " " (version) }
    }
}

/// The services a release version pins: each one's reference and whole digest.
pub fn services_table(services: &[ReleaseServicePart], id: &str) -> Markup {
    let rows: Vec<Vec<Markup>> = services
        .iter()
        .map(|p| {
            vec![
                html! { (p.service) },
                mono(&p.reference),
                mono(&p.digest.to_string()),
            ]
        })
        .collect();
    table(&["Service", "Reference", "Digest"], &rows, id)
}

/// One mixed stack in words: `cluster 0.3.0 (pins 0.3.1): applied on its own`.
fn mixed_stack(m: &MixedStack) -> Markup {
    html! {
        (m.stack) " runs "
        @match &m.running {
            Some(v) => (version_link(&m.stack, v)),
            None => "nothing",
        }
        @if let Some(v) = &m.expected {
            " (release pins " (version_link(&m.stack, v)) ")"
        }
        ": " (m.reason.as_str())
    }
}

/// A customer's standing against its release: in line, or its mixed stacks.
pub fn standing(row: &ReleaseFleetRow) -> Markup {
    let mixed: Vec<Markup> = row.mixed.iter().map(mixed_stack).collect();
    html! {
        @if mixed.is_empty() {
            (badge(Tone::Good, "runs exactly this release"))
        } @else {
            (badge(Tone::Warn, "mixed")) " " (joined(&mixed, &br()))
        }
        @if !row.recorded {
            " " (badge(Tone::Info, "version not recorded here"))
        }
    }
}

fn body(s: &ReleaseSnapshot) -> Markup {
    let r = &s.release;
    let stacks: Vec<Vec<Markup>> = s
        .stacks
        .iter()
        .map(|p| {
            vec![
                html! { (p.stack) },
                version_link(&p.stack, &p.version),
                digest(&p.digest.to_string()),
            ]
        })
        .collect();
    let customers: Vec<Vec<Markup>> = s
        .customers
        .iter()
        .map(|c| {
            vec![
                customer_link(&c.customer),
                html! { (c.environment.as_deref().unwrap_or_default()) },
                standing(c),
            ]
        })
        .collect();
    html! {
        h1 id="release" { "Release " (r.name) " " (r.version.to_string()) }
        dl.facts {
            dt { "Index" } dd.mono id="index-digest" { (r.digest.to_string()) }
            dt { "Repository" } dd.mono { (r.repository) }
            dt { "Published" } dd { (r.published_at.as_str()) }
            dt { "Line" }
            dd {
                @if r.prerelease { (badge(Tone::Warn, "prerelease")) }
                @else { (badge(Tone::Good, "stable")) }
            }
        }
        h2 { "Stacks, in apply order" }
        (table(&["Stack", "Version", "Bundle"], &stacks, "stacks"))
        h2 { "Services" }
        @if s.services.is_empty() {
            p.muted { "No service." }
        } @else {
            (services_table(&s.services, "services"))
        }
        h2 { "Who runs it" }
        @if s.customers.is_empty() {
            p.muted id="no-customers" { "No customer runs this version." }
        } @else {
            (table(&["Customer", "Environment", "Stacks"], &customers, "customers"))
        }
    }
}

pub async fn show(
    State(state): State<SharedState>,
    headers: HeaderMap,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    match snapshot(&state, &name, &version) {
        Ok(s) => respond(
            StatusCode::OK,
            page(&format!("{name} {version}"), true, body(&s)),
        ),
        Err(e) => failed(e),
    }
}
