//! `celLite` (native side): compile an expression once into a native function
//! that evaluates the parts `cel_lite.js` gathers.
//!
//! Conversion only; the reads, evaluation and approval rule are the core's
//! (`host::cel`). `celLiteCompile` returns `[evaluate, text]`: `text` is the
//! JSON of the core's `Read` list as `[name, parent, whole, depth]` (or of
//! the compile error), from which `cel_lite.js` writes one gather function
//! per program, and `evaluate(k…, p…)` is one raw N-API function holding the
//! compiled program. Its arguments: words of 2-bit kinds (pair 0 says what
//! to return: 0 the value, 1 the approval verdict; pair `i + 1` the part of
//! read `i`: 0 absent, 1 a string, number, bool or null, 2 a map read field
//! by field, 3 a value's JSON text; 16 pairs a word), then one argument per
//! read. It returns the value (throwing the unevaluable reason, a string), or
//! for the verdict `true`, `false` or the reason. A part's strings are read
//! into the buffers of the last evaluation (no allocation once warm).

use std::cell::RefCell;
use std::ffi::CString;
use std::{mem, ptr};

use harnessweaver_core::host::canonical;
use harnessweaver_core::host::cel::{self as core_cel, CelOutcome, Part, Program};
use harnessweaver_core::host::{value_of_text, Error as CoreError};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{json, Value};

use crate::{js_string, napi_check, throw};

/// Pairs of kind bits per argument word.
const PAIRS: usize = 16;

/// Compiles a cel-lite expression: `[evaluate, reads]`, or `[null, {code, message, line, column, reason}]`
/// (`message` rendered with the line and a caret), the second as JSON text.
#[napi(ts_return_type = "[((...args: unknown[]) => unknown) | null, string]")]
pub fn cel_lite_compile(env: Env, text: String) -> Result<Unknown<'static>> {
    let raw = env.raw();
    let (function, data) = match core_cel::compile(&text) {
        Ok(program) => {
            let reads: Vec<Value> = program.reads().iter().map(|r| json!([r.name, r.parent, r.whole, r.depth])).collect();
            (unsafe { evaluate_function(raw, program)? }, Value::Array(reads))
        }
        Err(e) => {
            let mut null = ptr::null_mut();
            napi_check(unsafe { sys::napi_get_null(raw, &mut null) }, "null")?;
            (null, json!({"code": e.code(), "message": e.render(), "line": e.line(), "column": e.column(), "reason": e.message()}))
        }
    };
    let mut out = ptr::null_mut();
    napi_check(unsafe { sys::napi_create_array_with_length(raw, 2, &mut out) }, "array")?;
    napi_check(unsafe { sys::napi_set_element(raw, out, 0, function) }, "element")?;
    napi_check(unsafe { sys::napi_set_element(raw, out, 1, js_string(raw, &data.to_string())?) }, "element")?;
    Ok(unsafe { Unknown::from_raw_unchecked(raw, out) })
}

/// Throws the core's error for `vars` that are not a mapping (`type_name`) or hold an unknown `key`.
#[napi]
pub fn cel_lite_bad_vars(env: Env, type_name: Option<String>, key: Option<String>) -> Result<()> {
    let err = match (type_name, key) {
        (Some(type_name), _) => core_cel::not_a_mapping(&type_name),
        (None, key) => match core_cel::check_key(key.as_deref().unwrap_or_default()) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        },
    };
    Err(throw(&env, &err))
}

/// A compiled program and the parts of its last evaluation, whose strings the
/// next one reads into: no allocation once warm.
struct Compiled {
    program: Program,
    scratch: RefCell<(Vec<Part>, String)>,
}

/// The most bytes of those buffers kept between evaluations.
const KEEP: usize = 64 << 10;

/// A native function holding `program`, freed with it.
unsafe fn evaluate_function(env: sys::napi_env, program: Program) -> Result<sys::napi_value> {
    let data = Box::into_raw(Box::new(Compiled { program, scratch: RefCell::default() }));
    let mut function = ptr::null_mut();
    let made = unsafe { sys::napi_create_function(env, c"evaluate".as_ptr(), AUTO_LENGTH, Some(evaluate), data.cast(), &mut function) };
    if made != sys::Status::napi_ok
        || unsafe { sys::napi_add_finalizer(env, function, data.cast(), Some(drop_program), ptr::null_mut(), ptr::null_mut()) }
            != sys::Status::napi_ok
    {
        // Not handed to N-API (or no finalizer): freed here; a made function is never called with it.
        drop(unsafe { Box::from_raw(data) });
        return Err(Error::from_reason("could not make the program's function"));
    }
    Ok(function)
}

