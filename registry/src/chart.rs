//! Adoption drawn: customers on each version of a stack over days or weeks, as a
//! stacked bar chart in SVG made on the server (the stack page shows it, `adoption
//! --format svg` prints it). No script: each bar's part names its version and count
//! in a `<title>`, and the legend names every version, so colour never says
//! anything alone.

use maud::{html, Markup};
use time::{Date, Duration};

use crate::api::Adoption;

const WIDTH: f64 = 960.0;
const PLOT_HEIGHT: f64 = 220.0;
const LEFT: f64 = 48.0;
const TOP: f64 = 28.0;
const LEGEND_ROW: f64 = 18.0;
/// Buckets drawn at most: the latest ones.
const MAX_BARS: usize = 180;

/// Colours for versions, oldest first; they repeat past the last, the legend and
/// titles still tell them apart.
const PALETTE: [&str; 8] = [
    "#9aa5b8", "#5b8def", "#2f9e6b", "#e0a23a", "#c4513d", "#8a5cc7", "#2aa1b3", "#b5527f",
];

/// Every bucket from the first point to `today`'s, each with what customers ran at
/// its end (a point holds until the next), at most [`MAX_BARS`], the latest.
fn buckets(
    a: &Adoption,
    today: Date,
) -> Vec<(String, &std::collections::BTreeMap<String, u64>, u64)> {
    let step = if a.bucket == "week" { 7 } else { 1 };
    let parse = |at: &str| {
        Date::parse(
            at,
            time::macros::format_description!("[year]-[month]-[day]"),
        )
        .ok()
    };
    let mut out = Vec::new();
    let mut points = a.points.iter().peekable();
    let Some(first) = a.points.first().and_then(|p| parse(&p.at)) else {
        return out;
    };
    let mut current = None;
    let mut day = first;
    let last = a
        .points
        .last()
        .and_then(|p| parse(&p.at))
        .map_or(today, |l| l.max(today));
    while day <= last {
        while let Some(p) = points.peek() {
            if parse(&p.at).is_some_and(|at| at <= day) {
                current = points.next();
            } else {
                break;
            }
        }
        if let Some(p) = current {
            out.push((day.to_string(), &p.customers, p.total));
        }
        day += Duration::days(step);
    }
    let skip = out.len().saturating_sub(MAX_BARS);
    out.drain(..skip);
    out
}

/// One bar's part: one version's customers on one day.
struct Part<'a> {
    x: f64,
    top: f64,
    height: f64,
    colour: usize,
    version: &'a str,
    at: &'a str,
    count: u64,
    total: u64,
}

