//! Forwarding etcd's output into eco's log, one event per line, with the
//! instance id attached. etcd logs JSON lines (`--logger=zap`); their level
//! is kept, their text is passed through unchanged.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Severity of one etcd log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// Reads the `"level"` of a zap JSON line; anything else is info.
pub fn level_of(line: &str) -> LineLevel {
    #[derive(serde::Deserialize)]
    struct Level<'a> {
        level: &'a str,
    }
    match serde_json::from_str::<Level>(line).map(|l| l.level) {
        Ok("debug") => LineLevel::Debug,
        Ok("warn") => LineLevel::Warn,
        Ok("error" | "dpanic" | "panic" | "fatal") => LineLevel::Error,
        _ => LineLevel::Info,
    }
}

/// Copies `stream` line by line into the log until it closes.
pub async fn forward<R: AsyncRead + Unpin>(stream: R, instance: String, stream_name: &'static str) {
    let mut lines = BufReader::new(stream).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => match level_of(&line) {
                LineLevel::Debug => {
                    tracing::debug!(target: "etcd", instance = %instance, stream = stream_name, "{line}")
                }
                LineLevel::Info => {
                    tracing::info!(target: "etcd", instance = %instance, stream = stream_name, "{line}")
                }
                LineLevel::Warn => {
                    tracing::warn!(target: "etcd", instance = %instance, stream = stream_name, "{line}")
                }
                LineLevel::Error => {
                    tracing::error!(target: "etcd", instance = %instance, stream = stream_name, "{line}")
                }
            },
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(target: "etcd", instance = %instance, error = %e, "cannot read etcd output");
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(
            level_of(r#"{"level":"warn","msg":"slow fdatasync"}"#),
            LineLevel::Warn
        );
        assert_eq!(level_of(r#"{"level":"fatal","msg":"x"}"#), LineLevel::Error);
        assert_eq!(level_of("plain text"), LineLevel::Info);
    }
}
