//! Build facts printed by `eco version` and exported as `eco_build_info`.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const GIT_COMMIT: &str = env!("ECO_GIT_COMMIT");
