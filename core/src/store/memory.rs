//! The in-memory store: the embedded default, one process.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// The maps' hasher: aHash with keys drawn at random per map (as SipHash's
/// are), so callers who choose principal, tenant or run ids still cannot
/// aim keys at one bucket, at a fraction of SipHash's cost on short keys
/// (a governed call hashes a run id and two rate-limit keys).
type Map<V> = HashMap<String, V, ahash::RandomState>;

use super::{gcra, ns_to_ms_ceil, Acquire, ApprovalState, Bounded, Budget, Labels, PendingApproval, RateKey, Store, StoreError};

#[derive(Debug, Default)]
struct State {
    tat: Map<u128>,
    /// Per run: its budgets and labels, under one key (a governed call
    /// looks its run up a few times; one map hashes the id once each time).
    runs: Map<Run>,
    approvals: Map<PendingApproval>,
    /// Per principal id: the ids of its open (pending or approved)
    /// approvals, so the approval limit is counted without a scan.
    open_by: Map<HashSet<String>>,
    /// Every approval by expiry: expired ones are dropped from the front
    /// without a scan of the rest.
    by_expiry: BTreeSet<(u64, String)>,
}

impl State {
    /// Stores `approval`, replacing one with its id, and indexes it.
    fn put_approval(&mut self, approval: &PendingApproval) {
        self.forget_approval(&approval.id);
        self.by_expiry.insert((approval.expires_ms, approval.id.clone()));
        if approval.is_open() {
            self.open_by.entry(approval.principal_id().to_string()).or_default().insert(approval.id.clone());
        }
        self.approvals.insert(approval.id.clone(), approval.clone());
    }

    /// Removes the approval `id` and its index entries.
    fn forget_approval(&mut self, id: &str) {
        if let Some(old) = self.approvals.remove(id) {
            self.by_expiry.remove(&(old.expires_ms, old.id.clone()));
            self.close(old.principal_id(), id);
        }
    }

    /// Takes `id` out of its principal's open approvals.
    fn close(&mut self, principal: &str, id: &str) {
        if let Some(open) = self.open_by.get_mut(principal) {
            open.remove(id);
            if open.is_empty() {
                self.open_by.remove(principal);
            }
        }
    }

    /// Drops every approval that expired at or before `now_ms`.
    fn prune_approvals(&mut self, now_ms: u64) {
        while let Some((expires, id)) = self.by_expiry.first().cloned() {
            if expires > now_ms {
                break;
            }
            self.forget_approval(&id);
            // An entry whose approval was replaced under another expiry.
            self.by_expiry.remove(&(expires, id));
        }
    }

    fn open_of(&self, principal: &str) -> u64 {
        self.open_by.get(principal).map_or(0, |ids| u64::try_from(ids.len()).unwrap_or(u64::MAX))
    }
}

/// What the store knows of one run.
#[derive(Debug, Default)]
struct Run {
    /// Calls counted against `budgets.max_tool_calls`.
    total: u64,
    /// Calls counted per tool against `budgets.per_tool`.
    per_tool: Map<u64>,
    /// The trifecta's labels.
    labels: Labels,
}

