//! The steps that turn etcd's ACL into the config's.
//!
//! Order: roles and their permissions first (a user is never granted a
//! role that does not exist yet); then users — `root` first, eco's
//! identity second, the others by name — each added or given its
//! password, then granted and revoked roles; then users and roles the
//! config does not list are deleted (never `root`, never eco's identity,
//! never the `root` role); enabling authentication comes last.

use super::{AclAction, AclStep, Applied, CurrentAcl, DesiredAcl, DesiredUser, Permissions, ROOT};
use std::collections::{BTreeMap, BTreeSet};

/// The steps, in order, that make `current` what `desired` says; empty
/// when it already is and every password's fingerprint is the one
/// `applied` records.
pub fn plan(desired: &DesiredAcl, current: &CurrentAcl, applied: &Applied) -> Vec<AclStep> {
    let mut steps = Vec::new();
    let mut step = |action: AclAction, reason: String| steps.push(AclStep { action, reason });
    let enabling = !current.enabled;
    let identity = desired.identity.user.as_str();

    for (role, want) in desired.roles.iter().filter(|(r, _)| *r != ROOT) {
        let have = current.roles.get(role);
        if have.is_none() {
            step(
                AclAction::AddRole { role: role.clone() },
                format!("role {role} is in the config, not in etcd"),
            );
        }
        let none = Permissions::new();
        let have = have.unwrap_or(&none);
        for range in have.keys().filter(|r| !want.contains_key(*r)) {
            step(
                AclAction::RevokePermission {
                    role: role.clone(),
                    range: range.clone(),
                },
                format!("role {role}: {range} is no longer in the config"),
            );
        }
        for (range, access) in want {
            let reason = match have.get(range) {
                Some(a) if a == access => continue,
                Some(a) => format!(
                    "role {role}: {range} is {} in the config, {} in etcd",
                    access.as_str(),
                    a.as_str()
                ),
                None => format!(
                    "role {role}: the config grants {} on {range}",
                    access.as_str()
                ),
            };
            step(
                AclAction::GrantPermission {
                    role: role.clone(),
                    range: range.clone(),
                    access: *access,
                },
                reason,
            );
        }
    }

    let users = effective_users(desired);
    for (user, want) in ordered(&users, identity) {
        let protected = user == ROOT || user == identity;
        let recorded = applied.passwords.get(user);
        let mut have = current.users.get(user).cloned();
        if have.is_some() && want.password.is_none() && recorded.is_some() && !protected {
            step(
                AclAction::DeleteUser { user: user.into() },
                format!(
                    "user {user}: the config no longer gives it a password and etcd cannot remove one; it is added again without a password"
                ),
            );
            have = None;
        }
        match (&have, &want.password) {
            (None, password) => step(
                AclAction::AddUser {
                    user: user.into(),
                    password: password.clone(),
                },
                match (user, password) {
                    (ROOT, _) => "etcd's root user must exist (with the root role) before authentication is enabled".to_string(),
                    (u, _) if u == identity => format!("user {u} is eco's own identity: it holds the root role"),
                    (u, Some(_)) => format!("user {u} is in the config, not in etcd"),
                    (u, None) => format!("user {u} is in the config (no password: client certificate CN only), not in etcd"),
                },
            ),
            (Some(_), Some(fingerprint)) => {
                let reason = if recorded != Some(fingerprint) {
                    Some(match recorded {
                        Some(_) => format!("user {user}: its password file changed"),
                        None => format!(
                            "user {user}: eco has no record of setting this password (set once)"
                        ),
                    })
                } else if enabling && user == identity {
                    Some(format!(
                        "authentication is about to be enabled: eco sets its own password ({user}) again first, so it is certainly the one eco authenticates with"
                    ))
                } else {
                    None
                };
                if let Some(reason) = reason {
                    step(
                        AclAction::ChangePassword {
                            user: user.into(),
                            password: fingerprint.clone(),
                        },
                        reason,
                    );
                }
            }
            (Some(_), None) => {}
        }
        let have = have.unwrap_or_default();
        let grantable = |role: &String| role == ROOT || desired.roles.contains_key(role);
        for role in want
            .roles
            .iter()
            .filter(|r| !have.contains(*r) && grantable(r))
        {
            step(
                AclAction::GrantRole {
                    user: user.into(),
                    role: role.clone(),
                },
                match (user, role.as_str()) {
                    (ROOT, ROOT) => "etcd's root user must hold the root role".to_string(),
                    (u, ROOT) if u == identity => {
                        format!("user {u} is eco's own identity: it must hold the root role")
                    }
                    _ => format!("user {user} has role {role} in the config"),
                },
            );
        }
        for role in have.iter().filter(|r| !want.roles.contains(*r)) {
            if protected && role == ROOT {
                continue;
            }
            step(
                AclAction::RevokeRole {
                    user: user.into(),
                    role: role.clone(),
                },
                format!("user {user}: role {role} is no longer in the config"),
            );
        }
    }

    for user in current.users.keys().filter(|u| !users.contains_key(*u)) {
        step(
            AclAction::DeleteUser { user: user.clone() },
            format!("user {user} is not in the config"),
        );
    }
    for role in current
        .roles
        .keys()
        .filter(|r| *r != ROOT && !desired.roles.contains_key(*r))
    {
        step(
            AclAction::DeleteRole { role: role.clone() },
            format!("role {role} is not in the config"),
        );
    }
    if enabling {
        step(
            AclAction::EnableAuth,
            format!(
                "auth.enabled is true: the root user and eco's identity ({identity}) hold the root role"
            ),
        );
    }
    steps
}

/// The config's users plus `root` (the `root` role; eco's password when
/// eco is root) and eco's identity (the `root` role added).
fn effective_users(desired: &DesiredAcl) -> BTreeMap<String, DesiredUser> {
    let identity = &desired.identity;
    let mut users: BTreeMap<String, DesiredUser> = desired
        .users
        .iter()
        .filter(|(name, _)| *name != ROOT)
        .map(|(name, user)| (name.clone(), user.clone()))
        .collect();
    let root = BTreeSet::from([ROOT.to_string()]);
    users.insert(
        ROOT.into(),
        DesiredUser {
            roles: root.clone(),
            password: (identity.user == ROOT)
                .then(|| identity.password.clone())
                .flatten(),
        },
    );
    if identity.user != ROOT {
        let me = users.entry(identity.user.clone()).or_default();
        me.roles.insert(ROOT.into());
        if identity.password.is_some() {
            me.password = identity.password.clone();
        }
    }
    users
}

/// `root` first, eco's identity second, the others by name.
fn ordered<'a>(
    users: &'a BTreeMap<String, DesiredUser>,
    identity: &str,
) -> Vec<(&'a str, &'a DesiredUser)> {
    let rank = |name: &str| match name {
        ROOT => 0,
        n if n == identity => 1,
        _ => 2,
    };
    let mut v: Vec<(&str, &DesiredUser)> = users.iter().map(|(n, u)| (n.as_str(), u)).collect();
    v.sort_by_key(|(n, _)| rank(n));
    v
}
