//! State behind one interface: rate-limit counters, run labels and budgets,
//! pending approvals.
//!
//! Every operation that decides is one atomic step of the store (check and
//! update together), so that several governors sharing one store (threads,
//! processes, hosts) never allow more than a limit. The in-memory backend is
//! the default; durable backends implement the same trait and pass the same
//! conformance tests.

mod memory;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

pub use memory::MemoryStore;

/// `count` calls per `period_ms`, enforced with GCRA (a burst of `count`, then
/// one call every `period_ms / count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// Calls allowed per period.
    pub count: u64,
    /// The period in milliseconds.
    pub period_ms: u64,
}

impl Rate {
    /// The emission interval in nanoseconds (at least 1).
    pub fn interval_ns(self) -> u128 {
        (self.period_ns() / u128::from(self.count.max(1))).max(1)
    }

    /// How far ahead of now the theoretical arrival time may run (the burst).
    pub fn tolerance_ns(self) -> u128 {
        self.period_ns().saturating_sub(self.interval_ns())
    }

    fn period_ns(self) -> u128 {
        u128::from(self.period_ms) * 1_000_000
    }
}

/// One bucket to take from: a namespaced key and its rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateKey {
    /// The bucket, for example `rl/refund_payment/principal/alice`.
    pub key: String,
    /// Its rate.
    pub rate: Rate,
}

/// The result of taking one call from several buckets at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// Every bucket had room; each has been charged.
    Allowed,
    /// The bucket at `index` is full; nothing was charged.
    Limited {
        /// Which of the keys refused.
        index: usize,
        /// When a retry can succeed, in milliseconds (rounded up).
        retry_after_ms: u64,
    },
}

/// GCRA on one bucket: given the stored theoretical arrival time (ns), decide
/// at `now_ns` and return the new arrival time, or the wait in ns.
pub fn gcra(tat_ns: Option<u128>, now_ns: u128, rate: Rate) -> Result<u128, u128> {
    // The interval once (a 128-bit division; this runs per key on every call).
    let interval = rate.interval_ns();
    let tolerance = rate.period_ns().saturating_sub(interval);
    let tat = tat_ns.unwrap_or(now_ns).max(now_ns);
    let allow_at = tat.saturating_sub(tolerance);
    if now_ns < allow_at {
        return Err(allow_at - now_ns);
    }
    Ok(tat + interval)
}

/// Rounds a wait in nanoseconds up to whole milliseconds.
pub fn ns_to_ms_ceil(ns: u128) -> u64 {
    u64::try_from(ns.div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// The result of counting a call against a run's budgets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Budget {
    /// Counted.
    Taken,
    /// The run has used `limit` calls in all.
    RunExhausted { limit: u64 },
    /// The run has used `limit` calls of this tool.
    ToolExhausted { limit: u64 },
}

/// What a run has seen so far (the trifecta's two labels).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    /// A tool with a `pii:*` data_access ran in this run.
    pub private: bool,
    /// The run has seen an output labelled `untrusted`.
    pub untrusted: bool,
}

impl Labels {
    /// Both labels of `self` and `other`.
    pub fn union(self, other: Labels) -> Labels {
        Labels { private: self.private || other.private, untrusted: self.untrusted || other.untrusted }
    }
}

/// Where a pending approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for a human.
    Pending,
    /// Granted; the next matching call consumes it.
    Approved,
    /// Refused by a human.
    Denied,
    /// Consumed by the call it approved (single use).
    Used,
}

impl ApprovalState {
    /// `pending`, `approved`, `denied` or `used`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Used => "used",
        }
    }
}

/// A call held for a human, bound to its exact canonical arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The approval's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The arguments the approver sees and approves (kept in the store, never in audit).
    pub args: Value,
    /// The digest of the canonical arguments; a call with other args is not approved.
    pub args_digest: String,
    /// Who asked.
    pub principal: Value,
    /// The tenant, if any.
    pub tenant: Option<String>,
    /// The task, if any.
    pub task: Option<String>,
    /// The run the call belongs to.
    pub run_id: String,
    /// The role an approver must hold.
    pub approver_role: Option<String>,
    /// Why approval is needed (which rule, or which part of `approval.when` failed).
    pub reasons: Vec<String>,
    /// When it was asked, in ms since the epoch.
    pub created_ms: u64,
    /// When it stops being valid.
    pub expires_ms: u64,
    /// Where it stands.
    pub state: ApprovalState,
    /// Who approved or denied it.
    pub decided_by: Option<String>,
    /// Why it was denied.
    pub note: Option<String>,
    /// The policy version (harness and manifests digest) it was asked under;
    /// a grant is void under another.
    #[serde(default)]
    pub policy_version: String,
    /// When an approver edited the args: the digest of the args first asked for.
    #[serde(default)]
    pub original_args_digest: Option<String>,
    /// What asked for approval, as stable keys (`rule:<layer>/<name>`,
    /// `trifecta`, `approval.when`, `risk`). The approval covers a later call
    /// only if that call's keys are among these (issue 17, item 7).
    #[serde(default)]
    pub asked_by: Vec<String>,
}

