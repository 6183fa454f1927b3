// What the etcd store adds to the contract, against a real etcd (the lock
// mechanics, epochs, expiry and secrets in every message are the contract's):
// what a refusal names, lease grants, locks deleted behind our back,
// versions, prefixes that never overlap, foreign keys, oversized values,
// unreachable servers, TLS, and what a missing or wrong password says.
#include <gtest/gtest.h>

#include <chrono>

#include "codec.hpp"
#include "instance/open_store.hpp"
#include "net/http.hpp"
#include "server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

// Writes or deletes etcd keys behind the store's back (as another tool would).
class Raw {
 public:
  explicit Raw(const EtcdServer& server)
      : endpoint_(server.options().endpoints.front()), http_(net::Client::create({}).value()) {}
  void put(const std::string& k, const std::string& value) {
    const nlohmann::json body = {{"key", etcd::base64_encode(k)},
                                 {"value", etcd::base64_encode(value)}};
    const auto reply = post("/v3/kv/put", body.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
  }
  void remove(const std::string& k) {
    const nlohmann::json body = {{"key", etcd::base64_encode(k)}};
    const auto reply = post("/v3/kv/deleterange", body.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
  }

 private:
  net::Response post(std::string_view path, const std::string& body) {
    return http_->perform({.method = "POST",
                           .url = endpoint_ + std::string(path),
                           .headers = {"Content-Type: application/json"},
                           .body = body,
                           .has_body = true,
                           .max_body = 1 << 20,
                           .timeout = 5s});
  }
  std::string endpoint_;
  std::unique_ptr<net::Client> http_;
};

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(server().running());
    prefix_ = EtcdServer::fresh_prefix();
  }
  static EtcdServer& server() { return EtcdServer::shared(); }
  std::shared_ptr<Store> store() { return server().store(prefix_); }
  std::string prefix_;
};

TEST_F(EtcdStoreTest, DeclaresEveryCapabilityWithTheServersClock) {
  const Capabilities caps = store()->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_TRUE(caps.conditional_writes);
  EXPECT_TRUE(caps.native_lease);
  EXPECT_TRUE(caps.server_clock);
  EXPECT_EQ(store()->describe(), "etcd://127.0.0.1:" + std::to_string(server().port()) + prefix_);
}

TEST_F(EtcdStoreTest, AServerClockFarFromOursIsWarnedOnce) {
  // etcd's gateway stamps every reply with a Date; the server runs on this
  // machine's clock, and the store's clock is set apart from it.
  auto logger = std::make_shared<CapturingLogger>();
  auto clock = std::make_shared<FakeClock>();
  clock->set_wall(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
  auto options = server().options(prefix_);
  options.logger = logger;
  options.clock = clock;
  options.max_clock_skew = 5s;
  auto s = make_etcd_store(options).value();
  ASSERT_TRUE(s->replace(key("instances/a"), "x"));
  EXPECT_TRUE(logger->lines_at(LogLevel::warn).empty());  // in agreement
  clock->set_wall(clock->wall() + 60s);
  ASSERT_TRUE(s->get(key("instances/a")));
  ASSERT_TRUE(s->get(key("instances/a")));
  const auto warnings = logger->lines_at(LogLevel::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the etcd server's clock"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("max_skew=5s"), std::string::npos) << warnings[0];
}

TEST_F(EtcdStoreTest, ARefusedLockNamesItsHolder) {
  auto a = store();
  auto b = store();  // its own connection
  auto token = a->lock(key("instances.lock"), 30s, "guard-a");
  ASSERT_TRUE(token) << token.error().message;
  auto other = b->lock(key("instances.lock"), 30s, "guard-b");
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Errc::locked);
  EXPECT_NE(other.error().message.find("guard-a"), std::string::npos) << other.error().message;
  ASSERT_TRUE(a->unlock(key("instances.lock"), token->token));
}

// The time granted is the TTL etcd's grant and keep-alive answer (etcd
// raises a TTL below its minimum); the epoch is the lock put's revision.
TEST_F(EtcdStoreTest, TheLockGrantIsTheLeasesTtl) {
  auto s = store();
  const Key k = key("instances.lock");
  auto grant = s->lock(k, 30s, "a").value();
  EXPECT_EQ(grant.granted, Duration(30s));
  EXPECT_GT(grant.epoch, 0u);
  EXPECT_TRUE(grant.token.ends_with(":" + std::to_string(grant.epoch))) << grant.token;
  auto kept = s->refresh_lock(k, grant.token, 30s);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(*kept, Duration(30s));
  ASSERT_TRUE(s->unlock(k, grant.token));
}

TEST_F(EtcdStoreTest, ALockKeyDeletedBehindOurBackIsLost) {
  auto a = store();
  auto b = store();
  const Key k = key("instances.lock");
  const std::string token = a->lock(k, 30s, "a").value().token;
  Raw(server()).remove(prefix_ + "#lock/instances.lock");
  EXPECT_EQ(a->refresh_lock(k, token, 30s).error().code, Errc::not_found);
  auto taken = b->lock(k, 30s, "b");
  ASSERT_TRUE(taken) << taken.error().message;
  // Our lease still lives, but the lock is someone else's now.
  EXPECT_EQ(a->refresh_lock(k, token, 30s).error().code, Errc::locked);
  EXPECT_TRUE(b->refresh_lock(k, taken->token, 30s));
  EXPECT_EQ(a->refresh_lock(k, "garbage", 30s).error().code, Errc::invalid);
}

TEST_F(EtcdStoreTest, VersionsThatAreNotOursNeverMatch) {
  auto s = store();
  for (const char* v : {"0", "-1", "", "abc", "1.0"}) {
    auto r = s->replace_if(key("instances/none"), "x", v);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Errc::conflict) << v;
    EXPECT_EQ(s->remove_if(key("instances/none"), v).error().code, Errc::conflict) << v;
  }
  EXPECT_EQ(s->get(key("instances/none")).error().code, Errc::not_found);
  const auto v1 = s->replace(key("instances/a"), "one").value();
  EXPECT_EQ(s->remove_if(key("instances/b"), v1).error().code, Errc::not_found);
  EXPECT_EQ(s->replace_if(key("instances/b"), "x", v1).error().code, Errc::not_found);
}

