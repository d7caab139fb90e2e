#pragma once
// A private temporary directory (mode 0700) removed with everything in it.
#include <string>

namespace keyshim::test {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return m_path; }
  // Write `content` to path()/name with `mode`; returns the full path.
  std::string write(const std::string& name, const std::string& content, unsigned mode = 0600) const;

private:
  std::string m_path;
};

// Whole file as a string ("" when missing).
std::string read_file(const std::string& path);

} // namespace keyshim::test
