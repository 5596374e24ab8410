//! Signing keys encrypted at rest: AES-256-GCM (aws-lc-rs) under a key-encryption key
//! the operator keeps outside the store (`--key-encryption-key-file`), each key's id
//! bound as associated data, so a sealed key copied onto another key's row does not open.
//!
//! A sealed private key is stored as `MAGIC ‖ nonce (12 bytes) ‖ ciphertext ‖ tag`. A
//! plain one is PKCS#8 DER, which starts with a SEQUENCE byte (0x30), never with the
//! magic, so both can sit in one store while it is being sealed. [`SealedKeys`] stands in
//! front of a store's signing-key records: it seals what it writes and opens what it
//! reads, and refuses (never skips) a key it cannot open.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom as _, SystemRandom};
use domain::ports::{SigningKeyRecords, StoreUnavailable};
use domain::token::SigningKey;

use crate::formats::shown::quoted;

/// Where signing keys are sealed in place, beside the domain's key records: rewriting a
/// key's stored private bytes is an adapter's concern (encryption at rest), not the
/// domain's.
#[async_trait]
pub trait KeyVault: Send + Sync {
    /// Replaces the stored private bytes of key `kid` with `to` if they are still `from`;
    /// whether they were replaced.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable>;

    /// Leaves no copy of replaced bytes in the database's files (free pages, a page's
    /// unused space, the write-ahead log), after keys were sealed in place.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not (another process holding the database,
    /// say); the next start that seals nothing does not retry it.
    async fn scrub(&self) -> Result<(), StoreUnavailable>;
}

/// The first bytes of a sealed private key (format version 1).
const MAGIC: &[u8; 4] = b"BAK1";

/// The key-encryption key could not be read from its file.
#[derive(Debug, thiserror::Error)]
#[error("key-encryption-key-file {path}: {reason}")]
pub struct KeyFileError {
    path: String,
    reason: String,
}

/// The most a key file is read: 64 hexadecimal characters with room for whitespace
/// and line ends. The finding: `--key-encryption-key-file` reading a file without end made every
/// command read until memory ran out.
const KEY_FILE_MAX_BYTES: u64 = 256;

/// The content of the regular file `path` if it holds at most `limit` bytes, `None` if
/// it holds more (read no further than one byte past the limit).
///
/// Anything but a regular file (after symbolic links) is refused before it is opened:
/// opening a FIFO blocks until something writes to it (issue 42: every command hung),
/// and a device (`/dev/zero`, `/dev/stdin`) is no key or certificate.
///
/// # Errors
/// The file is not a regular file, or cannot be opened or read.
pub fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    regular_file(&std::fs::metadata(path)?)?;
    let file = std::fs::File::open(path)?;
    // Again on what was opened: the name may have been pointed elsewhere meanwhile.
    regular_file(&file.metadata()?)?;
    let mut content = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut content)?;
    Ok((content.len() as u64 <= limit).then_some(content))
}

/// Whether `metadata` is a regular file's, or what it is instead.
fn regular_file(metadata: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = metadata.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("is {what}, not a regular file")))
}

/// The key that encrypts the signing keys at rest: 32 bytes.
pub struct KeyEncryptionKey(LessSafeKey);

