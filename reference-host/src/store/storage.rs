//! The run and event store: one SQLite `:memory:` connection.
//!
//! The connection sits behind a `std::sync::Mutex` that is locked for exactly
//! one statement or transaction and never held across an `.await`: the guard
//! lives only inside these synchronous methods. That keeps concurrent requests
//! genuinely concurrent, so later atomic effect claims race for real and must
//! be made atomic by SQL, not by a host-wide lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::Value;
use tokio::sync::watch;

use crate::base::events::{NewEvent, RunEventDoc, SCHEMA_VERSION, new_event_id, now_rfc3339};
use crate::base::principals::DEFAULT_TENANT;

/// Room in each connection's prepared-statement cache: more than the store's
/// distinct statements (about 50).
const STATEMENT_CACHE_CAPACITY: usize = 128;

/// Statements run through the connection's prepared-statement cache.
///
/// `Connection::execute` and `query_row` parse their SQL anew on every call;
/// SQLite's parser was some 10% of a suite run's CPU. The store's statements
/// are all static text, so each is parsed once per connection.
pub trait Cached {
    /// [`Connection::execute`], with the statement cached.
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// [`Connection::query_row`], with the statement cached.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// A store failure (always answered as `internal_error`).
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored value could not be read back.
    #[error("corrupt stored value in {column}: {problem}")]
    Corrupt {
        /// The column holding the bad value.
        column: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// The file name of the durable store inside `--data-dir`.
pub const STORE_FILE: &str = "reference-host.sqlite3";

/// `PRAGMA user_version` of a store this host created. A database with any
/// other (non-zero) version is somebody else's, or an older layout: it is
/// refused, never migrated in place or reset. Version 2 keys effect claims
/// by (effect id, claim scope) (EFF-10); version 3 stores a fork's
/// `fromSeq` with its mode, which the webhook fan-out reads (RPL-8);
/// version 4 adds `node_records`, the recorded outcomes of pack node
/// dispatches that a replay fork serves (RPL-2, RPL-4), and the knowledge
/// store of turn runs (TRUST-2).
pub const STORE_SCHEMA_VERSION: i64 = 4;

/// Why the durable store could not be opened. Every message names the file
/// or directory and says what would fix it; nothing is reset or overwritten.
#[derive(Debug, thiserror::Error)]
pub enum StoreOpenError {
    /// `--data-dir` does not exist or is not a directory.
    #[error(
        "data dir {} does not exist or is not a directory; create it (mkdir -p) or pass an existing directory to --data-dir",
        dir.display()
    )]
    DirMissing {
        /// The directory given.
        dir: PathBuf,
    },
    /// The store file exists but is not a SQLite database.
    #[error(
        "{} is not a SQLite database ({problem}); move it away or pass another --data-dir (the host never overwrites it)",
        file.display()
    )]
    NotADatabase {
        /// The file.
        file: PathBuf,
        /// What SQLite said.
        problem: String,
    },
    /// The store file is a SQLite database of another schema version.
    #[error(
        "{} has schema version {found} (PRAGMA user_version), not this host's {expected}; pass a fresh --data-dir or move the file away (the host never migrates or resets it)",
        file.display()
    )]
    ForeignSchema {
        /// The file.
        file: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// Ours.
        expected: i64,
    },
    /// SQLite failed while opening or preparing the file.
    #[error("cannot open the store {}: {source}; check its permissions and free space", file.display())]
    Sqlite {
        /// The file.
        file: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
}

/// The lifecycle state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Work is in progress.
    Running,
    /// A tool call is held for approval at [`RunRecord::current_node_id`]
    /// (TTC §C); the loop is paused until the interrupt is resolved or
    /// expires.
    WaitingApproval,
    /// The tool loop asked the user a question through its clarification
    /// tool (TURN-E1) and waits for the answers at
    /// [`RunRecord::current_node_id`].
    WaitingInput,
    /// Finished successfully.
    Completed,
    /// Finished unsuccessfully.
    Failed,
    /// Stopped by `POST /runs/{runId}:cancel`.
    Cancelled,
}

