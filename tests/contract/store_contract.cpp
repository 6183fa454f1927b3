// The store contract: what the guard relies on, asserted for every store.
#include "contract/store_contract.hpp"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <thread>

#include "instance/sdk/store_wrapper.hpp"
#include "support/race.hpp"
#include "support/test_support.hpp"

namespace instance::testing {

using namespace std::chrono_literals;

namespace {

// Forwards to a store and records every error message it returns (and its
// describe()), for the fixture's check that no credential shows.
class Recorded final : public StoreWrapper {
 public:
  Recorded(std::shared_ptr<Store> target, std::function<void(std::string)> note)
      : StoreWrapper(std::move(target)), note_(std::move(note)) {}

  std::string describe() const override { return noted(StoreWrapper::describe()); }
  Capabilities capabilities() override {
    auto caps = StoreWrapper::capabilities();
    if (caps.unknown) note_(caps.unknown->message);
    return caps;
  }
  Result<Document> get(const Key& k) override { return noted(StoreWrapper::get(k)); }
  Result<std::string> create(const Key& k, std::string_view d) override {
    return noted(StoreWrapper::create(k, d));
  }
  Result<std::string> replace(const Key& k, std::string_view d) override {
    return noted(StoreWrapper::replace(k, d));
  }
  Result<void> remove(const Key& k) override { return noted(StoreWrapper::remove(k)); }
  Result<std::vector<Key>> list(const Key& k) override { return noted(StoreWrapper::list(k)); }
  Result<std::string> replace_if(const Key& k, std::string_view d, std::string_view v) override {
    return noted(StoreWrapper::replace_if(k, d, v));
  }
  Result<void> remove_if(const Key& k, std::string_view v) override {
    return noted(StoreWrapper::remove_if(k, v));
  }
  Result<LockGrant> lock(const Key& k, Duration ttl, std::string_view owner) override {
    return noted(StoreWrapper::lock(k, ttl, owner));
  }
  Result<Duration> refresh_lock(const Key& k, std::string_view token, Duration ttl) override {
    return noted(StoreWrapper::refresh_lock(k, token, ttl));
  }
  Result<void> unlock(const Key& k, std::string_view token) override {
    return noted(StoreWrapper::unlock(k, token));
  }

