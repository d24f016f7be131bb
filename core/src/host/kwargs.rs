//! A host handler's named arguments, for a host that passes them by name
//! (Python's keywords): which of the ticket's values a handler receives is
//! decided here, not by each binding.

use serde_json::{Map, Value};

use super::{Ticket, TicketRoute};

impl Ticket {
    /// The handler's named arguments: the validated arguments, plus
    /// `idempotency_key` when the handler takes one and `secrets` when the
    /// tool receives its secret values (`secrets_delivery: native`).
    pub fn kwargs(&self) -> Value {
        let mut named = self.args().as_object().cloned().unwrap_or_else(Map::new);
        if let TicketRoute::Host { takes_idempotency_key: true, .. } = self.route() {
            named.insert("idempotency_key".into(), Value::String(self.idempotency_key().to_string()));
        }
        if let Some(secrets) = self.secrets() {
            named.insert("secrets".into(), secrets);
        }
        Value::Object(named)
    }
}
