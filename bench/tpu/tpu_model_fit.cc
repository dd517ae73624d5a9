// maxkernel-tpu-fit CALIBRATION.json TARGET OUT.json
//
// Fits the TPU performance model's constants (target/tpu_perf_model.h) on the fit half of a
// calibration file (bench/tpu/calibration-<gen>.json: XLA:TPU's estimates of plain ops), and
// writes them with the held-out half's median relative error and Spearman rho, for the default
// constants and the fitted ones, to OUT.json (bench/tpu/model-<gen>.json). Every time involved
// is an estimate or a model: no TPU ran anything.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "target/target.h"
#include "target/tpu_calibration.h"

namespace {

nlohmann::json Quality(const mk::target::TpuFitQuality& q) {
  return {{"samples", q.samples},
          {"median_rel_error", q.median_rel_error},
          {"spearman_rho", q.spearman_rho}};
}

int Fail(const std::string& message) {
  std::cerr << "maxkernel-tpu-fit: error: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mk::target;
  if (argc != 4) {
    std::cerr << "usage: maxkernel-tpu-fit CALIBRATION.json TARGET OUT.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) return Fail(std::string("cannot read ") + argv[1]);
  const nlohmann::json cal = nlohmann::json::parse(in, nullptr, false);
  if (cal.is_discarded()) return Fail(std::string(argv[1]) + ": not JSON");
  mk::Result<Target> tpu = TargetByName(argv[2]);
  if (!tpu.ok()) return Fail(tpu.status().message());
  mk::Result<std::vector<TpuCalibrationSample>> samples = ParseTpuCalibration(cal);
  if (!samples.ok()) return Fail(samples.status().message());
  const TpuCalibrationSplit split = SplitTpuCalibration(*samples);
  mk::Result<TpuModelConstants> fitted = FitTpuModelConstants(split.fit, *tpu);
  if (!fitted.ok()) return Fail(fitted.status().message());
  const TpuModelConstants defaults = TpuModelConstants::Default();
  nlohmann::json out = {
      {"about",
       "The TPU performance model's constants fitted to XLA:TPU's cost_analysis() estimates "
       "(compile-only, no TPU) of the fit half of the calibration samples; the held-out half "
       "judges them. All times are modelled or estimated, none measured. Written by "
       "maxkernel-tpu-fit."},
      {"target", tpu->name},
      {"calibration", cal.value("generation", "")},
      {"versions", cal.value("versions", nlohmann::json::object())},
      {"split", "within each kind, in name order, alternate samples: even -> fit, odd -> held out"},
      {"constants", ToJson(*fitted)},
      {"default_constants", ToJson(defaults)}};
  for (auto [key, consts] : {std::pair{"fitted", *fitted}, std::pair{"default", defaults}}) {
    for (auto [half, set] : {std::pair{"fit", &split.fit}, std::pair{"held_out", &split.held_out}}) {
      mk::Result<TpuFitQuality> q = EvaluateTpuModel(*set, *tpu, consts);
      if (!q.ok()) return Fail(q.status().message());
      out["quality"][key][half] = Quality(*q);
    }
  }
  // Every sample's modelled time (fitted constants) beside XLA:TPU's estimate.
  for (auto [half, set] : {std::pair{"fit", &split.fit}, std::pair{"held_out", &split.held_out}}) {
    for (const TpuCalibrationSample& s : *set) {
      mk::Result<TpuKernelShape> k = DefaultTpuBlocking(s);
      mk::Result<TpuModelledTime> t =
          k.ok() ? ModelTpuKernel(*tpu, *k, *fitted) : mk::Result<TpuModelledTime>(k.status());
      if (!t.ok()) return Fail(t.status().message());
      out["samples"].push_back({{"name", s.name},
                                {"half", half},
                                {"xla_s", s.xla_seconds},
                                {"modelled_s", t->seconds},
                                {"bound", t->bound}});
    }
  }
  std::ofstream(argv[3]) << out.dump(1) << "\n";
  std::cout << out["quality"].dump(1) << "\n" << out["constants"].dump(1) << "\n";
  return 0;
}
