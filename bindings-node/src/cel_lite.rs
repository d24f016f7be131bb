//! `celLite` (native side): compile a cel-lite expression once, evaluate it
//! against JavaScript values as often as needed.
//!
//! Conversion and error mapping only; parsing, evaluation and the approval
//! rule are the core's (`harnessweaver_core::host::cel`). Only what the
//! expression reads is converted (the core's [`Need`]s: of a map, only the
//! fields a selection chain names), by one of two routes that give the same
//! values: `cel_lite.js` gathers those parts in JavaScript and hands them over
//! as the arguments of one raw N-API function (`evaluateParts`,
//! `approvalParts`: no property read by name, no per-call borrow
//! bookkeeping of a class method), and anything unusual (an unknown key, a map
//! that is not a plain object, an own `undefined`) takes the class methods,
//! which read the same parts with N-API and report what is wrong.
//! `cel_lite.js` turns the errors thrown here (`kind` `cel_compile` or
//! `unevaluable`) into `celLite.CompileError` and `celLite.Unevaluable`.

use std::cell::Cell;
use std::ffi::CString;
use std::ptr;
use std::sync::Arc;

use harnessweaver_core::host::canonical::MAX_DEPTH;
use harnessweaver_core::host::cel::{self as core_cel, CelOutcome as Outcome, Need, Var, Vars};
use harnessweaver_core::host::Error as CoreError;
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::{check, js_string, napi_check, string, throw, to_js, to_value, Json};

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

/// A compiled cel-lite expression (native side); `cel_lite.js` wraps it.
#[napi]
pub struct CelProgram {
    shared: Arc<Compiled>,
}

/// A program with its conversion plan, shared by the class and its handle.
struct Compiled {
    inner: core_cel::Program,
    /// What to convert of each name the expression uses, in slot order: the
    /// core's [`Need`]s with their names ready for N-API, made once at compile
    /// so an evaluation allocates no key.
    plan: Vec<(CString, Plan)>,
}

/// A [`Need`] with its field names as C strings.
enum Plan {
    Whole,
    Fields(Vec<(CString, String, Plan)>),
}

impl Plan {
    fn of(need: &Need) -> Option<Self> {
        match need {
            Need::Whole => Some(Plan::Whole),
            Need::Fields(fields) => fields
                .iter()
                .map(|(name, need)| Some((CString::new(name.as_str()).ok()?, name.clone(), Plan::of(need)?)))
                .collect::<Option<Vec<_>>>()
                .map(Plan::Fields),
        }
    }
}

/// A plan as `cel_lite.js` walks it: `null` (whole) or `[field, need, …]`.
fn need_json(plan: &Plan) -> Value {
    match plan {
        Plan::Whole => Value::Null,
        Plan::Fields(fields) => Value::Array(fields.iter().flat_map(|(_, name, plan)| [Value::String(name.clone()), need_json(plan)]).collect()),
    }
}

/// The variables of one evaluation, converted, by slot.
struct Converted<'p> {
    names: &'p [String],
    values: [Option<Value>; Var::ALL.len()],
}

impl core_cel::Bindings for Converted<'_> {
    fn binding(&self, name: &str) -> Option<&Value> {
        let slot = self.names.iter().position(|n| n == name)?;
        self.values.get(slot)?.as_ref()
    }
}

/// Converts the parts of JavaScript values a program reads.
struct Reader {
    env: sys::napi_env,
    /// `Object.prototype`, looked up on first need.
    object_prototype: Cell<sys::napi_value>,
}

impl Reader {
    /// Converts what `plan` reads of `value` (the core's conversion rules for
    /// every part converted; a map keeps only the fields named).
    ///
    /// # Safety
    /// `value` must be valid for the current call.
    unsafe fn read(&self, value: sys::napi_value, plan: &Plan, depth: usize) -> std::result::Result<Value, CoreError> {
        let Plan::Fields(fields) = plan else { return unsafe { to_value(self.env, value, depth) } };
        if !unsafe { self.is_plain_object(value)? } {
            // Not a map: converted whole, so the evaluation reports its type (or
            // the conversion its lack of a JSON form) as it would anyway.
            return unsafe { to_value(self.env, value, depth) };
        }
        if depth >= MAX_DEPTH {
            return Err(CoreError::Value { code: "nesting_too_deep", message: format!("value nests deeper than {MAX_DEPTH} levels") });
        }
        let keys = unsafe { self.own_keys(value)? };
        let mut map = Map::new();
        for (c_name, name, plan) in fields {
            // Own, enumerable, string keys only (what the whole conversion and
            // `cel_lite.js`'s `propertyIsEnumerable` see).
            if keys.contains(name) {
                let mut item = ptr::null_mut();
                check(unsafe { sys::napi_get_named_property(self.env, value, c_name.as_ptr(), &mut item) }, "property")?;
                map.insert(name.clone(), unsafe { self.read(item, plan, depth + 1)? });
            }
        }
        Ok(Value::Object(map))
    }

