#include "connection.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>

#include "instance/sdk/attempts.hpp"

namespace instance::postgres {
namespace {

// How long a wait from `started` to `deadline` lasted, for a timeout's message.
std::chrono::milliseconds waited(SteadyTime started, SteadyTime deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - started);
}

// libpq's messages end with a newline and may span lines (a hint on the
// next, indented); one line, trimmed, for our messages.
std::string one_line(const char* text) {
  std::string out;
  bool line_break = false;  // a line ended: "; " before the next text
  bool space = false;       // a tab: " " before the next text
  for (const char* p = text ? text : ""; *p != '\0'; ++p) {
    const char c = *p;
    if (c == '\n' || c == '\r') {
      line_break = true;
    } else if (c == '\t') {
      space = true;
    } else {
      if (!out.empty() && line_break) {
        out += "; ";
      } else if (!out.empty() && space && out.back() != ' ') {
        out += ' ';
      }
      line_break = space = false;
      out.push_back(c);
    }
  }
  return out;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Waits until `fd` is ready for `events` or the deadline passes.
bool wait_fd(int fd, short events, SteadyTime deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let libpq find the error
  }
}

// Notices (e.g. "relation already exists, skipping") are not for the user.
void ignore_notice(void*, const char*) {}

struct ResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

}  // namespace

Connection::Connection(std::vector<std::pair<std::string, std::string>> params,
                       std::string password)
    : params_(std::move(params)), password_(std::move(password)) {}

Connection::~Connection() { drop(); }

void Connection::drop() noexcept {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  statements_.clear();  // the server session that knew them is gone
}

int Connection::socket() const noexcept { return conn_ != nullptr ? PQsocket(conn_) : -1; }

bool Connection::consume_input(std::string& why) {
  if (conn_ == nullptr) {
    why = "not connected";
    return false;
  }
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) == CONNECTION_BAD) {
    why = one_line(PQerrorMessage(conn_));
    if (why.empty()) why = "connection lost";
    drop();
    return false;
  }
  return true;
}

std::optional<std::string> Connection::next_notification() {
  if (conn_ == nullptr) return std::nullopt;
  PGnotify* n = PQnotifies(conn_);
  if (n == nullptr) return std::nullopt;
  std::string payload = n->extra != nullptr ? n->extra : "";
  PQfreemem(n);
  return payload;
}

Outcome Connection::broken(std::string why, bool sent) {
  drop();
  return Outcome{.kind = Outcome::transport, .message = std::move(why), .sent = sent};
}

