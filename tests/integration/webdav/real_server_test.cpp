// The WebDAV store against real servers (Apache httpd, lighttpd): what the
// contract suite does not cover.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "helpers.hpp"
#include "instance/testing.hpp"

namespace instance::testing {
namespace {

using std::chrono::milliseconds;

class RealServer : public ::testing::TestWithParam<ServerParam> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server().running()) << GetParam().name << " did not start";
    folder_ = WebDavServer::fresh_folder();
    options_ = options_for(server(), folder_);
    options_.stats = stats_;
    options_.logger = logger_;
    // Most tests exercise the request plumbing, conditional writes included,
    // so they skip the probe; the probe has tests of its own.
    options_.probe_capabilities = false;
  }
  bool atomic_server() const { return GetParam().name != "apache"; }
  WebDavServer& server() { return GetParam().server(); }
  std::shared_ptr<Store> store() { return make_store(options_); }
  std::filesystem::path on_disk(const std::string& relative) {
    return server().root() / folder_ / relative;
  }
  // Requests sent by `op` on `store`.
  template <class F>
  std::uint64_t requests_for(F&& op) {
    const auto before = stats_->requests.load();
    op();
    return stats_->requests.load() - before;
  }

  std::string folder_;
  WebDavStoreOptions options_;
  std::shared_ptr<WebDavStats> stats_ = std::make_shared<WebDavStats>();
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
};

TEST_P(RealServer, ProbeJudgesConditionalWritesAndLeavesNoDocument) {
  options_.probe_capabilities = true;
  auto s = store();
  const auto caps = s->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_FALSE(caps.native_lease);  // Apache: LOCK not atomic; lighttpd: locks never expire
  std::vector<std::string> warnings;
  for (const auto& line : logger_->lines_at(LogLevel::warn)) {
    if (line.find("native leases") == std::string::npos) warnings.push_back(line);
  }
  if (atomic_server()) {
    EXPECT_TRUE(caps.conditional_writes);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
  } else {
    // Apache honours If-Match and If-None-Match, but not atomically.
    EXPECT_FALSE(caps.conditional_writes);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("Apache"), std::string::npos) << warnings[0];
    EXPECT_EQ(s->replace_if(key("instances/a"), "x", "\"v\"").error().code, Errc::unsupported);
  }
  std::cout << "[ measured ] " << GetParam().name << ": capability probe took "
            << stats_->requests.load() << " requests\n";
  // Asked once: later calls send nothing.
  EXPECT_EQ(requests_for([&] { s->capabilities(); }), 0u);
  auto all = s->list(Key{});
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_TRUE(all->empty());
  ASSERT_TRUE(s->create(key("instances/a"), "x"));
  EXPECT_EQ(s->list(key("instances"))->size(), 1u);
  EXPECT_EQ(s->create(key("instances/a"), "y").error().code, Errc::already_exists);
}

// Two stores (two connections) race conditional writes on one key. Both
// stores trust the server (no probe), so the server's own atomicity is
// measured; it must be perfect wherever the probe declares conditional writes.
TEST_P(RealServer, ConditionalWritesRace) {
  auto a = store();
  auto b = store();
  const auto k = key("race/lease");
  int replace_double_wins = 0;
  int create_double_wins = 0;
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    const auto v = a->replace(k, "round " + std::to_string(round)).value();
    Result<std::string> ra, rb;
    std::thread ta([&] { ra = a->replace_if(k, "a" + std::to_string(round), v); });
    std::thread tb([&] { rb = b->replace_if(k, "b" + std::to_string(round), v); });
    ta.join();
    tb.join();
    ASSERT_TRUE(ra || rb) << "round " << round;
    if (ra && rb) ++replace_double_wins;

    const auto fresh = key("race/r" + std::to_string(round));
    std::thread ca([&] { ra = a->create(fresh, "a"); });
    std::thread cb([&] { rb = b->create(fresh, "b"); });
    ca.join();
    cb.join();
    ASSERT_TRUE(ra || rb) << "round " << round;
    if (ra && rb) {
      ++create_double_wins;
    } else {
      const auto& loser = ra ? rb : ra;
      EXPECT_EQ(loser.error().code, Errc::already_exists) << loser.error().message;
    }
  }
  std::cout << "[ measured ] " << GetParam().name << ": both writers won " << replace_double_wins
            << "/" << kRounds << " conditional-replace races and " << create_double_wins << "/"
            << kRounds << " create races\n";
  options_.probe_capabilities = true;
  if (store()->capabilities().conditional_writes) {
    EXPECT_EQ(replace_double_wins, 0);
    EXPECT_EQ(create_double_wins, 0);
  } else {
    EXPECT_FALSE(atomic_server()) << "declared no conditional writes on " << GetParam().name;
  }
}