    /// The own enumerable string keys of an object.
    unsafe fn own_keys(&self, object: sys::napi_value) -> std::result::Result<Vec<String>, CoreError> {
        let env = self.env;
        let mut keys = ptr::null_mut();
        check(
            unsafe {
                sys::napi_get_all_property_names(
                    env,
                    object,
                    sys::KeyCollectionMode::own_only,
                    sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                    sys::KeyConversion::numbers_to_strings,
                    &mut keys,
                )
            },
            "keys",
        )?;
        let mut len = 0u32;
        check(unsafe { sys::napi_get_array_length(env, keys, &mut len) }, "keys")?;
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut key = ptr::null_mut();
            check(unsafe { sys::napi_get_element(env, keys, i, &mut key) }, "key")?;
            out.push(unsafe { string(env, key)? });
        }
        Ok(out)
    }

    /// A non-array object whose prototype is `Object.prototype` or null.
    unsafe fn is_plain_object(&self, value: sys::napi_value) -> std::result::Result<bool, CoreError> {
        let env = self.env;
        let mut ty = 0;
        check(unsafe { sys::napi_typeof(env, value, &mut ty) }, "value")?;
        if ty != sys::ValueType::napi_object {
            return Ok(false);
        }
        let mut is_array = false;
        check(unsafe { sys::napi_is_array(env, value, &mut is_array) }, "value")?;
        if is_array {
            return Ok(false);
        }
        let mut proto = ptr::null_mut();
        check(unsafe { sys::napi_get_prototype(env, value, &mut proto) }, "value")?;
        let mut same = false;
        check(unsafe { sys::napi_strict_equals(env, proto, self.object_prototype()?, &mut same) }, "value")?;
        if same {
            return Ok(true);
        }
        check(unsafe { sys::napi_typeof(env, proto, &mut ty) }, "value")?;
        Ok(ty == sys::ValueType::napi_null)
    }

    fn object_prototype(&self) -> std::result::Result<sys::napi_value, CoreError> {
        let known = self.object_prototype.get();
        if !known.is_null() {
            return Ok(known);
        }
        let mut plain = ptr::null_mut();
        check(unsafe { sys::napi_create_object(self.env, &mut plain) }, "value")?;
        let mut proto = ptr::null_mut();
        check(unsafe { sys::napi_get_prototype(self.env, plain, &mut proto) }, "value")?;
        self.object_prototype.set(proto);
        Ok(proto)
    }
}