/// What [`Store::put_approval_bounded`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounded {
    /// Stored; the principal had this many approvals open before it.
    Put {
        /// Open approvals of the principal before this one.
        open: u64,
    },
    /// Not stored: the principal already has this many open (at or past the limit).
    Full {
        /// Open approvals of the principal.
        open: u64,
    },
}

impl PendingApproval {
    /// The id of the principal who asked (`principal.id`; empty when absent).
    pub fn principal_id(&self) -> &str {
        self.principal.get("id").and_then(Value::as_str).unwrap_or_default()
    }

    /// Pending or approved: it still counts against its principal's limit.
    pub fn is_open(&self) -> bool {
        self.state.is_open()
    }
}

impl ApprovalState {
    /// Pending or approved (not yet denied or used).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Pending | Self::Approved)
    }
}

/// The store could not be reached or refused the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    /// What went wrong, without secrets.
    pub message: String,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// The one interface every backend implements.
pub trait Store: Send + Sync + fmt::Debug {
    /// Takes one call from every bucket in `keys`, all or nothing.
    fn acquire(&self, keys: &[RateKey], now_ms: u64) -> Result<Acquire, StoreError>;

    /// Counts one call of `tool` in `run_id` unless a budget is used up.
    fn take_budget(&self, run_id: &str, tool: &str, max_total: Option<u64>, max_tool: Option<u64>) -> Result<Budget, StoreError>;

    /// Gives back a call counted by [`Store::take_budget`] (the call was then refused).
    fn release_budget(&self, run_id: &str, tool: &str) -> Result<(), StoreError>;

    /// The run's labels.
    fn labels(&self, run_id: &str) -> Result<Labels, StoreError>;

    /// Adds labels to the run and returns them all.
    fn add_labels(&self, run_id: &str, labels: Labels) -> Result<Labels, StoreError>;

    /// Stores a new pending approval.
    fn put_approval(&self, approval: &PendingApproval) -> Result<(), StoreError>;

    /// The approval with `id`.
    fn approval(&self, id: &str) -> Result<Option<PendingApproval>, StoreError>;

    /// Moves the approval from `from` to `to` if it is still in `from`
    /// (compare-and-set: exactly one of several racing callers wins).
    fn transition(&self, id: &str, from: ApprovalState, to: ApprovalState, by: Option<&str>, note: Option<&str>) -> Result<bool, StoreError>;

    /// Every approval still pending or approved.
    fn open_approvals(&self) -> Result<Vec<PendingApproval>, StoreError>;

    /// Drops approvals that expired at or before `now_ms` (in any state;
    /// stores that expire keys by time, like Redis, may leave that to the
    /// server) and returns how many approvals `principal_id` still has open
    /// (pending or approved, not expired), read from a per-principal index:
    /// the cost does not grow with the approvals of other principals.
    fn prune_and_count_open(&self, principal_id: &str, now_ms: u64) -> Result<u64, StoreError>;

    /// Stores `approval` (pending) unless its principal already has `limit`
    /// or more approvals open, in one atomic step of the store: expired
    /// approvals are dropped, the principal's open ones counted through the
    /// per-principal index, and the new one stored only below the limit, so
    /// racing asks (threads, processes, hosts) never pass it together. The
    /// governor calls it for every approval it asks for
    /// (`spec.approvals.max_open_per_principal`, refused `approval_limit`).
    fn put_approval_bounded(&self, approval: &PendingApproval, limit: u64, now_ms: u64) -> Result<Bounded, StoreError>;

    /// [`Store::acquire`], also returning the run's labels when the backend
    /// reads them in the same round trip (Redis); `None` when it does not.
    fn acquire_with_labels(&self, keys: &[RateKey], now_ms: u64, run_id: &str) -> Result<(Acquire, Option<Labels>), StoreError> {
        let _ = run_id;
        Ok((self.acquire(keys, now_ms)?, None))
    }

    /// Network round trips made so far (Redis); `None` for stores without a
    /// network (memory, SQLite). Benchmarks divide it by the decisions made.
    fn round_trips(&self) -> Option<u64> {
        None
    }

    /// Forgets a run that cannot take another call (a call made outside an
    /// explicit run gets a run of its own, over when the call is). Stores
    /// that expire runs by time (SQLite, Redis) may leave it to that.
    fn end_run(&self, _run_id: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

impl StoreError {
    /// A store error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into() }
    }
}
