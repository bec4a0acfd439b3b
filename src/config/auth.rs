//! `[auth]`: authentication inside etcd — eco's own identity, the roles
//! and users etcd should hold (reconciled by the instance beside the etcd
//! leader, `crate::auth`), and etcd's token provider (`[auth.token]`, the
//! `--auth-token` flag).
//!
//! eco's identity is either `root` with the password in
//! `root_password_file`, or — without that key — its client certificate
//! (`[etcd.tls.eco]`, with `[etcd.tls.client] client_cert_auth = true`,
//! etcd's `--client-cert-auth`): etcd takes the certificate's CN as the
//! user, so that CN must be `root` or a user eco gives the `root` role
//! (eco creates it). Passwords are always files, never values in this
//! file, and nothing ever prints them.
//!
//! The rules serde cannot express are checked by [`check`] (names,
//! permission shapes, references, the token's keys); the files
//! themselves by `crate::auth::check_files` (`eco config check`, and
//! `eco run` before anything starts).

use super::ConfigDuration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// `[auth]`
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// eco enables authentication in etcd (once the `root` user and eco's
    /// identity hold the `root` role) and keeps the roles and users below
    /// in etcd; it never disables authentication. `false`: eco manages
    /// nothing of etcd's authentication (it still authenticates with
    /// `root_password_file` when etcd asks).
    #[serde(default)]
    pub enabled: bool,
    /// eco authenticates as `root` with the password in this file (the
    /// whole file, a trailing newline removed). Without it eco's identity
    /// is its client certificate's CN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_password_file: Option<PathBuf>,
    /// `[[auth.roles]]`
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleConfig>,
    /// `[[auth.users]]`
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<UserConfig>,
    /// `[auth.token]`: how etcd issues tokens to authenticated clients.
    #[serde(default, skip_serializing_if = "is_default")]
    pub token: TokenConfig,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `[[auth.roles]]`
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    pub name: String,
    #[serde(default)]
    pub permissions: Vec<PermissionConfig>,
}

/// One permission of a role: `key` alone, `[key, range_end)`, or every
/// key starting with `key` (`prefix = true`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PermissionConfig {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefix: bool,
    #[serde(rename = "type")]
    pub access: PermissionAccess,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PermissionAccess {
    Read,
    Write,
    Readwrite,
}

/// `[[auth.users]]`
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    /// The user's password (the whole file, a trailing newline removed).
    /// Absent: the user has no password and authenticates only with a
    /// client certificate whose CN is its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `[auth.token]`
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    #[serde(rename = "type", default)]
    pub kind: TokenKind,
    /// For `jwt`: the signing algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_method: Option<SignMethod>,
    /// For `jwt`: the public key (PEM `PUBLIC KEY`, or a certificate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key_file: Option<PathBuf>,
    /// For `jwt`: the private key (PEM; a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<PathBuf>,
    /// For `jwt`: how long a token is valid (etcd's default: 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<ConfigDuration>,
}

/// etcd's token providers.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// etcd's default: random tokens held in each member's memory.
    #[default]
    Simple,
    /// Signed JSON web tokens any member can verify (recommended).
    Jwt,
}

/// The JWT signing algorithms etcd accepts with an asymmetric key.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum SignMethod {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    ES512,
}

/// The kind of key a sign method needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFamily {
    Rsa,
    /// An EC key on this NIST curve (`P-256`, `P-384`, `P-521`).
    Ec(&'static str),
}

impl SignMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            SignMethod::RS256 => "RS256",
            SignMethod::RS384 => "RS384",
            SignMethod::RS512 => "RS512",
            SignMethod::PS256 => "PS256",
            SignMethod::PS384 => "PS384",
            SignMethod::PS512 => "PS512",
            SignMethod::ES256 => "ES256",
            SignMethod::ES384 => "ES384",
            SignMethod::ES512 => "ES512",
        }
    }

    pub fn family(self) -> KeyFamily {
        match self {
            SignMethod::ES256 => KeyFamily::Ec("P-256"),
            SignMethod::ES384 => KeyFamily::Ec("P-384"),
            SignMethod::ES512 => KeyFamily::Ec("P-521"),
            _ => KeyFamily::Rsa,
        }
    }
}

impl AuthConfig {
    /// Every path, mutably (relative paths are resolved against the config
    /// file's directory).
    pub fn paths_mut(&mut self) -> Vec<&mut PathBuf> {
        let mut out: Vec<&mut PathBuf> = Vec::new();
        if let Some(p) = self.root_password_file.as_mut() {
            out.push(p);
        }
        for u in &mut self.users {
            if let Some(p) = u.password_file.as_mut() {
                out.push(p);
            }
        }
        let t = &mut self.token;
        for p in [t.public_key_file.as_mut(), t.private_key_file.as_mut()]
            .into_iter()
            .flatten()
        {
            out.push(p);
        }
        out
    }

