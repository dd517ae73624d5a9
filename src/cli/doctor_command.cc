// `maxkernel doctor [--probe] [--json] [--db PATH]`: what maxkernel sees of this machine and its
// installation - version, CPU (model, ISA features, cores, caches), compiler, python3 and jax,
// the data directory and database - and the measured peak rates the roofline uses, from the
// store, running the machine probe when none is stored for this CPU or when --probe asks.
// A diagnostic command: a part that cannot be determined is reported as such and the command
// still exits 0; only an explicit --probe that fails exits 1. docs/PROFILING.md.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "agents/profiler.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "runtime/compiler.h"
#include "store/data_dir.h"
#include "store/sqlite_store.h"
#include "support/subprocess.h"
#include "target/machine_probe.h"
#include "target/target.h"

namespace mk::cli {
namespace {

using nlohmann::json;

struct DoctorOptions {
  bool probe = false;
  bool quick = false;
  bool json = false;
  std::string db;
};

// The first line of a successful program's output, or nullopt (not installed, failed, timed out).
std::optional<std::string> FirstLineOf(const std::vector<std::string>& argv, double timeout_s) {
  Result<ProcessResult> r = RunProcess(argv, timeout_s);
  if (!r.ok() || r->timed_out || r->signaled || r->exit_code != 0) return std::nullopt;
  std::string line = r->out.substr(0, r->out.find('\n'));
  if (line.empty()) return std::nullopt;
  return line;
}

std::string Bytes(int64_t b) {
  std::ostringstream s;
  if (b >= (int64_t{1} << 20)) {
    s << (b >> 20) << " MiB";
  } else {
    s << (b >> 10) << " KiB";
  }
  return s.str();
}

std::string Fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : " ") + s;
  return out;
}

