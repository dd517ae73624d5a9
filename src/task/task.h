// A task: the unit of work maxkernel optimizes. On disk it is a directory holding task.yaml
// (what to compute, on which inputs, within which tolerances; docs/TASKS.md is the schema),
// module.hlo (the computation, HLO text before XLA's optimizations) and optional data/*.npy
// (structured integer inputs such as page tables). Everything else — the inputs themselves —
// is regenerated from seeds (task/inputs.h), so a task needs no Python to be evaluated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hlo/module.h"
#include "hlo/shape.h"
#include "support/status.h"

namespace mk::task {

// How a parameter's values are produced (the generator spec in docs/TASKS.md).
struct InitSpec {
  enum class Kind { kNormal, kUniform, kRandint, kData };
  Kind kind = Kind::kNormal;
  double mean = 0.0, std = 1.0;  // normal
  double low = 0.0, high = 1.0;  // uniform: [low, high)
  int64_t int_low = 0, int_high = 2;  // randint: [int_low, int_high)
  std::string data_file;        // data: path relative to the task directory
};
std::string_view InitKindName(InitSpec::Kind kind);  // "normal", "uniform", "randint", "data"

struct TaskParameter {
  std::string name;
  hlo::Shape shape;  // array shape: dtype + dims
  InitSpec init;
  SourceLoc loc = {};  // where task.yaml defines it, for ValidateTask's errors (unknown: line 0)
};

struct TaskOutput {
  hlo::Shape shape;
  double atol = 1e-2;
  double rtol = 1e-2;
  SourceLoc loc = {};  // where task.yaml defines it (unknown: line 0)
};

// XLA:CPU timings recorded by `maxkernel baseline --xla` (seconds).
struct Baseline {
  std::string engine = "xla-cpu";
  double median_s = 0, p10_s = 0, p90_s = 0;
  int64_t runs = 0;
  std::string cpu, jax_version, date;
};

struct Task {
  int format = 1;
  std::string id, name, description, operator_name;
  std::string source_workload;  // workload/reference file (relative to the task dir) or empty
  std::string source_function;  // function name in that file (suite workloads: "function")
  std::string scale;            // ci | bench | full | custom
  std::string dtype;            // the dominant element type, HLO name (bf16, f32, ...)
  uint64_t seed = 0;            // default seed of the inputs
  std::vector<TaskParameter> parameters;
  std::vector<TaskOutput> outputs;
  double atol = 1e-2, rtol = 1e-2;  // task-wide tolerance (outputs may tighten or loosen it)
  int64_t flops = 0;
  int64_t bytes = 0;
  std::optional<Baseline> baseline;

  std::string dir;  // where it was loaded from (not serialized)
  std::string module_path() const { return dir + "/module.hlo"; }
};

// Parses task.yaml text. `filename` names the file in error messages (file:line:col).
Result<Task> ParseTaskYaml(const std::string& text, const std::string& filename = "task.yaml");
// Serializes a task as task.yaml text (with a comment header pointing at docs/TASKS.md).
std::string TaskToYaml(const Task& task);

// Loads dir/task.yaml and checks it is self-consistent (Validate). Does not parse the module.
Result<Task> LoadTask(const std::string& dir);
// Loads the task and its module, and checks that the module's entry signature agrees with the
// task's parameters and outputs.
struct LoadedTask {
  Task task;
  std::unique_ptr<hlo::Module> module;
};
Result<LoadedTask> LoadTaskWithModule(const std::string& dir);

// Internal consistency: names unique, shapes arrays of supported dtypes, init kinds fit the
// dtypes, tolerances finite and non-negative, data files relative paths without '..'. Errors
// point at the parameter's or output's line in task.yaml where it was parsed from one.
Status ValidateTask(const Task& task);
// The path of a `kind: data` parameter's file, checked to stay inside task.dir once symlinks
// are resolved (a link in data/ to /etc/passwd is refused, exit 2). LoadTask checks every data
// parameter; the input generator reads the file through this.
Result<std::string> ResolveDataFile(const Task& task, const TaskParameter& param);
// The module's entry parameters and root must match the task's parameters and outputs.
Status CheckTaskAgainstModule(const Task& task, const hlo::Module& module);

// Records a baseline into dir/task.yaml (rewritten atomically), keeping everything else.
Status RecordBaseline(const std::string& dir, const Baseline& baseline);

// Writes `files` (name -> content, names may contain one "data/" level) as a new task directory
// `dir`: everything goes to a temporary sibling directory that is renamed into place at the end,
// so a failure never leaves a half-written task. An existing `dir` is replaced only if
// `overwrite`.
Status WriteTaskDirectory(const std::string& dir,
                          const std::vector<std::pair<std::string, std::string>>& files,
                          bool overwrite);

// Moves a fully written task directory `staged` (a sibling of `dir`) to `dir`, replacing an
// existing `dir` only if `overwrite`. On failure `staged` is removed and `dir` is unchanged.
Status CommitTaskDirectory(const std::string& staged, const std::string& dir, bool overwrite);

// Creates an empty staging directory beside `dir` (same parent, hidden name), for a task that
// is written by someone else (the Python bridge) and committed with CommitTaskDirectory.
Result<std::string> MakeStagingDirectory(const std::string& dir);

}  // namespace mk::task
