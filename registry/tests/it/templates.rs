//! The support pages are built only with `maud` templates, which escape every value
//! they are given: no page markup from `format!`, `write!` or `push_str`, and no
//! `PreEscaped` but the vetted ones below. The hostile values in `ui.rs` test what
//! the pages show; this guards how they are built, so a page added by hand later
//! cannot escape (or forget to) on its own.
//!
//! It reads the sources as text: it skips comments and each file's
//! `#[cfg(test)]` module, and flags a string literal holding a tag (`<` then a
//! letter, `/` or `!`) unless it is inside `html! { … }`, where a literal is text
//! and escaped like any value.

use std::path::{Path, PathBuf};

/// The `PreEscaped` allowed: (file, the exact call, why it is safe).
const VETTED: &[(&str, &str, &str)] = &[
    (
        "controllers/ui/html.rs",
        "use maud::PreEscaped;",
        "the import of the one use below",
    ),
    (
        "controllers/ui/html.rs",
        "PreEscaped(STYLE)",
        "STYLE is the page's style sheet, a constant of that file with nothing of a request in it",
    ),
];

/// The files that build pages: every `/ui` controller and the adoption chart the
/// stack page draws.
fn page_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<PathBuf> = std::fs::read_dir(src.join("controllers/ui"))
        .expect("registry/src/controllers/ui")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.push(src.join("chart.rs"));
    files.sort();
    files
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// A string literal in code: where it starts, its text, and whether it is inside
/// an `html!` template.
struct Literal {
    line: usize,
    text: String,
    in_template: bool,
}

/// The code of `source` with comments and string literals blanked out (so what
/// is left is code only), and its string literals.
fn split(source: &str) -> (String, Vec<Literal>) {
    let chars: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut literals = Vec::new();
    // The open brackets, each marked when it opens an `html!` invocation.
    let mut brackets: Vec<bool> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += 2;
            continue;
        }
        let hashes_ahead = chars[i + 1..].iter().take_while(|d| **d == '#').count();
        let raw = c == 'r'
            && chars.get(i + 1 + hashes_ahead) == Some(&'"')
            && !identifier_char(chars[..i].last());
        if c == '"' || raw {
            let start_line = line;
            let mut hashes = 0;
            if raw {
                i += 1;
                while chars.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
            }
            i += 1; // the opening quote
            let mut text = String::new();
            while let Some(&d) = chars.get(i) {
                if !raw && d == '\\' {
                    text.push(d);
                    text.extend(chars.get(i + 1));
                    i += 2;
                    continue;
                }
                if d == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(d == '\n');
                text.push(d);
                i += 1;
            }
            literals.push(Literal {
                line: start_line,
                text,
                in_template: brackets.iter().any(|t| *t),
            });
            code.push_str("\"\"");
            continue;
        }
        // A character literal ('<', '\''), not a lifetime ('a).
        if c == '\'' && next == Some('\\') {
            i += 3;
            while chars.get(i).is_some_and(|d| *d != '\'') {
                i += 1;
            }
            i += 1;
            code.push_str("' '");
            continue;
        }
        if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i += 3;
            code.push_str("' '");
            continue;
        }
        match c {
            '(' | '[' | '{' => {
                let before = code.trim_end();
                brackets.push(before.ends_with("html!") && !before.ends_with("_html!"));
            }
            ')' | ']' | '}' => {
                brackets.pop();
            }
            _ => {}
        }
        line += usize::from(c == '\n');
        code.push(c);
        i += 1;
    }
    (code, literals)
}

fn identifier_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// A tag in text: `<` then a letter, `/` or `!`.
fn has_tag(text: &str) -> bool {
    text.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'<' && (w[1].is_ascii_alphabetic() || w[1] == b'/' || w[1] == b'!'))
}

/// What in one file builds markup outside the templates, one line each.
fn findings(file: &str, source: &str) -> Vec<String> {
    let source = match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => &source[..at],
        None => source,
    };
    let (code, literals) = split(source);
    let mut found: Vec<String> = literals
        .iter()
        .filter(|l| !l.in_template && has_tag(&l.text))
        .map(|l| {
            format!(
                "{file}:{}: markup in a string outside `html!`: {:?}",
                l.line, l.text
            )
        })
        .collect();
    for (n, text) in code.lines().enumerate() {
        let mut rest = text;
        while let Some(at) = rest.find("PreEscaped") {
            let vetted = VETTED
                .iter()
                .any(|(f, call, _)| *f == file && text.contains(call));
            if !vetted {
                found.push(format!(
                    "{file}:{}: `PreEscaped` not vetted (add it to VETTED with a reason, or let the template escape): {}",
                    n + 1,
                    text.trim()
                ));
            }
            rest = &rest[at + "PreEscaped".len()..];
        }
        if text.contains("impl Render") || text.contains("Render for") {
            found.push(format!(
                "{file}:{}: a `Render` of its own writes markup unescaped: {}",
                n + 1,
                text.trim()
            ));
        }
        let calls_esc = text
            .match_indices("esc(")
            .any(|(at, _)| !identifier_char(text[..at].chars().last().as_ref()));
        if calls_esc {
            found.push(format!(
                "{file}:{}: `esc(` escapes by hand; let the template escape: {}",
                n + 1,
                text.trim()
            ));
        }
    }
    found
}

#[test]
fn ui_pages_are_built_only_with_templates() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for path in page_sources() {
        let source = std::fs::read_to_string(&path).expect("a page's source");
        let file = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        found.extend(findings(&file, &source));
    }
    // Nothing else in the registry escapes by hand either.
    for path in rust_files(&src) {
        let source = std::fs::read_to_string(&path).expect("a source file");
        let (code, _) = split(&source);
        let file = path.strip_prefix(&src).expect("under src").display();
        for (n, text) in code.lines().enumerate() {
            let calls_esc = text
                .match_indices("esc(")
                .any(|(at, _)| !identifier_char(text[..at].chars().last().as_ref()));
            if calls_esc {
                found.push(format!("{file}:{}: `esc(`: {}", n + 1, text.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "pages must be built with `html!` templates:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_template_guard_finds_markup_built_by_hand_and_lets_templates_be() {
    let file = "controllers/ui/x.rs";
    let bad = [
        "fn a(n: &str) -> String { format!(\"<b>{n}</b>\") }",
        "fn a(out: &mut String) { out.push_str(\"</td>\"); }",
        "fn a(out: &mut String, n: &str) { let _ = write!(\n    out,\n    \"<a href=\\\"{n}\\\">\"\n); }",
        "fn a() -> Markup { html! { (PreEscaped(x)) } }",
        "fn a() -> String { r#\"<p class=\"x\">\"#.to_string() }",
        "fn a(n: &str) -> String { esc(n) }",
        "impl Render for X {}",
    ];
    for source in bad {
        assert!(!findings(file, source).is_empty(), "not found in: {source}");
    }
    let good = [
        "// <b>a comment</b>\nfn a(n: &str) -> Markup { html! { b { (n) } \"<i>text</i>\" } }",
        "fn a(n: &str) -> String { format!(\"{n} < 3\") }",
        "fn a<'a>(c: char) -> bool { c == '<' || c == '\\'' }",
        "fn a() {}\n#[cfg(test)]\nmod tests { const X: &str = \"<b>\"; }",
    ];
    for source in good {
        assert_eq!(findings(file, source), Vec::<String>::new(), "in: {source}");
    }
    assert!(findings("controllers/ui/html.rs", "style { (PreEscaped(STYLE)) }").is_empty());
}