TEST_F(EtcdStoreTest, NeighbouringPrefixesNeverSeeEachOther) {
  // "/p", "/p-", "/p0", "/pa" and "/p/x" sort next to each other in etcd.
  const std::string base = prefix_;
  for (const std::string suffix : {"", "-", "0", "a"}) {
    auto s = server().store(base + suffix);
    ASSERT_TRUE(s->replace(key("instances/r"), suffix));
    ASSERT_TRUE(s->lock(key("instances.lock"), 30s, "x"));
  }
  auto s = server().store(base);
  EXPECT_EQ(s->list(Key()).value(), std::vector<Key>{key("instances/r")});
  EXPECT_EQ(s->list(key("instances")).value(), std::vector<Key>{key("instances/r")});
  EXPECT_EQ(s->get(key("instances/r"))->data, "");
  // Hostile segments (bytes 0x80-0xFF, '/', '.') stay inside their folder.
  const Key hostile = Key::from_segments({"instances", "\xff\xff", "/..", "."}).value();
  ASSERT_TRUE(s->replace(hostile, "h"));
  EXPECT_EQ(s->list(key("instances")).value().size(), 2u);
  EXPECT_TRUE(s->list(key("instance")).value().empty());
}

TEST_F(EtcdStoreTest, AForeignKeyUnderThePrefixIsListedAsItIs) {
  // Every record under instances/ is judged, whatever its name.
  auto s = store();
  ASSERT_TRUE(s->replace(key("instances/good"), "g"));
  Raw(server()).put(prefix_ + "/instances/not canonical", "x");
  auto listed = s->list(key("instances"));
  ASSERT_TRUE(listed) << listed.error().message;
  const Key odd = Key::from_listing("instances/not canonical").value();
  EXPECT_EQ(*listed, (std::vector<Key>{key("instances/good"), odd}));
  EXPECT_EQ(s->get(odd)->data, "x");
  EXPECT_TRUE(s->remove(odd));
}

TEST_F(EtcdStoreTest, AnOversizedStoredValueReadsAsMalformed) {
  auto s = store();
  Raw(server()).put(prefix_ + "/instances/big", std::string(kMaxDocumentSize + 1, 'x'));
  auto doc = s->get(key("instances/big"));
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, Errc::malformed) << doc.error().message;
}

TEST(EtcdUnreachable, FailsAsUnavailableNamingTheEndpointAfterRetries) {
  EtcdStoreOptions options;
  options.endpoints = {"http://127.0.0.1:9"};  // discard: nobody listens on loopback
  options.retry_deadline = 300ms;
  auto s = make_etcd_store(options).value();
  const auto start = std::chrono::steady_clock::now();
  auto doc = s->get(key("instances/a"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, Errc::unavailable) << doc.error().message;
  EXPECT_NE(doc.error().message.find("etcd://127.0.0.1:9/instance-guard"), std::string::npos)
      << doc.error().message;
  EXPECT_NE(doc.error().message.find("attempts"), std::string::npos) << doc.error().message;
  EXPECT_LT(took, 3s);
}

TEST(EtcdUnreachable, SeveralEndpointsFailNamingEachOneTried) {
  EtcdStoreOptions options;
  options.endpoints = {"http://127.0.0.1:9", "http://127.0.0.1:" + std::to_string(free_port())};
  options.retry_deadline = 300ms;
  auto s = make_etcd_store(options).value();
  auto doc = s->get(key("instances/a"));
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, Errc::unavailable) << doc.error().message;
  const auto& m = doc.error().message;
  EXPECT_NE(m.find("endpoints tried: "), std::string::npos) << m;
  for (const auto& e : options.endpoints)
    EXPECT_NE(m.find(e + " (no reply"), std::string::npos) << m;
}

