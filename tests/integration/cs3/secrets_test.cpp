// No service account secret, access token or transfer token in any error
// message, log line (at every level), describe() or stored document, beyond
// the store contract (every operation with the right and a wrong secret):
// tokens that expire and are fetched again, the clock skew warning, a
// guard's claim through open_store, and what the gateway stored.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "helpers.hpp"
#include "instance/guard.hpp"
#include "instance/open_store.hpp"
#include "instance/testing.hpp"

namespace instance::testing {
namespace {

using std::chrono::milliseconds;

TEST(Cs3Secrets, NoSecretOrTokenInAnyLogLineErrorOrRecord) {
  GatewayDouble gateway({.too_early = milliseconds(1)});
  auto logger = std::make_shared<CapturingLogger>();
  std::vector<std::string> texts;
  auto record = [&](const auto& r) {
    if (!r) texts.push_back(r.error().message);
  };
  {
    auto options = options_for(gateway);
    options.logger = logger;
    options.clock = std::make_shared<FakeClock>();  // provokes the clock skew warning too
    options.retry_deadline = milliseconds(300);
    auto s = make_store(options);
    texts.push_back(s->describe());
    (void)s->capabilities();
    record(s->replace(key("instances/a"), R"({"id":"a"})"));
    record(s->create(key("instances/a"), "again"));
    record(s->get(key("instances/a")));
    record(s->get(key("instances/none")));
    record(s->list(key("instances")));
    record(s->replace_if(key("instances/a"), "x", "\"bogus\""));
    record(s->remove_if(key("instances/a"), "\"bogus\""));
    auto token = s->lock(key("instances.lock"), std::chrono::seconds(5), "me");
    record(token);
    if (token)
      record(s->refresh_lock(key("instances.lock"), token->token, std::chrono::seconds(5)));
    record(s->refresh_lock(key("instances.lock"), "urn:uuid:not-ours", std::chrono::seconds(5)));
    gateway.expire_tokens();  // and authenticate again
    record(s->remove(key("instances/a")));
    record(s->remove(key("instances/a")));
  }
  // A guard's claim, and open_store with the secret from the environment.
  OpenOptions open;
  open.logger = logger;
  open.getenv = [&](std::string_view name) -> std::optional<std::string> {
    if (name == "INSTANCE_GUARD_CS3_ID") return gateway.options().client_id;
    if (name == "INSTANCE_GUARD_CS3_SECRET") return gateway.options().client_secret;
    return std::nullopt;
  };
  auto opened = open_store("cs3://" + gateway.address() + "/" + gateway.space(), open);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  texts.push_back((*opened)->describe());
  auto guard = Guard::create(
      *opened, {.ttl = std::chrono::seconds(30), .logger = logger, .mode = Mode::exclusive});
  ASSERT_TRUE(guard.has_value());
  auto claim = guard->claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  ASSERT_TRUE(claim->stand_down());

  const auto lines = logger->formatted();
  texts.insert(texts.end(), lines.begin(), lines.end());
  ASSERT_GT(texts.size(), 10u);
  auto secrets = gateway.tokens_issued();
  ASSERT_GT(secrets.size(), 5u);
  secrets.push_back(gateway.options().client_secret);
  bool warned = false;
  for (const auto& text : texts) {
    if (text.starts_with("warn ")) warned = true;
    for (const auto& secret : secrets) {
      EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in: " << text;
    }
  }
  EXPECT_TRUE(warned);  // the warning paths ran too
  // Nor in anything the store wrote.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(gateway.files())) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    const std::string content((std::istreambuf_iterator<char>(in)), {});
    for (const auto& secret : secrets) {
      EXPECT_EQ(content.find(secret), std::string::npos) << entry.path();
    }
  }
}

}  // namespace
}  // namespace instance::testing
