//! `PUT /api/v1/customers/{id}/rollout`: puts a customer in a channel and wave
//! (admin).

use axum::extract::{Path, State};
use axum::Json;

use crate::api::{CustomerPlacement, Placement};
use crate::controllers::{read_limited, Authorised, MayAdminister};
use crate::error::{Code, Error, Result};
use crate::rollout;
use crate::state::SharedState;

#[utoipa::path(
    put,
    path = "/api/v1/customers/{id}/rollout",
    params(("id" = String, Path, description = "Customer id")),
    request_body = CustomerPlacement,
    responses(
        (status = 200, description = "The customer's channel and wave; it is assigned what the channel's open waves carry", body = Placement),
        (status = 400, description = "Malformed, or the channel has no such wave"),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn update(
    State(state): State<SharedState>,
    Path(id): Path<String>,
    Authorised { body, .. }: Authorised<MayAdminister>,
) -> Result<Json<Placement>> {
    let body = read_limited(body, &state.config, "the request body").await?;
    let new: CustomerPlacement = serde_json::from_slice(&body).map_err(|e| {
        Error::new(
            Code::BadRequest,
            format!("the body is not `{{channel, wave}}`: {e}"),
        )
    })?;
    rollout::place_held(&state.db, &id, &new.channel, new.wave.as_deref())?
        .map(Json)
        .ok_or_else(|| Error::new(Code::NotFound, format!("customer `{id}` is not known")))
}
