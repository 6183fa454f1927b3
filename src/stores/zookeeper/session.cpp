#include "session.hpp"

namespace instance::zk {
namespace {

// The C client writes its own log to stderr, which is the tool's log: the
// store reports every failure itself, so the client's lines are dropped.
void quiet(const char*) {}

}  // namespace

// The answers of one get_all(), shared with the C client's completion
// thread: a completion may come after get_all() stopped waiting, and then
// finds `closed`.
struct Replies {
  std::mutex mu;
  std::condition_variable done;
  std::vector<DataReply> replies;  // guarded by mu
  std::size_t left = 0;            // guarded by mu
  bool closed = false;             // guarded by mu
};

// What one getData's completion needs. Handed to the C client with the
// request, freed by its completion; one whose completion never ran is
// freed with the session (see in_flight_).
struct ReplySlot {
  Session* session = nullptr;
  std::shared_ptr<Replies> replies;
  std::size_t index = 0;
};

void Session::on_data(int rc, const char* value, int length, const Stat* stat, const void* data) {
  std::unique_ptr<ReplySlot> slot(static_cast<ReplySlot*>(const_cast<void*>(data)));
  {
    std::lock_guard lock(slot->session->slots_mu_);
    slot->session->in_flight_.erase(slot.get());
  }
  Replies& all = *slot->replies;
  std::lock_guard lock(all.mu);
  if (all.closed || slot->index >= all.replies.size()) return;
  DataReply& reply = all.replies[slot->index];
  if (reply.answered) return;
  reply.answered = true;
  reply.rc = rc;
  if (rc == ZOK && value != nullptr && length > 0) reply.data.assign(value, value + length);
  if (stat != nullptr) {
    reply.has_stat = true;
    reply.stat = *stat;
  }
  if (--all.left == 0) all.done.notify_all();
}

std::unique_ptr<Session> Session::open(const std::string& servers,
                                       std::chrono::milliseconds timeout, const std::string& digest,
                                       std::string& error) {
  std::unique_ptr<Session> s(new Session());
  s->asked_ = timeout;
  s->zh_ = zookeeper_init2(servers.c_str(), &Session::on_event, static_cast<int>(timeout.count()),
                           nullptr, s.get(), 0, &quiet);
  if (s->zh_ == nullptr) {
    error = "the ZooKeeper client refused the server list (errno " + std::to_string(errno) + ")";
    return nullptr;
  }
  s->digest_ = digest;
  if (digest.empty()) s->auth_ = Auth::done;
  return s;
}

Session::~Session() {
  if (zh_ != nullptr) zookeeper_close(zh_);
  // No completion runs after the close returned (the client's threads are
  // joined). The client fails the requests still waiting with ZCLOSING on
  // its completion thread, but that thread may already have stopped: their
  // slots are freed here.
  std::lock_guard lock(slots_mu_);
  for (ReplySlot* slot : in_flight_) delete slot;
  in_flight_.clear();
}

void Session::on_event(zhandle_t*, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT || context == nullptr) return;
  auto* self = static_cast<Session*>(context);
  std::lock_guard lock(self->mu_);
  if (state == ZOO_CONNECTED_STATE) {
    self->state_ = SessionState::connected;
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    self->state_ = SessionState::expired;
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    self->state_ = SessionState::auth_failed;
  } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
    if (self->state_ == SessionState::connected) self->state_ = SessionState::connecting;
  }
  self->changed_.notify_all();
}

void Session::on_auth(int rc, const void* data) {
  auto* self = static_cast<Session*>(const_cast<void*>(data));
  std::lock_guard lock(self->mu_);
  if (rc == ZOK) {
    self->auth_ = Auth::done;
  } else {
    self->auth_ = Auth::none;  // asked again by the next wait
    if (rc == ZAUTHFAILED) self->state_ = SessionState::auth_failed;
  }
  self->changed_.notify_all();
}

