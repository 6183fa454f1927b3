// The CS3 store's own behaviour against the gateway test double, beyond the
// store contract (lock mechanics, expiry and secrets in every message are
// the contract's): the probe, the reserved lock folder, 425 / TOO_EARLY retries,
// tokens that expire (also in the middle of a claim), a gateway that is
// down, wrong credentials, and the refusal of spaces end users can reach.
#include <gtest/gtest.h>

#include <chrono>

#include "helpers.hpp"
#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "support/overlap.hpp"

namespace instance::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ------------------------------------------------------------ capabilities

TEST(Cs3Store, ProbeDeclaresConditionalWritesAndLocksButNotTheServerClock) {
  GatewayDouble gateway;
  auto s = make_store(options_for(gateway));
  const auto caps = s->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_TRUE(caps.conditional_writes);
  EXPECT_TRUE(caps.native_lease);
  EXPECT_FALSE(caps.server_clock);  // expirations are computed on our clock
  // The probe cleans up and never shows in a listing of the base.
  EXPECT_TRUE(s->list(Key{}).value().empty());
}

// A scan's reads (get_many, batch_reads) go out four at a time: the gRPC
// calls on the one channel, the transfers each on a data connection of
// its own. The data endpoint holds each download until four are in at once
// (or 5 s: one at a time would be slow, never stuck).
TEST(Cs3Store, ManyReadsGoOutFourAtATimeAndAnswerEachAsGetDoes) {
  Overlap overlap(4);
  GatewayDouble gateway({.before_transfer = [&](std::string_view method) {
    if (method == "GET") overlap.hold();
  }});
  auto s = make_store(options_for(gateway));
  EXPECT_TRUE(s->capabilities().batch_reads);
  std::vector<Key> keys;
  for (int i = 0; i < 12; ++i) {
    keys.push_back(key("instances/r" + std::to_string(i)));
    if (i != 5) {
      ASSERT_TRUE(s->create(keys.back(), "doc " + std::to_string(i)));
    }
  }
  EXPECT_EQ(gateway.http_connections(), 1) << "the writes, one after another";
  auto many = s->get_many(keys);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& doc = (*many)[i];
    const auto one = s->get(keys[i]);
    if (i == 5) {
      ASSERT_FALSE(doc.has_value());
      EXPECT_EQ(doc.error().code, Errc::not_found);
      continue;
    }
    ASSERT_TRUE(doc.has_value()) << i << ": " << doc.error().message;
    ASSERT_TRUE(one.has_value()) << one.error().message;
    EXPECT_EQ(doc->data, "doc " + std::to_string(i));
    EXPECT_EQ(doc->version, one->version);
  }
  EXPECT_EQ(overlap.most(), 4) << "four at once, never more";
  EXPECT_EQ(gateway.http_connections(), 4);
}

TEST(Cs3Store, ProbeOfAGatewayThatIsDownIsNotCachedAndItsErrorReachesTheCaller) {
  GatewayDouble gateway;
  auto options = options_for(gateway);
  options.gateway = "127.0.0.1:1";  // nothing listens there
  options.retry_deadline = milliseconds(100);
  auto stats = std::make_shared<Cs3Stats>();
  options.stats = stats;
  auto s = make_store(options);
  const auto caps = s->capabilities();
  ASSERT_TRUE(caps.unknown.has_value()) << "a guess is marked as one";
  EXPECT_EQ(caps.unknown->code, Errc::unavailable) << caps.unknown->message;
  const auto after_first = stats->rpcs.load();
  EXPECT_GT(after_first, 0u);
  (void)s->capabilities();
  EXPECT_GT(stats->rpcs.load(), after_first);  // asked again
  // Operations that need the probe fail with its error, not "unsupported".
  auto locked = s->lock(key("instances.lock"), seconds(5), "me");
  ASSERT_FALSE(locked.has_value());
  EXPECT_EQ(locked.error().code, Errc::unavailable) << locked.error().message;
  auto cas = s->replace_if(key("instances/a"), "x", "\"v\"");
  ASSERT_FALSE(cas.has_value());
  EXPECT_EQ(cas.error().code, Errc::unavailable) << cas.error().message;
}

TEST(Cs3Store, AGatewayWhoseLocksAreNotExclusiveGetsExclusiveModeRefused) {
  GatewayDouble gateway({.exclusive_locks = false});
  auto s = make_store(options_for(gateway));
  const auto caps = s->capabilities();
  EXPECT_FALSE(caps.native_lease);
  EXPECT_FALSE(caps.conditional_writes);  // remove_if would rest on those locks
  EXPECT_EQ(s->lock(key("instances.lock"), seconds(5), "me").error().code, Errc::unsupported);
  auto guard = Guard::create(s, {.ttl = seconds(30), .mode = Mode::exclusive});
  ASSERT_TRUE(guard.has_value());
  auto claim = guard->claim();
  ASSERT_FALSE(claim.has_value());
  EXPECT_EQ(claim.error().error.code, Errc::unsupported) << claim.error().error.message;
  auto automatic = Guard::create(s, {.ttl = seconds(30), .mode = Mode::automatic});
  EXPECT_EQ(automatic->resolve_mode().value(), Mode::verify);
}

