//! The engine a release carries (`[releases.<name>] engine`), taken from the
//! vendor's engine mirror (`[engines] mirror`) for each platform of
//! `[providers] platforms`, checked against every stack's `required_version`
//! before anything is pushed.

use std::path::PathBuf;

use stackpack_bundle::carried_engine::{self, EngineBinary};
use stackpack_bundle::layout::ImageLayout;
use stackpack_interface::constraint::Constraint;
use stackpack_schema::release::{ReleaseEngine, ReleaseStack};

use crate::error::{Error, Result};
use crate::releases::ReleaseSource;
use crate::repository::Repository;

/// The engine as the release will carry it: its description (pinned in the
/// signed release description) and the binaries and manifest to write.
#[derive(Clone, Debug)]
pub struct CarriedEngine {
    pub description: ReleaseEngine,
    pub binaries: Vec<EngineBinary>,
    pub manifest: Vec<u8>,
}

/// The engine release `name` carries, if it names one; its stacks (pinned, their
/// bundles in `layout`) must all allow its version.
pub fn carried_engine(
    repo: &Repository,
    name: &str,
    stacks: &[ReleaseStack],
    layout: &ImageLayout,
) -> Result<Option<CarriedEngine>> {
    let Some(settings) = &repo.config.releases[name].engine else {
        return Ok(None);
    };
    let engine = settings.name.as_str();
    let version = &settings.version;
    let mirror = repo.config.engines.mirror.as_ref().ok_or_else(|| {
        Error::usage(format!(
            "release `{name}` carries engine `{engine}` {version}, and `stackpack.toml` names no engine mirror to take it from"
        ))
        .at("stackpack.toml")
        .hint(format!(
            "add `[engines]` with `mirror = \"DIR\"` (or set `{}`), holding `{engine}/{version}/linux_amd64/{engine}`",
            crate::config::ENGINE_MIRROR_VARIABLE
        ))
    })?;
    let mirror = repo.root.join(mirror);
    let mut binaries = Vec::new();
    for platform in &repo.config.providers.platforms {
        let path: PathBuf = mirror
            .join(engine)
            .join(version.to_string())
            .join(platform)
            .join(engine);
        if !path.is_file() {
            return Err(Error::usage(format!(
                "release `{name}` carries engine `{engine}` {version} for `{platform}`, which is not in the engine mirror"
            ))
            .at(path.display())
            .hint(format!(
                "copy the `{engine}` binary of {version} for `{platform}` (from its release zip) there; the platforms are `[providers] platforms`"
            )));
        }
        binaries.push(EngineBinary {
            platform: platform.clone(),
            path,
        });
    }
    for stack in stacks {
        allows(layout, name, stack, settings.name, version)?;
    }
    let (description, manifest) = carried_engine::describe(settings.name, version, &binaries)?;
    Ok(Some(CarriedEngine {
        description,
        binaries,
        manifest,
    }))
}

/// Refuses an engine the stack's bundle rules out: another engine than the one it
/// names, or a version its `required_version` rejects.
fn allows(
    layout: &ImageLayout,
    release: &str,
    stack: &ReleaseStack,
    engine: stackpack_schema::bundle::EngineName,
    version: &semver::Version,
) -> Result<()> {
    let Some(found) = layout.release(&stack.name, &stack.version)? else {
        return Ok(());
    };
    let needs = &found.config.engine;
    if let Some(wanted) = needs.name.filter(|wanted| *wanted != engine) {
        return Err(Error::refused(format!(
            "release `{release}` carries engine `{engine}`, and stack `{}@{}` runs on `{wanted}`",
            stack.name, stack.version
        ))
        .at("stackpack.toml")
        .hint(format!(
            "carry `{wanted}` in the release, or leave `engine` out and let customers bring theirs"
        )));
    }
    let Some(text) = &needs.version_constraint else {
        return Ok(());
    };
    let rejected =
        Constraint::parse(text).and_then(|c| c.allows_version(&version.to_string())) == Some(false);
    if rejected {
        return Err(Error::refused(format!(
            "release `{release}` carries engine `{engine}` {version}, which stack `{}@{}` rejects: `required_version = \"{text}\"`",
            stack.name, stack.version
        ))
        .at("stackpack.toml")
        .hint("carry a version every stack of the release allows (`[releases.<name>] engine`), or change the stack's `required_version`; nothing was pushed"));
    }
    Ok(())
}
