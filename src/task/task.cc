#include "task/task.h"

#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "hlo/parser.h"
#include "support/regular_file.h"
#include "support/text_escape.h"

namespace mk::task {
namespace fs = std::filesystem;

std::string_view InitKindName(InitSpec::Kind kind) {
  switch (kind) {
    case InitSpec::Kind::kNormal: return "normal";
    case InitSpec::Kind::kUniform: return "uniform";
    case InitSpec::Kind::kRandint: return "randint";
    case InitSpec::Kind::kData: return "data";
  }
  return "?";
}

namespace {

// yaml-cpp reports errors by throwing; every access below goes through these helpers, which
// turn a missing key or a wrongly typed scalar into an InvalidArgument at the node's position.
struct YamlReader {
  std::string file;

  SourceLoc Loc(const YAML::Node& node) const {
    // A missing key's node (root["name"] of a task without a name) is invalid: its Mark()
    // throws, which turned every task without the optional `name` into "malformed task".
    if (!node.IsDefined()) return SourceLoc{file, 0, 0};
    const YAML::Mark m = node.Mark();
    if (m.is_null()) return SourceLoc{file, 0, 0};
    return SourceLoc{file, m.line + 1, m.column + 1};
  }

  Result<YAML::Node> Child(const YAML::Node& map, const std::string& key, bool required) const {
    if (!map.IsMap()) return InvalidArgument("expected a mapping", Loc(map));
    YAML::Node child = map[key];
    if (!child.IsDefined() || child.IsNull()) {
      if (required) return InvalidArgument("missing required key '" + key + "'", Loc(map));
      return YAML::Node(YAML::NodeType::Undefined);
    }
    return child;
  }

  template <typename T>
  Result<T> Scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) return InvalidArgument(what + ": expected a scalar", Loc(node));
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      return InvalidArgument(what + ": cannot read '" + node.Scalar() + "' as " + TypeName<T>(),
                             Loc(node));
    }
  }

  // Reads map[key] if present, else leaves `out` unchanged.
  template <typename T>
  Status Optional(const YAML::Node& map, const std::string& key, T& out) const {
    MK_ASSIGN_OR_RETURN(YAML::Node child, Child(map, key, false));
    if (!child.IsDefined()) return Status::Ok();
    MK_ASSIGN_OR_RETURN(out, Scalar<T>(child, key));
    return Status::Ok();
  }
  template <typename T>
  Status Required(const YAML::Node& map, const std::string& key, T& out) const {
    MK_ASSIGN_OR_RETURN(YAML::Node child, Child(map, key, true));
    MK_ASSIGN_OR_RETURN(out, Scalar<T>(child, key));
    return Status::Ok();
  }

  // A tolerance: a finite number >= 0. `.inf` and `.nan` read as doubles, so they are named
  // here ("must be finite") rather than failing a ">= 0" comparison with a misleading message.
  Status OptionalNonNegative(const YAML::Node& map, const std::string& key, double& out) const {
    MK_ASSIGN_OR_RETURN(YAML::Node child, Child(map, key, false));
    if (!child.IsDefined()) return Status::Ok();
    MK_ASSIGN_OR_RETURN(double v, Scalar<double>(child, key));
    if (!std::isfinite(v)) {
      return InvalidArgument(key + " must be a finite number, got '" + child.Scalar() + "'",
                             Loc(child));
    }
    if (v < 0) return InvalidArgument(key + " must be >= 0, got '" + child.Scalar() + "'", Loc(child));
    out = v;
    return Status::Ok();
  }

  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else return "an integer";
  }

  // `shape: [2, 3]` + `dtype: bf16` of a parameter or output.
  Result<hlo::Shape> ShapeOf(const YAML::Node& map, const std::string& what) const {
    MK_ASSIGN_OR_RETURN(YAML::Node dims_node, Child(map, "shape", true));
    if (!dims_node.IsSequence()) {
      return InvalidArgument(what + ": 'shape' must be a list of dimensions", Loc(dims_node));
    }
    std::vector<int64_t> dims;
    // The HLO parser's bounds (parse_shape_literal.cc): the element count times the widest
    // element size must fit in int64, so that no byte size computed later overflows.
    constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;
    constexpr size_t kMaxRank = 64;
    int64_t elements = 1;
    for (const YAML::Node& d : dims_node) {
      MK_ASSIGN_OR_RETURN(int64_t v, Scalar<int64_t>(d, what + " dimension"));
      if (v < 0) return InvalidArgument(what + ": negative dimension " + std::to_string(v), Loc(d));
      if (v > 0 && elements > kMaxElements / v) {
        return InvalidArgument(what + ": shape has too many elements (dimension " +
                                   std::to_string(v) + ")",
                               Loc(d));
      }
      elements *= v;
      dims.push_back(v);
      if (dims.size() > kMaxRank) {
        return InvalidArgument(what + ": shape has more than " + std::to_string(kMaxRank) +
                                   " dimensions",
                               Loc(d));
      }
    }
    std::string dtype_name;
    MK_RETURN_IF_ERROR(Required(map, "dtype", dtype_name));
    std::optional<hlo::DType> dtype = hlo::ParseDType(dtype_name);
    if (!dtype || !hlo::IsEvaluable(*dtype)) {
      return InvalidArgument(what + ": unsupported dtype '" + dtype_name +
                                 "' (use an HLO name: pred, s32, bf16, f16, f32, ...)",
                             Loc(map["dtype"]));
    }
    return hlo::Shape(*dtype, std::move(dims));
  }
};

