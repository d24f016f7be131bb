//! The Redis store: state shared by governors on many hosts.
//!
//! Every decision is one round trip: a Lua script runs GCRA over all of a
//! call's rate buckets on the server, all or nothing; budgets, labels and
//! approval transitions (compare-and-set, so an approval is used once across
//! hosts) are scripts too. Keys are namespaced per harness as
//! `hw:{<namespace>}:…`; the braces make the namespace a hash tag, so every
//! key of a harness lives in one Redis Cluster slot and the scripts may touch
//! several of them. Rate buckets expire when they are spent (at most their
//! period), runs `run_ttl` after their last change, approvals `run_ttl` after
//! they expire.
//!
//! Time: with [`RedisClock::Server`] (the default for a governor on the
//! system clock) the script reads the server's `TIME`, one clock for every
//! host, so skew between hosts cannot widen a limit. With
//! [`RedisClock::Caller`] (chosen when a host injects a clock: fixtures,
//! simulations, tests) the `now_ms` passed by the governor is used, exactly as
//! the memory and SQLite stores do.
//!
//! Times inside the scripts are milliseconds plus a sub-millisecond remainder
//! in nanoseconds, because Lua numbers are doubles: a nanosecond timestamp
//! would not be exact, a nanosecond distance from now is (periods up to about
//! 100 days).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::{ConnectionLike, ErrorKind, ServerErrorKind, Value as RValue};

use super::sqlite::approval_from_row;
use harnessweaver_core::harness::redact_url;
use harnessweaver_core::store::{Acquire, ApprovalState, Bounded, Budget, Labels, PendingApproval, RateKey, Store, StoreError};

/// Which clock the rate-limit script reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisClock {
    /// The server's `TIME` (one clock for all hosts).
    Server,
    /// The `now_ms` the governor passes (its injected clock).
    Caller,
}

/// How a Redis store connects and keeps its keys.
#[derive(Debug, Clone)]
pub struct RedisOptions {
    /// The namespace inside `hw:{…}:` (the harness name, or a digest).
    pub namespace: String,
    /// Which clock decides.
    pub clock: RedisClock,
    /// Connect, read and write timeout: past it the store is unavailable.
    pub timeout: Duration,
    /// How long a run's labels and budgets are kept after their last change.
    pub run_ttl_ms: u64,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self { namespace: "default".into(), clock: RedisClock::Server, timeout: Duration::from_secs(5), run_ttl_ms: 86_400_000 }
    }
}

type Conn = Box<dyn ConnectionLike + Send>;

/// How new connections are made.
enum Connector {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
    Sentinel(Mutex<redis::sentinel::SentinelClient>),
}

impl Connector {
    fn connect(&self, timeout: Duration) -> redis::RedisResult<Conn> {
        match self {
            Self::Single(client) => {
                let conn = client.get_connection_with_timeout(timeout)?;
                conn.set_read_timeout(Some(timeout))?;
                conn.set_write_timeout(Some(timeout))?;
                Ok(Box::new(conn))
            }
            Self::Cluster(client) => Ok(Box::new(client.get_connection()?)),
            Self::Sentinel(client) => {
                let conn = client.lock().unwrap_or_else(PoisonError::into_inner).get_connection()?;
                conn.set_read_timeout(Some(timeout))?;
                conn.set_write_timeout(Some(timeout))?;
                Ok(Box::new(conn))
            }
        }
    }
}

/// A Lua script and its SHA-1 (sent with `EVALSHA`, loaded on `NOSCRIPT`).
struct Lua {
    source: &'static str,
    sha: String,
}

impl Lua {
    fn new(source: &'static str) -> Self {
        Self { source, sha: redis::Script::new(source).get_hash().to_string() }
    }
}

