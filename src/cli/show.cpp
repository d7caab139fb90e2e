// keyshim show ID: one captured exchange in full, readable (or --json as
// /captures/ID answered); keyshim capture save ID FILE: that JSON in a file
// only its owner may read.
#include "cli/capture_client.hpp"
#include "cli/capture_text.hpp"
#include "cli/commands.hpp"
#include "cli/status_table.hpp"
#include "util/private_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace keyshim::cli {
namespace {

struct ShowFlags {
  std::string config;
  std::string listen;
  std::uint64_t id = 0;
  bool json = false;
  std::string file; // capture save
  bool force = false;
};

void add_instance_options(CLI::App& app, ShowFlags& flags) {
  add_config_option(app, flags.config);
  app.add_option("--listen", flags.listen,
                 "ADDR:PORT of the instance to ask (default: the pool file's [server] listen, else " +
                     std::string(k_default_listen) + ")")
      ->type_name("ADDR:PORT");
}

CaptureAnswer fetch_one(const ShowFlags& flags) {
  CaptureAnswer answer =
      fetch_captures(locate_instance(flags.config, flags.listen), "/captures/" + std::to_string(flags.id));
  if (!answer.ok()) {
    throw std::runtime_error(answer.error);
  }
  return answer;
}

int run_show(const ShowFlags& flags) {
  CaptureAnswer answer = fetch_one(flags);
  if (flags.json) {
    fmt::print("{}\n", answer.body);
  } else {
    fmt::print("{}", capture_show_text(*answer.json));
  }
  return 0;
}

// A new file, mode 0600 from its creation: O_EXCL refuses one that exists.
void write_new_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      throw std::runtime_error(
          fmt::format("{} exists; pass --force to replace it, or name another file", path));
    }
    throw std::runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      int error = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(error)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
}

int run_save(const ShowFlags& flags) {
  CaptureAnswer answer = fetch_one(flags);
  std::string text = answer.body + "\n";
  if (flags.force) {
    std::string error;
    if (!util::write_private_file(flags.file, text, error)) {
      throw std::runtime_error(error);
    }
  } else {
    write_new_file(flags.file, text);
  }
  fmt::print("saved capture {} to {} (mode 0600: it holds the request and the answer)\n", flags.id,
             flags.file);
  return 0;
}

} // namespace

Subcommand add_show(CLI::App& parent) {
  auto flags = std::make_shared<ShowFlags>();
  CLI::App* app = parent.add_subcommand(
      "show", "print one captured exchange in full: attempts, heads (credentials removed) and bodies "
              "(keys masked), JSON pretty-printed, stream events one per line");
  app->add_option("ID", flags->id, "the capture's id, as `keyshim log` prints it")->required();
  add_instance_options(*app, *flags);
  app->add_flag("--json", flags->json, "print the /captures/ID answer as received, for scripts");
  return {app, [flags] { return run_show(*flags); }};
}

Subcommand add_capture(CLI::App& parent) {
  auto flags = std::make_shared<ShowFlags>();
  CLI::App* app = parent.add_subcommand("capture", "keep a captured exchange (see `keyshim log`)");
  app->require_subcommand(1);
  CLI::App* save = app->add_subcommand(
      "save", "write capture ID as `keyshim show --json` prints it to FILE, readable by you alone (0600)");
  save->add_option("ID", flags->id, "the capture's id, as `keyshim log` prints it")->required();
  save->add_option("FILE", flags->file, "where to write it; an existing file is refused without --force")
      ->required();
  add_instance_options(*save, *flags);
  save->add_flag("--force", flags->force, "replace FILE if it exists");
  return {app, [flags] { return run_save(*flags); }};
}

} // namespace keyshim::cli
