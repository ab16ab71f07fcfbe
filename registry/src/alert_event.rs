//! The words of alerts: the events a webhook may want, and the JSON an event
//! carries (with a Slack-compatible `text`). A leaf: the configuration, the
//! database and the delivery task all speak it.

/// What an alert is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A stack's last attempt failed (it had not).
    Failed,
    /// A stack drifted (it had not).
    Drifted,
    /// No receipt from a customer for the configured time.
    Silent,
    /// A stack fell behind: a newer stable version was published, or a rollback.
    Behind,
}

impl Event {
    pub const ALL: [Event; 4] = [Event::Failed, Event::Drifted, Event::Silent, Event::Behind];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::Failed => "failed",
            Event::Drifted => "drifted",
            Event::Silent => "silent",
            Event::Behind => "behind",
        }
    }
}

impl std::str::FromStr for Event {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Event::ALL
            .into_iter()
            .find(|e| e.as_str() == text)
            .ok_or_else(|| {
                format!("`{text}` is not an alert event; the events are `failed`, `drifted`, `silent` and `behind`")
            })
    }
}

/// `failed,drifted` as events, each once.
pub fn parse_events(text: &str) -> Result<Vec<Event>, String> {
    let mut events: Vec<Event> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let event: Event = part.parse()?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    if events.is_empty() {
        return Err(
            "no alert event given; name some of `failed`, `drifted`, `silent`, `behind`".into(),
        );
    }
    Ok(events)
}

/// A webhook address: `http://` or `https://`, nothing else.
pub fn check_webhook(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !url.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(format!(
            "webhook `{url}` is not an `http://` or `https://` address"
        )),
    }
}

/// Slack wants `&`, `<` and `>` escaped in `text`; nothing else.
fn slack(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The JSON an event carries.
pub struct Body<'a> {
    pub event: Event,
    pub customer: &'a str,
    pub stack: Option<&'a str>,
    pub version: Option<String>,
    pub receipt: Option<&'a str>,
    pub at: &'a str,
    pub reason: Option<String>,
}

impl Body<'_> {
    pub fn to_json(&self) -> String {
        let what = match (self.stack, &self.version) {
            (Some(stack), Some(v)) => format!("{stack} {v} "),
            (Some(stack), None) => format!("{stack} "),
            _ => String::new(),
        };
        let mut text = format!("{}: {what}{}", self.customer, self.event.as_str());
        if let Some(reason) = &self.reason {
            text.push_str(": ");
            text.push_str(reason);
        }
        serde_json::json!({
            "event": self.event.as_str(),
            "customer": self.customer,
            "stack": self.stack,
            "version": self.version,
            "receipt": self.receipt,
            "at": self.at,
            "reason": self.reason,
            "text": slack(&text),
        })
        .to_string()
    }
}
