// The directory store on a real local file system: the edge cases of
// issue 2 (corrupt, oversized, symbolic links, missing and read-only
// folders), atomic and non-clobbering writes, versions and conditional
// writes, and races between threads and between processes. No test sleeps.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "instance/stores/directory.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::key;

std::vector<std::string> strs(const std::vector<Key>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.str());
  std::sort(out.begin(), out.end());
  return out;
}

using testing::read_file;
using testing::write_file;

// Exit codes a child process uses to report a store result.
constexpr int kChildOk = 0;
constexpr int kChildSetupFailed = 99;
constexpr auto kTtl = std::chrono::seconds(30);
int exit_code_of(Errc code) { return 100 + static_cast<int>(code); }
template <class T>
int exit_code_of(const Result<T>& result) {
  return result ? kChildOk : exit_code_of(result.error().code);
}

template <class T>
Result<void> as_void(const Result<T>& result) {
  if (!result) return std::unexpected(result.error());
  return {};
}

class DirectoryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = make_directory_store({.root = root()});
    ASSERT_TRUE(made) << made.error().message;
    store_ = std::move(*made);
  }

  fs::path root() const { return dir_.path() / "root"; }
  Store& store() { return *store_; }

  // Forks a process that takes the lock on `k` as `owner` with a store of
  // its own and then waits to be killed; returns its pid once it holds the
  // lock, or -1 (and the test fails) when it could not take it.
  pid_t fork_lock_holder(const Key& k, const char* owner) {
    int ready[2];
    if (::pipe(ready) != 0) return -1;
    std::fflush(nullptr);
    const pid_t holder = ::fork();
    if (holder == 0) {
      ::close(ready[0]);
      auto own = make_directory_store({.root = root()});
      const char verdict = own && (*own)->lock(k, kTtl, owner) ? 'L' : 'F';
      [[maybe_unused]] auto n = ::write(ready[1], &verdict, 1);
      while (true) ::pause();
    }
    ::close(ready[1]);
    char verdict = 0;
    const bool told = holder > 0 && ::read(ready[0], &verdict, 1) == 1;
    ::close(ready[0]);
    if (!told || verdict != 'L') {
      ADD_FAILURE() << "the forked holder could not take the lock";
      if (holder > 0) kill_and_reap(holder);
      return -1;
    }
    return holder;
  }

  static void kill_and_reap(pid_t pid) {
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status));
  }

  testing::TempDir dir_;
  std::shared_ptr<Store> store_;
};

// ---------------------------------------------------------------------------
// Construction and naming.

TEST(DirectoryStoreOptions, RootMustBeAbsolute) {
  for (const char* bad : {"", "relative/path", "./x"}) {
    auto made = make_directory_store({.root = bad});
    ASSERT_FALSE(made) << bad;
    EXPECT_EQ(made.error().code, Errc::invalid) << bad;
  }
}

TEST_F(DirectoryStoreTest, DescribesItselfAsFileUrlOfTheRoot) {
  EXPECT_EQ(store().describe(), "file://" + root().string());
  auto trailing = make_directory_store({.root = root().string() + "/"});
  ASSERT_TRUE(trailing);
  EXPECT_EQ((*trailing)->describe(), "file://" + root().string());
}

TEST_F(DirectoryStoreTest, HasVersionsAndConditionalWrites) {
  const auto caps = store().capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_TRUE(caps.conditional_writes);
  EXPECT_TRUE(caps.native_lease);  // an OFD lock: the kernel ends it with its holder
  EXPECT_FALSE(caps.server_clock);
}

TEST_F(DirectoryStoreTest, KeyMapsToTheSameRelativePath) {
  const auto k = Key::from_segments({"instances", "a/b", ".."}).value();
  ASSERT_TRUE(store().replace(k, "doc"));
  EXPECT_EQ(read_file(root() / "instances" / "a%2Fb" / "%2E%2E"), "doc");
}

TEST_F(DirectoryStoreTest, RootKeyIsNotADocument) {
  EXPECT_EQ(store().get(Key{}).error().code, Errc::invalid);
  EXPECT_EQ(store().replace(Key{}, "x").error().code, Errc::invalid);
  EXPECT_EQ(store().remove(Key{}).error().code, Errc::invalid);
}

TEST_F(DirectoryStoreTest, ErrorsNameOperationRootAndKey) {
  const auto got = store().get(key("instances/nobody"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::not_found);
  EXPECT_THAT(got.error().message, HasSubstr("get"));
  EXPECT_THAT(got.error().message, HasSubstr("file://" + root().string()));
  EXPECT_THAT(got.error().message, HasSubstr("instances/nobody"));
}

// ---------------------------------------------------------------------------
// Plain operations.

TEST_F(DirectoryStoreTest, CreateNeverClobbers) {
  ASSERT_TRUE(store().create(key("instances/a"), "first"));
  const auto again = store().create(key("instances/a"), "second");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::already_exists);
  EXPECT_EQ(store().get(key("instances/a"))->data, "first");
}