Result<InitSpec> ParseInit(const YamlReader& r, const YAML::Node& node, const std::string& what) {
  InitSpec init;
  if (!node.IsMap()) return InvalidArgument(what + ": 'init' must be a mapping", r.Loc(node));
  std::string kind;
  MK_RETURN_IF_ERROR(r.Required(node, "kind", kind));
  if (kind == "normal") {
    init.kind = InitSpec::Kind::kNormal;
    MK_RETURN_IF_ERROR(r.Optional(node, "mean", init.mean));
    MK_RETURN_IF_ERROR(r.Optional(node, "std", init.std));
  } else if (kind == "uniform") {
    init.kind = InitSpec::Kind::kUniform;
    MK_RETURN_IF_ERROR(r.Optional(node, "low", init.low));
    MK_RETURN_IF_ERROR(r.Optional(node, "high", init.high));
  } else if (kind == "randint") {
    init.kind = InitSpec::Kind::kRandint;
    MK_RETURN_IF_ERROR(r.Required(node, "low", init.int_low));
    MK_RETURN_IF_ERROR(r.Required(node, "high", init.int_high));
  } else if (kind == "data") {
    init.kind = InitSpec::Kind::kData;
    MK_RETURN_IF_ERROR(r.Required(node, "file", init.data_file));
  } else {
    return InvalidArgument(what + ": unknown init kind '" + kind +
                               "' (expected normal, uniform, randint or data)",
                           r.Loc(node));
  }
  return init;
}

// Task ids and names end up in file names, generated sources and terminal lines: characters
// that break a line or hide text (controls, ESC, U+2028, bidi overrides, non-UTF-8 bytes) are
// refused here; everything else is escaped where it is written (support/text_escape.h).
Status CheckPrintableLabel(const char* key, const std::string& value, const SourceLoc& loc) {
  std::optional<size_t> bad = FirstUnsafeCharacter(value);
  if (!bad) return Status::Ok();
  return InvalidArgument(std::string("task ") + key + " holds " + DescribeCharacterAt(value, *bad) +
                             " at byte " + std::to_string(*bad) +
                             ": ids and names must be printable text on one line",
                         loc);
}

