//! Server-rendered HTML: every page is a [`maud`] template ([`html!`]), which
//! escapes every value it is given unless it is already [`Markup`]; every page goes
//! through [`page`]. No script and no external asset: the style sheet is inline,
//! and every state has a word beside its colour.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::PreEscaped;
pub use maud::{html, Markup};

/// A sentence for an element's content, escaped, with what it quotes in backticks
/// (a command, a name: the CLI's and the API's way) shown as code, as the pages do
/// everywhere: no literal backtick reaches a page. A backtick without its pair is
/// kept.
pub fn prose(text: &str) -> Markup {
    let parts: Vec<&str> = text.split('`').collect();
    let last = parts.len() - 1;
    html! {
        @for (i, part) in parts.iter().enumerate() {
            @if i % 2 == 0 {
                (part)
            } @else if i == last {
                // The last backtick had no pair.
                "`" (part)
            } @else {
                code { (part) }
            }
        }
    }
}

/// Percent-encodes one path segment or query value: RFC 3986's unreserved
/// characters stay, every other byte is `%XX` (the `percent-encoding` crate, through
/// the one helper the AWS client and the OCI client use too).
pub fn url(text: &str) -> String {
    stackpack_aws::http::percent_encode(text)
}

/// A digest as people read it: `sha256:3f9a…c21e`.
pub fn short_digest(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algorithm, hex)) if hex.len() > 12 => {
            format!("{algorithm}:{}…{}", &hex[..4], &hex[hex.len() - 4..])
        }
        _ => digest.to_string(),
    }
}

/// How long ago `at` was, in words at one precision (`just now`, `12 min ago`,
/// `3 h ago`, `4 days ago`); `None` for a time that does not parse.
pub fn ago(at: &str, now: time::OffsetDateTime) -> Option<String> {
    let then =
        time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    let secs = (now - then).whole_seconds();
    Some(match secs {
        s if s < -60 => "in the future".to_string(),
        s if s < 60 => "just now".to_string(),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    })
}

/// The exact time, to the second, as every page writes it: `2026-12-02 16:22:06 UTC`.
pub fn exact(at: &str) -> Option<(String, String)> {
    use time::format_description::well_known::Rfc3339;
    let then = time::OffsetDateTime::parse(at, &Rfc3339).ok()?;
    let utc = then
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .ok()?;
    let machine = utc.format(&Rfc3339).ok()?;
    let human = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        utc.year(),
        u8::from(utc.month()),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second()
    );
    Some((machine, human))
}

/// A time as pages show it: how long ago, with the exact time on hover
/// (`<time datetime=… title=…>`); text that is not a time is shown as it is.
pub fn when(at: &str) -> Markup {
    let now = time::OffsetDateTime::now_utc();
    match (ago(at, now), exact(at)) {
        (Some(ago), Some((machine, human))) => html! {
            time datetime=(machine) title=(human) { (ago) }
        },
        _ => html! { (at) },
    }
}

/// A time as a duration up to now ("since 3 days"), the exact time on hover.
pub fn when_for(at: &str) -> Markup {
    let now = time::OffsetDateTime::now_utc();
    match (ago(at, now), exact(at)) {
        (Some(ago), Some((machine, human))) => {
            let text = match ago.strip_suffix(" ago") {
                Some(duration) => duration.to_string(),
                None => "a moment".to_string(),
            };
            html! { time datetime=(machine) title=(human) { (text) } }
        }
        _ => html! { (at) },
    }
}

/// A search box for an index page: `q`, named by `label`.
pub fn search_form(action: &str, label: &str, q: &str) -> Markup {
    html! {
        form.filters method="get" action=(action) role="search" {
            label { (label) input type="text" name="q" id="q" value=(q) size="40"; }
            button type="submit" id="search" { "Search" }
            " "
            a href=(action) { "Clear" }
        }
    }
}

/// The kinds of badge; each has its own colour, and always its own word.
#[derive(Clone, Copy)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Info,
}