/// GCRA over every rate key, all or nothing. ARGV: now_ms (empty: the
/// server's TIME), `1` when the last key is a run whose labels to return
/// (else `0`), then per rate key its interval and tolerance in ns. Returns
/// `{0, private, untrusted}`, or `{1, index, retry_after_ms, private, untrusted}`.
const ACQUIRE: &str = r"
local n = #KEYS
local private, untrusted = 0, 0
if ARGV[2] == '1' then
  n = n - 1
  local l = redis.call('HMGET', KEYS[#KEYS], 'private', 'untrusted')
  if l[1] == '1' then private = 1 end
  if l[2] == '1' then untrusted = 1 end
end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local ahead = {}
for i = 1, n do
  local key = KEYS[i]
  local interval = tonumber(ARGV[2 * i + 1])
  local tolerance = tonumber(ARGV[2 * i + 2])
  local d = 0
  local v = redis.call('GET', key)
  if v then
    local ms, sub = string.match(v, '^(%-?%d+):(%d+)$')
    if ms then
      local dm = tonumber(ms) - now
      if dm >= 0 then d = dm * 1000000 + tonumber(sub) end
    end
  end
  if d > tolerance then
    local wait = d - tolerance
    local q = math.floor(wait / 1000000)
    if q * 1000000 < wait then q = q + 1 end
    return {1, i - 1, q, private, untrusted}
  end
  ahead[i] = d + interval
end
for i = 1, n do
  local key = KEYS[i]
  local ms = math.floor(ahead[i] / 1000000)
  local sub = ahead[i] - ms * 1000000
  local ttl = ms
  if sub > 0 then ttl = ttl + 1 end
  if ttl < 1 then ttl = 1 end
  redis.call('SET', key, string.format('%d:%d', now + ms, sub), 'PX', ttl)
end
return {0, private, untrusted}
";

/// KEYS[1]: the run. ARGV: tool, max total ('' = none), max per tool, ttl ms.
/// Returns 0 (taken), 1 (run exhausted) or 2 (tool exhausted).
const TAKE_BUDGET: &str = r"
local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
local field = 'tool:' .. ARGV[1]
local per = tonumber(redis.call('HGET', KEYS[1], field) or '0')
if ARGV[2] ~= '' and total >= tonumber(ARGV[2]) then return 1 end
if ARGV[3] ~= '' and per >= tonumber(ARGV[3]) then return 2 end
redis.call('HINCRBY', KEYS[1], 'total', 1)
redis.call('HINCRBY', KEYS[1], field, 1)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 0
";

const RELEASE_BUDGET: &str = r"
local field = 'tool:' .. ARGV[1]
if tonumber(redis.call('HGET', KEYS[1], 'total') or '0') > 0 then redis.call('HINCRBY', KEYS[1], 'total', -1) end
if tonumber(redis.call('HGET', KEYS[1], field) or '0') > 0 then redis.call('HINCRBY', KEYS[1], field, -1) end
return 0
";

/// KEYS[1]: the run. ARGV: private, untrusted ('1' adds), ttl ms.
const ADD_LABELS: &str = r"
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], 'private', '1') end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'untrusted', '1') end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('HMGET', KEYS[1], 'private', 'untrusted')
";

/// KEYS: the approval, the open index, its principal's open index. ARGV:
/// id, from, to, has_by, by, has_note, note. Returns 1 when this caller
/// moved it.
const TRANSITION: &str = r"
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[3])
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'decided_by', ARGV[5]) end
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'note', ARGV[7]) end
if ARGV[3] ~= 'pending' and ARGV[3] ~= 'approved' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return 1
";

/// The body of [`PUT_APPROVAL`] and [`PUT_APPROVAL_BOUNDED`]. KEYS: the
/// approval, the open index, its principal's open index (scored by expiry).
/// ARGV: body, state, has_by, by, has_note, note, ttl ms, created ms, id,
/// expires ms, principal id. Replaces the approval.
macro_rules! put_approval_lua {
    () => {
        r"
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'body', ARGV[1], 'state', ARGV[2], 'principal', ARGV[11])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'decided_by', ARGV[4]) end
if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'note', ARGV[6]) end
redis.call('PEXPIRE', KEYS[1], ARGV[7])
if ARGV[2] == 'pending' or ARGV[2] == 'approved' then
  redis.call('ZADD', KEYS[2], ARGV[8], ARGV[9])
  redis.call('ZADD', KEYS[3], ARGV[10], ARGV[9])
  if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[7]) then redis.call('PEXPIRE', KEYS[3], ARGV[7]) end
else
  redis.call('ZREM', KEYS[2], ARGV[9])
  redis.call('ZREM', KEYS[3], ARGV[9])
end
"
    };
}

/// Stores an approval (see [`put_approval_lua`]). Returns 1.
const PUT_APPROVAL: &str = concat!(put_approval_lua!(), "return 1\n");

/// The approval limit in one step: drops the principal's expired approvals
/// from its index, counts the open ones, and stores the approval only below
/// the limit. ARGV as [`PUT_APPROVAL`], then now ms, limit. Returns
/// `{stored (0 or 1), open before}`.
const PUT_APPROVAL_BOUNDED: &str = concat!(
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[12])\n",
    "local open = redis.call('ZCARD', KEYS[3])\n",
    "if open >= tonumber(ARGV[13]) then return {0, open} end\n",
    put_approval_lua!(),
    "return {1, open}\n"
);