 private:
  std::string noted(std::string text) const {
    note_(text);
    return text;
  }
  template <class T>
  Result<T> noted(Result<T> r) const {
    if (!r) note_(r.error().message);
    return r;
  }
  std::function<void(std::string)> note_;
};

}  // namespace

void StoreContract::SetUp() {
  const StoreFactory& factory = GetParam();
  if (factory.skip_reason) {
    if (const std::string why = factory.skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  logger_ = std::make_shared<CapturingLogger>();
  env_.logger = logger_;
  opener_ = factory.place(env_);
  if (IsSkipped()) return;  // the factory skipped: its server is not installed
  ASSERT_TRUE(opener_) << "the factory for " << factory.name << " gave no place";
  store_ = another();
  ASSERT_NE(store_, nullptr) << "the factory for " << factory.name << " returned no store";
}

void StoreContract::TearDown() {
  if (!logger_) return;
  const auto all = texts();
  for (const auto& secret : secrets()) {
    for (const auto& text : all) {
      EXPECT_EQ(text.find(secret), std::string::npos) << "a credential shows in: " << text;
    }
  }
}

std::shared_ptr<Store> StoreContract::another() {
  auto store = opener_ ? opener_() : nullptr;
  return store ? recorded(std::move(store)) : nullptr;
}

std::vector<std::shared_ptr<Store>> StoreContract::others(std::size_t n) {
  std::vector<std::shared_ptr<Store>> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (auto s = another()) out.push_back(std::move(s));
  }
  return out;
}

std::shared_ptr<Store> StoreContract::recorded(std::shared_ptr<Store> store) {
  return std::make_shared<Recorded>(std::move(store), [messages = messages_](std::string text) {
    std::lock_guard lock(messages->mu);
    messages->texts.push_back(std::move(text));
  });
}

std::vector<std::string> StoreContract::texts() const {
  std::vector<std::string> out = logger_->formatted();
  std::lock_guard lock(messages_->mu);
  out.insert(out.end(), messages_->texts.begin(), messages_->texts.end());
  return out;
}

std::vector<std::string> StoreContract::secrets() const {
  std::vector<std::string> out = extra_secrets_;
  if (!GetParam().secret.empty()) out.push_back(GetParam().secret);
  if (GetParam().issued_secrets) {
    for (auto& s : GetParam().issued_secrets()) out.push_back(std::move(s));
  }
  std::erase_if(out, [](const std::string& s) { return s.empty(); });
  return out;
}

namespace {

std::vector<std::string> names(std::vector<Key> keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.str());
  std::ranges::sort(out);
  return out;
}

// What a holder hears when its lease is no longer its own (interface: refresh_lock).
bool lost(const Error& e) {
  return e.code == Errc::locked || e.code == Errc::not_found || e.code == Errc::conflict;
}

TEST_P(StoreContract, GetOfAMissingKeyIsNotFound) {
  auto doc = store().get(key("instances/nobody"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::not_found) << doc.error().message;
}

TEST_P(StoreContract, CreateThenGetReturnsTheBytes) {
  ASSERT_TRUE(store().create(key("instances/a"), R"({"id":"a"})"));
  auto doc = store().get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, R"({"id":"a"})");
}

TEST_P(StoreContract, CreateFailsWhenTheKeyExists) {
  ASSERT_TRUE(store().create(key("instances/a"), "one"));
  auto again = store().create(key("instances/a"), "two");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::already_exists) << again.error().message;
  EXPECT_EQ(store().get(key("instances/a"))->data, "one");
}

TEST_P(StoreContract, ReplaceCreatesAndOverwrites) {
  ASSERT_TRUE(store().replace(key("instances/a"), "one"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "one");
  ASSERT_TRUE(store().replace(key("instances/a"), "two, longer"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "two, longer");
  ASSERT_TRUE(store().replace(key("instances/a"), "3"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "3");
}

TEST_P(StoreContract, RemoveDeletesAndThenReportsNotFound) {
  ASSERT_TRUE(store().replace(key("instances/a"), "x"));
  ASSERT_TRUE(store().remove(key("instances/a")));
  EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found);
  auto again = store().remove(key("instances/a"));
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::not_found);
}

TEST_P(StoreContract, ListOfAMissingPrefixIsEmpty) {
  auto keys = store().list(key("instances"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  EXPECT_TRUE(keys->empty());
}

TEST_P(StoreContract, ListMatchesWholeSegmentsAndNestedFolders) {
  // No key is both a document and a folder: stores may be file systems.
  for (const char* k : {"a/b/c", "a/b/d/e", "a/bc", "a/bcd/x", "b/b", "ab"}) {
    ASSERT_TRUE(store().replace(key(k), k)) << k;
  }
  EXPECT_EQ(names(store().list(key("a/b")).value()),
            (std::vector<std::string>{"a/b/c", "a/b/d/e"}));
  EXPECT_EQ(names(store().list(key("a")).value()),
            (std::vector<std::string>{"a/b/c", "a/b/d/e", "a/bc", "a/bcd/x"}));
}

TEST_P(StoreContract, EscapedKeysRoundTrip) {
  if (!GetParam().lists_dot_names) GTEST_SKIP() << "the server hides names starting with '.'";
  const Key hostile =
      Key::from_segments({"instances", "../x", ".", "..", "a b%", "\xff\x01"}).value();
  ASSERT_TRUE(store().replace(hostile, "v")) << hostile.str();
  EXPECT_EQ(store().get(hostile)->data, "v");
  if (GetParam().lists_percent_names) {
    EXPECT_EQ(names(store().list(key("instances")).value()),
              (std::vector<std::string>{hostile.str()}));
  }
  ASSERT_TRUE(store().remove(hostile));
  EXPECT_EQ(store().get(hostile).error().code, Errc::not_found);
}

TEST_P(StoreContract, DocumentsUpToOneMebibyteRoundTrip) {
  std::string big(kMaxDocumentSize, 'x');
  big.front() = '{';
  big.back() = '}';
  ASSERT_TRUE(store().replace(key("instances/big"), big));
  EXPECT_EQ(store().get(key("instances/big"))->data, big);
}

TEST_P(StoreContract, DocumentsOverOneMebibyteAreRefused) {
  auto r = store().replace(key("instances/big"), std::string(kMaxDocumentSize + 1, 'x'));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid);
  EXPECT_EQ(store().get(key("instances/big")).error().code, Errc::not_found);
}

TEST_P(StoreContract, BinaryContentRoundTrips) {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  ASSERT_TRUE(store().replace(key("instances/bin"), bytes));
  EXPECT_EQ(store().get(key("instances/bin"))->data, bytes);
}

// get_many answers each key as get() does, in the order asked: present,
// absent, nested, hostile names, the 1 MiB document, a key asked twice.
TEST_P(StoreContract, GetManyAnswersEachKeyAsGetDoes) {
  std::vector<Key> keys{key("instances/a"), key("instances/nobody"), key("instances/x/y"),
                        key("instances/big"), key("instances/a")};
  if (GetParam().lists_dot_names) {
    keys.push_back(Key::from_segments({"instances", "a\"b\\c", "..", "a b%", "\xff"}).value());
  }
  std::string big(kMaxDocumentSize, 'x');
  ASSERT_TRUE(store().replace(keys[0], "one"));
  ASSERT_TRUE(store().replace(keys[2], "nested"));
  ASSERT_TRUE(store().replace(keys[3], big));
  if (keys.size() > 5) {
    ASSERT_TRUE(store().replace(keys[5], "hostile"));
  }
  auto many = store().get_many(keys);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto one = store().get(keys[i]);
    const auto& got = (*many)[i];
    ASSERT_EQ(got.has_value(), one.has_value()) << keys[i].str();
    if (one) {
      EXPECT_EQ(got->data, one->data) << keys[i].str();
      EXPECT_EQ(got->version, one->version) << keys[i].str();
    } else {
      EXPECT_EQ(got.error().code, one.error().code) << keys[i].str();
    }
  }
  EXPECT_EQ((*many)[1].error().code, Errc::not_found);
  EXPECT_EQ((*many)[2]->data, "nested");
  EXPECT_EQ((*many)[3]->data, big);
  EXPECT_EQ((*many)[4]->data, "one");
  auto none = store().get_many({});
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_TRUE(none->empty());
}

// get_all reads what list() names under a prefix, each document as get()
// reads it: nested folders included, a sibling whose name only starts like
// the prefix and another folder left out, hostile names where the server
// lists them (dot and percent names); an empty prefix reads as nothing.
TEST_P(StoreContract, GetAllReadsWhatListNamesEachAsGetDoes) {
  std::vector<std::pair<Key, std::string>> inside{
      {key("instances/a"), "one"},
      {key("instances/x/y"), "nested"},
      {key("instances/big"), std::string(kMaxDocumentSize, 'x')}};
  if (GetParam().lists_dot_names && GetParam().lists_percent_names) {
    inside.emplace_back(Key::from_segments({"instances", "a\"b\\c", "..", "a b%", "\xff"}).value(),
                        "hostile");
  }
  for (const auto& [k, data] : inside) ASSERT_TRUE(store().replace(k, data)) << k.str();
  ASSERT_TRUE(store().replace(key("instancesz"), "beside"));
  ASSERT_TRUE(store().replace(key("other/a"), "elsewhere"));
  auto all = store().get_all(key("instances"));
  ASSERT_TRUE(all.has_value()) << all.error().message;
  std::map<std::string, const Result<Document>*> got;
  for (const auto& [k, doc] : *all) EXPECT_TRUE(got.emplace(k.str(), &doc).second) << k.str();
  EXPECT_EQ(got.size(), inside.size());
  for (const auto& [k, data] : inside) {
    auto it = got.find(k.str());
    ASSERT_NE(it, got.end()) << k.str() << " was not read";
    ASSERT_TRUE(it->second->has_value()) << k.str() << ": " << it->second->error().message;
    auto one = store().get(k);
    ASSERT_TRUE(one.has_value()) << one.error().message;
    EXPECT_EQ((*it->second)->data, data) << k.str();
    EXPECT_EQ((*it->second)->version, one->version) << k.str();
  }
  auto none = store().get_all(key("nothing"));
  ASSERT_TRUE(none.has_value()) << none.error().message;
  EXPECT_TRUE(none->empty());
}

// Many keys in one get_many, more than a store sends in one request (the
// guard's scans ask 64 at a time; ZooKeeper pipelines 64 reads per round
// trip), present and absent interleaved, asked out of their listing order:
// each answer is the one of its own key.
TEST_P(StoreContract, GetManyAnswersManyKeysEachInItsPlace) {
  constexpr int kKeys = 150;
  auto name = [](int i) { return key("instances/many/n" + std::to_string(i)); };
  for (int i = 0; i < kKeys; ++i) {
    if (i % 3 != 0) {
      ASSERT_TRUE(store().replace(name(i), "doc-" + std::to_string(i)));
    }
  }
  std::vector<int> order;
  for (int k = 0; k < kKeys; ++k) order.push_back((k * 37) % kKeys);  // 37 is prime to 150
  std::vector<Key> keys;
  for (int i : order) keys.push_back(name(i));
  auto many = store().get_many(keys);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), keys.size());
  for (std::size_t at = 0; at < keys.size(); ++at) {
    const int i = order[at];
    const auto& got = (*many)[at];
    if (i % 3 == 0) {
      ASSERT_FALSE(got.has_value()) << keys[at].str();
      EXPECT_EQ(got.error().code, Errc::not_found) << keys[at].str();
      continue;
    }
    ASSERT_TRUE(got.has_value()) << keys[at].str() << ": " << got.error().message;
    EXPECT_EQ(got->data, "doc-" + std::to_string(i)) << keys[at].str();
    EXPECT_EQ(got->version, store().get(keys[at])->version) << keys[at].str();
  }
}

