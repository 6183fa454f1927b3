// The child process `run` guards: started directly (no shell) in its own
// process group, tied to the tool's life, and signalled as a group.
//
// Contract (docs/design/arguments.md, "The command-line tool around a child"):
//   * The child asks for PR_SET_PDEATHSIG(SIGKILL) between fork and exec and
//     checks that the tool did not die in that window, so a tool killed by
//     SIGKILL or the OOM killer never leaves its child running beside a
//     successor. (The kernel sends it when the forking *thread* ends: spawn()
//     must be called from the main thread, which lives until the tool exits.
//     It is also cleared when the child execs a set-user-ID program.)
//   * The child runs in a new process group whose id is its pid; signals go
//     to the whole group, so grandchildren stop too.
//   * The child gets the tool's original signal mask and SIGCHLD disposition
//     back, and exactly the environment it is given.
//   * An exec failure is reported through a close-on-exec pipe, read when
//     the child is reaped (spawn() does not wait for the exec), so the tool
//     can tell "not found" (127) and "cannot execute" (126) from the
//     command's own exit status.
//
// Not thread-safe: one thread (the main thread) owns a Child. Reaping is
// explicit (poll_exit() after SIGCHLD); a Child still running when destroyed
// has its group killed with SIGKILL and is reaped, so it never outlives us.
#pragma once

#include <sys/types.h>

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signals.hpp"

namespace instance::cli {

struct ChildSpec {
  // argv[0] is looked up in PATH when it has no '/', like execvp.
  std::vector<std::string> argv;
  // The complete environment, "NAME=value" entries.
  std::vector<std::string> environment;
};

// Why the child could not be started: the tool's exit code (127 not found,
// 126 cannot execute, 70 fork failed) and a message.
struct SpawnError {
  int exit_code = 0;
  std::string message;
};

class Child {
 public:
  // Forks and execs. Must run on the main thread after `signals` blocked the
  // signals. Returns once the child is forked; whether its exec succeeded is
  // known once it is reaped (exec_failure()).
  static std::expected<Child, SpawnError> spawn(const ChildSpec& spec, const SignalSetup& signals);

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) = delete;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const noexcept { return pid_; }

  // Sends `signal` to the child's process group (kill(-pgid)); false when no
  // process is left in the group.
  bool signal_group(int signal) const noexcept;

  // Reaps the child when it has ended (never blocks). Returns its status the
  // way a shell reports it: the exit code, or 128+N for death by signal N.
  // Keeps returning that status once reaped.
  std::optional<int> poll_exit();

  // Once reaped: why the command could not be exec'd (its status is then
  // 127 or 126), or nullopt when it ran.
  const std::optional<std::string>& exec_failure() const noexcept { return exec_failure_; }

 private:
  Child(pid_t pid, int exec_report, std::string command);
  void read_exec_report();
  pid_t pid_ = -1;
  int exec_report_ = -1;  // the pipe's read end until the child is reaped
  std::string command_;
  std::optional<int> status_;
  std::optional<std::string> exec_failure_;
};

// The tool's environment with `name` set to `value` (replacing any earlier
// value), as "NAME=value" entries.
std::vector<std::string> environment_with(char** environ_entries, const std::string& name,
                                          const std::string& value);

// `environment` with `name` set to `value` (replacing any earlier value).
std::vector<std::string> environment_with(std::vector<std::string> environment,
                                          const std::string& name, const std::string& value);

// `environment` without any entry for the variables in `names`.
std::vector<std::string> environment_without(std::vector<std::string> environment,
                                             const std::vector<std::string_view>& names);

}  // namespace instance::cli
