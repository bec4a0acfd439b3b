//! Which instances of an EC2 auto-scaling group count, and which are gone:
//! the AWS provider's answers, decided from what the Auto Scaling and EC2
//! APIs reported (plain rows in, plain answers out).
//!
//! The lifecycle table (docs/aws.md shows it to operators):
//!
//! | Auto Scaling lifecycle state | standing |
//! |---|---|
//! | `Pending`, `Pending:Wait`, `Pending:Proceed` | member (it is joining) |
//! | `InService` | member |
//! | `EnteringStandby`, `Standby` | member (it is being maintained, not gone) |
//! | `Terminating`, `Terminating:Wait`, `Terminating:Proceed`, `Terminated` | leaving |
//! | `Detaching`, `Detached` | leaving |
//! | `Warmed:*` (warm pool) | not a member (stopped in a warm pool, not part of the cluster) |
//! | anything else (a state this table does not know) | member, with a warning: membership never changes on an unknown |
//!
//! An instance is a **member** of the group only when it is a member by
//! this table **and** EC2 reports it with a private address and a state
//! other than `shutting-down`/`terminated`.
//!
//! **Departed** — certified gone, which lets quorum-loss recovery stop
//! waiting for an instance — only on positive evidence: EC2 reports it
//! `shutting-down` or `terminated`, or EC2 answers `InvalidInstanceID.NotFound`
//! for an id eco knew. Leaving (a lifecycle state), a missing row, a failed
//! page or a throttled call is never departed.
//!
//! What this module does not do: call AWS, or decide what a leaving
//! instance does (the planner's leaving rules and [`crate::termination`]).

use std::collections::{BTreeMap, BTreeSet};

/// How an instance stands in its group, by its lifecycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    Member,
    Leaving,
    /// In a warm pool: stopped and waiting, not part of the cluster.
    NotAMember,
    /// A state the table does not know: kept as a member (never a
    /// membership change on an unknown) and worth a warning.
    Unknown,
}

impl Standing {
    pub fn counts(self) -> bool {
        matches!(self, Standing::Member | Standing::Unknown)
    }
}

/// The lifecycle table.
pub fn standing(lifecycle_state: &str) -> Standing {
    match lifecycle_state {
        "Pending" | "Pending:Wait" | "Pending:Proceed" | "InService" | "EnteringStandby"
        | "Standby" => Standing::Member,
        "Terminating"
        | "Terminating:Wait"
        | "Terminating:Proceed"
        | "Terminated"
        | "Detaching"
        | "Detached" => Standing::Leaving,
        s if s.starts_with("Warmed:") => Standing::NotAMember,
        _ => Standing::Unknown,
    }
}

/// The EC2 states that certify an instance gone.
pub fn ec2_state_is_gone(state: &str) -> bool {
    matches!(state, "shutting-down" | "terminated")
}

/// One instance of the group, as `DescribeAutoScalingGroups` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    pub id: String,
    pub lifecycle_state: String,
    pub zone: String,
}

/// One instance, as `DescribeInstances` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ec2Row {
    pub id: String,
    /// `pending`, `running`, `shutting-down`, `terminated`, `stopping`,
    /// `stopped`.
    pub state: String,
    pub private_ip: Option<String>,
}

/// A member of the group: id, private address, zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRow {
    pub id: String,
    pub private_ip: String,
    pub zone: String,
}

/// What the group's rows say.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GroupAnswer {
    /// Members, sorted by id.
    pub members: Vec<MemberRow>,
    /// Instances listed by the group that are leaving, with their state.
    pub leaving: BTreeMap<String, String>,
    /// Instances in states the table does not know (kept as members).
    pub unknown_states: BTreeMap<String, String>,
}

/// Why the rows do not make a complete answer: eco then keeps its last
/// complete view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incomplete {
    /// A member the group lists has no EC2 row (eventual consistency, or a
    /// page that went missing).
    NoEc2Row(String),
    /// A member EC2 reports without a private address.
    NoAddress(String),
}