/// KEYS: a principal's open index. ARGV: now ms. Drops the expired entries
/// and returns how many are left.
const COUNT_OPEN: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
return redis.call('ZCARD', KEYS[1])
";

/// KEYS: approvals. Returns each one's body, state, decided_by, note.
const READ_APPROVALS: &str = r"
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('HMGET', key, 'body', 'state', 'decided_by', 'note')
end
return out
";

struct Scripts {
    acquire: Lua,
    take_budget: Lua,
    release_budget: Lua,
    add_labels: Lua,
    transition: Lua,
    put_approval: Lua,
    put_approval_bounded: Lua,
    count_open: Lua,
    read_approvals: Lua,
}

/// State in Redis (`spec.state: redis://…`).
pub struct RedisStore {
    connector: Connector,
    /// Where connections are shown: the URL without its password.
    shown: String,
    options: RedisOptions,
    idle: Mutex<Vec<Conn>>,
    scripts: Scripts,
    round_trips: AtomicU64,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").field("url", &self.shown).field("namespace", &self.options.namespace).finish_non_exhaustive()
    }
}

fn bad_url(url: &str, why: &str) -> StoreError {
    StoreError::new(format!("redis url `{}`: {why}", redact_url(url)))
}

/// `host:port` pairs of a cluster or sentinel URL, and what follows them.
fn split_hosts(rest: &str) -> (Option<&str>, Vec<&str>, &str) {
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    (userinfo, hosts.split(',').filter(|h| !h.is_empty()).collect(), tail)
}

impl RedisStore {
    /// A store for `url` (`redis://`, `rediss://`, `redis+cluster://h1:p1,h2:p2`
    /// or `redis+sentinel://h1:p1,h2:p2/<master>`). Connections are made on
    /// first use, so a server that is down now is a refusal per call, not a
    /// failure here; only a malformed URL fails.
    pub fn open(url: &str, options: RedisOptions) -> Result<Self, StoreError> {
        let connector = if let Some(rest) = url.strip_prefix("redis+cluster://") {
            let (userinfo, hosts, _) = split_hosts(rest);
            if hosts.is_empty() {
                return Err(bad_url(url, "names no cluster node"));
            }
            let nodes: Vec<String> = hosts
                .iter()
                .map(|h| match userinfo {
                    Some(u) => format!("redis://{u}@{h}"),
                    None => format!("redis://{h}"),
                })
                .collect();
            let client = redis::cluster::ClusterClientBuilder::new(nodes)
                .connection_timeout(options.timeout)
                .response_timeout(options.timeout)
                .build()
                .map_err(|e| bad_url(url, &redis_reason(&e)))?;
            Connector::Cluster(client)
        } else if let Some(rest) = url.strip_prefix("redis+sentinel://") {
            let (userinfo, hosts, tail) = split_hosts(rest);
            let master = tail.trim_start_matches('/').split('/').next().unwrap_or_default();
            if hosts.is_empty() || master.is_empty() {
                return Err(bad_url(url, "expected `redis+sentinel://host:port[,host:port…]/<master name>`"));
            }
            let sentinels: Vec<String> = hosts.iter().map(|h| format!("redis://{h}")).collect();
            // The credentials in the URL are the primary's; sentinels are
            // reached without them.
            let mut info = redis::RedisConnectionInfo::default();
            if let Some(u) = userinfo {
                match u.split_once(':') {
                    Some((user, password)) => {
                        if !user.is_empty() {
                            info = info.set_username(user);
                        }
                        info = info.set_password(password);
                    }
                    None => info = info.set_password(u),
                }
            }
            let node = redis::sentinel::SentinelNodeConnectionInfo::default().set_redis_connection_info(info);
            let client =
                redis::sentinel::SentinelClient::build(sentinels, master.to_string(), Some(node), redis::sentinel::SentinelServerType::Master)
                    .map_err(|e| bad_url(url, &redis_reason(&e)))?;
            Connector::Sentinel(Mutex::new(client))
        } else {
            Connector::Single(redis::Client::open(url).map_err(|e| bad_url(url, &redis_reason(&e)))?)
        };
        Ok(Self {
            connector,
            shown: redact_url(url),
            options,
            idle: Mutex::new(Vec::new()),
            scripts: Scripts {
                acquire: Lua::new(ACQUIRE),
                take_budget: Lua::new(TAKE_BUDGET),
                release_budget: Lua::new(RELEASE_BUDGET),
                add_labels: Lua::new(ADD_LABELS),
                transition: Lua::new(TRANSITION),
                put_approval: Lua::new(PUT_APPROVAL),
                put_approval_bounded: Lua::new(PUT_APPROVAL_BOUNDED),
                count_open: Lua::new(COUNT_OPEN),
                read_approvals: Lua::new(READ_APPROVALS),
            },
            round_trips: AtomicU64::new(0),
        })
    }

