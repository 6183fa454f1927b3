// The PostgreSQL store against a real cluster, beyond the store contract
// (lock mechanics, expiry and secrets in every message are the contract's):
// lease expiries computed on the server's clock, fencing epochs from a
// sequence, hostile inputs, a server that is down or restarts, the table's
// creation, and credentials from the environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "instance/logger.hpp"
#include "instance/testing.hpp"
#include "server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_POSTGRES();
    table_ = PostgresServer::fresh_table();
    store_ = test_store(test_options(table_));
    ASSERT_NE(store_, nullptr);
  }
  PostgresServer& server() { return PostgresServer::get(); }
  std::shared_ptr<Store> another() { return test_store(test_options(table_)); }
  // Ends every lease in our table on the server's clock, as time passing would.
  void expire_leases() {
    server().admin("UPDATE " + table_ +
                   " SET expires_at = now() - interval '1 ms' WHERE kind = 'l'");
  }

  std::string table_;
  std::shared_ptr<Store> store_;
};

TEST_F(PostgresStoreTest, DeclaresEveryCapabilityWithTheServersClock) {
  const Capabilities caps = store_->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_TRUE(caps.conditional_writes);
  EXPECT_TRUE(caps.native_lease);
  EXPECT_TRUE(caps.server_clock);
}

TEST_F(PostgresStoreTest, DescribeNamesTheEndpointAndTable) {
  EXPECT_EQ(store_->describe(),
            "postgres://127.0.0.1:" + std::to_string(server().port()) + "/guard?table=" + table_);
}

TEST_F(PostgresStoreTest, LeaseExpiryIsComputedAndJudgedOnTheServersClock) {
  const Key k = key("instances.lock");
  auto a = store_->lock(k, 60s, "a");
  ASSERT_TRUE(a) << a.error().message;
  // expires_at = the server's now() + ttl.
  const double left = std::stod(server().admin(
      "SELECT extract(epoch FROM expires_at - now()) FROM " + table_ + " WHERE kind = 'l'"));
  EXPECT_GT(left, 55.0);
  EXPECT_LE(left, 60.0);
  // The server's clock passing the expiry, and nothing else, frees it.
  auto other = another();
  EXPECT_EQ(other->lock(k, 60s, "b").error().code, Errc::locked);
  expire_leases();
  auto b = other->lock(k, 60s, "b");
  ASSERT_TRUE(b) << b.error().message;
  auto refreshed = store_->refresh_lock(k, a->token, 60s);
  ASSERT_FALSE(refreshed);
  EXPECT_EQ(refreshed.error().code, Errc::locked) << refreshed.error().message;
  EXPECT_EQ(store_->unlock(k, a->token).error().code, Errc::not_found);
  EXPECT_TRUE(other->refresh_lock(k, b->token, 60s));
}

TEST_F(PostgresStoreTest, AnExpiredLeaseCannotBeRefreshedEvenWhenNobodyTookIt) {
  const Key k = key("instances.lock");
  auto a = store_->lock(k, 60s, "a");
  ASSERT_TRUE(a);
  expire_leases();
  EXPECT_EQ(store_->refresh_lock(k, a->token, 60s).error().code, Errc::locked);
}

TEST_F(PostgresStoreTest, ClientClocksDoNotMatterButSkewIsReported) {
  // A client whose clock is months off (FakeClock starts at 2026-01-01):
  // leases still work on the server's clock, and one warning says so.
  auto logger = std::make_shared<CapturingLogger>();
  auto options = test_options(table_);
  options.clock = std::make_shared<FakeClock>();
  options.max_clock_skew = 5s;
  options.logger = logger;
  auto skewed = test_store(options);
  auto token = skewed->lock(key("instances.lock"), 60s, "skewed");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_EQ(store_->lock(key("instances.lock"), 60s, "b").error().code, Errc::locked);
  ASSERT_TRUE(skewed->get(key("none")).error().code == Errc::not_found);
  int warnings = 0;
  for (const auto& line : logger->formatted()) {
    if (line.starts_with("warn ") && line.find("clock") != std::string::npos) ++warnings;
  }
  EXPECT_EQ(warnings, 1);
}