    /// The password files, with the key that names each (for messages).
    pub fn password_files(&self) -> Vec<(String, &PathBuf)> {
        let mut out = Vec::new();
        if let Some(p) = &self.root_password_file {
            out.push(("auth.root_password_file".to_string(), p));
        }
        for u in &self.users {
            if let Some(p) = &u.password_file {
                out.push((format!("auth.users[{}].password_file", u.name), p));
            }
        }
        out
    }
}

/// The `--auth-token` value for `[auth.token]`: `None` for etcd's default
/// (`simple`, no flag); for `jwt`,
/// `jwt,pub-key=…,priv-key=…,sign-method=…[,ttl=…]`.
pub fn auth_token_flag(token: &TokenConfig) -> Option<String> {
    if token.kind != TokenKind::Jwt {
        return None;
    }
    let mut value = String::from("jwt");
    if let Some(p) = &token.public_key_file {
        value.push_str(&format!(",pub-key={}", p.display()));
    }
    if let Some(p) = &token.private_key_file {
        value.push_str(&format!(",priv-key={}", p.display()));
    }
    if let Some(m) = token.sign_method {
        value.push_str(&format!(",sign-method={}", m.as_str()));
    }
    if let Some(ttl) = token.ttl {
        // Go's time.ParseDuration reads "300s" and "1500ms".
        let d = ttl.get();
        if d.subsec_millis() == 0 {
            value.push_str(&format!(",ttl={}s", d.as_secs()));
        } else {
            value.push_str(&format!(",ttl={}ms", d.as_millis()));
        }
    }
    Some(value)
}

/// etcd's user and role names: not empty, printable, no whitespace (eco's
/// rule: etcd itself takes almost anything, but a name in a log line or a
/// shell must read back the same).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\' && c != ',')
}

/// Whether eco can authenticate by its client certificate: `[etcd.tls.eco]`
/// presented to a client surface that requires client certificates
/// (etcd's `--client-cert-auth`).
pub fn certificate_identity_possible(tls: &super::EtcdTlsConfig) -> bool {
    tls.eco.is_some() && tls.client.as_ref().is_some_and(|c| c.client_cert_auth)
}

