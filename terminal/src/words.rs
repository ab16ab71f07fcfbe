//! Counted nouns, one way everywhere: `1 customer`, `2 customers`, `0 customers`.

/// `n` and `noun`, plural unless `n` is one: `count(1, "customer")` is `1 customer`,
/// `count(3, "pass")` is `3 passes`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {}", counted(n, noun))
}

/// `noun` as it follows the number `n`: itself for one, else its plural.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        noun.to_string()
    } else {
        plural(noun)
    }
}

/// The plural of an English noun the programs count (regular ones: `customer`,
/// `pass`, `match`, `dependency`).
fn plural(noun: &str) -> String {
    let vowel_before_y = noun
        .strip_suffix('y')
        .and_then(|stem| stem.chars().last())
        .is_some_and(|c| "aeiou".contains(c));
    if ["s", "sh", "ch", "x", "z"]
        .iter()
        .any(|end| noun.ends_with(end))
    {
        format!("{noun}es")
    } else if let (Some(stem), false) = (noun.strip_suffix('y'), vowel_before_y) {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "customer"), "1 customer");
        assert_eq!(count(0, "customer"), "0 customers");
        assert_eq!(count(2, "customer"), "2 customers");
        assert_eq!(count(3, "pass"), "3 passes");
        assert_eq!(count(2, "dependency"), "2 dependencies");
        assert_eq!(count(2, "key"), "2 keys");
        assert_eq!(count(1, "file"), "1 file");
    }
}
