// lib/history/history_store.cc — see history_store.h.
#include "lib/history/history_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace sightline::history {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS sightline_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  added_at INTEGER NOT NULL,
  source TEXT NOT NULL,
  step_count INTEGER NOT NULL,
  step_mean_ns REAL, step_p50_ns REAL, step_p99_ns REAL,
  gpu_utilization_pct REAL,
  memory_peak_bytes REAL,
  top_findings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS run_labels(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY(run_id, key));
CREATE INDEX IF NOT EXISTS run_labels_kv ON run_labels(key, value);
)SQL";

// Creates missing parent directories 0700.
absl::Status MakeParents(const std::string& path) {
  size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) {
    std::string dir = path.substr(0, pos);
    struct stat st;
    if (stat(dir.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError("history database '" + path + "': '" + dir +
                                             "' is not a directory");
      }
      continue;
    }
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError("history database '" + path +
                                         "': cannot create the directory '" + dir +
                                         "': " + std::strerror(errno));
    }
  }
  return absl::OkStatus();
}

// The file exists as a regular file (created 0600 when absent). A symlink or
// another kind of file is refused.
absl::Status EnsureRegularFile(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      return absl::FailedPreconditionError("history database '" + path +
                                           "' is a symbolic link; not following it");
    }
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError("history database '" + path +
                                           "' is not a regular file");
    }
    return absl::OkStatus();
  }
  if (errno != ENOENT) {
    return absl::PermissionDeniedError("history database '" + path + "': " +
                                       std::strerror(errno));
  }
  if (absl::Status s = MakeParents(path); !s.ok()) return s;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) {
    return absl::PermissionDeniedError("history database '" + path + "': cannot create it: " +
                                       std::strerror(errno));
  }
  if (fd >= 0) close(fd);
  return absl::OkStatus();
}

std::string JoinFindings(const std::vector<std::string>& findings) {
  std::string out;
  for (const std::string& f : findings) {
    std::string line = f;
    for (char& c : line) {
      if (c == '\n') c = ' ';
    }
    out += line + "\n";
  }
  return out;
}

void BindOptional(sqlite3_stmt* st, int index, double value) {
  if (value < 0) {
    sqlite3_bind_null(st, index);
  } else {
    sqlite3_bind_double(st, index, value);
  }
}

double ColumnOptional(sqlite3_stmt* st, int index) {
  return sqlite3_column_type(st, index) == SQLITE_NULL ? -1 : sqlite3_column_double(st, index);
}

std::string ColumnText(sqlite3_stmt* st, int index) {
  const unsigned char* t = sqlite3_column_text(st, index);
  return t == nullptr ? "" : reinterpret_cast<const char*>(t);
}

// Finalizes a statement on every path.
struct Statement {
  sqlite3_stmt* st = nullptr;
  ~Statement() { sqlite3_finalize(st); }
};

}  // namespace

std::string DefaultDatabasePath() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/sightline/history.db";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/share/sightline/history.db";
  }
  return "sightline-history.db";
}

absl::Status ParseLabel(const std::string& text, std::string* key, std::string* value) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError("label '" + text + "' is not KEY=VALUE");
  }
  *key = text.substr(0, eq);
  *value = text.substr(eq + 1);
  for (char c : *key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      return absl::InvalidArgumentError("label key '" + *key +
                                        "' may hold only letters, digits, '_', '-' and '.'");
    }
  }
  return absl::OkStatus();
}

absl::Status HistoryStore::Error(int rc, const char* what) const {
  int primary = rc & 0xff;
  std::string detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string prefix = "history database '" + path_ + "': ";
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return absl::UnavailableError(prefix + "locked by another process (" + what +
                                  " waited and gave up); try again when it has finished");
  }
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return absl::DataLossError(prefix + "not a SQLite database or corrupt (" + detail +
                               "); it was left untouched — move it aside or use --db");
  }
  if (primary == SQLITE_READONLY || primary == SQLITE_PERM || primary == SQLITE_CANTOPEN) {
    return absl::PermissionDeniedError(prefix + what + ": " + detail);
  }
  return absl::InternalError(prefix + what + ": " + detail);
}