/// A labelled badge: the word carries the meaning, the colour only helps.
pub fn badge(tone: Tone, text: &str) -> Markup {
    let class = match tone {
        Tone::Good => "good",
        Tone::Warn => "warn",
        Tone::Bad => "bad",
        Tone::Info => "info",
    };
    html! { span class={ "badge " (class) } { (text) } }
}

/// A muted word or sentence: a dash, "not set", "never".
pub fn muted(text: &str) -> Markup {
    html! { span.muted { (text) } }
}

/// Text in the monospaced face: an id, a key, a digest.
pub fn mono(text: &str) -> Markup {
    html! { span.mono { (text) } }
}

/// A digest, shortened, whole in its title.
pub fn digest(text: &str) -> Markup {
    html! { span.mono title=(text) { (short_digest(text)) } }
}

/// Parts shown one after another with `separator` between them (`<br>` for
/// [`br`]).
pub fn joined(parts: &[Markup], separator: &Markup) -> Markup {
    html! {
        @for (i, part) in parts.iter().enumerate() {
            @if i > 0 { (separator) }
            (part)
        }
    }
}

/// A line break, as a separator for [`joined`].
pub fn br() -> Markup {
    html! { br; }
}

/// A table of headers and rows of cells.
pub fn table(headers: &[&str], rows: &[Vec<Markup>], id: &str) -> Markup {
    html! {
        table id=(id) {
            thead { tr { @for h in headers { th scope="col" { (h) } } } }
            tbody {
                @for row in rows {
                    tr { @for cell in row { td { (cell) } } }
                }
            }
        }
    }
}

