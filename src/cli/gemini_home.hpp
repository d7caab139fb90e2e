#pragma once
// gemini-cli 0.61 in `-p` mode exits 41 "Invalid auth method selected" until
// its settings select API-key auth: with GOOGLE_GEMINI_BASE_URL set it takes
// auth type "gateway" from the variables, which its own check then refuses,
// and no variable or option selects another. Its settings come from root-owned
// system files (others it skips), the user's ~/.gemini/settings.json and the
// workspace's, and it finds ~/.gemini through GEMINI_CLI_HOME.
//
// So for one run of `gemini` keyshim gives it a private home (a 0700 temp
// dir): a .gemini whose entries are links to the user's, but for a
// settings.json that is the user's plus security.auth.selectedType =
// "gemini-api-key". The user's files are not edited. What gemini creates
// there during the run (a first history, installation_id) is moved to the
// user's ~/.gemini afterwards, where it would have gone; settings changed
// during the run are not kept. The private home is removed at exit.
#include <memory>
#include <string>
#include <vector>

namespace keyshim::cli {

class GeminiHome {
public:
  // A private home for `argv` when it runs gemini and the user's settings do
  // not select API-key auth already; nullptr otherwise, or when it cannot be
  // made (then `problem` says why). `home` is where gemini finds .gemini:
  // $GEMINI_CLI_HOME, else $HOME.
  static std::unique_ptr<GeminiHome> prepare(const std::vector<std::string>& argv, const std::string& home,
                                             std::string& problem);
  ~GeminiHome();
  GeminiHome(const GeminiHome&) = delete;
  GeminiHome& operator=(const GeminiHome&) = delete;

  // The value for GEMINI_CLI_HOME.
  const std::string& path() const { return m_path; }

private:
  GeminiHome(std::string path, std::string user_dir)
      : m_path(std::move(path)), m_user_dir(std::move(user_dir)) {}
  void hand_back() const;

  std::string m_path;     // the private home
  std::string m_user_dir; // the user's .gemini
};

} // namespace keyshim::cli
