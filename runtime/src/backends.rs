//! The backends of a full build: the core's [`Backends`] with the SQLite and
//! Redis stores, the SQLite audit sink and the http, code and mcp transports.

use std::sync::Arc;

use harnessweaver_core::audit::AuditSink;
use harnessweaver_core::backends::{Backends, Invoker};
use harnessweaver_core::effects::Journal;
use harnessweaver_core::error::Problem;
use harnessweaver_core::harness::Harness;
use harnessweaver_core::manifest::Tool;
use harnessweaver_core::store::Store;

use crate::transport::{TransportOptions, Transports};

/// Everything a harness may name: what [`crate::load`] and the bindings use.
#[derive(Debug, Clone, Default)]
pub struct RuntimeBackends {
    /// The sandbox worker and pool settings of the code transport.
    pub transports: TransportOptions,
}

impl RuntimeBackends {
    /// The backends with these transport settings.
    pub fn new(transports: TransportOptions) -> Self {
        RuntimeBackends { transports }
    }

    /// As a trait object for [`GovernorOptions::backends`](harnessweaver_core::governor::GovernorOptions::backends).
    pub fn shared(transports: TransportOptions) -> Arc<dyn Backends> {
        Arc::new(Self::new(transports))
    }
}

impl Backends for RuntimeBackends {
    fn open_store(&self, harness: &Harness, clock_injected: bool) -> Result<Arc<dyn Store>, Box<Problem>> {
        crate::store::open_store(harness, clock_injected)
    }

    fn open_sqlite_audit(&self, harness: &Harness, path: &str) -> Result<Arc<dyn AuditSink>, Box<Problem>> {
        crate::store::open_sqlite_audit(harness, path).map(|sink| sink as Arc<dyn AuditSink>)
    }

    fn transports(&self, harness: &Harness, tools: &[&Tool]) -> (Arc<dyn Invoker>, Vec<Problem>) {
        let (transports, problems) = Transports::build(harness.spec(), tools.iter().copied(), &self.transports);
        (Arc::new(transports), problems)
    }

    fn observe(&self, harness: &Harness, sink: Arc<dyn AuditSink>) -> Arc<dyn AuditSink> {
        crate::telemetry::observe(harness, sink)
    }

    fn open_journal(&self, harness: &Harness) -> Result<Arc<dyn Journal>, Box<Problem>> {
        crate::store::open_journal(harness)
    }
}
