//! The directory store: objects are files under a root directory that every
//! instance shares (a local directory for tests and single machines, a
//! shared filesystem otherwise).
//!
//! Layout: the object `a/b` is the file `<root>/a/b` with its content
//! as-is (a snapshot can be restored straight from the file), and its info
//! in `<root>/a/.b.meta.json`. Publishing is: content to a temporary file,
//! fsync; info to a temporary file, fsync; rename content; rename info;
//! fsync the directory. **The info file is the commit point**: an object is
//! listed and readable only when its info exists, so a crash never exposes
//! a half-written object. Temporary files start with `.tmp-` and are never
//! listed; what an interrupted put leaves (as large as the snapshot it was
//! writing) is removed by the sweep at start (`check_at_start`,
//! [`DirStore::sweep_leftovers`]) once [`LEFTOVER_AGE`] old by its
//! modification time: a file being written is younger (it changes as it is
//! written), and no put lasts a day. Only `.tmp-` files are swept; an
//! object's content without its info file is never removed (it may be the
//! only copy of something).
//!
//! `create_if_absent` writes a temporary file and `link`s it to the name:
//! `link` fails if the name exists, atomically, on local filesystems and
//! NFS alike. Conditionally created objects (records) carry no info file;
//! their info is computed when read.
//!
//! Every file eco writes here is `0600`: a snapshot is the whole database,
//! secrets included (as `etcdctl snapshot save` writes it).
//!
//! Listings read info files, never payloads: a file without info (a crash
//! leftover, a copy) is skipped by a `stat`, whatever its size. An info
//! file that does not parse, or names another object, is skipped by
//! listings with a warning (once per object) — it commits nothing — and
//! is an error naming it when that object is read. A record that cannot be
//! read (larger than a record can be) fails the listing instead: records
//! are never skipped. **Symlinks are
//! followed**, in reads and listings alike (a cluster directory may live
//! on another volume); directories nest at most [`MAX_DEPTH`] deep, so a
//! symlink loop is an error naming where, never an endless walk.

use super::{
    CreateOutcome, ListPage, NameFilter, ObjectInfo, ObjectReader, ObjectStore, StoreError,
    check_name, is_record_name,
};
use crate::base::atomic_file::{TEMP_PREFIX, sync_dir};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Default number of objects per listing page.
pub const PAGE_SIZE: usize = 1000;

pub struct DirStore {
    root: PathBuf,
    page_size: usize,
    /// Objects whose unreadable info was already reported.
    warned: super::Skipped,
}

/// The deepest an object name nests (`<cluster>/snapshots/<file>` is 3).
pub const MAX_DEPTH: usize = 16;

/// The largest record (a conditionally created object without an info
/// file) read to compute its info; records are small JSON documents.
const MAX_RECORD: u64 = 1 << 20;

/// How old a temporary file must be before the start-time sweep removes it
/// (the S3 store's sweep waits as long).
pub const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The mode of every file the store writes: readable by eco's user only.
pub const OBJECT_MODE: u32 = 0o600;

/// Creates (or truncates) `path` with [`OBJECT_MODE`].
/// Publishes a written object: its content, then its info (the commit
/// point), renamed into place under an exclusive lock of their directory,
/// so that of concurrent puts of one name — from any process on this
/// machine — the content and the info left are the same put's (without
/// it, one put's content could stay beside another's info, and the object
/// would read as corrupt).
fn publish(
    dir: &Path,
    content: &Path,
    path: &Path,
    info: &Path,
    final_info: &Path,
    name: &str,
) -> Result<(), StoreError> {
    use nix::fcntl::{Flock, FlockArg};
    let folder = std::fs::File::open(dir).map_err(io(format!("opening {}", dir.display())))?;
    let _lock = Flock::lock(folder, FlockArg::LockExclusive)
        .map_err(|(_, e)| io(format!("locking {}", dir.display()))(std::io::Error::from(e)))?;
    std::fs::rename(content, path).map_err(io(format!("publishing {}", path.display())))?;
    std::fs::rename(info, final_info).map_err(io(format!("publishing the info of {name}")))?;
    sync_dir(dir).map_err(io(format!("syncing {}", dir.display())))
}

