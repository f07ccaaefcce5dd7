//! The Ed25519 key rings: the private keys a node signs its statements with, and the public
//! keys of each peer it accepts statements from.
//!
//! Keys come from PEM files, as OpenSSL writes them: a private key is PKCS#8 (`-----BEGIN
//! PRIVATE KEY-----`, `openssl genpkey -algorithm ed25519`), a public key SPKI (`-----BEGIN
//! PUBLIC KEY-----`, `openssl pkey -in key.pem -pubout`). A key's `kid`, the JWS header that
//! says which key signed, is the key's JWK thumbprint (RFC 7638: the base64url SHA-256 of
//! `{"crv":"Ed25519","kty":"OKP","x":"<public key>"}`), computed from the public key on both
//! sides and never configured. Nothing here prints key material: the rings' `Debug` shows
//! the `kid`s only.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::{
    Engine as _,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use jsonwebtoken::{DecodingKey, DecodingKeyKind, EncodingKey};
use sha2::{Digest as _, Sha256};

/// The length of a raw Ed25519 public key.
const PUBLIC_KEY_LEN: usize = 32;

/// The DER prefix of an Ed25519 SPKI public key (RFC 8410 §4), before the 32 key bytes.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// Why a key ring could not be read; the message names the file (or the key's position) and
/// never repeats the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key file could not be read.
    #[error("could not read the key file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A key is not of the expected kind.
    #[error("{which} is not {expected}: {reason}")]
    Invalid {
        /// The file, or `key #N` for keys given as text.
        which: String,
        /// What it should be.
        expected: &'static str,
        /// What the parser said.
        reason: String,
    },
    /// The ring holds no key.
    #[error(
        "no {0} key was given: list at least one PEM file (generate a key with `openssl genpkey \
         -algorithm ed25519`)"
    )]
    Empty(&'static str),
    /// A key could not be generated.
    #[error("could not generate an Ed25519 key: {0}")]
    Generate(String),
}

/// What a private key PEM must be.
const PRIVATE_EXPECTED: &str = "an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----, \
                                as `openssl genpkey -algorithm ed25519` writes it)";

/// What a public key PEM must be.
const PUBLIC_EXPECTED: &str = "an Ed25519 public key in SPKI PEM (-----BEGIN PUBLIC KEY-----, as \
                               `openssl pkey -in key.pem -pubout` writes it)";

/// One private key, its public half's raw bytes and its `kid`.
pub(crate) struct SigningKey {
    pub(crate) kid: String,
    pub(crate) encoding: EncodingKey,
    public: [u8; PUBLIC_KEY_LEN],
}

/// A ring of Ed25519 private keys: the first one signs. Its `Debug` shows the keys' `kid`s.
pub struct SigningKeys {
    keys: Vec<SigningKey>,
}

impl fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeys")
            .field(
                "kids",
                &self.keys.iter().map(|key| &key.kid).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SigningKeys {
    /// Reads a ring of PKCS#8 PEM private keys; the first file's key signs.
    pub fn from_pem_files<P: AsRef<Path>>(paths: &[P]) -> Result<Self, KeyError> {
        Self::from_keys(parse_files(paths, signing_key)?)
    }

    /// A ring of PKCS#8 PEM private keys given as text; the first one signs.
    pub fn from_pems(pems: &[&[u8]]) -> Result<Self, KeyError> {
        Self::from_keys(parse_pems(pems, signing_key)?)
    }

    fn from_keys(keys: Vec<SigningKey>) -> Result<Self, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::Empty("signing"));
        }
        Ok(Self { keys })
    }

    /// The public halves of the ring, in the same order: what the peers that accept this
    /// node's statements list for it.
    pub fn verifying_keys(&self) -> VerifyingKeys {
        VerifyingKeys {
            keys: self
                .keys
                .iter()
                .map(|key| VerifyingKey::from_raw(key.public))
                .collect(),
        }
    }

    /// The key that signs.
    pub(crate) fn signing(&self) -> &SigningKey {
        // `from_keys` refuses an empty ring.
        &self.keys[0]
    }
}

/// A ring of Ed25519 public keys: a statement signed by any of them verifies. Its `Debug`
/// shows the keys' `kid`s.
#[derive(Clone)]
pub struct VerifyingKeys {
    keys: Vec<VerifyingKey>,
}

/// One public key and its `kid`.
#[derive(Clone)]
pub(crate) struct VerifyingKey {
    pub(crate) kid: String,
    pub(crate) decoding: DecodingKey,
    raw: [u8; PUBLIC_KEY_LEN],
}