impl RunStatus {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::WaitingApproval => "waiting-approval",
            Self::WaitingInput => "waiting-input",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses a wire string.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "running" => Some(Self::Running),
            "waiting-approval" => Some(Self::WaitingApproval),
            "waiting-input" => Some(Self::WaitingInput),
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }

    /// Whether no further events will be appended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// Run id.
    pub run_id: String,
    /// Current status.
    pub status: RunStatus,
    /// The principal the run is attributed to.
    pub principal: String,
    /// The tenant the run belongs to: only callers of this tenant can see
    /// the run, its events and its effects.
    pub tenant: String,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// Why the run failed (`{code, message}`), for failed runs only.
    pub error: Option<Value>,
    /// The node the run is paused at, while it is `waiting-approval` or
    /// `waiting-input`.
    pub current_node_id: Option<String>,
}

/// Told after every committed write; the store's one outward hook.
///
/// The store knows no domain module: whoever must react to a commit (the
/// webhook fan-out, RPL-8) registers here instead of being imported.
pub trait CommitListener: std::fmt::Debug + Send + Sync {
    /// Called after every commit, outside the connection lock; must not wait
    /// on anything slow (it runs on the writer's thread).
    fn committed(&self, store: &Storage);
}

/// The schema SQL of one module that keeps tables in the store.
///
/// Each domain module that owns tables exports one; the host hands the list
/// to [`Storage::open_in_memory`] / [`Storage::open_dir`], so the store runs
/// SQL it never has to import.
pub type Schema = &'static str;

/// The SQLite-backed store plus change signals for long polls and streams.
#[derive(Debug)]
pub struct Storage {
    conn: Mutex<Connection>,
    /// Bumped after every committed write (any run).
    changes: watch::Sender<u64>,
    /// One signal per run, bumped after every committed write to that run,
    /// so a waiter on one run is not woken by every other run's traffic.
    run_changes: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Told after every commit (the webhook fan-out, RPL-8).
    listener: OnceLock<Arc<dyn CommitListener>>,
}

const SCHEMA: &str = "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    principal TEXT NOT NULL,
    tenant TEXT NOT NULL,
    created_at TEXT NOT NULL,
    error TEXT NULL,
    current_node_id TEXT NULL
);
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    sequence INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    node_id TEXT NULL,
    causation_id TEXT NULL,
    payload TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);
";

impl Storage {
    /// Opens a fresh in-memory store with the run and event tables and
    /// every one of `schemas` in place.
    pub fn open_in_memory(schemas: &[Schema]) -> Result<Self, StorageError> {
        let conn = Connection::open_in_memory()?;
        create_schema(&conn, schemas)?;
        Ok(Self::wrap(conn))
    }