/// State in this process's memory, behind one lock.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        // A poisoned lock means a thread died mid-update; the maps are still
        // consistent because every update is a single insert.
        Ok(self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl Store for MemoryStore {
    fn end_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.lock()?.runs.remove(run_id);
        Ok(())
    }

    fn acquire(&self, keys: &[RateKey], now_ms: u64) -> Result<Acquire, StoreError> {
        let mut state = self.lock()?;
        let now_ns = u128::from(now_ms) * 1_000_000;
        // One lookup per key (this runs on every governed call): each key's
        // new time is written as it is found, and a later key that is limited
        // puts the earlier ones back, so a limited call takes nothing. The
        // governor passes at most two keys (per principal, per tenant).
        let mut previous: [Option<u128>; 4] = [None; 4];
        if keys.len() > previous.len() {
            return Ok(acquire_all_or_nothing(&mut state, keys, now_ns));
        }
        for (index, key) in keys.iter().enumerate() {
            let slot = state.tat.get_mut(&key.key);
            let old = slot.as_deref().copied();
            match gcra(old, now_ns, key.rate) {
                Ok(tat) => {
                    if let Some(p) = previous.get_mut(index) {
                        *p = old;
                    }
                    match slot {
                        Some(slot) => *slot = tat,
                        None => {
                            state.tat.insert(key.key.clone(), tat);
                        }
                    }
                }
                Err(wait) => {
                    for (earlier, old) in keys.iter().zip(previous).take(index) {
                        match (old, state.tat.get_mut(&earlier.key)) {
                            (Some(old), Some(slot)) => *slot = old,
                            _ => {
                                state.tat.remove(&earlier.key);
                            }
                        }
                    }
                    return Ok(Acquire::Limited { index, retry_after_ms: ns_to_ms_ceil(wait) });
                }
            }
        }
        Ok(Acquire::Allowed)
    }

    fn take_budget(&self, run_id: &str, tool: &str, max_total: Option<u64>, max_tool: Option<u64>) -> Result<Budget, StoreError> {
        let mut state = self.lock()?;
        let run = state.runs.get(run_id);
        let total = run.map_or(0, |r| r.total);
        if let Some(limit) = max_total.filter(|limit| total >= *limit) {
            return Ok(Budget::RunExhausted { limit });
        }
        let per_tool = run.and_then(|r| r.per_tool.get(tool)).copied().unwrap_or(0);
        if let Some(limit) = max_tool.filter(|limit| per_tool >= *limit) {
            return Ok(Budget::ToolExhausted { limit });
        }
        let run = state.runs.entry(run_id.to_string()).or_default();
        run.total = total + 1;
        run.per_tool.insert(tool.to_string(), per_tool + 1);
        Ok(Budget::Taken)
    }

    fn release_budget(&self, run_id: &str, tool: &str) -> Result<(), StoreError> {
        let mut state = self.lock()?;
        if let Some(run) = state.runs.get_mut(run_id) {
            run.total = run.total.saturating_sub(1);
            if let Some(n) = run.per_tool.get_mut(tool) {
                *n = n.saturating_sub(1);
            }
        }
        Ok(())
    }

    fn labels(&self, run_id: &str) -> Result<Labels, StoreError> {
        Ok(self.lock()?.runs.get(run_id).map(|r| r.labels).unwrap_or_default())
    }

    fn add_labels(&self, run_id: &str, labels: Labels) -> Result<Labels, StoreError> {
        let mut state = self.lock()?;
        if let Some(run) = state.runs.get_mut(run_id) {
            run.labels = run.labels.union(labels);
            return Ok(run.labels);
        }
        state.runs.insert(run_id.to_string(), Run { labels, ..Run::default() });
        Ok(labels)
    }

    fn put_approval(&self, approval: &PendingApproval) -> Result<(), StoreError> {
        self.lock()?.put_approval(approval);
        Ok(())
    }

    fn put_approval_bounded(&self, approval: &PendingApproval, limit: u64, now_ms: u64) -> Result<Bounded, StoreError> {
        let mut state = self.lock()?;
        state.prune_approvals(now_ms);
        let open = state.open_of(approval.principal_id());
        if open >= limit {
            return Ok(Bounded::Full { open });
        }
        state.put_approval(approval);
        Ok(Bounded::Put { open })
    }

    fn approval(&self, id: &str) -> Result<Option<PendingApproval>, StoreError> {
        Ok(self.lock()?.approvals.get(id).cloned())
    }

    fn transition(&self, id: &str, from: ApprovalState, to: ApprovalState, by: Option<&str>, note: Option<&str>) -> Result<bool, StoreError> {
        let mut state = self.lock()?;
        let closed = match state.approvals.get_mut(id) {
            Some(approval) if approval.state == from => {
                approval.state = to;
                if let Some(by) = by {
                    approval.decided_by = Some(by.to_string());
                }
                if let Some(note) = note {
                    approval.note = Some(note.to_string());
                }
                (from.is_open() && !to.is_open()).then(|| approval.principal_id().to_string())
            }
            _ => return Ok(false),
        };
        if let Some(principal) = closed {
            state.close(&principal, id);
        }
        Ok(true)
    }

    fn prune_and_count_open(&self, principal_id: &str, now_ms: u64) -> Result<u64, StoreError> {
        let mut state = self.lock()?;
        state.prune_approvals(now_ms);
        Ok(state.open_of(principal_id))
    }

    fn open_approvals(&self) -> Result<Vec<PendingApproval>, StoreError> {
        let state = self.lock()?;
        let mut open: Vec<PendingApproval> =
            state.approvals.values().filter(|a| matches!(a.state, ApprovalState::Pending | ApprovalState::Approved)).cloned().collect();
        open.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then_with(|| a.id.cmp(&b.id)));
        Ok(open)
    }
}

/// [`Store::acquire`] for many keys: every key is checked before any is taken.
fn acquire_all_or_nothing(state: &mut State, keys: &[RateKey], now_ns: u128) -> Acquire {
    let mut next = Vec::with_capacity(keys.len());
    for (index, key) in keys.iter().enumerate() {
        match gcra(state.tat.get(&key.key).copied(), now_ns, key.rate) {
            Ok(tat) => next.push(tat),
            Err(wait) => return Acquire::Limited { index, retry_after_ms: ns_to_ms_ceil(wait) },
        }
    }
    for (key, tat) in keys.iter().zip(next) {
        state.tat.insert(key.key.clone(), tat);
    }
    Acquire::Allowed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Rate;

    #[test]
    fn gcra_allows_exactly_count_then_paces() {
        let store = MemoryStore::new();
        let keys = [RateKey { key: "k".into(), rate: Rate { count: 3, period_ms: 60_000 } }];
        for _ in 0..3 {
            assert_eq!(store.acquire(&keys, 1_000).unwrap(), Acquire::Allowed);
        }
        assert_eq!(store.acquire(&keys, 1_000).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 20_000 });
        assert_eq!(store.acquire(&keys, 20_999).unwrap(), Acquire::Limited { index: 0, retry_after_ms: 1 });
        assert_eq!(store.acquire(&keys, 21_000).unwrap(), Acquire::Allowed);
    }

    #[test]
    fn all_or_nothing_across_keys() {
        let store = MemoryStore::new();
        let a = RateKey { key: "a".into(), rate: Rate { count: 5, period_ms: 1_000 } };
        let b = RateKey { key: "b".into(), rate: Rate { count: 1, period_ms: 1_000 } };
        assert_eq!(store.acquire(&[a.clone(), b.clone()], 0).unwrap(), Acquire::Allowed);
        assert!(matches!(store.acquire(&[a.clone(), b], 0).unwrap(), Acquire::Limited { index: 1, .. }));
        // `a` was not charged by the refused call: 4 more fit.
        for _ in 0..4 {
            assert_eq!(store.acquire(std::slice::from_ref(&a), 0).unwrap(), Acquire::Allowed);
        }
        assert!(matches!(store.acquire(&[a], 0).unwrap(), Acquire::Limited { .. }));
    }
}