    /// Round trips made so far.
    pub fn round_trip_count(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Which clock decides.
    pub fn clock(&self) -> RedisClock {
        self.options.clock
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("hw:{{{}}}:{kind}:{name}", self.options.namespace)
    }

    fn error(&self, e: &redis::RedisError) -> StoreError {
        StoreError::new(format!("redis at `{}`: {}", self.shown, redis_reason(e)))
    }

    /// Runs `f` on a pooled connection; a connection that failed is dropped,
    /// so the next call reconnects (the store recovers when Redis returns).
    fn with<T>(&self, f: impl FnOnce(&mut dyn ConnectionLike) -> redis::RedisResult<T>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut conn = match pooled {
            Some(conn) => conn,
            None => {
                self.round_trips.fetch_add(1, Ordering::Relaxed);
                self.connector.connect(self.options.timeout).map_err(|e| self.error(&e))?
            }
        };
        match f(conn.as_mut()) {
            Ok(value) => {
                self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
                Ok(value)
            }
            Err(e) => {
                // A server error (a script's) leaves the connection usable.
                if matches!(e.kind(), ErrorKind::Server(_)) && conn.is_open() {
                    self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
                }
                Err(self.error(&e))
            }
        }
    }

    fn query<T: redis::FromRedisValue>(&self, conn: &mut dyn ConnectionLike, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        cmd.query(conn)
    }

    /// `EVALSHA`, falling back to `EVAL` (which also caches the script) the
    /// first time a server sees it.
    fn eval<T: redis::FromRedisValue>(&self, conn: &mut dyn ConnectionLike, lua: &Lua, keys: &[String], args: &[String]) -> redis::RedisResult<T> {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&lua.sha).arg(keys.len()).arg(keys).arg(args);
        match self.query(conn, &cmd) {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(lua.source).arg(keys.len()).arg(keys).arg(args);
                self.query(conn, &cmd)
            }
            other => other,
        }
    }

    fn run_ttl(&self) -> String {
        self.options.run_ttl_ms.max(1).to_string()
    }
}

/// A lowercase reason, never the URL (it may hold a password).
fn redis_reason(e: &redis::RedisError) -> String {
    if e.is_timeout() {
        "no reply in time".to_string()
    } else if e.is_connection_refusal() {
        "connection refused".to_string()
    } else if e.is_connection_dropped() || e.is_io_error() {
        "the connection was lost".to_string()
    } else {
        let text = e.to_string();
        let text = match text.find("://") {
            Some(_) => "the client refused the address".to_string(),
            None => text,
        };
        let mut text = text.to_lowercase();
        text.truncate(200);
        text
    }
}

fn flag(b: bool) -> String {
    if b { "1" } else { "0" }.to_string()
}

fn is_set(v: &RValue) -> bool {
    matches!(v, RValue::BulkString(b) if b.as_slice() == b"1") || matches!(v, RValue::SimpleString(s) if s == "1")
}

