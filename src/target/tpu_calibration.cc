#include "target/tpu_calibration.h"

#include "support/rank_stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

namespace mk::target {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Status Bad(const std::string& name, const std::string& why) {
  return InvalidArgument("calibration sample '" + name + "': " + why);
}

int64_t IntField(const nlohmann::json& s, const char* key, int64_t fallback = 0) {
  if (!s.contains(key) || !s[key].is_number_integer()) return fallback;
  return s[key].get<int64_t>();
}

double LogError(double modelled, double xla) { return std::log(modelled) - std::log(xla); }

// Sum of absolute log errors; infinity when some sample cannot be modelled.
double Loss(const std::vector<TpuKernelShape>& kernels, const std::vector<double>& xla,
            const Target& tpu, const TpuModelConstants& c) {
  double loss = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    Result<TpuModelledTime> t = ModelTpuKernel(tpu, kernels[i], c);
    if (!t.ok() || !(t->seconds > 0)) return INFINITY;
    loss += std::abs(LogError(t->seconds, xla[i]));
  }
  return loss;
}


}  // namespace

Result<std::vector<TpuCalibrationSample>> ParseTpuCalibration(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("samples") || !j["samples"].is_array()) {
    return InvalidArgument("calibration file: expected an object with a \"samples\" array");
  }
  std::vector<TpuCalibrationSample> out;
  for (const nlohmann::json& s : j["samples"]) {
    TpuCalibrationSample c;
    if (!s.is_object() || !s.contains("name") || !s["name"].is_string()) {
      return InvalidArgument("calibration file: a sample without a name");
    }
    c.name = s["name"];
    if (!s.contains("kind") || !s["kind"].is_string() || !s.contains("dtype") ||
        !s["dtype"].is_string()) {
      return Bad(c.name, "needs a kind and a dtype");
    }
    c.kind = s["kind"];
    c.dtype = s["dtype"];
    if (c.dtype != "bf16" && c.dtype != "f32") return Bad(c.name, "dtype must be bf16 or f32");
    c.m = IntField(s, "m");
    c.n = IntField(s, "n");
    c.k = IntField(s, "k");
    c.rows = IntField(s, "rows");
    c.cols = IntField(s, "cols");
    c.vpu_ops = IntField(s, "vpu_ops");
    c.transcendental_ops = IntField(s, "transcendental_ops");
    c.inputs = IntField(s, "inputs", 1);
    const nlohmann::json xla = s.value("xla", nlohmann::json::object());
    if (!xla.is_object() || !xla.contains("optimal_seconds") ||
        !xla["optimal_seconds"].is_number() || !(xla["optimal_seconds"].get<double>() > 0)) {
      return Bad(c.name, "needs a positive xla.optimal_seconds");
    }
    c.xla_seconds = xla["optimal_seconds"];
    if (Result<TpuKernelShape> k = DefaultTpuBlocking(c); !k.ok()) return k.status();
    out.push_back(std::move(c));
  }
  return out;
}

