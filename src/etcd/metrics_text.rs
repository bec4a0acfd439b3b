//! Reading one value from an etcd metrics listener (`--listen-metrics-urls`,
//! plain http on loopback): the one way to see how far an etcd that does
//! not serve clients (no leader) has applied its WAL.
//!
//! An HTTP/1.0 `GET` over one connection, bounded in time and size (an
//! etcd scrape is a few hundred KiB); the Prometheus text format is read
//! line by line for one unlabelled sample.
//!
//! What it does not do: TLS, redirects, chunked encoding, labels.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most read of one scrape.
const MAX_SCRAPE: u64 = 8 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("{url} is not an http://host:port/path URL")]
    BadUrl { url: String },
    #[error("{url}: {source}")]
    Io {
        url: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{url} did not answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("{url} answered {status}")]
    Status { url: String, status: String },
}

/// The body of `GET url`.
pub async fn fetch(url: &str, timeout: Duration) -> Result<String, ScrapeError> {
    let bad = || ScrapeError::BadUrl { url: url.into() };
    let rest = url.strip_prefix("http://").ok_or_else(bad)?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(bad());
    }
    let io = |source| ScrapeError::Io {
        url: url.into(),
        source,
    };
    let get = async {
        let mut conn = tokio::net::TcpStream::connect(authority)
            .await
            .map_err(io)?;
        let request =
            format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: text/plain\r\n\r\n");
        conn.write_all(request.as_bytes()).await.map_err(io)?;
        let mut raw = Vec::new();
        conn.take(MAX_SCRAPE)
            .read_to_end(&mut raw)
            .await
            .map_err(io)?;
        Ok::<_, ScrapeError>(raw)
    };
    let raw = tokio::time::timeout(timeout, get)
        .await
        .map_err(|_| ScrapeError::Timeout {
            url: url.into(),
            timeout,
        })??;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1).is_none_or(|c| c != "200") {
        return Err(ScrapeError::Status {
            url: url.into(),
            status: status.to_string(),
        });
    }
    Ok(body.to_string())
}

/// The value of the unlabelled sample `name` in a Prometheus text scrape.
pub fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let value = rest.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_unlabelled_sample_only() {
        let text = "# HELP etcd_server_proposals_applied_total x\n\
                    # TYPE etcd_server_proposals_applied_total gauge\n\
                    etcd_server_proposals_applied_total_other 3\n\
                    etcd_server_proposals_applied_total 26\n";
        assert_eq!(
            gauge(text, "etcd_server_proposals_applied_total"),
            Some(26.0)
        );
        assert_eq!(gauge(text, "missing"), None);
        assert_eq!(
            gauge("x{a=\"b\"} 1\n", "x"),
            None,
            "labelled samples are not read"
        );
    }

    #[tokio::test]
    async fn fetches_a_body_and_refuses_what_is_not_http_200() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            for answer in [
                "HTTP/1.1 200 OK\r\n\r\nm 5\n",
                "HTTP/1.1 404 Not Found\r\n\r\n",
            ] {
                let (mut c, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 512];
                let _ = c.read(&mut buf).await.unwrap();
                c.write_all(answer.as_bytes()).await.unwrap();
            }
        });
        let url = format!("http://{addr}/metrics");
        let body = fetch(&url, Duration::from_secs(5)).await.unwrap();
        assert_eq!(gauge(&body, "m"), Some(5.0));
        let err = fetch(&url, Duration::from_secs(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("404"), "{err}");
        assert!(fetch("https://x/", Duration::from_secs(1)).await.is_err());
        server.await.unwrap();
    }
}
