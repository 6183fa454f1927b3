// Failures real servers cannot be made to produce on demand, injected by the
// scripted FaultServer (see fault_server.hpp): a server that is down, 500
// then recovery, 425 Too Early, bodies that are not XML, hostile hrefs,
// oversized bodies, redirects, a bearer token refused.
#include <gtest/gtest.h>
#include <algorithm>

#include <deque>
#include <map>
#include <set>

#include "fault_server.hpp"
#include "helpers.hpp"
#include "instance/testing.hpp"
#include "support/overlap.hpp"

namespace instance::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A few WebDAV answers over an in-memory map, with a queue of canned
// failures served first: just enough to drive the store.
class TinyDav {
 public:
  FaultReply operator()(const FaultRequest& r) {
    if (!failures_.empty()) {
      auto reply = failures_.front();
      failures_.pop_front();
      if (apply_before_failing_) {
        apply_before_failing_ = false;
        (void)answer(r);
      }
      return reply;
    }
    return answer(r);
  }
  void fail_next(int count, FaultReply reply) {
    for (int i = 0; i < count; ++i) failures_.push_back(reply);
  }
  // The next failure is served after the request took effect (a lost reply).
  void apply_then_fail(FaultReply reply) {
    apply_before_failing_ = true;
    failures_.push_back(std::move(reply));
  }
  std::map<std::string, std::string> files;

 private:
  FaultReply answer(const FaultRequest& r) {
    const auto it = files.find(r.target);
    const auto etag = [](const std::string& body) {
      return "\"" + std::to_string(std::hash<std::string>{}(body)) + "\"";
    };
    if (r.method == "GET" || r.method == "HEAD") {
      if (it == files.end()) return {.status = 404};
      return {.status = 200, .headers = {{"ETag", etag(it->second)}}, .body = it->second};
    }
    if (r.method == "PUT") {
      if (r.headers.contains("if-none-match") && it != files.end()) return {.status = 412};
      if (auto m = r.headers.find("if-match");
          m != r.headers.end() && (it == files.end() || etag(it->second) != m->second)) {
        return {.status = 412};
      }
      const bool existed = it != files.end();
      files[r.target] = r.body;
      return {.status = existed ? 204 : 201, .headers = {{"ETag", etag(r.body)}}};
    }
    if (r.method == "DELETE") {
      if (it == files.end()) return {.status = 404};
      if (auto m = r.headers.find("if-match");
          m != r.headers.end() && etag(it->second) != m->second) {
        return {.status = 412};
      }
      files.erase(it);
      return {.status = 204};
    }
    if (r.method == "MKCOL") return {.status = 201};
    if (r.method == "PROPFIND") {
      std::vector<std::string> hrefs = {r.target};
      for (const auto& [path, body] : files) {
        if (path.starts_with(r.target)) hrefs.push_back(path);
      }
      return multistatus(hrefs);
    }
    return {.status = 405};
  }
  std::deque<FaultReply> failures_;
  bool apply_before_failing_ = false;
};

class Faults : public ::testing::Test {
 protected:
  WebDavStoreOptions options(const FaultServer& server) {
    WebDavStoreOptions o;
    o.base_url = server.url() + "/s";
    o.retry_deadline = milliseconds(2000);
    o.initial_backoff = milliseconds(5);
    o.max_backoff = milliseconds(50);
    o.request_timeout = milliseconds(2000);
    o.probe_capabilities = false;
    o.stats = stats_;
    o.logger = logger_;
    return o;
  }
  static int count(const FaultServer& server, std::string_view method) {
    int n = 0;
    for (const auto& r : server.requests()) n += r.method == method;
    return n;
  }
  std::shared_ptr<WebDavStats> stats_ = std::make_shared<WebDavStats>();
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
};

