#include "service/plan_executor.hpp"
#include "service/service_plan.hpp"
#include "service/unit_templates.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace keyshim;
using keyshim::test::TempDir;
using service::Action;

namespace {

service::ServiceTarget systemd_target(const std::string& home) {
  service::ServiceTarget target;
  target.platform = service::Platform::systemd;
  target.home = home;
  target.config_home = home + "/.config";
  target.uid = 1000;
  target.binary_path = "/usr/local/bin/keyshim";
  target.config_path = home + "/.config/keyshim/keys.toml";
  return target;
}

service::ServiceTarget launchd_target(const std::string& home) {
  service::ServiceTarget target = systemd_target(home);
  target.platform = service::Platform::launchd;
  target.uid = 501;
  return target;
}

std::vector<std::string> step_texts(const service::Plan& plan) {
  std::vector<std::string> texts;
  for (const Action& action : plan.actions) {
    texts.push_back(action.text());
  }
  return texts;
}

// Records the commands instead of running them, and fails the ones asked to.
struct RecordingRunner {
  std::vector<std::vector<std::string>> calls;
  std::vector<std::string> failing; // argv[2] values (systemctl --user VERB) that fail

  service::CommandResult operator()(const std::vector<std::string>& argv) {
    calls.push_back(argv);
    service::CommandResult result;
    result.started = true;
    result.exit_code = 0;
    for (const std::string& verb : failing) {
      if (argv.size() > 2 && argv[2] == verb) {
        result.exit_code = 1;
      }
    }
    return result;
  }
};

unsigned mode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return static_cast<unsigned>(info.st_mode & 07777);
}

} // namespace

TEST(ServicePlan, SystemdInstallWritesTheUnitThenReloadsEnablesAndRestarts) {
  service::Plan plan = service::plan_install(systemd_target("/home/u"));
  EXPECT_EQ(plan.unit_path, "/home/u/.config/systemd/user/keyshim.service");
  EXPECT_NE(
      plan.unit_text.find("ExecStart=/usr/local/bin/keyshim serve -c /home/u/.config/keyshim/keys.toml\n"),
      std::string::npos);
  EXPECT_EQ(plan.unit_text.find("Requires="), std::string::npos);
  EXPECT_EQ(plan.socket_text, "");
  // A socket left by an earlier install would hold the port: it goes first.
  EXPECT_EQ(step_texts(plan), (std::vector<std::string>{
                                  "mkdir -p -m 0700 /home/u/.config/systemd/user",
                                  "write /home/u/.config/systemd/user/keyshim.service (mode 0644)",
                                  "systemctl --user disable --now keyshim.socket",
                                  "rm -f /home/u/.config/systemd/user/keyshim.socket",
                                  "systemctl --user daemon-reload",
                                  "systemctl --user enable keyshim.service",
                                  "systemctl --user restart keyshim.service",
                              }));
  EXPECT_FALSE(plan.actions[2].required);
}

TEST(ServicePlan, SystemdSocketInstallWritesBothUnitsAndStartsOnlyTheSocket) {
  service::ServiceTarget target = systemd_target("/home/u");
  target.socket = true;
  target.listen = {"127.0.0.1", 9911};
  service::Plan plan = service::plan_install(target);
  EXPECT_EQ(plan.socket_path, "/home/u/.config/systemd/user/keyshim.socket");
  EXPECT_NE(plan.socket_text.find("\nListenStream=127.0.0.1:9911\n"), std::string::npos) << plan.socket_text;
  EXPECT_NE(plan.unit_text.find("\nRequires=keyshim.socket\nAfter=keyshim.socket\n"), std::string::npos);
  EXPECT_EQ(step_texts(plan), (std::vector<std::string>{
                                  "mkdir -p -m 0700 /home/u/.config/systemd/user",
                                  "write /home/u/.config/systemd/user/keyshim.socket (mode 0644)",
                                  "write /home/u/.config/systemd/user/keyshim.service (mode 0644)",
                                  "systemctl --user daemon-reload",
                                  "systemctl --user disable keyshim.service",
                                  "systemctl --user stop keyshim.service",
                                  "systemctl --user enable keyshim.socket",
                                  "systemctl --user restart keyshim.socket",
                              }));
  EXPECT_FALSE(plan.actions[4].required);
  EXPECT_FALSE(plan.actions[5].required);
  EXPECT_TRUE(plan.actions[7].required);
  std::string text = service::plan_text(plan);
  EXPECT_LT(text.find("==> " + plan.socket_path + " <==\n"), text.find("==> " + plan.unit_path + " <==\n"));
}

TEST(ServicePlan, SocketInstallRefusesAPortOnlyAProcessCouldPick) {
  service::ServiceTarget target = systemd_target("/home/u");
  target.socket = true;
  target.listen = {"127.0.0.1", 0};
  EXPECT_THROW(service::plan_install(target), std::invalid_argument);
}

TEST(ServicePlan, SystemdUnitGoesUnderXdgConfigHome) {
  service::ServiceTarget target = systemd_target("/home/u");
  target.config_home = "/home/u/dotfiles";
  EXPECT_EQ(service::unit_file_path(target), "/home/u/dotfiles/systemd/user/keyshim.service");
}

