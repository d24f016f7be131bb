//! `celLite` (native side): compile a cel-lite expression once, evaluate it
//! against JavaScript values as often as needed.
//!
//! Conversion and error mapping only; parsing, evaluation and the approval
//! rule are the core's (`harnessweaver_core::cel_lite`). Only the variables an
//! expression uses are converted, straight from JavaScript values to
//! `serde_json::Value`. `cel_lite.js` turns the errors thrown here (`kind`
//! `cel_compile` or `unevaluable`) into `celLite.CompileError` and
//! `celLite.Unevaluable`.

use std::ptr;

use harnessweaver_core::cel_lite::{self as core_cel, Outcome, NAMES};
use harnessweaver_core::Error as CoreError;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::{js_string, napi_check, throw, to_js, to_value, Json};

/// Throws a JavaScript `Error` with `code`, `kind` and the given extra properties.
fn throw_with(env: &Env, code: &str, kind: &str, message: &str, extra: &[(&std::ffi::CStr, Value)]) -> Error {
    let raw = env.raw();
    let built = (|| -> Result<()> {
        let js_code = unsafe { js_string(raw, code)? };
        let js_message = unsafe { js_string(raw, message)? };
        let mut js_err = ptr::null_mut();
        napi_check(unsafe { sys::napi_create_error(raw, js_code, js_message, &mut js_err) }, "error")?;
        let kind = unsafe { js_string(raw, kind)? };
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"kind".as_ptr(), kind) }, "kind")?;
        let problems = unsafe { to_js(raw, &Value::Array(Vec::new()))? };
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"problems".as_ptr(), problems) }, "problems")?;
        for (name, value) in extra {
            let value = unsafe { to_js(raw, value)? };
            napi_check(unsafe { sys::napi_set_named_property(raw, js_err, name.as_ptr(), value) }, "property")?;
        }
        napi_check(unsafe { sys::napi_throw(raw, js_err) }, "throw")?;
        Ok(())
    })();
    match built {
        Ok(()) => Error::new(Status::PendingException, message.to_string()),
        Err(e) => e,
    }
}

fn invalid_vars(env: &Env, message: String) -> Error {
    throw(env, &CoreError::InvalidArgument { code: "invalid_vars", message })
}

const NAMES_TEXT: &str = "`principal`, `tenant`, `task`, `tool`, `args`, `labels`";

/// A compiled cel-lite expression (native side); `cel_lite.js` wraps it.
#[napi]
pub struct CelProgram {
    inner: core_cel::Program,
}

impl CelProgram {
    /// The variables the expression uses, converted from `vars` (a plain object;
    /// `undefined` or `null` for none). A key that is none of the six names is
    /// refused: no expression could use it.
    fn variables(&self, env: &Env, vars: Option<Unknown<'_>>) -> Result<Map<String, Value>> {
        let mut map = Map::new();
        let Some(vars) = vars else { return Ok(map) };
        match vars.get_type()? {
            ValueType::Undefined | ValueType::Null => return Ok(map),
            ValueType::Object => {}
            _ => return Err(invalid_vars(env, "`vars` must be an object of variables".to_string())),
        }
        let raw = env.raw();
        let obj = vars.value().value;
        let mut is_array = false;
        napi_check(unsafe { sys::napi_is_array(raw, obj, &mut is_array) }, "array")?;
        if is_array {
            return Err(invalid_vars(env, "`vars` must be an object of variables, not an array".to_string()));
        }
        let object: Object<'_> = unsafe { vars.cast()? };
        for key in Object::keys(&object)? {
            if !NAMES.contains(&key.as_str()) {
                let shown: String = key.chars().take(40).collect();
                return Err(invalid_vars(
                    env,
                    format!("unknown variable `{shown}`; expressions can use {NAMES_TEXT}"),
                ));
            }
        }
        for name in self.inner.names() {
            let value: Unknown<'_> = object.get_named_property(name)?;
            if value.get_type()? == ValueType::Undefined {
                continue;
            }
            let value = unsafe { to_value(raw, value.value().value, 0) }.map_err(|e| throw(env, &e))?;
            map.insert(name.clone(), value);
        }
        Ok(map)
    }
}

#[napi]
impl CelProgram {
    /// The source text the program was compiled from.
    #[napi(getter)]
    pub fn source(&self) -> String {
        self.inner.source().to_string()
    }

    /// The variable names the expression uses, in order of first use.
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    /// Evaluates against `vars`; throws an error of kind `unevaluable` (with `reason`) when a runtime error stops it.
    #[napi(ts_args_type = "vars?: Record<string, unknown> | null", ts_return_type = "unknown")]
    pub fn evaluate(&self, env: Env, vars: Option<Unknown<'_>>) -> Result<Json> {
        let map = self.variables(&env, vars)?;
        match self.inner.evaluate(&map) {
            Outcome::Value(v) => Ok(Json(v)),
            Outcome::Unevaluable { reason } => Err(throw_with(
                &env,
                "unevaluable",
                "unevaluable",
                &reason,
                &[(c"reason", Value::String(reason.clone()))],
            )),
        }
    }

    /// The approval rule: `{ required, reason }`; true, unevaluable or not a bool means required.
    #[napi(
        ts_args_type = "vars?: Record<string, unknown> | null",
        ts_return_type = "{ required: boolean, reason: string | null }"
    )]
    pub fn approval_required(&self, env: Env, vars: Option<Unknown<'_>>) -> Result<Json> {
        let map = self.variables(&env, vars)?;
        let verdict = self.inner.approval_required(&map);
        Ok(Json(serde_json::json!({"required": verdict.required, "reason": verdict.reason})))
    }
}

/// Compiles a cel-lite expression; throws an error of kind `cel_compile` with `code`, `line`, `column` and `reason`.
#[napi]
pub fn cel_lite_compile(env: Env, text: String) -> Result<CelProgram> {
    match core_cel::compile(&text) {
        Ok(inner) => Ok(CelProgram { inner }),
        Err(e) => Err(throw_with(
            &env,
            e.code(),
            "cel_compile",
            &e.render(),
            &[
                (c"line", Value::from(e.line())),
                (c"column", Value::from(e.column())),
                (c"reason", Value::String(e.message().to_string())),
            ],
        )),
    }
}
