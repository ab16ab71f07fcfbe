//! Version rules: branch slugs, the next stable version, prerelease numbering.
//!
//! Versions are always compared by semver precedence ([`semver::Version::cmp_precedence`]),
//! never as strings or in git tag order: `1.0.0-pr.10` comes after `1.0.0-pr.9`.

use std::cmp::Ordering;
use std::fmt;

use semver::{Prerelease, Version};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hasher;

/// Longest slug kept whole; longer ones are cut and get a short hash of the branch.
pub const MAX_SLUG_LEN: usize = 40;

/// How much a version moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bump {
    Patch,
    Minor,
    Major,
}

impl Bump {
    pub fn apply(self, version: &Version) -> Version {
        match self {
            Bump::Patch => Version::new(version.major, version.minor, version.patch + 1),
            Bump::Minor => Version::new(version.major, version.minor + 1, 0),
            Bump::Major => Version::new(version.major + 1, 0, 0),
        }
    }
}

impl fmt::Display for Bump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bump::Patch => "patch",
            Bump::Minor => "minor",
            Bump::Major => "major",
        })
    }
}

impl std::str::FromStr for Bump {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "patch" => Ok(Bump::Patch),
            "minor" => Ok(Bump::Minor),
            "major" => Ok(Bump::Major),
            other => Err(format!(
                "`{other}` is not a bump: expected `patch`, `minor` or `major`"
            )),
        }
    }
}

/// The prerelease slug of a branch name: lowercased, every run of characters outside
/// `[a-z0-9-]` made one `-`, trimmed of `-`, prefixed with `b` when all digits (so it
/// stays an alphanumeric identifier), and cut to [`MAX_SLUG_LEN`] with a 7-character
/// hash of the whole branch name when longer, so two long branches never collide.
pub fn branch_slug(branch: &str) -> String {
    let lowered = branch.to_lowercase();
    let mut slug = String::with_capacity(lowered.len());
    let mut in_run = false;
    for c in lowered.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
            slug.push(c);
            in_run = false;
        } else if !in_run {
            slug.push('-');
            in_run = true;
        }
    }
    let mut slug = slug.trim_matches('-').to_string();
    if slug.is_empty() {
        slug = "branch".to_string();
    }
    if slug.bytes().all(|b| b.is_ascii_digit()) {
        slug.insert(0, 'b');
    }
    if slug.len() > MAX_SLUG_LEN {
        let mut hasher = Sha256Hasher::new();
        hasher.update(branch.as_bytes());
        let hash = hasher.finish();
        let keep = MAX_SLUG_LEN - 8;
        let head = slug[..keep].trim_end_matches('-');
        slug = format!("{head}-{}", &hash.hex()[..7]);
    }
    slug
}

/// True for `X.Y.Z` with no prerelease and no build metadata.
pub fn is_stable(version: &Version) -> bool {
    version.pre.is_empty() && version.build.is_empty()
}

/// Sorts by semver precedence, lowest first.
pub fn sort_by_precedence(versions: &mut [Version]) {
    versions.sort_by(|a, b| a.cmp_precedence(b).then_with(|| a.cmp(b)));
}

/// The highest stable version, by precedence.
pub fn latest_stable<'a>(versions: impl IntoIterator<Item = &'a Version>) -> Option<&'a Version> {
    versions
        .into_iter()
        .filter(|v| is_stable(v))
        .max_by(|a, b| a.cmp_precedence(b))
}

/// The highest version of all, by precedence.
pub fn latest<'a>(versions: impl IntoIterator<Item = &'a Version>) -> Option<&'a Version> {
    versions.into_iter().max_by(|a, b| {
        a.cmp_precedence(b)
            .then_with(|| a.build.cmp(&b.build))
            .then(Ordering::Equal)
    })
}

/// The `<n>` of `base-<slug>.<n>`, if `version` is a prerelease of that line.
pub fn prerelease_number(version: &Version, base: &Version, slug: &str) -> Option<u64> {
    if (version.major, version.minor, version.patch) != (base.major, base.minor, base.patch)
        || !version.build.is_empty()
    {
        return None;
    }
    let (head, number) = version.pre.as_str().rsplit_once('.')?;
    if head != slug || number.starts_with('0') && number != "0" {
        return None;
    }
    number.parse().ok()
}

/// `base-<slug>.<n>` with `n` one more than the highest already in `existing`.
pub fn next_prerelease(base: &Version, slug: &str, existing: &[Version]) -> Version {
    let highest = existing
        .iter()
        .filter_map(|v| prerelease_number(v, base, slug))
        .max()
        .unwrap_or(0);
    let mut version = Version::new(base.major, base.minor, base.patch);
    version.pre = Prerelease::new(&format!("{slug}.{}", highest + 1))
        .expect("a slug and a number make a valid prerelease");
    version
}

/// The prerelease after `taken` on its own line (`base-<slug>.<n>`) that none of
/// `existing` (nor `taken`) holds: what a publish that lost its number to another
/// takes next.
pub fn next_prerelease_past(taken: &Version, existing: &[Version]) -> Version {
    let slug = taken
        .pre
        .as_str()
        .rsplit_once('.')
        .map(|(slug, _)| slug)
        .unwrap_or_default();
    let base = Version::new(taken.major, taken.minor, taken.patch);
    let mut held = existing.to_vec();
    held.push(taken.clone());
    next_prerelease(&base, slug, &held)
}