impl VerifyingKey {
    fn from_raw(raw: [u8; PUBLIC_KEY_LEN]) -> Self {
        Self {
            kid: thumbprint(&raw),
            decoding: DecodingKey::from_ed_der(&raw),
            raw,
        }
    }
}

impl fmt::Debug for VerifyingKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyingKeys")
            .field(
                "kids",
                &self.keys.iter().map(|key| &key.kid).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl VerifyingKeys {
    /// Reads a ring of SPKI PEM public keys.
    pub fn from_pem_files<P: AsRef<Path>>(paths: &[P]) -> Result<Self, KeyError> {
        Self::from_keys(parse_files(paths, verifying_key)?)
    }

    /// A ring of SPKI PEM public keys given as text.
    pub fn from_pems(pems: &[&[u8]]) -> Result<Self, KeyError> {
        Self::from_keys(parse_pems(pems, verifying_key)?)
    }

    fn from_keys(keys: Vec<VerifyingKey>) -> Result<Self, KeyError> {
        if keys.is_empty() {
            return Err(KeyError::Empty("verifying"));
        }
        Ok(Self { keys })
    }

    /// The keys as SPKI PEM, in order: what a peer's `public_key_files` hold.
    pub fn to_pems(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|key| {
                let mut der = SPKI_PREFIX.to_vec();
                der.extend_from_slice(&key.raw);
                pem("PUBLIC KEY", &der)
            })
            .collect()
    }

    /// The key whose `kid` is `kid`.
    pub(crate) fn by_kid(&self, kid: &str) -> Option<&VerifyingKey> {
        self.keys.iter().find(|key| key.kid == kid)
    }
}

/// A fresh Ed25519 private key in PKCS#8 PEM (v1, as OpenSSL writes it).
pub fn generate_signing_key_pem() -> Result<String, KeyError> {
    let document = Ed25519KeyPair::generate_pkcs8v1(&aws_lc_rs::rand::SystemRandom::new())
        .map_err(|error| KeyError::Generate(error.to_string()))?;
    Ok(pem("PRIVATE KEY", document.as_ref()))
}

/// Each file's text, with its path for messages.
fn read_files<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<(String, Vec<u8>)>, KeyError> {
    paths
        .iter()
        .map(|path| {
            let path = path.as_ref();
            std::fs::read(path)
                .map(|pem| (format!("the key file {}", path.display()), pem))
                .map_err(|source| KeyError::Read {
                    path: path.to_owned(),
                    source,
                })
        })
        .collect()
}

/// Each key of the files at `paths`, read with `parse`; an error names its file.
fn parse_files<K, P: AsRef<Path>>(
    paths: &[P],
    parse: fn(&str, &[u8]) -> Result<K, KeyError>,
) -> Result<Vec<K>, KeyError> {
    read_files(paths)?
        .iter()
        .map(|(which, pem)| parse(which, pem))
        .collect()
}

/// Each key of `pems`, read with `parse`; an error names its place in the list (`key #2`).
fn parse_pems<K>(
    pems: &[&[u8]],
    parse: fn(&str, &[u8]) -> Result<K, KeyError>,
) -> Result<Vec<K>, KeyError> {
    pems.iter()
        .enumerate()
        .map(|(index, pem)| parse(&format!("key #{}", index + 1), pem))
        .collect()
}

fn signing_key(which: &str, pem: &[u8]) -> Result<SigningKey, KeyError> {
    let invalid = |reason: String| KeyError::Invalid {
        which: which.to_owned(),
        expected: PRIVATE_EXPECTED,
        reason,
    };
    let encoding = EncodingKey::from_ed_pem(pem).map_err(|error| invalid(error.to_string()))?;
    let pair = Ed25519KeyPair::from_pkcs8(encoding.as_bytes())
        .map_err(|error| invalid(error.to_string()))?;
    let public: [u8; PUBLIC_KEY_LEN] = pair
        .public_key()
        .as_ref()
        .try_into()
        .map_err(|_| invalid("its public key is not 32 bytes long".to_owned()))?;
    Ok(SigningKey {
        kid: thumbprint(&public),
        encoding,
        public,
    })
}

