//! (being written)

pub mod formation;
pub mod planner;
pub mod retention;
pub mod snapshot_schedule;