absl::Status HistoryStore::Exec(const char* sql, const char* what) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  sqlite3_free(message);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc, what);
}

absl::StatusOr<std::unique_ptr<HistoryStore>> HistoryStore::Open(const std::string& path,
                                                                 int busy_timeout_ms) {
  if (absl::Status s = EnsureRegularFile(path); !s.ok()) return s;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  std::unique_ptr<HistoryStore> store(new HistoryStore(path, db));
  if (rc != SQLITE_OK) return store->Error(rc, "open");
  sqlite3_busy_timeout(db, busy_timeout_ms);
  sqlite3_extended_result_codes(db, 0);
  // Reading the schema is the first access: a non-database file fails here.
  if (absl::Status s = store->Exec("PRAGMA foreign_keys=ON; SELECT count(*) FROM sqlite_master;",
                                   "read the schema");
      !s.ok()) {
    return s;
  }
  // WAL lets readers run beside one writer; writers queue on the busy timeout.
  if (absl::Status s = store->Exec("PRAGMA journal_mode=WAL;", "enable WAL"); !s.ok()) return s;
  if (absl::Status s = store->Exec("BEGIN IMMEDIATE;", "create the schema"); !s.ok()) return s;
  absl::Status schema = store->Exec(kSchema, "create the schema");
  if (schema.ok()) {
    std::string meta = "INSERT OR IGNORE INTO sightline_meta(key, value) VALUES('schema', '" +
                       std::to_string(kSchemaVersion) + "');";
    schema = store->Exec(meta.c_str(), "create the schema");
  }
  if (!schema.ok()) {
    store->Exec("ROLLBACK;", "rollback").IgnoreError();
    return schema;
  }
  if (absl::Status s = store->Exec("COMMIT;", "create the schema"); !s.ok()) return s;
  // A database of another application, or of a newer sightline.
  Statement st;
  rc = sqlite3_prepare_v2(db, "SELECT value FROM sightline_meta WHERE key='schema'", -1, &st.st,
                          nullptr);
  if (rc != SQLITE_OK) return store->Error(rc, "read the schema version");
  if (sqlite3_step(st.st) == SQLITE_ROW) {
    int version = std::atoi(ColumnText(st.st, 0).c_str());
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(
          "history database '" + path + "' has schema version " + std::to_string(version) +
          ", newer than this sightline understands (" + std::to_string(kSchemaVersion) + ")");
    }
  }
  return store;
}

HistoryStore::~HistoryStore() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

