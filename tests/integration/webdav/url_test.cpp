// Store URLs, credentials, error mapping and HTTP dates (no server).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "errors.hpp"
#include "instance/open_store.hpp"
#include "instance/stores/webdav.hpp"

namespace instance {
namespace {

OpenOptions with_env(std::map<std::string, std::string> env) {
  OpenOptions options;
  options.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    if (auto it = env.find(std::string(name)); it != env.end()) return it->second;
    return std::nullopt;
  };
  return options;
}

std::filesystem::path write_temp(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("instance-guard-url-test-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << content;
  return path;
}

TEST(WebDavUrl, SchemesMapToHttpAndHttps) {
  auto plain = parse_webdav_url("webdav://127.0.0.1:8080/state", with_env({}));
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_EQ(plain->base_url, "http://127.0.0.1:8080/state");
  EXPECT_EQ(plain->auth, WebDavAuth::none);

  auto tls = parse_webdav_url("webdavs://dav.example:8443/a/b/", with_env({}));
  ASSERT_TRUE(tls.has_value()) << tls.error().message;
  EXPECT_EQ(tls->base_url, "https://dav.example:8443/a/b");

  auto root = parse_webdav_url("WebDAV://host", with_env({}));
  ASSERT_TRUE(root.has_value()) << root.error().message;
  EXPECT_EQ(root->base_url, "http://host");
}

TEST(WebDavUrl, OpenCloudSpaces) {
  auto dflt = parse_webdav_url("opencloud://cloud.example/storage-id$space-id", with_env({}));
  ASSERT_TRUE(dflt.has_value()) << dflt.error().message;
  EXPECT_EQ(dflt->base_url,
            "https://cloud.example/dav/spaces/storage-id%24space-id/.instance-guard");

  auto folder =
      parse_webdav_url("opencloud://cloud.example:9200/sid%24x/apps/my%20svc/", with_env({}));
  ASSERT_TRUE(folder.has_value()) << folder.error().message;
  EXPECT_EQ(folder->base_url, "https://cloud.example:9200/dav/spaces/sid%24x/apps/my%20svc");

  auto none = parse_webdav_url("opencloud://cloud.example/", with_env({}));
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, Errc::invalid);
  EXPECT_NE(none.error().message.find("space id"), std::string::npos);
}

TEST(WebDavUrl, RefusesBadUrls) {
  for (const char* url : {"http://host/x", "webdav://", "webdav:///path", "webdav://host/a?token=x",
                          "webdav://host/a#f", "webdav://host/a b", "webdav://host/a/../b",
                          "webdav://host/a//b", "webdav://host/a%2Fb", "webdav://host/%zz"}) {
    auto r = parse_webdav_url(url, with_env({}));
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code, Errc::invalid) << url;
    EXPECT_EQ(r.error().message.find("token=x"), std::string::npos) << r.error().message;
  }
}

TEST(WebDavUrl, PasswordInUrlIsRefusedAndNeverEchoed) {
  auto r = parse_webdav_url("webdavs://alice:s3cr3t-pw@dav.example/state", with_env({}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid);
  EXPECT_EQ(r.error().message.find("s3cr3t-pw"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("INSTANCE_GUARD_PASSWORD"), std::string::npos);
  EXPECT_NE(r.error().message.find("--password-file"), std::string::npos);

  // Passwords with characters that end the authority when unescaped.
  for (const char* url :
       {"webdav://alice:pa#ss-Xq1@dav.example/state", "webdav://alice:pa/ss-Xq1@dav.example/state",
        "webdav://alice:pa?ss-Xq1@dav.example/state",
        "webdav://alice:pa@ss-Xq1@dav.example/state"}) {
    auto odd = parse_webdav_url(url, with_env({}));
    ASSERT_FALSE(odd.has_value()) << url;
    EXPECT_EQ(odd.error().code, Errc::invalid);
    EXPECT_EQ(odd.error().message.find("ss-Xq1"), std::string::npos) << odd.error().message;
    EXPECT_EQ(odd.error().message.find("pa"), odd.error().message.find("password"))
        << odd.error().message;
  }

  // Through open_store too.
  auto opened = open_store("webdav://alice:s3cr3t-pw@dav.example/state", with_env({}));
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().message.find("s3cr3t-pw"), std::string::npos);
}

TEST(WebDavUrl, UserFromUrlWithPasswordFromEnvironment) {
  auto r = parse_webdav_url("webdav://alice@dav.example/state",
                            with_env({{"INSTANCE_GUARD_PASSWORD", "pw"}}));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->auth, WebDavAuth::basic);
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->secret, "pw");
  EXPECT_EQ(r->base_url, "http://dav.example/state");  // user info never in the base URL
}