TEST_F(DirectoryStoreTest, ReplaceCreatesOrOverwrites) {
  ASSERT_TRUE(store().replace(key("instances/a"), "one"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "one");
  ASSERT_TRUE(store().replace(key("instances/a"), "two"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "two");
}

TEST_F(DirectoryStoreTest, RemoveDeletesAndThenReportsNotFound) {
  ASSERT_TRUE(store().create(key("instances/a"), "x"));
  ASSERT_TRUE(store().remove(key("instances/a")));
  EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found);
  EXPECT_EQ(store().remove(key("instances/a")).error().code, Errc::not_found);
  EXPECT_FALSE(fs::exists(root() / "instances" / "a"));
}

TEST_F(DirectoryStoreTest, DocumentOfExactlyTheCapIsAccepted) {
  const std::string doc(kMaxDocumentSize, 'x');
  ASSERT_TRUE(store().replace(key("big"), doc));
  EXPECT_EQ(store().get(key("big"))->data, doc);
}

TEST_F(DirectoryStoreTest, WriteOverTheCapIsInvalidAndWritesNothing) {
  const std::string doc(kMaxDocumentSize + 1, 'x');
  EXPECT_EQ(store().replace(key("big"), doc).error().code, Errc::invalid);
  EXPECT_EQ(store().create(key("big"), doc).error().code, Errc::invalid);
  EXPECT_FALSE(fs::exists(root() / "big"));
}

TEST_F(DirectoryStoreTest, ADocumentCannotHoldAnotherKey) {
  ASSERT_TRUE(store().replace(key("a"), "x"));
  EXPECT_EQ(store().replace(key("a/b"), "y").error().code, Errc::invalid);
  EXPECT_EQ(store().get(key("a/b")).error().code, Errc::not_found);
  EXPECT_EQ(store().remove(key("a/b")).error().code, Errc::not_found);
  EXPECT_TRUE(store().list(key("a/b"))->empty());
  EXPECT_EQ(store().get(key("a"))->data, "x");
}

// ---------------------------------------------------------------------------
// Listing.

TEST_F(DirectoryStoreTest, ListsByWholeSegmentsWithNestedFolders) {
  for (const char* k : {"a/b/x", "a/b/y/z", "a/bc", "other"})
    ASSERT_TRUE(store().replace(key(k), k));
  EXPECT_EQ(strs(store().list(key("a/b")).value()), (std::vector<std::string>{"a/b/x", "a/b/y/z"}));
  EXPECT_EQ(strs(store().list(key("a")).value()),
            (std::vector<std::string>{"a/b/x", "a/b/y/z", "a/bc"}));
  EXPECT_EQ(strs(store().list(key("a/bc")).value()), (std::vector<std::string>{"a/bc"}));
  EXPECT_EQ(strs(store().list(Key{}).value()),
            (std::vector<std::string>{"a/b/x", "a/b/y/z", "a/bc", "other"}));
  EXPECT_TRUE(store().list(key("missing")).value().empty());
}

TEST_F(DirectoryStoreTest, EveryFileIsListedWhateverItsNameAndCanBeReadAndRemoved) {
  // The original guard judges every file under instances/, whatever it is
  // called: a name this store never writes must neither fail the listing nor
  // be skipped.
  ASSERT_TRUE(store().replace(key("instances/good"), "x"));
  for (const std::string odd :
       {"a%2f", "backup~", "with space", "%41", "line\nbreak\xff", "odd dir/x y"}) {
    SCOPED_TRACE(odd);
    fs::create_directories((root() / "instances" / odd).parent_path());
    write_file(root() / "instances" / odd, "{}");
    const Key k = Key::from_listing("instances/" + odd).value();
    EXPECT_FALSE(k.canonical());
    EXPECT_THAT(store().list(key("instances")).value(),
                ::testing::UnorderedElementsAre(key("instances/good"), k));
    auto doc = store().get(k);
    ASSERT_TRUE(doc) << doc.error().message;
    EXPECT_EQ(doc->data, "{}");
    ASSERT_TRUE(store().remove_if(k, doc->version));
    EXPECT_FALSE(fs::exists(root() / "instances" / odd));
    fs::remove_all(root() / "instances" / "odd dir");
  }
}

// ---------------------------------------------------------------------------
// Atomic writes: temporary files live in <root>/tmp~ and never linger there
// or show up in a listing.

TEST_F(DirectoryStoreTest, NoTemporaryFileIsLeftBehind) {
  const auto k = key("instances/a");
  auto v1 = store().create(k, "1");
  ASSERT_TRUE(v1);
  ASSERT_FALSE(store().create(k, "again"));  // a failed write cleans up too
  ASSERT_TRUE(store().replace(k, "2"));
  ASSERT_FALSE(store().replace_if(k, "3", *v1));
  auto v2 = store().get(k)->version;
  ASSERT_TRUE(store().replace_if(k, "3", v2));
  ASSERT_TRUE(fs::is_directory(root() / "tmp~"));
  EXPECT_TRUE(fs::is_empty(root() / "tmp~"));
  for (const auto& entry : fs::recursive_directory_iterator(root())) {
    EXPECT_TRUE(entry.path() == root() / "instances" ||
                entry.path() == root() / "instances" / "a" ||
                entry.path().filename().string().find('~') != std::string::npos)
        << "unexpected " << entry.path();
  }
}

TEST_F(DirectoryStoreTest, TemporaryAndLockFilesAreNeverListed) {
  ASSERT_TRUE(store().replace(key("instances/a"), "x"));
  write_file(root() / "tmp~" / "12345-1.tmp", "half a reco");  // a writer crashed here
  EXPECT_EQ(strs(store().list(Key{}).value()), (std::vector<std::string>{"instances/a"}));
  EXPECT_EQ(strs(store().list(key("instances")).value()),
            (std::vector<std::string>{"instances/a"}));
  EXPECT_TRUE(fs::exists(root() / "lock~"));
}

// ---------------------------------------------------------------------------
// Corrupt, oversized and odd files: reported as malformed, never deleted.

TEST_F(DirectoryStoreTest, CorruptFileIsReturnedAsStoredBytes) {
  const std::string junk("{\"id\": \"half\0\xff", 14);
  write_file(root() / "instances" / "a", junk);
  const auto got = store().get(key("instances/a"));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->data, junk);  // the store does not parse: the guard decides
  EXPECT_FALSE(got->version.empty());
}

