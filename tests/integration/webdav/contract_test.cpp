// The store contract against real WebDAV servers, each test in a fresh folder.
#include "contract/store_contract.hpp"
#include "helpers.hpp"

namespace instance::testing {
namespace {

std::shared_ptr<Store> on(WebDavServer& server) {
  if (!server.running()) return nullptr;
  return make_store(options_for(server));
}

INSTANTIATE_TEST_SUITE_P(
    WebDav, StoreContract,
    ::testing::Values(StoreFactory{"apache", [] { return on(WebDavServer::apache()); }},
                      StoreFactory{"lighttpd", [] { return on(WebDavServer::lighttpd()); }},
                      // No conditional writes (If-Match ignored): the plain part.
                      // nginx also hides names starting with '.' from listings
                      // (peers_test: NginxHidesDotNamesFromListings).
                      StoreFactory{.name = "nginx",
                                   .make = [] { return on(WebDavServer::nginx()); },
                                   .lists_dot_names = false},
                      StoreFactory{"rclone", [] { return on(WebDavServer::rclone()); }},
                      StoreFactory{"sabredav", [] { return on(WebDavServer::sabredav()); }}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