    /// Opens (or, in an empty directory, creates) the durable store
    /// `dir/reference-host.sqlite3` in WAL mode. `synchronous=NORMAL`: a
    /// committed transaction survives the process being killed (SIGKILL),
    /// which is what same-attempt recovery needs (TURN-D7).
    ///
    /// A missing directory, a file that is not SQLite, or a database of
    /// another schema version is an error naming the path; nothing is
    /// reset or overwritten. `schemas` are created with a fresh file (see
    /// [`Storage::open_in_memory`]).
    pub fn open_dir(dir: &Path, schemas: &[Schema]) -> Result<Self, StoreOpenError> {
        if !dir.is_dir() {
            return Err(StoreOpenError::DirMissing {
                dir: dir.to_owned(),
            });
        }
        let file = dir.join(STORE_FILE);
        let sqlite = |source: rusqlite::Error| StoreOpenError::Sqlite {
            file: file.clone(),
            source,
        };
        let conn = Connection::open(&file).map_err(sqlite)?;
        // The first read of the header tells a foreign file apart.
        let version: i64 = match conn.query_row_cached("PRAGMA user_version", [], |row| row.get(0))
        {
            Ok(version) => version,
            Err(err) if is_not_a_database(&err) => {
                return Err(StoreOpenError::NotADatabase {
                    file,
                    problem: err.to_string(),
                });
            }
            Err(err) => return Err(sqlite(err)),
        };
        let tables: i64 = conn
            .query_row_cached("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get(0))
            .map_err(|err| {
                if is_not_a_database(&err) {
                    StoreOpenError::NotADatabase {
                        file: file.clone(),
                        problem: err.to_string(),
                    }
                } else {
                    sqlite(err)
                }
            })?;
        if version == 0 && tables == 0 {
            // A fresh (or empty) file: ours to create.
            let _: String = conn
                .query_row_cached("PRAGMA journal_mode=WAL", [], |row| row.get(0))
                .map_err(sqlite)?;
            conn.execute_batch("PRAGMA synchronous=NORMAL;")
                .map_err(sqlite)?;
            let created = (|| -> Result<(), StorageError> {
                create_schema(&conn, schemas)?;
                conn.execute_batch(&format!("PRAGMA user_version = {STORE_SCHEMA_VERSION};"))?;
                Ok(())
            })();
            created.map_err(|err| match err {
                StorageError::Sqlite(source) => sqlite(source),
                StorageError::Corrupt { problem, .. } => StoreOpenError::NotADatabase {
                    file: file.clone(),
                    problem,
                },
            })?;
        } else if version != STORE_SCHEMA_VERSION {
            return Err(StoreOpenError::ForeignSchema {
                file,
                found: version,
                expected: STORE_SCHEMA_VERSION,
            });
        } else {
            let _: String = conn
                .query_row_cached("PRAGMA journal_mode=WAL", [], |row| row.get(0))
                .map_err(sqlite)?;
            conn.execute_batch("PRAGMA synchronous=NORMAL;")
                .map_err(sqlite)?;
        }
        let storage = Self::wrap(conn);
        // Existing runs get their change signals, so long polls and streams
        // of runs created before the restart wake up too.
        let ids = storage
            .with_conn(|conn| {
                let mut statement = conn.prepare("SELECT run_id FROM runs")?;
                statement
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|err| match err {
                StorageError::Sqlite(source) => sqlite(source),
                StorageError::Corrupt { problem, .. } => StoreOpenError::NotADatabase {
                    file: dir.join(STORE_FILE),
                    problem,
                },
            })?;
        {
            let mut signals = storage.run_signals();
            for id in ids {
                signals.insert(id, watch::Sender::new(0));
            }
        }
        Ok(storage)
    }

    fn wrap(conn: Connection) -> Self {
        // Every statement of the store goes through the cache (see [`Cached`]);
        // room for all of them, so none is evicted and parsed again.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        Self {
            conn: Mutex::new(conn),
            changes: watch::Sender::new(0),
            run_changes: Mutex::new(HashMap::new()),
            listener: OnceLock::new(),
        }
    }

    /// Registers the one [`CommitListener`]; `false` (and no change) when
    /// one is registered already.
    pub fn set_commit_listener(&self, listener: Arc<dyn CommitListener>) -> bool {
        self.listener.set(listener).is_ok()
    }

    /// Runs that were in flight (`running`, `waiting-approval` or
    /// `waiting-input`) when the
    /// store was last written, oldest first (start-up recovery, TURN-D7).
    pub fn runs_in_flight(&self) -> Result<Vec<RunRecord>, StorageError> {
        let ids = self.with_conn(|conn| {
            let mut statement = conn.prepare(
                "SELECT run_id FROM runs WHERE status IN ('running', 'waiting-approval', 'waiting-input')
                 ORDER BY created_at, run_id",
            )?;
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(run) = self.run(&id)? {
                runs.push(run);
            }
        }
        Ok(runs)
    }

    /// Every run (of any tenant) whose id starts with `prefix`, oldest
    /// first. Callers filter by tenant: the A2A task listing is the one
    /// user, and it lists only runs it projected.
    pub fn runs_with_prefix(&self, prefix: &str) -> Result<Vec<RunRecord>, StorageError> {
        // A plain prefix compare: in LIKE, the `_` of `run_a2a_` would match
        // any character.
        let ids = self.with_conn(|conn| {
            let mut statement = conn.prepare(
                "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1
                 ORDER BY created_at, run_id",
            )?;
            statement
                .query_map(params![prefix], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })?;
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(run) = self.run(&id)? {
                runs.push(run);
            }
        }
        Ok(runs)
    }

    /// Appends `event` and runs `also` in the SAME transaction, so a record
    /// of the invocation log and the event that reports it commit together
    /// (TURN-D3). If `also` fails, neither is written.
    pub fn append_event_with<T>(
        &self,
        run_id: &str,
        event: NewEvent,
        also: impl FnOnce(&Transaction<'_>, &RunEventDoc) -> Result<T, StorageError>,
    ) -> Result<(RunEventDoc, T), StorageError> {
        let done = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let doc = insert_event(&tx, run_id, event)?;
            let extra = also(&tx, &doc)?;
            tx.commit()?;
            (doc, extra)
        };
        self.notify(run_id);
        Ok(done)
    }

    /// Runs `work` with the connection locked for exactly this call, which
    /// must be ONE statement or ONE transaction. `work` is synchronous, so
    /// the lock can never be held across an `.await`: concurrent executors
    /// stay concurrent and every atomicity guarantee has to come from SQL.
    pub(crate) fn with_conn<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StorageError> {
        Ok(work(&mut self.conn())?)
    }

    /// Locks the connection for one statement or transaction.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A poisoned lock only means another thread panicked mid-call; SQLite
        // rolled back any open transaction when it was dropped, so the
        // connection is still consistent and safe to reuse.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The per-run signal map (locked only for a lookup or insert).
    fn run_signals(&self) -> MutexGuard<'_, HashMap<String, watch::Sender<u64>>> {
        // Poisoning cannot leave the map inconsistent (each operation is a
        // single insert or lookup), so the map is reused as it is.
        self.run_changes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes waiters after a committed write to `run_id`.
    fn notify(&self, run_id: &str) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        if let Some(signal) = self.run_signals().get(run_id) {
            signal.send_modify(|n| *n = n.wrapping_add(1));
        }
        // Every append path ends here after its commit: the ONE place the
        // webhook fan-out is fed (RPL-8). It never waits for deliveries.
        if let Some(listener) = self.listener.get() {
            listener.committed(self);
        }
    }

    /// A receiver that changes whenever a write commits.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A receiver that changes whenever a write to `run_id` commits, or
    /// `None` when the run does not exist. Subscribe before reading, so a
    /// write between the read and the wait still wakes the waiter.
    pub fn subscribe_run(&self, run_id: &str) -> Option<watch::Receiver<u64>> {
        self.run_signals().get(run_id).map(watch::Sender::subscribe)
    }

    /// Creates a run in status `running` in [`DEFAULT_TENANT`].
    pub fn create_run(&self, run_id: &str, principal: &str) -> Result<RunRecord, StorageError> {
        self.create_run_in(run_id, principal, DEFAULT_TENANT)
    }

    /// Creates a run in status `running` belonging to `tenant`.
    pub fn create_run_in(
        &self,
        run_id: &str,
        principal: &str,
        tenant: &str,
    ) -> Result<RunRecord, StorageError> {
        let record = RunRecord {
            run_id: run_id.to_owned(),
            status: RunStatus::Running,
            principal: principal.to_owned(),
            tenant: tenant.to_owned(),
            created_at: now_rfc3339(),
            error: None,
            current_node_id: None,
        };
        self.conn().execute_cached(
            "INSERT INTO runs (run_id, status, principal, tenant, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                record.run_id,
                record.status.as_str(),
                record.principal,
                record.tenant,
                record.created_at
            ],
        )?;
        self.run_signals()
            .insert(record.run_id.clone(), watch::Sender::new(0));
        self.notify(run_id);
        Ok(record)
    }