impl KeyEncryptionKey {
    /// A key of exactly 32 bytes.
    ///
    /// # Errors
    /// A message if `bytes` is not 32 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| format!("{} bytes, not 32", bytes.len()))?;
        Ok(Self(LessSafeKey::new(key)))
    }

    /// The key in `path`: 32 raw bytes (`head -c 32 /dev/urandom > FILE`), or 64
    /// hexadecimal characters with optional surrounding whitespace
    /// (`openssl rand -hex 32 > FILE`).
    ///
    /// # Errors
    /// [`KeyFileError`] naming the file and what is wrong with it.
    pub fn from_file(path: &Path) -> Result<Self, KeyFileError> {
        let error = |reason: String| KeyFileError { path: quoted(&path.to_string_lossy()), reason };
        let content = read_at_most(path, KEY_FILE_MAX_BYTES).map_err(|e| error(e.to_string()))?.ok_or_else(|| {
            error(format!(
                "holds more than {KEY_FILE_MAX_BYTES} bytes; it must hold 32 bytes or 64 hexadecimal characters"
            ))
        })?;
        let bytes = match std::str::from_utf8(&content).map(str::trim) {
            Ok(text) if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) => (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|e| error(e.to_string()))?,
            _ => content,
        };
        Self::from_bytes(&bytes)
            .map_err(|found| error(format!("must hold 32 bytes or 64 hexadecimal characters; it holds {found}")))
    }

    /// `private` (of key `kid`) sealed.
    fn seal(&self, kid: &str, private: &[u8]) -> Result<Vec<u8>, StoreUnavailable> {
        let mut nonce = [0_u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| StoreUnavailable::new("no random nonce to seal a key"))?;
        let mut sealed = Vec::with_capacity(MAGIC.len() + NONCE_LEN + private.len() + AES_256_GCM.tag_len());
        sealed.extend_from_slice(MAGIC);
        sealed.extend_from_slice(&nonce);
        let mut body = private.to_vec();
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(kid.as_bytes()), &mut body)
            .map_err(|_| StoreUnavailable::new(format!("signing key {kid} could not be sealed")))?;
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    /// The private key `sealed` holds, if this key and `kid` open it.
    fn open(&self, kid: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        let rest = sealed.strip_prefix(MAGIC.as_slice())?;
        let (nonce, body) = rest.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = body.to_vec();
        let plain = self.0.open_in_place(nonce, Aad::from(kid.as_bytes()), &mut body).ok()?;
        Some(plain.to_vec())
    }
}

/// Whether a stored private key is sealed.
fn is_sealed(private: &[u8]) -> bool {
    private.starts_with(MAGIC)
}

/// The signing-key records of a store, sealed with `key` when there is one.
pub struct SealedKeys {
    inner: Arc<dyn SigningKeyRecords>,
    key: Option<Arc<KeyEncryptionKey>>,
}

impl SealedKeys {
    /// `inner`'s records, sealed under `key` (or, without one, left plain, and a sealed
    /// one refused).
    pub fn new(inner: Arc<dyn SigningKeyRecords>, key: Option<Arc<KeyEncryptionKey>>) -> Self {
        Self { inner, key }
    }

    /// Every stored key, opened.
    ///
    /// # Errors
    /// [`StoreUnavailable`] naming the first key that does not open with this
    /// key-encryption key (or is sealed, without one), or when the keys cannot be read.
    pub async fn open_all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
        self.inner.all().await?.into_iter().map(|stored| self.open(stored)).collect()
    }

    /// `key` as it is to be stored: sealed when there is a key-encryption key.
    fn seal(&self, key: SigningKey) -> Result<SigningKey, StoreUnavailable> {
        match &self.key {
            Some(sealer) => Ok(SigningKey { private_pkcs8: sealer.seal(&key.kid, &key.private_pkcs8)?, ..key }),
            None => Ok(key),
        }
    }

    fn open(&self, mut stored: SigningKey) -> Result<SigningKey, StoreUnavailable> {
        if !is_sealed(&stored.private_pkcs8) {
            return Ok(stored);
        }
        let Some(key) = &self.key else {
            return Err(StoreUnavailable::new(format!(
                "signing key {} is encrypted at rest; give the --key-encryption-key-file it was sealed with",
                stored.kid
            )));
        };
        stored.private_pkcs8 = key.open(&stored.kid, &stored.private_pkcs8).ok_or_else(|| {
            StoreUnavailable::new(format!(
                "the key-encryption key does not open signing key {} (another key file?)",
                stored.kid
            ))
        })?;
        Ok(stored)
    }
}

