// Store SDK. A few calls at once, for a store whose server answers several
// requests in parallel but has no request that reads many documents (WebDAV,
// CS3): its get_many() reads its keys on a few threads, each with a
// connection of its own, instead of one get() after another, so a scan of
// many records costs about its share of round trips rather than all of them.
//
// for_each_concurrently(n, width, call) calls call(i) for every i in
// [0, n), on at most `width` threads at once, the calling thread one of
// them; it returns when every call has returned. The calls take their
// indices in turn from a shared counter, so a slow one holds up only its
// own thread. With width 1 or n below 2 every call runs on the calling
// thread, in order, and no thread is started. A thread that cannot be
// started leaves its share to the others. `call` must not throw, and must
// be safe to run on several threads at once (a Store's operations are).
//
// get_concurrently(store, keys, width) is such a get_many(): each key as
// store.get() reads it, `width` at a time, the answers in the order of
// `keys`. The store's client must carry `width` requests at once (a
// connection each) for the reads to overlap. kConcurrentReads is the width
// the WebDAV and CS3 stores use, and so the connections their clients keep.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "instance/store.hpp"

namespace instance {

inline constexpr std::size_t kConcurrentReads = 4;

template <class Call>
void for_each_concurrently(std::size_t n, std::size_t width, Call&& call) {
  width = std::min(width, n);
  if (width <= 1) {
    for (std::size_t i = 0; i < n; ++i) call(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      call(i);
    }
  };
  std::vector<std::jthread> helpers;
  helpers.reserve(width - 1);
  for (std::size_t w = 1; w < width; ++w) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to spare: the ones started and this one share the rest
    }
  }
  work();
}  // the helpers join here

inline Result<std::vector<Result<Document>>> get_concurrently(Store& store,
                                                              std::span<const Key> keys,
                                                              std::size_t width) {
  std::vector<Result<Document>> out(keys.size(), Result<Document>(Document{}));
  for_each_concurrently(keys.size(), width, [&](std::size_t i) { out[i] = store.get(keys[i]); });
  return out;
}

}  // namespace instance
