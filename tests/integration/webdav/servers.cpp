#include "servers.hpp"

#include "support/server_script.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#ifndef INSTANCE_TEST_SERVERS_DIR
#error "INSTANCE_TEST_SERVERS_DIR must name tests/integration/servers"
#endif

namespace instance::testing {
namespace {

std::mutex registry_mu;
std::map<std::string, std::unique_ptr<WebDavServer>>& registry() {
  static std::map<std::string, std::unique_ptr<WebDavServer>> servers;
  return servers;
}

// Stops every server this executable started once all tests have run.
class ServersEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::lock_guard lock(registry_mu);
    registry().clear();
  }
};

[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServersEnvironment);

void chown_to_server_user(const std::filesystem::path& path) {
  if (::geteuid() != 0) return;
  if (const passwd* pw = ::getpwnam("www-data")) {
    (void)::chown(path.c_str(), pw->pw_uid, pw->pw_gid);
  }
}

}  // namespace

std::filesystem::path server_scripts_dir() { return INSTANCE_TEST_SERVERS_DIR; }

std::string script_name(ServerKind kind) {
  switch (kind) {
    case ServerKind::apache:
      return "apache.sh";
    case ServerKind::lighttpd:
      return "lighttpd.sh";
    case ServerKind::nginx:
      return "nginx.sh";
    case ServerKind::rclone:
      return "rclone.sh";
    case ServerKind::sabredav:
      return "sabredav.sh";
    case ServerKind::chezdav:
      return "chezdav.sh";
  }
  return "apache.sh";
}

WebDavServer& WebDavServer::named(const std::string& name) {
  if (name == "lighttpd") return lighttpd();
  if (name == "nginx") return nginx();
  if (name == "rclone") return rclone();
  if (name == "sabredav") return sabredav();
  if (name == "sabredav-stock") return sabredav_stock();
  if (name == "chezdav") return chezdav();
  return apache();
}

std::string WebDavServer::fresh_folder() {
  static std::atomic<int> counter{0};
  return "t" + std::to_string(++counter) + "-" + std::to_string(::getpid());
}

WebDavServer& WebDavServer::get(const std::string& name, const ServerConfig& config) {
  std::lock_guard lock(registry_mu);
  auto& slot = registry()[name];
  if (!slot) {
    slot.reset(new WebDavServer(name, config));
    if (!slot->start()) {
      ADD_FAILURE() << "could not start the " << name << " WebDAV server";
    }
  }
  return *slot;
}

WebDavServer::WebDavServer(std::string name, ServerConfig config)
    : name_(std::move(name)), config_(std::move(config)) {}

WebDavServer::~WebDavServer() { stop(); }

bool WebDavServer::start() {
  char dir_template[] = "/tmp/instance-guard-webdav-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return false;
  dir_ = dir_template;
  const auto script = server_scripts_dir() / script_name(config_.kind);
  std::string env = "WATCH_PID=" + std::to_string(::getpid()) + " ";
  if (config_.kind == ServerKind::nginx) {
    env += "NGINX_LOCK_TIMEOUT=" + std::to_string(kNginxLockZone.count()) + "s ";
  }
  if (config_.stock_locks) env += "SABRE_STOCK_LOCKS=1 ";
  if (!config_.user.empty() && (config_.kind == ServerKind::chezdav || config_.digest)) {
    // user:realm:md5(user:realm:password); the password goes through stdin.
    const auto htdigest = dir_ / "htdigest";
    const auto digest_cmd = "printf '%s' " + shell_quote(config_.user + ":" + kDigestRealm + ":") +
                            "\"$(cat)\" | md5sum | cut -d' ' -f1 > " +
                            shell_quote((dir_ / "hash").string());
    if (run("printf '%s' " + shell_quote(config_.password) + " | " + digest_cmd) != 0) {
      return false;
    }
    auto hash = read_file(dir_ / "hash");
    while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r')) hash.pop_back();
    std::ofstream(htdigest) << config_.user << ":" << kDigestRealm << ":" << hash << "\n";
    env += "HTDIGEST=" + shell_quote(htdigest.string()) +
           " DIGEST_REALM=" + shell_quote(kDigestRealm) + " ";
  } else if (!config_.user.empty()) {
    const auto htpasswd = dir_ / "htpasswd";
    // The test password goes through stdin, not the command line.
    const auto line_cmd = "printf '%s\\n' " + shell_quote(config_.password) +
                          " | openssl passwd -apr1 -stdin > " +
                          shell_quote((dir_ / "hash").string());
    if (run(line_cmd) != 0) return false;
    auto hash = read_file(dir_ / "hash");
    while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r')) hash.pop_back();
    std::ofstream(htpasswd) << config_.user << ":" << hash << "\n";
    std::filesystem::permissions(
        htpasswd, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                      std::filesystem::perms::others_read | std::filesystem::perms::group_read);
    env += "HTPASSWD=" + shell_quote(htpasswd.string()) + " ";
  }
  if (config_.tls) {
    const auto cert = dir_ / "cert.pem";
    const auto key = dir_ / "key.pem";
    const auto gen =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout " +
        shell_quote(key.string()) + " -out " + shell_quote(cert.string()) + " >/dev/null 2>&1";
    if (run(gen) != 0) return false;
    env += "TLS_CERT=" + shell_quote(cert.string()) + " TLS_KEY=" + shell_quote(key.string()) + " ";
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    const auto out = dir_ / "start.out";
    const auto cmd = env + "bash " + shell_quote(script.string()) + " start " +
                     shell_quote(dir_.string()) + " " + std::to_string(port_) + " > " +
                     shell_quote(out.string()) + " 2>&1";
    if (run(cmd) == 0) {
      url_ = read_file(out);
      while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
      if (const auto nl = url_.rfind('\n'); nl != std::string::npos) url_ = url_.substr(nl + 1);
      return true;
    }
    std::cerr << name_ << " start attempt " << attempt << " failed:\n" << read_file(out);
  }
  port_ = 0;
  return false;
}

void WebDavServer::stop() {
  if (dir_.empty()) return;
  const auto script = server_scripts_dir() / script_name(config_.kind);
  run("bash " + shell_quote(script.string()) + " stop " + shell_quote(dir_.string()) +
      " >/dev/null 2>&1");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  dir_.clear();
  url_.clear();
}

void WebDavServer::place_file(const std::filesystem::path& relative,
                              const std::string& content) const {
  const auto path = root() / relative;
  for (auto p = relative.parent_path(); !p.empty(); p = p.parent_path()) {
    std::filesystem::create_directories(root() / p);
  }
  for (auto p = relative.parent_path(); !p.empty(); p = p.parent_path()) {
    chown_to_server_user(root() / p);
  }
  std::ofstream(path, std::ios::binary) << content;
  chown_to_server_user(path);
}

}  // namespace instance::testing
