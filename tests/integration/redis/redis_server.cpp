#include "redis_server.hpp"

#include "support/server_script.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#ifndef INSTANCE_TEST_SERVERS_DIR
#error "INSTANCE_TEST_SERVERS_DIR must name tests/integration/servers"
#endif

namespace instance::testing {
namespace {

std::string script() { return std::string(INSTANCE_TEST_SERVERS_DIR) + "/redis.sh"; }

std::string describe_reply(const redisReply* r) {
  if (r == nullptr) return "(no reply)";
  switch (r->type) {
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_INTEGER:
      return "(integer) " + std::to_string(r->integer);
    case REDIS_REPLY_ERROR:
      return "(error) " + std::string(r->str, r->len);
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (std::size_t i = 0; i < r->elements; ++i) {
        if (i > 0) out += "\n";
        out += describe_reply(r->element[i]);
      }
      return out;
    }
    default:
      return std::string(r->str, r->len);
  }
}

}  // namespace

RedisServer::RedisServer(RedisServerConfig config) : config_(std::move(config)) {
  char dir_template[] = "/tmp/instance-guard-redis-XXXXXX";
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

RedisServer::~RedisServer() {
  if (dir_.empty()) return;
  run("bash " + shell_quote(script()) + " stop " + shell_quote(dir_.string()) + " >/dev/null 2>&1");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

RedisServer& RedisServer::shared() {
  static RedisServer server;
  return server;
}

RedisServer& RedisServer::with_password() {
  static RedisServer server({.password = kPassword});
  return server;
}

bool RedisServer::start() {
  std::string env = "WATCH_PID=" + std::to_string(::getpid()) +
                    " PERSIST=" + (config_.persistent ? "aof" : "none") + " ";
  if (!config_.password.empty()) {
    const auto file = dir_ / "password";
    std::ofstream(file) << config_.password << "\n";
    env += "REDIS_PASSWORD_FILE=" + shell_quote(file.string()) + " ";
    if (!config_.acl_user.empty()) env += "REDIS_ACL_USER=" + shell_quote(config_.acl_user) + " ";
  }
  const auto out = dir_ / "start.out";
  const int rc =
      run(env + "bash " + shell_quote(script()) + " start " + shell_quote(dir_.string()) + " " +
          std::to_string(port_) + " > " + shell_quote(out.string()) + " 2>&1");
  if (rc == 3) absent_ = true;
  if (rc != 0) why_not_ = read_file(out);
  return rc == 0;
}

RedisStoreOptions RedisServer::options(std::string prefix) const {
  RedisStoreOptions o;
  o.host = "127.0.0.1";
  o.port = port_;
  o.prefix = std::move(prefix);
  o.password = config_.password;
  o.user = config_.acl_user;
  o.connect_timeout = std::chrono::milliseconds(500);
  o.command_timeout = std::chrono::milliseconds(2000);
  o.retry_deadline = std::chrono::milliseconds(500);
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(100);
  return o;
}

std::string RedisServer::fresh_prefix() {
  static std::atomic<int> counter{0};
  return "t" + std::to_string(++counter) + "-" + std::to_string(::getpid()) + ":";
}

bool RedisServer::stop() {
  running_ = false;
  return run("bash " + shell_quote(script()) + " stop " + shell_quote(dir_.string()) +
             " >/dev/null 2>&1") == 0;
}

bool RedisServer::crash() {
  running_ = false;
  return run("bash " + shell_quote(script()) + " crash " + shell_quote(dir_.string()) +
             " >/dev/null 2>&1") == 0;
}

bool RedisServer::pause() { return signal_server(SIGSTOP); }
bool RedisServer::resume() { return signal_server(SIGCONT); }

bool RedisServer::signal_server(int sig) const {
  std::ifstream in(dir_ / "server.pid");
  pid_t pid = 0;
  return in >> pid && pid > 0 && ::kill(pid, sig) == 0;
}

bool RedisServer::restart() {
  running_ = start();
  return running_;
}

std::string RedisServer::command(const std::vector<std::string>& args) const {
  redisContext* c = redisConnect("127.0.0.1", port_);
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return "(cannot connect)";
  }
  auto send = [&](const std::vector<std::string>& a) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& s : a) {
      argv.push_back(s.data());
      lens.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    std::string text = describe_reply(r);
    if (r != nullptr) freeReplyObject(r);
    return text;
  };
  if (!config_.password.empty()) {
    if (config_.acl_user.empty()) {
      send({"AUTH", config_.password});
    } else {
      send({"AUTH", config_.acl_user, config_.password});
    }
  }
  std::string text = send(args);
  redisFree(c);
  return text;
}

}  // namespace instance::testing