TEST_F(PostgresStoreTest, EpochsComeFromTheSequenceAndNeverRepeat) {
  const Key k = key("instances.lock");
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto t = store_->lock(k, 1min, "a");
    ASSERT_TRUE(t) << t.error().message;
    const auto epoch = t->epoch;
    EXPECT_GT(epoch, 0u);
    EXPECT_GT(epoch, last);
    last = epoch;
    EXPECT_EQ(server().admin("SELECT epoch FROM " + table_ + " WHERE kind = 'l'"),
              std::to_string(epoch));
    ASSERT_TRUE(store_->unlock(k, t->token));
  }
  EXPECT_EQ(server().admin("SELECT last_value FROM " + table_ + "_epoch"), std::to_string(last));
}

TEST_F(PostgresStoreTest, HostileVersionsTokensAndKeysStayParameters) {
  const Key k = key("instances/a");
  const auto v = store_->replace(k, "one").value();
  for (std::string_view bad :
       {"1 OR 1=1", "0; DROP TABLE x", "' OR ''='", "", "-1", "99999999999999999999999", "1e3"}) {
    EXPECT_EQ(store_->replace_if(k, "two", bad).error().code, Errc::conflict) << bad;
    EXPECT_EQ(store_->remove_if(k, bad).error().code, Errc::conflict) << bad;
  }
  for (std::string_view bad : {"1.'; DELETE FROM x; --", "x", "1.", ".0123456789abcdef"}) {
    EXPECT_EQ(store_->refresh_lock(k, bad, 1min).error().code, Errc::not_found) << bad;
    EXPECT_EQ(store_->unlock(k, bad).error().code, Errc::not_found) << bad;
  }
  const Key quote = Key::from_segments({"instances", "a'; DROP TABLE " + table_ + "; --"}).value();
  ASSERT_TRUE(store_->replace(quote, "q"));
  EXPECT_EQ(store_->get(quote)->data, "q");
  EXPECT_EQ(store_->get(k)->data, "one");
  EXPECT_EQ(store_->get(k)->version, v);
  EXPECT_EQ(server().admin("SELECT count(*) FROM " + table_), "2");
}

TEST_F(PostgresStoreTest, ListRangesDoNotCatchNeighbours) {
  // '%' and '_' are LIKE wildcards; '0' follows '/' in byte order.
  for (const char* k : {"a/x", "a0", "a%2F", "a_/y", "a/b/c", "b"}) {
    ASSERT_TRUE(store_->replace(key(k), k)) << k;
  }
  auto keys = store_->list(key("a")).value();
  std::vector<std::string> names;
  for (const auto& k : keys) names.push_back(k.str());
  std::ranges::sort(names);
  EXPECT_EQ(names, (std::vector<std::string>{"a/b/c", "a/x"}));
  EXPECT_EQ(store_->list(key("a_")).value().size(), 1u);
}

TEST_F(PostgresStoreTest, ABadTableNameIsRefused) {
  for (const char* bad : {"", "Upper", "1st", "a-b", "x\"; DROP TABLE y; --",
                          "a_very_long_table_name_that_is_more_than_forty_eight_chars"}) {
    auto options = test_options(bad);
    auto store = make_postgres_store(options);
    ASSERT_FALSE(store) << bad;
    EXPECT_EQ(store.error().code, Errc::invalid);
  }
}

TEST_F(PostgresStoreTest, ConcurrentFirstUsersCreateTheTableOnce) {
  const std::string table = PostgresServer::fresh_table();
  std::vector<std::shared_ptr<Store>> stores;
  for (int i = 0; i < 8; ++i) stores.push_back(test_store(test_options(table)));
  std::vector<std::string> errors(stores.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < stores.size(); ++i) {
      threads.emplace_back([&, i] {
        auto r = stores[i]->replace(key("instances/r" + std::to_string(i)), "x");
        if (!r) errors[i] = r.error().message;
      });
    }
  }
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(stores[0]->list(key("instances")).value().size(), stores.size());
}