fn opt_string(v: Option<&RValue>) -> Option<String> {
    match v {
        Some(RValue::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        Some(RValue::SimpleString(s)) => Some(s.clone()),
        _ => None,
    }
}

impl RedisStore {
    fn acquire_inner(&self, keys: &[RateKey], now_ms: u64, run_id: Option<&str>) -> Result<(Acquire, Labels), StoreError> {
        let mut names: Vec<String> = keys.iter().map(|k| self.key("rl", &k.key)).collect();
        let mut args = Vec::with_capacity(2 + 2 * keys.len());
        args.push(match self.options.clock {
            RedisClock::Server => String::new(),
            RedisClock::Caller => now_ms.to_string(),
        });
        args.push(flag(run_id.is_some()));
        if let Some(run_id) = run_id {
            names.push(self.key("run", run_id));
        }
        for k in keys {
            args.push(k.rate.interval_ns().to_string());
            args.push(k.rate.tolerance_ns().to_string());
        }
        let reply: Vec<i64> = self.with(|conn| self.eval(conn, &self.scripts.acquire, &names, &args))?;
        let labels = |p: &i64, u: &i64| Labels { private: *p == 1, untrusted: *u == 1 };
        match reply.as_slice() {
            [0, p, u] => Ok((Acquire::Allowed, labels(p, u))),
            [1, index, wait, p, u] => Ok((
                Acquire::Limited { index: usize::try_from(*index).unwrap_or(0), retry_after_ms: u64::try_from(*wait).unwrap_or(0) },
                labels(p, u),
            )),
            _ => Err(StoreError::new("redis: the rate-limit script gave an unexpected reply")),
        }
    }
}

impl Store for RedisStore {
    fn acquire(&self, keys: &[RateKey], now_ms: u64) -> Result<Acquire, StoreError> {
        self.acquire_inner(keys, now_ms, None).map(|(acquire, _)| acquire)
    }

    fn acquire_with_labels(&self, keys: &[RateKey], now_ms: u64, run_id: &str) -> Result<(Acquire, Option<Labels>), StoreError> {
        self.acquire_inner(keys, now_ms, Some(run_id)).map(|(acquire, labels)| (acquire, Some(labels)))
    }

    fn take_budget(&self, run_id: &str, tool: &str, max_total: Option<u64>, max_tool: Option<u64>) -> Result<Budget, StoreError> {
        let keys = [self.key("run", run_id)];
        let args = [
            tool.to_string(),
            max_total.map(|n| n.to_string()).unwrap_or_default(),
            max_tool.map(|n| n.to_string()).unwrap_or_default(),
            self.run_ttl(),
        ];
        let reply: i64 = self.with(|conn| self.eval(conn, &self.scripts.take_budget, &keys, &args))?;
        match (reply, max_total, max_tool) {
            (0, _, _) => Ok(Budget::Taken),
            (1, Some(limit), _) => Ok(Budget::RunExhausted { limit }),
            (2, _, Some(limit)) => Ok(Budget::ToolExhausted { limit }),
            _ => Err(StoreError::new("redis: the budget script gave an unexpected reply")),
        }
    }

    fn release_budget(&self, run_id: &str, tool: &str) -> Result<(), StoreError> {
        let keys = [self.key("run", run_id)];
        let args = [tool.to_string()];
        let _: i64 = self.with(|conn| self.eval(conn, &self.scripts.release_budget, &keys, &args))?;
        Ok(())
    }

    fn labels(&self, run_id: &str) -> Result<Labels, StoreError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.key("run", run_id)).arg("private").arg("untrusted");
        let reply: Vec<RValue> = self.with(|conn| self.query(conn, &cmd))?;
        Ok(Labels { private: reply.first().is_some_and(is_set), untrusted: reply.get(1).is_some_and(is_set) })
    }

    fn add_labels(&self, run_id: &str, labels: Labels) -> Result<Labels, StoreError> {
        let keys = [self.key("run", run_id)];
        let args = [flag(labels.private), flag(labels.untrusted), self.run_ttl()];
        let reply: Vec<RValue> = self.with(|conn| self.eval(conn, &self.scripts.add_labels, &keys, &args))?;
        Ok(Labels { private: reply.first().is_some_and(is_set), untrusted: reply.get(1).is_some_and(is_set) })
    }

    fn put_approval(&self, approval: &PendingApproval) -> Result<(), StoreError> {
        let (keys, args) = self.approval_put_args(approval)?;
        let _: i64 = self.with(|conn| self.eval(conn, &self.scripts.put_approval, &keys, &args))?;
        Ok(())
    }

    fn put_approval_bounded(&self, approval: &PendingApproval, limit: u64, now_ms: u64) -> Result<Bounded, StoreError> {
        let (keys, mut args) = self.approval_put_args(approval)?;
        args.extend([now_ms.to_string(), limit.to_string()]);
        let reply: Vec<i64> = self.with(|conn| self.eval(conn, &self.scripts.put_approval_bounded, &keys, &args))?;
        let open = reply.get(1).map_or(0, |n| u64::try_from(*n).unwrap_or(0));
        Ok(if reply.first() == Some(&1) { Bounded::Put { open } } else { Bounded::Full { open } })
    }

    fn prune_and_count_open(&self, principal_id: &str, now_ms: u64) -> Result<u64, StoreError> {
        // Approval keys expire by TTL; the principal's index drops its
        // expired entries here.
        let keys = [self.key("apr-by", principal_id)];
        let open: i64 = self.with(|conn| self.eval(conn, &self.scripts.count_open, &keys, &[now_ms.to_string()]))?;
        Ok(u64::try_from(open).unwrap_or(0))
    }

    fn approval(&self, id: &str) -> Result<Option<PendingApproval>, StoreError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.key("apr", id)).arg("body").arg("state").arg("decided_by").arg("note");
        let reply: Vec<RValue> = self.with(|conn| self.query(conn, &cmd))?;
        approval_from_reply(&reply)
    }

    fn transition(&self, id: &str, from: ApprovalState, to: ApprovalState, by: Option<&str>, note: Option<&str>) -> Result<bool, StoreError> {
        // The principal's index is a key the script must be given: read
        // whose approval it is first (it never changes once stored).
        let principal = if from.is_open() && !to.is_open() {
            let mut cmd = redis::cmd("HGET");
            cmd.arg(self.key("apr", id)).arg("principal");
            let owner: Option<String> = self.with(|conn| self.query(conn, &cmd))?;
            owner.unwrap_or_default()
        } else {
            String::new()
        };
        let keys = [self.key("apr", id), self.key("apr-open", "all"), self.key("apr-by", &principal)];
        let args = [
            id.to_string(),
            from.as_str().to_string(),
            to.as_str().to_string(),
            flag(by.is_some()),
            by.unwrap_or_default().to_string(),
            flag(note.is_some()),
            note.unwrap_or_default().to_string(),
        ];
        let moved: i64 = self.with(|conn| self.eval(conn, &self.scripts.transition, &keys, &args))?;
        Ok(moved == 1)
    }

    fn open_approvals(&self) -> Result<Vec<PendingApproval>, StoreError> {
        let open = self.key("apr-open", "all");
        let mut range = redis::cmd("ZRANGE");
        range.arg(&open).arg(0).arg(-1);
        let ids: Vec<String> = self.with(|conn| self.query(conn, &range))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|id| self.key("apr", id)).collect();
        let replies: Vec<Vec<RValue>> = self.with(|conn| self.eval(conn, &self.scripts.read_approvals, &keys, &[]))?;
        let mut out = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for (id, reply) in ids.iter().zip(&replies) {
            match approval_from_reply(reply)? {
                Some(a) if matches!(a.state, ApprovalState::Pending | ApprovalState::Approved) => out.push(a),
                Some(_) => {}
                // The approval's key expired: its id leaves the open index,
                // which would otherwise only grow.
                None => gone.push(id.clone()),
            }
        }
        if !gone.is_empty() {
            let mut zrem = redis::cmd("ZREM");
            zrem.arg(&open).arg(&gone);
            let _: i64 = self.with(|conn| self.query(conn, &zrem))?;
        }
        out.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    fn round_trips(&self) -> Option<u64> {
        Some(self.round_trip_count())
    }
}

