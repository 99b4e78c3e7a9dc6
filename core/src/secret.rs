//! Secrets (the database URL with its password, the token signing key, the
//! bootstrap admin's password) come from the environment, or from a file
//! named by `NAME_FILE` as Kubernetes and Docker mount them. Never from the
//! command line, where any user of the host reads them with `ps`; and never
//! into a log, since a [`Secret`] prints as `[redacted]`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// A value that must not be shown: `Debug` and `Display` hide it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("set {0} or {0}_FILE, not both")]
    Both(String),
    #[error("{0} is not valid UTF-8")]
    NotUtf8(String),
    #[error("{name}_FILE: cannot read {path}: {source}")]
    Unreadable {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{name}_FILE: {path} is empty")]
    Empty { name: String, path: PathBuf },
    #[error("{0} (or {0}_FILE) is required")]
    Missing(String),
}

/// `name` from the process environment, or from the file `name_FILE` names.
pub fn from_env(name: &str) -> Result<Option<Secret>, SecretError> {
    lookup(name, |var| std::env::var_os(var))
}

/// [`from_env`] for a secret without which the process cannot run.
pub fn required(name: &str) -> Result<Secret, SecretError> {
    from_env(name)?.ok_or_else(|| SecretError::Missing(name.to_owned()))
}

fn lookup(
    name: &str,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<Option<Secret>, SecretError> {
    match (var(name), var(&format!("{name}_FILE"))) {
        (Some(_), Some(_)) => Err(SecretError::Both(name.to_owned())),
        (Some(value), None) => value
            .into_string()
            .map(|value| Some(Secret(value)))
            .map_err(|_| SecretError::NotUtf8(name.to_owned())),
        (None, Some(path)) => read_file(name, PathBuf::from(path)).map(Some),
        (None, None) => Ok(None),
    }
}

fn read_file(name: &str, path: PathBuf) -> Result<Secret, SecretError> {
    let text = std::fs::read_to_string(&path).map_err(|source| SecretError::Unreadable {
        name: name.to_owned(),
        path: path.clone(),
        source,
    })?;
    // Files written by `echo` or editors end with a newline that is not part
    // of the secret.
    let value = text.trim_end_matches(['\n', '\r']);
    if value.is_empty() {
        return Err(SecretError::Empty {
            name: name.to_owned(),
            path,
        });
    }
    Ok(Secret(value.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn file_with(content: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "ticket-secret-{}-{}",
            std::process::id(),
            content.len()
        ));
        std::fs::write(&path, content).unwrap();
        path
    }

    #[test]
    fn a_secret_comes_from_the_variable_or_from_the_file_it_names() {
        let direct = lookup("KEY", env(&[("KEY", "s3cret")])).unwrap();
        assert_eq!(direct.unwrap().expose(), "s3cret");

        let path = file_with("from-a-file\n");
        let filed = lookup("KEY", env(&[("KEY_FILE", path.to_str().unwrap())])).unwrap();
        assert_eq!(
            filed.unwrap().expose(),
            "from-a-file",
            "final newline dropped"
        );
        std::fs::remove_file(path).unwrap();

        assert!(lookup("KEY", env(&[])).unwrap().is_none());
    }

    #[test]
    fn ambiguous_unreadable_or_empty_sources_are_errors() {
        let both = lookup("KEY", env(&[("KEY", "a"), ("KEY_FILE", "/x")]));
        assert!(matches!(both, Err(SecretError::Both(_))));
        let missing = lookup("KEY", env(&[("KEY_FILE", "/no/such/ticket/secret")]));
        assert!(matches!(missing, Err(SecretError::Unreadable { .. })));
        let path = file_with("\n");
        let empty = lookup("KEY", env(&[("KEY_FILE", path.to_str().unwrap())]));
        assert!(matches!(empty, Err(SecretError::Empty { .. })));
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_secret_never_shows_in_debug_or_display_output() {
        let secret = Secret::new("hunter2-hunter2");
        let shown = format!("{secret:?} {secret} {:?}", Some(&secret));
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