// A scan's reads (get_many, batch_reads) go out four at a time, each on a
// connection of its own, and answer each key as get() does. The server
// holds each GET until four are in at once (or 5 s: one at a time would
// be slow, never stuck).
TEST_F(Faults, ManyReadsGoOutFourAtATimeAndAnswerEachAsGetDoes) {
  Overlap overlap(4);
  HttpServer server("webdav reads", [&](const HttpRequest& r) {
    overlap.hold();
    if (r.method != "GET") return HttpReply{.status = 405};
    if (r.target.ends_with("/r5")) return HttpReply{.status = 404};
    if (r.target.ends_with("/r7")) return HttpReply{.status = 403};
    return HttpReply{.headers = {{"ETag", "\"" + r.target + "\""}}, .body = "doc " + r.target};
  });
  WebDavStoreOptions o;
  o.base_url = server.url() + "/s";
  o.retry_deadline = milliseconds(20000);
  o.request_timeout = milliseconds(20000);
  o.probe_capabilities = false;
  o.stats = stats_;
  auto store = make_webdav_store(o).value();
  EXPECT_TRUE(store->capabilities().batch_reads);
  std::vector<Key> keys;
  for (int i = 0; i < 12; ++i) keys.push_back(key("instances/r" + std::to_string(i)));
  auto many = store->get_many(keys);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& doc = (*many)[i];
    if (i == 5) {
      ASSERT_FALSE(doc.has_value());
      EXPECT_EQ(doc.error().code, Errc::not_found);
    } else if (i == 7) {
      ASSERT_FALSE(doc.has_value());
      EXPECT_EQ(doc.error().code, Errc::permission) << doc.error().message;
    } else {
      ASSERT_TRUE(doc.has_value()) << i << ": " << doc.error().message;
      EXPECT_EQ(doc->data, "doc /s/instances/r" + std::to_string(i));
      EXPECT_EQ(doc->version, "\"/s/instances/r" + std::to_string(i) + "\"");
    }
  }
  EXPECT_EQ(overlap.most(), 4) << "four at once, never more";
  EXPECT_EQ(server.connections(), 4);
  EXPECT_EQ(stats_->new_connections.load(), 4u);
}

TEST_F(Faults, ServerDownAtStartFailsQuicklyAsUnavailable) {
  WebDavStoreOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(free_port()) + "/s";
  o.retry_deadline = milliseconds(300);
  o.initial_backoff = milliseconds(10);
  o.stats = stats_;
  auto store = make_webdav_store(o);
  ASSERT_TRUE(store.has_value()) << store.error().message;  // no request at creation
  EXPECT_EQ(stats_->requests.load(), 0u);
  const auto start = steady_clock::now();
  auto keys = (*store)->list(key("instances"));
  const auto took = steady_clock::now() - start;
  ASSERT_FALSE(keys.has_value());
  EXPECT_EQ(keys.error().code, Errc::unavailable);
  EXPECT_NE(keys.error().message.find("127.0.0.1"), std::string::npos) << keys.error().message;
  EXPECT_NE(keys.error().message.find("attempts"), std::string::npos) << keys.error().message;
  EXPECT_GT(stats_->retries.load(), 0u);
  EXPECT_LT(took, milliseconds(1500));
  // capabilities() cannot ask: unknown (with why), plain for now, asks again next time.
  const Capabilities caps = (*store)->capabilities();
  EXPECT_FALSE(caps.conditional_writes);
  ASSERT_TRUE(caps.unknown.has_value());
  EXPECT_EQ(caps.unknown->code, Errc::unavailable) << caps.unknown->message;
}

