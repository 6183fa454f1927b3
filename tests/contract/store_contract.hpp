// The store contract: one suite every Store implementation must pass.
//
// A store's test file instantiates it with a factory. Its `place` gives a
// fresh, empty place per test (a new temporary folder, a folder on a server,
// a key prefix, a table) as an opener: every call of the opener opens one
// more store object, with its own connection, on that same place, logging to
// the fixture's logger and holding the factory's secret:
//
//   INSTANTIATE_TEST_SUITE_P(Directory, StoreContract,
//       ::testing::Values(StoreFactory{.name = "directory", .place = ...}),
//       [](const auto& info) { return info.param.name; });
//
// What runs depends on capabilities(): conditional writes and native leases
// are asserted wherever a store declares them, and skipped (GTEST_SKIP,
// naming why) only where it does not, or where the factory names a server
// that cannot do what a case asks (lists_dot_names, lease_never_expires).
// Every test also checks, when it ends, that no credential (the factory's
// secret, and any the server issued) appears in any log line or error
// message the test produced.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "instance/logger.hpp"
#include "instance/store.hpp"

namespace instance::testing {

class CapturingLogger;

// What the fixture hands a factory.
struct StoreEnv {
  std::shared_ptr<Logger> logger;  // every store the factory opens logs here
};

// Opens one more store object on one place (null when it cannot: the test
// then fails, unless the factory skipped it).
using StoreOpener = std::function<std::shared_ptr<Store>()>;

// How a native lease ends when nobody unlocks or refreshes it.
enum class LeaseEnd {
  ttl,     // after its ttl (or what the store granted), on the store's clock
  holder,  // when its holder (the store object that locked it) is gone: an OFD lock
};

struct StoreFactory {
  std::string name;  // a gtest-safe name: letters, digits, underscores
  std::function<StoreOpener(const StoreEnv&)> place;
  // Optional: why this store cannot be tested on this machine (its server's
  // package is not installed), or empty. Only for a missing server binary.
  std::function<std::string()> skip_reason;
  // False for a server that hides names starting with '.' from its listings
  // (nginx's dav_ext): the hostile-name round trip cannot list them.
  bool lists_dot_names = true;
  // False for a server whose listings decode the '%' in names (chezdav lists
  // the file a%20b as "a b"): escaped keys round-trip but cannot be listed.
  bool lists_percent_names = true;

  // ---- native leases (asserted when capabilities().native_lease)
  LeaseEnd lease_end = LeaseEnd::ttl;
  // The shortest ttl the store grants: the expiry case asks for it and polls
  // the store (bounded) until another holder gets the lease.
  Duration shortest_lease = std::chrono::seconds(1);
  // False for a server that answers success to an UNLOCK of a lock that is
  // already gone (nginx, measured): the interface's not_found cannot be had.
  bool unlock_of_a_gone_lock_is_not_found = true;
  // Why, for a server whose leases never end on their own (chezdav: its
  // locks never expire, whatever timeout it granted): the expiry case is
  // skipped naming it. Empty: leases end as `lease_end` says.
  std::string lease_never_expires;

  // ---- credentials
  // The secret (password, token, service account secret) every store from
  // `place` holds; empty when this instance opens its store without one.
  std::string secret;
  // Optional: a store on the same server holding `secret` instead (the
  // suite passes a wrong one: it must be refused as Errc::permission).
  std::function<std::shared_ptr<Store>(const StoreEnv&, const std::string& secret)> with_secret;
  // Optional: a store holding the factory's secret where no server listens
  // (it must fail as Errc::unavailable, soon).
  std::function<std::shared_ptr<Store>(const StoreEnv&)> unreachable;
  // Optional: credentials the server issued meanwhile (access tokens).
  std::function<std::vector<std::string>()> issued_secrets;

  friend void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }
};

class StoreContract : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  // Fails the test when a credential shows in a log line or error message.
  void TearDown() override;

  Store& store() { return *store_; }
  // Another store object (own connection) on this test's place.
  std::shared_ptr<Store> another();
  // `n` more of them (fewer when some could not be opened).
  std::vector<std::shared_ptr<Store>> others(std::size_t n);
  // `store` with every error message it returns recorded for TearDown's check.
  std::shared_ptr<Store> recorded(std::shared_ptr<Store> store);
  // Every log line and recorded error message so far.
  std::vector<std::string> texts() const;
  // Every credential: the factory's secret, issued ones, and `extra`.
  std::vector<std::string> secrets() const;

  std::shared_ptr<CapturingLogger> logger_;
  StoreEnv env_;
  StoreOpener opener_;
  std::shared_ptr<Store> store_;
  std::vector<std::string> extra_secrets_;  // wrong ones a test handed out
  struct Messages {
    std::mutex mu;
    std::vector<std::string> texts;
  };
  std::shared_ptr<Messages> messages_ = std::make_shared<Messages>();
};

}  // namespace instance::testing
