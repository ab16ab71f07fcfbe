//! `stackpack promote NAME@VERSION --channel C`: the vendor's approval, signed.

use std::path::{Path, PathBuf};

use stackpack_bundle::layout::ImageLayout;
use stackpack_packager::config::RepoConfig;
use stackpack_packager::forecast::api::LedgerApi;
use stackpack_packager::promote::forecast;
use stackpack_packager::promote::{self, Approved, Promotion};
use stackpack_packager::{Error, Result};
use stackpack_schema::reference::StackRef;
use stackpack_schema::rollout::SignedChannelStatement;
use stackpack_schema::signature::SigningKey;
use stackpack_terminal::ExitStatus;

use crate::cli::{GlobalArgs, PromoteArgs};
use crate::commands::{connect, registry_address, Transport};
use crate::output;

/// Where the statement went.
enum Destination {
    Registry {
        address: String,
        statement: stackpack_schema::oci::Descriptor,
        referrers_api: bool,
    },
    Layout {
        path: PathBuf,
        statement: stackpack_schema::oci::Descriptor,
    },
}

pub fn run(args: &PromoteArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let (name, version) = target(&args.target)?;
    promote::check_channel(&args.channel)?;
    let config = repo_config(&args.repo)?;
    let key = signing_key(args, config.as_ref())?;
    let promotion = Promotion {
        channel: args.channel.clone(),
        required: args.required,
        promoted_at: stackpack_packager::build::rfc3339(
            time::OffsetDateTime::now_utc().unix_timestamp(),
        ),
        promoted_by: promoted_by(args.by.as_deref()),
    };
    let registry = args
        .registry
        .registry
        .clone()
        .or_else(|| config.as_ref().and_then(|c| c.registry.clone()));
    let (approved, signed, destination) = match (&args.layout, registry) {
        (None, Some(registry)) => {
            let address = registry_address(Some(&registry), None)?;
            let remote = connect(
                &address.host,
                Transport::from_insecure_flag(args.registry.insecure),
            )?;
            let approved = promote::resolve_remote(&remote, &address, &name, &version)?;
            refuse_other_signer(&approved, &key)?;
            let api = LedgerApi::new(&address.host, args.registry.insecure);
            read_forecast(&api, &approved, args)?;
            remote.authenticate(&approved.repository, stackpack_bundle::remote::Access::Push)?;
            let signed = promote::sign(&approved, &promotion, key.as_ref())?;
            let pushed = promote::push(&remote, &approved, &signed)?;
            promote::push_sigstore(&remote, &approved, &signed, &key)?;
            let destination = Destination::Registry {
                address: format!("{}/{}", address.host, approved.repository),
                statement: pushed.manifest,
                referrers_api: pushed.referrers_api,
            };
            (approved, signed, destination)
        }
        (layout, _) => {
            let path = layout
                .clone()
                .unwrap_or_else(|| args.repo.join(".stackpack").join("bundles"));
            let opened = ImageLayout::open(&path).map_err(|e| {
                Error::usage_by(e).hint(
                    "pass the layout `stackpack build` wrote with `--layout DIR`, or a registry with `--registry HOST/NAMESPACE`",
                )
            })?;
            let approved = promote::resolve_local(&opened, &name, &version)?;
            refuse_other_signer(&approved, &key)?;
            let signed = promote::sign(&approved, &promotion, key.as_ref())?;
            let statement =
                stackpack_bundle::channel::write_statement(&opened, &signed, &approved.subject)?;
            (approved, signed, Destination::Layout { path, statement })
        }
    };
    if let Some(out) = &args.out {
        let mut bytes = serde_json::to_vec_pretty(&signed).expect("a statement serialises");
        bytes.push(b'\n');
        std::fs::write(out, bytes)
            .map_err(|e| stackpack_packager::error::io("write the signed statement to", out, e))?;
    }
    report(args, &approved, &signed, &destination);
    Ok(ExitStatus::Success)
}

/// Reads the registry's forecast of what is promoted: refuses when customers whose
/// runners apply on their own would lose stateful resources (unless
/// `--accept-forecast`), and says who is not forecast.
fn read_forecast(api: &LedgerApi, approved: &Approved, args: &PromoteArgs) -> Result<()> {
    let check = forecast::check(
        api,
        &approved.name,
        &approved.version,
        &approved.subject.digest,
        &args.channel,
    )?;
    let reference = format!("{}@{}", approved.name, approved.version);
    if let Some(stale) = &check.stale {
        output::warning(&format!(
            "{stale}: promoting without a forecast; run `stackpack forecast {reference} --channel {}` again",
            args.channel
        ));
        return Ok(());
    }
    let Some(summary) = &check.summary else {
        output::status(&format!(
            "no forecast of `{reference}` is stored: run `stackpack forecast {reference} --channel {}` first to know each customer's plan",
            args.channel
        ));
        return Ok(());
    };
    output::status(&format!("forecast: {summary}"));
    for (customer, why) in &check.unknown {
        output::warning(&format!("`{customer}` has no forecast: {why}"));
    }
    if let Some(refusal) = check.refusal(&approved.name, &approved.version, &args.channel) {
        if !args.accept_forecast {
            return Err(refusal);
        }
        for u in &check.unattended {
            output::warning(&format!(
                "accepted with `--accept-forecast`: {}; its runner will hold the plan for a person",
                u.describe()
            ));
        }
    }
    Ok(())
}