/// One stack's chart as an SVG group at `y`; returns it and its height. Elements
/// are closed (`<rect …></rect>`), as XML wants: `adoption --format svg` prints it
/// as a file of its own.
fn stack_chart(a: &Adoption, y: f64, today: Date) -> (Markup, f64) {
    let bars = buckets(a, today);
    let versions: Vec<String> = a.versions.iter().map(ToString::to_string).collect();
    let peak = bars.iter().map(|b| b.2).max().unwrap_or(0).max(1);
    let plot_width = WIDTH - LEFT - 12.0;
    let bar = plot_width / bars.len().max(1) as f64;
    let base = TOP + PLOT_HEIGHT;
    let legend_y = base + 34.0;
    let one = |v: f64| format!("{v:.1}");
    let mut parts = Vec::new();
    for (i, (at, customers, total)) in bars.iter().enumerate() {
        let x = LEFT + i as f64 * bar;
        let mut top = base;
        for (colour, version) in versions.iter().enumerate() {
            let Some(&count) = customers.get(version).filter(|c| **c > 0) else {
                continue;
            };
            let height = count as f64 / peak as f64 * PLOT_HEIGHT;
            top -= height;
            parts.push(Part {
                x,
                top,
                height,
                colour,
                version,
                at,
                count,
                total: *total,
            });
        }
    }
    let group = html! {
        g transform={ "translate(0," (y) ")" } {
            text x=(LEFT) y="16" font-size="14" font-weight="600" {
                (a.stack) " — customers per version, by " (a.bucket)
            }
            line x1=(LEFT) y1=(base) x2=(WIDTH - 12.0) y2=(base) stroke="#5b6475" {}
            text x=(LEFT - 6.0) y=(TOP + 10.0) font-size="11" text-anchor="end" { (peak) }
            text x=(LEFT - 6.0) y=(base) font-size="11" text-anchor="end" { "0" }
            @for part in &parts {
                rect x=(one(part.x)) y=(one(part.top)) width=(one((bar - 1.0).max(0.5)))
                    height=(one(part.height)) fill=(PALETTE[part.colour % PALETTE.len()])
                    data-version=(part.version) {
                    title {
                        (part.at) ": " (part.count) " "
                        (if part.count == 1 { "customer" } else { "customers" })
                        " on " (part.version) " of " (part.total)
                    }
                }
            }
            @if let (Some(first), Some(last)) = (bars.first(), bars.last()) {
                text x=(LEFT) y=(base + 14.0) font-size="11" { (first.0) }
                text x=(WIDTH - 12.0) y=(base + 14.0) font-size="11" text-anchor="end" { (last.0) }
            }
            @for (v, version) in versions.iter().enumerate() {
                @let lx = LEFT + (v % 6) as f64 * 145.0;
                @let ly = legend_y + (v / 6) as f64 * LEGEND_ROW;
                rect x=(lx) y=(ly - 9.0) width="10" height="10" fill=(PALETTE[v % PALETTE.len()]) {}
                text x=(lx + 14.0) y=(ly) font-size="12" { (version) }
            }
        }
    };
    let rows = versions.len().div_ceil(6).max(1) as f64;
    (group, legend_y + rows * LEGEND_ROW + 8.0)
}

/// The charts of every stack in `adoption`, one under the other, as one SVG
/// element; `today` ends the time axis.
pub fn adoption_markup(adoption: &[Adoption], today: Date) -> Markup {
    let mut groups = Vec::new();
    let mut y = 0.0;
    for a in adoption {
        let (group, height) = stack_chart(a, y, today);
        groups.push(group);
        y += height;
    }
    if adoption.is_empty() {
        y = 40.0;
    }
    html! {
        svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img"
            viewBox={ "0 0 " (WIDTH) " " (y) } width=(WIDTH) height=(y)
            font-family="system-ui, sans-serif" {
            title { "Adoption: customers per version over time" }
            @for group in &groups { (group) }
            @if adoption.is_empty() {
                text x="12" y="24" font-size="13" { "No customer has reported a deployment yet." }
            }
        }
    }
}

/// [`adoption_markup`] as an SVG document.
pub fn adoption_svg(adoption: &[Adoption], today: Date) -> String {
    adoption_markup(adoption, today).into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::AdoptionPoint;

    #[test]
    fn a_chart_draws_each_bucket_until_today_with_every_version_named() {
        let point = |at: &str, counts: &[(&str, u64)]| AdoptionPoint {
            at: at.into(),
            customers: counts.iter().map(|(v, c)| (v.to_string(), *c)).collect(),
            total: counts.iter().map(|(_, c)| c).sum(),
        };
        let a = Adoption {
            stack: "data-plane<x>".into(),
            bucket: "day".into(),
            versions: vec!["1.0.0".parse().unwrap(), "1.1.0".parse().unwrap()],
            points: vec![
                point("2026-03-01", &[("1.0.0", 2)]),
                point("2026-03-03", &[("1.0.0", 1), ("1.1.0", 1)]),
            ],
        };
        let today = Date::from_calendar_date(2026, time::Month::March, 4).unwrap();
        let svg = adoption_svg(&[a], today);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(
            svg.contains("data-plane&lt;x&gt;"),
            "the stack's name is escaped"
        );
        // Four days drawn: 1 and 2 March show two customers on 1.0.0, 3 and 4 one each.
        assert_eq!(svg.matches("data-version=\"1.0.0\"").count(), 4);
        assert_eq!(svg.matches("data-version=\"1.1.0\"").count(), 2);
        assert!(svg.contains("<title>2026-03-04: 1 customer on 1.1.0 of 2</title>"));
        assert!(
            svg.contains(">1.1.0</text>"),
            "the legend names the version"
        );
    }
}