Result<TpuKernelShape> DefaultTpuBlocking(const TpuCalibrationSample& s) {
  const int64_t es = s.dtype == "bf16" ? 2 : 4;
  TpuKernelShape k;
  k.name = s.name;
  if (s.kind == "matmul") {
    if (s.m <= 0 || s.n <= 0 || s.k <= 0) return Bad(s.name, "a matmul needs m, n, k > 0");
    const int64_t bm = std::min<int64_t>(512, s.m), bn = std::min<int64_t>(512, s.n),
                  bk = std::min<int64_t>(512, s.k);
    const int64_t ni = CeilDiv(s.m, bm), nj = CeilDiv(s.n, bn), nk = CeilDiv(s.k, bk);
    const int64_t steps = ni * nj * nk;
    // Grid (i, j, k), k innermost. A(i, k) changes every step unless K is one block, when it
    // changes only with i; B(k, j) likewise unless both K and N are one block (copied once).
    const int64_t a_copies = nk > 1 ? steps : ni;
    const int64_t b_copies = (nk > 1 || nj > 1) ? steps : 1;
    const int64_t in_bytes = (a_copies * bm * bk + b_copies * bk * bn) * es;
    const int64_t out_bytes = ni * nj * bm * bn * es;
    k.grid_steps = steps;
    k.mxu_m = bm;
    k.mxu_n = bn;
    k.mxu_k = bk;
    k.mxu_bf16 = s.dtype == "bf16";
    k.vpu_flops_per_step = nk > 1 ? bm * bn : 0;  // accumulating into the f32 scratch
    k.in_bytes_per_step = CeilDiv(in_bytes, steps);
    k.out_bytes_per_step = CeilDiv(out_bytes, steps);
    k.vmem_bytes = 2 * (bm * bk + bk * bn + bm * bn) * es + (nk > 1 ? bm * bn * 4 : 0);
    return k;
  }
  if (s.kind == "reduce") {
    if (s.rows <= 0 || s.cols <= 0) return Bad(s.name, "a reduction needs rows, cols > 0");
    int64_t br = s.rows < 8 ? s.rows : 8;
    while (br * 2 <= std::min<int64_t>(512, s.rows) && br * 2 * s.cols * es <= (4 << 20)) {
      br *= 2;
    }
    k.grid_steps = CeilDiv(s.rows, br);
    k.vpu_flops_per_step = br * s.cols;
    // Every vreg of the block is reduced across lanes, as XLA:TPU's estimate of its own reduce
    // implies (docs/TPU.md); bf16 packs two values per 32-bit word.
    k.xlu_vregs_per_step = CeilDiv(br * s.cols * es, 4096);
    k.in_bytes_per_step = br * s.cols * es;
    k.out_bytes_per_step = br * es;
    k.vmem_bytes = 2 * (br * s.cols + br) * es;
    return k;
  }
  if (s.kind == "chain") {
    if (s.rows <= 0 || s.cols <= 0 || s.inputs <= 0) {
      return Bad(s.name, "a chain needs rows, cols, inputs > 0");
    }
    const int64_t br = std::min<int64_t>(512, s.rows), bc = std::min<int64_t>(1024, s.cols);
    k.grid_steps = CeilDiv(s.rows, br) * CeilDiv(s.cols, bc);
    k.vpu_flops_per_step = s.vpu_ops * br * bc;
    k.transcendentals_per_step = s.transcendental_ops * br * bc;
    k.in_bytes_per_step = s.inputs * br * bc * es;
    k.out_bytes_per_step = br * bc * es;
    k.vmem_bytes = 2 * (s.inputs + 1) * br * bc * es;
    return k;
  }
  return Bad(s.name, "unknown kind '" + s.kind + "' (matmul, reduce, chain)");
}

TpuCalibrationSplit SplitTpuCalibration(std::vector<TpuCalibrationSample> samples) {
  std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  TpuCalibrationSplit split;
  std::map<std::string, int> seen;
  for (TpuCalibrationSample& s : samples) {
    (seen[s.kind]++ % 2 == 0 ? split.fit : split.held_out).push_back(std::move(s));
  }
  return split;
}

TpuModelConstants FittedTpuModelConstants(const Target& tpu) {
  TpuModelConstants c;
  // bench/tpu/model-v5e.json and model-v6e.json, as maxkernel-tpu-fit wrote them.
  if (tpu.name == "tpu-v5e") {
    c.mxu_efficiency = 0.5946035575013605;
    c.f32_matmul_slowdown = 2.2167368234473575;
    c.hbm_efficiency = 0.9364497182084376;
    c.step_overhead_s = 1.5232572527714743e-07;
    c.launch_overhead_s = 1e-09;
    c.xlu_cycles_per_vreg = 40.499824466521815;
  } else if (tpu.name == "tpu-v6e") {
    c.mxu_efficiency = 0.4532561302374955;
    c.f32_matmul_slowdown = 3.022417845327892;
    c.hbm_efficiency = 1.0;
    c.step_overhead_s = 1e-09;
    c.launch_overhead_s = 1e-09;
    c.xlu_cycles_per_vreg = 21.347801919353405;
  }
  return c;
}


