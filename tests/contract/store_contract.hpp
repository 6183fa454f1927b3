// The store contract: one suite every Store implementation must pass.
//
// A store's test file instantiates it with a factory that returns a fresh,
// empty store per test (a new temporary folder, a new folder on a server):
//
//   INSTANTIATE_TEST_SUITE_P(Directory, StoreContract,
//       ::testing::Values(StoreFactory{"directory", [] { return ...; }}),
//       [](const auto& info) { return info.param.name; });
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "instance/store.hpp"

namespace instance::testing {

struct StoreFactory {
  std::string name;  // a gtest-safe name: letters, digits, underscores
  std::function<std::shared_ptr<Store>()> make;
  // Optional: why this store cannot be tested on this machine (its server's
  // package is not installed), or empty. Only for a missing server binary.
  std::function<std::string()> skip_reason;
  // False for a server that hides names starting with '.' from its listings
  // (nginx's dav_ext): the hostile-name round trip cannot list them.
  bool lists_dot_names = true;
  friend void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }
};

class StoreContract : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    if (GetParam().skip_reason) {
      if (const std::string why = GetParam().skip_reason(); !why.empty()) GTEST_SKIP() << why;
    }
    store_ = GetParam().make();
    if (IsSkipped()) return;  // the factory skipped: its server is not installed
    ASSERT_NE(store_, nullptr) << "the factory for " << GetParam().name << " returned no store";
  }
  Store& store() { return *store_; }
  std::shared_ptr<Store> store_;
};

}  // namespace instance::testing
