//! Version constraints (`>= 1.5, < 2.0`, `~> 5.0`, `!= 1.3.0`, `1.2.3`) read as sets of
//! versions, so that two constraints are compared by which versions they allow rather
//! than by their text.

/// A version as `(major, minor, patch)`; prereleases are not considered.
pub type Triple = (u64, u64, u64);

#[derive(Clone, Debug, PartialEq)]
enum Atom {
    Eq(Triple),
    NotEq(Triple),
    Gt(Triple),
    Ge(Triple),
    Lt(Triple),
    Le(Triple),
}

/// A parsed constraint: the versions that satisfy every atom.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    atoms: Vec<Atom>,
}

/// How the set of allowed versions moved from an old constraint to a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetChange {
    Same,
    /// Some version allowed before no longer is.
    Narrowed,
    /// Every version allowed before still is, and more are.
    Widened,
}

fn triple(text: &str) -> Option<(Triple, usize)> {
    let text = text.trim().trim_start_matches('v');
    // Drop any prerelease or build suffix.
    let core = text.split(['-', '+']).next()?;
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        nums[i] = p.trim().parse().ok()?;
    }
    Some(((nums[0], nums[1], nums[2]), parts.len()))
}

impl Constraint {
    /// Parses a constraint; `None` for text we cannot read.
    pub fn parse(text: &str) -> Option<Constraint> {
        let mut atoms = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (op, rest) = ["~>", ">=", "<=", "!=", ">", "<", "="]
                .iter()
                .find_map(|op| part.strip_prefix(op).map(|rest| (*op, rest)))
                .unwrap_or(("=", part));
            let (v, given) = triple(rest)?;
            match op {
                "=" => atoms.push(Atom::Eq(v)),
                "!=" => atoms.push(Atom::NotEq(v)),
                ">" => atoms.push(Atom::Gt(v)),
                ">=" => atoms.push(Atom::Ge(v)),
                "<" => atoms.push(Atom::Lt(v)),
                "<=" => atoms.push(Atom::Le(v)),
                _ => {
                    // `~> 1.2.3` allows `>= 1.2.3, < 1.3.0`; `~> 1.2` and `~> 1` allow
                    // `>= 1.2.0, < 2.0.0` and `>= 1.0.0, < 2.0.0`.
                    atoms.push(Atom::Ge(v));
                    let upper = match given {
                        3 => (v.0, v.1 + 1, 0),
                        _ => (v.0 + 1, 0, 0),
                    };
                    atoms.push(Atom::Lt(upper));
                }
            }
        }
        Some(Constraint { atoms })
    }

    /// Whether `version` (`1.15.5`, `v0.15.0-rc2`) satisfies the constraint; `None`
    /// when the version cannot be read.
    pub fn allows_version(&self, version: &str) -> Option<bool> {
        triple(version).map(|(v, _)| self.allows(v))
    }

    pub fn allows(&self, v: Triple) -> bool {
        self.atoms.iter().all(|a| match a {
            Atom::Eq(x) => v == *x,
            Atom::NotEq(x) => v != *x,
            Atom::Gt(x) => v > *x,
            Atom::Ge(x) => v >= *x,
            Atom::Lt(x) => v < *x,
            Atom::Le(x) => v <= *x,
        })
    }

    fn bounds(&self) -> impl Iterator<Item = Triple> + '_ {
        self.atoms.iter().map(|a| match a {
            Atom::Eq(x)
            | Atom::NotEq(x)
            | Atom::Gt(x)
            | Atom::Ge(x)
            | Atom::Lt(x)
            | Atom::Le(x) => *x,
        })
    }
}

fn succ(v: Triple) -> Triple {
    (v.0, v.1, v.2 + 1)
}

/// Compares the sets of versions two constraints allow; `None` stands for "no
/// constraint" (every version). Membership only changes at the constraints' bounds,
/// so testing each bound, the version just after it, and `0.0.0` is exact.
pub fn compare(old: Option<&Constraint>, new: Option<&Constraint>) -> SetChange {
    let mut points: Vec<Triple> = vec![(0, 0, 0)];
    for c in old.iter().chain(new.iter()) {
        for b in c.bounds() {
            points.push(b);
            points.push(succ(b));
        }
    }
    // Between two bounds that are one minor or major apart, the next patch is in the
    // segment; the next minor and major cover `~>` bounds that skip ahead.
    let extra: Vec<Triple> = points
        .iter()
        .flat_map(|p| [(p.0, p.1 + 1, 0), (p.0 + 1, 0, 0)])
        .collect();
    points.extend(extra);
    let allows = |c: Option<&Constraint>, v: Triple| c.is_none_or(|c| c.allows(v));
    let lost = points.iter().any(|&v| allows(old, v) && !allows(new, v));
    let gained = points.iter().any(|&v| !allows(old, v) && allows(new, v));
    match (lost, gained) {
        (true, _) => SetChange::Narrowed,
        (false, true) => SetChange::Widened,
        (false, false) => SetChange::Same,
    }
}

/// [`compare`] on constraint text. Unreadable text counts as a change when it differs.
pub fn compare_text(old: Option<&str>, new: Option<&str>) -> SetChange {
    let parse = |t: Option<&str>| t.map(Constraint::parse);
    match (parse(old), parse(new)) {
        (Some(None), _) | (_, Some(None)) => {
            let norm = |t: Option<&str>| t.map(|t| t.split_whitespace().collect::<String>());
            if norm(old) == norm(new) {
                SetChange::Same
            } else {
                SetChange::Narrowed
            }
        }
        (o, n) => compare(o.flatten().as_ref(), n.flatten().as_ref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_version_is_checked_against_required_version() {
        let constraint = Constraint::parse(">= 1.5.0").unwrap();
        assert_eq!(constraint.allows_version("1.15.5"), Some(true));
        assert_eq!(constraint.allows_version("v0.15.0-rc2"), Some(false));
        assert_eq!(constraint.allows_version("not a version"), None);
    }

    #[test]
    fn compares_as_sets() {
        use SetChange::*;
        assert_eq!(compare_text(Some(">= 1.0"), Some(">=1.0.0")), Same);
        assert_eq!(compare_text(Some("~> 5.0"), Some(">= 5.0, < 6.0")), Same);
        assert_eq!(compare_text(Some(">= 4.0"), Some(">= 5.0")), Narrowed);
        assert_eq!(compare_text(Some(">= 5.0"), Some(">= 4.0")), Widened);
        assert_eq!(compare_text(Some("~> 5.0"), Some("~> 5.46")), Narrowed);
        assert_eq!(
            compare_text(Some("~> 5.46"), Some(">= 5.46, < 7.0")),
            Widened
        );
        assert_eq!(compare_text(None, Some(">= 1.3")), Narrowed);
        assert_eq!(compare_text(Some(">= 1.3"), None), Widened);
        assert_eq!(
            compare_text(Some(">= 1.3"), Some(">= 1.3, != 1.5.0")),
            Narrowed
        );
        assert_eq!(compare_text(Some("~> 1.2.3"), Some("~> 1.2.4")), Narrowed);
        assert_eq!(compare_text(Some("1.2.3"), Some("= 1.2.3")), Same);
    }
}