impl Compiled {
    /// The variables the expression uses, converted from `vars` (a plain object;
    /// `undefined` or `null` for none), only as far as the expression reads
    /// them. A key that is none of the six names is refused: no expression
    /// could use it.
    fn variables(&self, env: &Env, vars: Option<Unknown<'_>>) -> Result<Converted<'_>> {
        let mut converted = Converted { names: self.inner.names(), values: Default::default() };
        let raw = env.raw();
        let Some(vars) = vars else { return Ok(converted) };
        match vars.get_type()? {
            ValueType::Undefined | ValueType::Null => return Ok(converted),
            ValueType::Object => {}
            other => return Err(throw(env, &Vars::not_a_mapping(&format!("{other:?}").to_lowercase()))),
        }
        let obj = vars.value().value;
        let mut is_array = false;
        napi_check(unsafe { sys::napi_is_array(raw, obj, &mut is_array) }, "array")?;
        if is_array {
            return Err(throw(env, &Vars::not_a_mapping("array")));
        }
        unsafe { check_names(env, obj) }?;
        let reader = Reader { env: raw, object_prototype: Cell::new(ptr::null_mut()) };
        for ((c_name, plan), slot) in self.plan.iter().zip(converted.values.iter_mut()) {
            let mut value = ptr::null_mut();
            napi_check(unsafe { sys::napi_get_named_property(raw, obj, c_name.as_ptr(), &mut value) }, "variable")?;
            let mut ty = 0;
            napi_check(unsafe { sys::napi_typeof(raw, value, &mut ty) }, "variable")?;
            if ty == sys::ValueType::napi_undefined {
                continue;
            }
            *slot = Some(unsafe { reader.read(value, plan, 0) }.map_err(|e| throw(env, &e))?);
        }
        Ok(converted)
    }
}

/// Refuses a key of `vars` that is none of the six names.
///
/// # Safety
/// `obj` must be a valid object for the current call.
unsafe fn check_names(env: &Env, obj: sys::napi_value) -> Result<()> {
    let raw = env.raw();
    let mut keys = ptr::null_mut();
    napi_check(
        unsafe {
            sys::napi_get_all_property_names(
                raw,
                obj,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        },
        "keys",
    )?;
    let mut len = 0u32;
    napi_check(unsafe { sys::napi_get_array_length(raw, keys, &mut len) }, "keys")?;
    for i in 0..len {
        let mut key = ptr::null_mut();
        napi_check(unsafe { sys::napi_get_element(raw, keys, i, &mut key) }, "key")?;
        // Every name is short: a key that does not fit the buffer is none of them.
        let mut buf = [0u8; 16];
        let mut written = 0usize;
        napi_check(unsafe { sys::napi_get_value_string_utf8(raw, key, buf.as_mut_ptr().cast(), buf.len(), &mut written) }, "key")?;
        let known = buf.get(..written).and_then(|k| std::str::from_utf8(k).ok()).and_then(Var::parse).is_some();
        if !known {
            let key = unsafe { string(raw, key) }.map_err(|e| throw(env, &e))?;
            Vars::check_key(&key).map_err(|e| throw(env, &e))?;
        }
    }
    Ok(())
}

/// What one evaluation hands back: the value, or the approval verdict.
#[derive(Clone, Copy)]
enum Want {
    Value,
    Approval,
}

impl Compiled {
    /// Evaluates against converted variables and builds the JavaScript result:
    /// the value (throwing `unevaluable`), or for the approval rule `true`,
    /// `false` or the reason a human must approve (`cel_lite.js` shapes it).
    fn answer(&self, env: &Env, vars: &Converted<'_>, want: Want) -> Result<sys::napi_value> {
        let raw = env.raw();
        match want {
            Want::Value => match self.inner.evaluate_with(vars) {
                Outcome::Value(v) => unsafe { to_js(raw, &v) },
                Outcome::Unevaluable { reason } => {
                    Err(throw_with(env, "unevaluable", "unevaluable", &reason, &[(c"reason", Value::String(reason.clone()))]))
                }
            },
            Want::Approval => {
                let verdict = self.inner.approval_required_with(vars);
                match verdict.reason {
                    Some(reason) => unsafe { js_string(raw, &reason) },
                    None => {
                        let mut out = ptr::null_mut();
                        napi_check(unsafe { sys::napi_get_boolean(raw, verdict.required, &mut out) }, "boolean")?;
                        Ok(out)
                    }
                }
            }
        }
    }
}

/// A JavaScript value built by hand, returned as it is.
pub struct Raw(sys::napi_value);

impl TypeName for Raw {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}

/// Marks the externals this file makes, so a foreign one is refused, not read.
const HANDLE_TAG: sys::napi_type_tag = sys::napi_type_tag { lower: 0x6877_6365_6c6c_6974, upper: 0x6861_6e64_6c65_0001 };

unsafe extern "C" fn drop_handle(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // Made by `Box::into_raw` in `handle`; N-API finalizes each external once.
    drop(unsafe { Box::from_raw(data.cast::<Arc<Compiled>>()) });
}

#[napi]
impl CelProgram {
    /// The source text the program was compiled from.
    #[napi(getter)]
    pub fn source(&self) -> String {
        self.shared.inner.source().to_string()
    }

    /// The variable names the expression uses, in order of first use.
    #[napi(getter)]
    pub fn names(&self) -> Vec<String> {
        self.shared.inner.names().to_vec()
    }

    /// What `cel_lite.js` gathers of each variable: `[name, need, …]`, a need
    /// being `null` (the whole value) or `[field, need, …]` (only those fields of a plain object).
    #[napi(getter, ts_return_type = "Array<unknown>")]
    pub fn plan(&self) -> Json {
        let names = self.shared.inner.names().iter();
        let plans = self.shared.plan.iter();
        Json(Value::Array(names.zip(plans).flat_map(|(name, (_, plan))| [Value::String(name.clone()), need_json(plan)]).collect()))
    }

    /// The handle the parts functions take (an external).
    #[napi(getter, ts_return_type = "unknown")]
    pub fn handle(&self, env: Env) -> Result<Raw> {
        let raw = env.raw();
        let data = Box::into_raw(Box::new(Arc::clone(&self.shared)));
        let mut out = ptr::null_mut();
        let made = unsafe { sys::napi_create_external(raw, data.cast(), Some(drop_handle), ptr::null_mut(), &mut out) };
        if made != sys::Status::napi_ok {
            drop(unsafe { Box::from_raw(data) });
            return Err(Error::from_reason("could not make the program's handle"));
        }
        napi_check(unsafe { sys::napi_type_tag_object(raw, out, &HANDLE_TAG) }, "handle")?;
        Ok(Raw(out))
    }

    /// Evaluates against `vars`; throws an error of kind `unevaluable` (with `reason`) when a runtime error stops it.
    #[napi(ts_args_type = "vars?: Record<string, unknown> | null", ts_return_type = "unknown")]
    pub fn evaluate(&self, env: Env, vars: Option<Unknown<'_>>) -> Result<Raw> {
        let converted = self.shared.variables(&env, vars)?;
        self.shared.answer(&env, &converted, Want::Value).map(Raw)
    }

    /// The approval rule: `true`/`false`, or the reason (a string) when the expression could not decide.
    #[napi(ts_args_type = "vars?: Record<string, unknown> | null", ts_return_type = "boolean | string")]
    pub fn approval_required(&self, env: Env, vars: Option<Unknown<'_>>) -> Result<Raw> {
        let converted = self.shared.variables(&env, vars)?;
        self.shared.answer(&env, &converted, Want::Approval).map(Raw)
    }
}

/// Compiles a cel-lite expression; throws an error of kind `cel_compile` with `code`, `line`, `column` and `reason`.
#[napi]
pub fn cel_lite_compile(env: Env, text: String) -> Result<CelProgram> {
    match core_cel::compile(&text) {
        Ok(inner) => {
            let plan = inner.names().iter().zip(inner.needs()).map(|(name, need)| Some((CString::new(name.as_str()).ok()?, Plan::of(need)?)));
            match plan.collect::<Option<Vec<_>>>() {
                Some(plan) => Ok(CelProgram { shared: Arc::new(Compiled { inner, plan }) }),
                None => Err(Error::from_reason("a name of the expression holds a NUL")),
            }
        }
        Err(e) => Err(throw_with(
            &env,
            e.code(),
            "cel_compile",
            &e.render(),
            &[(c"line", Value::from(e.line())), (c"column", Value::from(e.column())), (c"reason", Value::String(e.message().to_string()))],
        )),
    }
}

/// The most arguments a parts call takes (the handle, the presence bits and the parts).
const MAX_PARTS_ARGS: usize = 64;

/// Rebuilds the variables from the parts `cel_lite.js` gathered, walking the
/// plan in the same order: a whole value is one part (`undefined`: absent);
/// a map is one presence bit (absent: nothing of it follows), then its fields.
struct Parts<'a> {
    env: sys::napi_env,
    parts: std::slice::Iter<'a, sys::napi_value>,
    bits: u64,
}

impl Parts<'_> {
    unsafe fn build(&mut self, plan: &Plan, depth: usize) -> std::result::Result<Option<Value>, CoreError> {
        match plan {
            Plan::Whole => {
                let part = self.parts.next().copied().ok_or_else(parts_mismatch)?;
                let mut ty = 0;
                check(unsafe { sys::napi_typeof(self.env, part, &mut ty) }, "part")?;
                if ty == sys::ValueType::napi_undefined {
                    return Ok(None);
                }
                unsafe { to_value(self.env, part, depth) }.map(Some)
            }
            Plan::Fields(fields) => {
                let present = self.bits & 1 == 1;
                self.bits >>= 1;
                if !present {
                    return Ok(None);
                }
                if depth >= MAX_DEPTH {
                    return Err(CoreError::Value { code: "nesting_too_deep", message: format!("value nests deeper than {MAX_DEPTH} levels") });
                }
                let mut map = Map::new();
                for (_, name, plan) in fields {
                    if let Some(v) = unsafe { self.build(plan, depth + 1)? } {
                        map.insert(name.clone(), v);
                    }
                }
                Ok(Some(Value::Object(map)))
            }
        }
    }
}

