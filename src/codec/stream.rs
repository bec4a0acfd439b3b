//! The layers applied and undone: streams on a blocking thread (memory
//! flat), small objects in memory.

use super::{CHUNK, CodecError, Encoding, Identities, Layers};
use bytes::{Bytes, BytesMut};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::{StreamReader, SyncIoBridge};

/// The encoded stream: read it to the end (the store's `put` does).
pub type EncodedReader = StreamReader<ReceiverStream<io::Result<Bytes>>, Bytes>;

/// Encodes `input` per `encoding` on a blocking thread: the returned
/// reader yields the encoded bytes; the handle ends with the outcome. A
/// failure of the input or of an encoder is sent down the reader as an
/// error (so a store aborts its upload rather than commit a short object),
/// and a reader dropped early stops the thread. Must be called within a
/// tokio runtime.
pub fn encode_stream<R>(
    input: R,
    encoding: &Encoding,
    what: &str,
) -> (EncodedReader, JoinHandle<Result<(), CodecError>>)
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    let source = SyncIoBridge::new(input);
    let encoding = encoding.clone();
    let what = what.to_string();
    let thread = tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter {
            tx,
            buf: BytesMut::with_capacity(CHUNK),
        };
        let done = encode(source, &mut out, &encoding)
            .and_then(|()| out.send_pending())
            .map_err(|e| CodecError::Encode {
                what: what.clone(),
                why: e.to_string(),
            });
        if let Err(e) = &done {
            let _ = out.tx.blocking_send(Err(io::Error::other(e.to_string())));
        }
        done
    });
    (StreamReader::new(ReceiverStream::new(rx)), thread)
}

fn encode<R: Read, W: Write>(mut source: R, out: W, encoding: &Encoding) -> io::Result<()> {
    let encryptor = |r: &super::Recipients| {
        age::Encryptor::with_recipients(r.iter()).map_err(|e| io::Error::other(e.to_string()))
    };
    match (encoding.compression, &encoding.encryption) {
        (None, None) => {
            let mut out = out;
            io::copy(&mut source, &mut out)?;
            out.flush()
        }
        (Some(level), None) => {
            let mut z = zstd::stream::write::Encoder::new(out, level)?;
            io::copy(&mut source, &mut z)?;
            z.finish()?.flush()
        }
        (None, Some(r)) => {
            let mut a = encryptor(r)?.wrap_output(out)?;
            io::copy(&mut source, &mut a)?;
            a.finish()?.flush()
        }
        (Some(level), Some(r)) => {
            let a = encryptor(r)?.wrap_output(out)?;
            let mut z = zstd::stream::write::Encoder::new(a, level)?;
            io::copy(&mut source, &mut z)?;
            z.finish()?.finish()?.flush()
        }
    }
}

/// A `Write` that hands [`CHUNK`]-sized pieces to an async reader.
struct ChannelWriter {
    tx: mpsc::Sender<io::Result<Bytes>>,
    buf: BytesMut,
}

impl ChannelWriter {
    fn send_pending(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = self.buf.split().freeze();
        self.tx
            .blocking_send(Ok(piece))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the store stopped reading"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send_pending()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader that hashes what passes and remembers whether the source
/// (not a decoder above it) failed.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
    failed: Option<String>,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                self.bytes += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.failed = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// What [`decode_to_file`] read and wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Hex sha256 of the stored bytes (to compare with the store's record).
    pub stored_sha256: String,
    pub stored_bytes: u64,
    pub plain_bytes: u64,
}

/// Reads the stored object `name` from `reader`, undoes `layers` and
/// writes the plain bytes to `file` (synced), on a blocking thread. The
/// sha256 of the stored bytes is computed on the way; the caller compares
/// it with the store's record (and discards the file on a mismatch). Must
/// be called within a tokio runtime.
pub async fn decode_to_file<R>(
    name: &str,
    reader: R,
    layers: Layers,
    identities: Option<&Identities>,
    file: std::fs::File,
) -> Result<Decoded, CodecError>
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let ids = layers.identities(name, identities)?.cloned();
    let source = SyncIoBridge::new(reader);
    let name = name.to_string();
    tokio::task::spawn_blocking(move || decode_file(&name, source, layers, ids.as_ref(), file))
        .await
        .map_err(|e| CodecError::Io {
            what: "the decoding thread".into(),
            source: io::Error::other(e.to_string()),
        })?
}

