//! Maintenance windows: `Sat 02:00-06:00 UTC`, `Mon-Fri 22:00-23:30 UTC`,
//! `daily 01:00-03:00 UTC`. A window whose end is before its start runs past
//! midnight into the next day; the days name the day it starts on.

use time::OffsetDateTime;

/// A parsed `[sync] window`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Days the window starts on, Monday = 0.
    days: [bool; 7],
    /// Minutes after midnight UTC.
    start: u32,
    end: u32,
}

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

fn day(text: &str) -> Option<usize> {
    DAYS.iter().position(|d| d.eq_ignore_ascii_case(text))
}

fn minutes(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 24 && m < 60 && h * 60 + m <= 24 * 60).then_some(h * 60 + m)
}

impl std::str::FromStr for Window {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let wrong = || {
            format!("`{text}` is not a maintenance window: write `DAYS HH:MM-HH:MM UTC`, such as `Sat 02:00-06:00 UTC`, `Mon-Fri 22:00-23:30 UTC` or `daily 01:00-03:00 UTC`")
        };
        let parts: Vec<&str> = text.split_whitespace().collect();
        let [days_text, times, zone] = parts.as_slice() else {
            return Err(wrong());
        };
        if !zone.eq_ignore_ascii_case("UTC") {
            return Err(format!(
                "the maintenance window `{text}` is in `{zone}`: windows are written in UTC"
            ));
        }
        let mut days = [false; 7];
        for item in days_text.split(',') {
            if item.eq_ignore_ascii_case("daily") {
                days = [true; 7];
            } else if let Some((from, to)) = item.split_once('-') {
                let (from, to) = (day(from).ok_or_else(wrong)?, day(to).ok_or_else(wrong)?);
                let mut d = from;
                loop {
                    days[d] = true;
                    if d == to {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            } else {
                days[day(item).ok_or_else(wrong)?] = true;
            }
        }
        let (start, end) = times.split_once('-').ok_or_else(wrong)?;
        let (start, end) = (
            minutes(start).ok_or_else(wrong)?,
            minutes(end).ok_or_else(wrong)?,
        );
        if start == end {
            return Err(format!("the maintenance window `{text}` is empty"));
        }
        Ok(Window { days, start, end })
    }
}

impl Window {
    /// Whether `now` is inside the window.
    pub fn contains(&self, now: OffsetDateTime) -> bool {
        let now = now.to_offset(time::UtcOffset::UTC);
        let today = now.weekday().number_days_from_monday() as usize;
        let yesterday = (today + 6) % 7;
        let minute = now.hour() as u32 * 60 + now.minute() as u32;
        if self.start < self.end {
            self.days[today] && (self.start..self.end).contains(&minute)
        } else {
            (self.days[today] && minute >= self.start)
                || (self.days[yesterday] && minute < self.end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn windows_are_read_and_hold_their_days_and_hours() {
        let sat: Window = "Sat 02:00-06:00 UTC".parse().unwrap();
        assert!(sat.contains(datetime!(2026-12-05 03:00 UTC)));
        assert!(!sat.contains(datetime!(2026-12-05 06:00 UTC)));
        assert!(!sat.contains(datetime!(2026-12-06 03:00 UTC)));
        let weekdays: Window = "Mon-Fri 22:00-23:30 UTC".parse().unwrap();
        assert!(weekdays.contains(datetime!(2026-12-02 22:15 UTC)));
        assert!(!weekdays.contains(datetime!(2026-12-05 22:15 UTC)));
        let daily: Window = "daily 01:00-03:00 UTC".parse().unwrap();
        assert!(daily.contains(datetime!(2026-12-06 01:30 UTC)));
        assert!(!daily.contains(datetime!(2026-12-06 04:00 UTC)));
        let night: Window = "Fri 23:00-02:00 UTC".parse().unwrap();
        assert!(night.contains(datetime!(2026-12-05 01:00 UTC)));
        assert!(!night.contains(datetime!(2026-12-06 01:00 UTC)));
        assert!("Sat 02:00-06:00 CET".parse::<Window>().is_err());
        assert!("weekends".parse::<Window>().is_err());
    }
}
