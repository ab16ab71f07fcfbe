//! `POST /api/v1/receipts`: a runner reports a deployment with a signed receipt.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use stackpack_schema::receipt::SignedReceipt;

use crate::api::ReceiptAccepted;
use crate::auth::{Action, Role};
use crate::controllers::{context, discard, read_limited};
use crate::error::{Code, Error};
use crate::state::SharedState;

#[utoipa::path(
    post,
    path = "/api/v1/receipts",
    request_body(
        content = Object,
        description = "A signed receipt (`stackpack_schema::receipt::SignedReceipt`): `{receipt, algorithm, signature, publicKey}`",
        content_type = "application/json"
    ),
    responses(
        (status = 201, description = "Stored", body = ReceiptAccepted),
        (status = 200, description = "The same receipt was stored before", body = ReceiptAccepted),
        (status = 400, description = "Malformed, or the signature does not verify"),
        (status = 403, description = "The token may not report for this customer, or the key is not the customer's"),
        (status = 409, description = "Another receipt already has this id"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn create(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    // Who is asking is settled before a byte of the body is read.
    let ctx = match context(&state, &headers, &uri).and_then(|ctx| {
        ctx.authorize_role(&[Role::Customer, Role::Admin], Action::Report(""))
            .map(|()| ctx)
    }) {
        Ok(ctx) => ctx,
        Err(e) => {
            discard(body);
            return e.into_response();
        }
    };
    let result: crate::error::Result<(bool, String)> = async {
        let body = read_limited(body, &state.config, "the receipt").await?;
        let signed = SignedReceipt::from_bytes(&body)
            .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
        ctx.authorize(Action::Report(&signed.receipt.customer))?;
        let created = crate::receipts::record(&state.db, &signed)?;
        Ok((created, signed.receipt.id))
    }
    .await;
    match result {
        Ok((created, receipt_id)) => (
            if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            axum::Json(ReceiptAccepted {
                receipt_id,
                created,
            }),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
