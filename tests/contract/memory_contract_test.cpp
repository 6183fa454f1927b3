// The store contract against the memory store: once without a clock (no
// native leases) and once with leases on the real clock (200 ms: far longer
// than two calls take). Every store object of a place is the same store.
#include "contract/store_contract.hpp"
#include "instance/stores/memory.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

StoreOpener shared(std::shared_ptr<Store> store) {
  return [store] { return store; };
}

INSTANTIATE_TEST_SUITE_P(
    Memory, StoreContract,
    ::testing::Values(
        StoreFactory{.name = "memory",
                     .place = [](const StoreEnv&) { return shared(make_memory_store()); }},
        StoreFactory{
            .name = "memory_leases",
            .place = [](const StoreEnv&) { return shared(make_memory_store(system_clock())); },
            .shortest_lease = 200ms},
        StoreFactory{.name = "memory_atomic_leases",
                     .place =
                         [](const StoreEnv&) {
                           return shared(make_memory_store(MemoryStoreOptions{
                               .lease_clock = system_clock(), .atomic_lease = true}));
                         },
                     .shortest_lease = 200ms}),
    [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace instance::testing