// yaml-cpp keeps both entries of a repeated key and answers a lookup with the first, so a second
// `atol:` would be ignored without a word. Refused at the repeated key. Iterative: a deeply
// nested document must not exhaust the stack.
Status CheckNoDuplicateKeys(const YamlReader& r, const YAML::Node& root) {
  std::vector<YAML::Node> pending = {root};
  while (!pending.empty()) {
    YAML::Node node = pending.back();
    pending.pop_back();
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) pending.push_back(item);
    } else if (node.IsMap()) {
      std::set<std::string> keys;
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && !keys.insert(entry.first.Scalar()).second) {
          return InvalidArgument("duplicate key '" + entry.first.Scalar() + "'", r.Loc(entry.first));
        }
        pending.push_back(entry.first);
        pending.push_back(entry.second);
      }
    }
  }
  return Status::Ok();
}

Result<Task> ParseTaskNode(const YamlReader& r, const YAML::Node& root) {
  Task t;
  if (!root.IsMap()) return InvalidArgument("task.yaml must be a mapping", r.Loc(root));
  MK_RETURN_IF_ERROR(CheckNoDuplicateKeys(r, root));
  MK_RETURN_IF_ERROR(r.Optional(root, "format", t.format));
  if (t.format != 1) {
    return InvalidArgument("unsupported task format " + std::to_string(t.format) +
                               " (this maxkernel reads format 1)",
                           r.Loc(root["format"]));
  }
  MK_RETURN_IF_ERROR(r.Required(root, "id", t.id));
  MK_RETURN_IF_ERROR(r.Optional(root, "name", t.name));
  MK_RETURN_IF_ERROR(CheckPrintableLabel("id", t.id, r.Loc(root["id"])));
  MK_RETURN_IF_ERROR(CheckPrintableLabel("name", t.name, r.Loc(root["name"])));
  MK_RETURN_IF_ERROR(r.Optional(root, "description", t.description));
  MK_RETURN_IF_ERROR(r.Optional(root, "operator", t.operator_name));
  MK_RETURN_IF_ERROR(r.Optional(root, "scale", t.scale));
  MK_RETURN_IF_ERROR(r.Optional(root, "dtype", t.dtype));
  MK_RETURN_IF_ERROR(r.Optional(root, "seed", t.seed));
  MK_RETURN_IF_ERROR(r.Optional(root, "flops", t.flops));
  MK_RETURN_IF_ERROR(r.Optional(root, "bytes", t.bytes));

  MK_ASSIGN_OR_RETURN(YAML::Node source, r.Child(root, "source", false));
  if (source.IsDefined()) {
    MK_RETURN_IF_ERROR(r.Optional(source, "workload", t.source_workload));
    MK_RETURN_IF_ERROR(r.Optional(source, "function", t.source_function));
  }

  MK_ASSIGN_OR_RETURN(YAML::Node tol, r.Child(root, "tolerance", false));
  if (tol.IsDefined()) {
    MK_RETURN_IF_ERROR(r.OptionalNonNegative(tol, "atol", t.atol));
    MK_RETURN_IF_ERROR(r.OptionalNonNegative(tol, "rtol", t.rtol));
  }

  MK_ASSIGN_OR_RETURN(YAML::Node params, r.Child(root, "parameters", true));
  if (!params.IsSequence()) return InvalidArgument("'parameters' must be a list", r.Loc(params));
  for (size_t i = 0; i < params.size(); ++i) {
    const YAML::Node p = params[i];
    const std::string what = "parameter " + std::to_string(i);
    if (!p.IsMap()) return InvalidArgument(what + " must be a mapping", r.Loc(p));
    TaskParameter param;
    MK_RETURN_IF_ERROR(r.Required(p, "name", param.name));
    MK_ASSIGN_OR_RETURN(param.shape, r.ShapeOf(p, what + " ('" + param.name + "')"));
    MK_ASSIGN_OR_RETURN(YAML::Node init, r.Child(p, "init", true));
    MK_ASSIGN_OR_RETURN(param.init, ParseInit(r, init, what + " ('" + param.name + "')"));
    param.loc = r.Loc(p);
    t.parameters.push_back(std::move(param));
  }

  MK_ASSIGN_OR_RETURN(YAML::Node outputs, r.Child(root, "outputs", true));
  if (!outputs.IsSequence()) return InvalidArgument("'outputs' must be a list", r.Loc(outputs));
  if (outputs.size() == 0) return InvalidArgument("task has no outputs", r.Loc(outputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const YAML::Node o = outputs[i];
    const std::string what = "output " + std::to_string(i);
    if (!o.IsMap()) return InvalidArgument(what + " must be a mapping", r.Loc(o));
    TaskOutput out;
    MK_ASSIGN_OR_RETURN(out.shape, r.ShapeOf(o, what));
    out.atol = t.atol;
    out.rtol = t.rtol;
    MK_RETURN_IF_ERROR(r.OptionalNonNegative(o, "atol", out.atol));
    MK_RETURN_IF_ERROR(r.OptionalNonNegative(o, "rtol", out.rtol));
    out.loc = r.Loc(o);
    t.outputs.push_back(std::move(out));
  }

  MK_ASSIGN_OR_RETURN(YAML::Node base, r.Child(root, "baseline", false));
  if (base.IsDefined()) {
    Baseline b;
    MK_RETURN_IF_ERROR(r.Optional(base, "engine", b.engine));
    MK_RETURN_IF_ERROR(r.Required(base, "median_s", b.median_s));
    MK_RETURN_IF_ERROR(r.Optional(base, "p10_s", b.p10_s));
    MK_RETURN_IF_ERROR(r.Optional(base, "p90_s", b.p90_s));
    MK_RETURN_IF_ERROR(r.Optional(base, "runs", b.runs));
    MK_RETURN_IF_ERROR(r.Optional(base, "cpu", b.cpu));
    MK_RETURN_IF_ERROR(r.Optional(base, "jax_version", b.jax_version));
    MK_RETURN_IF_ERROR(r.Optional(base, "date", b.date));
    t.baseline = b;
  }
  return t;
}

// A YAML double-quoted scalar that reads back as `s` (support/text_escape.h). JSON's quoting,
// used before, wrote DEL, C1 controls, NEL and U+2028 raw, which YAML readers refuse (ours and
// PyYAML) or fold into a space (PyYAML). Bytes that are not UTF-8 become U+FFFD.
std::string Quote(const std::string& s) { return YamlQuoted(s); }

std::string Number(double v) {
  if (!std::isfinite(v)) return v > 0 ? ".inf" : (v < 0 ? "-.inf" : ".nan");
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  if (ec != std::errc()) return "0.0";
  std::string s(buf, end);
  // YAML 1.1 readers (PyYAML) take a number as a float only with a '.': 1e-05 -> 1.0e-05.
  const size_t e = s.find_first_of("eE");
  if (s.find('.') == std::string::npos) s.insert(e == std::string::npos ? s.size() : e, ".0");
  return s;
}

std::string DimsText(const hlo::Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.dims().size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape.dims()[i]);
  }
  return s + "]";
}