impl std::fmt::Display for Incomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Incomplete::NoEc2Row(id) => write!(
                f,
                "the group lists {id} but DescribeInstances did not report it"
            ),
            Incomplete::NoAddress(id) => write!(f, "{id} has no private IPv4 address yet"),
        }
    }
}

/// The group's members from its rows and the EC2 rows of its instances.
pub fn group_answer(rows: &[GroupRow], ec2: &[Ec2Row]) -> Result<GroupAnswer, Incomplete> {
    let ec2: BTreeMap<&str, &Ec2Row> = ec2.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut answer = GroupAnswer::default();
    for row in rows {
        let standing = standing(&row.lifecycle_state);
        match standing {
            Standing::Leaving => {
                answer
                    .leaving
                    .insert(row.id.clone(), row.lifecycle_state.clone());
                continue;
            }
            Standing::NotAMember => continue,
            Standing::Unknown => {
                answer
                    .unknown_states
                    .insert(row.id.clone(), row.lifecycle_state.clone());
            }
            Standing::Member => {}
        }
        let e = ec2
            .get(row.id.as_str())
            .ok_or_else(|| Incomplete::NoEc2Row(row.id.clone()))?;
        if ec2_state_is_gone(&e.state) {
            // The group has not caught up with EC2 yet: gone, not a member.
            answer.leaving.insert(
                row.id.clone(),
                format!("{} (EC2 {})", row.lifecycle_state, e.state),
            );
            continue;
        }
        let ip = e
            .private_ip
            .clone()
            .ok_or_else(|| Incomplete::NoAddress(row.id.clone()))?;
        answer.members.push(MemberRow {
            id: row.id.clone(),
            private_ip: ip,
            zone: row.zone.clone(),
        });
    }
    answer.members.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(answer)
}

/// Of `asked`, the instances certified gone: EC2 reported them
/// `shutting-down`/`terminated`, or answered `InvalidInstanceID.NotFound`
/// for them (`not_found`). An id EC2 did not answer about is not in the
/// answer.
pub fn departed(
    asked: &BTreeSet<String>,
    ec2: &[Ec2Row],
    not_found: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut gone: BTreeSet<String> = ec2
        .iter()
        .filter(|r| asked.contains(&r.id) && ec2_state_is_gone(&r.state))
        .map(|r| r.id.clone())
        .collect();
    gone.extend(not_found.iter().filter(|id| asked.contains(*id)).cloned());
    gone
}

