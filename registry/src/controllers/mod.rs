//! HTTP handlers, one file per action under `<resource>/<action>.rs`, and the
//! helpers every handler shares: the request [context](mod@context) (who asks, may
//! they; an extractor), the [`routing`] with the [`v2_paths`] it splits, the
//! [`observe`] middleware (metrics and access log), and the [`body`] helpers.
//! Handlers return `Result<impl IntoResponse>`: an [`Error`](crate::error::Error)
//! is the answer when they fail.

pub mod base;
pub mod blobs;
pub mod body;
pub mod context;
pub mod forecasts;
pub mod health;
pub mod ledger;
pub mod manifests;
pub mod observe;
pub mod referrers;
pub mod rollouts;
pub mod routing;
pub mod tags;
pub mod token;
pub mod ui;
pub mod uploads;
pub mod v2_paths;

pub use body::{discard, drain, empty, read_limited, read_limited_to, DRAIN_CAP};
pub use context::{context, Authorised, Ctx, MayAdminister, MayPublish, MayReport};
pub use routing::router;