fn verifying_key(which: &str, pem: &[u8]) -> Result<VerifyingKey, KeyError> {
    let invalid = |reason: String| KeyError::Invalid {
        which: which.to_owned(),
        expected: PUBLIC_EXPECTED,
        reason,
    };
    let decoding = DecodingKey::from_ed_pem(pem).map_err(|error| invalid(error.to_string()))?;
    let DecodingKeyKind::SecretOrDer(bytes) = decoding.kind() else {
        return Err(invalid("it holds no raw public key".to_owned()));
    };
    let raw: [u8; PUBLIC_KEY_LEN] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| invalid(format!("its key is {} bytes long, not 32", bytes.len())))?;
    Ok(VerifyingKey::from_raw(raw))
}

/// The RFC 7638 JWK thumbprint of an Ed25519 public key (RFC 8037 §2), base64url.
fn thumbprint(raw: &[u8; PUBLIC_KEY_LEN]) -> String {
    let jwk = format!(
        r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
        URL_SAFE_NO_PAD.encode(raw)
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(jwk.as_bytes()))
}

/// `der` as a PEM block labelled `label`, 64 characters a line (RFC 7468).
fn pem(label: &str, der: &[u8]) -> String {
    let base64 = STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in base64.as_bytes().chunks(64) {
        // Base64 is ASCII.
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of RFC 8037 Appendix A.1 and A.2.
    const RFC_8037_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\n\
        MC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n\
        -----END PRIVATE KEY-----\n";

    #[test]
    fn the_kid_is_the_rfc_7638_thumbprint_of_rfc_8037() {
        let keys = SigningKeys::from_pems(&[RFC_8037_PRIVATE.as_bytes()]).expect("the RFC's key");
        // RFC 8037 A.3.
        assert_eq!(
            keys.signing().kid,
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
        let public = keys.verifying_keys();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(public.keys[0].raw),
            "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        );
    }

    #[test]
    fn public_keys_round_trip_through_pem_and_keep_their_kid() {
        let generated = generate_signing_key_pem().expect("a key");
        let signing = SigningKeys::from_pems(&[generated.as_bytes()]).expect("its own PEM");
        let pems = signing.verifying_keys().to_pems();
        assert!(
            pems[0].starts_with("-----BEGIN PUBLIC KEY-----\n"),
            "{}",
            pems[0]
        );
        let read = VerifyingKeys::from_pems(&[pems[0].as_bytes()]).expect("the PEM written");
        assert_eq!(read.keys[0].kid, signing.signing().kid);
        assert!(read.by_kid(&signing.signing().kid).is_some());
    }

    #[test]
    fn debug_shows_kids_and_no_key_material() {
        let generated = generate_signing_key_pem().expect("a key");
        let signing = SigningKeys::from_pems(&[generated.as_bytes()]).expect("a ring");
        let debug = format!("{signing:?} {:?}", signing.verifying_keys());
        assert!(debug.contains(&signing.signing().kid), "{debug}");
        let body: String = generated.lines().nth(1).unwrap_or_default().to_owned();
        assert!(!debug.contains(&body[..20]), "{debug}");
    }

    #[test]
    fn wrong_keys_and_files_are_refused_with_what_to_give() {
        let generated = generate_signing_key_pem().expect("a key");
        let public = SigningKeys::from_pems(&[generated.as_bytes()])
            .expect("a ring")
            .verifying_keys()
            .to_pems();
        let error = SigningKeys::from_pems(&[public[0].as_bytes()]).expect_err("a public key");
        assert!(
            error
                .to_string()
                .contains("key #1 is not an Ed25519 private key"),
            "{error}"
        );
        let error = VerifyingKeys::from_pems(&[generated.as_bytes()]).expect_err("a private key");
        assert!(error.to_string().contains("SPKI PEM"), "{error}");
        let error = SigningKeys::from_pems(&[]).expect_err("no key");
        assert!(error.to_string().contains("openssl genpkey"), "{error}");
        let error = VerifyingKeys::from_pem_files(&["/nonexistent/peer.pem"]).expect_err("no file");
        assert!(
            error.to_string().contains("/nonexistent/peer.pem"),
            "{error}"
        );
    }

    #[test]
    fn files_are_read_in_order() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let first = generate_signing_key_pem().expect("a key");
        let second = generate_signing_key_pem().expect("a key");
        let paths = [dir.path().join("new.pem"), dir.path().join("old.pem")];
        std::fs::write(&paths[0], &first).expect("written");
        std::fs::write(&paths[1], &second).expect("written");
        let ring = SigningKeys::from_pem_files(&paths).expect("two keys");
        let only_first = SigningKeys::from_pems(&[first.as_bytes()]).expect("one key");
        assert_eq!(ring.signing().kid, only_first.signing().kid);
        assert_eq!(ring.verifying_keys().to_pems().len(), 2);
    }
}