    /// Sets a run's status.
    pub fn set_run_status(&self, run_id: &str, status: RunStatus) -> Result<(), StorageError> {
        self.set_run_outcome(run_id, status, None)
    }

    /// Sets a run's status and, for a failed run, why it failed.
    pub fn set_run_outcome(
        &self,
        run_id: &str,
        status: RunStatus,
        error: Option<&Value>,
    ) -> Result<(), StorageError> {
        let error_text = error.map(encode).transpose()?;
        self.conn().execute_cached(
            "UPDATE runs SET status = ?2, error = ?3, current_node_id = NULL WHERE run_id = ?1",
            params![run_id, status.as_str(), error_text],
        )?;
        self.notify(run_id);
        Ok(())
    }

    /// Appends the run's terminal event and settles its status (and error)
    /// in ONE transaction: a reader that sees the terminal status also sees
    /// the terminal event, so a stream that stops at "terminal" never drops
    /// the last event.
    pub fn finish_run(
        &self,
        run_id: &str,
        status: RunStatus,
        error: Option<&Value>,
        event: NewEvent,
    ) -> Result<RunEventDoc, StorageError> {
        let error_text = error.map(encode).transpose()?;
        let doc = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let doc = insert_event(&tx, run_id, event)?;
            tx.execute_cached(
                "UPDATE runs SET status = ?2, error = ?3, current_node_id = NULL WHERE run_id = ?1",
                params![run_id, status.as_str(), error_text],
            )?;
            tx.commit()?;
            doc
        };
        self.notify(run_id);
        Ok(doc)
    }

    /// Appends `event` and moves a non-terminal run to `status` (at
    /// `current_node_id`, or none) in ONE transaction, so a reader that sees
    /// `waiting-approval` also sees the `interrupt.requested` that caused
    /// it, and one that sees the run `running` again also sees
    /// `interrupt.resolved`. A terminal run is left as it is (its event is
    /// still appended): nothing revives a finished run.
    pub fn append_event_with_status(
        &self,
        run_id: &str,
        status: RunStatus,
        current_node_id: Option<&str>,
        event: NewEvent,
    ) -> Result<RunEventDoc, StorageError> {
        let doc = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let doc = insert_event(&tx, run_id, event)?;
            tx.execute_cached(
                "UPDATE runs SET status = ?2, current_node_id = ?3
                 WHERE run_id = ?1 AND status IN ('running', 'waiting-approval', 'waiting-input')",
                params![run_id, status.as_str(), current_node_id],
            )?;
            tx.commit()?;
            doc
        };
        self.notify(run_id);
        Ok(doc)
    }

    /// The run with this id, if any.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRecord>, StorageError> {
        let row = self
            .conn()
            .query_row_cached(
                "SELECT run_id, status, principal, tenant, created_at, error, current_node_id
                 FROM runs WHERE run_id = ?1",
                params![run_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, Option<String>>(5)?,
                        row.get::<_, Option<String>>(6)?,
                    ))
                },
            )
            .optional()?;
        row.map(
            |(run_id, status, principal, tenant, created_at, error, current_node_id)| {
                let status = RunStatus::parse(&status).ok_or_else(|| StorageError::Corrupt {
                    column: "runs.status",
                    problem: format!("unknown status `{status}`"),
                })?;
                let error = error.map(|text| decode("runs.error", &text)).transpose()?;
                Ok(RunRecord {
                    run_id,
                    status,
                    principal,
                    tenant,
                    created_at,
                    error,
                    current_node_id,
                })
            },
        )
        .transpose()
    }

    /// Appends an event at the run's next sequence number.
    ///
    /// The sequence is computed and the row inserted in one transaction, so
    /// concurrent appends to one run can never share or skip a number.
    pub fn append_event(&self, run_id: &str, event: NewEvent) -> Result<RunEventDoc, StorageError> {
        let doc = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let doc = insert_event(&tx, run_id, event)?;
            tx.commit()?;
            doc
        };
        self.notify(run_id);
        Ok(doc)
    }

    /// Appends the event `build` returns for the slot it will occupy: its
    /// id and sequence are fixed first, so the payload may name them (a
    /// `replay.diverged` event names its own `eventId` and the source
    /// event at its sequence, RPL-7). `build` runs inside the append's
    /// transaction and may read other rows through it; if it fails, nothing
    /// is written.
    pub fn append_event_in_slot(
        &self,
        run_id: &str,
        build: impl FnOnce(&Transaction<'_>, &EventSlot) -> Result<NewEvent, StorageError>,
    ) -> Result<RunEventDoc, StorageError> {
        let doc = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let slot = EventSlot {
                event_id: new_event_id(),
                sequence: next_sequence(&tx, run_id)?,
            };
            let event = build(&tx, &slot)?;
            let doc = insert_event_at(&tx, run_id, event, slot)?;
            tx.commit()?;
            doc
        };
        self.notify(run_id);
        Ok(doc)
    }

    /// Copies `source_run_id`'s events with `sequence <= through` into the
    /// run `dest_run_id` (which has no events yet), in order and in ONE
    /// transaction: the same sequence, type, payload and nodeId; a new
    /// eventId and timestamp; a causationId naming a copied event is
    /// remapped to that event's copy. A branch fork inherits its source's
    /// history this way (EFF-10).
    pub fn copy_events(
        &self,
        source_run_id: &str,
        dest_run_id: &str,
        through: i64,
    ) -> Result<Vec<RunEventDoc>, StorageError> {
        let prefix: Vec<RunEventDoc> = self
            .events_after(source_run_id, -1)?
            .into_iter()
            .filter(|event| event.sequence <= through)
            .collect();
        let copies = {
            let mut conn = self.conn();
            let tx = conn.transaction()?;
            let mut renamed: HashMap<String, String> = HashMap::new();
            let mut copies = Vec::with_capacity(prefix.len());
            for event in prefix {
                let slot = EventSlot {
                    event_id: new_event_id(),
                    sequence: next_sequence(&tx, dest_run_id)?,
                };
                renamed.insert(event.event_id.clone(), slot.event_id.clone());
                let causation_id = event
                    .causation_id
                    .map(|cause| renamed.get(&cause).cloned().unwrap_or(cause));
                let doc = RunEventDoc {
                    event_id: slot.event_id,
                    run_id: dest_run_id.to_owned(),
                    event_type: event.event_type,
                    payload: event.payload,
                    timestamp: now_rfc3339(),
                    sequence: slot.sequence,
                    schema_version: SCHEMA_VERSION,
                    node_id: event.node_id,
                    causation_id,
                };
                write_event(&tx, &doc)?;
                copies.push(doc);
            }
            tx.commit()?;
            copies
        };
        self.notify(dest_run_id);
        Ok(copies)
    }

    /// The run's events with `sequence > after`, in sequence order.
    pub fn events_after(&self, run_id: &str, after: i64) -> Result<Vec<RunEventDoc>, StorageError> {
        let rows = {
            let conn = self.conn();
            let mut statement = conn.prepare_cached(
                "SELECT event_id, type, node_id, causation_id, payload, timestamp, sequence
                 FROM events WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence",
            )?;
            statement
                .query_map(params![run_id, after], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, String>(5)?,
                        row.get::<_, i64>(6)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?
        };
        rows.into_iter()
            .map(
                |(event_id, event_type, node_id, causation_id, payload, timestamp, sequence)| {
                    let payload = decode("events.payload", &payload)?;
                    Ok(RunEventDoc {
                        event_id,
                        run_id: run_id.to_owned(),
                        event_type,
                        payload,
                        timestamp,
                        sequence,
                        schema_version: SCHEMA_VERSION,
                        node_id,
                        causation_id,
                    })
                },
            )
            .collect()
    }
}

