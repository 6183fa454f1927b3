// The store contract: what the guard relies on, asserted for every store.
#include "contract/store_contract.hpp"

#include <algorithm>

namespace instance::testing {
namespace {

Key key(std::string_view escaped) { return Key::parse(escaped).value(); }

std::vector<std::string> names(std::vector<Key> keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(k.str());
  std::ranges::sort(out);
  return out;
}

TEST_P(StoreContract, GetOfAMissingKeyIsNotFound) {
  auto doc = store().get(key("instances/nobody"));
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::not_found) << doc.error().message;
}

TEST_P(StoreContract, CreateThenGetReturnsTheBytes) {
  ASSERT_TRUE(store().create(key("instances/a"), R"({"id":"a"})"));
  auto doc = store().get(key("instances/a"));
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->data, R"({"id":"a"})");
}

TEST_P(StoreContract, CreateFailsWhenTheKeyExists) {
  ASSERT_TRUE(store().create(key("instances/a"), "one"));
  auto again = store().create(key("instances/a"), "two");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::already_exists) << again.error().message;
  EXPECT_EQ(store().get(key("instances/a"))->data, "one");
}

TEST_P(StoreContract, ReplaceCreatesAndOverwrites) {
  ASSERT_TRUE(store().replace(key("instances/a"), "one"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "one");
  ASSERT_TRUE(store().replace(key("instances/a"), "two, longer"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "two, longer");
  ASSERT_TRUE(store().replace(key("instances/a"), "3"));
  EXPECT_EQ(store().get(key("instances/a"))->data, "3");
}

TEST_P(StoreContract, RemoveDeletesAndThenReportsNotFound) {
  ASSERT_TRUE(store().replace(key("instances/a"), "x"));
  ASSERT_TRUE(store().remove(key("instances/a")));
  EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found);
  auto again = store().remove(key("instances/a"));
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, Errc::not_found);
}

TEST_P(StoreContract, ListOfAMissingPrefixIsEmpty) {
  auto keys = store().list(key("instances"));
  ASSERT_TRUE(keys.has_value()) << keys.error().message;
  EXPECT_TRUE(keys->empty());
}

TEST_P(StoreContract, ListMatchesWholeSegmentsAndNestedFolders) {
  // No key is both a document and a folder: stores may be file systems.
  for (const char* k : {"a/b/c", "a/b/d/e", "a/bc", "a/bcd/x", "b/b", "ab"}) {
    ASSERT_TRUE(store().replace(key(k), k)) << k;
  }
  EXPECT_EQ(names(store().list(key("a/b")).value()),
            (std::vector<std::string>{"a/b/c", "a/b/d/e"}));
  EXPECT_EQ(names(store().list(key("a")).value()),
            (std::vector<std::string>{"a/b/c", "a/b/d/e", "a/bc", "a/bcd/x"}));
}

TEST_P(StoreContract, EscapedKeysRoundTrip) {
  if (!GetParam().lists_dot_names) GTEST_SKIP() << "the server hides names starting with '.'";
  const Key hostile =
      Key::from_segments({"instances", "../x", ".", "..", "a b%", "\xff\x01"}).value();
  ASSERT_TRUE(store().replace(hostile, "v")) << hostile.str();
  EXPECT_EQ(store().get(hostile)->data, "v");
  EXPECT_EQ(names(store().list(key("instances")).value()),
            (std::vector<std::string>{hostile.str()}));
  ASSERT_TRUE(store().remove(hostile));
}

TEST_P(StoreContract, DocumentsUpToOneMebibyteRoundTrip) {
  std::string big(kMaxDocumentSize, 'x');
  big.front() = '{';
  big.back() = '}';
  ASSERT_TRUE(store().replace(key("instances/big"), big));
  EXPECT_EQ(store().get(key("instances/big"))->data, big);
}

TEST_P(StoreContract, DocumentsOverOneMebibyteAreRefused) {
  auto r = store().replace(key("instances/big"), std::string(kMaxDocumentSize + 1, 'x'));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid);
  EXPECT_EQ(store().get(key("instances/big")).error().code, Errc::not_found);
}

TEST_P(StoreContract, BinaryContentRoundTrips) {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  ASSERT_TRUE(store().replace(key("instances/bin"), bytes));
  EXPECT_EQ(store().get(key("instances/bin"))->data, bytes);
}

TEST_P(StoreContract, DescribeNamesTheStore) { EXPECT_FALSE(store().describe().empty()); }

// Versions and conditional writes, for stores that declare them.
TEST_P(StoreContract, VersionsChangeWithEveryWrite) {
  if (!store().capabilities().versions) GTEST_SKIP() << "no versions";
  const auto v1 = store().replace(key("instances/a"), "one").value();
  EXPECT_EQ(store().get(key("instances/a"))->version, v1);
  const auto v2 = store().replace(key("instances/a"), "two").value();
  EXPECT_NE(v1, v2);
  EXPECT_EQ(store().get(key("instances/a"))->version, v2);
}

TEST_P(StoreContract, ConditionalReplaceAndRemove) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  const auto v1 = store().replace(key("instances/a"), "one").value();
  const auto v2 = store().replace_if(key("instances/a"), "two", v1);
  ASSERT_TRUE(v2.has_value()) << v2.error().message;
  auto stale = store().replace_if(key("instances/a"), "three", v1);
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, Errc::conflict);
  EXPECT_EQ(store().get(key("instances/a"))->data, "two");

  auto stale_remove = store().remove_if(key("instances/a"), v1);
  ASSERT_FALSE(stale_remove.has_value());
  EXPECT_EQ(stale_remove.error().code, Errc::conflict);
  ASSERT_TRUE(store().remove_if(key("instances/a"), *v2));
  EXPECT_EQ(store().get(key("instances/a")).error().code, Errc::not_found);
}

TEST_P(StoreContract, ConditionalReplaceOfAMissingKeyFails) {
  if (!store().capabilities().conditional_writes) GTEST_SKIP() << "no conditional writes";
  auto r = store().replace_if(key("instances/none"), "x", "some-version");
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().code == Errc::not_found || r.error().code == Errc::conflict)
      << r.error().message;
  EXPECT_EQ(store().get(key("instances/none")).error().code, Errc::not_found);
}

TEST_P(StoreContract, UnsupportedConditionalOperationsSaySo) {
  if (store().capabilities().conditional_writes) GTEST_SKIP() << "has conditional writes";
  EXPECT_EQ(store().replace_if(key("instances/a"), "x", "v").error().code, Errc::unsupported);
}

}  // namespace
}  // namespace instance::testing
