//! One webhook POST: the payload in the caller's dialect, the caller's token and authentication,
//! the gateway's signature, and what a failed attempt is called in the audit log.

use std::time::{SystemTime, UNIX_EPOCH};

use a2a_core::Dialect;
use bytes::Bytes;
use http::{HeaderValue, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Generation, StoredConfig};
use crate::screen::{SystemResolver, screen_url};

use super::Deliveries;

/// The header carrying the gateway's signature of a delivery: a JWT (RS256/ES256, verifiable with
/// the gateway's `/.well-known/jwks.json`) whose `aud` is the webhook URL and whose `body_sha256`
/// is the lower-case hex SHA-256 of the request body; `sub` is the task id, `exp` five minutes on.
pub const SIGNATURE_HEADER: &str = "x-a2a-gateway-signature";
const SIGNATURE_TTL: u64 = 300;

impl Deliveries {
    /// One POST. The URL is screened again first (a literal address is judged there; a name is
    /// judged again by the client's resolver when it connects).
    pub(super) async fn attempt(
        &self,
        gateway: &dyn Generation,
        stored: &StoredConfig,
        task_id: &str,
        body: &Bytes,
    ) -> Result<(), String> {
        let config = &stored.config;
        screen_url(&config.url, &self.config.screen_policy(), &SystemResolver)
            .await
            .map_err(|e| format!("screen: {e}"))?;
        let mut request =
            self.client.post(&config.url).header(header::CONTENT_TYPE, "application/json").body(body.clone());
        if let Some(token) = &config.token {
            request = request.header("x-a2a-notification-token", token);
        }
        if let Some(auth) = &config.authentication {
            let value = match &auth.credentials {
                Some(credentials) => format!("{} {credentials}", auth.scheme),
                None => auth.scheme.clone(),
            };
            let mut value =
                HeaderValue::try_from(value).map_err(|_| "authentication is not a valid header".to_owned())?;
            value.set_sensitive(true);
            request = request.header(header::AUTHORIZATION, value);
        }
        let signature = sign(gateway, &config.url, task_id, body).await.ok_or("the delivery could not be signed")?;
        request = request.header(SIGNATURE_HEADER, signature);
        let response = request.send().await.map_err(|e| describe(&e))?;
        // The answer's body is not read: its size cannot matter, and the connection is closed.
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else if status.is_redirection() {
            Err(format!("the webhook answered a redirect ({status}), which is not followed"))
        } else {
            Err(format!("the webhook answered {status}"))
        }
    }
}

/// The webhook body in the caller's dialect.
pub(super) fn payload(dialect: Dialect, task: &Value) -> Vec<u8> {
    let value = match dialect {
        Dialect::V1 => json!({"task": task}),
        _ => serde_json::from_value::<a2a_model::Task>(task.clone())
            .ok()
            .and_then(|task| serde_json::to_value(crate::protocol::translate::v03::Task::from(task)).ok())
            .unwrap_or_else(|| task.clone()),
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

async fn sign(gateway: &dyn Generation, url: &str, task_id: &str, body: &[u8]) -> Option<String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    let claims = json!({
        "aud": url,
        "sub": task_id,
        "iat": now,
        "exp": now + SIGNATURE_TTL,
        "jti": uuid::Uuid::new_v4().to_string(),
        "body_sha256": hex::encode(Sha256::digest(body)),
    });
    let Value::Object(claims) = claims else { return None };
    gateway.credentials().sign(claims).await
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "the webhook did not answer in time".into()
    } else if error.is_connect() {
        // A refused address at connect time shows as a connect error too.
        "the webhook could not be connected to (or its address is refused)".into()
    } else {
        "the webhook request failed".into()
    }
}
