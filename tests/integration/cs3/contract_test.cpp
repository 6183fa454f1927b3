// The store contract against the CS3 gateway test double, each test in a
// fresh folder of one space.
#include "contract/store_contract.hpp"
#include "helpers.hpp"

namespace instance::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Cs3, StoreContract,
                         ::testing::Values(StoreFactory{
                             "gateway_double",
                             [] { return make_store(options_for(shared_gateway())); }}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