TEST(WebDavUrl, CredentialsFromEnvironment) {
  auto basic = parse_webdav_url(
      "webdavs://h/s",
      with_env({{"INSTANCE_GUARD_USER", "bob"}, {"INSTANCE_GUARD_PASSWORD", "app-token"}}));
  ASSERT_TRUE(basic.has_value()) << basic.error().message;
  EXPECT_EQ(basic->auth, WebDavAuth::basic);
  EXPECT_EQ(basic->user, "bob");
  EXPECT_EQ(basic->secret, "app-token");

  auto bearer = parse_webdav_url("webdavs://h/s", with_env({{"INSTANCE_GUARD_TOKEN", "tok"}}));
  ASSERT_TRUE(bearer.has_value()) << bearer.error().message;
  EXPECT_EQ(bearer->auth, WebDavAuth::bearer);
  EXPECT_EQ(bearer->secret, "tok");

  auto both = parse_webdav_url("webdavs://h/s", with_env({{"INSTANCE_GUARD_TOKEN", "tok-x"},
                                                          {"INSTANCE_GUARD_USER", "u"},
                                                          {"INSTANCE_GUARD_PASSWORD", "pw-x"}}));
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().code, Errc::invalid);
  EXPECT_EQ(both.error().message.find("tok-x"), std::string::npos);
  EXPECT_EQ(both.error().message.find("pw-x"), std::string::npos);

  auto no_user = parse_webdav_url("webdavs://h/s", with_env({{"INSTANCE_GUARD_PASSWORD", "pw-y"}}));
  ASSERT_FALSE(no_user.has_value());
  EXPECT_EQ(no_user.error().message.find("pw-y"), std::string::npos);

  auto no_password = parse_webdav_url("webdavs://h/s", with_env({{"INSTANCE_GUARD_USER", "u"}}));
  ASSERT_FALSE(no_password.has_value());
  EXPECT_EQ(no_password.error().code, Errc::invalid);
}

TEST(WebDavUrl, CredentialsFromFilesWinOverTheEnvironment) {
  const auto password = write_temp("pw", "file-pw\n");
  const auto token = write_temp("tok", "file-token\r\n");
  auto options =
      with_env({{"INSTANCE_GUARD_PASSWORD", "env-pw"}, {"INSTANCE_GUARD_USER", "env-user"}});
  options.password_file = password;
  options.user = "flag-user";
  auto basic = parse_webdav_url("webdavs://h/s", options);
  ASSERT_TRUE(basic.has_value()) << basic.error().message;
  EXPECT_EQ(basic->secret, "file-pw");
  EXPECT_EQ(basic->user, "flag-user");

  options.password_file.clear();
  options.token_file = token;
  auto bearer = parse_webdav_url("webdavs://h/s", options);
  ASSERT_TRUE(bearer.has_value()) << bearer.error().message;
  EXPECT_EQ(bearer->auth, WebDavAuth::bearer);
  EXPECT_EQ(bearer->secret, "file-token");

  options.token_file = "/nonexistent/instance-guard/token";
  auto missing = parse_webdav_url("webdavs://h/s", options);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::invalid);
  EXPECT_NE(missing.error().message.find("/nonexistent/instance-guard/token"), std::string::npos);

  const auto empty = write_temp("empty", "\n");
  options.token_file = empty;
  EXPECT_FALSE(parse_webdav_url("webdavs://h/s", options).has_value());
  std::filesystem::remove(password);
  std::filesystem::remove(token);
  std::filesystem::remove(empty);
}

TEST(WebDavUrl, TakesTlsAndLoggerFromOpenOptions) {
  auto options = with_env({});
  options.insecure = true;
  options.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  auto r = parse_webdav_url("webdavs://h/s", options);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->insecure);
  EXPECT_EQ(r->ca_file, options.ca_file);
}

TEST(WebDavUrl, OpenStoreDispatchesWebDavSchemes) {
  for (const char* url :
       {"webdav://127.0.0.1:1/x", "webdavs://127.0.0.1:1/x", "opencloud://127.0.0.1:1/space"}) {
    auto store = open_store(url, with_env({}));
    ASSERT_TRUE(store.has_value()) << url << ": " << store.error().message;
    EXPECT_NE((*store)->describe().find("127.0.0.1:1"), std::string::npos);
  }
}

TEST(WebDavUrl, MakeStoreValidatesOptions) {
  WebDavStoreOptions options;
  options.base_url = "ftp://h/x";
  EXPECT_EQ(make_webdav_store(options).error().code, Errc::invalid);
  options.base_url = "http://h/x";
  options.auth = WebDavAuth::basic;
  EXPECT_EQ(make_webdav_store(options).error().code, Errc::invalid);  // no user
  options.user = "u";
  EXPECT_EQ(make_webdav_store(options).error().code, Errc::invalid);  // no password
  options.auth = WebDavAuth::bearer;
  EXPECT_EQ(make_webdav_store(options).error().code, Errc::invalid);  // no token
  options.auth = WebDavAuth::none;
  options.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(make_webdav_store(options).error().code, Errc::invalid);
}

TEST(WebDavErrors, PermissionMessagesNameTheUrlAndHowToGiveCredentials) {
  net::Response r;
  r.status = 401;
  const auto e = webdav::make_error("get instances/a", "https://dav.example/state", r);
  EXPECT_EQ(e.code, Errc::permission);
  EXPECT_NE(e.message.find("https://dav.example/state"), std::string::npos);
  EXPECT_NE(e.message.find("HTTP 401"), std::string::npos);
  EXPECT_NE(e.message.find("INSTANCE_GUARD_PASSWORD"), std::string::npos);
}

}  // namespace
}  // namespace instance
