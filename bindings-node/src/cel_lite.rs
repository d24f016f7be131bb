//! `celLite` (native side): compile an expression once into a native function
//! that evaluates the parts the core's gather function collects.
//!
//! Conversion only; the reads, evaluation and approval rule are the core's
//! (`host::cel`). `celLiteCompile(text, fast)` returns `[evaluate, gather, names]`
//! (`gather`: the source of the core's JavaScript, `Program::gather_js`, that
//! gathers the parts and decides common cases; `names`: the variables used) or
//! throws `CompileError`. `evaluate(k…, p…)` takes the kind words and parts
//! (see `cel_lite/js.rs` in the core) and returns the value (throwing
//! `Unevaluable`), or for the verdict `true`, `false` or the reason.

use std::ptr;

use harnessweaver_core::host::cel::{self as core_cel, CelOutcome, Part, Program};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::json;
use smallvec::SmallVec;

use crate::{from_js, out, to_js, Js, Raw};

/// Pairs of kind bits per argument word.
const PAIRS: usize = 16;

/// Compiles a cel-lite expression: `[evaluate, gather, names]`; throws `CompileError`. `fast`
/// (default true): the gather function decides the common cases itself.
#[napi(ts_return_type = "[(...args: unknown[]) => unknown, string, string[]]")]
pub fn cel_lite_compile<'e>(env: &'e Env, text: String, fast: Option<bool>) -> Result<Unknown<'e>> {
    let js = Js(env.raw());
    let program = match core_cel::compile(&text) {
        Ok(program) => program,
        Err(e) => {
            let (line, column, reason) = (json!(e.line()), json!(e.column()), json!(e.message()));
            let problems = json!([{"code": e.code(), "message": reason, "file": null, "line": line, "column": column, "path": ""}]);
            return Err(js.error("CompileError", &e.render(), e.code(), &problems, &[(c"line", line), (c"column", column), (c"reason", reason)]));
        }
    };
    let (gather, names) = (js.string(&program.gather_js(fast.unwrap_or(true)))?, to_js(js, &json!(program.names()))?);
    let data = Box::into_raw(Box::new(program));
    let function = out!(napi_create_function(js.0, c"evaluate".as_ptr(), -1, Some(evaluate), data.cast()));
    let finalized = function.and_then(|f| {
        crate::ok(unsafe { sys::napi_add_finalizer(js.0, f, data.cast(), Some(crate::release::<Program>), ptr::null_mut(), ptr::null_mut()) })
            .map(|()| f)
    });
    // Not handed to N-API (or no finalizer): freed here; a made function is never called with it.
    let function = finalized.inspect_err(|_| drop(unsafe { Box::from_raw(data) }))?;
    let answer = out!(napi_create_array_with_length(js.0, 3))?;
    for (i, v) in [function, gather, names].into_iter().enumerate() {
        crate::ok(unsafe { sys::napi_set_element(js.0, answer, i as u32, v) })?;
    }
    Ok(js.unknown(answer))
}

unsafe extern "C" fn evaluate(env: sys::napi_env, info: sys::napi_callback_info) -> Raw {
    match unsafe { evaluate_parts(Js(env), info) } {
        Ok(value) => value,
        Err(err) => {
            unsafe { JsError::from(err).throw_into(env) };
            ptr::null_mut()
        }
    }
}

unsafe fn evaluate_parts(js: Js, info: sys::napi_callback_info) -> Result<Raw> {
    // On the stack when they fit (no allocation for the arguments, their kinds or the parts).
    let (mut args, mut argc, mut data) = (SmallVec::<[Raw; 24]>::from_elem(ptr::null_mut(), 24), 24, ptr::null_mut());
    crate::ok(unsafe { sys::napi_get_cb_info(js.0, info, &mut argc, args.as_mut_ptr(), ptr::null_mut(), &mut data) })?;
    if argc > args.len() {
        args.resize(argc, ptr::null_mut());
        crate::ok(unsafe { sys::napi_get_cb_info(js.0, info, &mut argc, args.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) })?;
    }
    args.truncate(argc);
    // Made by `cel_lite_compile`, alive while the function is.
    let program = unsafe { &*data.cast::<Program>() };
    let reads = program.reads();
    let (words, values) = args.split_at_checked((reads.len() + 1).div_ceil(PAIRS)).ok_or_else(|| Error::from_reason("missing arguments"))?;
    let words = words.iter().map(|w| out!(napi_get_value_uint32(js.0, *w))).collect::<Result<SmallVec<[u32; 4]>>>()?;
    let kind = |pair: usize| (words.get(pair / PAIRS).copied().unwrap_or(0) >> (2 * (pair % PAIRS))) & 3;
    let mut parts = SmallVec::<[Part; 12]>::with_capacity(reads.len());
    for (i, read) in reads.iter().enumerate() {
        parts.push(match (kind(i + 1), values.get(i)) {
            (1, Some(v)) => Part::Value(from_js(js, *v, read.depth).map_err(|e| js.raise(&e))?),
            (2, _) => Part::Map,
            _ => Part::Absent,
        });
    }
    if kind(0) == 1 {
        let verdict = program.approval_required_parts(&parts);
        return verdict.reason.map_or_else(|| out!(napi_get_boolean(js.0, verdict.required)), |reason| js.string(&reason));
    }
    match program.evaluate_parts(&parts) {
        CelOutcome::Value(v) => to_js(js, &v),
        CelOutcome::Unevaluable { reason } => Err(js.error("Unevaluable", &reason, "unevaluable", &json!([]), &[(c"reason", json!(reason))])),
    }
}