/// N-API's "the string ends at its NUL".
const AUTO_LENGTH: isize = -1;

unsafe extern "C" fn drop_program(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // Made by `Box::into_raw` in `evaluate_function`; N-API finalizes once.
    drop(unsafe { Box::from_raw(data.cast::<Compiled>()) });
}

unsafe extern "C" fn evaluate(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    match unsafe { evaluate_parts(env, info) } {
        Ok(value) => value,
        Err(err) => {
            if err.status != Status::PendingException {
                let message = CString::new(err.reason.replace('\0', "")).unwrap_or_default();
                unsafe { sys::napi_throw_error(env, ptr::null(), message.as_ptr()) };
            }
            ptr::null_mut()
        }
    }
}

unsafe fn evaluate_parts(env: sys::napi_env, info: sys::napi_callback_info) -> Result<sys::napi_value> {
    let (mut stack, mut heap, mut argc, mut data) = ([ptr::null_mut(); 64], Vec::new(), 64, ptr::null_mut());
    napi_check(unsafe { sys::napi_get_cb_info(env, info, &mut argc, stack.as_mut_ptr(), ptr::null_mut(), &mut data) }, "arguments")?;
    let args = match stack.get(..argc) {
        Some(args) => args,
        None => {
            heap.resize(argc, ptr::null_mut());
            napi_check(unsafe { sys::napi_get_cb_info(env, info, &mut argc, heap.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) }, "arguments")?;
            heap.as_slice()
        }
    };
    // Made by `evaluate_function`, alive while the function is.
    let Compiled { program, scratch } = unsafe { &*data.cast::<Compiled>() };
    let reads = program.reads();
    let (words, values) = args.split_at_checked((reads.len() + 1).div_ceil(PAIRS)).ok_or_else(|| Error::from_reason("missing arguments"))?;
    // The kinds, read a word at a time as the pairs are (in order: 0, then 1 per read).
    let mut bits = 0;
    let mut kind = |pair: usize| -> Result<u32> {
        if pair.is_multiple_of(PAIRS) {
            let word = words.get(pair / PAIRS).copied().unwrap_or(ptr::null_mut());
            napi_check(unsafe { sys::napi_get_value_uint32(env, word, &mut bits) }, "kinds")?;
        }
        Ok((bits >> (2 * (pair % PAIRS))) & 3)
    };
    let want = kind(0)?;
    // A getter run while gathering cannot evaluate this program again before this call, but a
    // program evaluated from inside another's gather would: that evaluation has buffers of its own.
    let mut fresh = Default::default();
    let mut held = scratch.try_borrow_mut();
    let (parts, text) = held.as_deref_mut().unwrap_or(&mut fresh);
    parts.resize(reads.len(), Part::Absent);
    let mut kept = 0;
    for (i, part) in parts.iter_mut().enumerate() {
        *part = match (kind(i + 1)?, values.get(i), mem::take(part)) {
            (1, Some(value), old) => {
                let mut slot = if let Part::Value(old) = old { old } else { Value::Null };
                unsafe { scalar(env, *value, &mut slot, &mut kept) }.map_err(|e| throw(&Env::from_raw(env), &e))?;
                Part::Value(slot)
            }
            (3, Some(value), _) => {
                let mut slot = Value::String(mem::take(text));
                unsafe { scalar(env, *value, &mut slot, &mut kept) }.map_err(|e| throw(&Env::from_raw(env), &e))?;
                let Value::String(json) = slot else { return Err(Error::from_reason("a part's text is not a string")) };
                let read = value_of_text(&json).map_err(|e| throw(&Env::from_raw(env), &e));
                *text = json;
                Part::Value(read?)
            }
            (2, ..) => Part::Map,
            _ => Part::Absent,
        };
    }
    let answer = unsafe { answer(env, program, parts, want) };
    if kept > KEEP {
        parts.clear();
        *text = String::new();
    }
    answer
}

