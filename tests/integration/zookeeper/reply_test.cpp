// How the ZooKeeper store takes answers a real server never gives: get_many()
// against a fake server on loopback that speaks just enough of ZooKeeper's
// wire protocol (the handshake, pings, getData, closeSession) for the
// store's documents' session, through the real C client, and answers as
// each test tells it: out of order, never, or with a value that contradicts
// its own Stat. Every case must end in a clear answer or error, never a
// crash or a hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "instance/stores/zookeeper.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

// How the fake answers one getData.
struct Answer {
  std::int32_t err = 0;  // the reply header's error code (0: ZOK)
  std::string data;
  std::optional<std::int32_t> data_length;  // the Stat's; the data's size when unset
  std::int64_t ephemeral_owner = 0;
  // No answer, to this request or to any after it on the connection: a
  // server that stalled.
  bool withhold = false;
};

void put32(std::string& out, std::int32_t v) {
  const std::uint32_t u = htonl(static_cast<std::uint32_t>(v));
  out.append(reinterpret_cast<const char*>(&u), 4);
}

void put64(std::string& out, std::int64_t v) {
  put32(out, static_cast<std::int32_t>(static_cast<std::uint64_t>(v) >> 32));
  put32(out, static_cast<std::int32_t>(static_cast<std::uint64_t>(v) & 0xffffffffu));
}

std::int32_t get32(const std::string& in, std::size_t at) {
  if (at + 4 > in.size()) return 0;
  std::uint32_t u = 0;
  in.copy(reinterpret_cast<char*>(&u), 4, at);
  return static_cast<std::int32_t>(ntohl(u));
}

std::string framed(const std::string& body) {
  std::string out;
  put32(out, static_cast<std::int32_t>(body.size()));
  return out + body;
}

class FakeZookeeper {
 public:
  using Plan = std::function<Answer(const std::string& path)>;

  // `swaps`: how many times a document's answer is held back and sent after
  // the next one's (two answers out of order).
  explicit FakeZookeeper(Plan plan, int swaps = 0) : plan_(std::move(plan)), swaps_(swaps) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof addr;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeZookeeper() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (listener_ >= 0) ::close(listener_);
  }
  FakeZookeeper(const FakeZookeeper&) = delete;
  FakeZookeeper& operator=(const FakeZookeeper&) = delete;

  int port() const { return port_; }
  int connections() const { return connections_; }
  int document_reads() const { return document_reads_; }
  int swapped() const { return swapped_; }

 private:
  // Waits for `fd` to be readable, or the fake to stop: false then.
  bool readable(int fd) {
    while (!stop_) {
      pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
      const int n = ::poll(&p, 1, 20);
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
    return false;
  }

  bool read_exact(int fd, std::string& out, std::size_t n) {
    out.assign(n, '\0');
    for (std::size_t at = 0; at < n;) {
      if (!readable(fd)) return false;
      const ssize_t got = ::recv(fd, out.data() + at, n - at, 0);
      if (got <= 0) return false;
      at += static_cast<std::size_t>(got);
    }
    return true;
  }

  std::optional<std::string> frame(int fd) {
    std::string length;
    if (!read_exact(fd, length, 4)) return std::nullopt;
    const std::int32_t n = get32(length, 0);
    if (n < 0 || n > (1 << 20)) return std::nullopt;
    std::string body;
    if (!read_exact(fd, body, static_cast<std::size_t>(n))) return std::nullopt;
    return body;
  }

  static void send_all(int fd, const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      const ssize_t sent = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (sent <= 0) return;
      at += static_cast<std::size_t>(sent);
    }
  }

  static std::string header(std::int32_t xid, std::int32_t err) {
    std::string out;
    put32(out, xid);
    put64(out, 42);  // zxid
    put32(out, err);
    return out;
  }

  static std::string data_reply(std::int32_t xid, const Answer& a) {
    std::string out = header(xid, a.err);
    if (a.err != 0) return framed(out);
    put32(out, static_cast<std::int32_t>(a.data.size()));
    out += a.data;
    put64(out, 7);  // czxid
    put64(out, 7);  // mzxid
    put64(out, 0);  // ctime
    put64(out, 0);  // mtime
    put32(out, 3);  // version
    put32(out, 0);  // cversion
    put32(out, 0);  // aversion
    put64(out, a.ephemeral_owner);
    put32(out, a.data_length.value_or(static_cast<std::int32_t>(a.data.size())));
    put32(out, 0);  // numChildren
    put64(out, 7);  // pzxid
    return framed(out);
  }

  void serve() {
    while (!stop_) {
      if (!readable(listener_)) return;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      ++connections_;
      converse(fd);
      ::close(fd);
    }
  }

  // One connection: the handshake, then requests until the client goes.
  void converse(int fd) {
    auto hello = frame(fd);
    if (!hello) return;
    // ConnectRequest: protocolVersion, lastZxidSeen (8), timeOut, sessionId
    // (8), passwd, readOnly. The answer: protocolVersion, timeOut,
    // sessionId, passwd (16 bytes), readOnly.
    std::string welcome;
    put32(welcome, 0);
    put32(welcome, get32(*hello, 12));
    put64(welcome, 0x5e551011);
    put32(welcome, 16);
    welcome += std::string(16, '\0');
    welcome += '\0';
    send_all(fd, framed(welcome));
    std::optional<std::string> held;  // a document's answer kept back
    bool stalled = false;
    while (auto request = frame(fd)) {
      if (stalled) continue;
      const std::int32_t xid = get32(*request, 0);
      const std::int32_t type = get32(*request, 4);
      if (type == 4) {  // getData: path (length, bytes), watch
        const std::int32_t n = get32(*request, 8);
        const std::string path = request->substr(12, static_cast<std::size_t>(std::max(0, n)));
        const bool document = path.find("/docs/") != std::string::npos;
        if (document) ++document_reads_;
        const Answer answer = plan_(path);
        if (answer.withhold) {
          stalled = true;
          continue;
        }
        std::string reply = data_reply(xid, answer);
        if (document && !held && swaps_ > 0) {
          --swaps_;
          held = std::move(reply);
          continue;
        }
        send_all(fd, reply);
        if (held) {
          send_all(fd, *held);
          held.reset();
          ++swapped_;
        }
      } else if (type == -11) {  // closeSession
        send_all(fd, framed(header(xid, 0)));
        return;
      } else {  // ping (11) and anything else: an empty answer
        send_all(fd, framed(header(xid, type == 11 ? 0 : -6)));  // -6: ZUNIMPLEMENTED
      }
    }
  }

  Plan plan_;
  std::atomic<int> swaps_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> document_reads_{0};
  std::atomic<int> swapped_{0};
  std::thread thread_;
};