TEST_F(EtcdStoreTest, ADeadEndpointFirstInTheListIsPassedOver) {
  auto options = server().options(prefix_);
  options.endpoints.insert(options.endpoints.begin(),
                           "http://127.0.0.1:" + std::to_string(free_port()));
  auto logger = std::make_shared<CapturingLogger>();
  options.logger = logger;
  auto s = make_etcd_store(options).value();
  ASSERT_TRUE(s->replace(key("instances/a"), "past a dead member"));
  EXPECT_TRUE(logger->contains("trying the next one"));
  auto lock = s->lock(key("instances.lock"), 30s, "owner");
  ASSERT_TRUE(lock) << lock.error().message;
  EXPECT_TRUE(s->refresh_lock(key("instances.lock"), lock->token, 30s));
  EXPECT_TRUE(s->unlock(key("instances.lock"), lock->token));
}

TEST(EtcdTls, EtcdsVerifiesTheServerWithTheGivenCa) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  EtcdServer server({.tls = true});
  ASSERT_TRUE(server.running());
  OpenOptions open;
  open.ca_file = server.ca_file();
  open.getenv = [](std::string_view) { return std::optional<std::string>{}; };
  const std::string url = "etcds://127.0.0.1:" + std::to_string(server.port()) + "/tls";
  auto s = open_store(url, open).value();
  ASSERT_TRUE(s->replace(key("instances/a"), "over tls"))
      << s->get(key("instances/a")).error().message;
  EXPECT_EQ(s->get(key("instances/a"))->data, "over tls");
  auto token = s->lock(key("instances.lock"), 30s, "tls");
  ASSERT_TRUE(token) << token.error().message;
  EXPECT_TRUE(s->refresh_lock(key("instances.lock"), token->token, 30s));

  // Without the CA the certificate is refused, and the error says what to do.
  open.ca_file.clear();
  auto unverified = open_store(url, open).value()->get(key("instances/a"));
  ASSERT_FALSE(unverified);
  EXPECT_EQ(unverified.error().code, Errc::unavailable);
  EXPECT_NE(unverified.error().message.find("--ca-file"), std::string::npos)
      << unverified.error().message;
  open.insecure = true;
  EXPECT_EQ(open_store(url, open).value()->get(key("instances/a"))->data, "over tls");
}

TEST(EtcdTls, ClientCertificateAuthTakesTheGivenCertificateAndKey) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  EtcdServer server({.tls = true, .client_cert_auth = true});
  ASSERT_TRUE(server.running());
  OpenOptions open;
  open.ca_file = server.ca_file();
  open.client_cert = server.client_cert();
  open.client_key = server.client_key();
  open.getenv = [](std::string_view) { return std::optional<std::string>{}; };
  const std::string url = "etcds://127.0.0.1:" + std::to_string(server.port()) + "/mtls";
  auto s = open_store(url, open).value();
  ASSERT_TRUE(s->replace(key("instances/a"), "with a client certificate"))
      << s->get(key("instances/a")).error().message;
  EXPECT_EQ(s->get(key("instances/a"))->data, "with a client certificate");

  // Without a certificate etcd ends the handshake: unavailable, never internal.
  OpenOptions without = open;
  without.client_cert.clear();
  without.client_key.clear();
  auto unverified = open_store(url, without).value();
  unverified->tune({.ttl = 3s});  // as a guard of ttl 3 s: the refused handshake gives up after 1 s
  auto refused = unverified->get(key("instances/a"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::unavailable) << refused.error().message;

  // A key that cannot be read is refused before any request, naming it.
  OpenOptions unreadable = open;
  unreadable.client_key = server.dir() / "absent.key";
  auto bad = open_store(url, unreadable);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::invalid);
  EXPECT_NE(bad.error().message.find("cannot read the client key"), std::string::npos)
      << bad.error().message;
}

class EtcdAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(EtcdServer::with_auth().running());
  }
};

// A wrong password never showing is the contract's (etcd_auth).
TEST_F(EtcdAuth, AWrongOrMissingPasswordIsAPermissionErrorNamingThePassword) {
  auto options = EtcdServer::with_auth().options();
  options.password = "wrong-Pw-5d2b";
  auto doc = make_etcd_store(options).value()->get(key("instances/a"));
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, Errc::permission) << doc.error().message;
  EXPECT_NE(doc.error().message.find("password"), std::string::npos) << doc.error().message;
  // Without credentials the server refuses too.
  options.user.clear();
  options.password.clear();
  EXPECT_EQ(make_etcd_store(options).value()->get(key("instances/a")).error().code,
            Errc::permission);
}

}  // namespace
}  // namespace instance::testing
