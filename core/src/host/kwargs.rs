//! A host handler's named arguments, for a host that passes them by name
//! (Python's keywords): which of the ticket's values a handler receives is
//! decided here, not by each binding.

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::{Ticket, TicketRoute};

/// A handler's named arguments, borrowed from its ticket: serialized, a map
/// of the validated arguments, plus `idempotency_key` when the handler takes
/// one and `secrets` when the tool receives its secret values
/// (`secrets_delivery: native`); either replaces an argument of its name.
#[derive(Debug, Clone, Copy)]
pub struct Kwargs<'a>(&'a Ticket);

impl Ticket {
    /// The handler's named arguments.
    pub fn kwargs(&self) -> Kwargs<'_> {
        Kwargs(self)
    }
}

impl Serialize for Kwargs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut map = serializer.serialize_map(None)?;
        for (name, value) in t.args().as_object().into_iter().flatten() {
            map.serialize_entry(name, value)?;
        }
        if let TicketRoute::Host { takes_idempotency_key: true, .. } = t.route() {
            map.serialize_entry("idempotency_key", t.idempotency_key())?;
        }
        if let Some(secrets) = t.secrets() {
            map.serialize_entry("secrets", &secrets)?;
        }
        map.end()
    }
}