TEST_F(Faults, ServerErrorsThenRecovery) {
  TinyDav dav;
  dav.files["/s/instances/a"] = "A";
  dav.fail_next(3, {.status = 500});
  FaultServer server(std::ref(dav));
  auto s = make_store(options(server));
  auto doc = s->get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, "A");
  EXPECT_EQ(stats_->requests.load(), 4u);
  EXPECT_EQ(stats_->retries.load(), 3u);

  dav.fail_next(2, {.status = 503});
  ASSERT_TRUE(s->replace(key("instances/a"), "B"));
  dav.fail_next(2, {.status = 502});
  auto keys = s->list(key("instances"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  EXPECT_EQ(keys->size(), 1u);
}

TEST_F(Faults, TooEarlyOnTheFirstReadsIsRetried) {
  TinyDav dav;
  dav.files["/s/instances/a"] = "A";
  dav.fail_next(2, {.status = 425});
  FaultServer server(std::ref(dav));
  auto s = make_store(options(server));
  auto doc = s->get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, "A");
  EXPECT_EQ(stats_->retries.load(), 2u);
}

TEST_F(Faults, PersistentServerErrorsEndWithinTheDeadline) {
  FaultServer server([](const FaultRequest&) { return FaultReply{.status = 500}; });
  auto o = options(server);
  o.retry_deadline = milliseconds(300);
  auto s = make_store(o);
  const auto start = steady_clock::now();
  auto doc = s->get(key("instances/a"));
  EXPECT_LT(steady_clock::now() - start, milliseconds(1500));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::unavailable);
  EXPECT_NE(doc.error().message.find("HTTP 500"), std::string::npos) << doc.error().message;
  EXPECT_GT(stats_->requests.load(), 2u);
}

// chezdav answers 500, not 409, to a PUT under a missing folder. Scripted
// here: folders exist once made, a PUT outside one answers 500. The first
// 500 asks whether the folder exists (PROPFIND Depth 0) instead of being
// retried until the deadline; missing, the folders are made and the PUT
// sent again.
TEST_F(Faults, A500ToAPutUnderAMissingFolderMakesTheFolders) {
  std::set<std::string> folders = {"/"};
  FaultServer server([&](const FaultRequest& r) {
    const std::string parent = r.target.substr(0, r.target.rfind('/', r.target.size() - 2) + 1);
    if (r.method == "PUT") {
      if (!folders.contains(parent)) return FaultReply{.status = 500};
      return FaultReply{.status = 201, .headers = {{"ETag", "\"" + r.body + "\""}}};
    }
    if (r.method == "MKCOL") {
      if (!folders.contains(parent)) return FaultReply{.status = 409};
      folders.insert(r.target);
      return FaultReply{.status = 201};
    }
    if (r.method == "PROPFIND" && folders.contains(r.target)) return multistatus({r.target});
    return FaultReply{.status = 404};
  });
  auto s = make_store(options(server));
  ASSERT_TRUE(s->replace(key("instances/a"), "1"));
  std::vector<std::string> sent;
  for (const auto& r : server.requests()) sent.push_back(r.method + " " + r.target);
  EXPECT_EQ(sent,
            (std::vector<std::string>{"PUT /s/instances/a", "PROPFIND /s/instances/", "MKCOL /s/",
                                      "MKCOL /s/instances/", "PUT /s/instances/a"}));
  EXPECT_EQ(stats_->retries.load(), 0u) << "the 500 was retried before the folder check";
  // Known now: the next write is one PUT.
  const auto before = server.requests().size();
  ASSERT_TRUE(s->create(key("instances/b"), "1"));
  EXPECT_EQ(server.requests().size(), before + 1);
}