const STYLE: &str = r#"
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; align-items: center; gap: 1.5rem; padding: .6rem 1.5rem; background: #1d2330; color: #fff; }
header a { color: #fff; text-decoration: none; }
header .brand { font-weight: 600; }
header nav { margin-left: auto; }
main { max-width: 1280px; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
h1 { font-size: 1.4rem; margin: .6rem 0 .8rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
a { color: #1a56c4; }
table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef0f4; font-weight: 600; font-size: .85rem; text-transform: uppercase; letter-spacing: .02em; color: var(--muted); }
tbody tr:hover { background: #f3f6fc; }
td .mono { white-space: nowrap; }
td { overflow-wrap: break-word; }
td a, td .badge, td time, td code { white-space: nowrap; }
.why { font-size: .9em; overflow-wrap: anywhere; display: inline-block; min-width: 15rem; }
.why code { white-space: normal; overflow-wrap: anywhere; }
ul.state { background: #fff; border: 1px solid var(--line); padding: .6rem 1rem .6rem 2rem; margin: 0 0 1rem; }
ul.state li { margin: .15rem 0; overflow-wrap: anywhere; }
dl.facts dd { overflow-wrap: anywhere; }
svg.chart { background: #fff; border: 1px solid var(--line); max-width: 100%; height: auto; }
time { text-decoration: underline dotted; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9em; }
.badge { display: inline-block; padding: 0 .45rem; margin: 0 .25rem .15rem 0; border-radius: .6rem; font-size: .8rem; font-weight: 600; border: 1px solid; }
.badge.good { color: #135f2a; background: #e3f5e8; border-color: #9fd3ad; }
.badge.warn { color: #7a4b00; background: #fff3d6; border-color: #f0c96b; }
.badge.bad { color: #8c1c13; background: #fde6e4; border-color: #f0a49c; }
.badge.info { color: #24408e; background: #e6edfd; border-color: #a9bcef; }
form.filters { display: flex; flex-wrap: wrap; gap: .6rem 1.2rem; align-items: end; padding: .8rem 1rem; background: #fff; border: 1px solid var(--line); margin-bottom: 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
form.filters label.check { flex-direction: row; align-items: center; gap: .3rem; color: var(--ink); }
select, input[type=text], input[type=password] { font: inherit; padding: .25rem .4rem; border: 1px solid #b9bfcc; border-radius: .25rem; background: #fff; }
button { font: inherit; padding: .3rem .9rem; border: 1px solid #1a56c4; background: #1a56c4; color: #fff; border-radius: .25rem; cursor: pointer; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1.2rem; background: #fff; border: 1px solid var(--line); padding: .8rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.muted { color: var(--muted); }
.summary { margin: .2rem 0 .8rem; color: var(--muted); }
.pager { margin: .8rem 0; display: flex; gap: 1rem; }
.login { max-width: 26rem; margin: 4rem auto; background: #fff; border: 1px solid var(--line); padding: 1.5rem; }
.login input { width: 100%; margin: .4rem 0 1rem; }
.error { color: #8c1c13; background: #fde6e4; border: 1px solid #f0a49c; padding: .5rem .8rem; }
"#;

/// A whole page. `signed_in` adds the navigation and the sign-out link.
pub fn page(title: &str, signed_in: bool, body: Markup) -> Markup {
    html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Stackpack support" }
                // The style sheet is a constant of this file: nothing of a request's in it.
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a.brand href="/ui" { "Stackpack support" }
                    @if signed_in {
                        nav {
                            a href="/ui" { "Fleet" } " · "
                            a href="/ui/customers" { "Customers" } " · "
                            a href="/ui/stacks" { "Stacks" } " · "
                            a href="/ui/releases" { "Releases" } " · "
                            a href="/ui/rollouts" { "Rollouts" } " · "
                            a href="/ui/logout" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// A page as a response, never cached: it shows what one signed-in person may see.
pub fn respond(status: StatusCode, html: Markup) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "same-origin"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ),
        ],
        html.into_string(),
    )
        .into_response()
}

/// A page that says what went wrong, in the layout.
pub fn error_page(status: StatusCode, message: &str, signed_in: bool) -> Response {
    let body = html! {
        h1 { (status.canonical_reason().unwrap_or("Error")) }
        p.error { (prose(message)) }
        p { a href="/ui" { "Back to the fleet" } }
    };
    respond(status, page("Error", signed_in, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_shows_what_backticks_quote_as_code_and_escapes_the_rest() {
        let prose = |text: &str| prose(text).into_string();
        assert_eq!(
            prose("run `stackpack promote` <now>"),
            "run <code>stackpack promote</code> &lt;now&gt;"
        );
        assert_eq!(
            prose("`a` and `<b>`"),
            "<code>a</code> and <code>&lt;b&gt;</code>"
        );
        assert_eq!(prose("no pair ` here"), "no pair ` here");
    }

    #[test]
    fn times_read_as_how_long_ago_at_one_precision_with_the_exact_time_beside() {
        let now = time::OffsetDateTime::parse(
            "2026-12-02T12:00:00Z",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        let ago = |at: &str| ago(at, now).unwrap();
        assert_eq!(ago("2026-12-02T11:59:30Z"), "just now");
        assert_eq!(ago("2026-12-02T11:48:00.499Z"), "11 min ago");
        assert_eq!(ago("2026-12-02T10:00:00Z"), "2 h ago");
        assert_eq!(ago("2026-11-29T12:00:00Z"), "3 days ago");
        assert_eq!(
            exact("2026-12-02T22:03:11.23Z").unwrap(),
            (
                "2026-12-02T22:03:11Z".into(),
                "2026-12-02 22:03:11 UTC".into()
            )
        );
        assert_eq!(when("<not a time>").into_string(), "&lt;not a time&gt;");
    }

    #[test]
    fn markup_in_values_is_escaped() {
        let hostile = "<script>alert('x')</script> & \"q\"";
        assert_eq!(
            html! { p title=(hostile) { (hostile) } }.into_string(),
            "<p title=\"&lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;q&quot;\">\
             &lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;q&quot;</p>"
        );
        assert_eq!(url("a b/c?d"), "a%20b%2Fc%3Fd");
        assert_eq!(
            short_digest("sha256:0123456789abcdef0123"),
            "sha256:0123…0123"
        );
    }
}
