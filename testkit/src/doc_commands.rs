//! A document's shell commands, taken from its text and run as written, so
//! that a procedure in docs/ cannot drift from what works.
//!
//! - [`sh_blocks`]: the fenced ```` ```sh ```` blocks of one section of a
//!   Markdown file (the heading's text, exactly), each as its logical lines
//!   (a line ending in `\` joined with the next, as the shell reads it);
//! - [`ShBlock::replace_example`]: the document's example values
//!   (`/etc/eco/eco.toml`, `10.0.0.5`, a snapshot name) replaced by the
//!   test's real ones — each replacement **asserts** that its example text
//!   is in the block, so a document that changes its example fails the
//!   test instead of silently testing nothing;
//! - [`ShBlock::run`]: the block run by `bash -euo pipefail` with a
//!   [`Shell`] (`PATH` with eco's and etcd's directories first, `HOME`, the
//!   working directory, variables the document expects), in a process group
//!   of its own, bounded in time: the whole group is killed by its id when
//!   the time is up, and once the block ended (what it left in the
//!   background, an `etcd … &`, goes with it). Its output is captured in
//!   files, so a background process holding it open never blocks the test;
//! - [`kubectl_exec`]: a `kubectl [-n NS] exec POD -- ARGV…` line as the pod
//!   and the argument vector (`testkit::pods::PodSet::exec` runs it).
//!
//! What it does not do: it is no Markdown parser beyond headings and
//! fences (a fence inside a list item is read; no ```` ```bash ````, no
//! four-space indented code, no inline code — a command to be run is put
//! in a fenced `sh` block of its document), no shell parser (quotes and expansions are bash's business; a continuation
//! is joined with one space, which is what bash does outside quotes — a
//! document never continues a quoted string), it does not choose what to
//! replace (the test names every example value) and does not judge the
//! output (the test does).

use anyhow::Context;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One fenced `sh` block of a document's section.
#[derive(Clone, Debug)]
pub struct ShBlock {
    /// Where it comes from, for messages: `docs/runbook.md, "Restoring by
    /// hand", sh block 2`.
    pub origin: String,
    /// Its logical lines: comments and blank lines as written, a line
    /// continued with `\` joined with the next.
    pub lines: Vec<String>,
}

/// The fenced `sh` blocks of the section under the heading whose text is
/// exactly `heading` (any level) in the Markdown file `markdown`, in order;
/// the section ends at the next heading of the same or a higher level.
/// Errors: the file unreadable, no such heading or more than one, a fence
/// that is never closed.
pub fn sh_blocks(markdown: &Path, heading: &str) -> anyhow::Result<Vec<ShBlock>> {
    let text = std::fs::read_to_string(markdown)
        .with_context(|| format!("reading {}", markdown.display()))?;
    let document = markdown
        .strip_prefix(crate::workspace_root())
        .unwrap_or(markdown)
        .display()
        .to_string();
    blocks_of(&text, &document, heading)
}

/// A heading line's level and text (`## A b` → `(2, "A b")`).
fn heading_of(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    let rest = &line[level..];
    (level > 0 && (rest.is_empty() || rest.starts_with(' '))).then(|| (level, rest.trim()))
}