async fn create_private(path: &Path) -> std::io::Result<tokio::fs::File> {
    tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(OBJECT_MODE)
        .open(path)
        .await
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> StoreError {
    let what = what.into();
    move |source| StoreError::Io { what, source }
}

impl DirStore {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            page_size: PAGE_SIZE,
            warned: Default::default(),
        }
    }

    /// A store with small pages, to exercise pagination in tests.
    pub fn with_page_size(root: PathBuf, page_size: usize) -> Self {
        Self {
            root,
            page_size: page_size.max(1),
            warned: Default::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn meta_path(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        let file = p
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        p.with_file_name(format!(".{file}.meta.json"))
    }

    fn temp_path(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        let file = p
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        p.with_file_name(format!(
            "{TEMP_PREFIX}{file}.{}.{}",
            std::process::id(),
            rand::random::<u64>()
        ))
    }

    async fn read_info(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
        match tokio::fs::read(self.meta_path(name)).await {
            Ok(bytes) => {
                let info: ObjectInfo =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::Metadata {
                        name: name.into(),
                        message: e.to_string(),
                    })?;
                if info.name != name {
                    return Err(StoreError::Metadata {
                        name: name.into(),
                        message: format!("its info file describes {:?}", info.name),
                    });
                }
                Ok(Some(info))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A conditionally created object (a record) has no info
                // file; anything else without one is not committed. Only
                // records are read, and only small ones.
                if !is_record_name(name) {
                    return Ok(None);
                }
                let path = self.path(name);
                match tokio::fs::metadata(&path).await {
                    Ok(m) if m.len() > MAX_RECORD => {
                        return Err(StoreError::Metadata {
                            name: name.into(),
                            message: format!(
                                "{} bytes, more than a record can hold ({MAX_RECORD})",
                                m.len()
                            ),
                        });
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(io(name)(e)),
                }
                match tokio::fs::read(&path).await {
                    Ok(content) => Ok(Some(ObjectInfo {
                        name: name.into(),
                        size: content.len() as u64,
                        sha256: hex::encode(Sha256::digest(&content)),
                        metadata: BTreeMap::new(),
                    })),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(io(name)(e)),
                }
            }
            Err(e) => Err(io(format!("info of {name}"))(e)),
        }
    }

    /// Names of every object under the root (sorted), committed or not.
    async fn walk(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut names = Vec::new();
        let mut stack = vec![(self.root.clone(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir != self.root => continue,
                Err(e) => return Err(io(format!("listing {}", dir.display()))(e)),
            };
            while let Some(entry) = entries
                .next_entry()
                .await
                .map_err(io(format!("listing {}", dir.display())))?
            {
                let file = entry.file_name().to_string_lossy().to_string();
                if file.starts_with('.') {
                    continue;
                }
                let name = if rel.is_empty() {
                    file
                } else {
                    format!("{rel}/{file}")
                };
                let mut kind = entry.file_type().await.map_err(io(&name))?;
                if kind.is_symlink() {
                    // Followed: what matters is what it points to.
                    match tokio::fs::metadata(entry.path()).await {
                        Ok(m) => kind = m.file_type(),
                        // A dangling link holds nothing.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io(&name)(e)),
                    }
                }
                if kind.is_dir() && name.split('/').count() >= MAX_DEPTH {
                    return Err(StoreError::Io {
                        what: format!("listing {}", entry.path().display()),
                        source: std::io::Error::other(format!(
                            "directories nest deeper than {MAX_DEPTH} levels (a symlink loop?)"
                        )),
                    });
                }
                if kind.is_dir() {
                    // Only descend where the prefix can still match.
                    if name.starts_with(prefix) || prefix.starts_with(&format!("{name}/")) {
                        stack.push((entry.path(), name));
                    }
                } else if kind.is_file() && name.starts_with(prefix) && check_name(&name).is_ok() {
                    names.push(name);
                }
            }
        }
        names.sort();
        Ok(names)
    }
}

impl DirStore {
    /// Removes the temporary files (`.tmp-*`) that interrupted puts and
    /// creates left anywhere under the root, once older than `older_than`
    /// by their modification time; returns how many. Directories are
    /// walked as listings walk them (symlinks followed, at most
    /// [`MAX_DEPTH`] deep); only regular files are removed.
    pub async fn sweep_leftovers(
        &self,
        older_than: std::time::Duration,
    ) -> Result<usize, StoreError> {
        let cutoff = std::time::SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(std::time::UNIX_EPOCH);
        let mut removed = 0;
        let mut stack = vec![(self.root.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir != self.root => continue,
                Err(e) => return Err(io(format!("sweeping {}", dir.display()))(e)),
            };
            while let Some(entry) = entries
                .next_entry()
                .await
                .map_err(io(format!("sweeping {}", dir.display())))?
            {
                let path = entry.path();
                let temporary = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
                let Ok(kind) = entry.file_type().await else {
                    continue;
                };
                if temporary && kind.is_file() {
                    let old = entry
                        .metadata()
                        .await
                        .and_then(|m| m.modified())
                        .is_ok_and(|at| at <= cutoff);
                    if old {
                        match tokio::fs::remove_file(&path).await {
                            Ok(()) => removed += 1,
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => return Err(io(format!("removing {}", path.display()))(e)),
                        }
                    }
                    continue;
                }
                let is_dir = kind.is_dir()
                    || (kind.is_symlink()
                        && tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()));
                if is_dir && depth + 1 < MAX_DEPTH {
                    stack.push((path, depth + 1));
                }
            }
        }
        Ok(removed)
    }

    /// Creates `dir` below the root, never the root itself: a missing root
    /// (an unmounted shared filesystem) is an error, or snapshots and
    /// records would land on the local disk under the mount point.
    async fn make_dir(&self, dir: &Path) -> Result<(), StoreError> {
        match tokio::fs::metadata(&self.root).await {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(StoreError::Io {
                    what: format!("the store root {}", self.root.display()),
                    source: std::io::Error::other("not a directory"),
                });
            }
            Err(source) => {
                return Err(StoreError::Io {
                    what: format!(
                        "the store root {} (missing: not mounted?)",
                        self.root.display()
                    ),
                    source,
                });
            }
        }
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(io(format!("creating {}", dir.display())))
    }
}