/// The next stable version: the last stable bumped, or `initial` for a first release.
pub fn next_stable(existing: &[Version], bump: Bump, initial: &Version) -> Version {
    match latest_stable(existing) {
        Some(last) => bump.apply(last),
        None => initial.clone(),
    }
}

/// Where a build publishes: the stable line, or a branch's prerelease line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Channel {
    Stable,
    Prerelease { slug: String },
}

/// The version a build gets on `channel`, given the versions that exist.
pub fn next_version(
    existing: &[Version],
    bump: Bump,
    initial: &Version,
    channel: &Channel,
) -> Version {
    let stable = next_stable(existing, bump, initial);
    match channel {
        Channel::Stable => stable,
        Channel::Prerelease { slug } => next_prerelease(&stable, slug, existing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prerelease_past_a_lost_number_is_past_every_number_held_on_its_line() {
        let taken = v("1.2.0-feat.3");
        let held = [v("1.2.0-feat.4"), v("1.2.0-other.9"), v("1.3.0-feat.7")];
        assert_eq!(next_prerelease_past(&taken, &held), v("1.2.0-feat.5"));
        assert_eq!(next_prerelease_past(&taken, &[]), v("1.2.0-feat.4"));
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn slugs_follow_the_design_rules() {
        assert_eq!(branch_slug("feature/Add-GPU_pool"), "feature-add-gpu-pool");
        assert_eq!(branch_slug("release.1.2"), "release-1-2");
        assert_eq!(branch_slug("  //weird__name//  "), "weird-name");
        assert_eq!(branch_slug("1234"), "b1234");
        assert_eq!(branch_slug("12/34"), "12-34");
        assert_eq!(branch_slug("///"), "branch");
        assert_eq!(branch_slug("Ünïcode-branch"), "n-code-branch");
    }

    #[test]
    fn long_slugs_are_cut_with_a_hash_so_they_stay_distinct() {
        let a = branch_slug(&format!("{}-a", "x".repeat(60)));
        let b = branch_slug(&format!("{}-b", "x".repeat(60)));
        assert!(a.len() <= MAX_SLUG_LEN && b.len() <= MAX_SLUG_LEN);
        assert_ne!(a, b);
        assert!(Prerelease::new(&format!("{a}.1")).is_ok());
    }

    #[test]
    fn every_slug_makes_a_valid_prerelease() {
        for branch in [
            "a",
            "UPPER",
            "dots.and_underscores",
            "0",
            "007",
            "-x-",
            "a/b/c",
            "ß",
        ] {
            let slug = branch_slug(branch);
            Prerelease::new(&format!("{slug}.1")).unwrap_or_else(|_| panic!("{branch}"));
        }
    }

    #[test]
    fn prerelease_numbers_go_past_nine_by_precedence() {
        let base = v("1.3.0");
        let existing: Vec<Version> = (1..=9).map(|n| v(&format!("1.3.0-feat.{n}"))).collect();
        let next = next_prerelease(&base, "feat", &existing);
        assert_eq!(next, v("1.3.0-feat.10"));
        assert_eq!(next.cmp_precedence(&existing[8]), Ordering::Greater);
    }

    #[test]
    fn prerelease_numbers_are_per_base_and_slug() {
        let existing = vec![v("1.3.0-feat.4"), v("1.3.0-other.9"), v("1.2.0-feat.7")];
        assert_eq!(
            next_prerelease(&v("1.3.0"), "feat", &existing),
            v("1.3.0-feat.5")
        );
        assert_eq!(
            next_prerelease(&v("1.4.0"), "feat", &existing),
            v("1.4.0-feat.1")
        );
        // A slug that is a prefix of another is its own line.
        assert_eq!(
            next_prerelease(&v("1.3.0"), "fea", &existing),
            v("1.3.0-fea.1")
        );
    }

    #[test]
    fn next_stable_bumps_the_highest_stable_by_precedence() {
        let existing = vec![v("1.9.0"), v("1.10.0"), v("2.0.0-rc.1")];
        assert_eq!(
            next_stable(&existing, Bump::Patch, &v("0.1.0")),
            v("1.10.1")
        );
        assert_eq!(
            next_stable(&existing, Bump::Minor, &v("0.1.0")),
            v("1.11.0")
        );
        assert_eq!(next_stable(&existing, Bump::Major, &v("0.1.0")), v("2.0.0"));
        assert_eq!(next_stable(&[], Bump::Major, &v("0.1.0")), v("0.1.0"));
    }

    #[test]
    fn channel_picks_stable_or_prerelease() {
        let existing = vec![v("1.0.0"), v("1.0.1-x.1")];
        let pre = Channel::Prerelease { slug: "x".into() };
        assert_eq!(
            next_version(&existing, Bump::Patch, &v("0.1.0"), &Channel::Stable),
            v("1.0.1")
        );
        assert_eq!(
            next_version(&existing, Bump::Patch, &v("0.1.0"), &pre),
            v("1.0.1-x.2")
        );
    }
}
