// The directory store (contract: include/instance/stores/directory.hpp).
//
// Layout under the root:
//   <root>/<seg>/<seg>/...  one file per document; its path is the key's
//                           escaped form (canonical segments are safe names)
//   <root>/tmp~/            temporary files, renamed into place once complete
//   <root>/lock~            flock()ed around every write, so that
//                           read-compare-write is atomic across threads and
//                           processes; holds the last timestamp issued
//   <root>/locks~/<name>    native leases: one lock file per lease key, its
//                           name the key's escaped segments joined by '~';
//                           holds the owner string of the last holder
// '~' is always escaped in keys, so no key can name the store's own files.
//
// Readers take no lock: a document is only ever replaced by rename, so a
// reader sees the old file or the new one, never a mix of both.
//
// Versions are "<inode>-<mtime ns>-<size>-<fnv1a64 of the bytes>" in hex.
// Every write stamps its file with an mtime strictly later than any stamp
// this root issued before (the last one is kept in lock~), so a version does
// not repeat even when the file system reuses an inode for identical bytes.
//
// Symbolic links: the root itself may be reached through one (the caller
// chose it). Below the root every folder is opened with
// O_NOFOLLOW|O_DIRECTORY and every file with O_NOFOLLOW, so a link is refused
// (Errc::permission) and its target is never read, written or listed.
//
// Native leases are OFD locks (fcntl F_OFD_SETLK, whole file) on the lease's
// lock file. The descriptor stays open in the store until unlock(); the
// kernel drops the lock when the holder closes it or dies, so a crashed
// holder on this host is replaced at once. OFD locks belong to an open file
// description, so two stores on one root in one process exclude each other
// like two processes do. Lock files are left in place on unlock: unlinking a
// lock file that another process has just opened would let a third lock a
// fresh file beside it.
//
// Thread safety: apart from the table of held leases (under a mutex) the
// store has no mutable state; every call opens its own descriptors, and
// flock() locks belong to an open file description, so threads of one
// process exclude each other like separate processes do.
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <expected>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "instance/liveness.hpp"
#include "instance/stores/directory.hpp"