TEST_P(StoreContract, DescribeNamesTheStore) { EXPECT_FALSE(store().describe().empty()); }

// Versions and conditional writes, for stores that declare them.
TEST_P(StoreContract, VersionsChangeWithEveryWrite) {
  if (!store().capabilities().versions) GTEST_SKIP() << "no versions";
  const auto v1 = store().replace(key("instances/a"), "one").value();
  EXPECT_EQ(store().get(key("instances/a"))->version, v1);
  const auto v2 = store().replace(key("instances/a"), "two").value();
  EXPECT_NE(v1, v2);
  EXPECT_EQ(store().get(key("instances/a"))->version, v2);
}

TEST_P(StoreContract, ConditionalReplaceAndRemove) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  const auto v1 = store().replace(key("instances/a"), "one").value();
  const auto v2 = store().replace_if(key("instances/a"), "two", v1);
  ASSERT_TRUE(v2.has_value()) << v2.error().message;
  auto stale = store().replace_if(key("instances/a"), "three", v1);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, Errc::conflict);
  EXPECT_EQ(store().get(key("instances/a"))->data, "two");

  auto stale_remove = store().remove_if(key("instances/a"), v1);
  ASSERT_FALSE(stale_remove.has_value());
  EXPECT_EQ(stale_remove.error().code, Errc::conflict);
  ASSERT_TRUE(store().remove_if(key("instances/a"), *v2));
  EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found);
}