/// Creates every table of the store (each concept owns its own; they share
/// one connection so a claim and the run it belongs to live in one store).
fn create_schema(conn: &Connection, schemas: &[Schema]) -> Result<(), StorageError> {
    conn.execute_batch(SCHEMA)?;
    for schema in schemas {
        conn.execute_batch(schema)?;
    }
    Ok(())
}

/// Whether SQLite says the file is not a database (or is encrypted).
fn is_not_a_database(err: &rusqlite::Error) -> bool {
    matches!(
        err,
        rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::NotADatabase
    )
}

/// Where an event is about to be appended: its id and sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSlot {
    /// The event's id (`evt_` + uuid).
    pub event_id: String,
    /// The event's sequence in its run.
    pub sequence: i64,
}

/// Inserts `event` at the run's next sequence inside `tx`.
pub(crate) fn insert_event(
    tx: &Transaction<'_>,
    run_id: &str,
    event: NewEvent,
) -> Result<RunEventDoc, StorageError> {
    let slot = EventSlot {
        event_id: new_event_id(),
        sequence: next_sequence(tx, run_id)?,
    };
    insert_event_at(tx, run_id, event, slot)
}

/// The run's next sequence number (0 for a run with no events).
fn next_sequence(tx: &Transaction<'_>, run_id: &str) -> Result<i64, StorageError> {
    Ok(tx.query_row_cached(
        "SELECT COALESCE(MAX(sequence), -1) + 1 FROM events WHERE run_id = ?1",
        params![run_id],
        |row| row.get(0),
    )?)
}