TEST_F(DirectoryStoreTest, FolderWhereADocumentShouldBeIsMalformed) {
  fs::create_directories(root() / "instances" / "a");
  const auto got = store().get(key("instances/a"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::malformed);
  EXPECT_THAT(got.error().message, HasSubstr("folder"));
  EXPECT_EQ(store().replace(key("instances/a"), "x").error().code, Errc::malformed);
  EXPECT_EQ(store().remove(key("instances/a")).error().code, Errc::malformed);
  EXPECT_TRUE(fs::is_directory(root() / "instances" / "a"));
}

TEST_F(DirectoryStoreTest, OversizedFileIsMalformedAndStaysOnDisk) {
  const fs::path file = root() / "instances" / "big";
  write_file(file, std::string(2 * kMaxDocumentSize, '{'));
  const auto k = key("instances/big");
  const auto got = store().get(k);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::malformed);
  EXPECT_THAT(got.error().message, HasSubstr("1 MiB"));
  // Still listed, so a guard sees it (and counts it as live).
  EXPECT_EQ(strs(store().list(key("instances")).value()),
            (std::vector<std::string>{"instances/big"}));
  EXPECT_EQ(store().replace_if(k, "x", "any").error().code, Errc::malformed);
  EXPECT_EQ(store().remove_if(k, "any").error().code, Errc::malformed);
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(fs::file_size(file), 2 * kMaxDocumentSize);
}

TEST_F(DirectoryStoreTest, FifoIsMalformedAndNeverOpened) {
  fs::create_directories(root() / "instances");
  ASSERT_EQ(::mkfifo((root() / "instances" / "pipe").c_str(), 0644), 0);
  const auto got = store().get(key("instances/pipe"));  // would block if opened
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, Errc::malformed);
  EXPECT_EQ(strs(store().list(key("instances")).value()),
            (std::vector<std::string>{"instances/pipe"}));
}

// ---------------------------------------------------------------------------
// Symbolic links below the root are refused; their targets stay untouched.

void expect_symlink_refused(const Result<void>& result) {
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::permission);
  EXPECT_THAT(result.error().message, HasSubstr("symbolic link"));
}
template <class T>
void expect_symlink_refused(const Result<T>& result) {
  ASSERT_FALSE(result);
  expect_symlink_refused(Result<void>(std::unexpected(result.error())));
}

TEST_F(DirectoryStoreTest, SymlinkedFolderOutOfTheRootIsRefused) {
  const fs::path outside = dir_.path() / "outside";
  write_file(outside / "a", "secret");
  fs::create_directories(root());
  fs::create_directory_symlink(outside, root() / "instances");

  expect_symlink_refused(store().get(key("instances/a")));
  expect_symlink_refused(store().create(key("instances/b"), "x"));
  expect_symlink_refused(store().replace(key("instances/a"), "x"));
  expect_symlink_refused(store().replace_if(key("instances/a"), "x", "v"));
  expect_symlink_refused(store().remove(key("instances/a")));
  expect_symlink_refused(store().remove_if(key("instances/a"), "v"));
  expect_symlink_refused(store().list(key("instances")));
  expect_symlink_refused(store().list(Key{}));

  EXPECT_EQ(read_file(outside / "a"), "secret");
  EXPECT_FALSE(fs::exists(outside / "b"));
  EXPECT_EQ(std::distance(fs::directory_iterator(outside), fs::directory_iterator{}), 1);
  EXPECT_TRUE(fs::is_symlink(root() / "instances"));
}

