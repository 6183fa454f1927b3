// The store contract, run against the directory store: every test gets a
// fresh store on a new temporary root, removed when the store is destroyed.
#include <filesystem>
#include <memory>
#include <utility>

#include "contract/store_contract.hpp"
#include "instance/stores/directory.hpp"
#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

// A directory store that owns (and finally removes) its temporary root.
class TempRootStore final : public StoreWrapper {
 public:
  TempRootStore(std::shared_ptr<Store> target, TempDir dir)
      : StoreWrapper(std::move(target)), dir_(std::move(dir)) {}

 private:
  TempDir dir_;
};

std::shared_ptr<Store> make_temp_directory_store() {
  TempDir dir;
  // A root that does not exist yet: the store must create it on first write.
  auto store = make_directory_store({.root = dir.path() / "store"});
  if (!store) {
    ADD_FAILURE() << store.error().message;
    return nullptr;
  }
  return std::make_shared<TempRootStore>(std::move(*store), std::move(dir));
}

INSTANTIATE_TEST_SUITE_P(Directory, StoreContract,
                         ::testing::Values(StoreFactory{"directory", make_temp_directory_store}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace instance::testing
