// The store contract against a real etcd, each test under a fresh prefix;
// once without auth and once as an authenticated user.
#include "contract/store_contract.hpp"
#include "server.hpp"

namespace instance::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(
    Etcd, StoreContract,
    ::testing::Values(StoreFactory{"etcd", [] { return EtcdServer::shared().store(); }},
                      StoreFactory{"etcd_auth", [] { return EtcdServer::with_auth().store(); }}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