TEST(ServicePlan, SystemdUninstallToleratesAServiceThatIsNotRunning) {
  service::Plan plan = service::plan_uninstall(systemd_target("/home/u"));
  EXPECT_EQ(step_texts(plan), (std::vector<std::string>{
                                  "systemctl --user disable --now keyshim.socket",
                                  "systemctl --user disable --now keyshim.service",
                                  "rm -f /home/u/.config/systemd/user/keyshim.socket",
                                  "rm -f /home/u/.config/systemd/user/keyshim.service",
                                  "systemctl --user daemon-reload",
                              }));
  EXPECT_FALSE(plan.actions[0].required);
  EXPECT_FALSE(plan.actions[1].required);
  EXPECT_TRUE(plan.unit_text.empty());
}

TEST(ServicePlan, SystemdStatusIsOneSystemctlCommand) {
  service::Plan plan = service::plan_status(systemd_target("/home/u"));
  EXPECT_EQ(step_texts(plan),
            (std::vector<std::string>{"systemctl --user status --no-pager keyshim.service"}));
  service::ServiceTarget with_socket = systemd_target("/home/u");
  with_socket.socket = true;
  EXPECT_EQ(step_texts(service::plan_status(with_socket)),
            (std::vector<std::string>{"systemctl --user status --no-pager keyshim.socket keyshim.service"}));
}

TEST(ServicePlan, LaunchdInstallBootsOutAnOldCopyThenBootstraps) {
  service::Plan plan = service::plan_install(launchd_target("/Users/u"));
  EXPECT_EQ(plan.unit_path, "/Users/u/Library/LaunchAgents/dev.keyshim.plist");
  EXPECT_EQ(step_texts(plan),
            (std::vector<std::string>{
                "mkdir -p -m 0700 /Users/u/Library/LaunchAgents",
                "mkdir -p -m 0700 /Users/u/Library/Logs/keyshim",
                "write /Users/u/Library/LaunchAgents/dev.keyshim.plist (mode 0644)",
                "launchctl bootout gui/501/dev.keyshim",
                "launchctl enable gui/501/dev.keyshim",
                "launchctl bootstrap gui/501 /Users/u/Library/LaunchAgents/dev.keyshim.plist",
            }));
  EXPECT_FALSE(plan.actions[3].required);
  EXPECT_NE(plan.unit_text.find("<string>/usr/local/bin/keyshim</string>"), std::string::npos);
  EXPECT_EQ(plan.unit_text.find("<key>Sockets</key>"), std::string::npos);

  service::ServiceTarget with_socket = launchd_target("/Users/u");
  with_socket.socket = true;
  with_socket.listen = {"127.0.0.1", 9911};
  service::Plan socket_plan = service::plan_install(with_socket);
  EXPECT_NE(socket_plan.unit_text.find("<key>Sockets</key>"), std::string::npos);
  EXPECT_EQ(step_texts(socket_plan), step_texts(plan));
}

TEST(ServicePlan, LaunchdUninstallAndStatus) {
  EXPECT_EQ(step_texts(service::plan_uninstall(launchd_target("/Users/u"))),
            (std::vector<std::string>{"launchctl bootout gui/501/dev.keyshim",
                                      "rm -f /Users/u/Library/LaunchAgents/dev.keyshim.plist"}));
  EXPECT_EQ(step_texts(service::plan_status(launchd_target("/Users/u"))),
            (std::vector<std::string>{"launchctl print gui/501/dev.keyshim"}));
}

TEST(ServicePlan, DryRunTextShowsTheUnitAndEveryStepWithoutTouchingHome) {
  TempDir home;
  service::Plan plan = service::plan_install(systemd_target(home.path()));
  std::string text = service::plan_text(plan);
  EXPECT_TRUE(text.starts_with("==> " + plan.unit_path + " <==\n" + plan.unit_text));
  EXPECT_NE(text.find("\nsystemctl --user restart keyshim.service\n"), std::string::npos);
  // Planning (and printing the plan) writes nothing.
  EXPECT_TRUE(std::filesystem::is_empty(home.path()));
}

TEST(ServicePlan, PathsWithSpacesArePrintedSoTheyCanBePasted) {
  service::ServiceTarget target = systemd_target("/home/John Smith");
  service::Plan plan = service::plan_install(target);
  EXPECT_EQ(plan.actions[0].text(), "mkdir -p -m 0700 '/home/John Smith/.config/systemd/user'");
}

