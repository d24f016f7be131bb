//! Secrets as handles (issue 21): the scope check of step 4 and the values
//! a transport hands the tool. A manifest names handles; the harness maps
//! each to a source and scopes them per principal id or role. Values are
//! read at the call, handed only through the transport's channel (the
//! process protocol's `secrets` field), masked in the output (step 9) and
//! never stored, audited or logged.

use std::sync::Arc;

use super::steps::Deciding;
use super::{Governor, Refusal, Stop, ToolRuntime};
use crate::call::{RefusalCode, Step};
use crate::harness::SecretSource;

impl Governor {
    /// Step 4: the principal's scope holds every handle the tool needs
    /// (`secret_not_in_scope` before the handler otherwise).
    pub(super) fn secret_scope(&self, rt: &ToolRuntime, call: &Deciding<'_>) -> Result<(), Stop> {
        if rt.secrets.is_empty() {
            return Ok(());
        }
        let p = &call.ctx.principal;
        let missing = self.secrets.out_of_scope(&rt.secrets, &p.id, &p.roles);
        if missing.is_empty() {
            return Ok(());
        }
        let mut r = Refusal::new(
            RefusalCode::SecretNotInScope,
            Step::Policy,
            format!("`{}` needs secret `{}`, which is not in the scope of principal `{}`", call.tool, missing.join("`, `"), p.id),
        );
        r.reasons = missing.iter().map(|h| format!("secret {h}")).collect();
        Err(Stop::Refused(r))
    }

    /// The values of the tool's secret handles, by handle, read now from
    /// their sources (a missing source gives no entry: the tool sees the
    /// handle absent, never another value).
    pub fn secret_values(&self, tool: &str) -> Vec<(String, Arc<str>)> {
        let Some(rt) = self.tool(tool) else { return Vec::new() };
        rt.secrets
            .iter()
            .filter_map(|h| {
                let value = match self.secrets.sources.get(h)? {
                    SecretSource::Env(var) => std::env::var(var).ok()?,
                    SecretSource::File(path) => {
                        let full = self.secret_dir.join(path);
                        let text = std::fs::read_to_string(full).ok()?;
                        text.strip_suffix('\n').map(str::to_string).unwrap_or(text)
                    }
                };
                (!value.is_empty()).then(|| (h.clone(), Arc::from(value)))
            })
            .collect()
    }
}
