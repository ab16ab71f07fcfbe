//! Lines in `stackpack.toml` and `stack.toml`, for findings that name `file:line`.
//! The configuration is read with serde, which keeps no positions; these find the
//! line of a table, a key or a quoted name in the text, and fall back to the table's
//! line (or 0, "the file") when the text is written in a way they do not follow.

/// The 1-based line of the table header `[name]` (`[releases.env]`, also written
/// `[releases."env"]`), or 0.
pub fn table_line(text: &str, path: &[&str]) -> usize {
    text.lines()
        .position(|line| {
            let line = line.trim();
            let Some(inner) = line.strip_prefix('[').and_then(|l| l.split(']').next()) else {
                return false;
            };
            let parts: Vec<String> = inner
                .split('.')
                .map(|p| p.trim().trim_matches('"').to_string())
                .collect();
            parts == path
        })
        .map_or(0, |i| i + 1)
}

/// The first line at or after `from` (1-based; 0 reads from the top) and before the
/// next table header that holds `needle`, or `from`.
pub fn line_in_table(text: &str, from: usize, needle: &str) -> usize {
    let skip = from.max(1);
    for (i, line) in text.lines().enumerate().skip(skip - 1) {
        let trimmed = line.trim_start();
        if i + 1 > skip && trimmed.starts_with('[') && !trimmed.starts_with("[\"") {
            break;
        }
        if line.contains(needle) {
            return i + 1;
        }
    }
    from
}

/// The line of a key `name = …` in the table starting at `from`.
pub fn key_line(text: &str, from: usize, name: &str) -> usize {
    let skip = from.max(1);
    for (i, line) in text.lines().enumerate().skip(skip - 1) {
        let trimmed = line.trim_start();
        if i + 1 > skip && trimmed.starts_with('[') {
            break;
        }
        let key = trimmed
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"');
        if trimmed.contains('=') && key == name {
            return i + 1;
        }
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "registry = \"x\"\n\n[releases.env]\nstacks = [\n  \"network\",\n  \"cluster\",\n]\n\n[releases.\"other\"]\nstacks = [\"cluster\"]\n";

    #[test]
    fn tables_keys_and_names_are_found_by_line() {
        assert_eq!(table_line(TEXT, &["releases", "env"]), 3);
        assert_eq!(table_line(TEXT, &["releases", "other"]), 9);
        assert_eq!(table_line(TEXT, &["releases", "none"]), 0);
        assert_eq!(line_in_table(TEXT, 3, "\"cluster\""), 6);
        assert_eq!(line_in_table(TEXT, 9, "\"cluster\""), 10);
        assert_eq!(line_in_table(TEXT, 3, "\"gone\""), 3);
        assert_eq!(key_line(TEXT, 3, "stacks"), 4);
        assert_eq!(key_line(TEXT, 0, "registry"), 1);
    }
}
