#include "server.hpp"

#include "support/server_script.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

#ifndef INSTANCE_TEST_SERVERS_DIR
#error "INSTANCE_TEST_SERVERS_DIR must name tests/integration/servers"
#endif

namespace instance::testing {
namespace {

std::string script() { return std::string(INSTANCE_TEST_SERVERS_DIR) + "/etcd.sh"; }

std::mutex shared_mu;
std::unique_ptr<EtcdServer>& slot(int which) {
  static std::unique_ptr<EtcdServer> servers[2];
  return servers[which];
}

class ServersEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::lock_guard lock(shared_mu);
    slot(0).reset();
    slot(1).reset();
  }
};
[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServersEnvironment);

}  // namespace

std::string etcd_missing() {
  return ::access("/usr/bin/etcd", X_OK) == 0 ? std::string()
                                              : "etcd is not installed (Debian: etcd-server)";
}

EtcdServer& EtcdServer::shared() {
  std::lock_guard lock(shared_mu);
  if (!slot(0)) slot(0) = std::make_unique<EtcdServer>();
  return *slot(0);
}

EtcdServer& EtcdServer::with_auth() {
  std::lock_guard lock(shared_mu);
  if (!slot(1)) slot(1) = std::make_unique<EtcdServer>(Config{.root_password = kRootPassword});
  return *slot(1);
}

EtcdServer::EtcdServer(Config config) : config_(std::move(config)) {
  char dir_template[] = "/tmp/instance-guard-etcd-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return;
  dir_ = dir_template;
  if (config_.tls && run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
                         "-addext subjectAltName=IP:127.0.0.1 -keyout " +
                         shell_quote((dir_ / "key.pem").string()) + " -out " +
                         shell_quote(ca_file().string()) + " >/dev/null 2>&1") != 0) {
    ADD_FAILURE() << "openssl could not make a test certificate";
    return;
  }
  // A client CA and a client certificate it signed, for --client-cert-auth.
  // etcd trusts the server's own certificate too: its JSON gateway reaches
  // its gRPC side with that certificate as a client.
  const auto in_dir = [&](const char* name) { return shell_quote((dir_ / name).string()); };
  if (config_.client_cert_auth &&
      run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=instance-guard-test-ca "
          "-keyout " +
          in_dir("client-ca.key") + " -out " + in_dir("client-ca.pem") +
          " >/dev/null 2>&1 && openssl req -newkey rsa:2048 -nodes -subj /CN=root -keyout " +
          in_dir("client.key") + " -out " + in_dir("client.csr") +
          " >/dev/null 2>&1 && openssl x509 -req -days 2 -in " + in_dir("client.csr") + " -CA " +
          in_dir("client-ca.pem") + " -CAkey " + in_dir("client-ca.key") +
          " -CAcreateserial -out " + in_dir("client.pem") + " >/dev/null 2>&1 && cat " +
          in_dir("client-ca.pem") + " " + shell_quote(ca_file().string()) + " > " +
          in_dir("trusted.pem")) != 0) {
    ADD_FAILURE() << "openssl could not make the client certificates";
    return;
  }
  // The script installs etcd-server when it is missing; only when that
  // fails too do the tests skip (etcd_missing()).
  for (int attempt = 0; attempt < 3 && !running(); ++attempt) {
    port_ = free_port();
    do {
      peer_port_ = free_port();
    } while (peer_port_ == port_);
    if (!start()) std::cerr << "etcd start attempt " << attempt << " failed\n";
    if (!etcd_missing().empty()) return;
  }
  if (!running()) ADD_FAILURE() << "could not start etcd: " << read_file(dir_ / "start.out");
}

