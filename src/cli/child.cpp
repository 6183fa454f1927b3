#include "child.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "exit_codes.hpp"

namespace instance::cli {

namespace {

// A pipe whose ends close on exec and on scope exit.
struct CloexecPipe {
  int read_end = -1;
  int write_end = -1;
  CloexecPipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~CloexecPipe() {
    close_read();
    close_write();
  }
  CloexecPipe(const CloexecPipe&) = delete;
  CloexecPipe& operator=(const CloexecPipe&) = delete;
  bool ok() const noexcept { return read_end >= 0; }
  void close_read() noexcept {
    if (read_end >= 0) ::close(std::exchange(read_end, -1));
  }
  void close_write() noexcept {
    if (write_end >= 0) ::close(std::exchange(write_end, -1));
  }
};

// NULL-terminated char* views of strings that outlive the exec.
std::vector<char*> c_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, const SignalSetup& signals,
                             pid_t parent, int error_fd) {
  int failure = 0;
  if (::setpgid(0, 0) != 0) {
    failure = errno;
  } else if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    failure = errno;
  } else if (::getppid() != parent) {
    // The tool died before we could tie ourselves to it: never run alone.
    ::_exit(kExitSoftware);
  } else {
    signals.restore_in_child();
    ::execvpe(argv[0], argv, envp);
    failure = errno;
  }
  while (::write(error_fd, &failure, sizeof failure) < 0 && errno == EINTR) {
  }
  ::_exit(failure == ENOENT || failure == ENOTDIR ? kExitNotFound : kExitCannotExecute);
}

}  // namespace

std::expected<Child, SpawnError> Child::spawn(const ChildSpec& spec, const SignalSetup& signals) {
  if (spec.argv.empty() || spec.argv.front().empty()) {
    return std::unexpected(SpawnError{kExitUsage, "no command to run"});
  }
  // Everything the child touches is prepared before fork: after fork in a
  // multi-threaded process only async-signal-safe calls are allowed.
  const std::vector<char*> argv = c_array(spec.argv);
  const std::vector<char*> envp = c_array(spec.environment);
  CloexecPipe pipe;
  if (!pipe.ok()) {
    return std::unexpected(
        SpawnError{kExitSoftware, std::string("cannot create a pipe: ") + std::strerror(errno)});
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return std::unexpected(
        SpawnError{kExitSoftware, std::string("cannot fork: ") + std::strerror(errno)});
  }
  if (pid == 0) exec_child(argv.data(), envp.data(), signals, parent, pipe.write_end);

  // Also from this side, so the group exists before we signal it whichever
  // runs first (EACCES once the child has exec'd is fine).
  ::setpgid(pid, pid);
  pipe.close_write();
  // The exec's outcome is read when the child is reaped, not waited for
  // here: the tool goes on to watch the child at once (one wait fewer), and
  // a child that could not exec ends at once with 127 or 126 anyway.
  return Child(pid, std::exchange(pipe.read_end, -1), spec.argv.front());
}

Child::Child(pid_t pid, int exec_report, std::string command)
    : pid_(pid), exec_report_(exec_report), command_(std::move(command)) {}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      exec_report_(std::exchange(other.exec_report_, -1)),
      command_(std::move(other.command_)),
      status_(std::exchange(other.status_, std::nullopt)),
      exec_failure_(std::exchange(other.exec_failure_, std::nullopt)) {}

Child::~Child() {
  if (exec_report_ >= 0) ::close(exec_report_);
  if (pid_ <= 0 || status_) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

bool Child::signal_group(int signal) const noexcept {
  return pid_ > 0 && ::kill(-pid_, signal) == 0;
}

std::optional<int> Child::poll_exit() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return std::nullopt;
  read_exec_report();
  if (WIFEXITED(status)) {
    status_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    status_ = exit_code_for_signal(WTERMSIG(status));
  } else {
    return std::nullopt;  // stopped or continued: still ours to wait for
  }
  return status_;
}

// Once the child is reaped every write end of the pipe is closed (at the
// exec, or at the child's exit), so this read never blocks: nothing means
// the command was exec'd; an errno means it could not be.
void Child::read_exec_report() {
  if (exec_report_ < 0) return;
  int failure = 0;
  ssize_t n;
  do {
    n = ::read(exec_report_, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  ::close(std::exchange(exec_report_, -1));
  if (n == static_cast<ssize_t>(sizeof failure)) {
    exec_failure_ = "cannot run " + command_ + ": " + std::strerror(failure);
  } else if (n != 0) {
    exec_failure_ = "cannot start " + command_;
  }
}

std::vector<std::string> environment_with(char** environ_entries, const std::string& name,
                                          const std::string& value) {
  std::vector<std::string> out;
  const std::string prefix = name + "=";
  for (char** entry = environ_entries; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::string_view(*entry).starts_with(prefix)) continue;
    out.emplace_back(*entry);
  }
  out.push_back(prefix + value);
  return out;
}

std::vector<std::string> environment_with(std::vector<std::string> environment,
                                          const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(environment, [&](const std::string& entry) { return entry.starts_with(prefix); });
  environment.push_back(prefix + value);
  return environment;
}

std::vector<std::string> environment_without(std::vector<std::string> environment,
                                             const std::vector<std::string_view>& names) {
  std::erase_if(environment, [&](const std::string& entry) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    return std::ranges::find(names, name) != names.end();
  });
  return environment;
}

}  // namespace instance::cli
