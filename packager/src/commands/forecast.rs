//! `stackpack forecast NAME@VERSION [--channel C]`: every customer's plan from where it
//! stands to the candidate, printed and sent to the registry.

use stackpack_packager::forecast::source::{self, RegistryIndexes};
use stackpack_packager::forecast::{self, render, Options};
use stackpack_packager::releases::RegistryReleases;
use stackpack_packager::repository::Repository;
use stackpack_packager::witness::Witness;
use stackpack_packager::{Error, Result};
use stackpack_terminal::ExitStatus;

use crate::cli::ForecastArgs;
use crate::commands::{connect, registry_address, Transport};
use crate::output;

pub fn run(args: &ForecastArgs) -> Result<ExitStatus> {
    let (name, version) = crate::commands::promote::target(&args.target)?;
    if let Some(channel) = &args.channel {
        stackpack_packager::promote::check_channel(channel)?;
    }
    if args.parallel == Some(0) {
        return Err(Error::usage("`--parallel 0` would forecast nobody")
            .hint("pass at least `--parallel 1`"));
    }
    let repo = Repository::open(&args.repo)?;
    // Checked before the registry is asked anything: no account, no forecast.
    let witness = Witness::prepare(&repo.root, &repo.config)?;
    let address = registry_address(args.registry.registry.as_deref(), Some(&repo.config))?;
    let remote = connect(
        &address.host,
        Transport::from_insecure_flag(args.registry.insecure),
    )?;
    let indexes = RegistryIndexes {
        remote: &remote,
        address: &address,
    };
    let bundles = RegistryReleases {
        remote: &remote,
        address: &address,
    };
    let candidate = source::candidate(&indexes, &bundles, &name, &version)?;
    let api = source::api_root(&address.host, args.registry.insecure);
    let token = std::env::var("STACKPACK_REGISTRY_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let targets = source::targets(
        &api,
        token.as_deref(),
        &name,
        &version,
        args.channel.as_deref(),
    )?;
    let options = Options {
        parallel: args.parallel.unwrap_or(witness.parallel()),
        cache: true,
    };
    let forecast =
        forecast::forecast(&witness, &indexes, &bundles, &candidate, &targets, &options)?;
    if args.json {
        output::print_json(&forecast);
    } else {
        print!("{}", render::human(&forecast));
    }
    for line in render::unknown(&forecast) {
        output::warning(&line);
    }
    if !args.no_send {
        let token = token.ok_or_else(|| {
            Error::usage("sending the forecast needs a registry token").hint(
                "set `STACKPACK_REGISTRY_TOKEN` to a token that may publish, or pass `--no-send`",
            )
        })?;
        source::send(&api, &token, &forecast)?;
        output::status(&format!(
            "sent the forecast of `{}@{}` to registry `{}`",
            forecast.release, forecast.version, address.host
        ));
    }
    Ok(ExitStatus::Success)
}
