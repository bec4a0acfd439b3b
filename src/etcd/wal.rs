//! Reading a stopped etcd's write-ahead log: which member wrote it, for which
//! cluster, and how far its raft log and commit index go.
//!
//! Quorum-loss recovery asks every surviving member for this, so that the
//! most advanced member seeds the new cluster.
//!
//! # The format (etcd `server/wal`, the same in 3.4 and 3.5)
//!
//! The WAL is `<data-dir>/member/wal/*.wal`, files named
//! `<seq:016x>-<raft index:016x>.wal`, read in name order. Each file is
//! preallocated (64 MB of zeros) and holds a sequence of frames:
//!
//! - an 8-byte little-endian length field: the low 56 bits are the record
//!   length; when the top bit is set, bits 56..58 are the number of zero
//!   padding bytes after the record (etcd pads records to 8 bytes so that a
//!   length field is never torn). A length field of 0 is the end of the
//!   written part of the file;
//! - the record, a protobuf `walpb.Record { int64 type = 1; uint32 crc = 2;
//!   bytes data = 3; }`, then the padding.
//!
//! Record types: 1 metadata (`etcdserverpb.Metadata { uint64 NodeID = 1;
//! uint64 ClusterID = 2; }`, repeated at the start of every file), 2 raft
//! entry (`raftpb.Entry { Type = 1; Term = 2; Index = 3; Data = 4; }`),
//! 3 hard state (`raftpb.HardState { term = 1; vote = 2; commit = 3; }`),
//! 4 CRC (the running CRC at the end of the previous file, first in every
//! file), 5 snapshot (`walpb.Snapshot { uint64 index = 1; uint64 term = 2;
//! ... }`).
//!
//! The `crc` of every record but the CRC records is CRC-32C (Castagnoli)
//! over the `data` of all records so far, chained across files and reseeded
//! by each CRC record. This reader verifies it, as etcd does.
//!
//! # Torn writes
//!
//! A frame that runs past the end of the last file, or a record of the last
//! file that does not decode or fails its CRC where one 512-byte sector of
//! it is all zeros (etcd's own `isTornEntry` test), is a write torn by a
//! crash: reading stops there and what came before is returned; etcd
//! truncates such a tail when it next starts. Anything else that does not
//! read (in a file other than the last, or corrupt rather than torn) is
//! [`WalError::Malformed`], and etcd would refuse the data directory too.
//!
//! # What it does not do
//!
//! - It does not repair anything and never writes: the data directory is
//!   left exactly as found.
//! - It needs etcd stopped: a running etcd appends to the last file (and
//!   buffers writes), so the answer would be stale or the tail torn.
//! - It does not read the `.snap` files or the bbolt database, and does not
//!   check that the file sequence numbers are contiguous (a missing file
//!   shows as a CRC mismatch).
//! - Records are read one at a time through a buffered reader; at most one
//!   record (bounded by the file's size) is in memory.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// What an etcd WAL holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalPosition {
    /// The member that wrote the WAL (metadata `NodeID`).
    pub member_id: u64,
    /// Its cluster (metadata `ClusterID`).
    pub cluster_id: u64,
    /// The term of the last hard state record (0 when there is none).
    pub term: u64,
    /// The highest commit index of all hard state records.
    pub commit_index: u64,
    /// The index of the last entry of the raft log: the index of the last
    /// entry record (an entry record at an index already written replaces
    /// the log from there, as in raft), or the latest snapshot's index if
    /// higher.
    pub last_index: u64,
    /// The number of `.wal` files read.
    pub files: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("no .wal file in {}", .0.display())]
    NoWal(PathBuf),
    #[error("reading {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed WAL {} at offset {offset}: {why}", file.display())]
    Malformed {
        file: PathBuf,
        offset: u64,
        why: String,
    },
}

const METADATA_TYPE: i64 = 1;
const ENTRY_TYPE: i64 = 2;
const STATE_TYPE: i64 = 3;
const CRC_TYPE: i64 = 4;
const SNAPSHOT_TYPE: i64 = 5;