TEST_F(DirectoryStoreTest, SymlinkedFileOutOfTheRootIsRefused) {
  const fs::path outside = dir_.path() / "outside";
  write_file(outside / "a", "secret");
  fs::create_directories(root() / "instances");
  fs::create_symlink(outside / "a", root() / "instances" / "a");

  expect_symlink_refused(store().get(key("instances/a")));
  expect_symlink_refused(store().create(key("instances/a"), "x"));
  expect_symlink_refused(store().replace(key("instances/a"), "x"));
  expect_symlink_refused(store().replace_if(key("instances/a"), "x", "v"));
  expect_symlink_refused(store().remove(key("instances/a")));
  expect_symlink_refused(store().remove_if(key("instances/a"), "v"));
  expect_symlink_refused(store().list(key("instances")));
  expect_symlink_refused(store().list(key("instances/a")));

  EXPECT_EQ(read_file(outside / "a"), "secret");
  EXPECT_TRUE(fs::is_symlink(root() / "instances" / "a"));
}

TEST_F(DirectoryStoreTest, RootReachedThroughASymlinkIsAllowed) {
  fs::create_directories(root());
  const fs::path alias = dir_.path() / "alias";
  fs::create_directory_symlink(root(), alias);
  auto via_alias = make_directory_store({.root = alias});
  ASSERT_TRUE(via_alias);
  ASSERT_TRUE((*via_alias)->replace(key("instances/a"), "x"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "x");
}

// ---------------------------------------------------------------------------
// Missing and read-only folders.

TEST_F(DirectoryStoreTest, MissingRootReadsAsAbsentAndIsCreatedOnFirstWrite) {
  auto deep = make_directory_store({.root = root() / "not" / "yet"});
  ASSERT_TRUE(deep);
  Store& s = **deep;
  EXPECT_EQ(s.get(key("instances/a")).error().code, Errc::not_found);
  EXPECT_TRUE(s.list(key("instances")).value().empty());
  EXPECT_TRUE(s.list(Key{}).value().empty());
  EXPECT_EQ(s.remove(key("instances/a")).error().code, Errc::not_found);
  EXPECT_EQ(s.replace_if(key("instances/a"), "x", "v").error().code, Errc::not_found);
  EXPECT_EQ(s.remove_if(key("instances/a"), "v").error().code, Errc::not_found);
  EXPECT_FALSE(fs::exists(root()));  // reading creates nothing

  ASSERT_TRUE(s.create(key("instances/a"), "x"));
  EXPECT_EQ(read_file(root() / "not" / "yet" / "instances" / "a"), "x");
}

// Root bypasses permission bits, so as root each operation runs in a forked
// child that has become nobody (65534), on folders nobody owns with mode 0555.
class DirectoryStoreReadOnlyTest : public DirectoryStoreTest {
 protected:
  static constexpr uid_t kNobody = 65534;

  void TearDown() override {  // lets a non-root user remove the temporary tree
    if (::geteuid() == 0) return;
    std::error_code ignored;
    for (const auto& folder : read_only_) fs::permissions(folder, fs::perms(0755), ignored);
  }

  void make_read_only(const fs::path& folder) {
    if (::geteuid() == 0) {
      fs::permissions(dir_.path(), fs::perms(0755));  // traversable by nobody
      ASSERT_EQ(::chown(folder.c_str(), kNobody, kNobody), 0) << folder;
    }
    fs::permissions(folder, fs::perms(0555));
    read_only_.push_back(folder);
  }

  // Runs `op` as an unprivileged user (in a child process when we are root)
  // and returns its result, error message included.
  static Result<void> unprivileged(const std::function<Result<void>()>& op) {
    if (::geteuid() != 0) return op();
    int channel[2];
    if (::pipe(channel) != 0) return fail(Errc::internal, "pipe failed");
    std::fflush(nullptr);  // nothing buffered may be written twice
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(channel[0]);
      if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) {
        ::_exit(kChildSetupFailed);
      }
      const auto result = op();
      if (!result) {
        [[maybe_unused]] auto n =
            ::write(channel[1], result.error().message.data(), result.error().message.size());
      }
      ::_exit(exit_code_of(result));
    }
    ::close(channel[1]);
    std::string message;
    char buf[512];
    for (ssize_t n; (n = ::read(channel[0], buf, sizeof buf)) != 0;) {
      if (n > 0) message.append(buf, static_cast<std::size_t>(n));
      if (n < 0 && errno != EINTR) break;
    }
    ::close(channel[0]);
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
      return fail(Errc::internal, "the unprivileged child did not exit normally");
    }
    const int code = WEXITSTATUS(status);
    if (code == kChildOk) return {};
    if (code == kChildSetupFailed) return fail(Errc::internal, "cannot become uid 65534");
    return fail(static_cast<Errc>(code - 100), message);
  }

  static void expect_permission(const Result<void>& result) {
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, Errc::permission) << result.error().message;
  }

  std::vector<fs::path> read_only_;
};