TEST_F(PostgresStoreTest, ADroppedTableIsMadeAgain) {
  ASSERT_TRUE(store_->replace(key("instances/a"), "x"));
  server().admin("DROP TABLE " + table_);
  EXPECT_EQ(store_->get(key("instances/a")).error().code, Errc::not_found);
  ASSERT_TRUE(store_->replace(key("instances/a"), "y"));
  EXPECT_EQ(store_->get(key("instances/a"))->data, "y");
}

TEST_F(PostgresStoreTest, ADownServerIsATransientErrorNamingTheEndpoint) {
  auto options = test_options(table_);
  const int port = free_port();
  options.params = {{"host", "127.0.0.1"}, {"port", std::to_string(port)}, {"dbname", "guard"}};
  options.retry_deadline = 500ms;
  auto down = test_store(options);
  const auto start = std::chrono::steady_clock::now();
  auto r = down->get(key("instances/a"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().message;
  EXPECT_NE(r.error().message.find(
                "get instances/a at postgres://127.0.0.1:" + std::to_string(port) + "/guard"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("attempts"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 3s);
}

// capabilities() is asked at every claim and renewal; while the server is
// down, its replication is asked once per retry window, not once per call
// (each question costs a whole round of attempts).
TEST_F(PostgresStoreTest, ADownServersReplicationIsAskedOncePerRetryWindow) {
  auto options = test_options(table_);
  const int port = free_port();
  options.params = {{"host", "127.0.0.1,127.0.0.1"},
                    {"port", std::to_string(port) + "," + std::to_string(port)},
                    {"dbname", "guard"}};
  options.retry_deadline = 500ms;
  auto clock = std::make_shared<FakeClock>();
  options.clock = clock;
  auto down = test_store(options);
  const MonoTime before = clock->monotonic();
  const std::string first = down->capabilities().agreement;
  const MonoTime asked = clock->monotonic();
  EXPECT_GT(asked, before) << "the first call asks, retrying on the (fake) clock";
  EXPECT_NE(first.find("its replication not learnt"), std::string::npos) << first;
  EXPECT_EQ(down->capabilities().agreement, first);
  EXPECT_EQ(clock->monotonic(), asked) << "asked again within the retry window";
  clock->advance(600ms);
  const MonoTime later = clock->monotonic();
  EXPECT_EQ(down->capabilities().agreement, first);
  EXPECT_GT(clock->monotonic(), later) << "not asked again once the window passed";
}

TEST_F(PostgresStoreTest, ReconnectsAfterARestartAndKeepsTheLease) {
  auto options = test_options(table_);
  options.retry_deadline = 300ms;  // the call to the stopped server gives up soon
  store_ = test_store(options);
  const Key k = key("instances.lock");
  auto token = store_->lock(k, 5min, "a");
  ASSERT_TRUE(token) << token.error().message;
  ASSERT_TRUE(store_->replace(key("instances/a"), "before"));
  server().stop();
  auto during = store_->get(key("instances/a"));
  ASSERT_FALSE(during);
  EXPECT_EQ(during.error().code, Errc::unavailable) << during.error().message;
  ASSERT_TRUE(server().start());
  EXPECT_EQ(store_->get(key("instances/a"))->data, "before");
  EXPECT_TRUE(store_->refresh_lock(k, token->token, 5min));
  EXPECT_EQ(another()->lock(k, 5min, "b").error().code, Errc::locked);
}

// Credentials: the `guard` role needs its password; it never shows.
// The password never showing is the contract's; here, that a wrong one is
// refused at once, not retried.
TEST_F(PostgresStoreTest, AWrongPasswordIsRefusedWithoutRetries) {
  auto bad = test_store(guard_options(table_ + "_auth", "wrong-Pw-5d2b"));
  const auto start = std::chrono::steady_clock::now();
  auto r = bad->get(key("instances/a"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::permission) << r.error().message;
  EXPECT_EQ(r.error().message.find("attempts"), std::string::npos)
      << "a bad password is not retried";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST_F(PostgresStoreTest, UrlCredentialsComeFromTheEnvironmentOrAFile) {
  const std::string password(PostgresServer::kPassword);
  OpenOptions open;
  open.getenv = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "INSTANCE_GUARD_USER") return std::string(PostgresServer::kUser);
    if (name == "INSTANCE_GUARD_PASSWORD") return password;
    return std::nullopt;
  };
  auto parsed = parse_postgres_url(server().url() + "?table=" + table_, open);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->password, password);
  auto store = make_postgres_store(*parsed);
  ASSERT_TRUE(store);
  ASSERT_TRUE((*store)->replace(key("instances/env"), "x"));
  EXPECT_EQ((*store)->describe().find(password), std::string::npos);
}

// --wait's hand-over (Store::await_change): a waiter LISTENs on the table's
// channel and is woken by the NOTIFY of the statement that unlocks or
// removes, not at its next poll. Each wait that should be woken is given a
// minute: one that was not woken would come back false after it.
template <typename F>
std::chrono::steady_clock::duration timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - start;
}

// Runs `change` while another thread waits on `k` in `waiter` for a minute;
// the wait's answer and how long it took.
template <typename F>
std::pair<Result<bool>, std::chrono::steady_clock::duration> wait_across(Store& waiter,
                                                                         const Key& k, F&& change) {
  std::optional<Result<bool>> woken;
  std::chrono::steady_clock::duration took{};
  std::thread t([&] { took = timed([&] { woken = waiter.await_change(k, 1min, {}); }); });
  // Not needed for correctness (a waiter that listens after the change finds
  // it made), only so the wait is usually already blocked.
  std::this_thread::sleep_for(50ms);
  change();
  t.join();
  return {std::move(*woken), took};
}

TEST_F(PostgresStoreTest, AWaiterIsWokenByAnUnlockInAnotherStore) {
  const Key k = key("instances.lock");
  auto holder = another();
  auto held = holder->lock(k, 1min, "holder").value();
  auto [woken, took] = wait_across(*store_, k, [&] { ASSERT_TRUE(holder->unlock(k, held.token)); });
  ASSERT_TRUE(woken) << woken.error().message;
  EXPECT_TRUE(*woken);
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(store_->lock(k, 1min, "next"));  // and the lock is free to take
}

TEST_F(PostgresStoreTest, AWaitForAFreeOrExpiredLockReturnsAtOnce) {
  const Key k = key("instances.lock");
  Result<bool> free = false;
  auto took = timed([&] { free = store_->await_change(k, 1min, {}); });
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
  EXPECT_LT(took, 10s);
  ASSERT_TRUE(another()->lock(k, 1min, "holder"));
  expire_leases();  // the row stays, its expiry passed on the server's clock
  took = timed([&] { free = store_->await_change(k, 1min, {}); });
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
  EXPECT_LT(took, 10s);
}

TEST_F(PostgresStoreTest, AWaitEndsWithFalseWhenStopIsRequested) {
  const Key k = key("instances.lock");
  ASSERT_TRUE(another()->lock(k, 1min, "holder"));
  std::stop_source stop;
  std::optional<Result<bool>> woken;
  std::chrono::steady_clock::duration took{};
  std::thread t(
      [&] { took = timed([&] { woken = store_->await_change(k, 1min, stop.get_token()); }); });
  std::this_thread::sleep_for(50ms);
  stop.request_stop();
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_FALSE(**woken);  // not a change: the holder still holds
  EXPECT_LT(took, 10s);
  EXPECT_EQ(store_->lock(k, 1min, "next").error().code, Errc::locked);
}

TEST_F(PostgresStoreTest, AWaitOnAHeldLockTimesOutWithFalseAndIgnoresOtherKeys) {
  const Key k = key("instances.lock");
  auto holder = another();
  ASSERT_TRUE(holder->lock(k, 1min, "holder"));
  ASSERT_TRUE(holder->replace(key("instances/other"), "{}"));
  for (int i = 0; i < 2; ++i) {  // the second on the connection the first left listening
    auto still = store_->await_change(k, 100ms, {});
    ASSERT_TRUE(still) << still.error().message;
    EXPECT_FALSE(*still);
  }
  // Another key's change, notified on the same channel, wakes nobody here.
  std::optional<Result<bool>> still;
  std::thread t([&] { still = store_->await_change(k, 300ms, {}); });
  ASSERT_TRUE(holder->remove(key("instances/other")));
  t.join();
  ASSERT_TRUE(still.has_value() && still->has_value()) << still->error().message;
  EXPECT_FALSE(**still);
}

TEST_F(PostgresStoreTest, ARemovedRecordWakesItsWaiter) {
  auto holder = another();
  const Key plain = key("instances/a");
  const Key conditional = key("instances/b");
  ASSERT_TRUE(holder->replace(plain, "{}"));
  const std::string version = holder->replace(conditional, "{}").value();
  auto still = store_->await_change(plain, 100ms, {});
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_FALSE(*still);  // present: nothing to wake for
  auto [removed, took] = wait_across(*store_, plain, [&] { ASSERT_TRUE(holder->remove(plain)); });
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(*removed);
  EXPECT_LT(took, 10s);
  auto [gone, took_if] = wait_across(*store_, conditional, [&] {
    EXPECT_EQ(holder->remove_if(conditional, "1").error().code, Errc::conflict);
    ASSERT_TRUE(holder->remove_if(conditional, version));
  });
  ASSERT_TRUE(gone) << gone.error().message;
  EXPECT_TRUE(*gone);
  EXPECT_LT(took_if, 10s);
  // remove and remove_if still answer as before.
  EXPECT_EQ(holder->remove(plain).error().code, Errc::not_found);
  EXPECT_EQ(holder->remove_if(conditional, version).error().code, Errc::not_found);
}

TEST_F(PostgresStoreTest, TwoWaitsAtOnceOnOneStoreAreBothWoken) {
  const Key k = key("instances.lock");
  auto holder = another();
  auto held = holder->lock(k, 1min, "holder").value();
  std::optional<Result<bool>> first, second;
  std::thread a([&] { first = store_->await_change(k, 1min, {}); });
  std::thread b([&] { second = store_->await_change(k, 1min, {}); });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(holder->unlock(k, held.token));
  a.join();
  b.join();
  for (auto* woken : {&first, &second}) {
    ASSERT_TRUE(woken->has_value() && (*woken)->has_value()) << (*woken)->error().message;
    EXPECT_TRUE(***woken);
  }
}

// The listening connection logs in as the store's does; a wrong password
// fails the wait (the guard then polls), naming the store, never the password.
TEST_F(PostgresStoreTest, AWaitLogsInWithThePasswordAndNeverShowsIt) {
  const std::string table = table_ + "_auth";
  auto store = test_store(guard_options(table, std::string(PostgresServer::kPassword)));
  auto holder = test_store(guard_options(table, std::string(PostgresServer::kPassword)));
  const Key k = key("instances.lock");
  auto held = holder->lock(k, 1min, "holder");
  ASSERT_TRUE(held) << held.error().message;
  auto [woken, took] = wait_across(*store, k, [&] { ASSERT_TRUE(holder->unlock(k, held->token)); });
  ASSERT_TRUE(woken) << woken.error().message;
  EXPECT_TRUE(*woken);

  const std::string wrong = "wrong-Pw-9e4f";
  auto bad = test_store(guard_options(table, wrong));
  auto refused = bad->await_change(k, 1min, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::permission) << refused.error().message;
  EXPECT_NE(refused.error().message.find("wait for a change of instances.lock at postgres://"),
            std::string::npos)
      << refused.error().message;
  EXPECT_EQ(refused.error().message.find(wrong), std::string::npos) << refused.error().message;
  EXPECT_EQ(refused.error().message.find(PostgresServer::kPassword), std::string::npos);
}

TEST_F(PostgresStoreTest, ADownServerFailsTheWaitSoTheCallerPolls) {
  auto options = test_options(table_);
  const int port = free_port();
  options.params = {{"host", "127.0.0.1"}, {"port", std::to_string(port)}, {"dbname", "guard"}};
  auto wait = test_store(options)->await_change(key("instances.lock"), 1min, {});
  ASSERT_FALSE(wait);
  EXPECT_EQ(wait.error().code, Errc::unavailable) << wait.error().message;
  EXPECT_NE(wait.error().message.find("postgres://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << wait.error().message;
}

}  // namespace
}  // namespace instance::testing