fn blocks_of(text: &str, document: &str, heading: &str) -> anyhow::Result<Vec<ShBlock>> {
    // One pass over the document: headings only outside fences.
    let mut fence: Option<(usize, bool)> = None; // (indent, is sh)
    let mut section_level: Option<usize> = None;
    let mut found = 0;
    let mut blocks = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some((fence_indent, is_sh)) = fence {
            if trimmed.starts_with("```") {
                fence = None;
                if is_sh && section_level.is_some() {
                    blocks.push(ShBlock {
                        origin: format!("{document}, \"{heading}\", sh block {}", blocks.len() + 1),
                        lines: logical_lines(&current),
                    });
                }
                current.clear();
            } else {
                // The fence's indentation (a block inside a list item).
                let cut = line
                    .char_indices()
                    .take_while(|(i, c)| *i < fence_indent && c.is_whitespace())
                    .count();
                current.push(line[cut..].to_string());
            }
            continue;
        }
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = Some((indent, info.trim() == "sh"));
            continue;
        }
        if let Some((level, title)) = heading_of(line) {
            if section_level.is_some_and(|open| level <= open) {
                section_level = None;
            }
            if title == heading {
                found += 1;
                section_level = Some(level);
            }
        }
    }
    anyhow::ensure!(fence.is_none(), "{document}: a fence is never closed");
    anyhow::ensure!(found > 0, "{document} has no heading \"{heading}\"");
    anyhow::ensure!(
        found == 1,
        "{document} has {found} headings \"{heading}\": the section is ambiguous"
    );
    Ok(blocks)
}

/// Lines as the shell reads them: a line ending in `\` (not a comment)
/// joined with the next by one space.
fn logical_lines(raw: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for line in raw {
        let joined = match pending.take() {
            Some(head) => format!("{head} {}", line.trim_start()),
            None => line.clone(),
        };
        let is_comment = joined.trim_start().starts_with('#');
        match joined.strip_suffix('\\') {
            Some(head) if !is_comment => pending = Some(head.trim_end().to_string()),
            _ => out.push(joined),
        }
    }
    // A last line ending in `\`: the shell would wait for more; kept as is.
    if let Some(head) = pending {
        out.push(head);
    }
    out
}

impl ShBlock {
    /// The block as a script (its logical lines).
    pub fn script(&self) -> String {
        let mut s = self.lines.join("\n");
        s.push('\n');
        s
    }

    /// Its commands: the logical lines that are neither blank nor comments.
    pub fn commands(&self) -> Vec<&str> {
        self.lines
            .iter()
            .map(String::as_str)
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect()
    }

    /// The block split into one block per command, each with the comment
    /// lines just above it: a block that shows alternatives (`# from the
    /// store` … `# from a file` …) is run one alternative at a time.
    pub fn per_command(&self) -> Vec<ShBlock> {
        let mut out = Vec::new();
        let mut comments = Vec::new();
        for line in &self.lines {
            let t = line.trim_start();
            if t.is_empty() {
                comments.clear();
            } else if t.starts_with('#') {
                comments.push(line.clone());
            } else {
                let mut lines = std::mem::take(&mut comments);
                lines.push(line.clone());
                out.push(ShBlock {
                    origin: format!("{}, command {}", self.origin, out.len() + 1),
                    lines,
                });
            }
        }
        out
    }

    /// Whether `text` occurs in the block.
    pub fn contains(&self, text: &str) -> bool {
        self.lines.iter().any(|l| l.contains(text))
    }

    /// Every occurrence of the document's `example` replaced with the
    /// test's `real` value.
    ///
    /// # Panics
    /// When `example` is not in the block: the document changed its
    /// example, and the test must follow (it would test nothing otherwise).
    #[must_use]
    pub fn replace_example(mut self, example: &str, real: &str) -> Self {
        assert!(
            self.contains(example),
            "{}: the example {example:?} is not in the block any more (the document changed: update the test):\n{}",
            self.origin,
            self.script()
        );
        for line in &mut self.lines {
            *line = line.replace(example, real);
        }
        self
    }

    /// Runs the block with `shell` (see the module docs): its exit, or an
    /// error when bash cannot be started or its output not read.
    pub fn run(&self, shell: &Shell) -> anyhow::Result<ShRun> {
        shell.run(&self.origin, &self.script())
    }
}