TEST_F(DirectoryStoreReadOnlyTest, WriteToAnEmptyReadOnlyRootIsPermission) {
  fs::create_directories(root());
  make_read_only(root());
  const auto k = key("instances/a");
  // nobody reaches the root (so the refusal below is the folder's own mode).
  const auto read = unprivileged([&] { return as_void(store().get(k)); });
  ASSERT_FALSE(read);
  ASSERT_EQ(read.error().code, Errc::not_found) << read.error().message;
  const auto replaced = unprivileged([&] { return as_void(store().replace(k, "x")); });
  expect_permission(replaced);
  EXPECT_THAT(replaced.error().message, HasSubstr("replace instances/a"));
  EXPECT_THAT(replaced.error().message, HasSubstr("file://" + root().string()));
  expect_permission(unprivileged([&] { return as_void(store().create(k, "x")); }));
  EXPECT_TRUE(fs::is_empty(root()));
}

TEST_F(DirectoryStoreReadOnlyTest, ExistingDocumentsStayReadableButNotWritable) {
  const auto k = key("instances/a");
  ASSERT_TRUE(store().replace(k, "x"));
  const auto version = store().get(k)->version;
  make_read_only(root() / "instances");
  make_read_only(root() / "tmp~");
  make_read_only(root());
  EXPECT_TRUE(unprivileged([&]() -> Result<void> {
    auto got = store().get(k);
    if (!got) return std::unexpected(got.error());
    if (got->data != "x") return fail(Errc::internal, "read " + got->data);
    return {};
  }));
  EXPECT_TRUE(unprivileged([&] { return as_void(store().list(key("instances"))); }));
  expect_permission(unprivileged([&] { return as_void(store().replace(k, "y")); }));
  expect_permission(unprivileged([&] { return as_void(store().replace_if(k, "y", version)); }));
  expect_permission(unprivileged([&] { return store().remove(k); }));
  expect_permission(unprivileged([&] { return as_void(store().create(key("instances/b"), "y")); }));
  EXPECT_EQ(store().get(k)->data, "x");
  EXPECT_TRUE(fs::is_empty(root() / "tmp~"));
}

// ---------------------------------------------------------------------------
// Versions and conditional writes.

TEST_F(DirectoryStoreTest, ReadsReturnTheVersionTheWriteReturned) {
  const auto k = key("instances/a");
  auto created = store().create(k, "x");
  ASSERT_TRUE(created);
  EXPECT_EQ(store().get(k)->version, *created);
  auto replaced = store().replace(k, "y");
  ASSERT_TRUE(replaced);
  EXPECT_EQ(store().get(k)->version, *replaced);
}

TEST_F(DirectoryStoreTest, EveryWriteChangesTheVersionEvenWithTheSameBytes) {
  const auto k = key("instances/a");
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto v = store().replace(k, "same");
    ASSERT_TRUE(v);
    EXPECT_TRUE(seen.insert(*v).second) << "version repeated: " << *v;
    ASSERT_TRUE(store().remove(k));
    auto c = store().create(k, "same");
    ASSERT_TRUE(c);
    EXPECT_TRUE(seen.insert(*c).second) << "version repeated: " << *c;
  }
}

TEST_F(DirectoryStoreTest, ConditionalReplaceNeedsTheCurrentVersion) {
  const auto k = key("lease");
  const auto v1 = store().create(k, "epoch 1").value();
  const auto v2 = store().replace_if(k, "epoch 2", v1);
  ASSERT_TRUE(v2) << v2.error().message;
  EXPECT_NE(*v2, v1);
  EXPECT_EQ(store().get(k)->version, *v2);

  const auto stale = store().replace_if(k, "epoch 2 again", v1);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::conflict);
  EXPECT_EQ(store().get(k)->data, "epoch 2");

  EXPECT_EQ(store().replace_if(key("absent"), "x", v1).error().code, Errc::not_found);
  EXPECT_FALSE(fs::exists(root() / "absent"));
}

TEST_F(DirectoryStoreTest, ConditionalRemoveNeedsTheCurrentVersion) {
  const auto k = key("lease");
  const auto v1 = store().create(k, "one").value();
  const auto v2 = store().replace(k, "two").value();
  const auto stale = store().remove_if(k, v1);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::conflict);
  EXPECT_EQ(store().get(k)->data, "two");
  ASSERT_TRUE(store().remove_if(k, v2));
  EXPECT_EQ(store().get(k).error().code, Errc::not_found);
  EXPECT_EQ(store().remove_if(k, v2).error().code, Errc::not_found);
}

