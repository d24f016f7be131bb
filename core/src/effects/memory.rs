//! The in-memory effect journal: one process, no crash survives it (the
//! default, and the reference the durable journals are tested against).

use std::sync::Mutex;

use super::{Claim, EffectEntry, EffectState, Journal, StoreError};

/// Entries in a vector, oldest first, behind one lock.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    entries: Mutex<Vec<EffectEntry>>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Vec<EffectEntry>>, StoreError> {
        self.entries.lock().map_err(|_| StoreError { message: "the effect journal's lock is poisoned".into() })
    }
}

impl Journal for MemoryJournal {
    fn claim(&self, intent: &EffectEntry, exclusive: bool) -> Result<Claim, StoreError> {
        let mut entries = self.lock()?;
        if exclusive {
            let latest = entries.iter().rev().find(|e| e.tool == intent.tool && e.idempotency_key == intent.idempotency_key);
            if let Some(e) = latest.filter(|e| e.state == EffectState::Unknown) {
                return Ok(Claim::Blocked(Box::new(e.clone())));
            }
        }
        entries.push(intent.clone());
        Ok(Claim::Recorded)
    }

    fn put(&self, entry: &EffectEntry) -> Result<(), StoreError> {
        let mut entries = self.lock()?;
        match entries.iter_mut().find(|e| e.call_id == entry.call_id) {
            Some(slot) => *slot = entry.clone(),
            None => entries.push(entry.clone()),
        }
        Ok(())
    }

    fn get(&self, call_id: &str) -> Result<Option<EffectEntry>, StoreError> {
        Ok(self.lock()?.iter().find(|e| e.call_id == call_id).cloned())
    }

    fn list(&self) -> Result<Vec<EffectEntry>, StoreError> {
        Ok(self.lock()?.clone())
    }
}