/// The value (throwing the unevaluable reason), or the verdict: `true`, `false` or the reason.
unsafe fn answer(env: sys::napi_env, program: &Program, parts: &[Part], want: u32) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    if want == 1 {
        let verdict = program.approval_required_parts(parts);
        return match verdict.reason {
            Some(reason) => unsafe { js_string(env, &reason) },
            None => napi_check(unsafe { sys::napi_get_boolean(env, verdict.required, &mut out) }, "boolean").map(|()| out),
        };
    }
    match program.evaluate_parts(parts) {
        // A string, number, bool or null as itself; anything else as JSON text `cel_lite.js` parses (an object).
        CelOutcome::Value(Value::String(s)) => unsafe { js_string(env, &s) },
        CelOutcome::Value(Value::Number(n)) => unsafe { f64::to_napi_value(env, n.as_f64().unwrap_or(0.0)) },
        CelOutcome::Value(Value::Bool(b)) => unsafe { bool::to_napi_value(env, b) },
        CelOutcome::Value(Value::Null) => unsafe { Null::to_napi_value(env, Null) },
        CelOutcome::Value(v) => {
            let mut wrapped = ptr::null_mut();
            napi_check(unsafe { sys::napi_create_object(env, &mut wrapped) }, "object")?;
            napi_check(unsafe { sys::napi_set_named_property(env, wrapped, c"json".as_ptr(), js_string(env, &v.to_string())?) }, "json")?;
            Ok(wrapped)
        }
        CelOutcome::Unevaluable { reason } => {
            napi_check(unsafe { sys::napi_throw(env, js_string(env, &reason)?) }, "throw")?;
            Err(Error::new(Status::PendingException, reason))
        }
    }
}

/// Reads a string, number, bool or null into `slot`, a string into the buffer `slot` holds
/// (adding its bytes to `kept`).
unsafe fn scalar(env: sys::napi_env, value: sys::napi_value, slot: &mut Value, kept: &mut usize) -> std::result::Result<(), CoreError> {
    let (mut ty, mut written, mut f, mut b) = (sys::ValueType::napi_string, 0usize, 0.0, false);
    // A part mostly keeps its type from one evaluation to the next: a string or number is read as one
    // without asking its type first (a wrong guess fails without throwing, and the type is asked).
    if let Value::Number(_) = slot {
        if unsafe { sys::napi_get_value_double(env, value, &mut f) } == sys::Status::napi_ok {
            *slot = canonical::double_value(f)?;
            return Ok(());
        }
    }
    if !matches!(slot, Value::String(_)) {
        unsafe { sys::napi_typeof(env, value, &mut ty) };
    }
    if ty != sys::ValueType::napi_string {
        *slot = match ty {
            sys::ValueType::napi_number => {
                unsafe { sys::napi_get_value_double(env, value, &mut f) };
                canonical::double_value(f)?
            }
            sys::ValueType::napi_boolean => {
                unsafe { sys::napi_get_value_bool(env, value, &mut b) };
                Value::Bool(b)
            }
            _ => Value::Null,
        };
        return Ok(());
    }
    let mut bytes = if let Value::String(s) = mem::take(slot) { s.into_bytes() } else { Vec::new() };
    bytes.clear();
    // One call when it fits: N-API never writes part of a character (at most 4 bytes) and keeps a
    // byte for the NUL, so 5 bytes to spare means all was written. Else its length in UTF-16 units
    // (free) bounds it: each unit is at most 3 bytes of UTF-8.
    for pass in 0..2 {
        let mut units = 64;
        if pass == 1 {
            unsafe { sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units) };
            units = 3 * units + 6;
        }
        bytes.reserve(units);
        let status = unsafe { sys::napi_get_value_string_utf8(env, value, bytes.as_mut_ptr().cast(), bytes.capacity(), &mut written) };
        if status == sys::Status::napi_string_expected {
            *slot = Value::Null;
            return unsafe { scalar(env, value, slot, kept) };
        }
        if written + 5 < bytes.capacity() {
            break;
        }
    }
    // SAFETY: N-API wrote `written` bytes, fewer than the capacity, at the start of the buffer.
    unsafe { bytes.set_len(written.min(bytes.capacity())) };
    *kept += bytes.capacity();
    // N-API hands out UTF-8 (lone surrogates become U+FFFD), so this does not fail.
    *slot = Value::String(String::from_utf8(bytes).map_err(|_| CoreError::value("invalid_string", "string is not valid Unicode"))?);
    Ok(())
}