namespace instance {
namespace {

constexpr char kTempFolder[] = "tmp~";
constexpr char kLockFile[] = "lock~";
constexpr char kLeaseFolder[] = "locks~";

// ---------------------------------------------------------------------------
// Small RAII helpers.

// Owns one file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};
using DirStream = std::unique_ptr<DIR, DirCloser>;

// ---------------------------------------------------------------------------
// Pure helpers.

std::uint64_t fnv1a64(std::string_view data) noexcept {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::uint64_t mtime_ns(const struct stat& st) noexcept {
  return static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(st.st_mtim.tv_nsec);
}

std::string version_of(const struct stat& st, std::string_view data) {
  char buf[96];
  std::snprintf(
      buf, sizeof buf, "%llx-%llx-%llx-%016llx", static_cast<unsigned long long>(st.st_ino),
      static_cast<unsigned long long>(mtime_ns(st)), static_cast<unsigned long long>(st.st_size),
      static_cast<unsigned long long>(fnv1a64(data)));
  return buf;
}

// A file name as it may safely appear in a message or a log line: control
// bytes, quotes, backslashes and non-ASCII bytes become \xNN.
std::string printable(std::string_view name) {
  std::string out = "\"";
  for (unsigned char c : name) {
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string join(std::span<const std::string> segments) {
  std::string out;
  for (const auto& s : segments) {
    if (!out.empty()) out.push_back('/');
    out += s;
  }
  return out;
}

Errc errc_from_errno(int err) noexcept {
  switch (err) {
    case ENOENT:
      return Errc::not_found;
    case EEXIST:
      return Errc::already_exists;
    case EACCES:
    case EPERM:
    case EROFS:
    case ELOOP:
      return Errc::permission;
    case ENOSPC:
    case EDQUOT:
      return Errc::no_space;
    case ENAMETOOLONG:
      return Errc::invalid;
    default:
      return Errc::unavailable;
  }
}

// Whether `path` (or the nearest folder above it that exists) is on a file
// system of this host's own disks or memory, which no other host can
// reach; anything else (NFS, SMB, FUSE, a cluster file system) or unknown
// is not.
bool on_local_file_system(std::filesystem::path path) {
  struct statfs fs {};
  while (::statfs(path.c_str(), &fs) != 0) {
    if (errno != ENOENT || !path.has_relative_path()) return false;
    path = path.parent_path();
  }
  switch (static_cast<unsigned long>(fs.f_type)) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case 0x2FC12FC1UL:  // ZFS
    case 0xCA451A4EUL:  // bcachefs
      return true;
    default:
      return false;
  }
}

enum class Kind { missing, regular, folder, symlink, other };

// What a file of this mode (st_mode's type bits) is.
Kind kind_of_mode(mode_t mode) {
  if (S_ISLNK(mode)) return Kind::symlink;
  if (S_ISDIR(mode)) return Kind::folder;
  if (S_ISREG(mode)) return Kind::regular;
  return Kind::other;
}

// What `name` in `dir` is, without following a link; the errno on failure.
std::expected<Kind, int> kind_of(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Kind::missing;
    return std::unexpected(errno);
  }
  return kind_of_mode(st.st_mode);
}

// Writes all of `data`; the errno on failure.
std::expected<void, int> write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(errno);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

// ---------------------------------------------------------------------------
// Error messages: "<op> <key> in file:///root: <detail>".

class Operation {
 public:
  Operation(std::string_view op, const Key& key, const std::string& where)
      : op_(op), key_(key), where_(where) {}

  const Key& key() const noexcept { return key_; }

  std::unexpected<Error> fail(Errc code, std::string_view detail) const {
    std::string msg(op_);
    if (!key_.empty()) msg += " " + key_.str();
    msg += " in " + where_ + ": ";
    msg += detail;
    return std::unexpected(Error{code, std::move(msg)});
  }

  // `what` says what failed ("cannot open folder instances").
  std::unexpected<Error> fail_errno(int err, std::string_view what) const {
    if (err == ELOOP) return fail(Errc::permission, std::string(what) + ": symbolic link refused");
    return fail(errc_from_errno(err),
                std::string(what) + ": " + std::generic_category().message(err));
  }

  std::unexpected<Error> symlink(std::string_view rel) const {
    return fail(Errc::permission,
                std::string(rel) +
                    " is a symbolic link; the directory store refuses symbolic links below its "
                    "root (replace the link with the real folder or file)");
  }

 private:
  std::string_view op_;
  const Key& key_;
  const std::string& where_;
};

// Precondition shared by the writes: a document key and a document that fits.
Result<void> check_write(const Operation& ctx, std::string_view data) {
  if (ctx.key().empty()) return ctx.fail(Errc::invalid, "the root key is not a document");
  if (data.size() > kMaxDocumentSize) {
    return ctx.fail(Errc::invalid,
                    "document of " + std::to_string(data.size()) + " bytes exceeds the 1 MiB cap");
  }
  return {};
}

// Opens the existing folder `name` in `dir` without following a link.
// Errc::not_found when it is missing or is a document.
Result<UniqueFd> open_subfolder(const Operation& ctx, int dir, const std::string& name,
                                const std::string& rel) {
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return UniqueFd(fd);
  const int err = errno;
  if (err == ENOTDIR || err == ELOOP) {
    const auto kind = kind_of(dir, name);
    if (kind && *kind == Kind::symlink) return ctx.symlink(rel);
    return ctx.fail(Errc::not_found, rel + " is a document, not a folder");
  }
  return ctx.fail_errno(err, "cannot open folder " + rel);
}

// Opens (with `create`, makes first) the folder `segments` below `root`, one
// segment at a time, never following a link. A new folder's parent is
// synced so that the folder survives a crash.
Result<UniqueFd> open_folder(const Operation& ctx, int root, std::span<const std::string> segments,
                             bool create) {
  UniqueFd current(::dup(root));
  if (current.get() < 0) return ctx.fail_errno(errno, "cannot duplicate the root descriptor");
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const std::string rel = join(segments.first(i + 1));
    auto next = open_subfolder(ctx, current.get(), segments[i], rel);
    if (!next && create && next.error().code == Errc::not_found) {
      if (::mkdirat(current.get(), segments[i].c_str(), 0777) == 0) {
        ::fsync(current.get());
      } else if (errno != EEXIST) {
        return ctx.fail_errno(errno, "cannot create folder " + rel);
      }
      next = open_subfolder(ctx, current.get(), segments[i], rel);
      if (!next && next.error().code == Errc::not_found) {
        return ctx.fail(Errc::invalid,
                        rel + " is a document, so it cannot hold " + ctx.key().str());
      }
    }
    if (!next) return std::unexpected(next.error());
    current = std::move(*next);
  }
  return current;
}

// Reads the document `leaf` in `parent` (`rel` names it in messages). A link
// is refused; anything but a regular file of at most kMaxDocumentSize bytes
// is Errc::malformed and left alone. A FIFO or device is never opened.
//
// `booted_at`, on a root without syncs: this boot's start; a document whose
// status last changed before it is marked from_earlier_boot.
Result<Document> read_document(const Operation& ctx, int parent, const std::string& leaf,
                               const std::string& rel,
                               const std::optional<struct timespec>& booted_at) {
  const auto kind = kind_of(parent, leaf);
  if (!kind) return ctx.fail_errno(kind.error(), "cannot inspect " + rel);
  switch (*kind) {
    case Kind::missing:
      return ctx.fail(Errc::not_found, "not found");
    case Kind::symlink:
      return ctx.symlink(rel);
    case Kind::folder:
      return ctx.fail(Errc::malformed, rel + " is a folder where a document should be");
    case Kind::other:
      return ctx.fail(Errc::malformed, rel + " is not a regular file");
    case Kind::regular:
      break;
  }
  UniqueFd fd(::openat(parent, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return ctx.fail(Errc::not_found, "not found");
    return ctx.fail_errno(errno, "cannot open " + rel);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ctx.fail_errno(errno, "cannot inspect " + rel);
  if (!S_ISREG(st.st_mode)) return ctx.fail(Errc::malformed, rel + " is not a regular file");
  auto oversized = [&](std::string_view size) {
    return ctx.fail(Errc::malformed, rel + " is " + std::string(size) +
                                         " bytes, over the 1 MiB document cap; left in place");
  };
  if (static_cast<std::uint64_t>(st.st_size) > kMaxDocumentSize) {
    return oversized(std::to_string(st.st_size));
  }
  // Sized by the file, one byte over so that growth meanwhile shows; grown
  // up to one byte over the cap if it did (a 1 MiB buffer per read made a
  // claim over 1,000 records write 1 GiB of zeros).
  std::string data(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == data.size()) {
      if (data.size() > kMaxDocumentSize) break;
      data.resize(std::min(data.size() * 2, kMaxDocumentSize + 1));
    }
    const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ctx.fail_errno(errno, "cannot read " + rel);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxDocumentSize) return oversized("more than " + std::to_string(kMaxDocumentSize));
  data.resize(got);
  std::string version = version_of(st, data);
  const bool earlier =
      booted_at &&
      (st.st_ctim.tv_sec < booted_at->tv_sec ||
       (st.st_ctim.tv_sec == booted_at->tv_sec && st.st_ctim.tv_nsec < booted_at->tv_nsec));
  return Document{
      .data = std::move(data), .version = std::move(version), .from_earlier_boot = earlier};
}

// ---------------------------------------------------------------------------
// Writing.

// The exclusive lock on <root>/lock~, held for the lifetime of the object.
class WriteLock {
 public:
  static Result<WriteLock> acquire(const Operation& ctx, int root) {
    int fd = ::openat(root, kLockFile, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    const bool writable = fd >= 0;
    if (fd < 0 && errno == EACCES) {
      // Someone else's lock file can still be locked read-only; when there is
      // none, the folder is read-only and EACCES is the answer.
      fd = ::openat(root, kLockFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT) errno = EACCES;
    }
    if (fd < 0) return ctx.fail_errno(errno, std::string("cannot open the lock file ") + kLockFile);
    WriteLock lock(UniqueFd(fd), writable);
    while (::flock(lock.fd_.get(), LOCK_EX) != 0) {
      if (errno != EINTR) return ctx.fail_errno(errno, std::string("cannot lock ") + kLockFile);
    }
    return lock;
  }

  // A timestamp strictly later than every one issued under this lock file
  // before (and no earlier than now).
  struct timespec next_stamp() {
    char buf[32] = {};
    std::int64_t last = 0;
    const ssize_t n = ::pread(fd_.get(), buf, sizeof buf - 1, 0);
    if (n > 0) std::from_chars(buf, buf + n, last);  // garbage reads as 0
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const std::int64_t stamp =
        std::max<std::int64_t>(std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec, last + 1);
    if (writable_) {
      const int len = std::snprintf(buf, sizeof buf, "%020lld\n", static_cast<long long>(stamp));
      // A failed write is not fatal: this stamp is still later than now and
      // than the last one; only the next writer's guarantee weakens.
      [[maybe_unused]] const ssize_t written =
          ::pwrite(fd_.get(), buf, static_cast<std::size_t>(len), 0);
    }
    return {.tv_sec = stamp / 1'000'000'000, .tv_nsec = stamp % 1'000'000'000};
  }

 private:
  WriteLock(UniqueFd fd, bool writable) : fd_(std::move(fd)), writable_(writable) {}
  UniqueFd fd_;
  bool writable_;
};

// A new file in tmp~, removed again unless commit() is called.
class TempFile {
 public:
  static Result<TempFile> create(const Operation& ctx, int temp_folder) {
    static std::atomic<std::uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".tmp";
      const int fd = ::openat(temp_folder, name.c_str(),
                              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
      if (fd >= 0) return TempFile(temp_folder, std::move(name), UniqueFd(fd));
      if (errno != EEXIST) {
        return ctx.fail_errno(errno,
                              std::string("cannot create a temporary file in ") + kTempFolder);
      }
    }
    return ctx.fail(Errc::unavailable,
                    std::string("cannot find a free temporary file name in ") + kTempFolder);
  }
  TempFile(TempFile&& other) noexcept
      : folder_(other.folder_),
        name_(std::move(other.name_)),
        fd_(std::move(other.fd_)),
        committed_(std::exchange(other.committed_, true)) {}
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    if (!committed_) ::unlinkat(folder_, name_.c_str(), 0);
  }

  int fd() const noexcept { return fd_.get(); }
  const std::string& name() const noexcept { return name_; }
  void commit() noexcept { committed_ = true; }

 private:
  TempFile(int folder, std::string name, UniqueFd fd)
      : folder_(folder), name_(std::move(name)), fd_(std::move(fd)) {}
  int folder_;  // borrowed: outlives this object
  std::string name_;
  UniqueFd fd_;
  bool committed_ = false;
};

enum class Install { no_clobber, overwrite };

// Moves the finished temporary file to `leaf` in `parent`. no_clobber uses
// RENAME_NOREPLACE, or link()+unlink where the file system lacks it.
Result<void> install(const Operation& ctx, TempFile& temp, int temp_folder, int parent,
                     const std::string& leaf, Install mode) {
  const char* from = temp.name().c_str();
  if (mode == Install::overwrite) {
    if (::renameat(temp_folder, from, parent, leaf.c_str()) != 0) {
      if (errno == EISDIR) {
        return ctx.fail(Errc::malformed,
                        ctx.key().str() + " is a folder where a document should be");
      }
      return ctx.fail_errno(errno, "cannot rename the temporary file into place");
    }
    temp.commit();
    return {};
  }
  if (::renameat2(temp_folder, from, parent, leaf.c_str(), RENAME_NOREPLACE) == 0) {
    temp.commit();
    return {};
  }
  if (const int err = errno; err != EINVAL && err != ENOSYS) {
    if (err == EEXIST) return ctx.fail(Errc::already_exists, "already exists");
    return ctx.fail_errno(err, "cannot rename the temporary file into place");
  }
  if (::linkat(temp_folder, from, parent, leaf.c_str(), 0) != 0) {
    if (errno == EEXIST) return ctx.fail(Errc::already_exists, "already exists");
    return ctx.fail_errno(errno, "cannot link the temporary file into place");
  }
  return {};  // ~TempFile unlinks the temporary name; the document keeps the inode
}

// ---------------------------------------------------------------------------

class DirectoryStore final : public Store {
 public:
  DirectoryStore(std::filesystem::path root, bool sync, std::string boot_id,
                 std::optional<struct timespec> booted_at)
      : root_(std::move(root)),
        where_("file://" + root_.string()),
        sync_(sync),
        boot_id_(std::move(boot_id)),
        booted_at_(sync ? std::nullopt : booted_at) {}

  std::string describe() const override { return where_; }

  Capabilities capabilities() override {
    // native_lease: an OFD lock, released by the kernel when the holder dies.
    // Its expiry is the holder's death, not a clock, so server_clock stays
    // false (no clock is involved at all).
    // batch_reads: get_many opens the root and each folder once per batch.
    // atomic_lease: claim_lease takes the lock, numbers the epoch in the
    // lock file and writes the lease document and the record in one call;
    // nothing between them can interleave, since every writer of the lease
    // document holds the lock.
    return {.versions = true,
            .conditional_writes = true,
            .native_lease = true,
            .server_clock = false,
            .batch_reads = true,
            .atomic_lease = true};
  }

  // As get() for each key, but the root and a folder are opened once for
  // the keys in it (a scan of instances/ reads hundreds of records there).
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    std::vector<Result<Document>> out;
    out.reserve(keys.size());
    std::optional<UniqueFd> root;
    std::vector<std::string> folder;  // the segments `parent` opens
    std::optional<Result<UniqueFd>> parent;
    for (const Key& key : keys) {
      const Operation ctx("get", key, where_);
      if (key.empty()) {
        out.push_back(ctx.fail(Errc::invalid, "the root key is not a document"));
        continue;
      }
      if (!root) {
        auto opened = open_root(ctx, false);
        if (!opened) {
          out.push_back(std::unexpected(opened.error()));
          continue;
        }
        root.emplace(std::move(*opened));
      }
      const auto segments = key.escaped_segments();
      const auto wanted = parent_of(segments);
      if (!parent || !*parent || !std::ranges::equal(wanted, folder)) {
        folder.assign(wanted.begin(), wanted.end());
        parent.emplace(open_folder(ctx, root->get(), wanted, false));
      }
      if (!*parent) {
        out.push_back(std::unexpected((*parent).error()));
        continue;
      }
      out.push_back(read_document(ctx, (*parent)->get(), segments.back(), key.str(), booted_at_));
    }
    return out;
  }

  Result<Document> get(const Key& key) override {
    const Operation ctx("get", key, where_);
    if (key.empty()) return ctx.fail(Errc::invalid, "the root key is not a document");
    auto root = open_root(ctx, false);
    if (!root) return std::unexpected(root.error());
    const auto segments = key.escaped_segments();
    auto parent = open_folder(ctx, root->get(), parent_of(segments), false);
    if (!parent) return std::unexpected(parent.error());
    return read_document(ctx, parent->get(), segments.back(), key.str(), booted_at_);
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    const Operation ctx("create", key, where_);
    return locked_write(ctx, data, true,
                        [&](int parent, const std::string& leaf) -> Result<Install> {
                          const auto kind = kind_of(parent, leaf);
                          if (!kind)
                            return ctx.fail_errno(kind.error(), "cannot inspect " + key.str());
                          if (*kind == Kind::symlink) return ctx.symlink(key.str());
                          if (*kind != Kind::missing)
                            return ctx.fail(Errc::already_exists, "already exists");
                          return Install::no_clobber;
                        });
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    const Operation ctx("replace", key, where_);
    return locked_write(
        ctx, data, true, [&](int parent, const std::string& leaf) -> Result<Install> {
          const auto kind = kind_of(parent, leaf);
          if (!kind) return ctx.fail_errno(kind.error(), "cannot inspect " + key.str());
          if (*kind == Kind::symlink) return ctx.symlink(key.str());
          if (*kind == Kind::folder) {
            return ctx.fail(Errc::malformed, key.str() + " is a folder where a document should be");
          }
          return Install::overwrite;
        });
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    const Operation ctx("conditional replace", key, where_);
    return locked_write(ctx, data, false,
                        [&](int parent, const std::string& leaf) -> Result<Install> {
                          auto current = read_document(ctx, parent, leaf, key.str(), booted_at_);
                          if (!current) return std::unexpected(current.error());
                          if (current->version != version)
                            return ctx.fail(Errc::conflict, "version does not match");
                          return Install::overwrite;
                        });
  }

  Result<void> remove(const Key& key) override {
    const Operation ctx("remove", key, where_);
    return locked_remove(ctx, [&](int parent, const std::string& leaf) -> Result<void> {
      const auto kind = kind_of(parent, leaf);
      if (!kind) return ctx.fail_errno(kind.error(), "cannot inspect " + key.str());
      switch (*kind) {
        case Kind::missing:
          return ctx.fail(Errc::not_found, "not found");
        case Kind::symlink:
          return ctx.symlink(key.str());
        case Kind::folder:
          return ctx.fail(Errc::malformed, key.str() + " is a folder where a document should be");
        case Kind::regular:
        case Kind::other:
          return {};
      }
      return {};
    });
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    const Operation ctx("conditional remove", key, where_);
    return locked_remove(ctx, [&](int parent, const std::string& leaf) -> Result<void> {
      auto current = read_document(ctx, parent, leaf, key.str(), booted_at_);
      if (!current) return std::unexpected(current.error());
      if (current->version != version) return ctx.fail(Errc::conflict, "version does not match");
      return {};
    });
  }

  // Native leases: an OFD write lock on <root>/locks~/<name>. `ttl` plays no
  // part: the lock lasts until unlock() or until the holding process dies.
  // The grant's epoch is numbered in the lock file (number()).
  Result<LockGrant> lock(const Key& key, Duration, std::string_view owner) override {
    const Operation ctx("lock", key, where_);
    auto taken = take(ctx, key);
    if (!taken) return std::unexpected(taken.error());
    auto epoch = number(ctx, *taken, 0, owner);
    if (!epoch) return std::unexpected(epoch.error());
    return LockGrant{.token = keep(std::move(*taken)), .epoch = *epoch};
  }

  // The whole claim in one call: the lock, the lease document read, the
  // epoch numbered (above the document's and every earlier grant's), then,
  // where the document is absent or its epoch reads, the lease document and
  // the record written and the documents under `scan` read back. A failure
  // after the lock gives it back and puts the lease document back as it was.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c) override {
    const Operation ctx("claim lease", c.lock, where_);
    if (c.lease == c.record) return ctx.fail(Errc::invalid, "the lease and the record share a key");
    {
      const Operation record_ctx("claim lease", c.record, where_);
      if (auto ok = check_write(record_ctx, c.record_data); !ok) return std::unexpected(ok.error());
    }
    auto taken = take(ctx, c.lock);
    if (!taken) return std::unexpected(taken.error());
    LeaseClaimed out;
    out.previous = get(c.lease);
    std::optional<std::uint64_t> floor;
    if (out.previous) {
      floor = lease_epoch(out.previous->data);
    } else if (out.previous.error().code == Errc::not_found) {
      floor = 0;
    }
    auto epoch = number(ctx, *taken, floor.value_or(0), c.owner);
    if (!epoch) return std::unexpected(epoch.error());
    out.grant = LockGrant{.token = keep(std::move(*taken)), .epoch = *epoch};
    // An unreadable document, or one without an epoch: the caller decides.
    if (!floor) return out;
    auto undo = [&](const Error& why) -> Result<LeaseClaimed> {
      if (out.previous) {
        (void)replace(c.lease, out.previous->data);
      } else {
        (void)remove(c.lease);
      }
      (void)unlock(c.lock, out.grant.token);
      return std::unexpected(why);
    };
    auto lease = replace(c.lease, c.document.fill(*epoch, out.grant.token));
    if (!lease) return undo(lease.error());
    auto record = replace(c.record, c.record_data);
    if (!record) return undo(record.error());
    auto listed = list(c.scan);
    if (!listed) return undo(listed.error());
    std::erase(*listed, c.record);
    auto docs = get_many(*listed);
    if (!docs) return undo(docs.error());
    out.written = true;
    out.epoch = *epoch;
    out.lease_version = std::move(*lease);
    out.record_version = std::move(*record);
    out.scanned.reserve(listed->size());
    for (std::size_t i = 0; i < listed->size(); ++i) {
      out.scanned.emplace_back(std::move((*listed)[i]), std::move((*docs)[i]));
    }
    return out;
  }