absl::StatusOr<int64_t> HistoryStore::Add(const RunRecord& run) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE;", "add a run"); !s.ok()) return s;
  auto fail = [&](int rc, const char* what) {
    absl::Status s = Error(rc, what);
    Exec("ROLLBACK;", "rollback").IgnoreError();
    return s;
  };
  int64_t id = 0;
  {
    Statement st;
    int rc = sqlite3_prepare_v2(
        db_,
        "INSERT INTO runs(added_at, source, step_count, step_mean_ns, step_p50_ns, step_p99_ns,"
        " gpu_utilization_pct, memory_peak_bytes, top_findings) VALUES(?,?,?,?,?,?,?,?,?)",
        -1, &st.st, nullptr);
    if (rc != SQLITE_OK) return fail(rc, "add a run");
    sqlite3_bind_int64(st.st, 1, run.added_at != 0 ? run.added_at : std::time(nullptr));
    sqlite3_bind_text(st.st, 2, run.source.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.st, 3, static_cast<sqlite3_int64>(run.step_count));
    BindOptional(st.st, 4, run.step_mean_ns);
    BindOptional(st.st, 5, run.step_p50_ns);
    BindOptional(st.st, 6, run.step_p99_ns);
    BindOptional(st.st, 7, run.gpu_utilization_pct);
    BindOptional(st.st, 8, run.memory_peak_bytes);
    std::string findings = JoinFindings(run.top_findings);
    sqlite3_bind_text(st.st, 9, findings.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st.st);
    if (rc != SQLITE_DONE) return fail(rc, "add a run");
    id = sqlite3_last_insert_rowid(db_);
  }
  for (const auto& [key, value] : run.labels) {
    Statement st;
    int rc = sqlite3_prepare_v2(db_, "INSERT INTO run_labels(run_id, key, value) VALUES(?,?,?)",
                                -1, &st.st, nullptr);
    if (rc != SQLITE_OK) return fail(rc, "add a label");
    sqlite3_bind_int64(st.st, 1, id);
    sqlite3_bind_text(st.st, 2, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st.st, 3, value.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st.st);
    if (rc != SQLITE_DONE) return fail(rc, "add a label");
  }
  if (absl::Status s = Exec("COMMIT;", "add a run"); !s.ok()) {
    Exec("ROLLBACK;", "rollback").IgnoreError();
    return s;
  }
  return id;
}

absl::StatusOr<std::vector<RunRecord>> HistoryStore::List(
    const std::map<std::string, std::string>& filter) {
  std::string sql =
      "SELECT id, added_at, source, step_count, step_mean_ns, step_p50_ns, step_p99_ns,"
      " gpu_utilization_pct, memory_peak_bytes, top_findings FROM runs r";
  for (size_t i = 0; i < filter.size(); ++i) {
    sql += i == 0 ? " WHERE " : " AND ";
    sql += "EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = ? AND "
           "l.value = ?)";
  }
  sql += " ORDER BY id";
  std::vector<RunRecord> runs;
  {
    Statement st;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &st.st, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "list runs");
    int index = 1;
    for (const auto& [key, value] : filter) {
      sqlite3_bind_text(st.st, index++, key.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st.st, index++, value.c_str(), -1, SQLITE_TRANSIENT);
    }
    while ((rc = sqlite3_step(st.st)) == SQLITE_ROW) {
      RunRecord r;
      r.id = sqlite3_column_int64(st.st, 0);
      r.added_at = sqlite3_column_int64(st.st, 1);
      r.source = ColumnText(st.st, 2);
      r.step_count = static_cast<uint64_t>(sqlite3_column_int64(st.st, 3));
      r.step_mean_ns = ColumnOptional(st.st, 4);
      r.step_p50_ns = ColumnOptional(st.st, 5);
      r.step_p99_ns = ColumnOptional(st.st, 6);
      r.gpu_utilization_pct = ColumnOptional(st.st, 7);
      r.memory_peak_bytes = ColumnOptional(st.st, 8);
      std::string findings = ColumnText(st.st, 9);
      size_t start = 0;
      while (start < findings.size()) {
        size_t end = findings.find('\n', start);
        if (end == std::string::npos) end = findings.size();
        if (end > start) r.top_findings.push_back(findings.substr(start, end - start));
        start = end + 1;
      }
      runs.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return Error(rc, "list runs");
  }
  for (RunRecord& r : runs) {
    Statement st;
    int rc = sqlite3_prepare_v2(db_, "SELECT key, value FROM run_labels WHERE run_id = ?", -1,
                                &st.st, nullptr);
    if (rc != SQLITE_OK) return Error(rc, "read labels");
    sqlite3_bind_int64(st.st, 1, r.id);
    while ((rc = sqlite3_step(st.st)) == SQLITE_ROW) {
      r.labels[ColumnText(st.st, 0)] = ColumnText(st.st, 1);
    }
    if (rc != SQLITE_DONE) return Error(rc, "read labels");
  }
  return runs;
}

}  // namespace sightline::history