TEST_P(RealServer, VersionOfAWriteMatchesWhatAReadReturns) {
  auto s = store();
  const auto v1 = s->create(key("instances/a"), "one");
  ASSERT_TRUE(v1.has_value()) << v1.error().message;
  EXPECT_FALSE(v1->empty());
  EXPECT_EQ(s->get(key("instances/a"))->version, *v1);
  const auto v2 = s->replace_if(key("instances/a"), "two", *v1);
  ASSERT_TRUE(v2.has_value()) << v2.error().message;
  EXPECT_EQ(s->get(key("instances/a"))->version, *v2);
  const auto stale = s->remove_if(key("instances/a"), *v1);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, Errc::conflict);
  const auto gone = s->remove_if(key("instances/none"), *v1);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code, Errc::not_found);
}

TEST_P(RealServer, ARecordRemovedWhileItIsReadIsFoundOrNotFoundNeverForbidden) {
  // A guard reads the holder's record while the holder releases it. Apache
  // answers such a GET with 403 now and then (the file went between its
  // stat and its open); the store must report the record present or absent,
  // never a permission error that would stop the reader with exit 69.
  constexpr int kCycles = 400;
  std::atomic<bool> done{false};
  std::thread holder([&] {
    auto s = store();
    for (int i = 0; i < kCycles; ++i) {
      EXPECT_TRUE(s->replace(key("instances/h"), "record " + std::to_string(i)));
      EXPECT_TRUE(s->remove(key("instances/h")));
    }
    done = true;
  });
  std::atomic<int> found{0}, absent{0};
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      auto s = store();
      while (!done) {
        auto doc = s->get(key("instances/h"));
        if (doc) {
          ++found;
        } else if (doc.error().code == Errc::not_found) {
          ++absent;
        } else {
          std::lock_guard lock(mu);
          errors.push_back(doc.error().message);
        }
      }
    });
  }
  holder.join();
  for (auto& t : readers) t.join();
  std::cout << "[ read/release race ] " << GetParam().name << ": " << found << " found, " << absent
            << " absent, " << errors.size() << " errors\n";
  EXPECT_THAT(errors, ::testing::IsEmpty());
  // Both outcomes were seen: the reads did race the releases.
  EXPECT_GT(found.load(), 0);
  EXPECT_GT(absent.load(), 0);
}

TEST_P(RealServer, FilesWithNamesThisStoreNeverWritesAreListedReadAndRemoved) {
  // Every file under instances/ is a record to judge, whatever its name, as
  // the original guard judges it. Placed on the server's disk directly; the
  // requests for them percent-encode the name again.
  for (const std::string& name :
       {std::string("\xff\xfe"), std::string("a b"), std::string("%2e%2e"),
        std::string("caf\xc3\xa9"), std::string("x~"), std::string("q?#&+")}) {
    SCOPED_TRACE(name);
    const auto folder = WebDavServer::fresh_folder();
    server().place_file(std::filesystem::path(folder) / "instances" / name, "{}");
    server().place_file(std::filesystem::path(folder) / "instances" / "good", "{}");
    auto options = options_for(server(), folder);
    auto s = make_store(options);
    auto keys = s->list(key("instances"));
    ASSERT_TRUE(keys.has_value()) << keys.error().message;
    const Key odd = Key::from_listing("instances/" + name).value();
    EXPECT_THAT(*keys, ::testing::UnorderedElementsAre(key("instances/good"), odd));
    auto doc = s->get(odd);
    if (!doc && name == "\xff\xfe") {
      // lighttpd answers 400 for a path that is not UTF-8: the record cannot
      // be read, so it counts as live. Never "not found", which would read
      // as gone.
      EXPECT_EQ(doc.error().code, Errc::invalid) << doc.error().message;
      continue;
    }
    ASSERT_TRUE(doc.has_value()) << doc.error().message;
    EXPECT_EQ(doc->data, "{}");
    ASSERT_TRUE(s->remove(odd));
    EXPECT_FALSE(std::filesystem::exists(server().root() / folder / "instances" / name));
    EXPECT_TRUE(std::filesystem::exists(server().root() / folder / "instances" / "good"));
  }
}