/// The rules of `[auth]` serde cannot express, as `(key, message)`; `tls`
/// is the effective `[etcd.tls]`.
pub(super) fn check(auth: &AuthConfig, tls: &super::EtcdTlsConfig) -> Vec<(String, String)> {
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut fail = |key: String, message: String| problems.push((key, message));
    let cert_identity = certificate_identity_possible(tls);
    if auth.enabled && auth.root_password_file.is_none() && !cert_identity {
        fail(
            "auth.root_password_file".into(),
            "auth.enabled needs eco's own identity inside etcd: set root_password_file (eco authenticates as root), or give eco a client certificate ([etcd.tls.eco], with [etcd.tls.client] client_cert_auth = true) whose CN is root or a user eco gives the root role".into(),
        );
    }
    if !auth.enabled && (!auth.roles.is_empty() || !auth.users.is_empty()) {
        fail(
            "auth.enabled".into(),
            "[[auth.roles]] and [[auth.users]] are kept in etcd only when eco manages authentication: set enabled = true, or remove them".into(),
        );
    }
    for (key, path) in auth.password_files() {
        if path.as_os_str().is_empty() {
            fail(
                key,
                "an empty path; allowed: the path of a file holding the password".into(),
            );
        }
    }

    let mut role_names = BTreeSet::new();
    for (i, role) in auth.roles.iter().enumerate() {
        let key = format!("auth.roles[{i}]");
        if !valid_name(&role.name) {
            fail(
                format!("{key}.name"),
                format!(
                    "{:?} is not a role name; allowed: 1 to 128 printable ASCII characters without spaces, quotes, backslashes or commas",
                    role.name
                ),
            );
        } else if role.name == recovery::acl::ROOT {
            fail(
                format!("{key}.name"),
                "root is etcd's built-in role (it grants everything and takes no permissions); give users the root role instead".into(),
            );
        } else if !role_names.insert(role.name.as_str()) {
            fail(
                format!("{key}.name"),
                format!("role {} is listed twice", role.name),
            );
        }
        let mut ranges = BTreeSet::new();
        for (j, p) in role.permissions.iter().enumerate() {
            let pkey = format!("{key}.permissions[{j}]");
            match permission_range(p) {
                Err(why) => fail(pkey, why),
                Ok(range) => {
                    if !ranges.insert(range.clone()) {
                        fail(
                            pkey,
                            format!(
                                "{range} is already given by another permission of role {}; one access per key range",
                                role.name
                            ),
                        );
                    }
                }
            }
        }
    }

    let mut user_names = BTreeSet::new();
    for (i, user) in auth.users.iter().enumerate() {
        let key = format!("auth.users[{i}]");
        if !valid_name(&user.name) {
            fail(
                format!("{key}.name"),
                format!(
                    "{:?} is not a user name; allowed: 1 to 128 printable ASCII characters without spaces, quotes, backslashes or commas",
                    user.name
                ),
            );
        } else if user.name == recovery::acl::ROOT {
            fail(
                format!("{key}.name"),
                "root is managed by eco (the root role; its password is auth.root_password_file): remove it from [[auth.users]]".into(),
            );
        } else if !user_names.insert(user.name.as_str()) {
            fail(
                format!("{key}.name"),
                format!("user {} is listed twice", user.name),
            );
        }
        if user.password_file.is_none() && !tls.client.as_ref().is_some_and(|c| c.client_cert_auth)
        {
            fail(
                format!("{key}.password_file"),
                format!(
                    "user {} has no password, so it can only authenticate with a client certificate whose CN is its name, which needs [etcd.tls.client] client_cert_auth = true (etcd's --client-cert-auth); give it a password_file",
                    user.name
                ),
            );
        }
        let mut seen = BTreeSet::new();
        for role in &user.roles {
            if !seen.insert(role.as_str()) {
                fail(
                    format!("{key}.roles"),
                    format!("role {role} is listed twice"),
                );
            } else if role != recovery::acl::ROOT && !auth.roles.iter().any(|r| &r.name == role) {
                fail(
                    format!("{key}.roles"),
                    format!(
                        "role {role} is not defined; allowed: root or a name of [[auth.roles]]"
                    ),
                );
            }
        }
    }

    let t = &auth.token;
    match t.kind {
        TokenKind::Simple => {
            if t.sign_method.is_some()
                || t.public_key_file.is_some()
                || t.private_key_file.is_some()
                || t.ttl.is_some()
            {
                fail(
                    "auth.token".into(),
                    "sign_method, public_key_file, private_key_file and ttl are for type = \"jwt\"; set it, or remove them".into(),
                );
            }
        }
        TokenKind::Jwt => {
            if t.sign_method.is_none() {
                fail(
                    "auth.token.sign_method".into(),
                    "type = \"jwt\" needs a sign method; allowed: RS256, RS384, RS512, PS256, PS384, PS512 (RSA keys), ES256, ES384, ES512 (EC keys on P-256, P-384, P-521)".into(),
                );
            }
            for (name, path) in [
                ("public_key_file", &t.public_key_file),
                ("private_key_file", &t.private_key_file),
            ] {
                match path {
                    None => fail(
                        format!("auth.token.{name}"),
                        "type = \"jwt\" needs both keys: every member signs and verifies tokens"
                            .into(),
                    ),
                    Some(p) if p.as_os_str().is_empty() || p.to_string_lossy().contains(',') => {
                        fail(
                            format!("auth.token.{name}"),
                            format!(
                                "{} cannot go in etcd's --auth-token flag; allowed: a path without commas",
                                p.display()
                            ),
                        )
                    }
                    Some(_) => {}
                }
            }
            if let Some(ttl) = t.ttl
                && ttl.get() < std::time::Duration::from_secs(1)
            {
                fail(
                    "auth.token.ttl".into(),
                    format!("{ttl} is too short; allowed: at least 1s"),
                );
            }
        }
    }
    problems
}

/// The key range a permission covers, or why it is not one.
pub fn permission_range(p: &PermissionConfig) -> Result<recovery::acl::KeyRange, String> {
    use recovery::acl::KeyRange;
    match (&p.range_end, p.prefix) {
        (Some(_), true) => {
            Err("range_end and prefix = true both say where the range ends; keep one".into())
        }
        (None, true) => Ok(KeyRange::prefix(p.key.as_bytes())),
        (None, false) if p.key.is_empty() => Err(
            "an empty key; allowed: a key, or prefix = true with key = \"\" for every key".into(),
        ),
        (None, false) => Ok(KeyRange::single(p.key.as_bytes())),
        (Some(end), false) if end.as_str() == "\0" => {
            Ok(KeyRange::between(p.key.as_bytes(), [0u8]))
        }
        (Some(end), false) if p.key.is_empty() || end.as_bytes() <= p.key.as_bytes() => {
            Err(format!(
                "range_end {end:?} must sort after key {:?} (or be \"\\u0000\" for every key from key on), and key must not be empty",
                p.key
            ))
        }
        (Some(end), false) => Ok(KeyRange::between(p.key.as_bytes(), end.as_bytes())),
    }
}