TEST_F(DirectoryStoreTest, ExternallyRewrittenFileChangesTheVersion) {
  const auto k = key("instances/a");
  const auto v1 = store().create(k, "mine").value();
  write_file(root() / "instances" / "a", "someone else's");  // e.g. the Go guard
  EXPECT_NE(store().get(k)->version, v1);
  EXPECT_EQ(store().replace_if(k, "x", v1).error().code, Errc::conflict);
}

// ---------------------------------------------------------------------------
// Races.

TEST_F(DirectoryStoreTest, ConcurrentConditionalIncrementsFromThreadsLoseNoUpdate) {
  const auto k = key("counter");
  ASSERT_TRUE(store().create(k, "0"));
  constexpr int kThreads = 4;
  constexpr int kIncrements = 20;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        auto doc = store().get(k);
        if (!doc) {
          ++errors;
          return;
        }
        const auto next = std::to_string(std::stoi(doc->data) + 1);
        auto written = store().replace_if(k, next, doc->version);
        if (written) {
          ++done;
        } else if (written.error().code != Errc::conflict) {
          ++errors;
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(store().get(k)->data, std::to_string(kThreads * kIncrements));
}

TEST_F(DirectoryStoreTest, ConcurrentCreateFromProcessesHasExactlyOneWinner) {
  constexpr int kChildren = 8;
  const auto k = key("instances/contested");
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::fflush(nullptr);
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char byte;
      while (::read(gate[0], &byte, 1) < 0 && errno == EINTR) {
      }  // returns 0 once the parent closes the gate: all start together
      ::_exit(exit_code_of(store().create(k, "child " + std::to_string(i))));
    }
    children.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // open the gate

  int winners = 0;
  int losers = 0;
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    if (code == kChildOk) {
      ++winners;
    } else {
      EXPECT_EQ(code, exit_code_of(Errc::already_exists));
      ++losers;
    }
  }
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(losers, kChildren - 1);
  const auto doc = store().get(k);
  ASSERT_TRUE(doc);
  EXPECT_THAT(doc->data, HasSubstr("child "));
  EXPECT_TRUE(fs::is_empty(root() / "tmp~"));
}

// ---------------------------------------------------------------------------
// Native leases: OFD locks.

TEST_F(DirectoryStoreTest, LockExcludesASecondStoreOnTheSameRoot) {
  const auto k = key("instances.lock");
  auto other = make_directory_store({.root = root()});
  ASSERT_TRUE(other);
  auto token = store().lock(k, kTtl, "guard-a@host");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_THAT(token->token, ::testing::StartsWith("ofd:"));

  auto refused = (*other)->lock(k, kTtl, "guard-b@host");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::locked);
  EXPECT_THAT(refused.error().message, HasSubstr("held by another process or guard"));
  EXPECT_THAT(refused.error().message, HasSubstr("guard-a@host"));
  // Not re-entrant, even through the same store object.
  EXPECT_EQ(store().lock(k, kTtl, "guard-a@host").error().code, Errc::locked);
  // Other keys are independent.
  EXPECT_TRUE((*other)->lock(key("other.lock"), kTtl, "guard-b@host"));

  ASSERT_TRUE(store().unlock(k, token->token));
  auto taken = (*other)->lock(k, kTtl, "guard-b@host");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(store().lock(k, kTtl, "guard-a@host").error().code, Errc::locked);
}

TEST_F(DirectoryStoreTest, ExactlyOneOfManyThreadsWinsTheLock) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  std::vector<std::shared_ptr<Store>> stores;
  for (int i = 0; i < kThreads; ++i)
    stores.push_back(make_directory_store({.root = root()}).value());
  for (int round = 0; round < kRounds; ++round) {
    const auto k = key("round-" + std::to_string(round) + ".lock");
    std::atomic<int> winners{0};
    std::atomic<int> refused{0};
    std::atomic<bool> go{false};
    std::vector<std::jthread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        while (!go.load()) std::this_thread::yield();
        auto token = stores[static_cast<std::size_t>(i)]->lock(k, kTtl, "t");
        if (token) {
          ++winners;
        } else if (token.error().code == Errc::locked) {
          ++refused;
        }
      });
    }
    go = true;
    threads.clear();
    EXPECT_EQ(winners.load(), 1) << "round " << round;
    EXPECT_EQ(refused.load(), kThreads - 1) << "round " << round;
  }
}

TEST_F(DirectoryStoreTest, UnlockThenLockAgain) {
  const auto k = key("instances.lock");
  for (int i = 0; i < 3; ++i) {
    auto token = store().lock(k, kTtl, "me");
    ASSERT_TRUE(token) << token.error().message;
    ASSERT_TRUE(store().refresh_lock(k, token->token, kTtl));
    ASSERT_TRUE(store().unlock(k, token->token));
    // Gone: a second unlock and a refresh say so.
    EXPECT_EQ(store().unlock(k, token->token).error().code, Errc::not_found);
    EXPECT_EQ(store().refresh_lock(k, token->token, kTtl).error().code, Errc::not_found);
  }
}

