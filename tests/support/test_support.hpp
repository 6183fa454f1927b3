// Shared helpers for the tests: a key from its escaped text, a logger that
// keeps every line, and a store wrapper whose operations can be made to fail
// one by one.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "instance/key.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/store_wrapper.hpp"
#include "instance/store.hpp"

namespace instance::testing {

// The key `escaped` names; the test stops with an exception when it is not one.
inline Key key(std::string_view escaped) { return Key::parse(escaped).value(); }

// Open options whose environment is `env` alone (for URL parsers'
// credential lookups), not the process's.
inline OpenOptions env_only(std::map<std::string, std::string> env) {
  OpenOptions o;
  o.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    if (auto it = env.find(std::string(name)); it != env.end()) return it->second;
    return std::nullopt;
  };
  return o;
}

// Keeps every log line, at every level.
class CapturingLogger final : public Logger {
 public:
  struct Line {
    LogLevel level;
    std::string message;
    std::vector<LogField> fields;
    // "message k=v ..."
    std::string text() const {
      std::string out = message;
      for (const auto& f : fields) out += " " + f.key + "=" + f.value;
      return out;
    }
    // "level message k=v ..."
    std::string formatted() const { return std::string(to_string(level)) + " " + text(); }
  };
  void log(LogLevel level, std::string_view message, std::span<const LogField> fields) override {
    std::lock_guard lock(mu_);
    lines_.push_back({level, std::string(message), {fields.begin(), fields.end()}});
  }
  std::vector<Line> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // Every line as "level message k=v ...".
  std::vector<std::string> formatted() const {
    std::vector<std::string> out;
    for (const auto& l : lines()) out.push_back(l.formatted());
    return out;
  }
  // The lines at `level`, formatted.
  std::vector<std::string> lines_at(LogLevel level) const {
    std::vector<std::string> out;
    for (const auto& l : lines()) {
      if (l.level == level) out.push_back(l.formatted());
    }
    return out;
  }
  bool contains(std::string_view needle) const {
    for (const auto& l : lines()) {
      if (l.text().find(needle) != std::string::npos) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Line> lines_;
};

enum class Op { get, create, replace, remove, list, replace_if, remove_if };

// Fails the chosen operations with the chosen error until told otherwise,
// and counts every call.
class FailingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  void fail_on(Op op, Errc code, std::function<bool(const Key&)> when = nullptr) {
    std::lock_guard lock(mu_);
    rules_.push_back({op, code, std::move(when)});
  }
  void heal() {
    std::lock_guard lock(mu_);
    rules_.clear();
  }
  int calls(Op op) const {
    std::lock_guard lock(mu_);
    return counts_[static_cast<int>(op)];
  }

  Result<Document> get(const Key& k) override {
    if (auto e = check(Op::get, k)) return std::unexpected(*e);
    return StoreWrapper::get(k);
  }
  // Each key read as get() reads it, so get's failures reach a batch too.
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    return Store::get_many(keys);
  }
  // Listed and read as list() and get() do, so their failures reach it too.
  Result<std::vector<std::pair<Key, Result<Document>>>> get_all(const Key& prefix) override {
    return Store::get_all(prefix);
  }
  Result<std::string> create(const Key& k, std::string_view d) override {
    if (auto e = check(Op::create, k)) return std::unexpected(*e);
    return StoreWrapper::create(k, d);
  }
  Result<std::string> replace(const Key& k, std::string_view d) override {
    if (auto e = check(Op::replace, k)) return std::unexpected(*e);
    return StoreWrapper::replace(k, d);
  }
  Result<void> remove(const Key& k) override {
    if (auto e = check(Op::remove, k)) return std::unexpected(*e);
    return StoreWrapper::remove(k);
  }
  Result<std::vector<Key>> list(const Key& k) override {
    if (auto e = check(Op::list, k)) return std::unexpected(*e);
    return StoreWrapper::list(k);
  }
  Result<std::string> replace_if(const Key& k, std::string_view d, std::string_view v) override {
    if (auto e = check(Op::replace_if, k)) return std::unexpected(*e);
    return StoreWrapper::replace_if(k, d, v);
  }
  Result<void> remove_if(const Key& k, std::string_view v) override {
    if (auto e = check(Op::remove_if, k)) return std::unexpected(*e);
    return StoreWrapper::remove_if(k, v);
  }

 private:
  struct Rule {
    Op op;
    Errc code;
    std::function<bool(const Key&)> when;
  };
  std::optional<Error> check(Op op, const Key& key) {
    std::lock_guard lock(mu_);
    ++counts_[static_cast<int>(op)];
    for (const auto& r : rules_) {
      if (r.op == op && (!r.when || r.when(key))) {
        return Error{r.code, "injected " + std::string(to_string(r.code)) + " on " + key.str()};
      }
    }
    return std::nullopt;
  }
  mutable std::mutex mu_;
  std::vector<Rule> rules_;
  int counts_[7] = {};
};

}  // namespace instance::testing
