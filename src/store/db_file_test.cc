// Issue 30 hole 7: what SqliteStore::Open does with the file it is given. A file that is not a
// SQLite database (an empty one included) is refused and left as it was; a new database and its
// -wal/-shm files are private (0600) whatever the umask; a read-only open writes nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace mk::store {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

unsigned ModeOf(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// SQLite takes a 0-byte file for a new database: the store migrated it silently, turning
// whatever the user meant by that path into a maxkernel database.
TEST(DbFile, AnEmptyFileIsRefusedAndLeftUntouched) {
  TempDir tmp;
  const fs::path db = tmp.path() / "empty.db";
  std::ofstream(db).close();
  auto store = SqliteStore::Open(db.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().ToString().find(db.string() + ": error: "), std::string::npos)
      << store.status().ToString();
  EXPECT_NE(store.status().message().find("empty file, not a SQLite database"), std::string::npos)
      << store.status().ToString();
  EXPECT_EQ(fs::file_size(db), 0u);
  EXPECT_FALSE(fs::exists(db.string() + "-wal"));
  EXPECT_FALSE(fs::exists(db.string() + "-shm"));
}

TEST(DbFile, AFileOfAnotherKindIsRefusedAndLeftUntouched) {
  TempDir tmp;
  const fs::path db = tmp.path() / "notes.txt";
  std::ofstream(db) << "my notes, not a database\n";
  auto store = SqliteStore::Open(db.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), ErrorCode::kInvalidArgument) << store.status().ToString();
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos)
      << store.status().ToString();
  EXPECT_EQ(Slurp(db), "my notes, not a database\n");
  // A directory or a FIFO, too (a FIFO's open must not block).
  ASSERT_EQ(::mkfifo((tmp.path() / "fifo").c_str(), 0600), 0);
  auto fifo = SqliteStore::Open((tmp.path() / "fifo").string());
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("not a regular file"), std::string::npos)
      << fifo.status().ToString();
}

// Runs may hold proprietary kernels: the database is the user's alone, whatever the umask.
TEST(DbFile, ANewDatabaseAndItsWalFilesAre0600) {
  TempDir tmp;
  for (mode_t mask : {mode_t{0}, mode_t{022}}) {
    SCOPED_TRACE("umask " + std::to_string(mask));
    const mode_t old = ::umask(mask);
    const fs::path db = tmp.path() / ("new-" + std::to_string(mask) + ".db");
    auto store = SqliteStore::Open(db.string());
    ::umask(old);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    // A write makes sure the WAL and its index exist while the connection is open.
    TaskRecord task;
    task.directory = "/t";
    task.module_sha256 = std::string(64, 'a');
    ASSERT_TRUE((*store)->UpsertTask(task).ok());
    EXPECT_EQ(ModeOf(db), 0600u);
    ASSERT_TRUE(fs::exists(db.string() + "-wal"));
    EXPECT_EQ(ModeOf(db.string() + "-wal"), 0600u);
    ASSERT_TRUE(fs::exists(db.string() + "-shm"));
    EXPECT_EQ(ModeOf(db.string() + "-shm"), 0600u);
    // Nothing of the creation is left beside it.
    for (const auto& e : fs::directory_iterator(tmp.path())) {
      EXPECT_EQ(e.path().filename().string().find(".creating-"), std::string::npos) << e.path();
    }
  }
}

TEST(DbFile, AReadOnlyOpenReadsAndWritesNothing) {
  TempDir tmp;
  const fs::path db = tmp.path() / "m.db";
  {
    auto store = SqliteStore::Open(db.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    TaskRecord task;
    task.directory = "/t";
    task.module_sha256 = std::string(64, 'a');
    auto id = (*store)->UpsertTask(task);
    ASSERT_TRUE(id.ok());
    NewRun run;
    run.task_id = *id;
    run.target = "cpu";
    ASSERT_TRUE((*store)->CreateRun(run).ok());
  }
  SqliteStoreOptions options;
  options.read_only = true;
  options.create = false;
  auto store = SqliteStore::Open(db.string(), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto runs = (*store)->ListRuns(10);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  EXPECT_EQ(runs->size(), 1u);
  NewRun another;
  another.task_id = (*runs)[0].task_id;
  EXPECT_FALSE((*store)->CreateRun(another).ok());
  // A read-only open never creates a database.
  auto missing = SqliteStore::Open((tmp.path() / "none.db").string(), options);
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(fs::exists(tmp.path() / "none.db"));
}

}  // namespace
}  // namespace mk::store
