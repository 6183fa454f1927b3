#include "zookeeper_server.hpp"

#include <unistd.h>

#include <atomic>

#ifndef INSTANCE_TEST_SERVERS_DIR
#error "INSTANCE_TEST_SERVERS_DIR must name tests/integration/servers"
#endif

namespace instance::testing {
namespace {

std::string script() { return std::string(INSTANCE_TEST_SERVERS_DIR) + "/zookeeper.sh"; }

}  // namespace

ZookeeperServer::ZookeeperServer() {
  char dir_template[] = "/tmp/instance-guard-zookeeper-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    why_not_ = "cannot make a temporary folder";
    return;
  }
  dir_ = dir_template;
  for (int attempt = 0; attempt < 5 && !running_ && !absent_; ++attempt) {
    port_ = free_port();
    running_ = start();
  }
}

ZookeeperServer::~ZookeeperServer() {
  if (dir_.empty()) return;
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

ZookeeperServer& ZookeeperServer::shared() {
  static ZookeeperServer server;
  return server;
}

bool ZookeeperServer::start() {
  const auto out = dir_ / "start.out";
  const int rc = run("WATCH_PID=" + std::to_string(::getpid()) + " bash " + shell_quote(script()) +
                     " start " + shell_quote(dir_.string()) + " " + std::to_string(port_) + " > " +
                     shell_quote(out.string()) + " 2>&1");
  if (rc == 77) absent_ = true;
  if (rc != 0) {
    why_not_ = read_file(out);
    return false;
  }
  // A fresh JVM takes half a second over its first session; the tests' short
  // deadlines are for a warm server.
  auto warm = options("/warm-up");
  warm.retry_deadline = std::chrono::milliseconds(10000);
  warm.request_timeout = std::chrono::milliseconds(5000);
  if (auto listed = make_zookeeper_store(warm).value()->list(Key()); !listed) {
    why_not_ = listed.error().message;
    return false;
  }
  return true;
}

ZookeeperStoreOptions ZookeeperServer::options(std::string root) const {
  ZookeeperStoreOptions o;
  o.servers = "127.0.0.1:" + std::to_string(port_);
  o.root = std::move(root);
  o.user = kUser;
  o.password = kPassword;
  o.session_timeout = std::chrono::milliseconds(4000);
  o.request_timeout = std::chrono::milliseconds(2000);
  o.retry_deadline = std::chrono::milliseconds(500);
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(100);
  return o;
}

std::string ZookeeperServer::fresh_root() {
  static std::atomic<int> counter{0};
  return "/tests/t" + std::to_string(++counter) + "-" + std::to_string(::getpid());
}

bool ZookeeperServer::stop() { return end("stop"); }

bool ZookeeperServer::crash() { return end("crash"); }

bool ZookeeperServer::end(const char* how) {
  running_ = false;
  return run("bash " + shell_quote(script()) + " " + how + " " + shell_quote(dir_.string()) +
             " >/dev/null 2>&1") == 0;
}

bool ZookeeperServer::pause() { return signal("STOP"); }

bool ZookeeperServer::resume() { return signal("CONT"); }

bool ZookeeperServer::signal(const char* name) {
  return run("kill -" + std::string(name) + " \"$(cat " +
             shell_quote((dir_ / "server.pid").string()) + ")\"") == 0;
}

bool ZookeeperServer::restart() {
  running_ = start();
  return running_;
}

}  // namespace instance::testing
