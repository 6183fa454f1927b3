// One hiredis connection, and the replies it gets. Internal to the Redis
// store; not thread-safe (the store serialises calls under its mutex).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;
struct redisReply;

namespace instance::redis {

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// What a reply is, without hiredis's header.
enum class ReplyType { string, array, integer, nil, status, error, other };
ReplyType type_of(const redisReply& reply) noexcept;
std::string_view text_of(const redisReply& reply) noexcept;  // string, status, error
long long integer_of(const redisReply& reply) noexcept;
std::size_t size_of(const redisReply& reply) noexcept;  // array elements
const redisReply& element(const redisReply& reply, std::size_t i) noexcept;

// A transport failure: no reply at all (kept apart from "the server said").
struct TransportError {
  std::string message;
  bool timed_out = false;
  bool maybe_sent = false;  // the command may have reached the server
};

class Connection {
 public:
  // Connects with `connect_timeout`, sets `command_timeout` on the socket
  // (close-on-exec, keep-alive). Errors are transport errors (no AUTH yet).
  static std::unique_ptr<Connection> open(const std::string& host, int port,
                                          std::chrono::milliseconds connect_timeout,
                                          std::chrono::milliseconds command_timeout,
                                          TransportError& error);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sets the socket timeout for the next commands (a no-op when it is
  // already `command_timeout`); false with `error` set when it cannot (the
  // connection is then unusable).
  bool set_timeout(std::chrono::milliseconds command_timeout, TransportError& error);

  // Sends one command (binary-safe arguments) and reads its reply; null with
  // `error` set when the connection failed (it is then unusable).
  ReplyPtr command(const std::vector<std::string_view>& args, TransportError& error);

  // For a subscribed connection, whose replies come when the server sends
  // them. next_reply reads the next one, waiting up to the socket timeout;
  // buffered returns one already read (null when none: `error` then set
  // only when the stream cannot be parsed); read_available reads what the
  // socket holds (after poll() found it readable). Null or false with
  // `error` set: the connection failed and is unusable.
  ReplyPtr next_reply(TransportError& error);
  ReplyPtr buffered(TransportError& error);
  bool read_available(TransportError& error);
  int fd() const noexcept;

 private:
  Connection(redisContext* context, std::chrono::milliseconds timeout)
      : context_(context), timeout_(timeout) {}
  redisContext* context_;
  std::chrono::milliseconds timeout_;  // the socket timeout in force
};

}  // namespace instance::redis
