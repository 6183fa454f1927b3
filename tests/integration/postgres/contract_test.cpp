// The store contract against a real PostgreSQL cluster, each test in a fresh table.
#include "contract/store_contract.hpp"
#include "server.hpp"

namespace instance::testing {
namespace {

std::shared_ptr<Store> fresh_store() {
  auto& server = PostgresServer::get();
  if (server.absent()) {
    [&] { GTEST_SKIP() << server.skip_reason(); }();
    return nullptr;
  }
  return test_store();
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreContract,
                         ::testing::Values(StoreFactory{"postgres", fresh_store}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
