//! `stackpack forecast NAME@VERSION [--channel C]`: every customer's plan from where it
//! stands to the candidate, printed and sent to the registry.

use stackpack_packager::forecast::api::LedgerApi;
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
    let api = LedgerApi::new(&address.host, args.registry.insecure);
    if !args.no_send {
        api.require_token("sending the forecast")?;
    }
    let targets = api.targets(&name, &version, args.channel.as_deref())?;
    let options = Options {
        parallel: args.parallel.unwrap_or(witness.parallel()),
        cache: true,
    };
    let started = std::time::Instant::now();
    let forecast =
        forecast::forecast(&witness, &indexes, &bundles, &candidate, &targets, &options)?;
    let elapsed = started.elapsed().as_secs_f64();
    if args.json {
        output::print_json(&forecast);
    } else {
        print!("{}", render::human(&forecast));
    }
    for line in render::unknown(&forecast) {
        output::warning(&line);
    }
    let planned = forecast
        .customers
        .iter()
        .filter(|c| c.outcome.is_known())
        .count();
    let cached = forecast.customers.iter().filter(|c| c.cached).count();
    output::status(&format!(
        "forecast {planned} of {} customer(s) in {elapsed:.0} s ({cached} from the cache, {} parallel)",
        forecast.customers.len(),
        options.parallel
    ));
    if !args.no_send {
        api.send(&forecast)?;
        output::status(&format!(
            "sent the forecast of `{}@{}` to registry `{}`",
            forecast.release, forecast.version, address.host
        ));
    }
    Ok(ExitStatus::Success)
}
