//! What the governor remembers of each run beyond its labels (issue 23): the
//! values that entered it (provenance, see [`super::provenance`]) and its
//! history, the calls made so far with their decisions and labels (never
//! their args), which cel-lite reads as `run`.
//!
//! Bounded: at most [`MAX_RUNS`] runs (the least recently used forgotten
//! first), [`MAX_HISTORY`] calls of history per run (older calls leave the
//! list but stay counted). The memory lives in the governor, so in one
//! process: several processes sharing a store share labels, budgets and
//! approvals, not this.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use super::provenance::{Hasher, Values};
use crate::call::Decision;

/// Runs remembered at once.
pub(super) const MAX_RUNS: usize = 1024;
/// Calls of history kept per run.
pub const MAX_HISTORY: usize = 256;

/// One call of a run's history.
#[derive(Debug, Clone)]
struct Entry {
    tool: String,
    decision: Decision,
    /// The output's label, for a call that ran.
    label: Option<&'static str>,
    /// The tool reads personal data (`pii:*`).
    private: bool,
}

/// One run's memory.
#[derive(Debug, Default)]
pub(super) struct RunMemory {
    /// The values seen in trusted and untrusted input.
    pub values: Values,
    history: VecDeque<Entry>,
    /// Calls made in the run (all of them, also those out of `history`).
    calls: u64,
    /// Calls that ran, per tool.
    ran: BTreeMap<String, u64>,
    used: u64,
}

impl RunMemory {
    /// Records a call that ended.
    pub fn remember(&mut self, tool: &str, decision: Decision, label: Option<&'static str>, private: bool) {
        if self.history.len() >= MAX_HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(Entry { tool: tool.to_string(), decision, label, private });
        self.calls = self.calls.saturating_add(1);
        if decision == Decision::Allowed {
            let n = self.ran.entry(tool.to_string()).or_insert(0);
            *n = n.saturating_add(1);
        }
    }

    /// cel-lite's `run`: `calls` (the last calls, oldest first, each
    /// `{tool, decision, label, private}`), `size` (every call so far) and
    /// `counts` (calls that ran, per tool).
    pub fn to_value(&self) -> Value {
        let calls = self
            .history
            .iter()
            .map(|e| {
                let mut o = Map::new();
                o.insert("tool".into(), Value::String(e.tool.clone()));
                o.insert("decision".into(), Value::from(e.decision.as_str()));
                o.insert("label".into(), e.label.map_or(Value::Null, Value::from));
                o.insert("private".into(), Value::Bool(e.private));
                Value::Object(o)
            })
            .collect();
        let counts = self.ran.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        let mut o = Map::new();
        o.insert("calls".into(), Value::Array(calls));
        o.insert("size".into(), Value::from(self.calls));
        o.insert("counts".into(), Value::Object(counts));
        Value::Object(o)
    }
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, RunMemory, ahash::RandomState>,
    tick: u64,
}

/// Every run's memory, behind one lock.
#[derive(Debug, Default)]
pub(super) struct Runs {
    hasher: Hasher,
    inner: Mutex<Inner>,
}

impl Runs {
    /// Runs `f` on the memory of `run_id` (created when new).
    pub fn with<R>(&self, run_id: &str, f: impl FnOnce(&mut RunMemory, &Hasher) -> R) -> R {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.tick = inner.tick.saturating_add(1);
        let tick = inner.tick;
        // A run met before: found without copying its id.
        if let Some(memory) = inner.map.get_mut(run_id) {
            memory.used = tick;
            return f(memory, &self.hasher);
        }
        if inner.map.len() >= MAX_RUNS {
            let oldest = inner.map.iter().min_by_key(|(_, m)| m.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                inner.map.remove(&oldest);
            }
        }
        let memory = inner.map.entry(run_id.to_string()).or_default();
        memory.used = tick;
        f(memory, &self.hasher)
    }

    /// Forgets a run.
    pub fn end(&self, run_id: &str) {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).map.remove(run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_and_counts_every_call() {
        let runs = Runs::default();
        for _ in 0..MAX_HISTORY + 5 {
            runs.with("r", |m, _| m.remember("t", Decision::Allowed, Some("untrusted"), false));
        }
        let v = runs.with("r", |m, _| m.to_value());
        assert_eq!(v["calls"].as_array().map(Vec::len), Some(MAX_HISTORY));
        assert_eq!(v["size"], MAX_HISTORY as u64 + 5);
        assert_eq!(v["counts"]["t"], MAX_HISTORY as u64 + 5);
    }

    #[test]
    fn runs_are_bounded() {
        let runs = Runs::default();
        for i in 0..MAX_RUNS + 3 {
            runs.with(&format!("r{i}"), |m, _| m.remember("t", Decision::Refused, None, false));
        }
        let n = runs.inner.lock().map(|i| i.map.len()).unwrap_or_default();
        assert_eq!(n, MAX_RUNS);
        // The oldest went first.
        assert_eq!(runs.with("r0", |m, _| m.calls), 0);
    }
}
