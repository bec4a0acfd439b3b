//! Forwarding etcd's output into eco's log, one event per line, with the
//! instance id attached. etcd logs JSON lines (`--logger=zap`); their level
//! is kept, their text is passed through unchanged.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

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

/// The longest line forwarded as one event; a longer one is cut into
/// pieces of this size (etcd's lines are far shorter; a runaway one must
/// not grow eco's memory without bound).
const MAX_LINE: usize = 64 * 1024;

/// Copies `stream` line by line into the log until it closes; returns the
/// number of lines forwarded. Lines are bytes: invalid UTF-8 is logged with
/// replacement characters, never a reason to stop reading — a reader that
/// stops leaves etcd writing into a closed pipe, and etcd dies of SIGPIPE.
pub async fn forward<R: AsyncRead + Unpin>(
    stream: R,
    instance: String,
    stream_name: &'static str,
    fatal: super::exit_reason::FatalLine,
) -> u64 {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    let mut lines = 0;
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) => break,
            Ok(_) => {
                lines += 1;
                let text = String::from_utf8_lossy(&buf);
                let line = text.trim_end_matches(['\n', '\r']);
                fatal.see(line);
                log_line(line, &instance, stream_name);
            }
            Err(e) => {
                // Keep the pipe drained so etcd never blocks or dies on it.
                tracing::warn!(target: "etcd", instance = %instance, error = %e, "cannot read etcd output; discarding the rest");
                let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
                break;
            }
        }
    }
    lines
}

fn log_line(line: &str, instance: &str, stream_name: &'static str) {
    match level_of(line) {
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

    /// A real process writes a byte that is not UTF-8, pauses, then goes
    /// on writing: it must not die of SIGPIPE (the reader used to stop at
    /// the bad byte and close the pipe).
    #[tokio::test]
    async fn a_non_utf8_line_never_stops_the_reading() {
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg("exec 1>&2; printf 'before\\n\\377\\376 not utf-8\\n'; sleep 0.3; i=0; while [ $i -lt 200 ]; do echo \"after $i\"; i=$((i+1)); done")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let stderr = child.stderr.take().expect("piped");
        let forwarded = forward(stderr, "t".into(), "stderr", Default::default()).await;
        let status = child.wait().await.expect("wait");
        assert!(status.success(), "the writer survived: {status:?}");
        assert_eq!(forwarded, 202);
    }

    #[tokio::test]
    async fn an_overlong_line_is_cut_not_buffered_whole() {
        let long = vec![b'x'; MAX_LINE * 2 + 10];
        let mut input = long.clone();
        input.push(b'\n');
        let forwarded = forward(&input[..], "t".into(), "stderr", Default::default()).await;
        assert_eq!(forwarded, 3);
    }
}
