#include "support/machine_load.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace mk {

namespace {

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

Result<CpuTicks> ReadCpuTicks() { return ParseProcStatCpuLine(ReadFirstLine("/proc/stat")); }

}  // namespace

Result<CpuTicks> ParseProcStatCpuLine(const std::string& line) {
  std::istringstream in(line);
  std::string label;
  in >> label;
  if (label != "cpu") return InvalidArgument("not /proc/stat's cpu line: '" + line + "'");
  // user nice system idle iowait irq softirq steal (guest time is already inside user).
  std::vector<uint64_t> f;
  uint64_t v = 0;
  while (f.size() < 8 && in >> v) f.push_back(v);
  if (f.size() < 4) return InvalidArgument("/proc/stat's cpu line has too few fields");
  f.resize(8, 0);
  CpuTicks t;
  t.busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
  t.total = t.busy + f[3] + f[4];
  return t;
}

Result<double> ParseLoadAverage(const std::string& proc_loadavg) {
  std::istringstream in(proc_loadavg);
  double v = 0;
  if (!(in >> v) || v < 0) return InvalidArgument("not /proc/loadavg: '" + proc_loadavg + "'");
  return v;
}

MachineLoad SampleMachineLoad(int cores, double window_s) {
  MachineLoad load;
  load.cores = std::max(1, cores);
  if (Result<double> avg = ParseLoadAverage(ReadFirstLine("/proc/loadavg")); avg.ok()) {
    load.load_avg_1m = *avg;
  }
  window_s = std::clamp(window_s, 0.0, 1.0);
  Result<CpuTicks> before = ReadCpuTicks();
  if (!before.ok() || window_s <= 0) return load;
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  Result<CpuTicks> after = ReadCpuTicks();
  if (!after.ok() || after->total <= before->total) return load;
  const double busy = static_cast<double>(after->busy - before->busy);
  const double total = static_cast<double>(after->total - before->total);
  // /proc/stat sums every CPU: the busy share of all of them, in cores.
  load.busy_cores = std::clamp(busy / total * load.cores, 0.0, static_cast<double>(load.cores));
  load.window_s = window_s;
  return load;
}

nlohmann::json ToJson(const MachineLoad& load) {
  return {{"load_avg_1m", load.load_avg_1m},
          {"busy_cores", load.busy_cores},
          {"cores", load.cores},
          {"window_s", load.window_s},
          {"loaded", load.loaded()}};
}

std::string DescribeLoad(const MachineLoad& load) {
  char buf[160];
  if (!load.loaded()) {
    std::snprintf(buf, sizeof buf, "quiet (%.1f of %d cores busy with other work, load average %.1f)",
                  load.busy_cores, load.cores, load.load_avg_1m);
  } else {
    std::snprintf(buf, sizeof buf, "loaded: %.1f of %d cores busy with other work (load average %.1f)",
                  load.busy_cores, load.cores, load.load_avg_1m);
  }
  return buf;
}

}  // namespace mk
