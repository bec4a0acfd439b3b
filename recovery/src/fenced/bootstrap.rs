//! Bootstrap: incarnation 1 is seeded through the same protocol, on
//! positive evidence of emptiness:
//! - a complete listing of `incarnations/` that is empty (any store error
//!   means "not empty");
//! - no instance holds a state file or data;
//! - every instance the provider knows answered (they are the acceptors);
//! - then the conditional create of `incarnations/1`.
//!
//! A record with no data anywhere is not emptiness: it pages a human
//! (see the coordinator's `NoDataAnywhere` alert).

use super::detector::Verdict;
use super::observation::RecordListing;
use super::protocol::Protocol;
use super::round::Round;
use super::value::{SeedRecord, SeedSource, SeedValue};

impl Protocol {
    /// "May incarnation 1 be seeded?" from this instance's evidence.
    pub(super) fn bootstrap_verdict(&self) -> Verdict {
        let undecided = |reason: String| Verdict::Undecided { reason };
        if !self.cfg.seeds_bootstrap {
            return undecided(
                "incarnation 1 is formed by the formation rule, not by this protocol".into(),
            );
        }
        if self.state.has_state() {
            return undecided(format!(
                "this instance holds the state of incarnation {}",
                self.state.incarnation
            ));
        }
        match self.store.as_ref().map(|s| &s.records) {
            None => return undecided("the store has not been listed yet".into()),
            Some(RecordListing::Failed(_)) if self.cfg.faults.store_error_as_empty => {}
            Some(RecordListing::Failed(e)) => {
                return undecided(format!(
                    "the store listing failed ({e}): a store error is never read as empty"
                ));
            }
            Some(RecordListing::Complete(r)) if !r.is_empty() => {
                return undecided(format!(
                    "the store holds {} record(s): a cluster existed",
                    r.len()
                ));
            }
            Some(RecordListing::Complete(_)) => {}
        }
        match &self.local {
            None => return undecided("the local data dir has not been read yet".into()),
            Some(d) if d.has_data => {
                return undecided("this instance holds etcd data".into());
            }
            Some(_) => {}
        }
        if !self.group.instances.contains(&self.me) {
            return undecided("this instance is not in the provider's group (yet)".into());
        }
        Verdict::Lost {
            reason: format!(
                "no cluster exists: the store lists no record, this instance holds no state and no data; {} instance(s) in the group",
                self.group.instances.len()
            ),
        }
    }

    /// The bootstrap value, if every report confirms emptiness.
    pub(super) fn empty_value(
        &self,
        round: &Round,
        records: &[SeedRecord],
    ) -> Result<SeedValue, String> {
        if !records.is_empty() {
            return Err(format!(
                "bootstrap refused: the store holds {} record(s)",
                records.len()
            ));
        }
        let not_empty: Vec<&String> = round
            .reports
            .iter()
            .filter(|(_, r)| r.has_state || r.data.has_data)
            .map(|(id, _)| id)
            .collect();
        if !not_empty.is_empty() {
            return Err(format!(
                "bootstrap refused: {not_empty:?} hold a state file or data; eco never seeds an empty cluster over them"
            ));
        }
        Ok(SeedValue {
            source: SeedSource::Empty,
            seeder: self.me.clone(),
        })
    }
}
