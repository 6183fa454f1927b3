// One ZooKeeper session (a zhandle of the C client) and what its events told.
// Internal to the ZooKeeper store. The C client's calls are thread-safe; the
// state is kept under a mutex.
#pragma once

// The synchronous calls of libzookeeper_mt are declared only for a threaded
// build of the client.
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

namespace instance::zk {

enum class SessionState { connecting, connected, expired, auth_failed, closed };

// One getData's answer, as the C client handed it over.
struct DataReply {
  bool answered = false;  // false: no answer came in the time allowed
  int rc = ZOK;
  std::string data;       // the value (empty when the znode holds none)
  bool has_stat = false;  // the answer carried a Stat
  Stat stat{};
};

struct ReplySlot;

class Session {
 public:
  // Starts connecting to `servers` ("h:p,h:p") asking for `timeout`, adding
  // `digest` ("user:password", or empty) as its credential. Null when the
  // client refuses the arguments (`error` says why, without the digest).
  static std::unique_ptr<Session> open(const std::string& servers,
                                       std::chrono::milliseconds timeout, const std::string& digest,
                                       std::string& error);
  ~Session();  // closes the session: its ephemeral znodes go at once
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Waits up to `wait` for the session to leave `connecting`; the state then.
  // The first time it is connected, the digest is added (and its answer
  // awaited): the client keeps it and sends it again on every reconnection.
  SessionState wait_ready(std::chrono::milliseconds wait);
  SessionState state() const;
  zhandle_t* handle() const noexcept { return zh_; }
  // The session id, once connected (0 before).
  std::int64_t id() const;
  // The timeout the server agreed to, once connected (the one asked before).
  std::chrono::milliseconds negotiated() const;

  // Sends a getData (no watch) for every path at once, then waits up to
  // `wait` for their answers: one round trip. ZooKeeper answers the requests
  // of one session in order; the C client matches each answer to its request
  // by xid, and on an answer out of order drops the connection, which fails
  // every request still waiting with ZCONNECTIONLOSS. Each answer is its own
  // packet, so none is larger than one znode's. The answers in the order of
  // `paths`; those that did not come within `wait` are not `answered` (and
  // are dropped when they come later).
  std::vector<DataReply> get_all(std::span<const std::string> paths,
                                 std::chrono::milliseconds wait);

 private:
  Session() = default;
  static void on_event(zhandle_t* zh, int type, int state, const char* path, void* context);
  static void on_auth(int rc, const void* data);
  static void on_data(int rc, const char* value, int length, const Stat* stat, const void* data);
  zhandle_t* zh_ = nullptr;
  std::chrono::milliseconds asked_{};
  mutable std::mutex mu_;
  std::condition_variable changed_;
  SessionState state_ = SessionState::connecting;
  std::string digest_;
  enum class Auth { none, sent, done } auth_ = Auth::none;  // guarded by mu_
  // The getData requests sent and not yet completed. The client may never
  // run a request's completion when the session is closed with it waiting
  // (its completion thread stops first); the destructor frees those.
  std::mutex slots_mu_;
  std::unordered_set<ReplySlot*> in_flight_;  // guarded by slots_mu_
};

// How a C client return code reads: its name ("ZCONNECTIONLOSS"; the number
// for a code the client does not name), and whether the request may have
// been carried out without an answer.
std::string rc_name(int rc);
// The connection failed, the session may live on: lost, timed out, closing,
// or dropped by the client on an answer out of order (ZRUNTIMEINCONSISTENCY).
bool rc_connection(int rc) noexcept;

}  // namespace instance::zk