// ------------------------------------------------------------ locks

TEST(Cs3Store, TheLockFolderIsReserved) {
  GatewayDouble gateway;
  auto s = make_store(options_for(gateway));
  auto reserved = s->replace(key(".instance-guard-locks/x"), "x");
  ASSERT_FALSE(reserved.has_value());
  EXPECT_EQ(reserved.error().code, Errc::invalid);
}

TEST(Cs3Store, ConditionalRemoveHoldsOffOtherWritersAndLeavesNoLock) {
  GatewayDouble gateway;
  const std::string folder = fresh_folder();
  auto s = make_store(options_for(gateway, folder));
  const auto v = s->replace(key("instances/a"), "one").value();
  ASSERT_TRUE(s->remove_if(key("instances/a"), v));
  // The document and its lock are gone: a new one can be written and removed.
  const auto v2 = s->create(key("instances/a"), "two").value();
  ASSERT_TRUE(s->remove_if(key("instances/a"), v2));
  EXPECT_EQ(s->remove_if(key("instances/a"), v2).error().code, Errc::not_found);
}

// ------------------------------------------------------------ too early

TEST(Cs3Store, ReadsAndDeletesRetryWhileTheServerIsStillProcessing) {
  GatewayDouble gateway({.too_early = milliseconds(150)});
  auto s = make_store(options_for(gateway));
  ASSERT_TRUE(s->replace(key("instances/a"), "x"));
  auto doc = s->get(key("instances/a"));  // 425 until processing ends
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, "x");
  ASSERT_TRUE(s->replace(key("instances/a"), "y"));
  ASSERT_TRUE(s->remove(key("instances/a")));  // CODE_TOO_EARLY, then done
  EXPECT_GE(gateway.too_early_answers(), 2);
}