std::string InitText(const InitSpec& init) {
  switch (init.kind) {
    case InitSpec::Kind::kNormal:
      return "{kind: normal, mean: " + Number(init.mean) + ", std: " + Number(init.std) + "}";
    case InitSpec::Kind::kUniform:
      return "{kind: uniform, low: " + Number(init.low) + ", high: " + Number(init.high) + "}";
    case InitSpec::Kind::kRandint:
      return "{kind: randint, low: " + std::to_string(init.int_low) +
             ", high: " + std::to_string(init.int_high) + "}";
    case InitSpec::Kind::kData:
      return "{kind: data, file: " + Quote(init.data_file) + "}";
  }
  return "{}";
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot write " + tmp);
    out << content;
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return IoError("cannot write " + tmp);
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return IoError("cannot replace " + path + ": " + ec.message());
  }
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) { return ReadRegularFile(path); }

// yaml-cpp replaces what a YAML stream may not hold (bytes that are not UTF-8, control
// characters) with U+FFFD and counts columns in its decoded text, so its error positions stop
// matching the file after the first such character (found by tests/fuzz/task_yaml_fuzz:
// "i\xff\0" gave 1:5 in a 3-byte file). A task.yaml is UTF-8 YAML text; anything else is
// refused at the offending byte.
Status CheckYamlText(const std::string& text, const std::string& filename) {
  std::optional<size_t> bad = FirstNonYamlPrintable(text);
  if (!bad) return Status::Ok();
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < *bad; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return InvalidArgument("task.yaml holds " + DescribeCharacterAt(text, *bad) + " at byte " +
                             std::to_string(*bad) +
                             ": it must be UTF-8 text without control characters (tab and line "
                             "breaks excepted)",
                         SourceLoc{filename, line, static_cast<int>(*bad - line_start + 1)});
}

