//! `[api]` on its own: fixed ports, and `/status`'s own listener apart
//! from the main one. Its TLS files are checked against `[etcd.tls]` in
//! `super` (it serves etcd's client certificate by default).

use super::{Checker, Problem};
use crate::config::ApiConfig;

impl ApiConfig {
    /// What is wrong with `[api]` on its own.
    pub fn problems(&self) -> Vec<Problem> {
        let mut ck = Checker::default();
        ck.port("api.port", self.port);
        if let Some(bind) = self.bind
            && bind.port() == 0
        {
            ck.fail(
                "api.bind",
                "port 0 would pick a random port; give a fixed port",
            );
        }
        if let Some(status) = self.status_bind {
            if status.port() == 0 {
                ck.fail(
                    "api.status_bind",
                    "port 0 would pick a random port `eco status` cannot find; give a fixed port",
                );
            }
            let clashes = match self.bind {
                Some(bind) => {
                    bind.port() == status.port()
                        && (bind.ip() == status.ip()
                            || bind.ip().is_unspecified()
                            || status.ip().is_unspecified())
                }
                // The main listener is on the instance's address, known only
                // at run time: the same port on another address is fine.
                None => status.ip().is_unspecified() && u32::from(status.port()) == self.port,
            };
            if clashes {
                ck.fail(
                    "api.status_bind",
                    format!("{status} overlaps the main listener (api.bind/api.port); give another port, or another address than the main one"),
                );
            }
        }
        ck.problems
    }
}