Outcome Connection::connect(SteadyTime deadline) {
  if (conn_ != nullptr) return {};
  const SteadyTime started = std::chrono::steady_clock::now();
  std::vector<const char*> keywords;
  std::vector<const char*> values;
  for (const auto& [k, v] : params_) {
    keywords.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  if (!password_.empty()) {
    keywords.push_back("password");
    values.push_back(password_.c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectStartParams(keywords.data(), values.data(), 0);
  if (conn_ == nullptr) return broken("libpq could not allocate a connection", false);
  if (PQstatus(conn_) == CONNECTION_BAD) return broken(one_line(PQerrorMessage(conn_)), false);
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
  PostgresPollingStatusType state = PGRES_POLLING_WRITING;
  while (state != PGRES_POLLING_OK) {
    if (state == PGRES_POLLING_FAILED) {
      std::string why = one_line(PQerrorMessage(conn_));
      drop();
      Outcome out{.kind = Outcome::transport, .message = why};
      // libpq keeps no SQLSTATE for a refused login; its message says why.
      if (contains(why, "authentication failed") || contains(why, "no password supplied") ||
          (contains(why, "role \"") && contains(why, "does not exist")) ||
          contains(why, "no pg_hba.conf entry")) {
        out.kind = Outcome::sql_error;
        out.sqlstate = "28P01";
      } else if (contains(why, "database \"") && contains(why, "does not exist")) {
        out.kind = Outcome::sql_error;
        out.sqlstate = "3D000";
      }
      return out;
    }
    const short events = state == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    if (!wait_fd(PQsocket(conn_), events, deadline)) {
      drop();
      return Outcome{
          .kind = Outcome::timeout,
          .message = "cannot connect: " + net::no_answer_within(waited(started, deadline))};
    }
    state = PQconnectPoll(conn_);
  }
  return {};
}

Outcome Connection::run(const char* sql, std::span<const Param> params, SteadyTime deadline) {
  if (conn_ == nullptr) return Outcome{.kind = Outcome::transport, .message = "not connected"};
  std::vector<unsigned> oids;
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (const auto& p : params) {
    oids.push_back(p.oid);
    // A zero-length binary value still needs a non-null pointer (null is SQL NULL).
    values.push_back(p.bytes.data() != nullptr ? p.bytes.data() : "");
    lengths.push_back(static_cast<int>(p.bytes.size()));
    formats.push_back(1);
  }
  const int n = static_cast<int>(params.size());
  auto unnamed = [&] {
    if (PQsendQueryParams(conn_, sql, n, oids.data(), values.data(), lengths.data(), formats.data(),
                          1) == 0) {
      return broken(one_line(PQerrorMessage(conn_)), false);
    }
    return collect(deadline);
  };
  if (!preparing_) return unnamed();
  Statement& statement = statements_[sql];
  const std::string name = prepared_name(sql);
  if (!statement.prepared && ++statement.runs >= 2) {
    // (A failed prepare clears statements_: `statement` is only used again
    // after a success.)
    Outcome prepared = prepare(name, sql, oids, deadline);
    if (prepared.kind == Outcome::sql_error) return unnamed();  // refused: preparing is off
    if (prepared.kind != Outcome::ok) return prepared;  // broke or timed out first: nothing ran
    statement.prepared = true;
  }
  if (!statement.prepared) return unnamed();
  if (PQsendQueryPrepared(conn_, name.c_str(), n, values.data(), lengths.data(), formats.data(),
                          1) == 0) {
    return broken(one_line(PQerrorMessage(conn_)), false);
  }
  Outcome out = collect(deadline);
  if (out.kind == Outcome::sql_error && out.sqlstate == "26000") {
    // "prepared statement does not exist": this session is not the one we
    // prepared it on (a pooler in transaction mode). Nothing ran; from now
    // on every statement goes unnamed on this connection.
    preparing_ = false;
    statements_.clear();
    return unnamed();
  }
  return out;
}

// A hash of the text (and its length), so that two processes whose pooler
// hands them one server session agree on what a name means.
std::string prepared_name(std::string_view sql) {
  char name[48];
  std::snprintf(name, sizeof name, "ig_%016zx_%zu", std::hash<std::string_view>{}(sql), sql.size());
  return name;
}

Outcome Connection::prepare(const std::string& name, const char* sql,
                            std::span<const unsigned> oids, SteadyTime deadline) {
  if (PQsendPrepare(conn_, name.c_str(), sql, static_cast<int>(oids.size()), oids.data()) == 0) {
    return broken(one_line(PQerrorMessage(conn_)), false);
  }
  Outcome out = collect(deadline);
  out.sent = false;  // a Parse runs nothing
  if (out.kind != Outcome::sql_error) return out;
  // 42P05: already prepared in this session under that name, which is that
  // text's (another client's, behind a pooler).
  if (out.sqlstate == "42P05") return Outcome{};
  preparing_ = false;  // refused: the statement runs unnamed, as it always could
  statements_.clear();
  return out;
}

Outcome Connection::run_simple(const char* sql, SteadyTime deadline) {
  if (conn_ == nullptr) return Outcome{.kind = Outcome::transport, .message = "not connected"};
  if (PQsendQuery(conn_, sql) == 0) return broken(one_line(PQerrorMessage(conn_)), false);
  return collect(deadline);
}

Outcome Connection::collect(SteadyTime deadline) {
  const SteadyTime started = std::chrono::steady_clock::now();
  Outcome out{.sent = true};
  bool failed = false;
  while (true) {
    while (PQisBusy(conn_) != 0) {
      if (!wait_fd(PQsocket(conn_), POLLIN, deadline)) {
        drop();
        return Outcome{.kind = Outcome::timeout,
                       .message = net::no_answer_within(waited(started, deadline)),
                       .sent = true};
      }
      if (PQconsumeInput(conn_) == 0) return broken(one_line(PQerrorMessage(conn_)), true);
    }
    ResultPtr result(PQgetResult(conn_));
    if (!result) break;
    if (failed) continue;  // drain the rest
    switch (PQresultStatus(result.get())) {
      case PGRES_TUPLES_OK: {
        out.rows.clear();
        const int rows = PQntuples(result.get());
        const int cols = PQnfields(result.get());
        for (int r = 0; r < rows; ++r) {
          Row row;
          for (int c = 0; c < cols; ++c) {
            if (PQgetisnull(result.get(), r, c) != 0) {
              row.emplace_back();
            } else {
              row.emplace_back(
                  std::string(PQgetvalue(result.get(), r, c),
                              static_cast<std::size_t>(PQgetlength(result.get(), r, c))));
            }
          }
          out.rows.push_back(std::move(row));
        }
        break;
      }
      case PGRES_COMMAND_OK:
        break;
      default: {
        failed = true;
        const char* state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
        const char* primary = PQresultErrorField(result.get(), PG_DIAG_MESSAGE_PRIMARY);
        out.kind = Outcome::sql_error;
        out.sqlstate = state != nullptr ? state : "";
        out.message = one_line(primary != nullptr ? primary : PQresultErrorMessage(result.get()));
        if (out.message.empty()) out.message = one_line(PQerrorMessage(conn_));
        break;
      }
    }
  }
  // An error without a SQLSTATE comes from libpq itself (the connection
  // broke); so does any error that leaves the connection bad.
  if (PQstatus(conn_) == CONNECTION_BAD) {
    std::string why = out.message.empty() ? one_line(PQerrorMessage(conn_)) : out.message;
    return broken(std::move(why), true);
  }
  if (out.kind == Outcome::sql_error && out.sqlstate.empty()) {
    return broken(std::move(out.message), true);
  }
  return out;
}

Errc map_sqlstate(std::string_view s) {
  // 25006: a read-only transaction (a standby, or a demoted primary): the
  // next connection finds the writable host.
  if (s.starts_with("08") || s == "25006" || s == "57P01" || s == "57P02" || s == "57P03" ||
      s == "53300" || s == "40001" || s == "40P01") {
    return Errc::unavailable;
  }
  if (s.starts_with("28") || s == "42501") return Errc::permission;
  if (s == "53100") return Errc::no_space;
  if (s == "57014") return Errc::timeout;
  if (s == "3D000" || s == "42P01" || s == "42703" || s == "42804") return Errc::invalid;
  if (s == "23505") return Errc::already_exists;
  return Errc::internal;
}

bool is_retryable(const Outcome& outcome) {
  switch (outcome.kind) {
    case Outcome::ok:
      return false;
    case Outcome::transport:
    case Outcome::timeout:
      return true;
    case Outcome::sql_error:
      return map_sqlstate(outcome.sqlstate) == Errc::unavailable;
  }
  return false;
}

}  // namespace instance::postgres