/// etcd's `minSectorSize`, the unit of its torn-write test.
const SECTOR_SIZE: u64 = 512;
const FRAME_SIZE_BYTES: u64 = 8;

/// `data_dir` is etcd's --data-dir (the WAL is in <data_dir>/member/wal/*.wal, files sorted by name).
///
/// etcd must be stopped. A torn write at the end of the last file ends the
/// reading (what came before is returned); see the module documentation.
pub fn read_position(data_dir: &Path) -> Result<WalPosition, WalError> {
    let dir = data_dir.join("member").join("wal");
    let files = wal_files(&dir)?;
    if files.is_empty() {
        return Err(WalError::NoWal(dir));
    }
    let mut acc = Accumulator::default();
    for (n, path) in files.iter().enumerate() {
        read_file(path, n + 1 == files.len(), &mut acc)?;
    }
    let Some(metadata) = acc.metadata else {
        let last = files.last().cloned().unwrap_or(dir);
        return Err(WalError::Malformed {
            file: last,
            offset: 0,
            why: "no metadata record in any file".into(),
        });
    };
    Ok(WalPosition {
        member_id: metadata.member_id,
        cluster_id: metadata.cluster_id,
        term: acc.term,
        commit_index: acc.commit_index,
        last_index: acc.last_index,
        files: files.len(),
    })
}

/// The `*.wal` files of `dir`, sorted by name; none when `dir` is missing.
fn wal_files(dir: &Path) -> Result<Vec<PathBuf>, WalError> {
    let io = |source| WalError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "wal") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Metadata {
    member_id: u64,
    cluster_id: u64,
    raw: Vec<u8>,
}

/// What the records read so far say.
#[derive(Debug, Default)]
struct Accumulator {
    metadata: Option<Metadata>,
    term: u64,
    commit_index: u64,
    last_index: u64,
    /// The running CRC-32C of all record data so far.
    crc: u32,
}

/// Why a frame could not be used.
enum Bad {
    /// The frame or record is incomplete or corrupt: torn when it is the
    /// tail of the last file, malformed otherwise.
    Unreadable(String),
    /// The record read and passed its CRC but makes no sense: always
    /// malformed.
    Invalid(String),
}

fn read_file(path: &Path, is_last: bool, acc: &mut Accumulator) -> Result<(), WalError> {
    let io = |source| WalError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let malformed = |offset, why| WalError::Malformed {
        file: path.to_path_buf(),
        offset,
        why,
    };
    // Stops at a torn write (fine, etcd truncates it) or fails.
    let stop = |offset: u64, why: String, torn: bool| {
        if torn {
            tracing::info!(
                file = %path.display(),
                offset,
                why,
                "the WAL ends in a torn write; reading stops there"
            );
            Ok(())
        } else {
            Err(malformed(offset, why))
        }
    };
    let mut offset = 0u64;
    while offset < size {
        if size - offset < FRAME_SIZE_BYTES {
            let why = format!("{} bytes left, a length field needs 8", size - offset);
            return stop(offset, why, is_last);
        }
        let mut len_field = [0u8; 8];
        reader.read_exact(&mut len_field).map_err(io)?;
        let len_field = u64::from_le_bytes(len_field);
        if len_field == 0 {
            // The end of the written part of a preallocated file.
            return Ok(());
        }
        let (rec_bytes, pad_bytes) = decode_frame_size(len_field);
        let available = size - offset - FRAME_SIZE_BYTES;
        if rec_bytes.saturating_add(pad_bytes) > available {
            let why = format!(
                "a frame of {rec_bytes}+{pad_bytes} bytes runs past the end of the file \
                 ({available} bytes left)"
            );
            return stop(offset, why, is_last);
        }
        // Bounded by the file's size, checked above.
        let mut data = vec![0u8; (rec_bytes + pad_bytes) as usize];
        reader.read_exact(&mut data).map_err(io)?;
        match apply_record(&data[..rec_bytes as usize], acc) {
            Ok(()) => {}
            Err(Bad::Unreadable(why)) => {
                return stop(
                    offset,
                    why,
                    is_last && is_torn(&data, offset + FRAME_SIZE_BYTES),
                );
            }
            Err(Bad::Invalid(why)) => return Err(malformed(offset, why)),
        }
        offset += FRAME_SIZE_BYTES + rec_bytes + pad_bytes;
    }
    Ok(())
}

