//! HTTP handlers, one file per action under `<resource>/<action>.rs`, and four
//! helpers every handler shares: the request [context](mod@context) (who asks, may they),
//! the [`routing`], the [`observe`] middleware (metrics and access log), and the
//! [`body`] helpers.

pub mod base;
pub mod blobs;
pub mod body;
pub mod context;
pub mod health;
pub mod ledger;
pub mod manifests;
pub mod observe;
pub mod referrers;
pub mod routing;
pub mod tags;
pub mod token;
pub mod ui;
pub mod uploads;

pub use body::{discard, drain, empty, read_limited, DRAIN_CAP};
pub use context::{context, Ctx};
pub use routing::router;
