// lib/history/history_store.h — the run history: one row per recorded run in
// an embedded SQLite database (`sightline history add`, `sightline trend`).
//
// A run's summary: steady-state step time (count, mean, p50, p99), GPU
// utilization (mean over devices), memory peak (when the source has one), the
// top findings ("rule: title" lines, at most 5) and free labels (key=value,
// e.g. commit=abc123, branch=main).
//
// Concurrency: the database is in WAL mode; every write is one
// BEGIN IMMEDIATE transaction, and a writer that finds the database locked
// waits up to `busy_timeout_ms` (default 10 s) — concurrent `history add`
// processes all land, none is lost. A database still locked after the wait,
// a file that is not a SQLite database, or a corrupt one are errors whose
// message names the path and the problem; nothing is ever overwritten.
// Files: created 0600 (directory 0700), never through a symlink, never a
// non-regular file.
#ifndef SIGHTLINE_LIB_HISTORY_HISTORY_STORE_H_
#define SIGHTLINE_LIB_HISTORY_HISTORY_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

namespace sightline::history {

struct RunRecord {
  int64_t id = 0;          // assigned by Add
  int64_t added_at = 0;    // unix seconds
  std::string source;      // the trace or report it came from
  uint64_t step_count = 0;
  double step_mean_ns = -1, step_p50_ns = -1, step_p99_ns = -1;  // -1 = unknown
  double gpu_utilization_pct = -1;
  double memory_peak_bytes = -1;
  std::vector<std::string> top_findings;  // "rule: title"
  std::map<std::string, std::string> labels;
};

// $XDG_DATA_HOME/sightline/history.db, else ~/.local/share/sightline/history.db.
std::string DefaultDatabasePath();

class HistoryStore {
 public:
  // Opens (creating when absent) the database at `path`.
  static absl::StatusOr<std::unique_ptr<HistoryStore>> Open(const std::string& path,
                                                           int busy_timeout_ms = 10000);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Stores a run; returns its id.
  absl::StatusOr<int64_t> Add(const RunRecord& run);
  // Runs whose labels include every `filter` pair, oldest first.
  absl::StatusOr<std::vector<RunRecord>> List(const std::map<std::string, std::string>& filter);

  const std::string& path() const { return path_; }

 private:
  HistoryStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  absl::Status Exec(const char* sql, const char* what);
  absl::Status Error(int rc, const char* what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
};

// Parses "key=value" (key: letters, digits, '_', '-', '.'; non-empty).
absl::Status ParseLabel(const std::string& text, std::string* key, std::string* value);

}  // namespace sightline::history

#endif  // SIGHTLINE_LIB_HISTORY_HISTORY_STORE_H_