TEST_P(StoreContract, ConditionalReplaceOfAMissingKeyFails) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  auto r = store().replace_if(key("instances/none"), "x", "some-version");
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().code == Errc::not_found || r.error().code == Errc::conflict)
      << r.error().message;
  EXPECT_EQ(store().get(key("instances/none")).error().code, Errc::not_found);
}

TEST_P(StoreContract, UnsupportedConditionalOperationsSaySo) {
  if (store().capabilities().conditional_writes) GTEST_SKIP() << "has conditional writes";
  EXPECT_EQ(store().replace_if(key("instances/a"), "x", "v").error().code, Errc::unsupported);
}

TEST_P(StoreContract, ConcurrentCreatesHaveExactlyOneWinner) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  const auto stores = others(4);
  ASSERT_EQ(stores.size(), 4u);
  for (int round = 0; round < 3; ++round) {
    const Key k = key("instances/race" + std::to_string(round));
    const int winners = succeeded_at_once(stores.size(), [&](std::size_t i) {
      auto r = stores[i]->create(k, std::to_string(i));
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::already_exists) << r.error().message;
      }
      return r.has_value();
    });
    EXPECT_EQ(winners, 1) << "round " << round;
  }
}

TEST_P(StoreContract, ConditionalReplaceOfOneVersionHasExactlyOneWinner) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  const auto stores = others(4);
  ASSERT_EQ(stores.size(), 4u);
  const Key k = key("instances/a");
  for (int round = 0; round < 3; ++round) {
    const auto version = store().replace(k, "base").value();
    const int winners = succeeded_at_once(stores.size(), [&](std::size_t i) {
      auto r = stores[i]->replace_if(k, std::to_string(i), version);
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::conflict) << r.error().message;
      }
      return r.has_value();
    });
    EXPECT_EQ(winners, 1) << "round " << round;
  }
}

TEST_P(StoreContract, VersionsThatAreNotTheStoresNeverMatch) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  const Key k = key("instances/a");
  const auto v = store().replace(k, "one").value();
  for (std::string_view bad : {"", "0", "-1", "1 OR 1=1", "\"bogus\"", "*", "\x01\xff"}) {
    if (bad == v) continue;
    auto r = store().replace_if(k, "two", bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, Errc::conflict) << r.error().message;
    auto rm = store().remove_if(k, bad);
    ASSERT_FALSE(rm.has_value()) << bad;
    EXPECT_EQ(rm.error().code, Errc::conflict) << rm.error().message;
  }
  EXPECT_EQ(store().get(k)->data, "one");
  EXPECT_EQ(store().get(k)->version, v);
  // A version of another document does not match either.
  const auto other = store().replace(key("instances/b"), "b").value();
  auto cross = store().replace_if(k, "two", other);
  if (other != v) {
    ASSERT_FALSE(cross.has_value());
    EXPECT_EQ(cross.error().code, Errc::conflict) << cross.error().message;
  }
  auto missing = store().remove_if(key("instances/none"), v);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(missing.error().code == Errc::not_found || missing.error().code == Errc::conflict)
      << missing.error().message;
}

// ---- native leases, for stores that declare them

#define REQUIRE_NATIVE_LEASES()                                                               \
  do {                                                                                        \
    if (!store().capabilities().native_lease)                                                 \
      GTEST_SKIP() << store().describe() << " offers no native leases (capabilities()): the " \
                   << "guard keeps its lease in a document there";                            \
  } while (false)