/// Whether `id` has the shape of an EC2 instance id (`i-` and 8 or 17 hex
/// digits): only such ids are asked about (an id of another provider can
/// never be certified gone by EC2).
pub fn is_instance_id(id: &str) -> bool {
    id.strip_prefix("i-").is_some_and(|hex| {
        (hex.len() == 8 || hex.len() == 17) && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, state: &str) -> GroupRow {
        GroupRow {
            id: id.into(),
            lifecycle_state: state.into(),
            zone: "us-east-1a".into(),
        }
    }

    fn ec2(id: &str, state: &str, ip: Option<&str>) -> Ec2Row {
        Ec2Row {
            id: id.into(),
            state: state.into(),
            private_ip: ip.map(str::to_string),
        }
    }

    #[test]
    fn the_lifecycle_table() {
        let table = [
            ("Pending", Standing::Member),
            ("Pending:Wait", Standing::Member),
            ("Pending:Proceed", Standing::Member),
            ("InService", Standing::Member),
            ("EnteringStandby", Standing::Member),
            ("Standby", Standing::Member),
            ("Terminating", Standing::Leaving),
            ("Terminating:Wait", Standing::Leaving),
            ("Terminating:Proceed", Standing::Leaving),
            ("Terminated", Standing::Leaving),
            ("Detaching", Standing::Leaving),
            ("Detached", Standing::Leaving),
            ("Warmed:Stopped", Standing::NotAMember),
            ("Warmed:Pending", Standing::NotAMember),
            ("Quarantined", Standing::Unknown),
            ("", Standing::Unknown),
        ];
        for (state, want) in table {
            assert_eq!(standing(state), want, "{state:?}");
        }
        assert!(Standing::Unknown.counts() && Standing::Member.counts());
        assert!(!Standing::Leaving.counts() && !Standing::NotAMember.counts());
    }

    #[test]
    fn members_need_a_live_ec2_row_with_an_address() {
        let rows = [
            row("i-0000000b", "InService"),
            row("i-0000000a", "Standby"),
            row("i-0000000c", "Terminating:Wait"),
            row("i-0000000d", "InService"),
            row("i-0000000e", "Warmed:Stopped"),
            row("i-0000000f", "Quarantined"),
        ];
        let e = [
            ec2("i-0000000a", "running", Some("10.0.0.1")),
            ec2("i-0000000b", "pending", Some("10.0.0.2")),
            ec2("i-0000000c", "running", Some("10.0.0.3")),
            ec2("i-0000000d", "shutting-down", Some("10.0.0.4")),
            ec2("i-0000000f", "running", Some("10.0.0.6")),
        ];
        let a = group_answer(&rows, &e).unwrap();
        let ids: Vec<&str> = a.members.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["i-0000000a", "i-0000000b", "i-0000000f"]);
        assert_eq!(a.members[0].private_ip, "10.0.0.1");
        assert_eq!(
            a.leaving.keys().collect::<Vec<_>>(),
            ["i-0000000c", "i-0000000d"]
        );
        assert_eq!(a.unknown_states["i-0000000f"], "Quarantined");
    }

    #[test]
    fn a_missing_row_or_address_is_incomplete_never_a_smaller_group() {
        let rows = [
            row("i-0000000a", "InService"),
            row("i-0000000b", "InService"),
        ];
        let only_a = [ec2("i-0000000a", "running", Some("10.0.0.1"))];
        assert_eq!(
            group_answer(&rows, &only_a),
            Err(Incomplete::NoEc2Row("i-0000000b".into()))
        );
        let no_ip = [
            ec2("i-0000000a", "running", Some("10.0.0.1")),
            ec2("i-0000000b", "pending", None),
        ];
        assert_eq!(
            group_answer(&rows, &no_ip),
            Err(Incomplete::NoAddress("i-0000000b".into()))
        );
        // A leaving instance needs no EC2 row.
        let rows = [
            row("i-0000000a", "InService"),
            row("i-0000000b", "Terminating"),
        ];
        assert!(group_answer(&rows, &only_a).is_ok());
    }

    #[test]
    fn departed_only_on_positive_evidence() {
        let asked: BTreeSet<String> = [
            "i-0000000a",
            "i-0000000b",
            "i-0000000c",
            "i-0000000d",
            "i-0000000e",
        ]
        .map(String::from)
        .into();
        let e = [
            ec2("i-0000000a", "terminated", None),
            ec2("i-0000000b", "shutting-down", Some("10.0.0.2")),
            ec2("i-0000000c", "stopped", Some("10.0.0.3")),
            ec2("i-0000000f", "terminated", None),
        ];
        let not_found: BTreeSet<String> = ["i-0000000d", "i-00000010"].map(String::from).into();
        let gone = departed(&asked, &e, &not_found);
        // c is stopped (it may come back), e was not answered about, f and
        // 10 were not asked about.
        assert_eq!(
            gone,
            ["i-0000000a", "i-0000000b", "i-0000000d"]
                .map(String::from)
                .into()
        );
        assert!(departed(&asked, &[], &BTreeSet::new()).is_empty());
    }

    #[test]
    fn instance_ids() {
        for good in ["i-0123abcd", "i-0123456789abcdef0"] {
            assert!(is_instance_id(good), "{good}");
        }
        for bad in [
            "i-",
            "a",
            "i-0123",
            "i-0123456789abcdefg",
            "node-1",
            "I-0123abcd",
        ] {
            assert!(!is_instance_id(bad), "{bad}");
        }
    }
}