// The 1-based position of yaml-cpp's 0-based (line, column), moved back to the end of the text
// if it lies past it: at the end of the input yaml-cpp reads one character beyond the text (its
// end-of-stream marker), so `"\` (an escape cut by the end) was reported at 1:4 of a 2-byte
// file (found by tests/fuzz/task_yaml_fuzz).
SourceLoc PositionInText(const std::string& text, const std::string& filename, int line0,
                         int column0) {
  size_t line_start = 0;
  int line = 0;
  while (line < line0) {
    const size_t nl = text.find('\n', line_start);
    if (nl == std::string::npos) break;  // past the last line: stay on it
    line_start = nl + 1;
    ++line;
  }
  const size_t line_end = std::min(text.find('\n', line_start), text.size());
  const int last_column = static_cast<int>(line_end - line_start);  // 0-based, one past the text
  const int column = line < line0 ? last_column : std::clamp(column0, 0, last_column);
  return SourceLoc{filename, line + 1, column + 1};
}

}  // namespace

Result<Task> ParseTaskYaml(const std::string& text, const std::string& filename) {
  MK_RETURN_IF_ERROR(CheckYamlText(text, filename));
  YamlReader reader{filename};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    SourceLoc loc{filename, 0, 0};
    if (!e.mark.is_null()) loc = PositionInText(text, filename, e.mark.line, e.mark.column);
    return InvalidArgument("malformed YAML: " + e.msg, loc);
  }
  try {
    MK_ASSIGN_OR_RETURN(Task task, ParseTaskNode(reader, root));
    return task;
  } catch (const YAML::Exception& e) {  // defensive: no yaml-cpp exception may escape
    SourceLoc loc{filename, 0, 0};
    if (!e.mark.is_null()) loc = SourceLoc{filename, e.mark.line + 1, e.mark.column + 1};
    return InvalidArgument("malformed task: " + e.msg, loc);
  }
}

std::string TaskToYaml(const Task& t) {
  std::ostringstream y;
  y << "# maxkernel task (schema: docs/TASKS.md). Inputs are regenerated from `seed` and each\n"
       "# parameter's `init`; edit shapes/inits/tolerances freely, then run `maxkernel eval`.\n";
  y << "format: " << t.format << "\n";
  y << "id: " << Quote(t.id) << "\n";
  y << "name: " << Quote(t.name) << "\n";
  y << "description: " << Quote(t.description) << "\n";
  y << "operator: " << Quote(t.operator_name) << "\n";
  if (!t.source_workload.empty() || !t.source_function.empty()) {
    y << "source: {workload: " << Quote(t.source_workload)
      << ", function: " << Quote(t.source_function) << "}\n";
  }
  y << "scale: " << Quote(t.scale) << "\n";
  y << "dtype: " << Quote(t.dtype) << "\n";
  y << "seed: " << t.seed << "\n";
  y << "parameters:\n";
  for (const TaskParameter& p : t.parameters) {
    y << "  - name: " << Quote(p.name) << "\n";
    y << "    shape: " << DimsText(p.shape) << "\n";
    y << "    dtype: " << hlo::DTypeName(p.shape.dtype()) << "\n";
    y << "    init: " << InitText(p.init) << "\n";
  }
  y << "outputs:\n";
  for (const TaskOutput& o : t.outputs) {
    y << "  - {shape: " << DimsText(o.shape) << ", dtype: " << hlo::DTypeName(o.shape.dtype())
      << ", atol: " << Number(o.atol) << ", rtol: " << Number(o.rtol) << "}\n";
  }
  y << "tolerance: {atol: " << Number(t.atol) << ", rtol: " << Number(t.rtol) << "}\n";
  y << "flops: " << t.flops << "\n";
  y << "bytes: " << t.bytes << "\n";
  if (t.baseline) {
    const Baseline& b = *t.baseline;
    y << "baseline:\n";
    y << "  engine: " << Quote(b.engine) << "\n";
    y << "  median_s: " << Number(b.median_s) << "\n";
    y << "  p10_s: " << Number(b.p10_s) << "\n";
    y << "  p90_s: " << Number(b.p90_s) << "\n";
    y << "  runs: " << b.runs << "\n";
    y << "  cpu: " << Quote(b.cpu) << "\n";
    y << "  jax_version: " << Quote(b.jax_version) << "\n";
    y << "  date: " << Quote(b.date) << "\n";
  }
  return y.str();
}