/// Inserts `event` into `slot` (which must be the run's next sequence).
fn insert_event_at(
    tx: &Transaction<'_>,
    run_id: &str,
    event: NewEvent,
    slot: EventSlot,
) -> Result<RunEventDoc, StorageError> {
    let doc = RunEventDoc {
        event_id: slot.event_id,
        run_id: run_id.to_owned(),
        event_type: event.event_type.to_owned(),
        payload: event.payload,
        timestamp: now_rfc3339(),
        sequence: slot.sequence,
        schema_version: SCHEMA_VERSION,
        node_id: event.node_id,
        causation_id: event.causation_id,
    };
    write_event(tx, &doc)?;
    Ok(doc)
}

/// Writes the row of `doc` (whose sequence must be its run's next).
fn write_event(tx: &Transaction<'_>, doc: &RunEventDoc) -> Result<(), StorageError> {
    let payload_text = encode(&doc.payload)?;
    tx.execute_cached(
        "INSERT INTO events (run_id, sequence, event_id, type, node_id, causation_id, payload, timestamp)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            doc.run_id,
            doc.sequence,
            doc.event_id,
            doc.event_type,
            doc.node_id,
            doc.causation_id,
            payload_text,
            doc.timestamp
        ],
    )?;
    Ok(())
}

/// The id of `run_id`'s event at `sequence`, or, when the run has no event
/// there, of its last event before it (`None` for a run with no events at
/// or before `sequence`).
pub(crate) fn event_id_at_or_before(
    tx: &Transaction<'_>,
    run_id: &str,
    sequence: i64,
) -> Result<Option<String>, StorageError> {
    Ok(tx
        .query_row_cached(
            "SELECT event_id FROM events WHERE run_id = ?1 AND sequence <= ?2
             ORDER BY sequence DESC LIMIT 1",
            params![run_id, sequence],
            |row| row.get(0),
        )
        .optional()?)
}