const Key kLease = key("instances.lock");

TEST_P(StoreContract, ConcurrentLocksGrantExactlyOne) {
  REQUIRE_NATIVE_LEASES();
  const auto stores = others(4);
  ASSERT_EQ(stores.size(), 4u);
  // Connect every store (and let the store make its lock folders) first.
  auto warm = stores[0]->lock(key("warm.lock"), 30s, "warm");
  ASSERT_TRUE(warm) << warm.error().message;
  for (auto& s : stores) ASSERT_TRUE(s->list(key("instances")));
  for (int round = 0; round < 3; ++round) {
    const Key k = key("race-" + std::to_string(round) + ".lock");
    std::mutex mu;
    std::vector<std::pair<std::size_t, std::string>> tokens;
    const int winners = succeeded_at_once(stores.size(), [&](std::size_t i) {
      auto r = stores[i]->lock(k, 30s, "racer-" + std::to_string(i));
      if (!r) {
        EXPECT_EQ(r.error().code, Errc::locked) << r.error().message;
        return false;
      }
      std::lock_guard lock(mu);
      tokens.emplace_back(i, r->token);
      return true;
    });
    ASSERT_EQ(winners, 1) << "round " << round;
    EXPECT_TRUE(stores[tokens[0].first]->unlock(k, tokens[0].second));
  }
  EXPECT_TRUE(stores[0]->unlock(key("warm.lock"), warm->token));
}

TEST_P(StoreContract, ASecondLockIsRefusedWhileTheFirstIsHeld) {
  REQUIRE_NATIVE_LEASES();
  auto b = another();
  ASSERT_NE(b, nullptr);
  auto token = store().lock(kLease, 30s, "guard-a");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_FALSE(token->token.empty());
  auto refused = b->lock(kLease, 30s, "guard-b");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::locked) << refused.error().message;
  // Not re-entrant: the holder's own store is refused too.
  auto again = store().lock(kLease, 30s, "guard-a");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::locked) << again.error().message;
  // Another key is another lock.
  auto other = b->lock(key("other.lock"), 30s, "guard-b");
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_TRUE(b->unlock(key("other.lock"), other->token));
  EXPECT_TRUE(store().unlock(kLease, token->token));
}

