//! etcd's ACL calls — reading users, roles and permissions, changing
//! them one [`AclAction`] at a time, and whether authentication is
//! enabled — each under the access point's call timeout. Passwords are
//! passed in for the two calls that set them and appear in no error.

use super::call::{CallError, timed};
use super::credentials;
use etcd_client::{
    Client, Permission, PermissionType, RoleRevokePermissionOptions, UserAddOptions,
};
use recovery::acl::{Access, AclAction, KeyRange, Permissions};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AclCallError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("{call}: {message}")]
    Unexpected { call: &'static str, message: String },
}

/// Users (with their roles) and roles (with their permissions) as etcd
/// holds them, and the id of the cluster that answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadAcl {
    pub cluster_id: u64,
    pub users: BTreeMap<String, BTreeSet<String>>,
    pub roles: BTreeMap<String, Permissions>,
}

fn access_of(t: i32) -> Result<Access, AclCallError> {
    match PermissionType::try_from(t) {
        Ok(PermissionType::Read) => Ok(Access::Read),
        Ok(PermissionType::Write) => Ok(Access::Write),
        Ok(PermissionType::Readwrite) => Ok(Access::ReadWrite),
        Err(_) => Err(AclCallError::Unexpected {
            call: "RoleGet",
            message: format!("unknown permission type {t}"),
        }),
    }
}

fn permission_type(a: Access) -> PermissionType {
    match a {
        Access::Read => PermissionType::Read,
        Access::Write => PermissionType::Write,
        Access::ReadWrite => PermissionType::Readwrite,
    }
}

/// Every user and role: two listings and one call per user and per role.
pub async fn read(client: &mut Client, timeout: Duration) -> Result<ReadAcl, AclCallError> {
    let roles_listed = timed("RoleList", timeout, client.role_list()).await?;
    let cluster_id = roles_listed.header().map_or(0, |h| h.cluster_id());
    let mut roles = BTreeMap::new();
    for name in roles_listed.roles() {
        let got = timed("RoleGet", timeout, client.role_get(name.clone())).await?;
        let mut perms = Permissions::new();
        for p in got.permissions() {
            perms.insert(
                KeyRange::between(p.key(), p.range_end()),
                access_of(p.get_type())?,
            );
        }
        roles.insert(name.clone(), perms);
    }
    let users_listed = timed("UserList", timeout, client.user_list()).await?;
    let mut users = BTreeMap::new();
    for name in users_listed.users() {
        let got = timed("UserGet", timeout, client.user_get(name.clone())).await?;
        users.insert(name.clone(), got.roles().iter().cloned().collect());
    }
    Ok(ReadAcl {
        cluster_id,
        users,
        roles,
    })
}

/// Carries out one action. `password` is the user's password for
/// `AddUser` with a password and `ChangePassword`.
pub async fn apply(
    client: &mut Client,
    action: &AclAction,
    password: Option<&str>,
    timeout: Duration,
) -> Result<(), AclCallError> {
    let needs_password = |call: &'static str| AclCallError::Unexpected {
        call,
        message: "no password to set (its file was not read)".into(),
    };
    match action {
        AclAction::AddRole { role } => {
            timed("RoleAdd", timeout, client.role_add(role.clone())).await?;
        }
        AclAction::GrantPermission {
            role,
            range,
            access,
        } => {
            let perm = Permission::new(permission_type(*access), range.key.clone())
                .with_range_end(range.range_end.clone());
            timed(
                "RoleGrantPermission",
                timeout,
                client.role_grant_permission(role.clone(), perm),
            )
            .await?;
        }
        AclAction::RevokePermission { role, range } => {
            let options = (!range.range_end.is_empty()).then(|| {
                RoleRevokePermissionOptions::new().with_range_end(range.range_end.clone())
            });
            timed(
                "RoleRevokePermission",
                timeout,
                client.role_revoke_permission(role.clone(), range.key.clone(), options),
            )
            .await?;
        }
        AclAction::AddUser { user, password: fp } => {
            let (pw, options) = match fp {
                Some(_) => (
                    password
                        .ok_or_else(|| needs_password("UserAdd"))?
                        .to_string(),
                    None,
                ),
                None => (String::new(), Some(UserAddOptions::new().with_no_pwd())),
            };
            timed(
                "UserAdd",
                timeout,
                client.user_add(user.clone(), pw, options),
            )
            .await?;
        }
        AclAction::ChangePassword { user, .. } => {
            let pw = password.ok_or_else(|| needs_password("UserChangePassword"))?;
            timed(
                "UserChangePassword",
                timeout,
                client.user_change_password(user.clone(), pw.to_string()),
            )
            .await?;
        }
        AclAction::GrantRole { user, role } => {
            timed(
                "UserGrantRole",
                timeout,
                client.user_grant_role(user.clone(), role.clone()),
            )
            .await?;
        }
        AclAction::RevokeRole { user, role } => {
            timed(
                "UserRevokeRole",
                timeout,
                client.user_revoke_role(user.clone(), role.clone()),
            )
            .await?;
        }
        AclAction::DeleteUser { user } => {
            timed("UserDelete", timeout, client.user_delete(user.clone())).await?;
        }
        AclAction::DeleteRole { role } => {
            timed("RoleDelete", timeout, client.role_delete(role.clone())).await?;
        }
        AclAction::EnableAuth => {
            timed("AuthEnable", timeout, client.auth_enable()).await?;
        }
    }
    Ok(())
}

/// Whether etcd's authentication is enabled, asked by an Authenticate
/// that cannot succeed (`user` with an empty password): "not enabled"
/// answers no; a refusal answers yes. For a client that authenticated
/// by certificate (a password client knows from its connection).
pub async fn enabled(
    client: &mut Client,
    user: &str,
    timeout: Duration,
) -> Result<bool, AclCallError> {
    let mut auth = client.auth_client();
    let asked = auth.authenticate(user.to_string(), String::new());
    match timed("Authenticate", timeout, asked).await {
        Ok(_) => Ok(true),
        Err(CallError::Etcd { source, .. }) if credentials::auth_not_enabled(&source) => Ok(false),
        Err(CallError::Etcd { source, .. }) if credentials::auth_failed(&source) => Ok(true),
        Err(e) => Err(e.into()),
    }
}