  // The lock checked, then the lease document and the record rewritten.
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& r) override {
    auto granted = refresh_lock(r.lock, r.token, r.ttl);
    if (!granted) return std::unexpected(granted.error());
    auto lease = replace(r.lease, r.lease_data);
    if (!lease) return std::unexpected(lease.error());
    auto record = replace(r.record, r.record_data);
    if (!record) return std::unexpected(record.error());
    return LeaseRenewed{.granted = *granted,
                        .written = true,
                        .lease_version = std::move(*lease),
                        .record_version = std::move(*record)};
  }

  // The record removed; then, while the lock is still ours, the lease
  // document written and the lock given back (a lock no longer ours and
  // its document are another holder's, and stay).
  Result<bool> end_lease(const LeaseEnd& e) override {
    if (auto removed = remove(e.record); !removed && removed.error().code != Errc::not_found) {
      return std::unexpected(removed.error());
    }
    {
      const std::lock_guard guard(leases_mutex_);
      if (find_lease(e.lock, e.token) == leases_.end()) return true;
    }
    if (auto lease = replace(e.lease, e.lease_data); !lease) return std::unexpected(lease.error());
    if (auto unlocked = unlock(e.lock, e.token); !unlocked) {
      return std::unexpected(unlocked.error());
    }
    return true;
  }