// Store::claim_lease, renew_lease and end_lease: what the default does one
// call after another, a store with atomic_lease does in one request, with
// the same outcome.
TEST_P(StoreContract, TheLeaseOperationsTakeRenewAndEndTheLockWithItsDocuments) {
  REQUIRE_NATIVE_LEASES();
  auto b = another();
  ASSERT_NE(b, nullptr);
  const bool atomic = store().capabilities().atomic_lease;
  const Key lease = key("instances.lease");
  const Key ours = key("instances/a");
  ASSERT_TRUE(store().replace(key("instances/other"), "theirs"));
  ASSERT_TRUE(store().replace(lease, R"({"epoch":41,"holder":"before"})"));
  const LeaseClaim claim{
      .lock = kLease,
      .ttl = 30s,
      .owner = "guard-a",
      .lease = lease,
      .document = {.head = R"({"epoch":)", .middle = R"(,"lock_token":")", .tail = R"("})"},
      .record = ours,
      .record_data = "record of a",
      .scan = key("instances")};
  auto claimed = store().claim_lease(claim);
  ASSERT_TRUE(claimed) << claimed.error().message;
  ASSERT_TRUE(claimed->previous) << claimed->previous.error().message;
  EXPECT_EQ(claimed->previous->data, R"({"epoch":41,"holder":"before"})");
  EXPECT_EQ(claimed->written, atomic);
  if (atomic) {
    EXPECT_EQ(claimed->epoch, std::max<std::uint64_t>(42, claimed->grant.epoch));
    EXPECT_EQ(store().get(lease)->data, claim.document.fill(claimed->epoch, claimed->grant.token));
    EXPECT_EQ(store().get(lease)->version, claimed->lease_version);
    EXPECT_EQ(store().get(ours)->data, "record of a");
    EXPECT_EQ(store().get(ours)->version, claimed->record_version);
    ASSERT_EQ(claimed->scanned.size(), 1u) << "every other document under instances/";
    EXPECT_EQ(claimed->scanned[0].first, key("instances/other"));
    ASSERT_TRUE(claimed->scanned[0].second);
    EXPECT_EQ(claimed->scanned[0].second->data, "theirs");
  } else {
    EXPECT_EQ(store().get(ours).error().code, Errc::not_found) << "the default writes nothing";
  }
  // Held: a second claim takes nothing and writes nothing.
  const std::string lease_now = store().get(lease)->data;
  auto second = b->claim_lease(LeaseClaim(claim));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::locked) << second.error().message;
  EXPECT_EQ(store().get(lease)->data, lease_now);

  // A renewal of our lease and record under `token`, writing `data` to both.
  const auto renewal = [&](const std::string& token, const std::string& data) {
    return LeaseRenewal{.lock = kLease,
                        .token = token,
                        .ttl = 30s,
                        .lease = lease,
                        .lease_data = "lease " + data,
                        .record = ours,
                        .record_data = "record " + data};
  };
  auto renewed = store().renew_lease(renewal(claimed->grant.token, "renewed"));
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_EQ(renewed->written, atomic);
  if (atomic) {
    EXPECT_EQ(store().get(lease)->data, "lease renewed");
    EXPECT_EQ(store().get(ours)->data, "record renewed");
  }
  const instance::LeaseEnd ending{.lock = kLease,
                                  .token = claimed->grant.token,
                                  .lease = lease,
                                  .lease_data = "released",
                                  .record = ours};
  auto ended = store().end_lease(ending);
  ASSERT_TRUE(ended) << ended.error().message;
  EXPECT_EQ(*ended, atomic);
  if (atomic) {
    EXPECT_EQ(store().get(lease)->data, "released");
    EXPECT_EQ(store().get(ours).error().code, Errc::not_found);
  } else {
    ASSERT_TRUE(store().unlock(kLease, claimed->grant.token));
  }
  auto taken = b->lock(kLease, 30s, "guard-b");
  ASSERT_TRUE(taken) << "the lease was given back: " << taken.error().message;
  const std::string lease_released = store().get(lease)->data;

  // A renewal under the token that no longer holds reports the lease lost
  // and writes neither document.
  auto stale = store().renew_lease(renewal(claimed->grant.token, "not ours"));
  ASSERT_FALSE(stale) << "a renewal under a released token";
  EXPECT_TRUE(lost(stale.error())) << stale.error().message;
  EXPECT_EQ(store().get(lease)->data, lease_released);
  EXPECT_EQ(store().get(ours).error().code, Errc::not_found);
  if (atomic) {
    // Ended under a token that no longer holds: the record goes, the lease
    // document and the new holder's lock stay.
    ASSERT_TRUE(store().replace(ours, "record again"));
    ASSERT_TRUE(store().end_lease(instance::LeaseEnd(ending)));
    EXPECT_EQ(store().get(lease)->data, "released");
    EXPECT_EQ(store().get(ours).error().code, Errc::not_found);
  }
  EXPECT_EQ(store().lock(kLease, 30s, "guard-a").error().code, Errc::locked);
  ASSERT_TRUE(b->unlock(kLease, taken->token));
}

TEST_P(StoreContract, AClaimedLeaseNeverOverwritesALeaseDocumentWhoseEpochDoesNotRead) {
  REQUIRE_NATIVE_LEASES();
  const Key lease = key("instances.lease");
  for (const std::string before : {"garbage", R"({"epoch":"7"})", R"({"epoch":0})", "[7]"}) {
    ASSERT_TRUE(store().replace(lease, before));
    auto claimed = store().claim_lease({.lock = kLease,
                                        .ttl = 30s,
                                        .owner = "guard-a",
                                        .lease = lease,
                                        .document = {.head = "{", .middle = "", .tail = "}"},
                                        .record = key("instances/a"),
                                        .record_data = "record of a",
                                        .scan = key("instances")});
    ASSERT_TRUE(claimed) << claimed.error().message;
    EXPECT_FALSE(claimed->written) << before;
    EXPECT_EQ(store().get(lease)->data, before);
    EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found) << before;
    ASSERT_TRUE(store().unlock(kLease, claimed->grant.token));
  }
}

TEST_P(StoreContract, RefreshKeepsALockAndUnlockReleasesIt) {
  REQUIRE_NATIVE_LEASES();
  auto b = another();
  ASSERT_NE(b, nullptr);
  auto token = store().lock(kLease, 30s, "guard-a");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_GE(token->granted, Duration::zero());
  auto kept = store().refresh_lock(kLease, token->token, 30s);
  ASSERT_TRUE(kept) << kept.error().message;
  // A refresh with the same ttl is granted what the lock was.
  EXPECT_EQ(*kept, token->granted);
  EXPECT_EQ(b->lock(kLease, 30s, "guard-b").error().code, Errc::locked);
  ASSERT_TRUE(store().unlock(kLease, token->token));

  // Gone: its refresh reports the lease lost (and takes nothing: another
  // may lock), a second unlock not_found.
  auto refreshed = store().refresh_lock(kLease, token->token, 30s);
  ASSERT_FALSE(refreshed) << "a released lock was refreshed";
  EXPECT_TRUE(lost(refreshed.error())) << refreshed.error().message;
  auto unlocked = store().unlock(kLease, token->token);
  if (GetParam().unlock_of_a_gone_lock_is_not_found) {
    ASSERT_FALSE(unlocked);
    EXPECT_EQ(unlocked.error().code, Errc::not_found) << unlocked.error().message;
  } else {
    EXPECT_TRUE(unlocked) << "the server answered success so far (nginx)";
  }

  // Released: another takes it; the old token is lost.
  auto taken = b->lock(kLease, 30s, "guard-b");
  ASSERT_TRUE(taken) << taken.error().message;
  auto stale = store().refresh_lock(kLease, token->token, 30s);
  ASSERT_FALSE(stale);
  EXPECT_TRUE(lost(stale.error())) << stale.error().message;
  EXPECT_TRUE(b->refresh_lock(kLease, taken->token, 30s));
  EXPECT_EQ(store().lock(kLease, 30s, "guard-a").error().code, Errc::locked);
  EXPECT_TRUE(b->unlock(kLease, taken->token));
}

