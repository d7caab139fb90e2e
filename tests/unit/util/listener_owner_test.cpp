#include "util/listener_owner.hpp"

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace keyshim::util {
namespace {

// Copied from a real /proc/net/tcp: keyshim on 127.0.0.1:8787 (0x2253) as
// uid 1000, sshd on 0.0.0.0:22 as root, and an established connection.
constexpr const char* k_tcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:2253 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4386381 1 "
    "00000000ede89745 100 0 0 10 0\n"
    "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 20113 1 "
    "0000000000000000 100 0 0 10 0\n"
    "   2: 0100007F:2253 0100007F:B6E4 01 00000000:00000000 00:00000000 00000000  1000        0 4390001 1 "
    "0000000000000000 20 4 30 10 -1\n";

// ::1 port 8788 as uid 1001, and a line cut short.
constexpr const char* k_tcp6 =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue "
    "tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000001000000:2254 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000  1001        0 777 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0000000000000000000000000100\n";

TEST(ListenerOwner, ParsesOnlyListeningRowsOfProcNetTcp) {
  std::vector<TcpListener> rows = parse_tcp_listeners(k_tcp, false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].address, "127.0.0.1");
  EXPECT_EQ(rows[0].port, 8787);
  EXPECT_EQ(rows[0].uid, 1000u);
  EXPECT_EQ(rows[0].inode, 4386381u);
  EXPECT_EQ(rows[1].address, "0.0.0.0");
  EXPECT_EQ(rows[1].port, 22);
}

TEST(ListenerOwner, ParsesIpv6RowsAndSkipsMalformedOnes) {
  std::vector<TcpListener> rows = parse_tcp_listeners(k_tcp6, true);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].address, "::1");
  EXPECT_EQ(rows[0].port, 8788);
  EXPECT_EQ(rows[0].uid, 1001u);
  EXPECT_EQ(rows[0].inode, 777u);
  EXPECT_TRUE(parse_tcp_listeners("garbage\n\n0: zz:zz zz 0A\n", false).empty());
}

TEST(ListenerOwner, ReadsSocketInodesFromDescriptorLinks) {
  EXPECT_EQ(socket_inode("socket:[4386381]"), 4386381u);
  EXPECT_FALSE(socket_inode("/dev/null"));
  EXPECT_FALSE(socket_inode("socket:[]"));
  EXPECT_FALSE(socket_inode("anon_inode:[eventfd]"));
}

TEST(ListenerOwner, ReadsRealAndEffectiveUidFromStatus) {
  auto uids = status_uids("Name:\tkeyshim\nUmask:\t0022\nUid:\t1000\t1001\t1000\t1000\nGid:\t5\t5\t5\t5\n");
  ASSERT_TRUE(uids);
  EXPECT_EQ(uids->first, 1000u);
  EXPECT_EQ(uids->second, 1001u);
  EXPECT_FALSE(status_uids("Name:\tkeyshim\n"));
}

TEST(ListenerOwner, MatchesTheAddressItsWildcardAndLocalhost) {
  TcpListener loopback{"127.0.0.1", 8787, 0, 1};
  EXPECT_TRUE(listener_serves(loopback, "127.0.0.1", 8787));
  EXPECT_TRUE(listener_serves(loopback, "localhost", 8787));
  EXPECT_FALSE(listener_serves(loopback, "127.0.0.2", 8787));
  EXPECT_FALSE(listener_serves(loopback, "127.0.0.1", 8788));
  EXPECT_FALSE(listener_serves(loopback, "::1", 8787));
  EXPECT_TRUE(listener_serves(TcpListener{"0.0.0.0", 8787, 0, 1}, "127.0.0.1", 8787));
  EXPECT_TRUE(listener_serves(TcpListener{"::1", 8787, 0, 1}, "0:0::1", 8787));
  EXPECT_FALSE(listener_serves(TcpListener{"::", 8787, 0, 1}, "127.0.0.1", 8787));
}

// A fake /proc: pid 42 runs /usr/bin/keyshim as uid 1000 and holds socket
// 4386381, the one listening on 127.0.0.1:8787.
class FakeProc : public ::testing::Test {
protected:
  void SetUp() override {
    mkdir((m_dir.path() + "/net").c_str(), 0700);
    m_dir.write("net/tcp", k_tcp);
    m_dir.write("net/tcp6", k_tcp6);
    process(42, "/usr/bin/keyshim", 1000, "socket:[4386381]");
  }

  void process(int pid, const std::string& exe, unsigned uid, const std::string& fd3) const {
    std::string dir = m_dir.path() + "/" + std::to_string(pid);
    mkdir(dir.c_str(), 0700);
    mkdir((dir + "/fd").c_str(), 0700);
    m_dir.write(std::to_string(pid) + "/status",
                "Name:\tx\nUid:\t" + std::to_string(uid) + "\t" + std::to_string(uid) + "\t0\t0\n");
    symlink(exe.c_str(), (dir + "/exe").c_str());
    symlink("/dev/null", (dir + "/fd/0").c_str());
    symlink(fd3.c_str(), (dir + "/fd/3").c_str());
  }

  std::string check(long long pid, const std::string& host = "127.0.0.1", int port = 8787,
                    unsigned uid = 1000) const {
    return check_listener_owner({pid, host, port, uid, "keyshim", m_dir.path()});
  }

  keyshim::test::TempDir m_dir;
};

TEST_F(FakeProc, KeyshimOfTheSameUserHoldingTheSocketPasses) {
  EXPECT_EQ(check(42), "");
  EXPECT_EQ(check(42, "localhost"), "");
}

TEST_F(FakeProc, ProcessOfAnotherProgramIsNamed) {
  process(43, "/usr/bin/sleep", 1000, "socket:[4386381]");
  EXPECT_EQ(check(43), "pid 43 is not keyshim (it runs /usr/bin/sleep)");
}

TEST_F(FakeProc, ProcessOfAnotherUserIsNamed) {
  process(44, "/usr/bin/keyshim", 0, "socket:[4386381]");
  EXPECT_EQ(check(44), "pid 44 runs as uid 0, not as you (uid 1000)");
}

TEST_F(FakeProc, KeyshimNotHoldingTheSocketIsNamed) {
  process(45, "/usr/bin/keyshim", 1000, "socket:[999]");
  EXPECT_EQ(check(45), "pid 45 does not hold the listening socket 127.0.0.1:8787");
}

TEST_F(FakeProc, SocketCreatedByAnotherUserIsNamed) {
  // [::1]:8788 belongs to uid 1001: a stranger's server, whatever pid it names.
  EXPECT_EQ(check(42, "::1", 8788),
            "the socket listening on [::1]:8788 belongs to uid 1001, not to you (uid 1000)");
}

TEST_F(FakeProc, MissingProcessAndSilentAddressAreNamed) {
  EXPECT_NE(check(4242).find("pid 4242 is not running here"), std::string::npos);
  EXPECT_EQ(check(42, "127.0.0.1", 9999),
            "nothing listens on 127.0.0.1:9999 in " + m_dir.path() + "/net/tcp");
}

TEST_F(FakeProc, ExecutableReplacedByAnUpgradeStillCounts) {
  process(46, "/usr/bin/keyshim (deleted)", 1000, "socket:[4386381]");
  EXPECT_EQ(check(46), "");
}

} // namespace
} // namespace keyshim::util
