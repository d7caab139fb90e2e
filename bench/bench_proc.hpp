#pragma once
// /proc readings of the proxies under test, for the benchmark's load driver
// (loadgen.cpp, loadgen_ws.cpp).
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

struct ProcInfo {
  double cpu_s = 0;
  long rss_kb = 0;
  long hwm_kb = 0;
  long threads = 0;
  long fds = 0;
  bool ok = true;
};

// CPU (utime+stime, including exited threads), memory and threads of the
// given processes, summed.
inline ProcInfo proc_info(const std::vector<int>& pids, bool want_fds) {
  ProcInfo info;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (int pid : pids) {
    char path[64];
    char buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE* f = fopen(path, "r");
    if (f == nullptr) {
      info.ok = false;
      continue;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    // Fields after the command name, which may contain spaces: ") S ppid ...".
    const char* p = strrchr(buf, ')');
    if (p != nullptr) {
      p += 2;
      unsigned long long utime = 0;
      unsigned long long stime = 0;
      // field 3 is the state; utime and stime are fields 14 and 15
      if (sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2) {
        info.cpu_s += static_cast<double>(utime + stime) / ticks;
      }
    }
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    f = fopen(path, "r");
    if (f != nullptr) {
      char line[256];
      while (fgets(line, sizeof line, f) != nullptr) {
        long v = 0;
        if (sscanf(line, "VmRSS: %ld", &v) == 1) {
          info.rss_kb += v;
        } else if (sscanf(line, "VmHWM: %ld", &v) == 1) {
          info.hwm_kb += v;
        } else if (sscanf(line, "Threads: %ld", &v) == 1) {
          info.threads += v;
        }
      }
      fclose(f);
    }
    if (want_fds) {
      snprintf(path, sizeof path, "/proc/%d/fd", pid);
      DIR* d = opendir(path);
      if (d != nullptr) {
        while (dirent* e = readdir(d)) {
          if (e->d_name[0] != '.') {
            info.fds++;
          }
        }
        closedir(d);
      }
    }
  }
  return info;
}