TEST_P(StoreContract, LockEpochsGrowAcrossSuccessiveHolders) {
  REQUIRE_NATIVE_LEASES();
  auto b = another();
  ASSERT_NE(b, nullptr);
  std::vector<std::uint64_t> epochs;
  for (Store* holder : {&store(), b.get(), &store(), b.get()}) {
    auto token = holder->lock(kLease, 30s, "holder");
    ASSERT_TRUE(token) << token.error().message;
    epochs.push_back(token->epoch);
    // Writes in between move a store's revisions on; epochs still only grow.
    ASSERT_TRUE(holder->replace(key("instances/x"), std::to_string(epochs.size())));
    ASSERT_TRUE(holder->unlock(kLease, token->token));
  }
  if (epochs[0] == 0) {
    // The store gives no fencing number (the interface's default): 0 for every
    // lock, and the guard counts epochs in its lease document.
    EXPECT_EQ(epochs, std::vector<std::uint64_t>(epochs.size(), 0)) << "some epochs, not all";
    return;
  }
  for (std::size_t i = 1; i < epochs.size(); ++i) {
    EXPECT_GT(epochs[i], epochs[i - 1]) << "holder " << i;
  }
}

TEST_P(StoreContract, LeasesAreNeitherDocumentsNorListed) {
  REQUIRE_NATIVE_LEASES();
  ASSERT_TRUE(store().replace(key("instances/a"), "{}"));
  auto outer = store().lock(kLease, 30s, "me");
  ASSERT_TRUE(outer) << outer.error().message;
  auto inner = store().lock(key("instances/b"), 30s, "me");
  ASSERT_TRUE(inner) << inner.error().message;
  EXPECT_EQ(names(store().list(Key()).value()), std::vector<std::string>{"instances/a"});
  EXPECT_EQ(names(store().list(key("instances")).value()), std::vector<std::string>{"instances/a"});
  EXPECT_EQ(store().get(kLease).error().code, Errc::not_found);
  EXPECT_EQ(store().get(key("instances/b")).error().code, Errc::not_found);
  EXPECT_EQ(store().get(key("instances/a"))->data, "{}");
  // A document under a locked key is independent of the lock.
  ASSERT_TRUE(store().replace(kLease, "doc"));
  EXPECT_EQ(store().get(kLease)->data, "doc");
  ASSERT_TRUE(store().refresh_lock(kLease, outer->token, 30s));
  ASSERT_TRUE(store().remove(kLease));
  ASSERT_TRUE(store().unlock(kLease, outer->token));
  ASSERT_TRUE(store().unlock(key("instances/b"), inner->token));
  EXPECT_EQ(names(store().list(Key()).value()), std::vector<std::string>{"instances/a"});
  EXPECT_EQ(store().get(kLease).error().code, Errc::not_found);
}