impl RedisStore {
    /// The keys and arguments of [`PUT_APPROVAL`] for `approval`.
    fn approval_put_args(&self, approval: &PendingApproval) -> Result<([String; 3], Vec<String>), StoreError> {
        let body = serde_json::to_string(approval).map_err(|e| StoreError::new(format!("approval: {e}")))?;
        // Kept `run_ttl` past its expiry (measured on the caller's clock, so
        // a fixture's clock does not expire it at once).
        let ttl = approval.expires_ms.saturating_sub(approval.created_ms).saturating_add(self.options.run_ttl_ms).max(1);
        // A script, not MULTI: Redis Cluster connections take no transactions.
        let keys = [self.key("apr", &approval.id), self.key("apr-open", "all"), self.key("apr-by", approval.principal_id())];
        let args = vec![
            body,
            approval.state.as_str().to_string(),
            flag(approval.decided_by.is_some()),
            approval.decided_by.clone().unwrap_or_default(),
            flag(approval.note.is_some()),
            approval.note.clone().unwrap_or_default(),
            ttl.to_string(),
            approval.created_ms.to_string(),
            approval.id.clone(),
            approval.expires_ms.to_string(),
            approval.principal_id().to_string(),
        ];
        Ok((keys, args))
    }
}

fn approval_from_reply(reply: &[RValue]) -> Result<Option<PendingApproval>, StoreError> {
    let (Some(body), Some(state)) = (opt_string(reply.first()), opt_string(reply.get(1))) else {
        return Ok(None);
    };
    approval_from_row(&body, &state, opt_string(reply.get(2)), opt_string(reply.get(3))).map(Some)
}