fn decode_file<R: Read>(
    name: &str,
    source: R,
    layers: Layers,
    ids: Option<&Identities>,
    file: std::fs::File,
) -> Result<Decoded, CodecError> {
    let mut hashing = Hashing {
        inner: source,
        hasher: Sha256::new(),
        bytes: 0,
        failed: None,
    };
    let mut out = io::BufWriter::with_capacity(CHUNK, file);
    let copied = undo(name, &mut hashing, layers, ids, &mut out);
    let plain_bytes = match copied {
        Ok(n) => n,
        Err(e) => {
            return Err(match hashing.failed.take() {
                Some(why) => CodecError::Io {
                    what: format!("reading {name}"),
                    source: io::Error::other(why),
                },
                None => e,
            });
        }
    };
    // Whatever a decoder left unread still counts for the stored sha256.
    io::copy(&mut hashing, &mut io::sink()).map_err(|e| CodecError::Io {
        what: format!("reading {name}"),
        source: e,
    })?;
    let file = out.into_inner().map_err(|e| CodecError::Io {
        what: format!("writing {name}"),
        source: e.into_error(),
    })?;
    file.sync_all().map_err(|e| CodecError::Io {
        what: format!("writing {name}"),
        source: e,
    })?;
    Ok(Decoded {
        stored_sha256: hex::encode(hashing.hasher.finalize()),
        stored_bytes: hashing.bytes,
        plain_bytes,
    })
}

/// Copies `source` to `out`, undoing `layers`; errors say which layer.
fn undo<R: Read, W: Write>(
    name: &str,
    source: R,
    layers: Layers,
    ids: Option<&Identities>,
    out: &mut W,
) -> Result<u64, CodecError> {
    let decrypt_err = |why: String| CodecError::Decrypt {
        name: name.to_string(),
        identities: ids.map_or_else(String::new, |i| i.source.display().to_string()),
        why,
    };
    let unzstd_err = |e: io::Error| CodecError::Decompress {
        name: name.to_string(),
        why: e.to_string(),
    };
    let write_err = |e: io::Error| CodecError::Io {
        what: format!("writing {name}"),
        source: e,
    };
    let open = |source: R| -> Result<age::stream::StreamReader<R>, CodecError> {
        let ids = ids.ok_or_else(|| CodecError::NoIdentity {
            name: name.to_string(),
        })?;
        age::Decryptor::new(source)
            .map_err(|e| decrypt_err(e.to_string()))?
            .decrypt(ids.iter())
            .map_err(|e| decrypt_err(e.to_string()))
    };
    let total = match (layers.zstd, layers.age) {
        (false, false) => {
            let mut source = source;
            copy_all(&mut source, out, name, |e| CodecError::Io {
                what: format!("reading {name}"),
                source: e,
            })?
        }
        (true, false) => {
            let mut z = zstd::stream::read::Decoder::new(source).map_err(unzstd_err)?;
            copy_all(&mut z, out, name, unzstd_err)?
        }
        (false, true) => {
            let mut a = open(source)?;
            copy_all(&mut a, out, name, |e| decrypt_err(e.to_string()))?
        }
        (true, true) => {
            let a = open(source)?;
            let mut z = zstd::stream::read::Decoder::new(a).map_err(unzstd_err)?;
            // zstd reads the plaintext age hands it: a failed chunk
            // surfaces through zstd as an I/O error naming age's cause.
            copy_all(&mut z, out, name, unzstd_err)?
        }
    };
    out.flush().map_err(write_err)?;
    Ok(total)
}

/// Copies `from` to `out`; a read error is the layer's (`layer_err`): the
/// source's own errors are told apart by the caller.
fn copy_all<W: Write>(
    from: &mut dyn Read,
    out: &mut W,
    name: &str,
    layer_err: impl Fn(io::Error) -> CodecError,
) -> Result<u64, CodecError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(layer_err(e)),
        };
        out.write_all(&buf[..n]).map_err(|e| CodecError::Io {
            what: format!("writing {name}"),
            source: e,
        })?;
        total += n as u64;
    }
}

/// Encodes a small object in memory (a segment: bounded by
/// `archive.max_segment_bytes`).
pub fn encode_bytes(plain: &[u8], encoding: &Encoding) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(plain.len() / 2 + 256);
    encode(plain, &mut out, encoding).map_err(|e| CodecError::Encode {
        what: "an object in memory".into(),
        why: e.to_string(),
    })?;
    Ok(out)
}

/// Decodes a small object in memory; at most `limit` plain bytes (more is
/// an error: never inflated without bound).
pub fn decode_bytes(
    name: &str,
    stored: &[u8],
    layers: Layers,
    identities: Option<&Identities>,
    limit: u64,
) -> Result<Vec<u8>, CodecError> {
    let ids = layers.identities(name, identities)?;
    let mut out = LimitedVec {
        buf: Vec::new(),
        limit,
    };
    undo(name, stored, layers, ids, &mut out)?;
    Ok(out.buf)
}

struct LimitedVec {
    buf: Vec<u8>,
    limit: u64,
}

impl Write for LimitedVec {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if (self.buf.len() + data.len()) as u64 > self.limit {
            return Err(io::Error::other(format!(
                "it decodes to more than {} bytes",
                self.limit
            )));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Recipients;
    use tokio::io::AsyncReadExt;

    fn keys() -> (Recipients, Identities) {
        let key = age::x25519::Identity::generate();
        let r = Recipients::parse(&[key.to_public().to_string()])
            .unwrap()
            .unwrap();
        (r, Identities::from_keys(vec![key], "test-identity".into()))
    }