// The last segment of a znode path: what the plans key their answers on.
std::string leaf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Answers every document with its own name.
Answer by_name(const std::string& path) { return {.data = "doc " + leaf(path)}; }

// A store on the fake: no credential, no root to create, retries on a fake
// clock (its pauses take no time), each attempt's wait on the real one.
// `backoff`, when given, is the first pause's and the cap of those after
// it (each pause is half to all of its backoff, which doubles).
struct Backoff {
  std::chrono::milliseconds initial;
  std::chrono::milliseconds max;
};
std::shared_ptr<Store> store_on(const FakeZookeeper& fake, std::chrono::milliseconds retry_deadline,
                                std::chrono::milliseconds request_timeout = 2000ms,
                                std::optional<Backoff> backoff = std::nullopt) {
  ZookeeperStoreOptions options;
  if (backoff) {
    options.initial_backoff = backoff->initial;
    options.max_backoff = backoff->max;
  }
  options.servers = "127.0.0.1:" + std::to_string(fake.port());
  options.root = "/fake";
  options.create_root = false;
  options.session_timeout = 10000ms;
  options.retry_deadline = retry_deadline;
  options.request_timeout = request_timeout;
  options.clock = std::make_shared<FakeClock>();
  return make_zookeeper_store(options).value();
}

const std::vector<Key> kThree{key("instances/a"), key("instances/b"), key("instances/c")};

TEST(ZookeeperReplies, AnAnswerOutOfOrderDropsTheConnectionAndTheBatchIsReadAgain) {
  FakeZookeeper fake(by_name, 1);
  ASSERT_GT(fake.port(), 0);
  auto store = store_on(fake, 5000ms);
  auto many = store->get_many(kThree);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), 3u);
  EXPECT_EQ((*many)[0].value().data, "doc a");
  EXPECT_EQ((*many)[1].value().data, "doc b");
  EXPECT_EQ((*many)[2].value().data, "doc c");
  EXPECT_EQ(fake.swapped(), 1) << "the fake sent two answers out of order";
  EXPECT_GE(fake.connections(), 2) << "the client dropped the connection that misbehaved";
  EXPECT_GE(fake.document_reads(), 5) << "the batch was read again";
}

