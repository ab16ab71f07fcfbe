//! `GET /api/v1/channels` and `PUT /api/v1/channels/{name}` (admin): channels'
//! waves and soak times.

use axum::extract::{Path, State};
use axum::Json;

use crate::api::{Channel, NewChannel};
use crate::auth::Action;
use crate::controllers::{read_limited, Authorised, Ctx, MayAdminister};
use crate::db;
use crate::error::{Code, Error, Result};
use crate::rollout;
use crate::state::SharedState;

/// Every channel configured or in use.
pub fn all(state: &crate::state::AppState) -> Result<Vec<Channel>> {
    let rows = state.db.read_any(|c| db::rollouts::channels(c))?;
    Ok(rows
        .into_iter()
        .map(|(name, config, customers)| Channel {
            name,
            waves: config.waves,
            soak_seconds: config.soak_seconds,
            configured: config.configured,
            customers,
        })
        .collect())
}

#[utoipa::path(
    get,
    path = "/api/v1/channels",
    responses(
        (status = 200, description = "Channels configured or in use, by name: waves in order, soak time, customers", body = Vec<Channel>),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn list(State(state): State<SharedState>, ctx: Ctx) -> Result<Json<Vec<Channel>>> {
    ctx.authorize(Action::LedgerRead)?;
    Ok(Json(all(&state)?))
}

#[utoipa::path(
    put,
    path = "/api/v1/channels/{name}",
    params(("name" = String, Path, description = "Channel name (`stable`, `beta`, …)")),
    request_body = NewChannel,
    responses(
        (status = 200, description = "The channel as set; rollouts already running keep the waves and soak they started with", body = Channel),
        (status = 400, description = "A wave or channel name is not a name, or the soak is not an age (`24h`)"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn update(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    Authorised { body, .. }: Authorised<MayAdminister>,
) -> Result<Json<Channel>> {
    let body = read_limited(body, &state.config, "the request body").await?;
    let new: NewChannel = serde_json::from_slice(&body).map_err(|e| {
        Error::new(
            Code::BadRequest,
            format!("the body is not `{{waves, soak}}`: {e}"),
        )
    })?;
    let soak = match &new.soak {
        Some(text) => Some(rollout::parse_soak(text).ok_or_else(|| {
            Error::new(
                Code::BadRequest,
                format!("{}; try `24h`", crate::age::invalid("soak", text)),
            )
        })?),
        None => None,
    };
    let config = rollout::set_channel_held(&state.db, &name, new.waves.clone(), soak)?;
    let customers = all(&state)?
        .into_iter()
        .find(|c| c.name == name)
        .map_or(0, |c| c.customers);
    Ok(Json(Channel {
        name,
        waves: config.waves,
        soak_seconds: config.soak_seconds,
        configured: true,
        customers,
    }))
}
