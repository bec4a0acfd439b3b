use super::*;
use std::collections::{BTreeMap, BTreeSet};

fn fp(s: &str) -> Fingerprint {
    format!("fp-{s}")
}

fn perms(list: &[(KeyRange, Access)]) -> Permissions {
    list.iter().cloned().collect()
}

fn roles(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn password_identity() -> Identity {
    Identity {
        user: ROOT.into(),
        password: Some(fp("root-pw")),
    }
}

fn cn_identity(cn: &str) -> Identity {
    Identity {
        user: cn.into(),
        password: None,
    }
}

/// `app-rw` readwrite on `app/`; user `app` (password) with it.
fn desired(identity: Identity) -> DesiredAcl {
    DesiredAcl {
        identity,
        roles: BTreeMap::from([(
            "app-rw".into(),
            perms(&[(KeyRange::prefix("app/"), Access::ReadWrite)]),
        )]),
        users: BTreeMap::from([(
            "app".into(),
            DesiredUser {
                roles: roles(&["app-rw"]),
                password: Some(fp("app-pw")),
            },
        )]),
    }
}

/// What etcd holds after `step` (the semantics the daemon relies on).
fn apply(current: &mut CurrentAcl, applied: &mut Applied, step: &AclStep) {
    match &step.action {
        AclAction::AddRole { role } => {
            assert!(
                current
                    .roles
                    .insert(role.clone(), Permissions::new())
                    .is_none(),
                "role {role} added twice"
            );
        }
        AclAction::GrantPermission {
            role,
            range,
            access,
        } => {
            current
                .roles
                .get_mut(role)
                .expect("granted to an existing role")
                .insert(range.clone(), *access);
        }
        AclAction::RevokePermission { role, range } => {
            let removed = current.roles.get_mut(role).and_then(|p| p.remove(range));
            assert!(removed.is_some(), "revoked a permission not held");
        }
        AclAction::AddUser { user, password } => {
            assert!(
                current
                    .users
                    .insert(user.clone(), BTreeSet::new())
                    .is_none(),
                "user {user} added twice"
            );
            match password {
                Some(p) => applied.passwords.insert(user.clone(), p.clone()),
                None => applied.passwords.remove(user),
            };
        }
        AclAction::ChangePassword { user, password } => {
            assert!(current.users.contains_key(user));
            applied.passwords.insert(user.clone(), password.clone());
        }
        AclAction::GrantRole { user, role } => {
            assert!(
                role == ROOT || current.roles.contains_key(role),
                "role {role} granted before it exists"
            );
            current
                .users
                .get_mut(user)
                .expect("user")
                .insert(role.clone());
        }
        AclAction::RevokeRole { user, role } => {
            assert!(current.users.get_mut(user).expect("user").remove(role));
        }
        AclAction::DeleteUser { user } => {
            assert!(current.users.remove(user).is_some());
            applied.passwords.remove(user);
        }
        AclAction::DeleteRole { role } => {
            assert!(current.roles.remove(role).is_some());
            for r in current.users.values_mut() {
                r.remove(role);
            }
        }
        AclAction::EnableAuth => {
            let root = current
                .users
                .get(ROOT)
                .expect("root exists before enabling");
            assert!(
                root.contains(ROOT),
                "root has the root role before enabling"
            );
            current.enabled = true;
        }
    }
}

/// Runs the plan on a copy; checks the lockout rules at every step and
/// that a second plan is empty. Returns the plan and the end state.
fn converge(
    want: &DesiredAcl,
    current: &CurrentAcl,
    applied: &Applied,
) -> (Vec<AclStep>, CurrentAcl, Applied) {
    let steps = plan(want, current, applied);
    let (mut now, mut rec) = (current.clone(), applied.clone());
    let identity = &want.identity.user;
    for (i, s) in steps.iter().enumerate() {
        assert!(!s.reason.is_empty(), "every step has a reason: {s:?}");
        if let AclAction::DeleteUser { user } = &s.action {
            assert!(
                user != ROOT && user != identity,
                "root and eco's identity are never deleted: {steps:#?}"
            );
        }
        if let AclAction::RevokeRole { user, role } = &s.action {
            assert!(
                !(role == ROOT && (user == ROOT || user == identity)),
                "the root role is never revoked from root or eco: {steps:#?}"
            );
        }
        if let AclAction::DeleteRole { role } = &s.action {
            assert_ne!(role, ROOT);
        }
        if s.action == AclAction::EnableAuth {
            assert_eq!(i, steps.len() - 1, "enabling is the last step");
            let me = now.users.get(identity).expect("eco's identity exists");
            assert!(me.contains(ROOT), "eco's identity holds the root role");
            if let Some(p) = &want.identity.password {
                assert_eq!(rec.passwords.get(identity), Some(p));
                assert!(
                    steps[..i].iter().any(|s| matches!(&s.action,
                        AclAction::ChangePassword { user, .. } | AclAction::AddUser { user, .. } if user == identity)),
                    "eco's password is set in the same plan that enables: {steps:#?}"
                );
            }
        }
        apply(&mut now, &mut rec, s);
    }
    assert!(
        now.enabled,
        "a plan always ends with authentication enabled"
    );
    let again = plan(want, &now, &rec);
    assert!(
        again.is_empty(),
        "idempotent, but planned again: {again:#?}"
    );
    (steps, now, rec)
}

fn kinds(steps: &[AclStep]) -> Vec<String> {
    steps
        .iter()
        .map(|s| match &s.action {
            AclAction::AddRole { role } => format!("add-role {role}"),
            AclAction::GrantPermission {
                role,
                range,
                access,
            } => format!("grant {role} {range} {}", access.as_str()),
            AclAction::RevokePermission { role, range } => format!("revoke {role} {range}"),
            AclAction::AddUser { user, password } => {
                format!(
                    "add-user {user}{}",
                    if password.is_some() { " pw" } else { "" }
                )
            }
            AclAction::ChangePassword { user, .. } => format!("password {user}"),
            AclAction::GrantRole { user, role } => format!("grant-role {user} {role}"),
            AclAction::RevokeRole { user, role } => format!("revoke-role {user} {role}"),
            AclAction::DeleteUser { user } => format!("delete-user {user}"),
            AclAction::DeleteRole { role } => format!("delete-role {role}"),
            AclAction::EnableAuth => "enable".into(),
        })
        .collect()
}

#[test]
fn from_nothing_root_first_roles_before_users_enable_last() {
    let want = desired(password_identity());
    let (steps, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    assert_eq!(
        kinds(&steps),
        [
            "add-role app-rw",
            "grant app-rw prefix \"app/\" readwrite",
            "add-user root pw",
            "grant-role root root",
            "add-user app pw",
            "grant-role app app-rw",
            "enable",
        ]
    );
    assert_eq!(rec.passwords.get(ROOT), Some(&fp("root-pw")));
    assert_eq!(now.users.len(), 2);
}

#[test]
fn desired_equal_to_current_plans_nothing() {
    let want = desired(password_identity());
    let (_, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    assert!(plan(&want, &now, &rec).is_empty());
    // etcd listing its built-in root role changes nothing either.
    let mut listed = now.clone();
    listed.roles.insert(ROOT.into(), Permissions::new());
    assert!(plan(&want, &listed, &rec).is_empty());
}

#[test]
fn removals_from_the_config_remove_users_roles_and_permissions() {
    let mut want = desired(password_identity());
    want.roles.insert(
        "old".into(),
        perms(&[(KeyRange::single("k"), Access::Read)]),
    );
    want.roles
        .get_mut("app-rw")
        .unwrap()
        .insert(KeyRange::between("a", "c"), Access::Read);
    want.users.insert(
        "gone".into(),
        DesiredUser {
            roles: roles(&["old"]),
            password: Some(fp("gone-pw")),
        },
    );
    let (_, before, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());

    let smaller = desired(password_identity());
    let (steps, after, rec) = converge(&smaller, &before, &rec);
    assert_eq!(
        kinds(&steps),
        [
            "revoke app-rw keys [\"a\", \"c\")",
            "delete-user gone",
            "delete-role old",
        ]
    );
    assert!(
        !rec.passwords.contains_key("gone"),
        "forgotten with its user"
    );
    assert_eq!(after.users.keys().collect::<Vec<_>>(), ["app", "root"]);
}

#[test]
fn changed_access_is_granted_again_and_new_permissions_added() {
    let want = desired(password_identity());
    let (_, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    let mut more = want.clone();
    let app = more.roles.get_mut("app-rw").unwrap();
    app.insert(KeyRange::prefix("app/"), Access::Read);
    app.insert(KeyRange::prefix("shared/"), Access::Read);
    let (steps, _, _) = converge(&more, &now, &rec);
    assert_eq!(
        kinds(&steps),
        [
            "grant app-rw prefix \"app/\" read",
            "grant app-rw prefix \"shared/\" read"
        ]
    );
    assert!(steps[0].reason.contains("readwrite in etcd"), "{steps:?}");
}

#[test]
fn a_changed_password_file_is_applied_once() {
    let want = desired(password_identity());
    let (_, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    let mut changed = want.clone();
    changed.users.get_mut("app").unwrap().password = Some(fp("app-pw-2"));
    let (steps, _, rec2) = converge(&changed, &now, &rec);
    assert_eq!(kinds(&steps), ["password app"]);
    assert!(steps[0].reason.contains("password file changed"));
    assert!(plan(&changed, &now, &rec2).is_empty(), "applied once");
    // eco's own password too; the unchanged one is left alone.
    let mut root = want.clone();
    root.identity.password = Some(fp("root-pw-2"));
    assert_eq!(kinds(&plan(&root, &now, &rec)), ["password root"]);
}

#[test]
fn users_etcd_holds_without_a_record_get_their_password_once() {
    // A new leader (no record) or users created by hand.
    let want = desired(password_identity());
    let (_, now, _) = converge(&want, &CurrentAcl::default(), &Applied::default());
    let (steps, _, _) = converge(&want, &now, &Applied::default());
    assert_eq!(kinds(&steps), ["password root", "password app"]);
    assert!(steps.iter().all(|s| s.reason.contains("no record")));
}

#[test]
fn enabling_sets_ecos_password_again_even_when_recorded() {
    // The users exist (auth disabled), the record says root's password is
    // applied: it is set again anyway right before enabling — a hand-made
    // change to it would otherwise lock eco out.
    let want = desired(password_identity());
    let (_, mut now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    now.enabled = false;
    let (steps, _, _) = converge(&want, &now, &rec);
    assert_eq!(kinds(&steps), ["password root", "enable"]);
    assert!(steps[0].reason.contains("about to be enabled"));
}

#[test]
fn root_and_ecos_identity_are_never_removed_nor_lose_the_root_role() {
    // Certificate identity `eco`, which the config does not list.
    let want = DesiredAcl {
        identity: cn_identity("eco"),
        roles: BTreeMap::new(),
        users: BTreeMap::new(),
    };
    let current = CurrentAcl {
        enabled: true,
        roles: BTreeMap::from([("x".into(), Permissions::new())]),
        users: BTreeMap::from([
            (ROOT.into(), roles(&[ROOT, "x"])),
            ("eco".into(), roles(&[ROOT, "x"])),
            ("stranger".into(), roles(&[ROOT])),
        ]),
    };
    let (steps, now, _) = converge(&want, &current, &Applied::default());
    assert_eq!(
        kinds(&steps),
        [
            "revoke-role root x",
            "revoke-role eco x",
            "delete-user stranger",
            "delete-role x",
        ]
    );
    assert_eq!(now.users.get("eco"), Some(&roles(&[ROOT])));
    assert_eq!(now.users.get(ROOT), Some(&roles(&[ROOT])));
}

#[test]
fn certificate_identity_is_created_with_the_root_role_before_enabling() {
    let mut want = desired(cn_identity("eco"));
    // The config may list eco's user (here with another role).
    want.users.insert(
        "eco".into(),
        DesiredUser {
            roles: roles(&["app-rw"]),
            password: None,
        },
    );
    let (steps, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    assert_eq!(
        kinds(&steps),
        [
            "add-role app-rw",
            "grant app-rw prefix \"app/\" readwrite",
            "add-user root",
            "grant-role root root",
            "add-user eco",
            "grant-role eco app-rw",
            "grant-role eco root",
            "add-user app pw",
            "grant-role app app-rw",
            "enable",
        ]
    );
    assert!(!rec.passwords.contains_key(ROOT), "root has no password");
    assert_eq!(now.users["eco"], roles(&[ROOT, "app-rw"]));
    // A CN of root: root itself, without a password.
    let (steps, _, _) = converge(
        &desired(cn_identity(ROOT)),
        &CurrentAcl::default(),
        &Applied::default(),
    );
    assert_eq!(
        kinds(&steps)[2..4],
        ["add-user root".to_string(), "grant-role root root".into()]
    );
}

#[test]
fn a_dropped_password_recreates_the_user_without_one_except_eco_and_root() {
    let want = desired(password_identity());
    let (_, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    let mut cn_only = want.clone();
    cn_only.users.get_mut("app").unwrap().password = None;
    let (steps, _, rec2) = converge(&cn_only, &now, &rec);
    assert_eq!(
        kinds(&steps),
        ["delete-user app", "add-user app", "grant-role app app-rw"]
    );
    assert!(!rec2.passwords.contains_key("app"));
    // Switching eco to a certificate identity keeps root as it is.
    let mut cn = want.clone();
    cn.identity = cn_identity(ROOT);
    assert!(plan(&cn, &now, &rec).is_empty());
}

#[test]
fn hand_made_drift_is_undone() {
    let want = desired(password_identity());
    let (_, mut now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    now.roles
        .get_mut("app-rw")
        .unwrap()
        .insert(KeyRange::single("secret"), Access::Write);
    now.users.get_mut("app").unwrap().insert(ROOT.into());
    now.users.get_mut("app").unwrap().remove("app-rw");
    now.users.insert("intruder".into(), roles(&[ROOT]));
    let (steps, _, _) = converge(&want, &now, &rec);
    assert_eq!(
        kinds(&steps),
        [
            "revoke app-rw key \"secret\"",
            "grant-role app app-rw",
            "revoke-role app root",
            "delete-user intruder",
        ]
    );
}

#[test]
fn nothing_ever_disables_and_an_enabled_cluster_is_not_enabled_again() {
    let want = desired(password_identity());
    let (_, now, rec) = converge(&want, &CurrentAcl::default(), &Applied::default());
    assert!(now.enabled);
    let mut more = want.clone();
    more.users.clear();
    let steps = plan(&more, &now, &rec);
    assert!(!steps.iter().any(|s| s.action == AclAction::EnableAuth));
}

#[test]
fn prefix_ranges_match_etcds() {
    assert_eq!(KeyRange::prefix("app/").range_end, b"app0");
    assert_eq!(KeyRange::prefix(vec![b'a', 0xff]).range_end, b"b");
    assert_eq!(KeyRange::prefix(""), KeyRange::between([0u8], [0u8]));
    assert_eq!(KeyRange::prefix("").to_string(), "every key");
    assert_eq!(KeyRange::prefix(vec![0xff, 0xff]).range_end, [0]);
    assert_eq!(KeyRange::prefix("app/").to_string(), "prefix \"app/\"");
    assert_eq!(KeyRange::single("k").to_string(), "key \"k\"");
    assert_eq!(
        KeyRange::between("a", [0u8]).to_string(),
        "keys from \"a\" on"
    );
}

#[test]
fn due_only_beside_the_leader_and_when_something_changed() {
    let base = DueFacts {
        managed: true,
        leader: true,
        desired_changed: false,
        since_success_ms: Some(1_000),
        since_failure_ms: None,
    };
    let cases: &[(DueFacts, bool)] = &[
        (base, false),
        (
            DueFacts {
                desired_changed: true,
                ..base
            },
            true,
        ),
        (
            DueFacts {
                desired_changed: true,
                leader: false,
                ..base
            },
            false,
        ),
        (
            DueFacts {
                desired_changed: true,
                managed: false,
                ..base
            },
            false,
        ),
        (
            DueFacts {
                since_success_ms: None,
                ..base
            },
            true,
        ),
        (
            DueFacts {
                since_success_ms: Some(RECHECK_EVERY_MS),
                ..base
            },
            true,
        ),
        (
            DueFacts {
                since_failure_ms: Some(RETRY_AFTER_MS - 1),
                desired_changed: true,
                ..base
            },
            false,
        ),
        (
            DueFacts {
                since_failure_ms: Some(RETRY_AFTER_MS),
                ..base
            },
            true,
        ),
    ];
    for (facts, now) in cases {
        let got = due(facts);
        assert_eq!(matches!(got, Due::Now(_)), *now, "{facts:?}: {got:?}");
    }
}
