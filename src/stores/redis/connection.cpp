#include "connection.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "instance/sdk/attempts.hpp"

namespace instance::redis {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis reports a socket timeout as an I/O error with EAGAIN's text.
bool looks_like_timeout(const redisContext& c) {
  const std::string_view text = c.errstr;
  return text.find("temporarily unavailable") != std::string_view::npos ||
         text.find("timed out") != std::string_view::npos;
}

}  // namespace

void ReplyDeleter::operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }

ReplyType type_of(const redisReply& reply) noexcept {
  switch (reply.type) {
    case REDIS_REPLY_STRING:
      return ReplyType::string;
    case REDIS_REPLY_ARRAY:
      return ReplyType::array;
    case REDIS_REPLY_INTEGER:
      return ReplyType::integer;
    case REDIS_REPLY_NIL:
      return ReplyType::nil;
    case REDIS_REPLY_STATUS:
      return ReplyType::status;
    case REDIS_REPLY_ERROR:
      return ReplyType::error;
    default:
      return ReplyType::other;
  }
}

std::string_view text_of(const redisReply& reply) noexcept {
  if (reply.str == nullptr) return {};
  return {reply.str, reply.len};
}

long long integer_of(const redisReply& reply) noexcept { return reply.integer; }
std::size_t size_of(const redisReply& reply) noexcept {
  return reply.type == REDIS_REPLY_ARRAY ? reply.elements : 0;
}
const redisReply& element(const redisReply& reply, std::size_t i) noexcept {
  return *reply.element[i];
}

std::unique_ptr<Connection> Connection::open(const std::string& host, int port,
                                             std::chrono::milliseconds connect_timeout,
                                             std::chrono::milliseconds command_timeout,
                                             TransportError& error) {
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, to_timeval(connect_timeout));
  if (c == nullptr) {
    error = {"cannot allocate a connection", false, false};
    return nullptr;
  }
  if (c->err != 0) {
    const bool timed_out = looks_like_timeout(*c);
    error = {"cannot connect: " +
                 (timed_out ? net::no_answer_within(connect_timeout) : std::string(c->errstr)),
             timed_out, false};
    redisFree(c);
    return nullptr;
  }
  // The guard forks children; they must not inherit the connection.
  if (const int flags = ::fcntl(c->fd, F_GETFD); flags >= 0) {
    (void)::fcntl(c->fd, F_SETFD, flags | FD_CLOEXEC);
  }
  if (redisSetTimeout(c, to_timeval(command_timeout)) != REDIS_OK) {
    error = {std::string("cannot set the socket timeout: ") + c->errstr, false, false};
    redisFree(c);
    return nullptr;
  }
  (void)redisEnableKeepAlive(c);
  return std::unique_ptr<Connection>(new Connection(c, command_timeout));
}

Connection::~Connection() { redisFree(context_); }

bool Connection::set_timeout(std::chrono::milliseconds command_timeout, TransportError& error) {
  if (command_timeout == timeout_) return true;
  if (redisSetTimeout(context_, to_timeval(command_timeout)) != REDIS_OK) {
    error = {std::string("cannot set the socket timeout: ") + context_->errstr, false, false};
    return false;
  }
  timeout_ = command_timeout;
  return true;
}

int Connection::fd() const noexcept { return context_->fd; }

ReplyPtr Connection::next_reply(TransportError& error) {
  void* raw = nullptr;
  if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
    const bool timed_out = looks_like_timeout(*context_);
    error = {timed_out            ? net::no_answer_within(timeout_)
             : context_->err != 0 ? std::string(context_->errstr)
                                  : "connection lost",
             timed_out, true};
    return nullptr;
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

ReplyPtr Connection::buffered(TransportError& error) {
  void* raw = nullptr;
  if (redisReaderGetReply(context_->reader, &raw) != REDIS_OK) {
    error = {"cannot read the server's reply: " + std::string(context_->reader->errstr), false,
             true};
    return nullptr;
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

bool Connection::read_available(TransportError& error) {
  if (redisBufferRead(context_) != REDIS_OK) {
    error = {context_->err != 0 ? std::string(context_->errstr) : "connection lost", false, true};
    if (error.message.empty()) error.message = "connection lost";
    return false;
  }
  return true;
}

ReplyPtr Connection::command(const std::vector<std::string_view>& args, TransportError& error) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  void* raw =
      redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data());
  if (raw == nullptr) {
    // hiredis words a socket timeout as EAGAIN ("Resource temporarily
    // unavailable"): say what happened instead.
    const bool timed_out = looks_like_timeout(*context_);
    error = {timed_out            ? net::no_answer_within(timeout_)
             : context_->err != 0 ? std::string(context_->errstr)
                                  : "no reply",
             timed_out, true};
    if (error.message.empty()) error.message = "connection lost";
    return nullptr;
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

}  // namespace instance::redis
