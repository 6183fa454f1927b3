// The store contract against real WebDAV servers, each test in a fresh
// folder. Every store holds a password: Apache requires it as Basic, and as
// Digest on its Digest instance (refused when wrong), chezdav as Digest on
// its own (where any password passes); the others never ask for it (over
// plain http it waits for a challenge), but it must not show in any log
// line or error either.
#include "contract/store_contract.hpp"
#include "helpers.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

WebDavStoreOptions options_on(const WebDavServer& server, const StoreEnv& env,
                              std::string secret = kAuthPassword) {
  auto options = options_for(server);
  options.auth = WebDavAuth::basic;
  options.user = kAuthUser;
  options.secret = std::move(secret);
  options.logger = env.logger;
  return options;
}

StoreFactory on(std::string name, WebDavServer& (*server)()) {
  return {.name = std::move(name),
          .place = [server](const StoreEnv& env) -> StoreOpener {
            if (!server().running()) return nullptr;
            return [options = options_on(server(), env)] { return make_store(options); };
          },
          .secret = kAuthPassword,
          .unreachable =
              [server](const StoreEnv& env) {
                auto options = options_on(server(), env);
                options.base_url = "http://127.0.0.1:" + std::to_string(free_port()) + "/dav";
                options.retry_deadline = 100ms;
                return make_store(options);
              }};
}

StoreFactory apache() {
  StoreFactory f = on("apache", &WebDavServer::apache_with_auth);
  f.with_secret = [](const StoreEnv& env, const std::string& secret) {
    return make_store(options_on(WebDavServer::apache_with_auth(), env, secret));
  };
  return f;
}

// nginx grants its lock zone's timeout (kNginxLockZone) whatever is asked,
// answers success to an UNLOCK of a lock already gone, and hides names
// starting with '.' from listings (peers_test: NginxHidesDotNamesFromListings).
StoreFactory nginx() {
  StoreFactory f = on("nginx", &WebDavServer::nginx);
  f.lists_dot_names = false;
  f.unlock_of_a_gone_lock_is_not_found = false;
  return f;
}

// Apache with Digest (mod_auth_digest): the password is checked, so a wrong
// one is refused.
StoreFactory apache_digest() {
  StoreFactory f = on("apache_digest", &WebDavServer::apache_with_digest);
  f.with_secret = [](const StoreEnv& env, const std::string& secret) {
    return make_store(options_on(WebDavServer::apache_with_digest(), env, secret));
  };
  return f;
}

// chezdav (phodav 3.0): its locks never expire, and its listings decode the
// '%' in names (peers_test: ChezdavListing).
StoreFactory chezdav(std::string name, WebDavServer& (*server)()) {
  StoreFactory f = on(std::move(name), server);
  f.lists_percent_names = false;
  f.lease_never_expires =
      "chezdav's locks never expire; the guard ends stale locks itself (issue 27)";
  return f;
}

// chezdav requiring Digest. No `with_secret`: measured, it accepts any
// password of a known user (it refuses only unknown users and Basic), so a
// wrong password cannot be refused there (auth_test: ChezdavAuth).
StoreFactory chezdav_digest() {
  return chezdav("chezdav_digest", &WebDavServer::chezdav_with_auth);
}

INSTANTIATE_TEST_SUITE_P(
    WebDav, StoreContract,
    ::testing::Values(apache(), apache_digest(), on("lighttpd", &WebDavServer::lighttpd), nginx(),
                      on("rclone", &WebDavServer::rclone), on("sabredav", &WebDavServer::sabredav),
                      chezdav("chezdav", &WebDavServer::chezdav), chezdav_digest()),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
