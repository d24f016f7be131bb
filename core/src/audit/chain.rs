//! The audit hash chain and its signed checkpoints.
//!
//! Every record a chained sink writes (a JSON Lines line, a SQLite row's
//! `event` text) starts with `"seq"` (1, 2, 3, … per sink) and `"prev"`, the
//! `sha256:` of the previous record's exact bytes (the first record's `prev` is
//! [`GENESIS`]). Changing, deleting, inserting or moving a record breaks the
//! link after it. A writer able to recompute the whole chain could forge it,
//! so the sink also writes checkpoints every N records and at close: the
//! sequence number and digest of the newest record, signed with Ed25519. A
//! checkpoint names its key (`key_id`) and carries the public key; a verifier
//! trusts only the public keys it is given (see docs/threat-model.md, "Audit").

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::AuditEvent;
use crate::digest::hex_tagged;
use crate::error::Error;

/// The `prev` of a chain's first record.
pub const GENESIS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// What a checkpoint's signature covers, before its fields.
const CHECKPOINT_DOMAIN: &str = "harnessweaver audit checkpoint v1";

/// The newest record of a chain: its number and the digest of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The record's `seq` (0 before the first record).
    pub seq: u64,
    /// `sha256:` of the record's bytes ([`GENESIS`] before the first record).
    pub digest: String,
}

impl Default for ChainHead {
    fn default() -> Self {
        Self { seq: 0, digest: GENESIS.to_string() }
    }
}

impl ChainHead {
    /// The head after `record` (the bytes of a record that carries `seq`),
    /// or `None` when `record` is not a chained record.
    pub fn of_record(record: &[u8]) -> Option<Self> {
        let seq = record_link(record)?.0;
        Some(Self { seq, digest: record_digest(record) })
    }
}

/// `sha256:` of a record's bytes (a line without its newline).
pub fn record_digest(record: &[u8]) -> String {
    hex_tagged(&Sha256::digest(record))
}

/// A record's `seq` and `prev`, read from its JSON.
pub fn record_link(record: &[u8]) -> Option<(u64, String)> {
    #[derive(serde::Deserialize)]
    struct Link {
        seq: u64,
        prev: String,
    }
    serde_json::from_slice::<Link>(record).ok().map(|l| (l.seq, l.prev))
}

/// A key that signs checkpoints: a 32-byte Ed25519 seed, written as 64 hex
/// digits (what `harnessweaver audit keygen` prints), from a file or an
/// environment variable (`spec.audit.signing_key`).
#[derive(Clone)]
pub struct CheckpointKey {
    key: SigningKey,
    id: String,
}

impl std::fmt::Debug for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("CheckpointKey").field("id", &self.id).finish_non_exhaustive()
    }
}

impl CheckpointKey {
    /// A key from its seed; `None` when `seed` is not 32 bytes.
    pub fn from_seed(seed: &[u8]) -> Option<Self> {
        let seed: [u8; 32] = seed.try_into().ok()?;
        let key = SigningKey::from_bytes(&seed);
        let id = key_id(&key.verifying_key());
        Some(Self { key, id })
    }

    /// A key from text: 64 hex digits (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = || Error::Io { message: "an audit signing key is 64 hex digits (an Ed25519 seed; `harnessweaver audit keygen` makes one)".into() };
        let seed = decode_hex(text.trim()).ok_or_else(bad)?;
        Self::from_seed(&seed).ok_or_else(bad)
    }

    /// A fresh random key.
    pub fn generate() -> Result<Self, Error> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| Error::Io { message: format!("no randomness for a key: {e}") })?;
        Self::from_seed(&seed).ok_or_else(|| Error::Io { message: "bad seed".into() })
    }

    /// The seed as 64 hex digits (what a key file holds).
    pub fn seed_hex(&self) -> String {
        encode_hex(self.key.as_bytes())
    }

    /// The public key as 64 hex digits (what `audit verify --key` takes).
    pub fn public_hex(&self) -> String {
        encode_hex(self.key.verifying_key().as_bytes())
    }

    /// `ed25519:` + the first 16 hex digits of the SHA-256 of the public key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A signed checkpoint over `head`.
    pub fn checkpoint(&self, head: &ChainHead, ts_ms: u64, closing: bool) -> Checkpoint {
        let message = checkpoint_message(head, ts_ms, closing);
        let sig = self.key.sign(message.as_bytes());
        Checkpoint {
            seq: head.seq,
            head: head.digest.clone(),
            ts_ms,
            closing,
            key_id: self.id.clone(),
            public_key: self.public_hex(),
            sig: encode_hex(&sig.to_bytes()),
        }
    }
}

/// The id of a public key: `ed25519:` + 16 hex digits of its SHA-256.
pub fn key_id(key: &VerifyingKey) -> String {
    let hash = Sha256::digest(key.as_bytes());
    format!("ed25519:{}", encode_hex(hash.get(..8).unwrap_or_default()))
}

