//! The cluster's cookie: the shared secret `ractor_cluster` authenticates node sessions with
//! (Erlang style: both ends prove they know it). It is read from a file that only its owner
//! may read, and a short one is refused.
//!
//! The cookie only decides who may open a session. What a call may do is decided by its
//! signed identity statement, which the serving node verifies whatever the cookie.

use std::{fmt, path::Path};

/// The shortest cookie accepted, in bytes (after trailing whitespace is trimmed).
/// `openssl rand -hex 32` writes 64.
pub const MIN_COOKIE_BYTES: usize = 32;

/// The cluster's shared secret. `Debug` hides it.
#[derive(Clone)]
pub struct Cookie(String);

/// Why a cookie file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CookieError {
    /// The file could not be read.
    #[error("cannot read the cluster cookie file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Other users may read or write it.
    #[error(
        "the cluster cookie file {path} is readable or writable by other users (mode {mode:o}): \
         run `chmod 600 {path}`"
    )]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// It is shorter than [`MIN_COOKIE_BYTES`], or not UTF-8 text.
    #[error(
        "the cluster cookie in {path} is {len} bytes long, and at least {MIN_COOKIE_BYTES} are \
         needed: write one with `openssl rand -hex 32 > {path}`"
    )]
    Short {
        /// The file.
        path: String,
        /// Its length after trimming.
        len: usize,
    },
}

impl Cookie {
    /// The cookie in `path`: its text without trailing whitespace. Refused when the file is
    /// readable or writable by users other than its owner and group (on Unix: any of the
    /// mode bits `o+rw`), or when the cookie is shorter than [`MIN_COOKIE_BYTES`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, CookieError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let read = |source| CookieError::Read {
            path: shown.clone(),
            source,
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path).map_err(read)?.permissions().mode() & 0o777;
            if mode & 0o006 != 0 {
                return Err(CookieError::Exposed { path: shown, mode });
            }
        }
        let bytes = std::fs::read(path).map_err(read)?;
        let text = String::from_utf8(bytes).map_err(|_| CookieError::Short {
            path: shown.clone(),
            len: 0,
        })?;
        Self::new(text.trim_end()).map_err(|len| CookieError::Short { path: shown, len })
    }

    /// `secret` as a cookie, or its length when it is too short.
    fn new(secret: &str) -> Result<Self, usize> {
        if secret.len() < MIN_COOKIE_BYTES {
            return Err(secret.len());
        }
        Ok(Self(secret.to_owned()))
    }

    /// The secret, for the node server.
    pub(crate) fn secret(&self) -> String {
        self.0.clone()
    }
}

impl fmt::Debug for Cookie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Cookie(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie_file(text: &str, mode: u32) -> tempfile::NamedTempFile {
        use std::os::unix::fs::PermissionsExt as _;
        let file = tempfile::NamedTempFile::new().expect("a file");
        std::fs::write(file.path(), text).expect("written");
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        file
    }

    #[test]
    fn a_long_cookie_only_its_owner_reads_is_read_without_its_newline() {
        let secret = "a".repeat(MIN_COOKIE_BYTES);
        let file = cookie_file(&format!("{secret}\n"), 0o600);

        let cookie = Cookie::from_file(file.path()).expect("accepted");

        assert_eq!(cookie.secret(), secret);
        assert_eq!(format!("{cookie:?}"), "Cookie(..)");
    }

    #[test]
    fn a_short_cookie_is_refused() {
        let file = cookie_file("secret\n", 0o600);

        let refused = Cookie::from_file(file.path()).expect_err("too short");

        assert!(
            matches!(refused, CookieError::Short { len: 6, .. }),
            "{refused}"
        );
    }

    #[test]
    fn a_cookie_file_other_users_may_read_is_refused() {
        let file = cookie_file(&"a".repeat(64), 0o644);

        let refused = Cookie::from_file(file.path()).expect_err("world-readable");

        assert!(
            matches!(refused, CookieError::Exposed { mode: 0o644, .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
    }
}