/// How blocks are run: `bash -euo pipefail -c <block>` in `cwd`, stdin
/// closed, `PATH` = `path_first` then the test's own `PATH`, `HOME` (a `~`
/// of the document lands there, not in the user's home), and `env`.
#[derive(Clone, Debug)]
pub struct Shell {
    /// Directories put first on `PATH`, in order.
    pub path_first: Vec<PathBuf>,
    pub home: PathBuf,
    pub cwd: PathBuf,
    /// Variables the document expects (`OLD`, `NEW`, …).
    pub env: Vec<(String, String)>,
    /// How long one block may run; then its process group is killed.
    pub limit: Duration,
}

/// How a block ended.
#[derive(Clone, Debug)]
pub struct ShRun {
    /// bash's exit code (`None`: killed, by the time limit or a signal).
    pub code: Option<i32>,
    /// Whether the time limit ended it.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
    /// The block's origin and script, for messages.
    pub origin: String,
    pub script: String,
}

impl ShRun {
    /// Exit 0 within the time limit.
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// What ran and what it said (the last [`REPORTED_LINES`] lines of
    /// each output: an etcd the block started logs a lot), for a failure
    /// message.
    pub fn report(&self) -> String {
        format!(
            "{} (exit {:?}{}, {:.1} s):\n--- script ---\n{}--- stdout ---\n{}--- stderr ---\n{}",
            self.origin,
            self.code,
            if self.timed_out { ", TIMED OUT" } else { "" },
            self.took.as_secs_f64(),
            self.script,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

/// How many lines of each output [`ShRun::report`] shows.
pub const REPORTED_LINES: usize = 40;

/// The last [`REPORTED_LINES`] lines of `text`, saying how many went.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines.len().saturating_sub(REPORTED_LINES);
    let mut out = String::new();
    if cut > 0 {
        out.push_str(&format!("[{cut} earlier lines]\n"));
    }
    for line in &lines[cut..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl Shell {
    /// `eco`'s and etcd's directories first on `PATH` (`eco` is the binary
    /// itself), `HOME` and the working directory `dir`, blocks limited to
    /// `limit`.
    pub fn new(eco: &Path, etcd_bin_dir: &Path, dir: &Path, limit: Duration) -> Self {
        let eco_dir = eco.parent().unwrap_or(Path::new("/")).to_path_buf();
        Self {
            path_first: vec![eco_dir, etcd_bin_dir.to_path_buf()],
            home: dir.to_path_buf(),
            cwd: dir.to_path_buf(),
            env: Vec::new(),
            limit,
        }
    }

    /// This shell with `name=value` in the environment too.
    #[must_use]
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    fn path(&self) -> std::ffi::OsString {
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = self.path_first.clone();
        dirs.extend(std::env::split_paths(&inherited));
        std::env::join_paths(dirs).unwrap_or(inherited)
    }

    /// Runs `script` (see [`ShBlock::run`]).
    pub fn run(&self, origin: &str, script: &str) -> anyhow::Result<ShRun> {
        let output = tempfile::Builder::new()
            .prefix("eco-doc-commands-")
            .tempdir()
            .context("a directory for the block's output")?;
        let out_path = output.path().join("stdout");
        let err_path = output.path().join("stderr");
        let out = std::fs::File::create(&out_path).context("the block's stdout file")?;
        let err = std::fs::File::create(&err_path).context("the block's stderr file")?;
        let started = Instant::now();
        let mut child = Command::new("bash")
            .args(["-euo", "pipefail", "-c", script, "doc-block"])
            .current_dir(&self.cwd)
            .env("PATH", self.path())
            .env("HOME", &self.home)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own process group (id = bash's pid): what the block
            // starts in the background is in it too.
            .process_group(0)
            .spawn()
            .context("starting bash")?;
        let group = child.id() as i32;
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for bash")? {
                break Some(status);
            }
            if started.elapsed() >= self.limit {
                timed_out = true;
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let took = started.elapsed();
        // The group, killed by its id (a negative pid): a timed-out block,
        // and whatever a finished one left running.
        kill_group(group);
        if status.is_none() {
            // Reaped, not left a zombie.
            let _ = child.wait();
        }
        let gone = crate::wait_until(Duration::from_secs(10), || {
            live_members(group).is_empty().then_some(())
        });
        anyhow::ensure!(
            gone.is_some(),
            "{origin}: processes of its group outlived SIGKILL: {:?}",
            live_members(group)
        );
        let read = |p: &Path| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .with_context(|| format!("reading {}", p.display()))
        };
        Ok(ShRun {
            code: status.and_then(|s| s.code()),
            timed_out,
            stdout: read(&out_path)?,
            stderr: read(&err_path)?,
            took,
            origin: origin.to_string(),
            script: script.to_string(),
        })
    }
}

/// SIGKILL to every process of the group `group`.
fn kill_group(group: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
    // names the process group.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

/// The processes of group `group` still running (not zombies: an orphan
/// waits for its new parent to reap it, and holds no port meanwhile).
fn live_members(group: i32) -> Vec<i32> {
    crate::process::host_pids()
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp …`: comm may hold spaces.
            let Some((_, after)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            pgrp == Some(group) && state != "Z" && state != "X"
        })
        .collect()
}

/// A `kubectl [-n NAMESPACE] exec POD -- ARGV…` line of a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubectlExec {
    pub namespace: Option<String>,
    pub pod: String,
    /// What runs in the pod, word by word.
    pub argv: Vec<String>,
}

/// Reads a `kubectl [-n NAMESPACE] exec POD -- ARGV…` command (a logical
/// line of an [`ShBlock`]); a trailing `# comment` is dropped. The pod's
/// image has no shell, so the words after `--` are its argument vector
/// as they stand: a line with quotes, `$`, a pipe, a redirection or a glob
/// is refused (it needs a shell this helper does not emulate).
pub fn kubectl_exec(line: &str) -> anyhow::Result<KubectlExec> {
    let mut words = line
        .split_whitespace()
        .take_while(|w| !w.starts_with('#'))
        .peekable();
    anyhow::ensure!(
        words.next() == Some("kubectl"),
        "not a kubectl command: {line}"
    );
    let mut namespace = None;
    loop {
        match words.next() {
            Some("-n") | Some("--namespace") => {
                namespace = Some(words.next().context("-n without a namespace")?.to_string());
            }
            Some("exec") => break,
            other => anyhow::bail!("expected `kubectl [-n NS] exec`, found {other:?} in: {line}"),
        }
    }
    let pod = words.next().context("exec without a pod")?.to_string();
    anyhow::ensure!(
        words.next() == Some("--"),
        "expected `--` after the pod in: {line}"
    );
    let argv: Vec<String> = words.map(str::to_string).collect();
    anyhow::ensure!(!argv.is_empty(), "nothing to run in: {line}");
    if let Some(word) = argv.iter().find(|w| {
        w.contains([
            '\'', '"', '$', '`', '|', '&', ';', '<', '>', '*', '?', '~', '\\',
        ])
    }) {
        anyhow::bail!("{word:?} needs a shell, which the pod has not: {line}");
    }
    Ok(KubectlExec {
        namespace,
        pod,
        argv,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Title\n\
        \n\
        ## One\n\
        \n\
        ```sh\n\
        eco restore --from a.db \\\n\
        \x20           --data-dir /var/tmp/x   # the target\n\
        # another\n\
        echo hi\n\
        ```\n\
        \n\
        ```\n\
        not sh\n\
        ```\n\
        \n\
        ### One, deeper\n\
        \n\
        1. In a list:\n\
        \x20  ```sh\n\
        \x20  kubectl -n etcd exec eco-0 -- eco status --config /etc/eco/eco.toml\n\
        \x20  ```\n\
        \n\
        ## Two\n\
        \n\
        ```sh\n\
        # ## not a heading\n\
        echo two\n\
        ```\n";

    #[test]
    fn a_section_gives_its_sh_blocks_with_continuations_joined() {
        let blocks = blocks_of(DOC, "doc.md", "One").unwrap();
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!(
            blocks[0].lines,
            [
                "eco restore --from a.db --data-dir /var/tmp/x   # the target",
                "# another",
                "echo hi"
            ]
        );
        assert_eq!(blocks[0].origin, "doc.md, \"One\", sh block 1");
        assert_eq!(
            blocks[1].lines,
            ["kubectl -n etcd exec eco-0 -- eco status --config /etc/eco/eco.toml"]
        );
        let two = blocks_of(DOC, "doc.md", "Two").unwrap();
        assert_eq!(two.len(), 1);
        assert_eq!(two[0].commands(), ["echo two"]);
    }

    #[test]
    fn a_missing_or_ambiguous_heading_and_an_open_fence_are_errors() {
        assert!(blocks_of(DOC, "doc.md", "Three").is_err());
        let twice = format!("{DOC}\n## Two\n");
        assert!(blocks_of(&twice, "doc.md", "Two").is_err());
        assert!(blocks_of("## A\n```sh\necho\n", "doc.md", "A").is_err());
    }

    #[test]
    fn a_block_splits_into_its_commands_with_their_comments() {
        let blocks = blocks_of(DOC, "doc.md", "One").unwrap();
        let split = blocks[0].per_command();
        assert_eq!(split.len(), 2);
        assert_eq!(split[1].lines, ["# another", "echo hi"]);
        assert_eq!(split[1].origin, "doc.md, \"One\", sh block 1, command 2");
    }

    #[test]
    fn an_example_is_replaced_everywhere_and_must_be_there() {
        let block = ShBlock {
            origin: "t".into(),
            lines: vec!["a /var/tmp/x b /var/tmp/x".into()],
        };
        let block = block.replace_example("/var/tmp/x", "/real");
        assert_eq!(block.lines, ["a /real b /real"]);
        let missing =
            std::panic::catch_unwind(|| block.clone().replace_example("/var/tmp/x", "/y"));
        assert!(missing.is_err(), "a missing example must fail");
    }

    #[test]
    fn a_kubectl_exec_line_gives_its_pod_and_argv() {
        let k = kubectl_exec(
            "kubectl -n etcd exec eco-0 -- eco status --config /etc/eco/eco.toml   # wait",
        )
        .unwrap();
        assert_eq!(k.namespace.as_deref(), Some("etcd"));
        assert_eq!(k.pod, "eco-0");
        assert_eq!(k.argv, ["eco", "status", "--config", "/etc/eco/eco.toml"]);
        assert!(kubectl_exec("kubectl exec eco-0 -- eco certs client --out - | tar -x").is_err());
        assert!(kubectl_exec("kubectl get pods").is_err());
    }

    #[test]
    fn a_block_runs_bounded_and_takes_its_background_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let shell = Shell {
            path_first: Vec::new(),
            home: dir.path().to_path_buf(),
            cwd: dir.path().to_path_buf(),
            env: vec![("GREETING".into(), "hello".into())],
            limit: Duration::from_secs(5),
        };
        let ok = shell
            .run("t", "sleep 600 &\necho \"$GREETING\" ~\n")
            .unwrap();
        assert!(ok.success(), "{}", ok.report());
        assert_eq!(
            ok.stdout.trim(),
            format!("hello {}", dir.path().display()),
            "the environment and HOME"
        );
        let failed = shell.run("t", "false\necho not reached\n").unwrap();
        assert_eq!(failed.code, Some(1));
        assert!(failed.stdout.is_empty(), "-e stops at the first failure");
        let unset = shell.run("t", "echo \"$NOT_SET\"\n").unwrap();
        assert!(!unset.success(), "-u refuses an unset variable");
        let slow = Shell {
            limit: Duration::from_millis(300),
            ..shell
        }
        .run("t", "sleep 600\n")
        .unwrap();
        assert!(slow.timed_out && !slow.success(), "{}", slow.report());
    }
}