#[cold]
fn parts_mismatch() -> CoreError {
    CoreError::Value { code: "invalid_value", message: "internal: the parts do not match the program".to_string() }
}

/// `evaluateParts(handle, bits, ...parts)` and `approvalParts(…)`.
///
/// # Safety
/// Called by N-API only, with a valid `env` and `info`.
unsafe fn parts_call(env: sys::napi_env, info: sys::napi_callback_info, want: Want) -> sys::napi_value {
    let js_env = Env::from_raw(env);
    let result = (|| -> Result<sys::napi_value> {
        let mut argv = [ptr::null_mut(); MAX_PARTS_ARGS];
        let mut argc = MAX_PARTS_ARGS;
        napi_check(unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) }, "arguments")?;
        let args = argv.get(..argc).ok_or_else(|| Error::from_reason("too many parts"))?;
        let (handle, rest) = args.split_first().ok_or_else(|| Error::from_reason("no handle"))?;
        let (bits, parts) = rest.split_first().ok_or_else(|| Error::from_reason("no presence bits"))?;
        let mut tagged = false;
        napi_check(unsafe { sys::napi_check_object_type_tag(env, *handle, &HANDLE_TAG, &mut tagged) }, "handle")?;
        if !tagged {
            return Err(Error::from_reason("not a cel-lite program handle"));
        }
        let mut data = ptr::null_mut();
        napi_check(unsafe { sys::napi_get_value_external(env, *handle, &mut data) }, "handle")?;
        // Tagged: made by `CelProgram::handle`, alive while JavaScript holds it.
        let compiled: &Arc<Compiled> = unsafe { &*data.cast::<Arc<Compiled>>() };
        let mut bits_f = 0.0;
        napi_check(unsafe { sys::napi_get_value_double(env, *bits, &mut bits_f) }, "presence bits")?;
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "cel_lite.js sends an integer below 2^53")]
        let mut reader = Parts { env, parts: parts.iter(), bits: bits_f as u64 };
        let mut converted = Converted { names: compiled.inner.names(), values: Default::default() };
        for ((_, plan), slot) in compiled.plan.iter().zip(converted.values.iter_mut()) {
            *slot = unsafe { reader.build(plan, 0) }.map_err(|e| throw(&js_env, &e))?;
        }
        compiled.answer(&js_env, &converted, want)
    })();
    match result {
        Ok(value) => value,
        Err(err) => {
            if err.status != Status::PendingException {
                let message = js_string_or_null(env, &err.reason);
                let mut js_err = ptr::null_mut();
                if unsafe { sys::napi_create_error(env, ptr::null_mut(), message, &mut js_err) } == sys::Status::napi_ok {
                    unsafe { sys::napi_throw(env, js_err) };
                }
            }
            ptr::null_mut()
        }
    }
}

