//! (being written)

pub mod planner;
pub mod retention;
pub mod snapshot_schedule;