TEST_F(DirectoryStoreTest, RefreshOrUnlockWithAnUnknownTokenFails) {
  const auto k = key("instances.lock");
  for (const char* bad : {"ofd:999", "", "ofd:", "ofd:1x", "opaquelocktoken:1", "ofd:-1"}) {
    EXPECT_EQ(store().refresh_lock(k, bad, kTtl).error().code, Errc::not_found) << bad;
    EXPECT_EQ(store().unlock(k, bad).error().code, Errc::not_found) << bad;
  }
  auto token = store().lock(k, kTtl, "me");
  ASSERT_TRUE(token);
  // A token for another key, or from another store object, is not ours.
  EXPECT_EQ(store().refresh_lock(key("elsewhere.lock"), token->token, kTtl).error().code,
            Errc::not_found);
  EXPECT_EQ(store().unlock(key("elsewhere.lock"), token->token).error().code, Errc::not_found);
  auto other = make_directory_store({.root = root()}).value();
  EXPECT_EQ(other->refresh_lock(k, token->token, kTtl).error().code, Errc::not_found);
  EXPECT_EQ(other->unlock(k, token->token).error().code, Errc::not_found);
  EXPECT_TRUE(store().refresh_lock(k, token->token, kTtl));  // still held
}

TEST_F(DirectoryStoreTest, RefreshNoticesARemovedOrReplacedLockFile) {
  const auto k = key("instances.lock");
  auto token = store().lock(k, kTtl, "me");
  ASSERT_TRUE(token);
  const fs::path file = root() / "locks~" / "instances.lock";
  ASSERT_TRUE(fs::is_regular_file(file));
  fs::remove(file);  // someone can now lock a fresh file: our lease is gone
  auto other = make_directory_store({.root = root()}).value();
  ASSERT_TRUE(other->lock(k, kTtl, "them"));
  auto refreshed = store().refresh_lock(k, token->token, kTtl);
  ASSERT_FALSE(refreshed);
  EXPECT_EQ(refreshed.error().code, Errc::not_found);
  EXPECT_THAT(refreshed.error().message, HasSubstr("lock lost"));
  EXPECT_EQ(store().unlock(k, token->token).error().code, Errc::not_found);
}

TEST_F(DirectoryStoreTest, LockFilesNeverShowInListOrGet) {
  ASSERT_TRUE(store().create(key("instances/a"), "{}"));
  for (const char* k : {"instances.lock", "instances/b", "instances/a", "deep/x/y"}) {
    auto token = store().lock(key(k), kTtl, "me");
    ASSERT_TRUE(token) << k << ": " << token.error().message;
  }
  EXPECT_EQ(strs(store().list(Key()).value()), std::vector<std::string>{"instances/a"});
  EXPECT_EQ(strs(store().list(key("instances")).value()), std::vector<std::string>{"instances/a"});
  EXPECT_TRUE(store().list(key("deep")).value().empty());
  EXPECT_EQ(store().get(key("instances.lock")).error().code, Errc::not_found);
  EXPECT_EQ(store().get(key("instances/b")).error().code, Errc::not_found);
  EXPECT_EQ(store().get(key("instances/a")).value().data, "{}");
  // Different keys never share a lock file ('~' is escaped in keys).
  ASSERT_TRUE(store().lock(Key::from_segments({"deep~x", "y"}).value(), kTtl, "me"));
  EXPECT_TRUE(fs::is_regular_file(root() / "locks~" / "deep%7Ex~y"));
}

TEST_F(DirectoryStoreTest, LockRefusesASymbolicLinkAsLockFile) {
  fs::create_directories(root() / "locks~");
  fs::create_symlink(dir_.path() / "target", root() / "locks~" / "instances.lock");
  auto token = store().lock(key("instances.lock"), kTtl, "me");
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().code, Errc::permission);
  EXPECT_FALSE(fs::exists(dir_.path() / "target"));
}

TEST_F(DirectoryStoreTest, LockExcludesOtherProcessesAndDiesWithItsHolder) {
  const auto k = key("instances.lock");
  // The parent holds: a forked process is refused.
  {
    auto token = store().lock(k, kTtl, "parent");
    ASSERT_TRUE(token);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto own = make_directory_store({.root = root()});
      ::_exit(own ? exit_code_of((*own)->lock(k, kTtl, "child")) : kChildSetupFailed);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), exit_code_of(Errc::locked));
    ASSERT_TRUE(store().unlock(k, token->token));
  }
  // A child holds: the parent is refused until the child is killed, then
  // takes over at once.
  const pid_t holder = fork_lock_holder(k, "child");
  ASSERT_GT(holder, 0);
  auto refused = store().lock(k, kTtl, "parent");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::locked);
  EXPECT_THAT(refused.error().message, HasSubstr("child"));

  kill_and_reap(holder);
  auto taken = store().lock(k, kTtl, "parent");
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_TRUE(store().refresh_lock(k, taken->token, kTtl));
}