#[async_trait]
impl SigningKeyRecords for SealedKeys {
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        self.inner.published(retired_after).await?.into_iter().map(|stored| self.open(stored)).collect()
    }

    /// Writes `key` only once every stored key opened: a key sealed under another
    /// key-encryption key (or a plain key in a store whose keys are sealed) would leave
    /// the store with keys no single key file opens, and no instance could start.
    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        self.open_all().await?;
        self.inner.schedule(&self.seal(key.clone())?, now).await
    }

    async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
        self.open_all().await
    }

    /// Like [`schedule`](Self::schedule), only once every stored key opened.
    async fn revoke(&self, kid: &str, now: i64, replacement: Option<SigningKey>) -> Result<bool, StoreUnavailable> {
        self.open_all().await?;
        let replacement = replacement.map(|key| self.seal(key)).transpose()?;
        self.inner.revoke(kid, now, replacement).await
    }
}

/// Seals every signing key still stored plain, under `key`; returns how many.
///
/// # Errors
/// [`StoreUnavailable`] if the keys cannot be read or written (then those sealed so far
/// stay sealed, and the next start seals the rest).
pub async fn seal_plain_keys(
    records: &dyn SigningKeyRecords,
    vault: &dyn KeyVault,
    key: &KeyEncryptionKey,
) -> Result<usize, StoreUnavailable> {
    let mut sealed = 0;
    for stored in records.all().await? {
        if !is_sealed(&stored.private_pkcs8)
            && vault.reseal(&stored.kid, &stored.private_pkcs8, &key.seal(&stored.kid, &stored.private_pkcs8)?).await?
        {
            sealed += 1;
        }
    }
    Ok(sealed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> KeyEncryptionKey {
        KeyEncryptionKey::from_bytes(&[byte; 32]).unwrap()
    }

    #[test]
    fn a_sealed_key_opens_only_with_its_key_and_its_kid() {
        let private = b"\x30\x2e pkcs8 bytes".to_vec();
        let sealed = key(1).seal("kid-a", &private).unwrap();
        assert!(is_sealed(&sealed) && !is_sealed(&private));
        assert!(!sealed.windows(private.len()).any(|w| w == private.as_slice()), "no plain bytes in it");
        assert_eq!(key(1).open("kid-a", &sealed), Some(private.clone()));
        assert_eq!(key(2).open("kid-a", &sealed), None, "another key-encryption key");
        assert_eq!(key(1).open("kid-b", &sealed), None, "moved onto another key's row");
        assert_ne!(key(1).seal("kid-a", &private).unwrap(), sealed, "a fresh nonce each time");
    }

    fn stored(kid: &str, private: Vec<u8>) -> SigningKey {
        SigningKey {
            kid: kid.into(),
            private_pkcs8: private,
            public_key: vec![],
            created_at: 0,
            activates_at: 0,
            retired_at: None,
            revoked_at: None,
        }
    }

    /// Records holding `keys` that take no write.
    fn records_holding(keys: Vec<SigningKey>) -> Arc<dyn SigningKeyRecords> {
        let mut records = domain::ports::MockSigningKeyRecords::new();
        records.expect_all().returning(move || Ok(keys.clone()));
        records.expect_schedule().never();
        Arc::new(records)
    }

    /// The finding: `keys rotate --now` with another key file stored a key sealed under
    /// it, and no instance could start with either file. Now nothing is written unless
    /// every stored key opens.
    #[tokio::test]
    async fn no_key_is_written_unless_every_stored_key_opens_with_the_key_given() {
        let sealed_by_one = stored("old", key(1).seal("old", b"\x30 private").unwrap());
        let new = stored("new", b"\x30 new".to_vec());

        let another = SealedKeys::new(records_holding(vec![sealed_by_one.clone()]), Some(Arc::new(key(2))));
        let refused = another.schedule(&new, 0).await.unwrap_err().to_string();
        assert!(refused.contains("does not open signing key old"), "{refused}");

        let without = SealedKeys::new(records_holding(vec![sealed_by_one]), None);
        let refused = without.schedule(&new, 0).await.unwrap_err().to_string();
        assert!(refused.contains("--key-encryption-key-file"), "{refused}");

        let mut records = domain::ports::MockSigningKeyRecords::new();
        let sealed_by_two = stored("old", key(2).seal("old", b"\x30 private").unwrap());
        records.expect_all().returning(move || Ok(vec![sealed_by_two.clone()]));
        records
            .expect_schedule()
            .withf(|written, _| is_sealed(&written.private_pkcs8))
            .times(1)
            .returning(|_, _| Ok(()));
        let right = SealedKeys::new(Arc::new(records), Some(Arc::new(key(2))));
        assert!(right.schedule(&new, 0).await.is_ok(), "the right key file writes, sealed");
    }

    #[test]
    fn a_key_file_holds_32_bytes_or_64_hex_characters() {
        let folder = tempfile::tempdir().unwrap();
        let write = |name: &str, content: &[u8]| {
            let path = folder.path().join(name);
            std::fs::write(&path, content).unwrap();
            path
        };
        let raw = write("raw", &[7; 32]);
        let hex = write("hex", format!("{}\n", "07".repeat(32)).as_bytes());
        let sealed = KeyEncryptionKey::from_file(&raw).unwrap().seal("k", b"secret").unwrap();
        assert_eq!(KeyEncryptionKey::from_file(&hex).unwrap().open("k", &sealed).as_deref(), Some(&b"secret"[..]));
        let short = write("short", &[7; 16]);
        let error = KeyEncryptionKey::from_file(&short).err().unwrap().to_string();
        assert!(
            error.contains("must hold 32 bytes or 64 hexadecimal characters") && error.contains("short"),
            "{error}"
        );
        let missing = KeyEncryptionKey::from_file(&folder.path().join("none")).err().unwrap().to_string();
        assert!(missing.starts_with("key-encryption-key-file "), "{missing}");
        let padded = write("padded", format!("\n\n{}\n\n", "07".repeat(32)).as_bytes());
        assert!(KeyEncryptionKey::from_file(&padded).is_ok(), "whitespace around the hex is fine");
    }

    /// The findings: `--key-encryption-key-file /dev/zero` made every command read
    /// forever (6.9 GB after 4 s); a FIFO as the key file blocked every command until it
    /// was killed (issue 42). A key file is a regular file, read no further than 257 bytes.
    #[test]
    fn an_endless_oversized_or_unopenable_key_file_is_refused_without_reading_it_whole() {
        let endless = KeyEncryptionKey::from_file(Path::new("/dev/zero")).err().unwrap().to_string();
        assert!(endless.contains("is a device, not a regular file") && endless.contains("/dev/zero"), "{endless}");
        let folder = tempfile::tempdir().unwrap();
        let fifo = folder.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR).unwrap();
        let (said, refused) = std::sync::mpsc::channel();
        let reading = fifo.clone();
        std::thread::spawn(move || said.send(KeyEncryptionKey::from_file(&reading).err().map(|e| e.to_string())));
        let error = refused.recv_timeout(std::time::Duration::from_secs(5)).expect("a FIFO is refused, not waited on");
        assert!(error.unwrap().contains("is a FIFO, not a regular file"));
        let directory = KeyEncryptionKey::from_file(folder.path()).err().unwrap().to_string();
        assert!(directory.contains("is a directory, not a regular file"), "{directory}");
        let large = folder.path().join("large");
        std::fs::write(&large, vec![b'a'; 10_000]).unwrap();
        let error = KeyEncryptionKey::from_file(&large).err().unwrap().to_string();
        assert!(error.contains("holds more than 256 bytes"), "{error}");
        assert_eq!(read_at_most(&large, 10_000).unwrap().map(|content| content.len()), Some(10_000));
        assert_eq!(read_at_most(&large, 9_999).unwrap(), None);
    }
}