Result<TpuFitQuality> EvaluateTpuModel(const std::vector<TpuCalibrationSample>& samples,
                                       const Target& tpu, const TpuModelConstants& c) {
  std::vector<double> modelled, xla, rel;
  for (const TpuCalibrationSample& s : samples) {
    Result<TpuKernelShape> k = DefaultTpuBlocking(s);
    if (!k.ok()) return k.status();
    Result<TpuModelledTime> t = ModelTpuKernel(tpu, *k, c);
    if (!t.ok()) return t.status();
    modelled.push_back(t->seconds);
    xla.push_back(s.xla_seconds);
    rel.push_back(std::abs(t->seconds - s.xla_seconds) / s.xla_seconds);
  }
  TpuFitQuality q;
  q.samples = int(samples.size());
  if (rel.empty()) return q;
  std::sort(rel.begin(), rel.end());
  q.median_rel_error = rel.size() % 2 ? rel[rel.size() / 2]
                                      : (rel[rel.size() / 2 - 1] + rel[rel.size() / 2]) / 2;
  q.spearman_rho = SpearmanRho(modelled, xla);
  return q;
}

Result<TpuModelConstants> FitTpuModelConstants(const std::vector<TpuCalibrationSample>& samples,
                                               const Target& tpu,
                                               const TpuModelConstants& start) {
  if (samples.empty()) return InvalidArgument("no calibration samples to fit on");
  std::vector<TpuKernelShape> kernels;
  std::vector<double> xla;
  for (const TpuCalibrationSample& s : samples) {
    Result<TpuKernelShape> k = DefaultTpuBlocking(s);
    if (!k.ok()) return k.status();
    kernels.push_back(*k);
    xla.push_back(s.xla_seconds);
  }
  struct Param {
    double TpuModelConstants::*field;
    double lo, hi;
  };
  const std::array<Param, 6> params = {{{&TpuModelConstants::xlu_cycles_per_vreg, 1, 128},
                                        {&TpuModelConstants::mxu_efficiency, 0.05, 1},
                                        {&TpuModelConstants::hbm_efficiency, 0.05, 1},
                                        {&TpuModelConstants::f32_matmul_slowdown, 1, 16},
                                        {&TpuModelConstants::step_overhead_s, 1e-9, 1e-4},
                                        {&TpuModelConstants::launch_overhead_s, 1e-9, 1e-4}}};
  TpuModelConstants best = start;
  for (const Param& p : params) best.*p.field = std::clamp(best.*p.field, p.lo, p.hi);
  double best_loss = Loss(kernels, xla, tpu, best);
  if (!std::isfinite(best_loss)) {
    return InvalidArgument("the starting constants cannot model every calibration sample");
  }
  // Multiplicative moves of one constant, or of two together (same or opposite direction:
  // the MXU efficiency and the f32 slowdown, or the MXU and HBM efficiencies, trade off against
  // each other where a step's max() switches sides, and single moves stall there). The step is
  // halved (in log) whenever no move improves the loss.
  auto try_move = [&](const TpuModelConstants& trial) {
    const double loss = Loss(kernels, xla, tpu, trial);
    if (loss < best_loss * (1 - 1e-12)) {
      best = trial;
      best_loss = loss;
      return true;
    }
    return false;
  };
  auto moved = [&](const TpuModelConstants& from, const Param& p, double f) {
    TpuModelConstants to = from;
    to.*p.field = std::clamp(from.*p.field * f, p.lo, p.hi);
    return to;
  };
  for (double factor = 4; factor > 1.0005; factor = std::sqrt(factor)) {
    for (bool improved = true; improved;) {
      improved = false;
      for (size_t i = 0; i < params.size(); ++i) {
        for (double f : {factor, 1 / factor}) {
          improved |= try_move(moved(best, params[i], f));
          for (size_t j = i + 1; j < params.size(); ++j) {
            for (double g : {factor, 1 / factor}) {
              improved |= try_move(moved(moved(best, params[i], f), params[j], g));
            }
          }
        }
      }
    }
  }
  return best;
}

}  // namespace mk::target