Status ValidateTask(const Task& t) {
  const SourceLoc file_loc{t.dir.empty() ? "task.yaml" : t.dir + "/task.yaml", 0, 0};
  const SourceLoc& loc = file_loc;
  if (t.id.empty()) return InvalidArgument("task has an empty id", loc);
  MK_RETURN_IF_ERROR(CheckPrintableLabel("id", t.id, loc));
  MK_RETURN_IF_ERROR(CheckPrintableLabel("name", t.name, loc));
  if (t.outputs.empty()) return InvalidArgument("task has no outputs", loc);
  std::set<std::string> names;
  for (size_t i = 0; i < t.parameters.size(); ++i) {
    const TaskParameter& p = t.parameters[i];
    const std::string what = "parameter " + std::to_string(i) + " ('" + p.name + "')";
    const SourceLoc& loc = p.loc.known() ? p.loc : file_loc;
    if (p.name.empty()) return InvalidArgument("parameter " + std::to_string(i) + " has no name", loc);
    if (!names.insert(p.name).second) {
      return InvalidArgument("duplicate parameter name '" + p.name + "'", loc);
    }
    const hlo::DType dt = p.shape.dtype();
    const bool is_float = hlo::IsFloat(dt);
    switch (p.init.kind) {
      case InitSpec::Kind::kNormal:
        if (!is_float) return InvalidArgument(what + ": 'normal' needs a float dtype", loc);
        if (!std::isfinite(p.init.mean) || !std::isfinite(p.init.std) || p.init.std < 0) {
          return InvalidArgument(what + ": normal needs a finite mean and std >= 0", loc);
        }
        break;
      case InitSpec::Kind::kUniform:
        if (!is_float) return InvalidArgument(what + ": 'uniform' needs a float dtype", loc);
        if (!std::isfinite(p.init.low) || !std::isfinite(p.init.high) || p.init.high < p.init.low) {
          return InvalidArgument(what + ": uniform needs finite low <= high", loc);
        }
        break;
      case InitSpec::Kind::kRandint: {
        if (is_float) return InvalidArgument(what + ": 'randint' needs an integer or pred dtype", loc);
        if (p.init.int_high <= p.init.int_low) {
          return InvalidArgument(what + ": randint needs low < high", loc);
        }
        // The generator computes in double: keep the range exactly representable.
        constexpr int64_t kMaxRange = int64_t{1} << 52;
        const double range = static_cast<double>(p.init.int_high) - static_cast<double>(p.init.int_low);
        if (range > static_cast<double>(kMaxRange)) {
          return InvalidArgument(what + ": randint range is larger than 2^52", loc);
        }
        break;
      }
      case InitSpec::Kind::kData: {
        const fs::path f(p.init.data_file);
        if (f.empty() || f.is_absolute()) {
          return InvalidArgument(what + ": data file must be a relative path inside the task", loc);
        }
        for (const auto& part : f) {
          if (part == "..") return InvalidArgument(what + ": data file must not contain '..'", loc);
        }
        break;
      }
    }
  }
  auto check_tolerances = [](double atol, double rtol, const SourceLoc& where) -> Status {
    if (!std::isfinite(atol) || !std::isfinite(rtol)) {
      return InvalidArgument("tolerances must be finite numbers", where);
    }
    if (atol < 0 || rtol < 0) return InvalidArgument("tolerances must be >= 0", where);
    return Status::Ok();
  };
  MK_RETURN_IF_ERROR(check_tolerances(t.atol, t.rtol, loc));
  for (const TaskOutput& o : t.outputs) {
    MK_RETURN_IF_ERROR(check_tolerances(o.atol, o.rtol, o.loc.known() ? o.loc : file_loc));
  }
  if (t.flops < 0 || t.bytes < 0) return InvalidArgument("flops and bytes must be >= 0", loc);
  return Status::Ok();
}

