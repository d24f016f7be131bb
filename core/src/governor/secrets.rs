//! Secrets as handles (issue 21): the scope check of step 4 and the values
//! a transport hands the tool. A manifest names handles; the harness maps
//! each to a source and scopes them per principal id or role. Values are
//! read at the call, handed only through the transport's channel (the
//! process protocol's `secrets` field), masked in the output (step 9) and
//! never stored, audited or logged.

use std::sync::Arc;

use super::steps::Deciding;
use super::{Governor, Refusal, Stop, ToolRuntime};
use crate::call::{RefusalCode, SecretValues, Step, Transport};
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
    /// their sources, for its transport; none for a native tool that did not
    /// opt in (`secrets_delivery: native`). An `env` or `file` source that
    /// gives nothing leaves the handle absent (the tool never sees another
    /// value); a `command` that fails refuses the call (`secret_unavailable`),
    /// naming the handle and how to fix it, never a value.
    pub(super) fn read_secrets(&self, rt: &ToolRuntime) -> Result<SecretValues, Refusal> {
        if rt.secrets.is_empty() || (matches!(rt.transport, Transport::Native { .. }) && !rt.native_secrets) {
            return Ok(SecretValues::default());
        }
        let mut values: Vec<(String, Arc<str>)> = Vec::with_capacity(rt.secrets.len());
        for h in &rt.secrets {
            let value = match self.secrets.sources.get(h) {
                None => None,
                Some(SecretSource::Env(var)) => std::env::var(var).ok(),
                Some(SecretSource::File(path)) => {
                    std::fs::read_to_string(self.secret_dir.join(path)).ok().map(|text| text.strip_suffix('\n').map(str::to_string).unwrap_or(text))
                }
                Some(SecretSource::Command { argv, timeout_ms }) => {
                    let text = self.transports.secret_command(argv, &self.secret_dir, *timeout_ms).map_err(|why| unavailable(&rt.name, h, &why))?;
                    let value = text.trim();
                    if value.is_empty() {
                        return Err(unavailable(&rt.name, h, "its command printed nothing"));
                    }
                    Some(value.to_string())
                }
            };
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                values.push((h.clone(), Arc::from(value)));
            }
        }
        Ok(SecretValues(values.into()))
    }
}

/// `secret_unavailable` for handle `h` of `tool`: what went wrong and where to fix it.
fn unavailable(tool: &str, h: &str, why: &str) -> Refusal {
    let mut r = Refusal::new(
        RefusalCode::SecretUnavailable,
        Step::Invoke,
        format!("`{tool}` was not run: secret `{h}` could not be read ({why}); fix `spec.secrets.{h}.command` in harness.yaml or the secret manager it asks"),
    );
    r.reasons.push(format!("secret {h}"));
    r
}