TEST(PlanExecutor, InstallIntoATemporaryHomeWritesTheUnitWithPrivateDirectories) {
  TempDir home;
  service::Plan plan = service::plan_install(systemd_target(home.path()));
  RecordingRunner runner;
  std::vector<std::string> observed;
  service::StepObserver observer;
  observer.before = [&](const Action& action) { observed.push_back("start " + action.text()); };
  observer.after = [&](const Action& action, const service::StepResult& step) {
    observed.push_back((step.ok ? "ok " : "failed ") + action.text());
  };
  service::ExecutionResult result = service::execute_plan(plan, std::ref(runner), observer);
  ASSERT_TRUE(result.ok) << result.failure.error;
  ASSERT_EQ(observed.size(), 2 * plan.actions.size());
  EXPECT_EQ(observed[0], "start " + plan.actions[0].text());
  EXPECT_EQ(observed[1], "ok " + plan.actions[0].text());

  EXPECT_EQ(test::read_file(plan.unit_path), plan.unit_text);
  EXPECT_EQ(mode_of(plan.unit_path), 0644u);
  EXPECT_EQ(mode_of(home.path() + "/.config"), 0700u);
  EXPECT_EQ(mode_of(home.path() + "/.config/systemd/user"), 0700u);
  ASSERT_EQ(runner.calls.size(), 4u);
  EXPECT_EQ(runner.calls[1], (std::vector<std::string>{"systemctl", "--user", "daemon-reload"}));
  EXPECT_EQ(runner.calls[3], (std::vector<std::string>{"systemctl", "--user", "restart", "keyshim.service"}));
}

TEST(PlanExecutor, SocketInstallWritesBothUnitsAndAPlainReinstallRemovesTheSocket) {
  TempDir home;
  service::ServiceTarget target = systemd_target(home.path());
  target.socket = true;
  service::Plan plan = service::plan_install(target);
  RecordingRunner runner;
  ASSERT_TRUE(service::execute_plan(plan, std::ref(runner)).ok);
  EXPECT_EQ(test::read_file(plan.socket_path), plan.socket_text);
  EXPECT_EQ(test::read_file(plan.unit_path), plan.unit_text);
  EXPECT_EQ(mode_of(plan.socket_path), 0644u);
  EXPECT_EQ(runner.calls.back(),
            (std::vector<std::string>{"systemctl", "--user", "restart", "keyshim.socket"}));

  target.socket = false;
  ASSERT_TRUE(service::execute_plan(service::plan_install(target), std::ref(runner)).ok);
  EXPECT_FALSE(std::filesystem::exists(plan.socket_path));
  EXPECT_EQ(test::read_file(plan.unit_path).find("Requires="), std::string::npos);
}

TEST(PlanExecutor, ReinstallReplacesTheUnitAndLeavesExistingDirectoriesAlone) {
  TempDir home;
  std::string unit = home.write(".config/systemd/user/keyshim.service", "old", 0600);
  ::chmod((home.path() + "/.config").c_str(), 0755);
  service::Plan plan = service::plan_install(systemd_target(home.path()));
  RecordingRunner runner;
  ASSERT_TRUE(service::execute_plan(plan, std::ref(runner)).ok);
  EXPECT_EQ(test::read_file(unit), plan.unit_text);
  EXPECT_EQ(mode_of(unit), 0644u);
  EXPECT_EQ(mode_of(home.path() + "/.config"), 0755u);
  // No temporary file is left beside the unit.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(home.path() + "/.config/systemd/user"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(PlanExecutor, StopsAtTheFirstFailingRequiredCommand) {
  TempDir home;
  service::Plan plan = service::plan_install(systemd_target(home.path()));
  RecordingRunner runner;
  runner.failing = {"daemon-reload"};
  service::ExecutionResult result = service::execute_plan(plan, std::ref(runner));
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.failed_step, 4u);
  EXPECT_EQ(result.failure.error, "systemctl --user daemon-reload: exit 1");
  // The unit was written before the failure; enable and restart never ran.
  EXPECT_EQ(test::read_file(plan.unit_path), plan.unit_text);
  EXPECT_EQ(runner.calls.size(), 2u);
}

TEST(PlanExecutor, UninstallGoesOnWhenTheServiceWasNotRunningAndTheFileIsGone) {
  TempDir home;
  service::Plan plan = service::plan_uninstall(systemd_target(home.path()));
  RecordingRunner runner;
  runner.failing = {"disable"};
  service::ExecutionResult result = service::execute_plan(plan, std::ref(runner));
  EXPECT_TRUE(result.ok) << result.failure.error;
  EXPECT_EQ(runner.calls.size(), 3u);
}

TEST(PlanExecutor, UninstallRemovesTheUnit) {
  TempDir home;
  std::string unit = home.write(".config/systemd/user/keyshim.service", "x", 0644);
  std::string socket = home.write(".config/systemd/user/keyshim.socket", "x", 0644);
  RecordingRunner runner;
  ASSERT_TRUE(
      service::execute_plan(service::plan_uninstall(systemd_target(home.path())), std::ref(runner)).ok);
  EXPECT_FALSE(std::filesystem::exists(unit));
  EXPECT_FALSE(std::filesystem::exists(socket));
}

TEST(PlanExecutor, AFileStepThatCannotBeDoneIsReported) {
  TempDir home;
  home.write("blocker", "a file where a directory should be", 0600);
  Action action;
  action.kind = Action::Kind::make_directory;
  action.path = home.path() + "/blocker/systemd";
  action.mode = 0700;
  service::StepResult result = service::perform_file_action(action);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("blocker"), std::string::npos) << result.error;
}
