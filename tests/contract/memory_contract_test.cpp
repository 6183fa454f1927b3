#include "contract/store_contract.hpp"
#include "instance/stores/memory.hpp"

namespace instance::testing {

INSTANTIATE_TEST_SUITE_P(Memory, StoreContract,
                         ::testing::Values(StoreFactory{"memory",
                                                        [] { return make_memory_store(); }}),
                         [](const auto& p) { return p.param.name; });

}  // namespace instance::testing
