// One libpq connection with deadlines: connects and runs parameterised
// statements without ever blocking past a given steady-clock deadline
// (non-blocking connect, poll() on the socket while waiting for a reply).
//
// Every parameter travels in binary format with an explicit type; results
// come back in binary format (text columns as their raw bytes).
//
// Not thread-safe (a PGconn is not): the store serialises all calls.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "instance/error.hpp"

struct pg_conn;

namespace instance::postgres {

using SteadyTime = std::chrono::steady_clock::time_point;

inline constexpr unsigned kTextOid = 25;
inline constexpr unsigned kByteaOid = 17;

struct Param {
  std::string_view bytes;
  unsigned oid = kTextOid;
};

// One row: each column's bytes, nullopt for SQL NULL.
using Row = std::vector<std::optional<std::string>>;

// The result of one attempt.
struct Outcome {
  enum Kind {
    ok,         // the statement ran; rows holds what it returned
    sql_error,  // the server refused it (sqlstate, message); the connection is fine
    transport,  // no connection, or it broke: the connection was dropped
    timeout,    // no answer by the deadline: the connection was dropped
  } kind = ok;
  std::vector<Row> rows;
  std::string sqlstate;  // sql_error (or a connection refused for a known reason)
  std::string message;   // one line, from libpq or the server
  bool sent = false;     // the statement left us whole: the server may have run it
};

class Connection {
 public:
  // `params`: libpq keywords and values; `password` added when non-empty.
  Connection(std::vector<std::pair<std::string, std::string>> params, std::string password);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool connected() const noexcept { return conn_ != nullptr; }

  // Connects unless connected. A refused login is a sql_error with sqlstate
  // 28P01 (bad password or role) or 3D000 (no such database), told from
  // libpq's message; every other failure is transport or timeout.
  Outcome connect(SteadyTime deadline);

  // Runs one statement with parameters. A statement run a second time on
  // this connection is prepared then (once, one round trip) and from then on
  // runs without being parsed again (and, once the server settles on a
  // generic plan, planned again); the first run sends it unnamed, so a
  // statement run once costs no extra round trip. Names come from the
  // statement's text, so behind a pooler that shares server connections
  // one name is one statement. A server that does not keep what was
  // prepared (a pooler in transaction mode) turns it off for this
  // connection.
  Outcome run(const char* sql, std::span<const Param> params, SteadyTime deadline);
  // Runs a parameterless string of several statements (a simple query).
  Outcome run_simple(const char* sql, SteadyTime deadline);

  void drop() noexcept;

  // LISTEN's notifications. socket: the descriptor to poll() (-1 when not
  // connected); consume_input reads what the server sent without waiting
  // (false, the connection dropped and `why` set, when it broke);
  // next_notification: the payload of one notification received, oldest
  // first.
  int socket() const noexcept;
  bool consume_input(std::string& why);
  std::optional<std::string> next_notification();

 private:
  Outcome collect(SteadyTime deadline);
  Outcome broken(std::string why, bool sent);
  // Prepares `sql` as `name`: ok when it is (or already was) known to the
  // server; sql_error when the server refused (preparing is then off for
  // this connection); transport or timeout when the attempt broke (the
  // statement has not run).
  Outcome prepare(const std::string& name, const char* sql, std::span<const unsigned> oids,
                  SteadyTime deadline);

  std::vector<std::pair<std::string, std::string>> params_;
  std::string password_;
  pg_conn* conn_ = nullptr;
  // Per server session (cleared when the connection drops): each
  // statement's runs, and whether it is prepared (under prepared_name()).
  struct Statement {
    int runs = 0;
    bool prepared = false;
  };
  std::unordered_map<std::string, Statement> statements_;
  bool preparing_ = true;
};

// The name a statement is prepared under: from its text alone.
std::string prepared_name(std::string_view sql);

// SQLSTATE -> the store's error code.
Errc map_sqlstate(std::string_view sqlstate);

// Whether another attempt may succeed: a broken or missing connection, a
// timeout, a server starting up or shutting down, a serialization failure or
// deadlock, too many connections.
bool is_retryable(const Outcome& outcome);

}  // namespace instance::postgres
