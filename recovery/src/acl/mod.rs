//! Authentication inside etcd (`[auth]`): which users, roles and
//! permissions etcd should hold, and turning etcd's current ACL into that
//! one, step by step, without ever locking eco or the operator out.
//!
//! Pure, like the rest of this crate: the desired ACL (from the config,
//! with password *fingerprints*, never passwords), the current one (as
//! etcd reports it) and the fingerprints this instance last applied in,
//! an ordered list of [`AclStep`]s out, each with its reason
//! ([`plan`]); and whether this instance reconciles now ([`due`]).
//!
//! The guarantees the tables in `tests.rs` hold:
//! - idempotent: desired == current (and every password fingerprint
//!   applied) → no step;
//! - `root` (user and role) and eco's own identity are never deleted, and
//!   the `root` role is never revoked from them;
//! - the `root` user exists with the `root` role, and eco's identity
//!   exists with the `root` role (and, for a password identity, its
//!   password set again) **before** auth is enabled; enabling is always
//!   the last step; nothing ever disables auth;
//! - users and roles etcd holds that the config does not list are
//!   removed (a removal from the config removes them from etcd).
//!
//! etcd cannot read a password back, so the daemon remembers a salted
//! fingerprint of each `(user, password)` it applied (a file beside the
//! state file): a password is set when its fingerprint differs from the
//! one applied, once.

mod due;
mod plan;
#[cfg(test)]
mod tests;

pub use due::{Due, DueFacts, RECHECK_EVERY_MS, RETRY_AFTER_MS, due};
pub use plan::plan;

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// etcd's built-in administrator: a user of this name and a role of this
/// name (which grants everything, and cannot be given permissions).
pub const ROOT: &str = "root";

/// What a permission allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "readwrite",
        }
    }
}

/// The keys a permission covers, as etcd stores them: `key` alone when
/// `range_end` is empty, else `[key, range_end)` (`range_end = "\0"`: every
/// key from `key` on).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KeyRange {
    pub key: Vec<u8>,
    pub range_end: Vec<u8>,
}

impl KeyRange {
    /// One key.
    pub fn single(key: impl Into<Vec<u8>>) -> Self {
        Self {
            key: key.into(),
            range_end: Vec::new(),
        }
    }

    /// Every key.
    pub fn every_key() -> Self {
        Self {
            key: vec![0],
            range_end: vec![0],
        }
    }

    /// `[key, range_end)`.
    pub fn between(key: impl Into<Vec<u8>>, range_end: impl Into<Vec<u8>>) -> Self {
        Self {
            key: key.into(),
            range_end: range_end.into(),
        }
    }

    /// Every key starting with `prefix` (etcd's `--prefix`): the range end
    /// is the prefix with its last byte below 0xff incremented; a prefix of
    /// 0xff bytes only is every key from `prefix` on, and the empty prefix
    /// every key (`["\0", "\0")`, as etcdctl sends it and etcd keeps it).
    pub fn prefix(prefix: impl Into<Vec<u8>>) -> Self {
        let key: Vec<u8> = prefix.into();
        if key.is_empty() {
            return Self::every_key();
        }
        let mut end = key.clone();
        while let Some(last) = end.pop() {
            if last < 0xff {
                end.push(last + 1);
                return Self {
                    key,
                    range_end: end,
                };
            }
        }
        Self {
            key,
            range_end: vec![0],
        }
    }
}

impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
        if *self == KeyRange::every_key() {
            write!(f, "every key")
        } else if self.range_end.is_empty() {
            write!(f, "key \"{}\"", text(&self.key))
        } else if self.range_end == [0] {
            write!(f, "keys from \"{}\" on", text(&self.key))
        } else if *self == KeyRange::prefix(self.key.clone()) {
            write!(f, "prefix \"{}\"", text(&self.key))
        } else {
            write!(
                f,
                "keys [\"{}\", \"{}\")",
                text(&self.key),
                text(&self.range_end)
            )
        }
    }
}

/// A role's permissions: one access per key range (etcd keys them the
/// same way: granting a range again replaces its access).
pub type Permissions = BTreeMap<KeyRange, Access>;

/// A salted digest of `(user, password)`, hex; never the password.
pub type Fingerprint = String;

/// Who eco is inside etcd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `root` for a password identity; for certificate authentication, the
    /// CN of eco's client certificate (`root`, or a user eco gives the
    /// `root` role).
    pub user: String,
    /// The fingerprint of the password eco authenticates with; `None` for
    /// certificate authentication.
    pub password: Option<Fingerprint>,
}

/// One user as the config wants it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredUser {
    pub roles: BTreeSet<String>,
    /// `None`: no password (certificate CN authentication only).
    pub password: Option<Fingerprint>,
}

/// The ACL the config describes. `root` is not listed in `users` nor in
/// `roles` ([`plan`] adds the `root` user and eco's identity itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredAcl {
    pub identity: Identity,
    pub roles: BTreeMap<String, Permissions>,
    pub users: BTreeMap<String, DesiredUser>,
}

/// The ACL etcd holds now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentAcl {
    /// Authentication is enabled.
    pub enabled: bool,
    /// Roles (etcd does not list its built-in `root` role; when listed it
    /// is left alone).
    pub roles: BTreeMap<String, Permissions>,
    /// Users and their roles.
    pub users: BTreeMap<String, BTreeSet<String>>,
}

/// What this instance last applied: the fingerprint of each user's
/// password it set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub passwords: BTreeMap<String, Fingerprint>,
}

/// One change to etcd's ACL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AclAction {
    AddRole {
        role: String,
    },
    /// Grant (or change the access of) a key range.
    GrantPermission {
        role: String,
        range: KeyRange,
        access: Access,
    },
    RevokePermission {
        role: String,
        range: KeyRange,
    },
    /// Add a user with the password of this fingerprint, or without a
    /// password (`None`: certificate CN authentication only). Once done,
    /// the daemon records the fingerprint as applied.
    AddUser {
        user: String,
        password: Option<Fingerprint>,
    },
    /// Set the user's password (the config's file); once done, the daemon
    /// records the fingerprint as applied.
    ChangePassword {
        user: String,
        password: Fingerprint,
    },
    GrantRole {
        user: String,
        role: String,
    },
    RevokeRole {
        user: String,
        role: String,
    },
    /// Delete a user; the daemon forgets its applied fingerprint.
    DeleteUser {
        user: String,
    },
    DeleteRole {
        role: String,
    },
    /// Turn authentication on (always the last step; never undone).
    EnableAuth,
}

impl AclAction {
    /// What `eco status` and the log say for it.
    pub fn name(&self) -> &'static str {
        match self {
            AclAction::AddRole { .. } => "add a role",
            AclAction::GrantPermission { .. } => "grant a permission",
            AclAction::RevokePermission { .. } => "revoke a permission",
            AclAction::AddUser { .. } => "add a user",
            AclAction::ChangePassword { .. } => "set a password",
            AclAction::GrantRole { .. } => "grant a role",
            AclAction::RevokeRole { .. } => "revoke a role",
            AclAction::DeleteUser { .. } => "delete a user",
            AclAction::DeleteRole { .. } => "delete a role",
            AclAction::EnableAuth => "enable authentication",
        }
    }
}

/// An action with the reason it was chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclStep {
    pub action: AclAction,
    pub reason: String,
}
