// Real WebDAV servers for the tests: Apache httpd (mod_dav_fs), lighttpd
// (mod_webdav), nginx (dav + dav_ext, with a lock zone of kNginxLockZone),
// rclone serve webdav, sabre/dav (php -S; also with its stock 1800 s locks)
// and GNOME's chezdav (phodav: locks that never expire), started from
// tests/integration/servers/*.sh on 127.0.0.1.
//
// Each server is started at most once per test executable, on first use,
// in a fresh temporary folder on a free port, and stopped (folder removed)
// when the tests end; the start script's watchdog stops it too if the
// executable dies first. start() waits (bounded) until the server answers.
//
// Thread safety: server() may be called from any thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "support/server_script.hpp"

namespace instance::testing {

enum class ServerKind { apache, lighttpd, nginx, rclone, sabredav, chezdav };

// The start script's name for `kind` ("nginx.sh").
std::string script_name(ServerKind kind);

// The nginx test server's lock timeout: nginx grants it to every LOCK,
// whatever Timeout was asked. Shorter than a third of the ttls the tests use.
inline constexpr std::chrono::seconds kNginxLockZone{4};

// The user and password Apache's authenticated test server requires.
inline constexpr const char* kAuthUser = "guard";
inline constexpr const char* kAuthPassword = "pw-Zq8#s3cr3t";

struct ServerConfig {
  ServerKind kind = ServerKind::apache;
  // Auth required for this user and password: Basic (an htpasswd line) on
  // Apache, Digest (an htdigest line, realm kDigestRealm) on chezdav, and on
  // Apache with `digest`.
  std::string user;
  std::string password;
  bool digest = false;
  bool tls = false;  // https with a self-signed certificate (ca_file())
  // sabre/dav: the stock file lock backend, which grants every lock 1800 s
  // whatever was asked (otherwise the Timeout asked is kept).
  bool stock_locks = false;
};

// The Digest realm of chezdav's authenticated test server.
inline constexpr const char* kDigestRealm = "instance-guard-test";
// The lock timeout sabre/dav's stock file backend grants every LOCK.
inline constexpr std::chrono::seconds kSabreStockLockTimeout{1800};

class WebDavServer {
 public:
  // The running server for `name`; started on first use with `config`.
  // Fails the calling test (fatal) when the server cannot start.
  static WebDavServer& get(const std::string& name, const ServerConfig& config);
  static WebDavServer& apache() { return get("apache", {.kind = ServerKind::apache}); }
  static WebDavServer& lighttpd() { return get("lighttpd", {.kind = ServerKind::lighttpd}); }
  static WebDavServer& nginx() { return get("nginx", {.kind = ServerKind::nginx}); }
  static WebDavServer& rclone() { return get("rclone", {.kind = ServerKind::rclone}); }
  static WebDavServer& sabredav() { return get("sabredav", {.kind = ServerKind::sabredav}); }
  static WebDavServer& sabredav_stock() {
    return get("sabredav-stock", {.kind = ServerKind::sabredav, .stock_locks = true});
  }
  static WebDavServer& chezdav() { return get("chezdav", {.kind = ServerKind::chezdav}); }
  // chezdav requiring Digest auth as kAuthUser / kAuthPassword.
  static WebDavServer& chezdav_with_auth() {
    return get("chezdav-auth",
               {.kind = ServerKind::chezdav, .user = kAuthUser, .password = kAuthPassword});
  }
  // Apache requiring basic auth as kAuthUser / kAuthPassword.
  static WebDavServer& apache_with_auth() {
    return get("apache-auth",
               {.kind = ServerKind::apache, .user = kAuthUser, .password = kAuthPassword});
  }
  // Apache requiring Digest auth (mod_auth_digest, realm kDigestRealm) as
  // kAuthUser / kAuthPassword: unlike chezdav, it checks the password.
  static WebDavServer& apache_with_digest() {
    return get(
        "apache-digest",
        {.kind = ServerKind::apache, .user = kAuthUser, .password = kAuthPassword, .digest = true});
  }
  // By name: "apache", "lighttpd", "nginx", "rclone", "sabredav",
  // "sabredav-stock" or "chezdav".
  static WebDavServer& named(const std::string& name);

  ~WebDavServer();
  WebDavServer(const WebDavServer&) = delete;
  WebDavServer& operator=(const WebDavServer&) = delete;

  bool running() const { return !url_.empty(); }
  // "http://127.0.0.1:PORT" (https with tls).
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  // The document root on disk: what the server serves at url().
  std::filesystem::path root() const { return dir_ / "root"; }
  std::filesystem::path access_log() const { return dir_ / "logs" / "access.log"; }
  std::filesystem::path ca_file() const { return dir_ / "cert.pem"; }
  // A folder name no other test of this executable uses ("t<n>-<pid>").
  static std::string fresh_folder();

  // Creates a file under root() as the server's user would, so the server can
  // also change or delete it (parent folders included).
  void place_file(const std::filesystem::path& relative, const std::string& content) const;

  void stop();

 private:
  WebDavServer(std::string name, ServerConfig config);
  bool start();

  std::string name_;
  ServerConfig config_;
  std::filesystem::path dir_;
  std::string url_;
  int port_ = 0;
};

// The folder holding the server scripts (tests/integration/servers).
std::filesystem::path server_scripts_dir();

// free_port() is in support/server_script.hpp.

}  // namespace instance::testing
