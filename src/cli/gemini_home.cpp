#include "cli/gemini_home.hpp"

#include "util/json.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

namespace keyshim::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_settings = "settings.json";
constexpr const char* k_api_key_auth = "gemini-api-key";
// A settings file bigger than this is not one a person wrote.
constexpr std::uintmax_t k_max_settings_size = 1 << 20;

std::string basename_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The user's settings as gemini reads them: an empty object when there is no
// file; nullopt (and `problem`) when there is one keyshim cannot read.
std::optional<util::Json> user_settings(const fs::path& file, std::string& problem) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return util::Json::make_object();
  }
  if (fs::file_size(file, ec) > k_max_settings_size || ec) {
    problem = fmt::format("{}: too large or unreadable", file.string());
    return std::nullopt;
  }
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  util::JsonError error;
  std::optional<util::Json> settings = util::parse_json_with_comments(text.str(), &error);
  if (!settings || !settings->is_object()) {
    problem = fmt::format("{}: not a JSON object ({} at byte {})", file.string(),
                          settings ? "another value" : error.message, error.offset);
    return std::nullopt;
  }
  return settings;
}

const util::Json* selected_auth(const util::Json& settings) {
  const util::Json* security = settings.find("security");
  const util::Json* auth = security == nullptr ? nullptr : security->find("auth");
  return auth == nullptr ? nullptr : auth->find("selectedType");
}

// The object member `name` of `parent`, or an empty object.
util::Json object_at(const util::Json& parent, std::string_view name) {
  const util::Json* found = parent.find(name);
  return found != nullptr && found->is_object() ? *found : util::Json::make_object();
}

// `settings` with security.auth.selectedType set, the rest kept as it was.
util::Json with_api_key_auth(const util::Json& settings) {
  util::Json security = object_at(settings, "security");
  util::Json auth = object_at(security, "auth");
  auth.set("selectedType", util::Json::make_string(k_api_key_auth));
  security.set("auth", std::move(auth));
  util::Json out = settings;
  out.set("security", std::move(security));
  return out;
}

// The private .gemini: a link to each of the user's entries but settings.
std::string link_user_entries(const fs::path& user_dir, const fs::path& private_dir) {
  std::error_code ec;
  if (!fs::is_directory(user_dir, ec)) {
    return {};
  }
  for (fs::directory_iterator it(user_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == k_settings) {
      continue;
    }
    fs::create_symlink(it->path(), private_dir / it->path().filename(), ec);
    if (ec) {
      return fmt::format("linking {}: {}", it->path().string(), ec.message());
    }
  }
  return ec ? fmt::format("reading {}: {}", user_dir.string(), ec.message()) : std::string();
}

std::string write_private_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::trunc);
  out << text << '\n';
  out.close();
  if (!out || ::chmod(file.c_str(), 0600) != 0) {
    return fmt::format("writing {} failed", file.string());
  }
  return {};
}

} // namespace

std::unique_ptr<GeminiHome> GeminiHome::prepare(const std::vector<std::string>& argv, const std::string& home,
                                                std::string& problem) {
  if (argv.empty() || basename_of(argv.front()) != "gemini" || home.empty()) {
    return nullptr;
  }
  fs::path user_dir = fs::path(home) / ".gemini";
  std::optional<util::Json> settings = user_settings(user_dir / k_settings, problem);
  if (!settings) {
    return nullptr;
  }
  const util::Json* selected = selected_auth(*settings);
  if (selected != nullptr && selected->as_string() == k_api_key_auth) {
    return nullptr; // the user chose it already: nothing to add
  }

  // mkdtemp makes the directory 0700: the copy of the settings may hold
  // the user's MCP server tokens.
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/keyshim-gemini.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    problem = fmt::format("cannot make a private directory like {}", pattern);
    return nullptr;
  }
  std::unique_ptr<GeminiHome> made(new GeminiHome(pattern, user_dir.string()));
  fs::path private_dir = fs::path(pattern) / ".gemini";
  std::error_code ec;
  fs::create_directory(private_dir, ec);
  problem = ec ? fmt::format("creating {}: {}", private_dir.string(), ec.message())
               : link_user_entries(user_dir, private_dir);
  if (problem.empty()) {
    problem = write_private_file(private_dir / k_settings, with_api_key_auth(*settings).dump());
  }
  return problem.empty() ? std::move(made) : nullptr;
}

// Entries gemini created in the private .gemini (not a link, not the
// settings) go where they would have gone, unless the user has one by now.
void GeminiHome::hand_back() const {
  std::error_code ec;
  // Names first, moves afterwards: a directory is not changed while it is
  // read. Increments take an error_code: nothing may throw out of a destructor.
  std::vector<fs::path> created;
  for (fs::directory_iterator it(fs::path(m_path) / ".gemini", ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_symlink(ec) && it->path().filename() != k_settings) {
      created.push_back(it->path());
    }
  }
  for (const fs::path& entry : created) {
    fs::path target = fs::path(m_user_dir) / entry.filename();
    if (fs::exists(fs::symlink_status(target, ec))) {
      continue;
    }
    if (fs::create_directories(m_user_dir, ec)) {
      ::chmod(m_user_dir.c_str(), 0700);
    }
    fs::rename(entry, target, ec);
    if (ec) {
      // Another file system: copy, links as links.
      fs::copy(entry, target, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    }
  }
}

GeminiHome::~GeminiHome() {
  hand_back();
  // remove_all removes links, never what they point at.
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

} // namespace keyshim::cli
