//! `GET /ui/releases/{name}/{version}`: one release version (a customer's whole
//! environment as one version): each stack's version and bundle digest in apply
//! order, each service's digest, and who runs it, with the stacks that deviate.
//! Not to be confused with `/ui/stacks/{stack}/{version}` ([`super::stack_version`]),
//! one stack version.

use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use semver::Version;

use super::fleet::version_link;
use super::html::{badge, esc, page, respond, short_digest, table, url, Tone};
use super::{failed, viewer};
use crate::api::{MixedStack, ReleaseFleetRow, ReleaseServicePart, ReleaseSnapshot};
use crate::controllers::ledger::release_versions::snapshot;
use crate::state::SharedState;

/// A link to a release version's page.
pub fn release_link(name: &str, version: &Version) -> String {
    let version = version.to_string();
    format!(
        "<a href=\"/ui/releases/{}/{}\">{} {}</a>",
        url(name),
        url(&version),
        esc(name),
        esc(&version)
    )
}

/// A digest, shortened, whole in its title.
pub fn digest(text: &str) -> String {
    format!(
        "<span class=\"mono\" title=\"{}\">{}</span>",
        esc(text),
        esc(&short_digest(text))
    )
}

/// The services a release version pins: each one's reference and whole digest.
pub fn services_table(services: &[ReleaseServicePart], id: &str) -> String {
    let rows: Vec<Vec<String>> = services
        .iter()
        .map(|p| {
            vec![
                esc(&p.service),
                format!("<span class=\"mono\">{}</span>", esc(&p.reference)),
                format!("<span class=\"mono\">{}</span>", esc(&p.digest.to_string())),
            ]
        })
        .collect();
    table(&["Service", "Reference", "Digest"], &rows, id)
}

/// One mixed stack in words: `cluster 0.3.0 (pins 0.3.1): applied on its own`.
fn mixed_stack(m: &MixedStack) -> String {
    let running = m
        .running
        .as_ref()
        .map_or_else(|| "nothing".to_string(), |v| version_link(&m.stack, v));
    let expected = m
        .expected
        .as_ref()
        .map(|v| format!(" (release pins {})", version_link(&m.stack, v)))
        .unwrap_or_default();
    format!(
        "{} runs {running}{expected}: {}",
        esc(&m.stack),
        esc(m.reason.as_str())
    )
}

/// A customer's standing against its release: in line, or its mixed stacks.
pub fn standing(row: &ReleaseFleetRow) -> String {
    let mut out = if row.mixed.is_empty() {
        badge(Tone::Good, "runs exactly this release")
    } else {
        let mixed: Vec<String> = row.mixed.iter().map(mixed_stack).collect();
        format!("{} {}", badge(Tone::Warn, "mixed"), mixed.join("<br>"))
    };
    if !row.recorded {
        out.push(' ');
        out.push_str(&badge(Tone::Info, "version not recorded here"));
    }
    out
}

fn body(s: &ReleaseSnapshot) -> String {
    let r = &s.release;
    let mut body = format!(
        "<h1 id=\"release\">Release {} {}</h1>",
        esc(&r.name),
        esc(&r.version.to_string())
    );
    let _ = write!(
        body,
        "<dl class=\"facts\"><dt>Index</dt><dd class=\"mono\" id=\"index-digest\">{}</dd>\
         <dt>Repository</dt><dd class=\"mono\">{}</dd><dt>Published</dt><dd>{}</dd>\
         <dt>Line</dt><dd>{}</dd></dl>",
        esc(&r.digest.to_string()),
        esc(&r.repository),
        esc(r.published_at.as_str()),
        if r.prerelease {
            badge(Tone::Warn, "prerelease")
        } else {
            badge(Tone::Good, "stable")
        },
    );
    body.push_str("<h2>Stacks, in apply order</h2>");
    let stacks: Vec<Vec<String>> = s
        .stacks
        .iter()
        .map(|p| {
            vec![
                esc(&p.stack),
                version_link(&p.stack, &p.version),
                digest(&p.digest.to_string()),
            ]
        })
        .collect();
    body.push_str(&table(&["Stack", "Version", "Bundle"], &stacks, "stacks"));
    body.push_str("<h2>Services</h2>");
    if s.services.is_empty() {
        body.push_str("<p class=\"muted\">No service.</p>");
    } else {
        body.push_str(&services_table(&s.services, "services"));
    }
    body.push_str("<h2>Who runs it</h2>");
    if s.customers.is_empty() {
        body.push_str("<p class=\"muted\" id=\"no-customers\">No customer runs this version.</p>");
    } else {
        let customers: Vec<Vec<String>> = s
            .customers
            .iter()
            .map(|c| {
                vec![
                    format!(
                        "<a href=\"/ui/customers/{}\">{}</a>",
                        url(&c.customer),
                        esc(&c.customer)
                    ),
                    c.environment.as_deref().map(esc).unwrap_or_default(),
                    standing(c),
                ]
            })
            .collect();
        body.push_str(&table(
            &["Customer", "Environment", "Stacks"],
            &customers,
            "customers",
        ));
    }
    body
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
            page(&format!("{name} {version}"), true, &body(&s)),
        ),
        Err(e) => failed(e),
    }
}