Result<Task> LoadTask(const std::string& dir) {
  const std::string path = dir + "/task.yaml";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("task directory " + dir + " does not exist");
  auto text = ReadFile(path);
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) {
    return NotFound("no task.yaml in " + dir);
  }
  MK_RETURN_IF_ERROR(text.status());  // a FIFO or device named task.yaml, an unreadable file
  MK_ASSIGN_OR_RETURN(Task task, ParseTaskYaml(*text, path));
  task.dir = dir;
  MK_RETURN_IF_ERROR(ValidateTask(task));
  for (const TaskParameter& p : task.parameters) {
    if (p.init.kind == InitSpec::Kind::kData) MK_RETURN_IF_ERROR(ResolveDataFile(task, p).status());
  }
  return task;
}

Result<std::string> ResolveDataFile(const Task& t, const TaskParameter& param) {
  const SourceLoc loc = param.loc.known() ? param.loc : SourceLoc{t.dir + "/task.yaml", 0, 0};
  const std::string path = t.dir.empty() ? param.init.data_file : t.dir + "/" + param.init.data_file;
  // ValidateTask refused absolute paths and '..'; a symlink (data/x.npy -> /etc/passwd, or a
  // linked data/ folder) is only seen once it is resolved. A file that does not exist resolves
  // to where it would be, and its reader says it is missing.
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(t.dir.empty() ? fs::path(".") : fs::path(t.dir), ec);
  if (ec) return IoError("cannot resolve the task directory " + t.dir + ": " + ec.message());
  const fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec) return IoError("cannot resolve " + path + ": " + ec.message());
  const fs::path rel = resolved.lexically_relative(root);
  if (rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
    return InvalidArgument("parameter '" + param.name + "': data file " + param.init.data_file +
                               " resolves to " + resolved.string() +
                               ", outside the task directory (a symlink?)",
                           loc);
  }
  return path;
}

Status CheckTaskAgainstModule(const Task& t, const hlo::Module& module) {
  const SourceLoc loc{t.module_path(), 0, 0};
  const hlo::Computation* entry = module.entry();
  if (!entry) return InvalidArgument("module has no ENTRY computation", loc);
  if (entry->parameters().size() != t.parameters.size()) {
    return InvalidArgument("task.yaml lists " + std::to_string(t.parameters.size()) +
                               " parameters but the module's entry takes " +
                               std::to_string(entry->parameters().size()),
                           loc);
  }
  for (size_t i = 0; i < t.parameters.size(); ++i) {
    const hlo::Shape& want = entry->parameter(i)->shape;
    const hlo::Shape& got = t.parameters[i].shape;
    if (!want.SameAs(got)) {
      return InvalidArgument("parameter " + std::to_string(i) + " ('" + t.parameters[i].name +
                                 "') is " + got.ToString(false) + " in task.yaml but " +
                                 want.ToString(false) + " in the module",
                             loc);
    }
  }
  const hlo::Instruction* root = entry->root();
  if (!root) return InvalidArgument("module entry has no ROOT", loc);
  std::vector<hlo::Shape> results;
  if (root->shape.is_tuple()) {
    results = root->shape.tuple_shapes();
  } else {
    results.push_back(root->shape);
  }
  if (results.size() != t.outputs.size()) {
    return InvalidArgument("task.yaml lists " + std::to_string(t.outputs.size()) +
                               " outputs but the module returns " + std::to_string(results.size()),
                           loc);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].SameAs(t.outputs[i].shape)) {
      return InvalidArgument("output " + std::to_string(i) + " is " +
                                 t.outputs[i].shape.ToString(false) + " in task.yaml but " +
                                 results[i].ToString(false) + " in the module",
                             loc);
    }
  }
  return Status::Ok();
}