TEST_P(RealServer, OversizedDocumentOnTheServerReadsAsMalformedAndStays) {
  const std::string big(2 << 20, 'x');
  server().place_file(std::filesystem::path(folder_) / "instances" / "big", big);
  auto s = store();
  auto doc = s->get(key("instances/big"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::malformed);
  EXPECT_NE(doc.error().message.find("1 MiB"), std::string::npos) << doc.error().message;
  EXPECT_EQ(std::filesystem::file_size(on_disk("instances/big")), big.size());
  // It is still listed (the guard must count it as live, not absent).
  EXPECT_EQ(s->list(key("instances"))->size(), 1u);
  // And the connection is usable after the aborted transfer.
  ASSERT_TRUE(s->replace(key("instances/small"), "ok"));
  EXPECT_EQ(s->get(key("instances/small"))->data, "ok");
}

TEST_P(RealServer, OversizedWriteIsRefusedWithoutARequest) {
  auto s = store();
  for (auto result : {s->replace(key("instances/big"), std::string(2 << 20, 'x')),
                      s->create(key("instances/big"), std::string(2 << 20, 'x'))}) {
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().code, Errc::invalid);
  }
  EXPECT_EQ(stats_->requests.load(), 0u);
  EXPECT_FALSE(std::filesystem::exists(on_disk("instances/big")));
}

