//! How an error reaches a person at the edge (the exit message of `eco`):
//! the whole chain of causes on one line, each cause named once.
//!
//! Library errors here follow the convention of carrying their cause both
//! as their `source` and in their own message (`cannot read {path}:
//! {source}`), so that a plain `{}` is complete. anyhow's `{:#}` would then
//! print that cause twice; [`one_line`] skips a cause whose text already
//! ends the line.

/// The error and its causes, outermost first, joined by `": "`, without a
/// cause repeated where the message before it already ends with it.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}: {source}")]
    struct ReadError {
        path: &'static str,
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(ReadError {
            path: "/etc/ca.crt",
            source: io,
        })
        .context("cannot use the TLS files");
        assert_eq!(
            one_line(&e),
            "cannot use the TLS files: cannot read /etc/ca.crt: no such file"
        );
    }

    #[test]
    fn causes_not_in_the_message_are_all_named() {
        let e = anyhow::anyhow!("connection refused")
            .context("probe 127.0.0.1:2379")
            .context("the member is not healthy");
        assert_eq!(
            one_line(&e),
            "the member is not healthy: probe 127.0.0.1:2379: connection refused"
        );
    }
}
