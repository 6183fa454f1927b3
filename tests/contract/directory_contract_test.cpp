// The store contract, run against the directory store: every test gets a
// fresh temporary root (not created yet: the store must create it on first
// write), removed when the test's last store is gone. Its leases are OFD
// locks: they end with their holder, never on a clock.
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "contract/store_contract.hpp"
#include "instance/sdk/store_wrapper.hpp"
#include "instance/stores/directory.hpp"
#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

// A directory store that keeps its temporary root alive.
class Rooted final : public StoreWrapper {
 public:
  Rooted(std::shared_ptr<Store> target, std::shared_ptr<TempDir> dir)
      : StoreWrapper(std::move(target)), dir_(std::move(dir)) {}

 private:
  std::shared_ptr<TempDir> dir_;
};

// `sync`: DirectoryStoreOptions::sync (nullopt: as the file system under
// the temporary folder decides).
StoreOpener temp_directory(std::optional<bool> sync) {
  auto dir = std::make_shared<TempDir>();
  return [dir, sync]() -> std::shared_ptr<Store> {
    auto store = make_directory_store({.root = dir->path() / "store", .sync = sync});
    if (!store) {
      ADD_FAILURE() << store.error().message;
      return nullptr;
    }
    return std::make_shared<Rooted>(std::move(*store), dir);
  };
}

INSTANTIATE_TEST_SUITE_P(
    Directory, StoreContract,
    ::testing::Values(StoreFactory{.name = "directory",
                                   .place =
                                       [](const StoreEnv&) { return temp_directory(std::nullopt); },
                                   .lease_end = LeaseEnd::holder},
                      StoreFactory{.name = "directory_synced",
                                   .place = [](const StoreEnv&) { return temp_directory(true); },
                                   .lease_end = LeaseEnd::holder},
                      StoreFactory{.name = "directory_unsynced",
                                   .place = [](const StoreEnv&) { return temp_directory(false); },
                                   .lease_end = LeaseEnd::holder}),
    [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace instance::testing
