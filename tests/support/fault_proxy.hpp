// The multi-host harness's fault proxy (tests/hosts/fault_proxy.cpp) for an
// integration test: one loopback TCP forward in front of a test's server,
// whose fault (`pass`, `stall`, `reset`, `delay MS`...) the test sets while it
// runs. What it is for: cutting one client off a server that keeps running,
// which pausing the server (SIGSTOP) cannot do. The proxy is started with
// PR_SET_PDEATHSIG, so it ends with the test even if the test dies, and is
// stopped (SIGTERM) when the object goes.
//
// The test executable is told the proxy's path at build time:
// INSTANCE_TEST_FAULT_PROXY.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "support/server_script.hpp"

#ifndef INSTANCE_TEST_FAULT_PROXY
#error "INSTANCE_TEST_FAULT_PROXY must name the hosts-fault-proxy program"
#endif

namespace instance::testing {

class FaultProxy {
 public:
  // Forwards a free loopback port to 127.0.0.1:target_port.
  explicit FaultProxy(int target_port) {
    char dir_template[] = "/tmp/instance-guard-proxy-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) {
      why_not_ = "cannot make a temporary folder";
      return;
    }
    dir_ = dir_template;
    for (int attempt = 0; attempt < 5 && !running_; ++attempt) {
      port_ = free_port();
      running_ = start(target_port);
    }
  }
  ~FaultProxy() {
    stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  bool running() const { return running_; }
  const std::string& why_not() const { return why_not_; }
  int port() const { return port_; }

  // Sets the fault in force ("pass", "stall", "reset", ...); true when the
  // proxy answered "ok".
  bool set(const std::string& fault) const {
    return running_ && run(shell_quote(INSTANCE_TEST_FAULT_PROXY) + " --send " +
                           shell_quote(control().string()) + " " + shell_quote(fault) +
                           " >/dev/null 2>&1") == 0;
  }

 private:
  std::filesystem::path control() const { return dir_ / "control.sock"; }

  bool start(int target_port) {
    const auto out = dir_ / "proxy.out";
    std::error_code ec;
    std::filesystem::remove(control(), ec);
    const std::string forward =
        "127.0.0.1:" + std::to_string(port_) + "=127.0.0.1:" + std::to_string(target_port);
    const std::string control_path = control().string();
    const std::string out_path = out.string();
    const std::string err_path = out_path + ".err";
    const pid_t pid = ::fork();
    if (pid < 0) {
      why_not_ = "cannot fork";
      return false;
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      // Only async-signal-safe calls here: the test runs other threads.
      const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (out_fd < 0 || err_fd < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) ::_exit(126);
      ::execl(INSTANCE_TEST_FAULT_PROXY, INSTANCE_TEST_FAULT_PROXY, "--control",
              control_path.c_str(), "--forward", forward.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_file(out).find("ready") != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // it ended: a port taken meanwhile
        pid_ = -1;
        why_not_ = read_file(err_path);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    why_not_ = "the fault proxy did not say ready within 10 s";
    stop();
    return false;
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    running_ = false;
  }

  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool running_ = false;
  std::string why_not_;
};

}  // namespace instance::testing