// A lease nobody refreshes ends on its own (on the store's clock, or with its
// holder); one that is refreshed stays. Polls the store, bounded: never a
// fixed sleep.
TEST_P(StoreContract, AnUnrefreshedLeaseEndsAndARefreshedOneStays) {
  REQUIRE_NATIVE_LEASES();
  if (!GetParam().lease_never_expires.empty()) GTEST_SKIP() << GetParam().lease_never_expires;
  auto b = another();
  ASSERT_NE(b, nullptr);
  if (GetParam().lease_end == LeaseEnd::holder) {
    auto holder = another();
    ASSERT_NE(holder, nullptr);
    ASSERT_TRUE(holder->lock(kLease, 1s, "holder"));
    EXPECT_EQ(b->lock(kLease, 30s, "b").error().code, Errc::locked);
    holder.reset();  // the holder is gone, without unlocking
    auto taken = b->lock(kLease, 30s, "b");
    ASSERT_TRUE(taken) << taken.error().message;
    EXPECT_TRUE(b->unlock(kLease, taken->token));
    return;
  }
  const Duration ttl = GetParam().shortest_lease;
  const Key kept_key = key("kept.lock");
  auto kept = store().lock(kept_key, ttl, "a");
  ASSERT_TRUE(kept) << kept.error().message;
  ASSERT_TRUE(store().refresh_lock(kept_key, kept->token, 30s));
  const auto locked_at = std::chrono::steady_clock::now();
  auto lapsing = store().lock(kLease, ttl, "a");
  ASSERT_TRUE(lapsing) << lapsing.error().message;
  EXPECT_EQ(b->lock(kLease, 30s, "b").error().code, Errc::locked) << "ended at once";
  const Duration granted = lapsing->granted;
  ASSERT_NE(granted, kForever) << "a lease that never expires on its own: LeaseEnd::holder?";

  const Duration lasts = granted == Duration::zero() ? ttl : granted;
  const auto deadline = locked_at + lasts + 10s;
  const Duration pause = std::clamp<Duration>(ttl / 10, 5ms, 100ms);
  Result<LockGrant> taken = std::unexpected(Error{Errc::locked, "not yet"});
  while (std::chrono::steady_clock::now() < deadline) {
    // The kept lease is refreshed all along (a server may grant less than
    // asked: nginx's zone), as a guard renews it.
    ASSERT_TRUE(store().refresh_lock(kept_key, kept->token, 30s));
    taken = b->lock(kLease, 30s, "b");
    if (taken) break;
    ASSERT_EQ(taken.error().code, Errc::locked) << taken.error().message;
    std::this_thread::sleep_for(pause);
  }
  const auto waited = std::chrono::steady_clock::now() - locked_at;
  ASSERT_TRUE(taken) << "a lease of " << std::chrono::duration<double>(lasts).count()
                     << " s did not end within 10 s more";
  std::cout << "[ measured ] " << GetParam().name << ": a lease of "
            << std::chrono::duration<double>(lasts).count() << " s ended after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms\n";
  // The kept one, locked first with the same ttl, outlived it: refreshes extend.
  EXPECT_EQ(b->lock(kept_key, 30s, "b").error().code, Errc::locked);
  auto refreshed = store().refresh_lock(kLease, lapsing->token, 30s);
  ASSERT_FALSE(refreshed) << "the ended lease was refreshed";
  EXPECT_TRUE(lost(refreshed.error())) << refreshed.error().message;
  EXPECT_TRUE(store().unlock(kept_key, kept->token));
  EXPECT_TRUE(b->unlock(kLease, taken->token));
}

// ---- credentials

// Every operation, with the right secret, a wrong one and no server: no
// secret in any error message or log line (TearDown checks both).
TEST_P(StoreContract, NoCredentialInAnyMessageOrLogLine) {
  const StoreFactory& factory = GetParam();
  if (factory.secret.empty()) GTEST_SKIP() << "this store is opened without a credential here";
  auto exercise = [&](Store& s) {
    (void)s.describe();
    (void)s.capabilities();
    (void)s.replace(key("instances/a"), R"({"id":"a"})");
    (void)s.create(key("instances/a"), "again");
    (void)s.get(key("instances/a"));
    (void)s.get(key("instances/none"));
    (void)s.list(key("instances"));
    (void)s.replace_if(key("instances/a"), "x", "\"bogus\"");
    (void)s.remove_if(key("instances/a"), "\"bogus\"");
    auto token = s.lock(kLease, 5s, "me");
    if (token) {
      (void)s.lock(kLease, 5s, "me");
      (void)s.refresh_lock(kLease, token->token, 5s);
      (void)s.unlock(kLease, token->token);
      (void)s.unlock(kLease, token->token);
    }
    (void)s.refresh_lock(kLease, "not-a-token", 5s);
    (void)s.remove(key("instances/a"));
    (void)s.remove(key("instances/a"));
  };
  exercise(store());
  if (factory.with_secret) {
    const std::string wrong = "Wrong-Secret-9q8r";
    extra_secrets_.push_back(wrong);
    auto refused = factory.with_secret(env_, wrong);
    ASSERT_NE(refused, nullptr);
    refused = recorded(refused);
    auto r = refused->get(key("instances/a"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::permission) << r.error().message;
    exercise(*refused);
  }
  if (factory.unreachable) {
    auto down = factory.unreachable(env_);
    ASSERT_NE(down, nullptr);
    down = recorded(down);
    auto r = down->get(key("instances/a"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().message;
  }
  const auto all = texts();
  EXPECT_GT(all.size(), 10u) << "the failing paths ran";
  for (const auto& text : all) {
    EXPECT_EQ(text.find("Authorization"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace instance::testing