  // The lease is ours while its descriptor is open and the lock file is still
  // the file it locked (not removed or replaced behind our back).
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration) override {
    const Operation ctx("refresh lock", key, where_);
    const std::lock_guard guard(leases_mutex_);
    const auto it = find_lease(key, token);
    if (it == leases_.end()) {
      return ctx.fail(Errc::not_found, "no such lock held by this store (unlocked or never taken)");
    }
    auto held = still_held(ctx, it->second);
    if (!held) {
      // Only a definite answer ends the lease; a file system that cannot be
      // read right now (EIO, ...) is a failed refresh, retried next period.
      if (held.error().code == Errc::not_found) leases_.erase(it);
      return std::unexpected(held.error());
    }
    return Duration::zero();
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    const Operation ctx("unlock", key, where_);
    const std::lock_guard guard(leases_mutex_);
    const auto it = find_lease(key, token);
    if (it == leases_.end()) {
      return ctx.fail(Errc::not_found, "no such lock held by this store (already unlocked)");
    }
    // Unlock explicitly: a child forked without exec shares the open file
    // description, and closing our descriptor alone would leave it locked.
    ofd_lock(it->second.fd.get(), F_UNLCK);
    leases_.erase(it);  // closes the descriptor; the lock file stays
    return {};
  }

  // Waits for the OFD lock on the lease key's file to be free: a thread
  // blocks in the kernel for a read lock (F_OFD_SETLKW), which is granted
  // the moment the holder unlocks or its last process dies, and gives it
  // back at once. The thread outlives a wait that timed out and serves the
  // next one on the same key, so a waiter never has more than one per key.
  // A key without a lock file has no lock to wait for (true at once).
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop) override {
    const Operation ctx("wait for the lock", key, where_);
    if (key.empty()) return ctx.fail(Errc::invalid, "the root key cannot be locked");
    const std::string name = lease_file_name(key);
    std::shared_ptr<LockWait> wait;
    {
      const std::lock_guard guard(waits_mutex_);
      auto& slot = waits_[name];
      if (!slot) {
        auto folder = open_lease_folder(ctx, false);
        if (!folder) {
          if (folder.error().code == Errc::not_found) return true;
          return std::unexpected(folder.error());
        }
        UniqueFd fd(::openat(folder->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (fd.get() < 0) {
          if (errno == ENOENT) return true;
          if (errno == ELOOP) return ctx.symlink(std::string(kLeaseFolder) + "/" + name);
          return ctx.fail_errno(errno, "cannot open the lock file " + name);
        }
        slot = std::make_shared<LockWait>();
        std::thread([wait = slot, fd = std::move(fd)] {
          struct flock fl {};
          fl.l_type = F_RDLCK;
          fl.l_whence = SEEK_SET;
          int err = 0;
          while (::fcntl(fd.get(), F_OFD_SETLKW, &fl) != 0) {
            if (errno != EINTR) {
              err = errno;
              break;
            }
          }
          if (err == 0) ofd_lock(fd.get(), F_UNLCK);
          wait->finish(err);
        }).detach();
      }
      wait = slot;
    }
    const int outcome = wait->wait(timeout, stop);
    if (outcome == LockWait::kPending) return false;
    {
      const std::lock_guard guard(waits_mutex_);
      if (auto it = waits_.find(name); it != waits_.end() && it->second == wait) waits_.erase(it);
    }
    if (outcome != 0) return ctx.fail_errno(outcome, "cannot wait for the lock on " + name);
    return true;
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    const Operation ctx("list", prefix, where_);
    std::vector<Key> keys;
    auto root = open_root(ctx, false);
    if (!root) return absent_is_empty(root.error(), std::move(keys));
    if (prefix.empty()) {
      auto walked = walk(ctx, UniqueFd(::dup(root->get())), prefix, true, keys);
      if (!walked) return std::unexpected(walked.error());
      return keys;
    }
    const auto segments = prefix.escaped_segments();
    auto parent = open_folder(ctx, root->get(), parent_of(segments), false);
    if (!parent) return absent_is_empty(parent.error(), std::move(keys));
    const auto kind = kind_of(parent->get(), segments.back());
    if (!kind) return ctx.fail_errno(kind.error(), "cannot inspect " + prefix.str());
    switch (*kind) {
      case Kind::missing:
        return keys;
      case Kind::symlink:
        return ctx.symlink(prefix.str());
      case Kind::regular:
      case Kind::other:
        keys.push_back(prefix);
        return keys;
      case Kind::folder:
        break;
    }
    auto folder = open_subfolder(ctx, parent->get(), segments.back(), prefix.str());
    if (!folder) return absent_is_empty(folder.error(), std::move(keys));
    auto walked = walk(ctx, std::move(*folder), prefix, false, keys);
    if (!walked) return std::unexpected(walked.error());
    return keys;
  }

 private:
  static std::span<const std::string> parent_of(const std::vector<std::string>& segments) {
    return std::span<const std::string>(segments).first(segments.size() - 1);
  }

  static Result<std::vector<Key>> absent_is_empty(const Error& error, std::vector<Key> keys) {
    if (error.code == Errc::not_found) return keys;
    return std::unexpected(error);
  }

  // Opens the root folder (following a link: the caller chose this path).
  // With `create`, a missing root is made, parents included.
  Result<UniqueFd> open_root(const Operation& ctx, bool create) const {
    int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
      std::error_code ec;
      std::filesystem::create_directories(root_, ec);
      if (ec) return ctx.fail_errno(ec.value(), "cannot create the root folder " + root_.string());
      UniqueFd above(::open(root_.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (above.get() >= 0) ::fsync(above.get());
      fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
      if (errno == ENOENT) return ctx.fail(Errc::not_found, "not found (no root folder)");
      return ctx.fail_errno(errno, "cannot open the root folder " + root_.string());
    }
    return UniqueFd(fd);
  }

  // Under the write lock: opens the key's folder (making it when
  // `create_folders`), lets `decide` inspect the current state and choose how
  // to install, then writes a temporary file and installs it.
  template <class Decide>
  Result<std::string> locked_write(const Operation& ctx, std::string_view data, bool create_folders,
                                   Decide decide) {
    if (auto ok = check_write(ctx, data); !ok) return std::unexpected(ok.error());
    auto root = open_root(ctx, create_folders);
    if (!root) return std::unexpected(root.error());
    auto lock = WriteLock::acquire(ctx, root->get());
    if (!lock) return std::unexpected(lock.error());
    const auto segments = ctx.key().escaped_segments();
    auto parent = open_folder(ctx, root->get(), parent_of(segments), create_folders);
    if (!parent) return std::unexpected(parent.error());
    auto mode = decide(parent->get(), segments.back());
    if (!mode) return std::unexpected(mode.error());
    return write_document(ctx, *lock, root->get(), parent->get(), segments.back(), data, *mode,
                          sync_);
  }

  // Writes `data` to a stamped temporary file, installs it as `leaf` in
  // `parent`; with `sync`, the file is synced before and the folder after.
  // Returns the new version.
  static Result<std::string> write_document(const Operation& ctx, WriteLock& lock, int root,
                                            int parent, const std::string& leaf,
                                            std::string_view data, Install mode, bool sync) {
    const std::string temp_name(kTempFolder);
    auto temp_folder = open_folder(ctx, root, std::span<const std::string>(&temp_name, 1), true);
    if (!temp_folder) return std::unexpected(temp_folder.error());
    auto temp = TempFile::create(ctx, temp_folder->get());
    if (!temp) return std::unexpected(temp.error());
    if (auto written = write_all(temp->fd(), data); !written) {
      return ctx.fail_errno(written.error(), "cannot write temporary file");
    }
    const struct timespec stamp = lock.next_stamp();
    const struct timespec times[2] = {stamp, stamp};
    if (::futimens(temp->fd(), times) != 0) {
      return ctx.fail_errno(errno, "cannot stamp temporary file");
    }
    if (sync && ::fsync(temp->fd()) != 0) {
      return ctx.fail_errno(errno, "cannot sync temporary file");
    }
    struct stat st {};
    if (::fstat(temp->fd(), &st) != 0)
      return ctx.fail_errno(errno, "cannot inspect temporary file");
    auto installed = install(ctx, *temp, temp_folder->get(), parent, leaf, mode);
    if (!installed) return std::unexpected(installed.error());
    if (sync && ::fsync(parent) != 0) return ctx.fail_errno(errno, "cannot sync folder");
    return version_of(st, data);
  }

  // Under the write lock: lets `check` inspect the document, then unlinks it
  // and (with sync_) syncs its folder.
  template <class Check>
  Result<void> locked_remove(const Operation& ctx, Check check) {
    if (ctx.key().empty()) return ctx.fail(Errc::invalid, "the root key is not a document");
    auto root = open_root(ctx, false);
    if (!root) return std::unexpected(root.error());
    auto lock = WriteLock::acquire(ctx, root->get());
    if (!lock) return std::unexpected(lock.error());
    const auto segments = ctx.key().escaped_segments();
    auto parent = open_folder(ctx, root->get(), parent_of(segments), false);
    if (!parent) return std::unexpected(parent.error());
    if (auto ok = check(parent->get(), segments.back()); !ok) return ok;
    if (::unlinkat(parent->get(), segments.back().c_str(), 0) != 0) {
      return ctx.fail_errno(errno, "cannot remove " + ctx.key().str());
    }
    if (sync_ && ::fsync(parent->get()) != 0) return ctx.fail_errno(errno, "cannot sync folder");
    return {};
  }

  // Appends every document below the open folder `dir` (the key `base`) to
  // `keys`. At the root the store's own files (names with '~') are skipped.
  // Every other name is listed, canonical or not (Key::from_listing): the
  // original guard judges every file under instances/ whatever its name, and
  // skipping one could hide a live record.
  static Result<void> walk(const Operation& ctx, UniqueFd dir, const Key& base, bool at_root,
                           std::vector<Key>& keys) {
    if (dir.get() < 0) return ctx.fail_errno(errno, "cannot open folder " + base.str());
    DirStream stream(::fdopendir(dir.get()));
    if (!stream) return ctx.fail_errno(errno, "cannot read folder " + base.str());
    dir.release();
    const int fd = ::dirfd(stream.get());
    while (true) {
      errno = 0;
      const struct dirent* entry = ::readdir(stream.get());
      if (entry == nullptr) {
        if (errno != 0) return ctx.fail_errno(errno, "cannot read folder " + base.str());
        return {};
      }
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (at_root && name.find('~') != std::string::npos) continue;
      const std::string rel = base.empty() ? name : base.str() + "/" + name;
      auto child = Key::from_listing(rel);
      if (!child) return ctx.fail(Errc::internal, "cannot form a key from " + printable(rel));
      auto added = visit(ctx, fd, name, entry->d_type, *child, keys);
      if (!added) return added;
    }
  }

  // One entry of a folder being listed: recurse into folders, refuse links,
  // list everything else (get() reports what cannot be a document). The
  // entry's type comes from the folder itself where the file system gives
  // it (ext4, XFS, Btrfs, tmpfs do), so a listing costs no stat per entry;
  // only DT_UNKNOWN asks the file.
  static Result<void> visit(const Operation& ctx, int dir, const std::string& name,
                            unsigned char type, const Key& child, std::vector<Key>& keys) {
    const auto kind = type == DT_UNKNOWN ? kind_of(dir, name) : kind_of_mode(DTTOIF(type));
    if (!kind) return ctx.fail_errno(kind.error(), "cannot inspect " + child.str());
    switch (*kind) {
      case Kind::missing:
        return {};  // removed while we listed
      case Kind::symlink:
        return ctx.symlink(child.str());
      case Kind::regular:
      case Kind::other:
        keys.push_back(child);
        return {};
      case Kind::folder:
        break;
    }
    auto folder = open_subfolder(ctx, dir, name, child.str());
    if (!folder) {
      if (folder.error().code == Errc::not_found) return {};  // removed while we listed
      return std::unexpected(folder.error());
    }
    return walk(ctx, std::move(*folder), child, false, keys);
  }

  // Native leases held through this store object.
  struct Lease {
    Key key;
    std::string name;  // the lock file in locks~
    UniqueFd fd;       // holds the OFD lock while open
  };
  using Leases = std::map<std::uint64_t, Lease>;

  // A lock file opened and locked, not yet kept in leases_ (closing it
  // gives the lock back).
  struct Taken {
    Key key;
    std::string name;
    UniqueFd fd;
  };

  // Opens <root>/locks~/<name> and takes its OFD write lock; Errc::locked
  // when another holds it. The descriptor is inherited by children from
  // here on (see lock()'s contract in directory.hpp).
  Result<Taken> take(const Operation& ctx, const Key& key) {
    if (key.empty()) return ctx.fail(Errc::invalid, "the root key cannot be locked");
    auto folder = open_lease_folder(ctx, true);
    if (!folder) return std::unexpected(folder.error());
    const std::string name = lease_file_name(key);
    const std::string rel = std::string(kLeaseFolder) + "/" + name;
    UniqueFd fd(::openat(folder->get(), name.c_str(),
                         O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
      if (errno == ELOOP) return ctx.symlink(rel);
      return ctx.fail_errno(errno, "cannot open the lock file " + rel);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ctx.fail_errno(errno, "cannot inspect " + rel);
    if (!S_ISREG(st.st_mode)) return ctx.fail(Errc::malformed, rel + " is not a regular file");
    if (const int err = ofd_lock(fd.get(), F_WRLCK); err != 0) {
      if (err == EAGAIN || err == EACCES) {
        return ctx.fail(Errc::locked, "held by another process or guard" + holder_of(fd.get()));
      }
      if (err == EINVAL) {
        return ctx.fail(Errc::unsupported,
                        "this kernel or file system has no OFD locks (fcntl F_OFD_SETLK)");
      }
      if (err == ENOLCK)
        return ctx.fail(Errc::unavailable, "cannot lock " + rel + ": no locks left");
      return ctx.fail_errno(err, "cannot lock " + rel);
    }
    // Children exec'd from now on inherit the descriptor, so the lock lasts
    // until they are gone too: a guard killed outright must not free the
    // lock while the work it started still runs (the kernel releases an OFD
    // lock on the last close of its open file description, and kills a
    // PR_SET_PDEATHSIG child only after the parent's files are closed).
    if (::fcntl(fd.get(), F_SETFD, 0) != 0) {
      return ctx.fail_errno(errno, "cannot let children inherit the lock on " + rel);
    }
    return Taken{key, name, std::move(fd)};
  }

  // Keeps a taken lock until unlock(); its token.
  std::string keep(Taken taken) {
    const std::lock_guard guard(leases_mutex_);
    const std::uint64_t id = ++last_lease_id_;
    leases_.emplace(id, Lease{std::move(taken.key), std::move(taken.name), std::move(taken.fd)});
    return "ofd:" + std::to_string(id);
  }

  // The lock file's first line numbers the grants of its lock:
  //   "epoch <last granted> reserved <R> boot <boot id>\n"
  // then the holder's owner text (for "held by ..." only). Every epoch ever
  // granted is at most R, and R is on disk (fdatasync) before a grant above
  // it is used; `epoch` itself is written without a sync where the root has
  // none, and trusted only within the boot that wrote it (a crash can lose
  // it, but not R). So a grant is last + 1 within a boot and R + 1 after a
  // reboot or an unreadable line, never below the lease document's epoch
  // `floor` + 1: strictly above every earlier grant of this lock file.
  struct Numbering {
    std::uint64_t epoch = 0;
    std::uint64_t reserved = 0;
    std::string boot;
  };

  static std::optional<Numbering> read_numbering(std::string_view line) {
    Numbering n;
    auto field = [&](std::string_view name, std::uint64_t& value) {
      if (!line.starts_with(name)) return false;
      line.remove_prefix(name.size());
      const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
      if (ec != std::errc()) return false;
      line.remove_prefix(static_cast<std::size_t>(end - line.data()));
      return true;
    };
    if (!field("epoch ", n.epoch) || !field(" reserved ", n.reserved)) return std::nullopt;
    if (!line.starts_with(" boot ") || n.reserved < n.epoch) return std::nullopt;
    n.boot = std::string(line.substr(6));
    return n;
  }

  Result<std::uint64_t> number(const Operation& ctx, const Taken& taken, std::uint64_t floor,
                               std::string_view owner) {
    const std::string rel = std::string(kLeaseFolder) + "/" + taken.name;
    const int fd = taken.fd.get();
    char buf[256];
    const ssize_t got = ::pread(fd, buf, sizeof buf, 0);
    std::optional<Numbering> was;
    if (got > 0) {
      const std::string_view text(buf, static_cast<std::size_t>(got));
      if (const auto eol = text.find('\n'); eol != std::string_view::npos) {
        was = read_numbering(text.substr(0, eol));
      }
    }
    const Numbering last = was.value_or(Numbering{});
    const std::uint64_t base = last.boot == boot_id_ ? last.epoch : last.reserved;
    const std::uint64_t epoch = std::max(base, floor) + 1;
    if (epoch == 0) return ctx.fail(Errc::malformed, rel + ": the epoch cannot count any higher");
    const bool reserve = epoch > last.reserved;
    const std::uint64_t reserved =
        reserve ? (sync_ ? epoch : std::max(epoch, epoch + kEpochReserve - 1)) : last.reserved;
    std::string text = "epoch " + std::to_string(epoch) + " reserved " + std::to_string(reserved) +
                       " boot " + boot_id_ + "\n" + std::string(owner) + "\n";
    if (auto written = pwrite_all(fd, text); !written) {
      return ctx.fail_errno(written.error(), "cannot number the lock in " + rel);
    }
    if (::ftruncate(fd, static_cast<off_t>(text.size())) != 0) {
      return ctx.fail_errno(errno, "cannot number the lock in " + rel);
    }
    if (reserve || sync_) {
      if (::fdatasync(fd) != 0) return ctx.fail_errno(errno, "cannot sync " + rel);
      // The lock file's name too, when it held no numbering yet (new): a
      // reservation in a file that a crash unlinks is none.
      auto folder = was ? Result<UniqueFd>(UniqueFd()) : open_lease_folder(ctx, false);
      if (folder && folder->get() >= 0 && ::fsync(folder->get()) != 0) {
        return ctx.fail_errno(errno, std::string("cannot sync ") + kLeaseFolder);
      }
    }
    return epoch;
  }

  static std::expected<void, int> pwrite_all(int fd, std::string_view data) {
    off_t at = 0;
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd, data.data(), data.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::unexpected(errno);
      data.remove_prefix(static_cast<std::size_t>(n));
      at += n;
    }
    return {};
  }

  // The lock file of `key`: its escaped segments joined by '~'. '~' is always
  // escaped in a segment, so different keys get different names.
  static std::string lease_file_name(const Key& key) {
    std::string name;
    for (const auto& segment : key.escaped_segments()) {
      if (!name.empty()) name.push_back('~');
      name += segment;
    }
    return name;
  }

  // F_OFD_SETLK on the whole file; 0 or the errno.
  static int ofd_lock(int fd, short type) noexcept {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    while (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
      if (errno != EINTR) return errno;
    }
    return 0;
  }

  // ", last taken by \"owner\"" from a lock file, or nothing.
  static std::string holder_of(int fd) {
    char buf[512];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    if (n <= 0) return {};
    std::string_view owner(buf, static_cast<std::size_t>(n));
    if (owner.starts_with("epoch ")) {
      const auto eol = owner.find('\n');
      owner = eol == std::string_view::npos ? std::string_view() : owner.substr(eol + 1);
    }
    owner = owner.substr(0, owner.find('\n'));
    if (owner.empty()) return {};
    return " (taken by " + printable(owner) + ")";
  }

  Result<UniqueFd> open_lease_folder(const Operation& ctx, bool create) const {
    auto root = open_root(ctx, create);
    if (!root) return std::unexpected(root.error());
    const std::string name(kLeaseFolder);
    return open_folder(ctx, root->get(), std::span<const std::string>(&name, 1), create);
  }

  Leases::iterator find_lease(const Key& key, std::string_view token) {
    constexpr std::string_view kPrefix = "ofd:";
    if (!token.starts_with(kPrefix)) return leases_.end();
    token.remove_prefix(kPrefix.size());
    std::uint64_t id = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), id);
    if (ec != std::errc() || end != token.data() + token.size()) return leases_.end();
    const auto it = leases_.find(id);
    if (it == leases_.end() || it->second.key != key) return leases_.end();
    return it;
  }

  // Errc::not_found when the lease is certainly gone; other codes when the
  // file system cannot tell right now.
  Result<void> still_held(const Operation& ctx, const Lease& lease) const {
    const std::string rel = std::string(kLeaseFolder) + "/" + lease.name;
    struct stat mine {};
    if (::fstat(lease.fd.get(), &mine) != 0) return ctx.fail_errno(errno, "cannot inspect " + rel);
    auto folder = open_lease_folder(ctx, false);
    if (!folder) {
      if (folder.error().code == Errc::not_found) {
        return ctx.fail(Errc::not_found,
                        "lock lost: " + std::string(kLeaseFolder) + " was removed");
      }
      return std::unexpected(folder.error());
    }
    UniqueFd now(::openat(folder->get(), lease.name.c_str(),
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (now.get() < 0) {
      if (errno == ENOENT || errno == ELOOP) {
        return ctx.fail(Errc::not_found, "lock lost: " + rel + " was removed or replaced");
      }
      return ctx.fail_errno(errno, "cannot open " + rel);
    }
    struct stat theirs {};
    if (::fstat(now.get(), &theirs) != 0) return ctx.fail_errno(errno, "cannot inspect " + rel);
    if (mine.st_dev != theirs.st_dev || mine.st_ino != theirs.st_ino) {
      return ctx.fail(Errc::not_found, "lock lost: " + rel + " was replaced by another file");
    }
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(now.get(), F_OFD_GETLK, &fl) != 0)
      return ctx.fail_errno(errno, "cannot test " + rel);
    if (fl.l_type == F_UNLCK)
      return ctx.fail(Errc::not_found, "lock lost: " + rel + " is not locked");
    return {};
  }

  std::filesystem::path root_;
  std::string where_;  // "file://<root>"
  bool sync_;          // writes and removals synced (DirectoryStoreOptions::sync)
  std::string boot_id_;
  std::optional<struct timespec> booted_at_;  // without sync_: documents older are marked
  // A thread waiting in the kernel for a lock file's lock to be free
  // (await_change), shared by the waits on its key.
  class LockWait {
   public:
    static constexpr int kPending = -1;
    void finish(int err) {
      {
        const std::lock_guard guard(mu_);
        outcome_ = err;
      }
      cv_.notify_all();
    }
    // The errno the wait ended with (0: the lock was free), or kPending.
    int wait(Duration timeout, std::stop_token stop) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, timeout, [&] { return outcome_ != kPending; });
      return outcome_;
    }

   private:
    std::mutex mu_;
    std::condition_variable_any cv_;
    int outcome_ = kPending;
  };

  std::mutex waits_mutex_;
  std::map<std::string, std::shared_ptr<LockWait>> waits_;  // by lock file name

  std::mutex leases_mutex_;
  std::uint64_t last_lease_id_ = 0;  // under leases_mutex_
  Leases leases_;                    // under leases_mutex_
};

}  // namespace

Result<std::shared_ptr<Store>> make_directory_store(DirectoryStoreOptions options) {
  std::filesystem::path root = options.root.lexically_normal();
  if (root.empty() || !root.is_absolute()) {
    return fail(Errc::invalid, "directory store: the root must be an absolute path, got \"" +
                                   options.root.string() + "\"");
  }
  if (!root.has_filename() && root != root.root_path()) root = root.parent_path();
  const bool sync = options.sync.value_or(!on_local_file_system(root));
  std::string boot_id = options.boot_id.empty() ? this_boot_id() : std::move(options.boot_id);
  // An empty boot id (unreadable) has every numbering count from its
  // reservation, as after a reboot.
  const auto began = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         options.booted_at.value_or(this_boot_began()).time_since_epoch())
                         .count();
  const struct timespec booted_at = {.tv_sec = static_cast<time_t>(began / 1'000'000'000),
                                     .tv_nsec = static_cast<long>(began % 1'000'000'000)};
  return std::shared_ptr<Store>(
      std::make_shared<DirectoryStore>(std::move(root), sync, std::move(boot_id), booted_at));
}

}  // namespace instance