/// etcd's `decodeFrameSize`: (record bytes, padding bytes).
fn decode_frame_size(len_field: u64) -> (u64, u64) {
    let rec_bytes = len_field & !(0xffu64 << 56);
    let pad_bytes = if len_field >> 63 == 1 {
        (len_field >> 56) & 0x7
    } else {
        0
    };
    (rec_bytes, pad_bytes)
}

/// etcd's `isTornEntry`: the frame's bytes, split at sector boundaries of
/// the file, have a chunk that is all zeros (a sector that never reached the
/// disk). `file_offset` is where `data` starts in the file.
fn is_torn(data: &[u8], file_offset: u64) -> bool {
    let mut offset = file_offset;
    let mut rest = data;
    while !rest.is_empty() {
        let to_boundary = (SECTOR_SIZE - offset % SECTOR_SIZE) as usize;
        let (chunk, tail) = rest.split_at(to_boundary.min(rest.len()));
        if chunk.iter().all(|b| *b == 0) {
            return true;
        }
        offset += chunk.len() as u64;
        rest = tail;
    }
    false
}

/// Decodes one `walpb.Record`, checks its CRC and folds it into `acc`.
fn apply_record(bytes: &[u8], acc: &mut Accumulator) -> Result<(), Bad> {
    let mut rec_type = 0i64;
    let mut rec_crc = 0u32;
    let mut data: &[u8] = &[];
    for_each_field(bytes, |field, value| {
        match (field, value) {
            (1, Value::Varint(v)) => rec_type = v as i64,
            (2, Value::Varint(v)) => rec_crc = v as u32,
            (3, Value::Bytes(b)) => data = b,
            (1..=3, _) => return Err(format!("record field {field} has the wrong wire type")),
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| Bad::Unreadable(format!("record does not decode: {e}")))?;

    if rec_type == CRC_TYPE {
        // The CRC the previous file ended with; 0 is not checked, as in
        // etcd (the first file, or the first file left after a purge).
        if acc.crc != 0 && rec_crc != acc.crc {
            return Err(Bad::Unreadable(format!(
                "CRC record says {rec_crc:#010x}, the previous records give {:#010x}",
                acc.crc
            )));
        }
        acc.crc = rec_crc;
        return Ok(());
    }
    let crc = crc32c_update(acc.crc, data);
    if crc != rec_crc {
        return Err(Bad::Unreadable(format!(
            "CRC mismatch: record has {rec_crc:#010x}, data gives {crc:#010x}"
        )));
    }
    acc.crc = crc;

    match rec_type {
        METADATA_TYPE => {
            let (mut member_id, mut cluster_id) = (0, 0);
            for_each_field(data, |field, value| {
                match (field, value) {
                    (1, Value::Varint(v)) => member_id = v,
                    (2, Value::Varint(v)) => cluster_id = v,
                    (1..=2, _) => return Err(format!("field {field} has the wrong wire type")),
                    _ => {}
                }
                Ok(())
            })
            .map_err(|e| Bad::Invalid(format!("metadata does not decode: {e}")))?;
            match &acc.metadata {
                Some(m) if m.raw != data => {
                    return Err(Bad::Invalid(format!(
                        "metadata (member {member_id:x}, cluster {cluster_id:x}) differs from \
                         an earlier record's (member {:x}, cluster {:x})",
                        m.member_id, m.cluster_id
                    )));
                }
                Some(_) => {}
                None => {
                    acc.metadata = Some(Metadata {
                        member_id,
                        cluster_id,
                        raw: data.to_vec(),
                    })
                }
            }
        }
        ENTRY_TYPE => {
            let mut index = 0;
            for_each_field(data, |field, value| {
                match (field, value) {
                    (3, Value::Varint(v)) => index = v,
                    (1..=3, Value::Varint(_)) | (4, Value::Bytes(_)) => {}
                    (1..=4, _) => return Err(format!("field {field} has the wrong wire type")),
                    _ => {}
                }
                Ok(())
            })
            .map_err(|e| Bad::Invalid(format!("entry does not decode: {e}")))?;
            // Appending at an index already written replaces the log from
            // there on (raft's conflict resolution), so the log ends here.
            acc.last_index = index;
        }
        STATE_TYPE => {
            let (mut term, mut commit) = (0, 0);
            for_each_field(data, |field, value| {
                match (field, value) {
                    (1, Value::Varint(v)) => term = v,
                    (3, Value::Varint(v)) => commit = v,
                    (2, Value::Varint(_)) => {}
                    (1..=3, _) => return Err(format!("field {field} has the wrong wire type")),
                    _ => {}
                }
                Ok(())
            })
            .map_err(|e| Bad::Invalid(format!("hard state does not decode: {e}")))?;
            acc.term = term;
            acc.commit_index = acc.commit_index.max(commit);
        }
        SNAPSHOT_TYPE => {
            let mut index = 0;
            for_each_field(data, |field, value| {
                match (field, value) {
                    (1, Value::Varint(v)) => index = v,
                    (2, Value::Varint(_)) => {}
                    (1..=2, _) => return Err(format!("field {field} has the wrong wire type")),
                    _ => {}
                }
                Ok(())
            })
            .map_err(|e| Bad::Invalid(format!("snapshot does not decode: {e}")))?;
            acc.last_index = acc.last_index.max(index);
        }
        other => {
            return Err(Bad::Invalid(format!("unknown record type {other}")));
        }
    }
    Ok(())
}

/// One protobuf field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// Calls `f` with every (field number, value) of a protobuf message, in
/// order. Groups (wire types 3 and 4, unused by etcd) are an error.
fn for_each_field<'a>(
    mut buf: &'a [u8],
    mut f: impl FnMut(u64, Value<'a>) -> Result<(), String>,
) -> Result<(), String> {
    while !buf.is_empty() {
        let key = read_varint(&mut buf)?;
        let field = key >> 3;
        if field == 0 {
            return Err("field number 0".into());
        }
        let value = match key & 7 {
            0 => Value::Varint(read_varint(&mut buf)?),
            1 => Value::Fixed64(u64::from_le_bytes(take_array(&mut buf)?)),
            2 => {
                let len = read_varint(&mut buf)?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|l| *l <= buf.len())
                    .ok_or_else(|| format!("field {field}: {len} bytes, {} left", buf.len()))?;
                let (bytes, rest) = buf.split_at(len);
                buf = rest;
                Value::Bytes(bytes)
            }
            5 => Value::Fixed32(u32::from_le_bytes(take_array(&mut buf)?)),
            wire => return Err(format!("field {field}: unsupported wire type {wire}")),
        };
        f(field, value)?;
    }
    Ok(())
}

fn read_varint(buf: &mut &[u8]) -> Result<u64, String> {
    let mut value = 0u64;
    for (n, byte) in buf.iter().enumerate().take(10) {
        let low = u64::from(byte & 0x7f);
        if n == 9 && byte & 0xfe != 0 {
            return Err("varint overflows 64 bits".into());
        }
        value |= low << (7 * n);
        if byte & 0x80 == 0 {
            *buf = &buf[n + 1..];
            return Ok(value);
        }
    }
    Err("truncated varint".into())
}

fn take_array<const N: usize>(buf: &mut &[u8]) -> Result<[u8; N], String> {
    let Some((head, rest)) = buf.split_first_chunk::<N>() else {
        return Err(format!("truncated {N}-byte field"));
    };
    *buf = rest;
    Ok(*head)
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), table-driven.
const CRC32C_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Go's `crc32.Update(crc, castagnoli, data)`: continues a CRC-32C.
fn crc32c_update(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    for b in data {
        c = CRC32C_TABLE[((c ^ u32::from(*b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn field_varint(field: u64, v: u64, out: &mut Vec<u8>) {
        // Like gogoproto, zero values are left out.
        if v != 0 {
            varint(field << 3, out);
            varint(v, out);
        }
    }

    fn field_bytes(field: u64, b: &[u8], out: &mut Vec<u8>) {
        varint((field << 3) | 2, out);
        varint(b.len() as u64, out);
        out.extend_from_slice(b);
    }

    /// Writes WAL files the way etcd's encoder does.
    struct Encoder {
        crc: u32,
        buf: Vec<u8>,
        padded_frames: usize,
    }

    impl Encoder {
        /// A new file: a CRC record with the running CRC, then the metadata.
        fn file(crc: u32, member: u64, cluster: u64) -> Self {
            let mut e = Self {
                crc,
                buf: Vec::new(),
                padded_frames: 0,
            };
            e.crc_record();
            let mut md = Vec::new();
            field_varint(1, member, &mut md);
            field_varint(2, cluster, &mut md);
            e.record(METADATA_TYPE, &md);
            e
        }

        fn crc_record(&mut self) {
            let mut rec = Vec::new();
            field_varint(1, CRC_TYPE as u64, &mut rec);
            field_varint(2, u64::from(self.crc), &mut rec);
            self.frame(&rec);
        }

        fn record(&mut self, rec_type: i64, data: &[u8]) {
            self.crc = crc32c_update(self.crc, data);
            let mut rec = Vec::new();
            field_varint(1, rec_type as u64, &mut rec);
            field_varint(2, u64::from(self.crc), &mut rec);
            field_bytes(3, data, &mut rec);
            self.frame(&rec);
        }

        fn frame(&mut self, rec: &[u8]) {
            let pad = (8 - rec.len() % 8) % 8;
            let mut len_field = rec.len() as u64;
            if pad != 0 {
                len_field |= (0x80 | pad as u64) << 56;
                self.padded_frames += 1;
            }
            self.buf.extend_from_slice(&len_field.to_le_bytes());
            self.buf.extend_from_slice(rec);
            self.buf.extend(std::iter::repeat_n(0, pad));
        }

        fn entry(&mut self, term: u64, index: u64, payload: &[u8]) {
            let mut e = Vec::new();
            field_varint(2, term, &mut e);
            field_varint(3, index, &mut e);
            field_bytes(4, payload, &mut e);
            self.record(ENTRY_TYPE, &e);
        }

        fn state(&mut self, term: u64, vote: u64, commit: u64) {
            let mut s = Vec::new();
            field_varint(1, term, &mut s);
            field_varint(2, vote, &mut s);
            field_varint(3, commit, &mut s);
            self.record(STATE_TYPE, &s);
        }

        fn snapshot(&mut self, index: u64, term: u64) {
            let mut s = Vec::new();
            field_varint(1, index, &mut s);
            field_varint(2, term, &mut s);
            self.record(SNAPSHOT_TYPE, &s);
        }

        /// The bytes with a preallocated zero tail.
        fn preallocated(&self) -> Vec<u8> {
            let mut b = self.buf.clone();
            b.resize(b.len() + 8192, 0);
            b
        }
    }

    const MEMBER: u64 = 0x8e9e_05c5_2164_694d;
    const CLUSTER: u64 = 0xcdf8_1819_4e3a_8c32;

    fn data_dir(files: &[Vec<u8>]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("member/wal");
        std::fs::create_dir_all(&wal).unwrap();
        for (seq, bytes) in files.iter().enumerate() {
            std::fs::write(
                wal.join(format!("{seq:016x}-{:016x}.wal", seq * 100)),
                bytes,
            )
            .unwrap();
        }
        dir
    }

    /// A first file: snapshot 0, a hard state, entries 1..=n with commits.
    fn first_file(n: u64) -> Encoder {
        let mut e = Encoder::file(0, MEMBER, CLUSTER);
        e.snapshot(0, 0);
        e.state(2, MEMBER, 0);
        for i in 1..=n {
            e.entry(2, i, format!("put key/{i:04} with some data").as_bytes());
            e.state(2, MEMBER, i);
        }
        e
    }

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        assert_eq!(crc32c_update(0, b"123456789"), 0xe306_9283);
        // Chaining equals one pass over the concatenation.
        let chained = crc32c_update(crc32c_update(0, b"1234"), b"56789");
        assert_eq!(chained, 0xe306_9283);
    }

    #[test]
    fn frame_size_decodes_like_etcd() {
        assert_eq!(decode_frame_size(13 | (0x83u64 << 56)), (13, 3));
        assert_eq!(decode_frame_size(16), (16, 0));
    }

    #[test]
    fn one_file_with_padding_and_zero_tail() {
        let e = first_file(10);
        assert!(e.padded_frames > 0, "the test must exercise padding");
        let dir = data_dir(&[e.preallocated()]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!(
            p,
            WalPosition {
                member_id: MEMBER,
                cluster_id: CLUSTER,
                term: 2,
                commit_index: 10,
                last_index: 10,
                files: 1,
            }
        );
    }

    #[test]
    fn file_without_zero_tail_reads_to_its_end() {
        let dir = data_dir(&[first_file(3).buf]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!((p.commit_index, p.last_index), (3, 3));
    }

    #[test]
    fn several_files_chain_crc_and_state() {
        let first = first_file(5);
        let mut second = Encoder::file(first.crc, MEMBER, CLUSTER);
        second.state(3, MEMBER, 5);
        for i in 6..=9 {
            second.entry(3, i, b"x");
        }
        // Commit lags the last entry; a snapshot record below the log end.
        second.state(3, MEMBER, 8);
        second.snapshot(7, 3);
        let dir = data_dir(&[first.preallocated(), second.preallocated()]);
        // Not WAL files: ignored.
        std::fs::write(dir.path().join("member/wal/0.tmp"), [1u8; 64]).unwrap();
        std::fs::write(dir.path().join("member/wal/x.wal.broken"), [1u8; 64]).unwrap();
        let p = read_position(dir.path()).unwrap();
        assert_eq!(
            p,
            WalPosition {
                member_id: MEMBER,
                cluster_id: CLUSTER,
                term: 3,
                commit_index: 8,
                last_index: 9,
                files: 2,
            }
        );
    }

    #[test]
    fn snapshot_above_the_entries_is_the_last_index() {
        let mut e = first_file(2);
        e.snapshot(50, 4);
        e.state(4, 0, 50);
        let dir = data_dir(&[e.preallocated()]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!((p.term, p.commit_index, p.last_index), (4, 50, 50));
    }

    #[test]
    fn conflicting_entry_truncates_the_log() {
        let mut e = first_file(3);
        e.entry(2, 4, b"a");
        e.entry(2, 5, b"b");
        // A new leader overwrites 4 and 5.
        e.state(3, 0, 3);
        e.entry(3, 4, b"c");
        let dir = data_dir(&[e.preallocated()]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!((p.term, p.commit_index, p.last_index), (3, 3, 4));
    }

    #[test]
    fn torn_tail_of_the_last_file_is_dropped() {
        let first = first_file(3);
        let mut second = Encoder::file(first.crc, MEMBER, CLUSTER);
        second.state(2, MEMBER, 3);
        second.entry(2, 4, b"x");
        second.state(2, MEMBER, 4);
        let whole = second.buf.len();
        second.entry(2, 5, &[7u8; 1500]);
        second.state(2, MEMBER, 5);

        // Cut in the middle of the entry's frame: it runs past the end.
        let mut cut = second.buf.clone();
        cut.truncate(whole + 700);
        let dir = data_dir(&[first.preallocated(), cut]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!((p.commit_index, p.last_index, p.files), (4, 4, 2));

        // In a preallocated file, a sector of the entry never written.
        let mut holed = second.preallocated();
        let hole = (whole + 600) / 512 * 512;
        holed[hole..hole + 512].fill(0);
        let dir = data_dir(&[first.preallocated(), holed]);
        let p = read_position(dir.path()).unwrap();
        assert_eq!((p.commit_index, p.last_index), (4, 4));

        // A partial length field at the very end.
        let mut short = second.buf[..whole].to_vec();
        short.extend_from_slice(&[1, 2, 3]);
        let dir = data_dir(&[first.preallocated(), short]);
        assert_eq!(read_position(dir.path()).unwrap().last_index, 4);
    }

    #[test]
    fn damage_in_a_file_that_is_not_the_last_is_malformed() {
        let first = first_file(20);
        let mut second = Encoder::file(first.crc, MEMBER, CLUSTER);
        second.state(2, MEMBER, 20);
        let second = second.preallocated();

        // Garbage over a record.
        let mut garbage = first.preallocated();
        let at = first.buf.len() / 2;
        garbage[at..at + 16].copy_from_slice(b"garbage garbage!");
        let dir = data_dir(&[garbage, second.clone()]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(
            matches!(err, WalError::Malformed { ref file, .. }
            if file.ends_with("0000000000000000-0000000000000000.wal")),
            "{err}"
        );

        // A torn frame, which would be fine in the last file.
        let mut cut = first.buf.clone();
        cut.truncate(first.buf.len() - 5);
        let dir = data_dir(&[cut, second.clone()]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(matches!(err, WalError::Malformed { .. }), "{err}");
        assert!(err.to_string().contains("runs past the end"), "{err}");

        // A zeroed sector, which would be torn in the last file.
        let mut holed = first.preallocated();
        holed[512..1024].fill(0);
        let dir = data_dir(&[holed, second]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(matches!(err, WalError::Malformed { .. }), "{err}");
    }

    #[test]
    fn corruption_in_the_last_file_that_is_not_torn_is_malformed() {
        let e = first_file(20);
        let mut bytes = e.preallocated();
        // Flip a byte of an entry's data: no zero sector, so not torn.
        let at = bytes.windows(8).position(|w| w == b"key/0010").unwrap();
        bytes[at] ^= 0x55;
        let dir = data_dir(&[bytes]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(matches!(err, WalError::Malformed { .. }), "{err}");
    }

    #[test]
    fn a_file_missing_from_the_chain_breaks_the_crc() {
        let first = first_file(3);
        let mut second = Encoder::file(first.crc, MEMBER, CLUSTER);
        second.entry(2, 4, b"x");
        let mut third = Encoder::file(second.crc, MEMBER, CLUSTER);
        third.entry(2, 5, b"y");
        let dir = data_dir(&[first.preallocated(), third.preallocated()]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(err.to_string().contains("CRC record says"), "{err}");
    }

    #[test]
    fn metadata_that_changes_between_files_is_malformed() {
        let first = first_file(3);
        let mut second = Encoder::file(first.crc, MEMBER + 1, CLUSTER);
        second.entry(2, 4, b"x");
        let dir = data_dir(&[first.preallocated(), second.preallocated()]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(err.to_string().contains("differs"), "{err}");
    }

    #[test]
    fn no_wal_file_is_no_wal() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read_position(dir.path()), Err(WalError::NoWal(_))));
        std::fs::create_dir_all(dir.path().join("member/wal")).unwrap();
        std::fs::write(dir.path().join("member/wal/0.tmp"), [0u8; 16]).unwrap();
        let err = read_position(dir.path()).unwrap_err();
        assert!(
            matches!(err, WalError::NoWal(ref p) if p.ends_with("member/wal")),
            "{err}"
        );
    }

    #[test]
    fn a_wal_of_zeros_has_no_metadata() {
        let dir = data_dir(&[vec![0u8; 4096]]);
        let err = read_position(dir.path()).unwrap_err();
        assert!(err.to_string().contains("no metadata"), "{err}");
    }

    #[test]
    fn protobuf_reader_skips_unknown_fields_and_rejects_truncation() {
        let mut m = Vec::new();
        field_varint(1, 300, &mut m);
        m.push((7 << 3) | 1);
        m.extend_from_slice(&[0; 8]);
        m.push((8 << 3) | 5);
        m.extend_from_slice(&[0; 4]);
        field_bytes(9, b"abc", &mut m);
        let mut seen = Vec::new();
        for_each_field(&m, |f, v| {
            seen.push((f, v));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], (1, Value::Varint(300)));
        assert_eq!(seen[3], (9, Value::Bytes(b"abc")));
        assert!(for_each_field(&m[..m.len() - 1], |_, _| Ok(())).is_err());
        assert!(for_each_field(&[0x08, 0x80], |_, _| Ok(())).is_err());
        assert!(for_each_field(&[0x0b], |_, _| Ok(())).is_err());
    }
}
