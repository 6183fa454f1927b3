// Liveness locks (instance/liveness.hpp): one flock()ed file per pid.
#include "instance/liveness.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

namespace instance {
namespace {

std::string file_name(std::int64_t pid) { return "pid-" + std::to_string(pid); }

std::string errno_text(int error) { return std::strerror(error); }

// The folder, created world-writable and sticky (as /tmp) when missing. A
// symlink or a non-folder is refused.
Result<void> ensure_dir(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 01777) == 0) {
    ::chmod(dir.c_str(), 01777);  // mkdir applied the umask
    return {};
  }
  if (errno != EEXIST) {
    return fail(Errc::internal,
                "cannot create the liveness folder " + dir.string() + ": " + errno_text(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(Errc::internal, "the liveness folder " + dir.string() + " is not a folder");
  }
  return {};
}

}  // namespace

std::filesystem::path liveness_dir() {
  if (const char* dir = std::getenv("INSTANCE_GUARD_LIVENESS_DIR"); dir && *dir) return dir;
  return "/tmp/instance-guard-live";
}

LivenessLock& LivenessLock::operator=(LivenessLock&& other) noexcept {
  if (this != &other) {
    LivenessLock old(std::move(*this));
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

LivenessLock::~LivenessLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // before unlocking: a checker then finds no file, or our lock
  ::close(fd_);
}

Result<LivenessLock> LivenessLock::hold() {
  const auto dir = liveness_dir();
  if (auto made = ensure_dir(dir); !made) return std::unexpected(made.error());
  LivenessLock lock;
  lock.path_ = dir / file_name(::getpid());
  // Deliberately not O_CLOEXEC: the children we start inherit the lock.
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (lock.fd_ < 0 && errno == EACCES) {
    // A file left by another user's process that had our pid: flock needs
    // no write access.
    lock.fd_ = ::open(lock.path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  }
  if (lock.fd_ < 0) {
    return fail(Errc::internal,
                "cannot open the liveness lock " + lock.path_.string() + ": " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(lock.fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(std::exchange(lock.fd_, -1));
    return fail(Errc::internal,
                "the liveness lock " + lock.path_.string() + " is not a regular file");
  }
  // A checker holds a shared lock for a moment; a holder that outlived an
  // earlier process with our pid holds it for good.
  for (int attempt = 0;; ++attempt) {
    if (::flock(lock.fd_, LOCK_EX | LOCK_NB) == 0) return lock;
    if (errno != EWOULDBLOCK || attempt == 50) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int error = errno;
  ::close(std::exchange(lock.fd_, -1));
  return fail(Errc::internal,
              "cannot lock the liveness lock " + lock.path_.string() + ": " +
                  (error == EWOULDBLOCK ? std::string("held by the descendants of an "
                                                      "earlier process with this pid")
                                        : errno_text(error)));
}

bool liveness_lock_held(std::int64_t pid) {
  if (pid <= 0) return false;
  const auto path = liveness_dir() / file_name(pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool held = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
      held = errno == EWOULDBLOCK;
    } else {
      ::flock(fd, LOCK_UN);
    }
  }
  ::close(fd);
  return held;
}

namespace {

// The first line of `path`, without trailing white space; "" when unreadable.
std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.pop_back();
  }
  return line;
}

}  // namespace

std::string this_boot_id() { return first_line("/proc/sys/kernel/random/boot_id"); }

std::string this_machine_id() {
  std::string id = first_line("/etc/machine-id");
  // An image not yet booted says "uninitialized" (machine-id(5)): no id.
  if (id == "uninitialized") id.clear();
  return id.empty() ? first_line("/var/lib/dbus/machine-id") : id;
}

WallTime this_boot_began() {
  struct timespec now {
  }, up{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  ::clock_gettime(CLOCK_BOOTTIME, &up);
  const std::int64_t ns = (std::int64_t{now.tv_sec} - up.tv_sec) * 1'000'000'000 +
                          (std::int64_t{now.tv_nsec} - up.tv_nsec);
  return WallTime{std::chrono::nanoseconds{ns}};
}

}  // namespace instance
