//! The test superuser's SCRAM-SHA-256 secret, made with one PBKDF2 iteration.
//!
//! A SCRAM client runs PBKDF2 with the iteration count the server stored with the password:
//! 4096 by default, which takes a test build (dependencies unoptimised) about 100 ms per
//! connection, and a test opens several (its pool's, its store's). PostgreSQL stores a
//! secret given in its own format as it is (`initdb --pwfile` included), so the cluster's
//! superuser gets one made here with [`ITERATIONS`]: the login is still a real SCRAM exchange
//! that a wrong password fails, at a negligible cost. The secret's format is PostgreSQL's
//! (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, RFC 5802 and RFC 7677).

use base64::{Engine as _, engine::general_purpose::STANDARD};
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

/// PBKDF2 iterations of the test superuser's secret.
pub(crate) const ITERATIONS: u32 = 1;

/// PostgreSQL's SCRAM-SHA-256 secret for `password` (ASCII, so SASLprep leaves it as it is).
pub(crate) fn secret(password: &str, salt: &[u8], iterations: u32) -> String {
    let salted = hi(password.as_bytes(), salt, iterations);
    let client_key = hmac(&salted, &[b"Client Key"]);
    let stored_key = Sha256::digest(client_key);
    let server_key = hmac(&salted, &[b"Server Key"]);
    format!(
        "SCRAM-SHA-256${iterations}:{}${}:{}",
        STANDARD.encode(salt),
        STANDARD.encode(stored_key),
        STANDARD.encode(server_key)
    )
}

/// RFC 5802's `Hi`: PBKDF2 with HMAC-SHA-256 and one block.
fn hi(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut previous = hmac(password, &[salt, &[0, 0, 0, 1]]);
    let mut result = previous;
    for _ in 1..iterations {
        previous = hmac(password, &[&previous]);
        for (byte, next) in result.iter_mut().zip(previous) {
            *byte ^= next;
        }
    }
    result
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made with Python's hashlib.pbkdf2_hmac and hmac, an implementation of its own.
    const PASSWORD: &str = "4f1c0e2b9a7d4c3e8b6a5f0d1e2c3b4a";

    fn salt() -> Vec<u8> {
        (0..16).collect()
    }

    #[test]
    fn one_iteration_matches_an_independent_implementation() {
        assert_eq!(
            secret(PASSWORD, &salt(), 1),
            "SCRAM-SHA-256$1:AAECAwQFBgcICQoLDA0ODw==$2X3X5XSqUQ+QrBHAwncD6lfpMI/jcsEG1lKL/wa+W9Y=\
             :F3hfd4qXst7vayT4F1F2FpxOyWf6tg+NPV5y2Mm0/S8="
        );
    }

    #[test]
    fn more_iterations_match_too() {
        assert_eq!(
            secret(PASSWORD, &salt(), 3),
            "SCRAM-SHA-256$3:AAECAwQFBgcICQoLDA0ODw==$9SswHfTqIBjOvoR+xAwMR9X+efpSOgQInMGTIOYlRNk=\
             :71eZS82dUZ8EVXa0WfIuYgcEjicoWRzzRrEZjvDmOcg="
        );
    }
}