TEST_P(RealServer, AClaimLikeSequenceUsesOneConnection) {
  // Another instance left an expired record.
  ASSERT_TRUE(
      make_store(options_for(server(), folder_))->replace(key("instances/old"), R"({"id":"old"})"));
  options_.probe_capabilities = true;
  auto s = store();
  const auto caps = s->capabilities();  // what a guard asks first
  auto keys = s->list(key("instances"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  for (const auto& k : *keys) ASSERT_TRUE(s->get(k));
  ASSERT_TRUE(s->remove(key("instances/old")));
  ASSERT_TRUE(s->replace(key("instances/me"), R"({"id":"me"})"));
  const auto v = s->get(key("instances/me"))->version;
  if (caps.conditional_writes) {
    ASSERT_TRUE(s->replace_if(key("instances/me"), R"({"id":"me","n":2})", v));
  } else {
    ASSERT_TRUE(s->replace(key("instances/me"), R"({"id":"me","n":2})"));
  }
  ASSERT_TRUE(s->remove(key("instances/me")));
  EXPECT_EQ(stats_->new_connections.load(), 1u) << stats_->requests.load() << " requests";
  std::cout << "[ measured ] " << GetParam().name << ": " << stats_->requests.load()
            << " requests on " << stats_->new_connections.load() << " connection(s)\n";
}

TEST_P(RealServer, AClaimInAFreshFolderUsesOneConnection) {
  options_.probe_capabilities = true;
  auto s = store();
  s->capabilities();
  ASSERT_TRUE(s->list(key("instances"))->empty());                 // 404: the folder is missing
  ASSERT_TRUE(s->replace(key("instances/me"), R"({"id":"me"})"));  // MKCOLs first, no 409
  ASSERT_TRUE(s->replace(key("instances/me"), R"({"id":"me","n":2})"));
  ASSERT_TRUE(s->remove(key("instances/me")));
  EXPECT_EQ(stats_->new_connections.load(), 1u) << stats_->requests.load() << " requests";
  std::cout << "[ measured ] " << GetParam().name << ": probe + claim + renew + release in a "
            << "fresh folder: " << stats_->requests.load() << " requests on "
            << stats_->new_connections.load() << " connection(s)\n";
}

TEST_P(RealServer, RequestsPerOperation) {
  auto s = store();
  const auto first_write = requests_for([&] { ASSERT_TRUE(s->replace(key("instances/a"), "1")); });
  const auto replace = requests_for([&] { ASSERT_TRUE(s->replace(key("instances/a"), "2")); });
  const auto create = requests_for([&] { ASSERT_TRUE(s->create(key("instances/b"), "1")); });
  const auto get = requests_for([&] { ASSERT_TRUE(s->get(key("instances/a"))); });
  const auto version = s->get(key("instances/a"))->version;
  const auto replace_if =
      requests_for([&] { ASSERT_TRUE(s->replace_if(key("instances/a"), "3", version)); });
  const auto list = requests_for([&] { ASSERT_TRUE(s->list(key("instances"))); });
  const auto remove = requests_for([&] { ASSERT_TRUE(s->remove(key("instances/b"))); });
  // PUT, plus a GET for the ETag when the PUT reply has none (Apache).
  EXPECT_LE(replace, 2u);
  EXPECT_LE(create, 2u);
  EXPECT_LE(replace_if, 2u);
  EXPECT_EQ(get, 1u);
  EXPECT_EQ(list, 1u);
  EXPECT_EQ(remove, 1u);
  // First write into a new folder: PUT 409, MKCOL base and instances/, PUT (+GET).
  EXPECT_LE(first_write, 5u);
  std::cout << "[ measured ] " << GetParam().name << " requests: first write " << first_write
            << ", replace " << replace << ", create " << create << ", replace_if " << replace_if
            << ", get " << get << ", list " << list << ", remove " << remove << "\n";
}

TEST_P(RealServer, NestedKeysCreateEachFolderOnce) {
  auto s = store();
  ASSERT_TRUE(s->replace(key("a/b/c/d"), "1"));
  ASSERT_TRUE(s->replace(key("a/b/c/e"), "2"));
  ASSERT_TRUE(s->replace(key("a/b/x/f"), "3"));
  std::multiset<std::string> mkcols;
  for (const auto& line : logger_->formatted()) {
    if (line.find("method=MKCOL") != std::string::npos) {
      const auto url = line.substr(line.find("url="));
      mkcols.insert(url.substr(0, url.find(' ')));
    }
  }
  for (const auto& m : mkcols) EXPECT_EQ(mkcols.count(m), 1u) << m;
  EXPECT_EQ(mkcols.size(), 5u);  // base, a, a/b, a/b/c, a/b/x
  auto keys = s->list(key("a"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  EXPECT_EQ(keys->size(), 3u);
  EXPECT_EQ(requests_for([&] { ASSERT_TRUE(s->list(key("a"))); }), 4u);  // one per folder
}

TEST_P(RealServer, FolderRemovedBehindOurBackIsCreatedAgain) {
  auto s = store();
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
  std::filesystem::remove_all(server().root() / folder_);
  ASSERT_TRUE(s->replace(key("instances/a"), "2"));
  EXPECT_EQ(s->get(key("instances/a"))->data, "2");
}

TEST_P(RealServer, ClockSkewIsWarnedOnce) {
  options_.clock = std::make_shared<FakeClock>();  // 2026-01-01: far from the server's Date
  options_.max_clock_skew = std::chrono::seconds(12);
  auto s = store();
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
  ASSERT_TRUE(s->get(key("instances/a")));
  ASSERT_TRUE(s->list(key("instances")));
  const auto warnings = logger_->lines_at(LogLevel::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("clock"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("server_date="), std::string::npos) << warnings[0];
}

TEST_P(RealServer, NoSkewWarningWhenClocksAgree) {
  auto s = store();
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
  ASSERT_TRUE(s->get(key("instances/a")));
  EXPECT_TRUE(logger_->lines_at(LogLevel::warn).empty());
}

TEST_P(RealServer, SafeFromManyThreads) {
  auto s = store();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const auto k = key("instances/t" + std::to_string(t));
        if (!s->replace(k, std::to_string(i)) || s->get(k)->data != std::to_string(i)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(s->list(key("instances"))->size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Servers, RealServer,
                         ::testing::Values(ServerParam{"apache", &WebDavServer::apache},
                                           ServerParam{"lighttpd", &WebDavServer::lighttpd}),
                         [](const auto& param_info) { return param_info.param.name; });

// ------------------------------------------------------------ Apache only

TEST(ApacheConnections, ServerLogSeesOneClientConnection) {
  auto& server = WebDavServer::apache();
  ASSERT_TRUE(server.running());
  const auto folder = WebDavServer::fresh_folder();
  auto s = make_store(options_for(server, folder));
  s->capabilities();
  ASSERT_TRUE(s->replace(key("instances/me"), "1"));
  ASSERT_TRUE(s->list(key("instances")));
  ASSERT_TRUE(s->get(key("instances/me")));
  ASSERT_TRUE(s->remove(key("instances/me")));
  // Access log lines end in the client's port (%{remote}p).
  std::ifstream log(server.access_log());
  std::set<std::string> ports;
  int lines = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("/" + folder) == std::string::npos) continue;
    ++lines;
    ports.insert(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_GE(lines, 5);
  EXPECT_EQ(ports.size(), 1u) << lines << " requests";
}

WebDavServer& apache_with_auth() { return WebDavServer::apache_with_auth(); }

TEST(ApacheAuth, WrongOrMissingCredentialsArePermissionErrors) {
  auto& server = apache_with_auth();
  ASSERT_TRUE(server.running());
  const std::string wrong = "wrong-Pw-77x";
  auto options = options_for(server);
  options.auth = WebDavAuth::basic;
  options.user = kAuthUser;
  options.secret = wrong;
  auto stats = std::make_shared<WebDavStats>();
  options.stats = stats;
  auto s = make_store(options);
  const std::vector<Error> errors = errors_of_every_operation(*s);
  ASSERT_EQ(errors.size(), 4u);
  for (const auto& e : errors) {
    EXPECT_EQ(e.code, Errc::permission) << e.message;
    EXPECT_NE(e.message.find("HTTP 401"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find(server.url()), std::string::npos) << e.message;
    EXPECT_EQ(e.message.find(wrong), std::string::npos) << e.message;
    EXPECT_EQ(e.message.find(kAuthPassword), std::string::npos) << e.message;
  }
  EXPECT_EQ(stats->retries.load(), 0u);  // 401 is not retried

  auto anonymous = make_store(options_for(server));
  auto r = anonymous->list(key("instances"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::permission);
}

// Every store operation with the right and a wrong password is the store
// contract's (NoCredentialInAnyMessageOrLogLine/apache). Here: the debug and
// warning paths (a client clock far off), open_store with the credentials
// from the environment, and the records on the server's disk.
TEST(ApacheAuth, NoSecretInAnyLogLineOrErrorAtAnyLevel) {
  auto& server = apache_with_auth();
  ASSERT_TRUE(server.running());
  auto logger = std::make_shared<CapturingLogger>();
  std::vector<std::string> texts;
  auto options = options_for(server);
  options.auth = WebDavAuth::basic;
  options.user = kAuthUser;
  options.secret = kAuthPassword;
  options.logger = logger;
  options.clock = std::make_shared<FakeClock>();  // provoke the skew warning too
  auto s = make_store(options);
  texts.push_back(s->describe());
  s->capabilities();
  ASSERT_TRUE(s->replace(key("instances/a"), R"({"id":"a"})"));
  if (auto r = s->create(key("instances/a"), "again"); !r) texts.push_back(r.error().message);
  // The same through open_store, credentials from the environment.
  OpenOptions open;
  open.logger = logger;
  open.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "INSTANCE_GUARD_USER") return kAuthUser;
    if (name == "INSTANCE_GUARD_PASSWORD") return kAuthPassword;
    return std::nullopt;
  };
  const auto url = "webdav://" + server.url().substr(7) + "/" + WebDavServer::fresh_folder();
  auto opened = open_store(url, open);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  texts.push_back((*opened)->describe());
  ASSERT_TRUE((*opened)->replace(key("instances/b"), "1"));

  const auto lines = logger->formatted();
  EXPECT_FALSE(logger->lines_at(LogLevel::debug).empty());
  EXPECT_FALSE(logger->lines_at(LogLevel::warn).empty());
  texts.insert(texts.end(), lines.begin(), lines.end());
  ASSERT_GT(texts.size(), 5u);
  for (const auto& text : texts) {
    EXPECT_EQ(text.find(kAuthPassword), std::string::npos) << text;
    EXPECT_EQ(text.find("Authorization"), std::string::npos) << text;
    EXPECT_EQ(text.find("Basic "), std::string::npos) << text;
  }
  // Nor in the records.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(server.root())) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    const std::string content((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(content.find(kAuthPassword), std::string::npos) << entry.path();
  }
}

WebDavServer& apache_with_tls() {
  return WebDavServer::get("apache-tls", {.kind = ServerKind::apache, .tls = true});
}

TEST(ApacheTls, VerificationIsOnByDefault) {
  auto& server = apache_with_tls();
  ASSERT_TRUE(server.running());
  ASSERT_TRUE(server.url().starts_with("https://"));
  auto s = make_store(options_for(server));
  auto r = s->list(key("instances"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_NE(r.error().message.find("--ca-file"), std::string::npos) << r.error().message;
}

TEST(ApacheTls, CaFileMakesItWork) {
  auto& server = apache_with_tls();
  ASSERT_TRUE(server.running());
  auto options = options_for(server);
  options.ca_file = server.ca_file();
  auto s = make_store(options);
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
  EXPECT_EQ(s->get(key("instances/a"))->data, "1");
}

TEST(ApacheTls, InsecureWorksAndIsWarnedAbout) {
  auto& server = apache_with_tls();
  ASSERT_TRUE(server.running());
  auto logger = std::make_shared<CapturingLogger>();
  auto options = options_for(server);
  options.insecure = true;
  options.logger = logger;
  auto s = make_store(options);
  const auto warnings = logger->lines_at(LogLevel::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("insecure"), std::string::npos) << warnings[0];
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
}

}  // namespace
}  // namespace instance::testing
