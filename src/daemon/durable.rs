//! This instance's durable state: the state file (`eco-state.json`) as it
//! is on disk right now, and the quorum-loss protocol's state file beside
//! it. Every change is written atomically before it counts.

use crate::local::state_file::{LocalState, StateFile};
use crate::quorum_loss::protocol_file::ProtocolFile;
use anyhow::Context;
use recovery::fenced::PersistedState;
use std::path::{Path, PathBuf};

pub(super) struct Durable {
    file: StateFile,
    state: Option<LocalState>,
    protocol: ProtocolFile,
}

impl Durable {
    /// Loads the state file beside `data_dir` (malformed or foreign: an
    /// error, never "no state").
    pub fn load(data_dir: &Path, cluster: &str, instance: &str) -> anyhow::Result<Self> {
        let file = StateFile::beside(data_dir);
        let state = file.load_for(cluster, instance)?;
        Ok(Self {
            file,
            state,
            protocol: ProtocolFile::beside(data_dir),
        })
    }

    pub fn state(&self) -> Option<&LocalState> {
        self.state.as_ref()
    }

    /// The incarnation of the state file (0: none).
    pub fn incarnation(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.incarnation)
    }

    /// Where the etcd pid file lives (beside the state file).
    pub fn pid_file(&self) -> PathBuf {
        self.file.path().with_file_name("etcd.pid")
    }

    /// Replaces the state, durably.
    pub fn persist(&mut self, state: LocalState) -> anyhow::Result<()> {
        self.file.store(&state)?;
        self.state = Some(state);
        Ok(())
    }

    /// Records the etcd member id of the current state.
    pub fn record_member_id(&mut self, member_id: u64) -> anyhow::Result<()> {
        let mut s = self
            .state
            .clone()
            .context("no state file to record the member id in")?;
        s.member_id = Some(member_id);
        self.persist(s)
    }

    /// Records `V_n` and the started learners in the current state.
    pub fn record_voters(
        &mut self,
        voters: Vec<String>,
        learners: Vec<String>,
    ) -> anyhow::Result<()> {
        let mut s = self
            .state
            .clone()
            .context("no state file to record V_n in")?;
        s.voting_members = voters;
        s.learners = learners;
        self.persist(s)
    }

    /// Renames the state file aside (its data was moved aside too).
    pub fn move_aside(&mut self) -> anyhow::Result<()> {
        self.file.move_aside()?;
        self.state = None;
        Ok(())
    }

    /// The protocol's state: its file, else (first start with this state
    /// file) the incarnation and `V_n` the state file records.
    pub fn protocol_state(&self) -> anyhow::Result<Option<PersistedState>> {
        let loaded = self
            .protocol
            .load()
            .context("the recovery state file (a promise must never be forgotten)")?;
        Ok(loaded.or_else(|| {
            self.state.as_ref().map(|s| PersistedState {
                incarnation: s.incarnation,
                voters: s.voting_members.clone(),
                ..Default::default()
            })
        }))
    }

    /// Writes the protocol's state, durably.
    pub fn store_protocol(&self, state: &PersistedState) -> anyhow::Result<()> {
        Ok(self.protocol.store(state)?)
    }
}