fn js_string_or_null(env: sys::napi_env, s: &str) -> sys::napi_value {
    unsafe { js_string(env, s) }.unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn evaluate_parts(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { parts_call(env, info, Want::Value) }
}

unsafe extern "C" fn approval_parts(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe { parts_call(env, info, Want::Approval) }
}

/// The raw parts functions, `[evaluateParts, approvalParts]`, which take
/// `(handle, bits, ...parts)`: napi-rs's generated functions convert
/// arguments one by one, these read them all at once.
#[napi(
    ts_return_type = "[(handle: unknown, bits: number, ...parts: unknown[]) => unknown, (handle: unknown, bits: number, ...parts: unknown[]) => boolean | string]"
)]
pub fn cel_lite_parts_functions(env: Env) -> Result<Raw> {
    let raw = env.raw();
    let mut out = ptr::null_mut();
    napi_check(unsafe { sys::napi_create_array_with_length(raw, 2, &mut out) }, "array")?;
    for (i, (name, cb)) in [
        (c"evaluateParts", evaluate_parts as unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value),
        (c"approvalParts", approval_parts),
    ]
    .into_iter()
    .enumerate()
    {
        let mut f = ptr::null_mut();
        napi_check(unsafe { sys::napi_create_function(raw, name.as_ptr(), NAPI_AUTO_LENGTH, Some(cb), ptr::null_mut(), &mut f) }, "function")?;
        let i = u32::try_from(i).map_err(|_| Error::from_reason("index"))?;
        napi_check(unsafe { sys::napi_set_element(raw, out, i, f) }, "element")?;
    }
    Ok(Raw(out))
}

/// N-API's "the string ends at its NUL".
const NAPI_AUTO_LENGTH: isize = -1;