// A 500 to a PUT whose folder exists is the server's error: asked about
// once, then retried until the deadline and reported, nothing created.
TEST_F(Faults, A500ToAPutWhoseFolderExistsStaysAnError) {
  FaultServer server([](const FaultRequest& r) {
    if (r.method == "PROPFIND") return multistatus({r.target});
    return FaultReply{.status = 500};
  });
  auto o = options(server);
  o.retry_deadline = milliseconds(300);
  auto r = make_store(o)->replace(key("instances/a"), "1");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().message;
  EXPECT_NE(r.error().message.find("HTTP 500"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("attempts"), std::string::npos) << r.error().message;
  EXPECT_EQ(count(server, "PROPFIND"), 1);
  EXPECT_EQ(count(server, "MKCOL"), 0);
  EXPECT_GT(count(server, "PUT"), 2) << "the 500 is still retried";
  EXPECT_EQ(server.requests()[1].method, "PROPFIND") << "asked after the first 500";
}

// The folder check itself answered 500: it cannot tell, so it is not asked
// again, and the PUT's 500 is retried and reported as before.
TEST_F(Faults, A500ToAPutAndToItsFolderCheckStaysAnError) {
  FaultServer server([](const FaultRequest&) { return FaultReply{.status = 500}; });
  auto o = options(server);
  o.retry_deadline = milliseconds(300);
  auto r = make_store(o)->replace(key("instances/a"), "1");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unavailable) << r.error().message;
  EXPECT_EQ(count(server, "PROPFIND"), 1) << "the check is one request, not retried";
  EXPECT_EQ(count(server, "MKCOL"), 0);
  EXPECT_GT(count(server, "PUT"), 2);
}