/// `NAME@VERSION`; a version is required: a promotion approves one exact version.
pub(crate) fn target(text: &str) -> Result<(String, semver::Version)> {
    const HINT: &str = "name it as `NAME@VERSION`, such as `data-plane@1.4.0`";
    let reference: StackRef = text
        .parse()
        .map_err(|e: stackpack_schema::reference::ReferenceError| Error::usage_by(e).hint(HINT))?;
    let version = reference
        .version
        .ok_or_else(|| Error::usage(format!("`{text}` has no version")).hint(HINT))?;
    Ok((reference.stack, version))
}

/// `stackpack.toml` in `--repo`, when there is one: a promotion needs no repository
/// when `--key` and `--registry` are given.
fn repo_config(repo: &Path) -> Result<Option<RepoConfig>> {
    if repo.join("stackpack.toml").is_file() {
        RepoConfig::load(repo).map(Some)
    } else {
        Ok(None)
    }
}

/// `--key`, else `[signing] key` in `stackpack.toml`: the key `publish` signs with.
fn signing_key(args: &PromoteArgs, config: Option<&RepoConfig>) -> Result<Box<dyn SigningKey>> {
    if let Some(path) = &args.key {
        return stackpack_packager::keys::open_signing_key(path);
    }
    let source = match config {
        Some(config) => config.signing_key_source(&args.repo)?,
        None => None,
    };
    let source = source.ok_or_else(|| {
        Error::usage("no signing key: a promotion is signed with the vendor key")
            .hint("pass `--key FILE` (the key `stackpack publish` signs with), or set `[signing] key` in `stackpack.toml`")
    })?;
    if let stackpack_packager::config::KeySource::Pem { variable, .. } = &source {
        output::detail(&format!("signing with the PEM key held in `{variable}`"));
    }
    stackpack_packager::keys::open_key_source(&source)
}

/// `--by`, else the CI's actor, else the user.
fn promoted_by(flag: Option<&str>) -> Option<String> {
    flag.map(str::to_string).or_else(|| {
        ["GITHUB_ACTOR", "GITLAB_USER_LOGIN", "USER"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    })
}

/// Only a key that signed what a statement approves may approve it: the registry
/// refuses any other (so a publisher token and a key of one's own cannot start a
/// rollout or take the version from the vendor's promotion), and `export
/// --channel` carries no other. Refused here first, before anything is signed.
fn refuse_other_signer(approved: &Approved, key: &dyn SigningKey) -> Result<()> {
    let public = key.public_key();
    if approved.signers.is_empty() || approved.signers.contains(&public) {
        return Ok(());
    }
    let signers: Vec<String> = approved.signers.iter().map(|k| k.key_id()).collect();
    let what = format!("{}@{}", approved.name, approved.version);
    Err(Error::usage(stackpack_schema::rollout::foreign_signer(
        &what,
        &public.key_id(),
        &signers,
    ))
    .hint(stackpack_schema::rollout::FOREIGN_SIGNER_HINT))
}

fn report(
    args: &PromoteArgs,
    approved: &Approved,
    signed: &SignedChannelStatement,
    destination: &Destination,
) {
    let s = &signed.statement;
    if args.json {
        let (registry, layout, statement, referrers_api) = match destination {
            Destination::Registry {
                address,
                statement,
                referrers_api,
            } => (Some(address.clone()), None, statement, Some(*referrers_api)),
            Destination::Layout { path, statement } => (None, Some(path), statement, None),
        };
        output::print_json(&serde_json::json!({
            "channel": s.channel,
            "kind": s.kind,
            "release": s.release,
            "version": s.version.to_string(),
            "digest": s.digest,
            "required": s.required,
            "promotedAt": s.promoted_at,
            "promotedBy": s.promoted_by,
            "keyId": s.key_id,
            "statement": statement.digest,
            "repository": registry,
            "layout": layout,
            "referrersApi": referrers_api,
            "out": args.out,
        }));
        return;
    }
    // The result: the statement manifest's digest, as a `keygen` prints its key id.
    match destination {
        Destination::Registry { statement, .. } | Destination::Layout { statement, .. } => {
            println!("{}", statement.digest)
        }
    }
    let required = if s.required {
        " as a required step"
    } else {
        ""
    };
    let place = match destination {
        Destination::Registry {
            address,
            referrers_api,
            ..
        } => format!(
            "pushed the signed statement to `{address}`{}",
            if *referrers_api {
                ""
            } else {
                " (listed in the referrers fallback tag: this registry has no referrers API)"
            }
        ),
        Destination::Layout { path, .. } => format!(
            "wrote the signed statement into `{}`; carry it to customers with `stackpack export {}@{} --channel {}`",
            path.display(),
            s.release,
            s.version,
            s.channel
        ),
    };
    output::status(&format!(
        "promoted {} `{}@{}` ({}) to channel `{}`{required}: {place}",
        approved.kind,
        s.release,
        s.version,
        s.digest.short(),
        s.channel
    ));
}