TEST(Cs3Store, ProcessingLongerThanTheRetryDeadlineIsUnavailableNotAbsent) {
  GatewayDouble gateway({.too_early = milliseconds(60'000)});
  auto options = options_for(gateway);
  options.retry_deadline = milliseconds(300);
  auto s = make_store(options);
  ASSERT_TRUE(s->replace(key("instances/a"), "x"));
  auto doc = s->get(key("instances/a"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::unavailable);
  EXPECT_NE(doc.error().message.find("425"), std::string::npos) << doc.error().message;
  // A listing still shows it: the guard counts it as live, never as absent.
  EXPECT_EQ(s->list(key("instances")).value().size(), 1u);
}

// ------------------------------------------------------------ tokens

TEST(Cs3Store, AnExpiredTokenCostsOneAuthenticationNotAnError) {
  GatewayDouble gateway;
  auto s = make_store(options_for(gateway));
  ASSERT_TRUE(s->replace(key("instances/a"), "x"));
  EXPECT_EQ(gateway.authentications(), 1);
  gateway.expire_tokens();
  auto doc = s->get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(gateway.authentications(), 2);
  EXPECT_GE(gateway.unauthenticated_answers(), 1);
}

TEST(Cs3Store, TokensExpiringDuringAnExclusiveClaimAndItsRenewalsDoNotLoseIt) {
  GatewayDouble gateway;
  gateway.set_token_calls(3);  // every token dies after three calls
  auto clock = std::make_shared<FakeClock>();
  clock->set_wall(WallTime(std::chrono::system_clock::now().time_since_epoch()));
  auto scheduler = std::make_shared<ManualScheduler>(clock);
  auto options = options_for(gateway);
  options.clock = clock;
  auto store = make_store(options);
  auto guard = Guard::create(store, {.ttl = seconds(30),
                                     .id = "holder",
                                     .clock = clock,
                                     .scheduler = scheduler,
                                     .mode = Mode::exclusive})
                   .value();
  auto claim = guard.claim();
  ASSERT_TRUE(claim.has_value()) << claim.error().error.message;
  EXPECT_NE(claim->guarantee().find("lock"), std::string_view::npos);
  for (int i = 0; i < 3; ++i) {
    scheduler->advance(seconds(10));
    scheduler->run_due();
  }
  EXPECT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  EXPECT_GE(gateway.authentications(), 5);
  ASSERT_TRUE(claim->stand_down());
}

TEST(Cs3Store, WrongCredentialsArePermissionErrorsAndNotRetried) {
  GatewayDouble gateway;
  auto options = options_for(gateway);
  options.client_secret = "wrong-Sa-0000";
  auto stats = std::make_shared<Cs3Stats>();
  options.stats = stats;
  auto s = make_store(options);
  auto r = s->get(key("instances/a"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::permission);
  EXPECT_NE(r.error().message.find(gateway.options().client_id), std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find("wrong-Sa-0000"), std::string::npos);
  EXPECT_EQ(stats->retries.load(), 0u);
  EXPECT_EQ(gateway.authentications(), 1);
}

// ------------------------------------------------------------ gateway down

TEST(Cs3Store, AGatewayThatIsDownIsUnavailableAfterTheRetryDeadline) {
  GatewayDouble gateway;
  auto options = options_for(gateway);
  options.retry_deadline = milliseconds(300);
  auto s = make_store(options);
  ASSERT_TRUE(s->replace(key("instances/a"), "x"));
  gateway.stop_grpc();
  const auto started = std::chrono::steady_clock::now();
  auto r = s->get(key("instances/a"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().message;
  EXPECT_NE(r.error().message.find(gateway.address()), std::string::npos) << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));
}

TEST(Cs3Store, AClaimAgainstAGatewayThatIsDownFailsAsUnavailable) {
  GatewayDouble gateway;
  auto options = options_for(gateway);
  options.gateway = "127.0.0.1:1";
  options.retry_deadline = milliseconds(200);
  // A short start-up budget: the claim asks again until it ends (30 s by default).
  auto guard = Guard::create(
      make_store(options),
      {.ttl = seconds(30), .mode = Mode::exclusive, .startup_timeout = milliseconds(500)});
  ASSERT_TRUE(guard.has_value());
  auto claim = guard->claim();
  ASSERT_FALSE(claim.has_value());
  EXPECT_EQ(claim.error().error.code, Errc::unavailable) << claim.error().error.message;
}

// ------------------------------------------------------------ exclusive end to end

TEST(Cs3Store, ExclusiveModeUsesTheLockAndHandsOverWithAGrowingEpoch) {
  GatewayDouble gateway;
  const std::string folder = fresh_folder();
  auto make_guard = [&](const std::string& id) {
    return Guard::create(make_store(options_for(gateway, folder)),
                         {.ttl = seconds(30), .id = id, .mode = Mode::exclusive})
        .value();
  };
  auto first = make_guard("first");
  auto second = make_guard("second");
  auto held = first.claim();
  ASSERT_TRUE(held.has_value()) << held.error().error.message;
  EXPECT_EQ(held->mode(), Mode::exclusive);
  EXPECT_NE(held->guarantee().find("store's own lock"), std::string_view::npos);
  auto refused = second.claim();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().error.code, Errc::another_instance);
  const auto epoch = held->epoch().value();
  ASSERT_TRUE(held->stand_down());
  auto next = second.claim();
  ASSERT_TRUE(next.has_value()) << next.error().error.message;
  EXPECT_GT(next->epoch().value(), epoch);
  ASSERT_TRUE(next->stand_down());
}

// ------------------------------------------------------------ the space

std::string space_error(GatewayDoubleOptions o, bool allow = false) {
  GatewayDouble gateway(std::move(o));
  auto options = options_for(gateway);
  options.allow_user_space = allow;
  auto r = make_store(options)->replace(key("instances/a"), "x");
  return r ? std::string() : std::string(to_string(r.error().code)) + ": " + r.error().message;
}

TEST(Cs3Store, APersonalSpaceIsRefused) {
  const auto e = space_error({.space_type = "personal"});
  EXPECT_TRUE(e.starts_with("invalid: ")) << e;
  EXPECT_NE(e.find("personal"), std::string::npos) << e;
  EXPECT_NE(e.find("allow-user-space=1"), std::string::npos) << e;
}

TEST(Cs3Store, ASpaceWithMembersIsRefusedAndTheMembersNamed) {
  const auto e = space_error({.members = {"alice"}, .group_member = true});
  EXPECT_TRUE(e.starts_with("invalid: ")) << e;
  EXPECT_NE(e.find("2 member(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("user alice"), std::string::npos) << e;
  EXPECT_NE(e.find("a group"), std::string::npos) << e;
}

TEST(Cs3Store, TheSpaceCheckCanBeTurnedOff) {
  EXPECT_EQ(space_error({.space_type = "personal", .members = {"alice"}}, true), "");
}

TEST(Cs3Store, AnUnknownSpaceIsNotFound) {
  GatewayDouble gateway;
  auto options = options_for(gateway);
  options.space_id = "storage-users-1$no-such-space";
  auto r = make_store(options)->get(key("instances/a"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_NE(r.error().message.find("no-such-space"), std::string::npos) << r.error().message;
}

TEST(Cs3Store, EmptyDocumentsCanBeCreatedButNotOverwritten) {
  GatewayDouble gateway;
  auto s = make_store(options_for(gateway));
  ASSERT_TRUE(s->create(key("instances/e"), ""));
  EXPECT_EQ(s->get(key("instances/e"))->data, "");
  EXPECT_EQ(s->create(key("instances/e"), "").error().code, Errc::already_exists);
  EXPECT_EQ(s->replace(key("instances/e"), "").error().code, Errc::invalid);
}

}  // namespace
}  // namespace instance::testing