TEST_F(Faults, PersistentTooEarlyIsUnavailable) {
  FaultServer server([](const FaultRequest&) { return FaultReply{.status = 425}; });
  auto o = options(server);
  o.retry_deadline = milliseconds(200);
  auto doc = make_store(o)->get(key("instances/a"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::unavailable);
}

TEST_F(Faults, AWriteWhoseReplyWasLostIsRecognisedOnRetry) {
  TinyDav dav;
  FaultServer server(std::ref(dav));
  auto s = make_store(options(server));
  // create: the server stores the document, then the reply is a 500; the
  // retry sees 412 (it exists) with our bytes: that was us.
  dav.apply_then_fail({.status = 500});
  auto created = s->create(key("instances/a"), "mine");
  ASSERT_TRUE(created.has_value()) << created.error().message;
  EXPECT_EQ(dav.files["/s/instances/a"], "mine");
  // remove: deleted, reply lost, the retry's 404 is ours.
  dav.apply_then_fail({.status = 502});
  ASSERT_TRUE(s->remove(key("instances/a")));
  // Without a lost reply a 404 is not_found.
  EXPECT_EQ(s->remove(key("instances/a")).error().code, Errc::not_found);
  // And somebody else's document is still already_exists.
  dav.files["/s/instances/b"] = "theirs";
  EXPECT_EQ(s->create(key("instances/b"), "mine").error().code, Errc::already_exists);
}

TEST_F(Faults, BodiesThatAreNotXmlAreMalformed) {
  for (const auto& reply :
       {FaultReply{.status = 207, .body = "not xml"},
        FaultReply{.status = 207, .body = "<html><body>maintenance</body></html>"},
        FaultReply{.status = 207, .body = ""},
        FaultReply{.status = 200, .body = "<html>login page</html>"},
        FaultReply{.status = 207, .body = R"(<D:multistatus xmlns:D="DAV:"></D:multistatus>)"}}) {
    FaultServer server([&](const FaultRequest&) { return reply; });
    auto keys = make_store(options(server))->list(key("instances"));
    ASSERT_FALSE(keys.has_value()) << reply.body;
    EXPECT_EQ(keys.error().code, Errc::malformed) << keys.error().message;
    EXPECT_NE(keys.error().message.find("list instances"), std::string::npos);
  }
}

TEST_F(Faults, HostileHrefsAreMalformedAndNothingIsDeleted) {
  for (const std::string_view href :
       {"/s/instances/..", "/s/instances/%2E%2E", "/s/instances/a%2Fb", "/s/instances/%2F",
        "/s/instances/a%00b", "/other/instances/a", "/", "http://elsewhere.example/other/a",
        "/s/instances/a/../../../etc/passwd", "/s/elsewhere/a"}) {
    SCOPED_TRACE(href);
    FaultServer server([&](const FaultRequest& r) {
      if (r.method == "PROPFIND") {
        return multistatus({"/s/instances/", "/s/instances/good", std::string(href)});
      }
      return FaultReply{.status = 200, .body = "{}"};
    });
    auto s = make_store(options(server));
    auto keys = s->list(key("instances"));
    ASSERT_FALSE(keys.has_value()) << keys->size() << " keys listed";
    EXPECT_EQ(keys.error().code, Errc::malformed);
    for (unsigned char c : keys.error().message) EXPECT_TRUE(c >= 0x20 && c < 0x7F);
    EXPECT_EQ(count(server, "DELETE"), 0);
  }
}

TEST_F(Faults, OversizedReplyBodyIsMalformed) {
  FaultServer server([](const FaultRequest&) {
    return FaultReply{.status = 200, .body = std::string(2 << 20, 'x')};
  });
  auto doc = make_store(options(server))->get(key("instances/a"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::malformed);
  EXPECT_EQ(count(server, "DELETE"), 0);
}

TEST_F(Faults, StatusesMapToTheStoreCodes) {
  for (const auto& [status, code] : std::vector<std::pair<int, Errc>>{{507, Errc::no_space},
                                                                      {423, Errc::locked},
                                                                      {403, Errc::permission},
                                                                      {400, Errc::invalid},
                                                                      {501, Errc::unsupported},
                                                                      {410, Errc::not_found}}) {
    FaultServer server(
        [status = status](const FaultRequest&) { return FaultReply{.status = status}; });
    auto r = make_store(options(server))->replace(key("instances/a"), "x");
    ASSERT_FALSE(r.has_value()) << status;
    EXPECT_EQ(r.error().code, code) << status << ": " << r.error().message;
    EXPECT_EQ(server.requests().size(), 1u) << status << " must not be retried";
  }
}

TEST_F(Faults, AForbiddenReadIsAskedOnceMoreThenReportedAsPermission) {
  // One 403 to a GET may be Apache's read racing a delete (the real-server
  // suite races them); a second one is a real refusal: permission, never
  // "not found", so the record still counts as live.
  FaultServer server([](const FaultRequest&) { return FaultReply{.status = 403}; });
  auto doc = make_store(options(server))->get(key("instances/a"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::permission) << doc.error().message;
  EXPECT_EQ(count(server, "GET"), 2);
}

TEST_F(Faults, RedirectsAreNotFollowed) {
  FaultServer elsewhere([](const FaultRequest&) { return FaultReply{.status = 200, .body = "x"}; });
  FaultServer server([&](const FaultRequest&) {
    return FaultReply{.status = 301, .headers = {{"Location", elsewhere.url() + "/s/instances/a"}}};
  });
  auto o = options(server);
  o.auth = WebDavAuth::bearer;
  o.secret = "tok-redirect";
  auto doc = make_store(o)->get(key("instances/a"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::malformed);
  EXPECT_TRUE(elsewhere.requests().empty());  // the token never went anywhere else
  auto list = make_store(o)->list(key("instances"));
  ASSERT_FALSE(list.has_value());
  EXPECT_EQ(list.error().code, Errc::invalid);
  EXPECT_NE(list.error().message.find("redirect"), std::string::npos) << list.error().message;
}

TEST_F(Faults, BearerTokenIsSentAndNeverShown) {
  const std::string token = "tok-9f8e7d6c5b4a";
  TinyDav dav;
  dav.files["/s/instances/a"] = "A";
  FaultServer server([&](const FaultRequest& r) {
    const auto it = r.headers.find("authorization");
    if (it == r.headers.end() || it->second != "Bearer " + token) {
      return FaultReply{.status = 401, .headers = {{"WWW-Authenticate", "Bearer"}}};
    }
    return dav(r);
  });
  auto o = options(server);
  o.auth = WebDavAuth::bearer;
  o.secret = token;
  auto good = make_store(o);
  ASSERT_TRUE(good->get(key("instances/a")));
  ASSERT_TRUE(good->replace(key("instances/b"), "B"));

  o.secret = "tok-wrong-000";
  auto bad = make_store(o);
  std::vector<std::string> texts = {bad->describe(), good->describe()};
  for (auto r : {bad->get(key("instances/a")).error(), bad->list(key("instances")).error()}) {
    EXPECT_EQ(r.code, Errc::permission) << r.message;
    texts.push_back(r.message);
  }
  for (const auto& line : logger_->formatted()) texts.push_back(line);
  EXPECT_FALSE(logger_->lines_at(LogLevel::debug).empty());
  for (const auto& text : texts) {
    EXPECT_EQ(text.find(token), std::string::npos) << text;
    EXPECT_EQ(text.find("tok-wrong-000"), std::string::npos) << text;
    EXPECT_EQ(text.find("Bearer"), std::string::npos) << text;
  }
}

TEST_F(Faults, ServerClockFarOffIsWarnedOnce) {
  FaultServer server([](const FaultRequest&) {
    return FaultReply{.status = 404, .headers = {{"Date", "Sun, 29 Nov 2026 11:35:08 GMT"}}};
  });
  auto o = options(server);
  auto clock = std::make_shared<FakeClock>();
  clock->set_wall(WallTime{std::chrono::sys_days{std::chrono::year{2026} / 11 / 29}} +
                  std::chrono::hours(11) + std::chrono::minutes(35) + std::chrono::seconds(8));
  o.clock = clock;
  o.max_clock_skew = std::chrono::seconds(12);
  auto s = make_store(o);
  (void)s->get(key("instances/a"));
  EXPECT_TRUE(logger_->lines_at(LogLevel::warn).empty());  // in agreement
  // The Date header's second is 11:35:08.000 to 11:35:08.999: 13 s past its end.
  clock->advance(std::chrono::seconds(14));
  (void)s->get(key("instances/a"));
  (void)s->get(key("instances/a"));
  const auto warnings = logger_->lines_at(LogLevel::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("skew=13s"), std::string::npos) << warnings[0];
}

TEST_F(Faults, ProbeDowngradesAServerThatIgnoresConditionalHeaders) {
  // Like nginx or rclone: every PUT succeeds whatever If-Match / If-None-Match say.
  std::map<std::string, std::string> files;
  FaultServer server([&](const FaultRequest& r) {
    if (r.method == "PUT") {
      files[r.target] = r.body;
      return FaultReply{.status = 204, .headers = {{"ETag", "\"" + r.body + "\""}}};
    }
    if (r.method == "GET" && files.contains(r.target)) {
      return FaultReply{.status = 200,
                        .headers = {{"ETag", "\"" + files[r.target] + "\""}},
                        .body = files[r.target]};
    }
    if (r.method == "DELETE") {
      files.erase(r.target);
      return FaultReply{.status = 204};
    }
    if (r.method == "MKCOL") return FaultReply{.status = 201};
    return FaultReply{.status = 404};
  });
  auto o = options(server);
  o.probe_capabilities = true;
  auto s = make_store(o);
  const auto caps = s->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_FALSE(caps.conditional_writes);
  // One warning for all the conditional-write findings, saying what follows
  // (the lock probe's own warning aside).
  const auto warnings = logger_->lines_at(LogLevel::warn);
  const auto about_writes = std::ranges::count_if(warnings, [](const std::string& w) {
    return w.find("conditional writes") != std::string::npos;
  });
  EXPECT_EQ(about_writes, 1) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(std::ranges::any_of(warnings, [](const std::string& w) {
    return w.find("exclusive claims are not available") != std::string::npos;
  }));
  EXPECT_FALSE(caps.unknown.has_value());
  EXPECT_EQ(s->replace_if(key("instances/a"), "x", "\"v\"").error().code, Errc::unsupported);
  EXPECT_EQ(s->remove_if(key("instances/a"), "\"v\"").error().code, Errc::unsupported);
  EXPECT_TRUE(files.empty());  // the scratch document was removed
}

TEST_F(Faults, AProbeRefusedForCredentialsLeavesTheCapabilitiesUnknown) {
  FaultServer server([&](const FaultRequest&) { return FaultReply{.status = 401}; });
  auto o = options(server);
  o.probe_capabilities = true;
  auto s = make_store(o);
  for (int i = 0; i < 2; ++i) {  // never cached as "plain"
    const auto caps = s->capabilities();
    ASSERT_TRUE(caps.unknown.has_value());
    EXPECT_EQ(caps.unknown->code, Errc::permission) << caps.unknown->message;
    EXPECT_NE(caps.unknown->message.find("401"), std::string::npos) << caps.unknown->message;
  }
}

TEST_F(Faults, IfNoneMatchIgnoredOnlyStillKeepsCreateHonest) {
  // Like OpenCloud: If-Match honoured, If-None-Match ignored.
  TinyDav dav;
  FaultServer server([&](const FaultRequest& r) {
    if (r.method == "PUT" && r.headers.contains("if-none-match")) {
      FaultRequest copy = r;
      copy.headers.erase("if-none-match");
      return dav(copy);
    }
    return dav(r);
  });
  auto o = options(server);
  o.probe_capabilities = true;
  auto s = make_store(o);
  EXPECT_FALSE(s->capabilities().conditional_writes);
  ASSERT_TRUE(s->create(key("instances/a"), "one"));
  EXPECT_EQ(s->create(key("instances/a"), "two").error().code, Errc::already_exists);
  EXPECT_EQ(dav.files["/s/instances/a"], "one");
  // Not declared, so not offered.
  const auto v = s->get(key("instances/a"))->version;
  EXPECT_EQ(s->replace_if(key("instances/a"), "three", v).error().code, Errc::unsupported);
}

TEST_F(Faults, ApacheIsNotTrustedWithConditionalWrites) {
  TinyDav dav;
  FaultServer server([&](const FaultRequest& r) {
    auto reply = dav(r);
    reply.headers.emplace_back("Server", "Apache/2.4.62 (Debian)");
    return reply;
  });
  auto o = options(server);
  o.probe_capabilities = true;
  auto s = make_store(o);
  const auto caps = s->capabilities();
  EXPECT_TRUE(caps.versions);
  EXPECT_FALSE(caps.conditional_writes);
  const auto warnings = logger_->lines_at(LogLevel::warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("without a lock"), std::string::npos) << warnings[0];
}

TEST_F(Faults, AtomicServerIsTrustedWithConditionalWrites) {
  TinyDav dav;
  FaultServer server(std::ref(dav));
  auto o = options(server);
  o.probe_capabilities = true;
  auto s = make_store(o);
  EXPECT_TRUE(s->capabilities().conditional_writes);
  EXPECT_TRUE(logger_->lines_at(LogLevel::warn).empty());
  const auto v = s->replace(key("instances/a"), "one").value();
  EXPECT_TRUE(s->replace_if(key("instances/a"), "two", v));
  EXPECT_EQ(s->replace_if(key("instances/a"), "three", v).error().code, Errc::conflict);
  EXPECT_EQ(s->remove_if(key("instances/a"), v).error().code, Errc::conflict);
  EXPECT_EQ(s->replace_if(key("instances/none"), "x", v).error().code, Errc::not_found);
  // A version we never handed out never reaches a header.
  const auto before = server.requests().size();
  EXPECT_EQ(s->replace_if(key("instances/a"), "x", "\"v\"\r\nX-Injected: 1").error().code,
            Errc::conflict);
  EXPECT_EQ(s->remove_if(key("instances/a"), "").error().code, Errc::conflict);
  EXPECT_EQ(server.requests().size(), before);
}

}  // namespace
}  // namespace instance::testing
