//! Issue 39 §6: one timestamp precision on screen. A receipt keeps its finish time to
//! the millisecond (signed, so JSON shows it as written); the tables `status` and
//! `receipts list` print every time to the second, as the registry's tables do.

use crate::common::{build_and_import, Runner, Vendor};

/// `2026-12-01T19:40:00.250Z`-like: a time with a fraction of a second.
fn has_fraction_of_a_second(text: &str) -> bool {
    text.as_bytes().windows(21).any(|w| {
        w[10] == b'T' && w[13] == b':' && w[16] == b':' && w[19] == b'.' && w[20].is_ascii_digit()
    })
}

#[test]
fn tables_show_times_to_the_second_and_json_keeps_the_signed_text() {
    let vendor = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    let json = runner.run(&["receipts", "list", "--json"]).ok().json();
    let finished = json["receipts"][0]["receipt"]["receipt"]["finishedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("{json}"))
        .to_string();
    assert!(has_fraction_of_a_second(&finished), "{finished}");
    let shown = format!("{}Z", &finished[..19]);
    for args in [&["receipts", "list"][..], &["status"][..]] {
        let table = runner.run(args).ok().stdout;
        assert!(table.contains(&shown), "`{args:?}`:\n{table}");
        assert!(!has_fraction_of_a_second(&table), "`{args:?}`:\n{table}");
    }
}