TEST(ZookeeperReplies, AnswersAlwaysOutOfOrderFailAsUnavailable) {
  FakeZookeeper fake(by_name, 1000);
  ASSERT_GT(fake.port(), 0);
  // Exactly two attempts, each with at least 1 s of real time to be
  // answered in: the first has the request timeout (2 s); the first pause
  // (2 to 4 s on the fake clock, of a 5 s deadline) leaves the second 1 to
  // 3 s; the next pause (4 to 8 s) would pass the deadline. So the last
  // failure is the server's disorder even on a loaded machine, never a
  // timeout of the attempt's own (with the default pauses a last attempt
  // could be held to the retry floor, 200 ms, and once timed out under the
  // suite's load).
  auto store = store_on(fake, 5000ms, 2000ms, Backoff{4000ms, 8000ms});
  auto many = store->get_many(kThree);
  ASSERT_FALSE(many.has_value());
  EXPECT_EQ(many.error().code, Errc::unavailable) << many.error().message;
  EXPECT_NE(many.error().message.find("ZRUNTIMEINCONSISTENCY (the server's answers came out of "
                                      "order: the client dropped its connection"),
            std::string::npos)
      << many.error().message;
  EXPECT_NE(many.error().message.find("(gave up after 2 attempts)"), std::string::npos)
      << many.error().message;
  EXPECT_GE(fake.swapped(), 2);
}

TEST(ZookeeperReplies, AnAnswerThatNeverComesIsATimeoutNotAHang) {
  // The server stalls at b: neither b's answer nor c's comes (nor a ping's).
  FakeZookeeper fake([](const std::string& path) {
    Answer a = by_name(path);
    a.withhold = leaf(path) == "b";
    return a;
  });
  ASSERT_GT(fake.port(), 0);
  auto store = store_on(fake, 1ms, 300ms);  // one attempt
  auto many = store->get_many(kThree);
  ASSERT_FALSE(many.has_value());
  EXPECT_EQ(many.error().code, Errc::timeout) << many.error().message;
  EXPECT_NE(many.error().message.find("no answer within 300 ms (timed out) for 2 of its 3 reads"),
            std::string::npos)
      << many.error().message;
}

TEST(ZookeeperReplies, AMalformedAnswerIsThatKeysErrorAsGetGivesIt) {
  FakeZookeeper fake([](const std::string& path) {
    const std::string name = leaf(path);
    Answer a = by_name(path);
    if (name == "short") a.data_length = 3;  // 9 bytes for a znode of 3
    if (name == "long") a.data_length = 40;  // fewer bytes than the Stat says
    if (name == "huge") a.data_length = 2 << 20;
    if (name == "ephemeral") a.ephemeral_owner = 0x77;
    if (name == "gone") a.err = -101;     // ZNONODE
    if (name == "noauth") a.err = -102;   // ZNOAUTH
    if (name == "strange") a.err = -999;  // no code ZooKeeper has
    return a;
  });
  ASSERT_GT(fake.port(), 0);
  auto store = store_on(fake, 1000ms);
  const std::vector<std::pair<std::string, std::optional<Errc>>> cases{
      {"ok", std::nullopt},         {"short", Errc::malformed},     {"long", Errc::malformed},
      {"huge", Errc::malformed},    {"ephemeral", Errc::malformed}, {"gone", Errc::not_found},
      {"noauth", Errc::permission}, {"strange", Errc::unavailable}, {"ok2", std::nullopt}};
  std::vector<Key> keys;
  for (const auto& [name, code] : cases) keys.push_back(key("instances/" + name));
  auto many = store->get_many(keys);
  ASSERT_TRUE(many.has_value()) << many.error().message;
  ASSERT_EQ(many->size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& [name, code] = cases[i];
    const auto& got = (*many)[i];
    auto one = store->get(keys[i]);
    if (!code) {
      ASSERT_TRUE(got.has_value()) << name << ": " << got.error().message;
      EXPECT_EQ(got->data, "doc " + name);
      EXPECT_EQ(got->version, "7.3");
      ASSERT_TRUE(one.has_value()) << name << ": " << one.error().message;
      EXPECT_EQ(one->data, got->data);
      continue;
    }
    ASSERT_FALSE(got.has_value()) << name;
    EXPECT_EQ(got.error().code, *code) << name << ": " << got.error().message;
    EXPECT_NE(got.error().message.find("instances/" + name), std::string::npos)
        << got.error().message;
    ASSERT_FALSE(one.has_value()) << name;
    EXPECT_EQ(one.error().code, got.error().code) << name << ": " << one.error().message;
    EXPECT_EQ(one.error().message, got.error().message) << name;
  }
  EXPECT_NE((*many)[1].error().message.find("answered 9 bytes for a znode of 3"), std::string::npos)
      << (*many)[1].error().message;
}

}  // namespace
}  // namespace instance::testing