TEST_F(DirectoryStoreTest, AProgramTheHolderStartedKeepsTheLockAfterTheHolderDies) {
  // The holder locks, starts a program (as instance-guard starts its child),
  // and dies outright. Until that program is gone too, nobody else may lock.
  const auto k = key("instances.lock");
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  std::fflush(nullptr);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    ::close(report[0]);
    auto own = make_directory_store({.root = root()});
    if (!own || !(*own)->lock(k, kTtl, "holder")) ::_exit(kChildSetupFailed);
    const pid_t program = ::fork();
    if (program == 0) {
      ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    [[maybe_unused]] auto n = ::write(report[1], &program, sizeof program);
    ::_exit(0);  // dies without unlocking; its store is never destroyed
  }
  ::close(report[1]);
  pid_t program = 0;
  ASSERT_EQ(::read(report[0], &program, sizeof program), static_cast<ssize_t>(sizeof program));
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  auto refused = store().lock(k, kTtl, "next");
  ASSERT_FALSE(refused) << "the holder's program still runs";
  EXPECT_EQ(refused.error().code, Errc::locked);

  ASSERT_EQ(::kill(program, SIGKILL), 0);
  // The kernel releases the lock as the killed program exits; poll (bounded)
  // for that moment rather than guessing it.
  auto taken = store().lock(k, kTtl, "next");
  for (int i = 0; i < 5000 && !taken; ++i) {
    ::usleep(1000);
    taken = store().lock(k, kTtl, "next");
  }
  EXPECT_TRUE(taken) << taken.error().message;
}

// --wait's hand-over: a waiter blocks in the kernel on the lock file and is
// woken as the holder's lock goes, not at its next poll. Each wait below is
// given a minute: one that was not woken would come back false after it.
TEST_F(DirectoryStoreTest, AWaiterIsWokenTheMomentTheHolderDies) {
  const auto k = key("instances.lock");
  const pid_t holder = fork_lock_holder(k, "holder");
  ASSERT_GT(holder, 0);
  auto still = store().await_change(k, 20ms, {});
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_FALSE(*still);  // held: the wait times out

  std::optional<Result<bool>> woken;
  std::thread waiter([&] { woken = store().await_change(k, 1min, {}); });
  kill_and_reap(holder);
  waiter.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value());
  EXPECT_TRUE(**woken);
  EXPECT_TRUE(store().lock(k, kTtl, "next"));  // and the lock is free to take
}

TEST_F(DirectoryStoreTest, AWaiterIsWokenByAnUnlockInAnotherStore) {
  const auto k = key("instances.lock");
  auto other = make_directory_store({.root = root()}).value();
  auto held = other->lock(k, kTtl, "other");
  ASSERT_TRUE(held);
  std::optional<Result<bool>> woken;
  std::thread waiter([&] { woken = store().await_change(k, 1min, {}); });
  ASSERT_TRUE(other->unlock(k, held->token));
  waiter.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value());
  EXPECT_TRUE(**woken);
}

TEST_F(DirectoryStoreTest, AWaitForALockEndsWhenStopIsRequested) {
  const auto k = key("instances.lock");
  const pid_t holder = fork_lock_holder(k, "holder");
  ASSERT_GT(holder, 0);
  std::stop_source stop;
  std::optional<Result<bool>> woken;
  std::thread waiter([&] { woken = store().await_change(k, 1min, stop.get_token()); });
  stop.request_stop();
  waiter.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value());
  EXPECT_FALSE(**woken);  // not a change: the holder still holds
  EXPECT_EQ(store().lock(k, kTtl, "next").error().code, Errc::locked);
  kill_and_reap(holder);
  // The thread left waiting in the kernel serves the next wait, which sees
  // the holder gone.
  auto next = store().await_change(k, 1min, {});
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_TRUE(*next);
}

TEST_F(DirectoryStoreTest, AWaitForALockNobodyEverTookReturnsAtOnce) {
  auto free = store().await_change(key("instances.lock"), 1min, {});
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
}

TEST_F(DirectoryStoreTest, ClosingTheStoreReleasesItsLocks) {
  const auto k = key("instances.lock");
  auto first = make_directory_store({.root = root()}).value();
  ASSERT_TRUE(first->lock(k, kTtl, "first"));
  EXPECT_EQ(store().lock(k, kTtl, "second").error().code, Errc::locked);
  first.reset();
  EXPECT_TRUE(store().lock(k, kTtl, "second"));
}

TEST_F(DirectoryStoreTest, LockOfTheRootKeyIsInvalid) {
  EXPECT_EQ(store().lock(Key(), kTtl, "me").error().code, Errc::invalid);
}

}  // namespace
}  // namespace instance