Result<int> RunDoctor(const DoctorOptions& opts) {
  json report;
  report["maxkernel_version"] = MK_VERSION;
  target::Target host = target::HostCpu();
  report["cpu"] = {{"model", host.model},
                   {"isa", host.isa},
                   {"cores", host.cores},
                   {"vector_bytes", host.vector_bytes},
                   {"l1_bytes", host.l1_bytes},
                   {"l2_bytes", host.l2_bytes},
                   {"l3_bytes", host.l3_bytes}};

  runtime::CompilerDriver compiler;
  Result<std::string> identity = compiler.CompilerIdentity();
  report["compiler"] = identity.ok() ? json(*identity) : json(nullptr);
  if (!identity.ok()) report["compiler_error"] = identity.status().message();

  // Optional: the Python bridge (import, baselines) needs them; the C++ engine does not.
  std::optional<std::string> python =
      FirstLineOf({"python3", "-c", "import sys; print(sys.version.split()[0])"}, 20);
  std::optional<std::string> jax =
      python ? FirstLineOf({"python3", "-c", "import jax; print(jax.__version__)"}, 60)
             : std::nullopt;
  report["python3"] = python ? json(*python) : json(nullptr);
  report["jax"] = jax ? json(*jax) : json(nullptr);

  MK_ASSIGN_OR_RETURN(store::DataDir dir, store::ResolveDataDir(opts.db));
  report["data_dir"] = dir.root.string();
  report["db_path"] = dir.db_path.string();

  // The peaks: stored for this CPU, or probed now (and stored).
  json peaks = {{"status", "unavailable"}};
  bool probe_failed = false;
  auto measure = [&]() -> Status {
    MK_RETURN_IF_ERROR(store::EnsureDataDir(dir));
    MK_ASSIGN_OR_RETURN(auto db, store::SqliteStore::Open(dir.db_path.string()));
    target::ProbeOptions probe_options =
        opts.quick ? target::ProbeOptions::Quick() : target::ProbeOptions();
    MK_ASSIGN_OR_RETURN(agents::ProbedMachine machine,
                        agents::LoadOrProbeMachine(*db, opts.probe, probe_options));
    const store::MachineProbeRecord& rec = machine.record;
    peaks = {{"status", machine.probed_now ? "probed" : "stored"},
             {"probe_id", rec.id},
             {"measured_at", rec.measured_at},
             {"f32_gflops", rec.peak_flops_f32 / 1e9},
             {"bf16_gflops", rec.peak_flops_bf16 ? json(*rec.peak_flops_bf16 / 1e9) : json(nullptr)},
             {"gbytes_per_s", rec.bandwidth_bytes_per_s / 1e9},
             {"details", json::parse(rec.details_json, nullptr, false)}};
    // The AMX probes' rates, where they ran (the bf16 peak is the tiles' when amx_gflops is
    // set), and whether the probe was a quick one.
    auto details = target::MachineProbeResultFromJson(peaks["details"]);
    if (details.ok()) {
      for (const target::ProbeMeasurement& m : details->measurements) {
        if (m.kernel == "amx_bf16") peaks["amx_gflops"] = m.rate / 1e9;
        if (m.kernel == "amx_bf16_fed") peaks["amx_fed_gflops"] = m.rate / 1e9;
      }
      if (details->quick) peaks["quick"] = true;
    }
    return Status::Ok();
  };
  if (Status s = measure(); !s.ok()) {
    peaks["error"] = s.message();
    probe_failed = true;
  }
  report["peaks"] = peaks;
  report["nominal_peaks"] = {{"f32_gflops", host.peak_flops_f32 / 1e9},
                             {"bf16_gflops", host.peak_flops_bf16 / 1e9},
                             {"gbytes_per_s", host.bandwidth_bytes_per_s / 1e9}};

  if (opts.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::ostringstream o;
    o << "maxkernel   " << MK_VERSION << "\n"
      << "cpu         " << (host.model.empty() ? "(unknown model)" : host.model) << "\n"
      << "isa         " << (host.isa.empty() ? "(no AVX)" : Join(host.isa)) << "\n"
      << "cores       " << host.cores << "\n"
      << "caches      L1d " << Bytes(host.l1_bytes) << ", L2 " << Bytes(host.l2_bytes) << ", L3 "
      << Bytes(host.l3_bytes) << "\n"
      << "compiler    " << (identity.ok() ? *identity : "not usable: " + identity.status().message())
      << "\n"
      << "python3     " << python.value_or("not found") << "\n"
      << "jax         " << (jax ? *jax : python ? "not importable" : "-") << "\n"
      << "data dir    " << dir.root.string() << "\n"
      << "database    " << dir.db_path.string() << "\n";
    if (peaks["status"] == "unavailable") {
      o << "peaks       unavailable: " << peaks.value("error", std::string()) << "\n";
    } else {
      // Which instruction the bf16 peak is: AMX tiles where the probe measured them.
      const bool amx = peaks.contains("amx_gflops");
      o << "peaks       (" << (peaks["status"] == "probed" ? "measured now" : "stored")
        << ", probe #" << peaks["probe_id"].get<int64_t>()
        << (peaks.value("quick", false) ? ", quick" : "") << ")\n"
        << "  f32 FMA   " << Fixed(peaks["f32_gflops"].get<double>(), 1) << " GFLOP/s\n"
        << "  bf16      "
        << (peaks["bf16_gflops"].is_null()
                ? std::string("absent (no avx512_bf16)")
                : Fixed(peaks["bf16_gflops"].get<double>(), 1) + " GFLOP/s" +
                      (amx ? " (AMX tiles)" : " (vdpbf16ps)"))
        << "\n"
        << (peaks.contains("amx_fed_gflops")
                ? "  bf16 fed  " + Fixed(peaks["amx_fed_gflops"].get<double>(), 1) +
                      " GFLOP/s (AMX tiles fed from L2: a GEMM's tile loop at best)\n"
                : std::string())
        << "  stream    " << Fixed(peaks["gbytes_per_s"].get<double>(), 1) << " GB/s (read)\n";
    }
    o << "nominal     f32 " << Fixed(host.peak_flops_f32 / 1e9, 1) << " GFLOP/s, bf16 "
      << Fixed(host.peak_flops_bf16 / 1e9, 1) << " GFLOP/s, "
      << Fixed(host.bandwidth_bytes_per_s / 1e9, 1) << " GB/s (clock x lanes model)\n";
    std::cout << o.str();
  }
  if (probe_failed && opts.probe) {
    std::cerr << "error: machine probe failed: " << peaks.value("error", std::string()) << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

void RegisterDoctorCommand(CLI::App& app, CommandResult& result) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Show this machine, the toolchain, the data directory and the measured peaks");
  doctor->add_flag("--probe", opts->probe,
                   "Measure the peak rates now (and store them), even when some are stored");
  doctor->add_flag("--quick", opts->quick,
                   "With a probe: tiny durations and buffers (for tests; numbers mean little)");
  doctor->add_flag("--json", opts->json, "Print the report as JSON");
  doctor->add_option("--db", opts->db, "Database file (default: DATA_DIR/maxkernel.db)");
  doctor->callback([opts, &result] { RunCommand(result, [&] { return RunDoctor(*opts); }); });
}

}  // namespace mk::cli