impl From<PermissionAccess> for recovery::acl::Access {
    fn from(a: PermissionAccess) -> Self {
        match a {
            PermissionAccess::Read => recovery::acl::Access::Read,
            PermissionAccess::Write => recovery::acl::Access::Write,
            PermissionAccess::Readwrite => recovery::acl::Access::ReadWrite,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_str;
    use std::path::Path;

    const BASE: &str = "[cluster]\nname = \"c1\"\n[provider]\nkind = \"static\"\n[provider.static]\ngroup_file = \"g.toml\"\n";

    const TLS_CN: &str = "[etcd.tls.client]\ncert_file = \"s.crt\"\nkey_file = \"s.key\"\ntrusted_ca_file = \"ca.crt\"\n[etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\n";

    fn parse(extra: &str) -> Result<crate::config::Config, String> {
        parse_str(
            &format!("{BASE}{extra}"),
            Path::new("/x/eco.toml"),
            Path::new("/x"),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_auth_section_parses_with_relative_paths_resolved() {
        let c = parse(
            "[auth]\nenabled = true\nroot_password_file = \"secrets/root\"\n\
             [[auth.roles]]\nname = \"app-rw\"\npermissions = [\n  { key = \"app/\", prefix = true, type = \"readwrite\" },\n  { key = \"a\", range_end = \"c\", type = \"read\" },\n  { key = \"cfg\", type = \"write\" },\n  { key = \"\", prefix = true, type = \"read\" },\n]\n\
             [[auth.users]]\nname = \"app\"\npassword_file = \"/s/app\"\nroles = [\"app-rw\"]\n\
             [[auth.users]]\nname = \"admin\"\npassword_file = \"admin.pw\"\nroles = [\"root\"]\n\
             [auth.token]\ntype = \"jwt\"\nsign_method = \"ES256\"\npublic_key_file = \"jwt.pub\"\nprivate_key_file = \"/k/jwt.key\"\nttl = \"10m\"\n",
        )
        .unwrap();
        let a = &c.auth;
        assert!(a.enabled);
        assert_eq!(
            a.root_password_file.as_deref(),
            Some(Path::new("/x/secrets/root"))
        );
        assert_eq!(
            a.users[1].password_file.as_deref(),
            Some(Path::new("/x/admin.pw"))
        );
        assert_eq!(
            a.token.public_key_file.as_deref(),
            Some(Path::new("/x/jwt.pub"))
        );
        assert_eq!(
            super::auth_token_flag(&a.token).unwrap(),
            "jwt,pub-key=/x/jwt.pub,priv-key=/k/jwt.key,sign-method=ES256,ttl=600s"
        );
        let ranges: Vec<String> = a.roles[0]
            .permissions
            .iter()
            .map(|p| super::permission_range(p).unwrap().to_string())
            .collect();
        assert_eq!(
            ranges,
            [
                "prefix \"app/\"",
                "keys [\"a\", \"c\")",
                "key \"cfg\"",
                "every key"
            ]
        );
        // Off by default, and then nothing is written back.
        let plain = parse("").unwrap();
        assert_eq!(plain.auth, super::AuthConfig::default());
        assert!(!toml::to_string(&plain).unwrap().contains("auth"));
        // A certificate identity needs no password file.
        parse(&format!(
            "{TLS_CN}[auth]\nenabled = true\n[[auth.users]]\nname = \"eco\"\nroles = [\"root\"]\n"
        ))
        .unwrap();
    }

    #[test]
    fn every_auth_rule_has_a_failing_case() {
        let pw = "[auth]\nenabled = true\nroot_password_file = \"/r\"\n";
        let cases: &[(String, &str, &str)] = &[
            ("[auth]\nenabled = true\n".into(), "auth.root_password_file", "eco's own identity"),
            (
                "[etcd.tls.client]\ncert_file = \"s.crt\"\nkey_file = \"s.key\"\ntrusted_ca_file = \"ca.crt\"\nclient_cert_auth = false\n[etcd.tls.eco]\ncert_file = \"e.crt\"\nkey_file = \"e.key\"\n[auth]\nenabled = true\n".into(),
                "auth.root_password_file",
                "client_cert_auth = true",
            ),
            (
                "[auth]\nroot_password_file = \"/r\"\n[[auth.roles]]\nname = \"r\"\n".into(),
                "auth.enabled",
                "set enabled = true",
            ),
            ("[auth]\nroot_password_file = \"\"\n".into(), "auth.root_password_file", "an empty path"),
            (format!("{pw}[[auth.roles]]\nname = \"root\"\n"), "auth.roles[0].name", "built-in role"),
            (format!("{pw}[[auth.roles]]\nname = \"a b\"\n"), "auth.roles[0].name", "not a role name"),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\n[[auth.roles]]\nname = \"r\"\n"),
                "auth.roles[1].name",
                "listed twice",
            ),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\npermissions = [{{ key = \"a\", prefix = true, range_end = \"b\", type = \"read\" }}]\n"),
                "auth.roles[0].permissions[0]",
                "keep one",
            ),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\npermissions = [{{ key = \"b\", range_end = \"a\", type = \"read\" }}]\n"),
                "auth.roles[0].permissions[0]",
                "must sort after key",
            ),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\npermissions = [{{ key = \"\", type = \"read\" }}]\n"),
                "auth.roles[0].permissions[0]",
                "an empty key",
            ),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\npermissions = [{{ key = \"a/\", prefix = true, type = \"read\" }}, {{ key = \"a/\", range_end = \"a0\", type = \"write\" }}]\n"),
                "auth.roles[0].permissions[1]",
                "already given",
            ),
            (
                format!("{pw}[[auth.roles]]\nname = \"r\"\npermissions = [{{ key = \"a\", type = \"all\" }}]\n"),
                "type",
                "unknown variant `all`",
            ),
            (format!("{pw}[[auth.users]]\nname = \"root\"\npassword_file = \"/p\"\n"), "auth.users[0].name", "managed by eco"),
            (
                format!("{pw}[[auth.users]]\nname = \"u\"\npassword_file = \"/p\"\n[[auth.users]]\nname = \"u\"\npassword_file = \"/p\"\n"),
                "auth.users[1].name",
                "listed twice",
            ),
            (format!("{pw}[[auth.users]]\nname = \"u\"\n"), "auth.users[0].password_file", "--client-cert-auth"),
            (
                format!("{pw}[[auth.users]]\nname = \"u\"\npassword_file = \"/p\"\nroles = [\"nope\"]\n"),
                "auth.users[0].roles",
                "role nope is not defined",
            ),
            (format!("{pw}[[auth.users]]\nname = \"u\"\npassword_file = \"\"\n"), "auth.users[u].password_file", "an empty path"),
            (format!("{pw}[auth.token]\nsign_method = \"RS256\"\n"), "auth.token", "for type = \"jwt\""),
            (
                format!("{pw}[auth.token]\ntype = \"jwt\"\npublic_key_file = \"/a\"\nprivate_key_file = \"/b\"\n"),
                "auth.token.sign_method",
                "needs a sign method",
            ),
            (
                format!("{pw}[auth.token]\ntype = \"jwt\"\nsign_method = \"ES256\"\npublic_key_file = \"/a\"\n"),
                "auth.token.private_key_file",
                "needs both keys",
            ),
            (
                format!("{pw}[auth.token]\ntype = \"jwt\"\nsign_method = \"ES256\"\npublic_key_file = \"/a,b\"\nprivate_key_file = \"/b\"\n"),
                "auth.token.public_key_file",
                "without commas",
            ),
            (
                format!("{pw}[auth.token]\ntype = \"jwt\"\nsign_method = \"ES256\"\npublic_key_file = \"/a\"\nprivate_key_file = \"/b\"\nttl = \"10ms\"\n"),
                "auth.token.ttl",
                "at least 1s",
            ),
            (format!("{pw}[auth.token]\ntype = \"jwt\"\nsign_method = \"HS256\"\n"), "sign_method", "unknown variant `HS256`"),
            (format!("{pw}password = \"x\"\n"), "password", "unknown field"),
            ("[etcd]\nextra_flags = [\"--auth-token=simple\"]\n".into(), "etcd.extra_flags[0]", "set by eco itself"),
        ];
        for (extra, key, message) in cases {
            let err = parse(extra).expect_err(extra);
            assert!(err.contains(key), "key {key} missing from:\n{err}");
            assert!(
                err.contains(message),
                "message {message:?} missing from:\n{err}"
            );
        }
    }
}