/// A public key from 64 hex digits, or `None`.
pub fn parse_public_key(text: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = decode_hex(text.trim())?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

fn checkpoint_message(head: &ChainHead, ts_ms: u64, closing: bool) -> String {
    format!("{CHECKPOINT_DOMAIN}\n{}\n{}\n{ts_ms}\n{closing}", head.seq, head.digest)
}

/// A signed statement that the chain's record `seq` had the digest `head`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// The newest record covered.
    pub seq: u64,
    /// Its digest (which commits every record before it).
    pub head: String,
    /// When it was signed (ms since the epoch).
    pub ts_ms: u64,
    /// Written when the sink closed (nothing follows a closed trail).
    pub closing: bool,
    /// The signing key's id.
    pub key_id: String,
    /// The signing key's public half (64 hex digits).
    pub public_key: String,
    /// The Ed25519 signature (128 hex digits).
    pub sig: String,
}

impl Checkpoint {
    /// Whether the signature is valid for the public key it names, and that key's id matches.
    pub fn signature_ok(&self) -> bool {
        let Some(key) = parse_public_key(&self.public_key) else { return false };
        let Some(sig) = decode_hex(&self.sig).and_then(|b| <[u8; 64]>::try_from(b).ok()) else { return false };
        let head = ChainHead { seq: self.seq, digest: self.head.clone() };
        key_id(&key) == self.key_id
            && key.verify_strict(checkpoint_message(&head, self.ts_ms, self.closing).as_bytes(), &ed25519_dalek::Signature::from_bytes(&sig)).is_ok()
    }

    /// The JSON Lines form: `{"checkpoint": {…}}`.
    pub fn to_line(&self) -> String {
        serde_json::json!({ "checkpoint": self }).to_string()
    }

    /// A checkpoint from its JSON Lines form (`None` for any other line).
    pub fn from_line(line: &[u8]) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Line {
            checkpoint: Checkpoint,
        }
        serde_json::from_slice::<Line>(line).ok().map(|l| l.checkpoint)
    }
}

/// A sink's chain state: the head, the signing key and when the next checkpoint is due.
#[derive(Debug)]
pub struct Chain {
    head: ChainHead,
    key: Option<CheckpointKey>,
    every: u64,
    since_checkpoint: u64,
}

/// What [`Chain::append`] produced: the record's bytes, and a checkpoint when one is due after it.
pub struct Appended<'a> {
    /// The record (no newline).
    pub record: &'a [u8],
    /// A checkpoint to write after the record.
    pub checkpoint: Option<Checkpoint>,
}

/// The default of `spec.audit.checkpoint_every`.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 1000;

impl Chain {
    /// A chain continuing from `head`, signing a checkpoint every `every` records (0: only at close) when `key` is set.
    pub fn new(head: ChainHead, key: Option<CheckpointKey>, every: u64) -> Self {
        Self { head, key, every, since_checkpoint: 0 }
    }

    /// The newest record's number and digest.
    pub fn head(&self) -> &ChainHead {
        &self.head
    }

    /// Continues from another writer's head (a sink shared by processes re-reads it under its lock).
    pub fn resume(&mut self, head: ChainHead) {
        self.head = head;
    }

    /// Formats `event` as the next record into `out` (cleared first) and advances the head.
    ///
    /// The event is serialised straight into `out` after the `seq` and `prev`
    /// fields, its opening brace turned into the comma between them, and the
    /// head's digest is rewritten in place (no allocation once `out` has grown).
    pub fn append<'a>(&mut self, event: &AuditEvent, out: &'a mut Vec<u8>) -> Result<Appended<'a>, Error> {
        let seq = self.head.seq + 1;
        out.clear();
        out.extend_from_slice(b"{\"seq\":");
        push_decimal(out, seq);
        out.extend_from_slice(b",\"prev\":\"");
        out.extend_from_slice(self.head.digest.as_bytes());
        out.push(b'"');
        let brace = out.len();
        serde_json::to_writer(&mut *out, event).map_err(|e| Error::Io { message: format!("audit event: {e}") })?;
        // The event's own fields follow `prev`: its opening brace becomes the comma.
        if let Some(b) = out.get_mut(brace) {
            *b = b',';
        }
        self.head.seq = seq;
        write_digest(&mut self.head.digest, &Sha256::digest(&out[..]));
        self.since_checkpoint += 1;
        let checkpoint = match &self.key {
            Some(key) if self.every > 0 && self.since_checkpoint >= self.every => {
                self.since_checkpoint = 0;
                Some(key.checkpoint(&self.head, event.ts_ms, false))
            }
            _ => None,
        };
        Ok(Appended { record: out, checkpoint })
    }

    /// The checkpoint to write at close (none without a key or a record).
    pub fn close(&mut self, ts_ms: u64) -> Option<Checkpoint> {
        let key = self.key.as_ref()?;
        (self.head.seq > 0).then(|| key.checkpoint(&self.head, ts_ms, true))
    }
}

/// Appends `n` in decimal (what `n.to_string()` gives, without the allocation).
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + u8::try_from(n % 10).unwrap_or(0);
        }
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or_default());
}

/// Rewrites `digest` as `sha256:` + the hex of `hash` (what [`record_digest`] gives), reusing its allocation.
fn write_digest(digest: &mut String, hash: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    digest.clear();
    digest.push_str("sha256:");
    for byte in hash {
        let hex = |n: u8| char::from(HEX.get(usize::from(n)).copied().unwrap_or(b'0'));
        digest.push(hex(byte >> 4));
        digest.push(hex(byte & 0xf));
    }
}

fn encode_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}