/// JSON text of a value to store.
fn encode(value: &Value) -> Result<String, StorageError> {
    serde_json::to_string(value).map_err(|e| StorageError::Corrupt {
        column: "json",
        problem: e.to_string(),
    })
}

/// A stored JSON text read back.
fn decode(column: &'static str, text: &str) -> Result<Value, StorageError> {
    serde_json::from_str(text).map_err(|e| StorageError::Corrupt {
        column,
        problem: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::events::TOOL_CALLED;
    use serde_json::json;

    #[test]
    fn runs_round_trip_and_status_updates() {
        let store = Storage::open_in_memory(&[]).expect("open");
        assert_eq!(store.run("run_x").expect("query"), None);
        store.create_run("run_x", "alice").expect("create");
        let run = store.run("run_x").expect("query").expect("exists");
        assert_eq!(run.status, RunStatus::Running);
        assert_eq!(run.principal, "alice");
        assert_eq!(run.tenant, DEFAULT_TENANT);
        store
            .create_run_in("run_y", "erin", "tenant-b")
            .expect("create");
        let other = store.run("run_y").expect("query").expect("exists");
        assert_eq!(other.tenant, "tenant-b");
        store
            .set_run_status("run_x", RunStatus::Failed)
            .expect("update");
        let run = store.run("run_x").expect("query").expect("exists");
        assert_eq!(run.status, RunStatus::Failed);
        assert!(run.status.is_terminal());
    }

    #[test]
    fn sequences_start_at_zero_and_increase_per_run() {
        let store = Storage::open_in_memory(&[]).expect("open");
        store.create_run("a", "p").expect("create");
        store.create_run("b", "p").expect("create");
        for i in 0..3 {
            let doc = store
                .append_event("a", NewEvent::new(TOOL_CALLED, json!({"i": i})))
                .expect("append");
            assert_eq!(doc.sequence, i);
        }
        let first_b = store
            .append_event("b", NewEvent::new(TOOL_CALLED, json!({})))
            .expect("append");
        assert_eq!(first_b.sequence, 0);

        let all = store.events_after("a", -1).expect("read");
        assert_eq!(
            all.iter().map(|e| e.sequence).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(all[2].payload, json!({"i": 2}));
        let tail = store.events_after("a", 1).expect("read");
        assert_eq!(tail.len(), 1);
        assert_eq!(tail[0].sequence, 2);
    }

    #[test]
    fn finishing_a_run_appends_the_event_and_sets_the_error_together() {
        let store = Storage::open_in_memory(&[]).expect("open");
        store.create_run("a", "p").expect("create");
        let mut signal = store.subscribe_run("a").expect("known run");
        signal.mark_unchanged();
        let error = json!({"code": "refhost.model_refused", "message": "no"});
        let doc = store
            .finish_run(
                "a",
                RunStatus::Failed,
                Some(&error),
                NewEvent::new("run.failed", json!({"error": error})),
            )
            .expect("finish");
        assert_eq!(doc.sequence, 0);
        assert!(signal.has_changed().expect("open"));
        let run = store.run("a").expect("query").expect("exists");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.error, Some(error));
        assert!(store.subscribe_run("nope").is_none());
    }

    #[test]
    fn status_events_pause_and_resume_but_never_revive_a_finished_run() {
        let store = Storage::open_in_memory(&[]).expect("open");
        store.create_run("a", "p").expect("create");
        store
            .append_event_with_status(
                "a",
                RunStatus::WaitingApproval,
                Some("agent"),
                NewEvent::new("interrupt.requested", json!({})),
            )
            .expect("pause");
        let run = store.run("a").expect("query").expect("exists");
        assert_eq!(run.status, RunStatus::WaitingApproval);
        assert_eq!(run.status.as_str(), "waiting-approval");
        assert_eq!(RunStatus::parse("waiting-approval"), Some(run.status));
        assert!(!run.status.is_terminal());
        assert_eq!(run.current_node_id.as_deref(), Some("agent"));
        store
            .finish_run(
                "a",
                RunStatus::Failed,
                None,
                NewEvent::new("run.failed", json!({})),
            )
            .expect("finish");
        store
            .append_event_with_status(
                "a",
                RunStatus::Running,
                None,
                NewEvent::new("interrupt.resolved", json!({})),
            )
            .expect("late event");
        let run = store.run("a").expect("query").expect("exists");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.current_node_id, None);
    }

    #[test]
    fn run_signals_are_per_run() {
        let store = Storage::open_in_memory(&[]).expect("open");
        store.create_run("a", "p").expect("create");
        store.create_run("b", "p").expect("create");
        let mut a = store.subscribe_run("a").expect("a");
        a.mark_unchanged();
        store
            .append_event("b", NewEvent::new(TOOL_CALLED, json!({})))
            .expect("append");
        assert!(!a.has_changed().expect("open"));
        store
            .append_event("a", NewEvent::new(TOOL_CALLED, json!({})))
            .expect("append");
        assert!(a.has_changed().expect("open"));
    }

    #[test]
    fn writes_bump_the_change_signal() {
        let store = Storage::open_in_memory(&[]).expect("open");
        let rx = store.subscribe();
        let before = *rx.borrow();
        store.create_run("a", "p").expect("create");
        assert_ne!(*rx.borrow(), before);
    }
}