    fn sample(len: usize) -> Vec<u8> {
        // Compressible but not trivially: repeating text with a counter.
        (0..len)
            .map(|i| b"etcd key value "[i % 15] ^ ((i / 4096) as u8 & 3))
            .collect()
    }

    fn encodings(r: &Recipients) -> Vec<Encoding> {
        vec![
            Encoding::plain(),
            Encoding {
                compression: Some(3),
                encryption: None,
            },
            Encoding {
                compression: None,
                encryption: Some(r.clone()),
            },
            Encoding {
                compression: Some(3),
                encryption: Some(r.clone()),
            },
        ]
    }

    #[tokio::test]
    async fn every_layering_streams_and_decodes_back_to_the_same_bytes() {
        let (r, ids) = keys();
        let plain = sample(3 * CHUNK + 12345);
        for enc in encodings(&r) {
            let input = std::io::Cursor::new(plain.clone());
            let (mut reader, thread) = encode_stream(input, &enc, "test");
            let mut stored = Vec::new();
            reader.read_to_end(&mut stored).await.unwrap();
            thread.await.unwrap().unwrap();
            if enc.encryption.is_some() {
                // Nothing of the plain text shows through.
                assert!(!stored.windows(15).any(|w| w == b"etcd key value "));
            }
            if enc.compression.is_some() && enc.encryption.is_none() {
                assert!(stored.len() < plain.len() / 2, "{}", stored.len());
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("out");
            let file = std::fs::File::create(&path).unwrap();
            let decoded = decode_to_file(
                "x",
                std::io::Cursor::new(stored.clone()),
                enc.layers(),
                Some(&ids),
                file,
            )
            .await
            .unwrap();
            assert_eq!(decoded.stored_bytes, stored.len() as u64);
            assert_eq!(decoded.stored_sha256, hex::encode(Sha256::digest(&stored)));
            assert_eq!(decoded.plain_bytes, plain.len() as u64);
            assert!(std::fs::read(&path).unwrap() == plain, "{:?}", enc.layers());
            // In memory too.
            let bytes = encode_bytes(&plain, &enc).unwrap();
            let back = decode_bytes("x", &bytes, enc.layers(), Some(&ids), 1 << 30).unwrap();
            assert!(back == plain);
        }
    }

    #[tokio::test]
    async fn a_failing_input_fails_the_encoded_stream_instead_of_ending_it_short() {
        let (r, _) = keys();
        for enc in encodings(&r) {
            let failing = tokio::io::AsyncReadExt::chain(
                std::io::Cursor::new(sample(CHUNK * 2)),
                FailingReader,
            );
            let (mut reader, thread) = encode_stream(failing, &enc, "snapshot x");
            let mut stored = Vec::new();
            let read = reader.read_to_end(&mut stored).await;
            assert!(read.is_err(), "{:?} ended cleanly", enc.layers());
            let e = thread.await.unwrap().unwrap_err().to_string();
            assert!(
                e.contains("snapshot x") && e.contains("broken source"),
                "{e}"
            );
        }
    }

    struct FailingReader;
    impl AsyncRead for FailingReader {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Err(io::Error::other("broken source")))
        }
    }

    #[tokio::test]
    async fn the_wrong_identity_a_missing_one_or_an_altered_byte_never_yield_plain_bytes() {
        let (r, _) = keys();
        let (_, other) = keys();
        let enc = Encoding {
            compression: Some(3),
            encryption: Some(r),
        };
        let plain = sample(CHUNK);
        let stored = encode_bytes(&plain, &enc).unwrap();
        let e = decode_bytes("s.db", &stored, enc.layers(), Some(&other), 1 << 30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.db") && e.contains("does not open"), "{e}");
        let e = decode_bytes("s.db", &stored, enc.layers(), None, 1 << 30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("identity_file"), "{e}");
        let (r2, ids2) = keys();
        let enc2 = Encoding {
            compression: None,
            encryption: Some(r2),
        };
        let mut altered = encode_bytes(&plain, &enc2).unwrap();
        let at = altered.len() - 100;
        altered[at] ^= 1;
        let e = decode_bytes("s.db", &altered, enc2.layers(), Some(&ids2), 1 << 30).unwrap_err();
        assert!(matches!(e, CodecError::Decrypt { .. }), "{e}");
        // Streamed into a file, the same.
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("out")).unwrap();
        let e = decode_to_file(
            "s.db",
            std::io::Cursor::new(altered),
            enc2.layers(),
            Some(&ids2),
            file,
        )
        .await
        .unwrap_err();
        assert!(matches!(e, CodecError::Decrypt { .. }), "{e}");
    }

    #[test]
    fn a_small_object_never_inflates_past_its_limit() {
        let enc = Encoding {
            compression: Some(3),
            encryption: None,
        };
        let stored = encode_bytes(&vec![0u8; 1 << 20], &enc).unwrap();
        let e = decode_bytes("seg", &stored, enc.layers(), None, 1000).unwrap_err();
        assert!(e.to_string().contains("more than 1000"), "{e}");
    }
}