SessionState Session::wait_ready(std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, until, [&] { return state_ != SessionState::connecting; });
  if (state_ != SessionState::connected || auth_ == Auth::done) return state_;
  if (auth_ == Auth::none) {
    auth_ = Auth::sent;
    lock.unlock();
    const int rc = zoo_add_auth(zh_, "digest", digest_.data(), static_cast<int>(digest_.size()),
                                &Session::on_auth, this);
    lock.lock();
    if (rc != ZOK) {
      auth_ = Auth::none;
      return SessionState::connecting;  // not usable yet: the caller tries again
    }
  }
  changed_.wait_until(lock, until, [&] { return auth_ != Auth::sent; });
  if (auth_ != Auth::done && state_ == SessionState::connected) return SessionState::connecting;
  return state_;
}

SessionState Session::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

std::int64_t Session::id() const {
  const clientid_t* client = zoo_client_id(zh_);
  return client != nullptr ? client->client_id : 0;
}

std::chrono::milliseconds Session::negotiated() const {
  const int ms = zoo_recv_timeout(zh_);
  return ms > 0 ? std::chrono::milliseconds(ms) : asked_;
}

std::vector<DataReply> Session::get_all(std::span<const std::string> paths,
                                        std::chrono::milliseconds wait) {
  auto all = std::make_shared<Replies>();
  std::unique_lock lock(all->mu);
  all->replies.resize(paths.size());
  all->left = paths.size();
  lock.unlock();
  for (std::size_t i = 0; i < paths.size(); ++i) {
    auto slot = std::make_unique<ReplySlot>(ReplySlot{.session = this, .replies = all, .index = i});
    {
      std::lock_guard slots(slots_mu_);
      in_flight_.insert(slot.get());
    }
    const int rc = zoo_aget(zh_, paths[i].c_str(), 0, &Session::on_data, slot.get());
    if (rc == ZOK) {
      (void)slot.release();  // the completion (or the session's end) frees it
      continue;
    }
    {
      std::lock_guard slots(slots_mu_);
      in_flight_.erase(slot.get());
    }
    // Not sent (the session closing, a path the client refuses): no
    // completion comes.
    lock.lock();
    DataReply& reply = all->replies[i];
    reply.answered = true;
    reply.rc = rc;
    --all->left;
    lock.unlock();
  }
  lock.lock();
  all->done.wait_for(lock, wait, [&] { return all->left == 0; });
  all->closed = true;
  return std::move(all->replies);
}

std::string rc_name(int rc) {
  switch (rc) {
    case ZSYSTEMERROR:
      return "ZSYSTEMERROR";
    case ZRUNTIMEINCONSISTENCY:
      return "ZRUNTIMEINCONSISTENCY";
    case ZDATAINCONSISTENCY:
      return "ZDATAINCONSISTENCY";
    case ZUNIMPLEMENTED:
      return "ZUNIMPLEMENTED";
    case ZSESSIONMOVED:
      return "ZSESSIONMOVED";
    case ZNOTREADONLY:
      return "ZNOTREADONLY";
    case ZTHROTTLEDOP:
      return "ZTHROTTLEDOP";
    case ZOK:
      return "ZOK";
    case ZNONODE:
      return "ZNONODE";
    case ZNODEEXISTS:
      return "ZNODEEXISTS";
    case ZBADVERSION:
      return "ZBADVERSION";
    case ZNOTEMPTY:
      return "ZNOTEMPTY";
    case ZNOAUTH:
      return "ZNOAUTH";
    case ZAUTHFAILED:
      return "ZAUTHFAILED";
    case ZCONNECTIONLOSS:
      return "ZCONNECTIONLOSS";
    case ZOPERATIONTIMEOUT:
      return "ZOPERATIONTIMEOUT";
    case ZSESSIONEXPIRED:
      return "ZSESSIONEXPIRED";
    case ZINVALIDSTATE:
      return "ZINVALIDSTATE";
    case ZMARSHALLINGERROR:
      return "ZMARSHALLINGERROR";
    case ZBADARGUMENTS:
      return "ZBADARGUMENTS";
    case ZNOCHILDRENFOREPHEMERALS:
      return "ZNOCHILDRENFOREPHEMERALS";
    case ZCLOSING:
      return "ZCLOSING";
    default:
      return "ZooKeeper error " + std::to_string(rc);
  }
}

bool rc_connection(int rc) noexcept {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZCLOSING ||
         rc == ZRUNTIMEINCONSISTENCY;
}

}  // namespace instance::zk