EtcdServer::~EtcdServer() {
  stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

bool EtcdServer::start() {
  if (dir_.empty() || port_ == 0) return false;
  std::string env = "WATCH_PID=" + std::to_string(::getpid()) + " ";
  if (!config_.root_password.empty())
    env += "ETCD_ROOT_PASSWORD=" + shell_quote(config_.root_password) + " ";
  if (config_.tls) {
    env += "TLS_CERT=" + shell_quote(ca_file().string()) +
           " TLS_KEY=" + shell_quote((dir_ / "key.pem").string()) + " ";
  }
  if (config_.client_cert_auth) {
    env += "CLIENT_CA=" + shell_quote((dir_ / "trusted.pem").string()) +
           " CLIENT_CERT=" + shell_quote(client_cert().string()) +
           " CLIENT_KEY=" + shell_quote(client_key().string()) + " ";
  }
  const auto out = dir_ / "start.out";
  if (run(env + "bash " + shell_quote(script()) + " start " + shell_quote(dir_.string()) + " " +
          std::to_string(port_) + " " + std::to_string(peer_port_) + " > " +
          shell_quote(out.string()) + " 2>&1") != 0) {
    return false;
  }
  url_ = read_file(out);
  while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
  if (const auto nl = url_.rfind('\n'); nl != std::string::npos) url_ = url_.substr(nl + 1);
  return true;
}

void EtcdServer::stop() {
  if (dir_.empty()) return;
  run("bash " + shell_quote(script()) + " stop " + shell_quote(dir_.string()) + " >/dev/null 2>&1");
  url_.clear();
}

std::string EtcdServer::fresh_prefix() {
  static std::atomic<int> counter{0};
  return "/t" + std::to_string(++counter) + "-" + std::to_string(::getpid());
}

EtcdStoreOptions EtcdServer::options(std::string prefix) const {
  EtcdStoreOptions o;
  o.endpoints = {(config_.tls ? "https://127.0.0.1:" : "http://127.0.0.1:") +
                 std::to_string(port_)};
  if (config_.tls) o.ca_file = ca_file();
  if (config_.client_cert_auth) {
    o.client_cert = client_cert();
    o.client_key = client_key();
  }
  o.prefix = std::move(prefix);
  if (!config_.root_password.empty()) {
    o.user = "root";
    o.password = config_.root_password;
  }
  return o;
}

std::shared_ptr<Store> EtcdServer::store(std::string prefix) const {
  if (!running()) return nullptr;
  return make_etcd_store(options(std::move(prefix))).value();
}

ManualGuard manual_guard(std::shared_ptr<Store> store, Duration ttl, std::string id,
                         std::shared_ptr<CapturingLogger> logger) {
  auto clock = std::make_shared<FakeClock>();
  auto scheduler = std::make_shared<ManualScheduler>(clock);
  if (!logger) logger = std::make_shared<CapturingLogger>();
  auto guard = Guard::create(std::move(store), {.ttl = ttl,
                                                .id = std::move(id),
                                                .clock = clock,
                                                .scheduler = scheduler,
                                                .logger = logger,
                                                .mode = Mode::exclusive})
                   .value();
  return ManualGuard{clock, scheduler, logger, std::move(guard)};
}

EtcdCluster::EtcdCluster() {
  char dir_template[] = "/tmp/instance-guard-etcd-cluster-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return;
  dir_ = dir_template;
  const auto out = dir_ / "start.out";
  for (int attempt = 0; attempt < 3 && !running(); ++attempt) {
    if (run("WATCH_PID=" + std::to_string(::getpid()) + " " + script("start") + " > " +
            shell_quote(out.string()) + " 2>&1") != 0) {
      std::cerr << "etcd cluster start attempt " << attempt << " failed\n";
      if (!etcd_missing().empty()) return;
      continue;
    }
    std::istringstream lines(read_file(out));
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("http://")) urls_.push_back(line);
    }
  }
  if (!running()) ADD_FAILURE() << "could not start the etcd cluster: " << read_file(out);
}

EtcdCluster::~EtcdCluster() {
  if (dir_.empty()) return;
  run(script("stop") + " >/dev/null 2>&1");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string EtcdCluster::script(const std::string& command, const std::string& args) const {
  return "bash " + shell_quote(std::string(INSTANCE_TEST_SERVERS_DIR) + "/etcd_cluster.sh") + " " +
         command + " " + shell_quote(dir_.string()) + " " + args;
}

std::string EtcdCluster::store_url(const std::vector<int>& order, const std::string& prefix) const {
  std::string out = "etcd://";
  for (int i : order) {
    if (out.size() > 7) out += ",";
    out += urls_.at(static_cast<std::size_t>(i - 1)).substr(7);
  }
  return out + prefix;
}

void EtcdCluster::stop_member(int i, bool crash) {
  run(script("stop-member", std::to_string(i) + (crash ? " KILL" : "")) + " >/dev/null 2>&1");
}

bool EtcdCluster::start_member(int i) {
  return run("WATCH_PID=" + std::to_string(::getpid()) + " " +
             script("start-member", std::to_string(i)) + " >/dev/null 2>&1") == 0;
}

int EtcdCluster::leader() const {
  const auto out = dir_ / "leader.out";
  if (run(script("leader") + " > " + shell_quote(out.string()) + " 2>/dev/null") != 0) return 0;
  return std::atoi(read_file(out).c_str());
}

}  // namespace instance::testing