#[async_trait::async_trait]
impl ObjectStore for DirStore {
    fn describe(&self) -> String {
        format!("dir:{}", self.root.display())
    }

    async fn put(
        &self,
        name: &str,
        content: &mut (dyn AsyncRead + Unpin + Send),
        metadata: BTreeMap<String, String>,
    ) -> Result<ObjectInfo, StoreError> {
        check_name(name)?;
        let path = self.path(name);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        self.make_dir(&dir).await?;
        let temp = self.temp_path(name);
        let result = async {
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(OBJECT_MODE)
                .open(&temp)
                .await
                .map_err(io(format!("creating {}", temp.display())))?;
            let mut hasher = Sha256::new();
            let mut size = 0u64;
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let n = content
                    .read(&mut buf)
                    .await
                    .map_err(io(format!("reading the content of {name}")))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                file.write_all(&buf[..n])
                    .await
                    .map_err(io(format!("writing {}", temp.display())))?;
                size += n as u64;
            }
            file.sync_all()
                .await
                .map_err(io(format!("syncing {}", temp.display())))?;
            drop(file);
            let info = ObjectInfo {
                name: name.into(),
                size,
                sha256: hex::encode(hasher.finalize()),
                metadata,
            };
            let meta_bytes =
                serde_json::to_vec_pretty(&info).map_err(|e| StoreError::Metadata {
                    name: name.into(),
                    message: e.to_string(),
                })?;
            // The content's temporary name and `.meta`: unique per put
            // (two puts of one name in one process, or in two whose pids
            // are equal — pods, each its own PID namespace — never share
            // a temporary info file).
            let meta_temp = {
                let mut n = temp.clone().into_os_string();
                n.push(".meta");
                PathBuf::from(n)
            };
            let meta_result = async {
                let mut m = create_private(&meta_temp)
                    .await
                    .map_err(io(format!("creating {}", meta_temp.display())))?;
                m.write_all(&meta_bytes)
                    .await
                    .map_err(io(format!("writing {}", meta_temp.display())))?;
                m.sync_all()
                    .await
                    .map_err(io(format!("syncing {}", meta_temp.display())))?;
                drop(m);
                let (content, info, final_info, folder) = (
                    temp.clone(),
                    meta_temp.clone(),
                    self.meta_path(name),
                    dir.clone(),
                );
                let published = path.clone();
                let what = name.to_string();
                tokio::task::spawn_blocking(move || {
                    publish(&folder, &content, &published, &info, &final_info, &what)
                })
                .await
                .map_err(|e| StoreError::Unavailable(format!("publishing {name}: {e}")))?
            }
            .await;
            if meta_result.is_err() {
                let _ = tokio::fs::remove_file(&meta_temp).await;
            }
            meta_result.map(|()| info)
        }
        .await;
        if result.is_err() {
            let _ = tokio::fs::remove_file(&temp).await;
        }
        result
    }

    async fn get(&self, name: &str) -> Result<(ObjectInfo, ObjectReader), StoreError> {
        check_name(name)?;
        let info = self
            .read_info(name)
            .await?
            .ok_or_else(|| StoreError::NotFound(name.into()))?;
        let file = tokio::fs::File::open(self.path(name)).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                StoreError::NotFound(name.into())
            } else {
                io(name)(e)
            }
        })?;
        Ok((info, Box::new(file)))
    }

    async fn head(&self, name: &str) -> Result<Option<ObjectInfo>, StoreError> {
        check_name(name)?;
        self.read_info(name).await
    }

    async fn uncommitted(&self, name: &str) -> Result<Option<String>, StoreError> {
        check_name(name)?;
        // Records are read without an info file.
        if is_record_name(name) {
            return Ok(None);
        }
        let meta = self.meta_path(name);
        match tokio::fs::symlink_metadata(&meta).await {
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(format!("info of {name}"))(e)),
        }
        let path = self.path(name);
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() => Ok(Some(format!(
                "{} ({} bytes) has no info file ({}); the directory store commits an object by its info file, so it is not read (a crash leftover, or a file put there by hand)",
                path.display(),
                m.len(),
                meta.display()
            ))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(name)(e)),
        }
    }

    async fn list(&self, prefix: &str, after: Option<&str>) -> Result<ListPage, StoreError> {
        self.list_matching(prefix, after, &|_| true).await
    }

    async fn list_matching(
        &self,
        prefix: &str,
        after: Option<&str>,
        wanted: &NameFilter,
    ) -> Result<ListPage, StoreError> {
        let names = self.walk(prefix).await?;
        let mut objects = Vec::new();
        let mut last = None;
        for name in names
            .into_iter()
            .filter(|n| after.is_none_or(|a| n.as_str() > a) && wanted(n))
        {
            if objects.len() == self.page_size {
                return Ok(ListPage {
                    objects,
                    next: last,
                });
            }
            // Objects without info are not committed: not listed. An
            // info file that does not parse commits nothing either.
            match self.read_info(&name).await {
                Ok(Some(info)) => objects.push(info),
                Ok(None) => {}
                // A record's problem fails the listing: records are the
                // record of truth, never skipped.
                Err(StoreError::Metadata { name, message }) if !is_record_name(&name) => {
                    if self.warned.first_time(&name) {
                        tracing::warn!(object = %name, error = %message, "skipping a store object whose info is unreadable (it is not listed; remove it or its .meta.json)");
                    }
                }
                Err(e) => return Err(e),
            }
            last = Some(name);
        }
        Ok(ListPage {
            objects,
            next: None,
        })
    }

    async fn delete(&self, name: &str) -> Result<(), StoreError> {
        check_name(name)?;
        // Info first: the object stops being visible before its content goes.
        for p in [self.meta_path(name), self.path(name)] {
            match tokio::fs::remove_file(&p).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(format!("deleting {}", p.display()))(e)),
            }
        }
        Ok(())
    }

    /// No I/O to prove (a link is atomic); sweeps what interrupted puts
    /// left, a day old (a failure is logged: the store stays usable).
    async fn check_at_start(&self) -> Result<super::ConditionalCreate, StoreError> {
        match self.sweep_leftovers(LEFTOVER_AGE).await {
            Ok(0) => {}
            Ok(removed) => {
                tracing::info!(store = %self.describe(), removed, "removed the temporary files interrupted writes left behind")
            }
            Err(e) => {
                tracing::warn!(store = %self.describe(), error = %e, "cannot sweep the temporary files interrupted writes left behind")
            }
        }
        Ok(super::ConditionalCreate::Honoured)
    }

    async fn create_if_absent(
        &self,
        name: &str,
        content: &[u8],
    ) -> Result<CreateOutcome, StoreError> {
        check_name(name)?;
        let path = self.path(name);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        self.make_dir(&dir).await?;
        let temp = self.temp_path(name);
        let written = async {
            let mut f = create_private(&temp)
                .await
                .map_err(io(format!("creating {}", temp.display())))?;
            f.write_all(content)
                .await
                .map_err(io(format!("writing {}", temp.display())))?;
            f.sync_all()
                .await
                .map_err(io(format!("syncing {}", temp.display())))
        }
        .await;
        if let Err(e) = written {
            let _ = tokio::fs::remove_file(&temp).await;
            return Err(e);
        }
        let linked = tokio::fs::hard_link(&temp, &path).await;
        let _ = tokio::fs::remove_file(&temp).await;
        match linked {
            Ok(()) => {
                sync_dir(&dir).map_err(io(format!("syncing {}", dir.display())))?;
                Ok(CreateOutcome::Created)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let existing = tokio::fs::read(&path).await.map_err(io(name))?;
                Ok(CreateOutcome::AlreadyExists(existing))
            }
            Err(e) => Err(io(format!("creating {}", path.display()))(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{contract, list_all};

    #[tokio::test]
    async fn the_contract_holds() {
        let d = tempfile::tempdir().unwrap();
        let page = tempfile::tempdir().unwrap();
        contract::check(
            std::sync::Arc::new(DirStore::new(d.path().into())),
            std::sync::Arc::new(DirStore::with_page_size(page.path().into(), 3)),
        )
        .await;
    }

    #[tokio::test]
    async fn concurrent_puts_of_one_name_leave_one_puts_content_and_info() {
        let d = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(DirStore::new(d.path().into()));
        let mut tasks = Vec::new();
        for n in 0..24u32 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                // Each put its own content and length.
                let content = format!("put {n} {}", "x".repeat(n as usize * 97));
                let metadata = BTreeMap::from([("n".to_string(), n.to_string())]);
                store
                    .put(
                        "c/incarnations/0000000001.voters",
                        &mut content.as_bytes(),
                        metadata,
                    )
                    .await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let (info, mut reader) = store.get("c/incarnations/0000000001.voters").await.unwrap();
        let mut content = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut content)
            .await
            .unwrap();
        use sha2::Digest;
        assert_eq!(hex::encode(sha2::Sha256::digest(&content)), info.sha256);
        let n = &info.metadata["n"];
        assert!(String::from_utf8_lossy(&content).starts_with(&format!("put {n} ")));
        let leftovers: Vec<_> = std::fs::read_dir(d.path().join("c/incarnations"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|f| f.starts_with(TEMP_PREFIX))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[tokio::test]
    async fn a_missing_root_is_an_error_and_is_never_created() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("mnt/store");
        let s = DirStore::new(root.clone());
        assert!(
            s.put("c/snapshots/x", &mut &b"x"[..], BTreeMap::new())
                .await
                .is_err()
        );
        assert!(
            s.create_if_absent("c/incarnations/0000000001", b"r")
                .await
                .is_err()
        );
        assert!(
            !root.exists(),
            "the root of an unmounted store must not be created"
        );
    }

    #[tokio::test]
    async fn content_is_stored_as_is() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        s.put("snapshots/a.db", &mut &b"hello"[..], BTreeMap::new())
            .await
            .unwrap();
        assert_eq!(
            std::fs::read(d.path().join("snapshots/a.db")).unwrap(),
            b"hello",
            "a snapshot can be restored straight from the file"
        );
    }

    #[tokio::test]
    async fn half_written_objects_are_never_listed() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        s.put("snapshots/done.db", &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
        // A crash mid-upload leaves a temporary file; a crash between the two
        // renames leaves content without info. Neither is listed.
        std::fs::write(d.path().join("snapshots/.tmp-partial.db.1.2"), b"par").unwrap();
        std::fs::write(d.path().join("snapshots/no-info.db"), b"content").unwrap();
        let all = list_all(&s, "snapshots/").await.unwrap();
        assert_eq!(
            all.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            ["snapshots/done.db"]
        );
        assert_eq!(s.head("snapshots/no-info.db").await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_start_sweeps_day_old_temporary_files_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        s.put("c/snapshots/done.db", &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
        let two_days_ago = std::time::SystemTime::now() - 2 * LEFTOVER_AGE;
        let plant = |rel: &str, old: bool| {
            let path = d.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let f = std::fs::File::create(&path).unwrap();
            // Sparse: as large as a database, no disk used.
            f.set_len(1 << 30).unwrap();
            if old {
                f.set_modified(two_days_ago).unwrap();
            }
            path
        };
        // An interrupted `eco snapshot now`: its content and info temporaries.
        let swept = [
            plant("c/snapshots/.tmp-i1-r2-t.db.77.123", true),
            plant("c/snapshots/.tmp-i1-r2-t.db.77.meta", true),
            plant("other/incarnations/.tmp-0000000003.8.9", true),
        ];
        // Being written now, or not temporary: kept.
        let kept = [
            plant("c/snapshots/.tmp-i1-r3-t.db.78.456", false),
            plant("c/snapshots/no-info.db", true),
            plant("c/snapshots/.notes", true),
        ];
        assert_eq!(
            s.check_at_start().await.unwrap(),
            crate::store::ConditionalCreate::Honoured
        );
        for p in &swept {
            assert!(!p.exists(), "{} not swept", p.display());
        }
        for p in &kept {
            assert!(p.exists(), "{} swept", p.display());
        }
        assert_eq!(list_all(&s, "c/").await.unwrap().len(), 1);
        assert_eq!(s.sweep_leftovers(LEFTOVER_AGE).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn listing_errors_are_errors_not_empty() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("store-root-is-a-file");
        std::fs::write(&root, b"").unwrap();
        let s = DirStore::new(root);
        assert!(list_all(&s, "incarnations/").await.is_err());
    }

    fn bytes_read_by_this_process() -> u64 {
        std::fs::read_to_string("/proc/self/io")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn a_listing_reads_info_never_payloads() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        s.put("c/snapshots/a.db", &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
        // A crash leftover of 1 GiB without its info (sparse: no disk used).
        let leftover = std::fs::File::create(d.path().join("c/snapshots/b.db")).unwrap();
        leftover.set_len(1 << 30).unwrap();
        let before = bytes_read_by_this_process();
        let listed = list_all(&s, "c/snapshots/").await.unwrap();
        let read = bytes_read_by_this_process() - before;
        assert_eq!(listed.len(), 1);
        assert!(read < 1 << 20, "a listing read {read} bytes");
    }

    #[tokio::test]
    async fn junk_info_is_skipped_by_listings_and_an_error_naming_it_when_read() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        for name in ["c/snapshots/a.db", "c/snapshots/b.db", "c/snapshots/c.db"] {
            s.put(name, &mut &b"x"[..], BTreeMap::new()).await.unwrap();
        }
        std::fs::write(d.path().join("c/snapshots/.b.db.meta.json"), b"{junk").unwrap();
        // Info copied from another object: it commits nothing here.
        std::fs::copy(
            d.path().join("c/snapshots/.a.db.meta.json"),
            d.path().join("c/snapshots/.c.db.meta.json"),
        )
        .unwrap();
        let names: Vec<String> = list_all(&s, "c/snapshots/")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.name)
            .collect();
        assert_eq!(names, ["c/snapshots/a.db"]);
        for bad in ["c/snapshots/b.db", "c/snapshots/c.db"] {
            let err = s.head(bad).await.unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[tokio::test]
    async fn symlinks_are_followed_in_reads_and_listings_and_a_loop_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("c")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("c"), d.path().join("c")).unwrap();
        let s = DirStore::new(d.path().into());
        s.put("c/snapshots/a.db", &mut &b"x"[..], BTreeMap::new())
            .await
            .unwrap();
        s.create_if_absent("c/incarnations/0000000001", b"{}")
            .await
            .unwrap();
        assert!(elsewhere.path().join("c/snapshots/a.db").is_file());
        assert_eq!(list_all(&s, "c/snapshots/").await.unwrap().len(), 1);
        assert_eq!(list_all(&s, "c/incarnations/").await.unwrap().len(), 1);
        assert_eq!(list_all(&s, "").await.unwrap().len(), 2);
        // A loop: c/loop -> c.
        std::os::unix::fs::symlink(elsewhere.path().join("c"), elsewhere.path().join("c/loop"))
            .unwrap();
        let err = list_all(&s, "c/").await.unwrap_err().to_string();
        assert!(err.contains("symlink loop"), "{err}");
    }

    #[tokio::test]
    async fn an_oversized_record_fails_the_listing_instead_of_being_skipped() {
        let d = tempfile::tempdir().unwrap();
        let s = DirStore::new(d.path().into());
        s.create_if_absent("c/incarnations/0000000001", b"{}")
            .await
            .unwrap();
        let big = std::fs::File::create(d.path().join("c/incarnations/0000000002")).unwrap();
        big.set_len(MAX_RECORD + 1).unwrap();
        let err = list_all(&s, "c/incarnations/")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("0000000002"), "{err}");
    }
}