Result<LoadedTask> LoadTaskWithModule(const std::string& dir) {
  LoadedTask lt;
  MK_ASSIGN_OR_RETURN(lt.task, LoadTask(dir));
  MK_ASSIGN_OR_RETURN(lt.module, hlo::ParseModuleFile(lt.task.module_path()));
  MK_RETURN_IF_ERROR(CheckTaskAgainstModule(lt.task, *lt.module));
  return lt;
}

Status RecordBaseline(const std::string& dir, const Baseline& baseline) {
  MK_ASSIGN_OR_RETURN(Task task, LoadTask(dir));
  task.baseline = baseline;
  return WriteFileAtomically(dir + "/task.yaml", TaskToYaml(task));
}

Result<std::string> MakeStagingDirectory(const std::string& dir) {
  std::error_code ec;
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  fs::create_directories(parent, ec);
  if (ec) return IoError("cannot create " + parent.string() + ": " + ec.message());
  std::string pattern = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    return IoError("cannot create a temporary directory in " + parent.string());
  }
  // mkdtemp makes the directory private; a task directory is an ordinary one.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  fs::permissions(buf.data(), static_cast<fs::perms>(0777 & ~mask), ec);
  return std::string(buf.data());
}

Status CommitTaskDirectory(const std::string& staged, const std::string& dir, bool overwrite) {
  std::error_code ec;
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  auto fail = [&](Status s) {
    std::error_code ignored;
    fs::remove_all(staged, ignored);
    return s;
  };
  if (fs::exists(target, ec)) {
    if (!overwrite) return fail(InvalidArgument(dir + " already exists (pass --force to replace it)"));
    const fs::path old =
        parent / ("." + target.filename().string() + ".old-" + std::to_string(::getpid()));
    fs::remove_all(old, ec);
    fs::rename(target, old, ec);
    if (ec) return fail(IoError("cannot move away " + target.string() + ": " + ec.message()));
    fs::rename(staged, target, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old, target, ignored);  // put the old task back
      return fail(IoError("cannot rename into " + target.string() + ": " + ec.message()));
    }
    fs::remove_all(old, ec);
    return Status::Ok();
  }
  fs::rename(staged, target, ec);
  if (ec) return fail(IoError("cannot rename into " + target.string() + ": " + ec.message()));
  return Status::Ok();
}

Status WriteTaskDirectory(const std::string& dir,
                          const std::vector<std::pair<std::string, std::string>>& files,
                          bool overwrite) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !overwrite) {
    return InvalidArgument(dir + " already exists (pass --force to replace it)");
  }
  MK_ASSIGN_OR_RETURN(std::string staged, MakeStagingDirectory(dir));
  const fs::path tmp(staged);
  auto fail = [&](Status s) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    return s;
  };
  for (const auto& [name, content] : files) {
    const fs::path rel(name);
    if (rel.is_absolute() || rel.empty()) return fail(Internal("bad task file name " + name));
    const fs::path path = tmp / rel;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return fail(IoError("cannot create " + path.parent_path().string()));
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) return fail(IoError("cannot write " + path.string()));
  }
  return CommitTaskDirectory(staged, dir, overwrite);
}

}  // namespace mk::task
