// The debugger's rules: compiler logs -> failure class, error lines -> the kernel function
// holding them. The rules are substring tables over g++ (and clang) messages; they are checked
// against canned logs in debugger_test.cc, which is where a new message shape should be added.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "agents/debugger.h"

namespace mk::agents {

namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// Quoted names are the user's (or the emitter's) identifiers: a variable called `expected_sum`
// must not make an error look like a syntax error. g++ quotes with '...' in the C locale and
// with U+2018/U+2019 otherwise.
std::string StripQuoted(const std::string& s) {
  static const std::string kOpen = "\xE2\x80\x98", kClose = "\xE2\x80\x99";
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    if (s.compare(i, kOpen.size(), kOpen) == 0) {
      size_t end = s.find(kClose, i + kOpen.size());
      if (end != std::string::npos) {
        out += "''";
        i = end + kClose.size();
        continue;
      }
    }
    if (s[i] == '\'') {
      size_t end = s.find('\'', i + 1);
      if (end != std::string::npos) {
        out += "''";
        i = end + 1;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// "file:line:col" or "file:line" in front of a diagnostic; nullopt when `prefix` is not one.
struct Location {
  std::string file;
  int line = 0;
};
std::optional<Location> ParseLocation(const std::string& prefix) {
  size_t c2 = prefix.rfind(':');
  if (c2 == std::string::npos) return std::nullopt;
  std::optional<int> last = ParseInt(std::string_view(prefix).substr(c2 + 1));
  if (!last) return std::nullopt;
  size_t c1 = c2 == 0 ? std::string::npos : prefix.rfind(':', c2 - 1);
  if (c1 != std::string::npos) {
    if (std::optional<int> line = ParseInt(std::string_view(prefix).substr(c1 + 1, c2 - c1 - 1))) {
      return Location{prefix.substr(0, c1), *line};
    }
  }
  return Location{prefix.substr(0, c2), *last};
}

bool IsSystemFile(const std::string& file) {
  return file.rfind("/usr/", 0) == 0 || Contains(file, "/include/c++/") ||
         Contains(file, "/lib/gcc/");
}

// The message part of an error line (after "error: "), or empty when the line is no error.
std::string ErrorMessage(const std::string& line) {
  for (std::string_view tag : {"fatal error: ", "error: ", "Error: "}) {
    size_t p = line.find(tag);
    if (p != std::string::npos) return line.substr(p + tag.size());
  }
  return "";
}

struct Rule {
  FailureClass cls;
  std::string_view needle;  // lower case
};

// Checked over the whole log first: an exhausted compiler often prints its last syntax-looking
// complaint before dying, and the resource problem is the one to fix.
constexpr Rule kWholeLogRules[] = {
    {FailureClass::kTimeout, "compiler timed out"},
    {FailureClass::kResource, "internal compiler error"},
    {FailureClass::kResource, "virtual memory exhausted"},
    {FailureClass::kResource, "memory exhausted"},
    {FailureClass::kResource, "out of memory"},
    {FailureClass::kResource, "cannot allocate memory"},
    {FailureClass::kResource, "std::bad_alloc"},
    {FailureClass::kResource, "killed signal terminated program"},
    {FailureClass::kResource, "relocation truncated to fit"},
    {FailureClass::kUndefinedSymbol, "undefined reference to"},
};

// Checked against the first error's message, in this order.
constexpr Rule kMessageRules[] = {
    // resource: size and stack limits of what the kernel declares
    {FailureClass::kResource, "size of array"},
    {FailureClass::kResource, "array is too large"},
    {FailureClass::kResource, "exceeds maximum object size"},
    {FailureClass::kResource, "total size of"},
    {FailureClass::kResource, "stack usage"},
    {FailureClass::kResource, "frame size"},
    {FailureClass::kResource, "unable to find a register"},
    {FailureClass::kResource, "impossible constraint"},
    {FailureClass::kResource, "too many registers"},
    // undefined symbols
    {FailureClass::kUndefinedSymbol, "was not declared"},
    {FailureClass::kUndefinedSymbol, "has not been declared"},
    {FailureClass::kUndefinedSymbol, "undeclared"},
    {FailureClass::kUndefinedSymbol, "does not name a type"},
    {FailureClass::kUndefinedSymbol, "is not a member of"},
    {FailureClass::kUndefinedSymbol, "no member named"},
    {FailureClass::kUndefinedSymbol, "has no member named"},
    {FailureClass::kUndefinedSymbol, "unknown type name"},
    {FailureClass::kUndefinedSymbol, "undefined symbol"},
    {FailureClass::kUndefinedSymbol, "no such file or directory"},
    {FailureClass::kUndefinedSymbol, "is not a namespace"},
    // types
    {FailureClass::kType, "cannot convert"},
    {FailureClass::kType, "could not convert"},
    {FailureClass::kType, "no matching function"},
    {FailureClass::kType, "no matching constructor"},
    {FailureClass::kType, "no match for"},
    {FailureClass::kType, "no viable"},
    {FailureClass::kType, "invalid conversion"},
    {FailureClass::kType, "invalid operands"},
    {FailureClass::kType, "invalid initialization"},
    {FailureClass::kType, "invalid use of"},
    {FailureClass::kType, "invalid type"},
    {FailureClass::kType, "narrowing conversion"},
    {FailureClass::kType, "conversion from"},
    {FailureClass::kType, "incompatible"},
    {FailureClass::kType, "cannot bind"},
    {FailureClass::kType, "discards qualifiers"},
    {FailureClass::kType, "read-only"},
    {FailureClass::kType, "lvalue"},
    {FailureClass::kType, "too many arguments"},
    {FailureClass::kType, "too few arguments"},
    {FailureClass::kType, "request for member"},
    {FailureClass::kType, "is not a pointer"},
    {FailureClass::kType, "subscripted value"},
    {FailureClass::kType, "cannot be used as a function"},
    {FailureClass::kType, "ambiguous"},
    {FailureClass::kType, "conflicting"},
    {FailureClass::kType, "redefinition"},
    {FailureClass::kType, "redeclared"},
    {FailureClass::kType, "return-statement with"},
    {FailureClass::kType, "static assertion failed"},
    // syntax
    {FailureClass::kSyntax, "expected"},
    {FailureClass::kSyntax, "stray "},
    {FailureClass::kSyntax, "missing terminating"},
    {FailureClass::kSyntax, "unterminated"},
    {FailureClass::kSyntax, "at end of input"},
    {FailureClass::kSyntax, "before numeric constant"},
    {FailureClass::kSyntax, "extra tokens"},
    {FailureClass::kSyntax, "invalid preprocessing directive"},
};

}  // namespace

std::string FirstErrorText(const std::string& log) {
  std::vector<std::string> lines = Lines(log);
  for (const std::string& line : lines) {
    if (!ErrorMessage(line).empty() && !Contains(line, "collect2: error:")) return line;
  }
  for (const std::string& line : lines) {
    if (Contains(Lower(line), "undefined reference")) return line;
  }
  for (const std::string& line : lines) {
    if (!line.empty()) return line;
  }
  return "";
}

FailureClass ClassifyCompilerLog(const std::string& log) {
  std::string lower_log = Lower(log);
  for (const Rule& r : kWholeLogRules) {
    if (Contains(lower_log, r.needle)) return r.cls;
  }
  std::string message = Lower(StripQuoted(ErrorMessage(FirstErrorText(log))));
  if (message.empty()) return FailureClass::kUnknown;
  for (const Rule& r : kMessageRules) {
    if (Contains(message, r.needle)) return r.cls;
  }
  return FailureClass::kUnknown;
}

FailureClass ClassifyOutcome(runtime::RunStatus status) {
  switch (status) {
    case runtime::RunStatus::kCrashed: return FailureClass::kCrash;
    case runtime::RunStatus::kTimedOut: return FailureClass::kTimeout;
    case runtime::RunStatus::kOutOfMemory: return FailureClass::kResource;
    case runtime::RunStatus::kLoadFailed: return FailureClass::kLoadFailure;
    case runtime::RunStatus::kOk:
    case runtime::RunStatus::kInternalError: return FailureClass::kUnknown;
  }
  return FailureClass::kUnknown;
}

std::optional<int> FirstErrorSourceLine(const std::string& log) {
  std::vector<std::string> lines = Lines(log);
  // An error in our own file first; an error inside a system header is reached from our file
  // through a "required from here" / "In instantiation" line, which names our line.
  for (const std::string& line : lines) {
    if (ErrorMessage(line).empty()) continue;
    size_t p = line.find(": error: ");
    if (p == std::string::npos) p = line.find(": fatal error: ");
    if (p == std::string::npos) continue;
    std::optional<Location> loc = ParseLocation(line.substr(0, p));
    if (loc && !IsSystemFile(loc->file)) return loc->line;
  }
  for (const std::string& line : lines) {
    size_t p = line.find(": ");
    if (p == std::string::npos) continue;
    std::optional<Location> loc = ParseLocation(line.substr(0, p));
    if (loc && !loc->file.empty() && !IsSystemFile(loc->file) &&
        loc->file.find(' ') == std::string::npos) {
      return loc->line;
    }
  }
  return std::nullopt;
}

std::optional<int> KernelNamedInLog(const std::string& log) {
  for (const std::string& line : Lines(log)) {
    std::string lower = Lower(line);
    if (!Contains(lower, "in function") && !Contains(lower, "in lambda function")) continue;
    size_t p = line.find("kernel_");
    while (p != std::string::npos) {
      size_t b = p + 7, e = b;
      while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
      bool starts_word = p == 0 || !(std::isalnum(static_cast<unsigned char>(line[p - 1])) ||
                                     line[p - 1] == '_');
      if (e > b && starts_word) {
        if (std::optional<int> id = ParseInt(std::string_view(line).substr(b, e - b))) return *id;
      }
      p = line.find("kernel_", p + 1);
    }
  }
  return std::nullopt;
}

namespace {

constexpr std::string_view kKernelPrefix = "static void kernel_";

std::optional<int> KernelIdOfDefinition(const std::string& line) {
  if (line.rfind(kKernelPrefix, 0) != 0) return std::nullopt;
  size_t b = kKernelPrefix.size(), e = b;
  while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
  if (e == b || e >= line.size() || line[e] != '(') return std::nullopt;
  int v = -1;
  auto [ptr, ec] = std::from_chars(line.data() + b, line.data() + e, v);
  if (ec != std::errc() || ptr != line.data() + e) return std::nullopt;
  return v;
}

// "  kernel_3(slot);" -> 3.
std::optional<int> KernelIdOfCall(const std::string& line) {
  size_t b = line.find_first_not_of(' ');
  if (b == std::string::npos || line.compare(b, 7, "kernel_") != 0) return std::nullopt;
  size_t d = b + 7, e = d;
  while (e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
  if (e == d || line.substr(e) != "(slot);") return std::nullopt;
  int v = -1;
  auto [ptr, ec] = std::from_chars(line.data() + d, line.data() + e, v);
  if (ec != std::errc() || ptr != line.data() + e) return std::nullopt;
  return v;
}

bool IsEntryDefinition(const std::string& line) {
  return line.rfind("extern \"C\" void mk_kernel(", 0) == 0;
}

}  // namespace

std::optional<int> KernelAtSourceLine(const std::string& source, int line) {
  std::optional<int> current;
  int n = 0;
  for (const std::string& text : Lines(source)) {
    ++n;
    if (std::optional<int> id = KernelIdOfDefinition(text)) current = id;
    if (n == line) return current;
    // The emitter closes a kernel function with a brace in column 0; nested scopes are indented.
    if (text == "}") current.reset();
  }
  return std::nullopt;
}

std::vector<int> KernelCallOrder(const std::string& source) {
  std::vector<int> order;
  bool in_entry = false;
  for (const std::string& text : Lines(source)) {
    if (IsEntryDefinition(text)) in_entry = true;
    if (!in_entry) continue;
    if (std::optional<int> id = KernelIdOfCall(text)) order.push_back(*id);
    if (text == "}") break;
  }
  return order;
}

std::string KeepFirstKernelCalls(const std::string& source, size_t count) {
  std::ostringstream out;
  bool in_entry = false;
  size_t seen = 0;
  for (const std::string& text : Lines(source)) {
    if (IsEntryDefinition(text)) in_entry = true;
    if (in_entry && KernelIdOfCall(text)) {
      // Commented out rather than deleted: line numbers stay those of the original source.
      if (seen++ >= count) {
        out << "  // dropped by the debugger's bisection: " << text.substr(text.find('k')) << "\n";
        continue;
      }
    }
    if (in_entry && text == "}") in_entry = false;
    out << text << "\n";
  }
  return out.str();
}

}  // namespace mk::agents
