// Errors as values. Library code returns Status / Result<T>; only the CLI turns an error into
// a message and an exit code. An error may carry a source position (file:line:col) so that a
// user sees exactly where bad input went wrong.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mk {

enum class ErrorCode {
  kInvalidArgument,  // bad user input: malformed HLO, wrong shapes, bad files (CLI exit 2)
  kNotFound,         // a named thing does not exist
  kUnimplemented,    // valid input that we do not support (yet)
  kInternal,         // a bug in maxkernel
  kIo,               // the operating system refused (open/read/write)
  kEnvironment,      // the machine is not set up to work at all (e.g. an unusable compile
                     // cache): not a fault of the input, and retrying other inputs won't help
  kCancelled,        // stopped before it finished: a deadline passed or an interrupt arrived
};

const char* ErrorCodeName(ErrorCode code);

struct SourceLoc {
  std::string file;  // may be empty ("<string>")
  int line = 0;      // 1-based; 0 = unknown
  int col = 0;       // 1-based; 0 = unknown
  bool known() const { return line > 0; }
  std::string ToString() const;  // "file:line:col" (parts that are unknown are left out)
};

class Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message, SourceLoc loc = {})
      : error_(Error{code, std::move(message), std::move(loc)}) {}

  static Status Ok() { return Status(); }
  bool ok() const { return !error_.has_value(); }
  ErrorCode code() const { return error_->code; }
  const std::string& message() const { return error_->message; }
  const SourceLoc& loc() const { return error_->loc; }
  // "file:line:col: error: message" (or "error: message" without a position).
  std::string ToString() const;
  // Adds context in front of the message: "while X: message".
  Status WithContext(const std::string& context) const;

 private:
  struct Error {
    ErrorCode code;
    std::string message;
    SourceLoc loc;
  };
  std::optional<Error> error_;
};

inline Status InvalidArgument(std::string msg, SourceLoc loc = {}) {
  return Status(ErrorCode::kInvalidArgument, std::move(msg), std::move(loc));
}
inline Status Unimplemented(std::string msg, SourceLoc loc = {}) {
  return Status(ErrorCode::kUnimplemented, std::move(msg), std::move(loc));
}
inline Status Internal(std::string msg) { return Status(ErrorCode::kInternal, std::move(msg)); }
inline Status NotFound(std::string msg) { return Status(ErrorCode::kNotFound, std::move(msg)); }
inline Status IoError(std::string msg) { return Status(ErrorCode::kIo, std::move(msg)); }
inline Status Cancelled(std::string msg) { return Status(ErrorCode::kCancelled, std::move(msg)); }
inline Status EnvironmentError(std::string msg) {
  return Status(ErrorCode::kEnvironment, std::move(msg));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace mk

#define MK_CONCAT_INNER(a, b) a##b
#define MK_CONCAT(a, b) MK_CONCAT_INNER(a, b)

// Returns the error from the enclosing function if `expr` (a Status) is not OK.
#define MK_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::mk::Status mk_status_ = (expr);       \
    if (!mk_status_.ok()) return mk_status_; \
  } while (0)

// `MK_ASSIGN_OR_RETURN(auto x, ComputeX());` — unwraps a Result or returns its error.
// (__COUNTER__ is passed through an extra macro so it is expanded exactly once: __LINE__ is not
// stable across a macro call that spans several lines.)
#define MK_ASSIGN_OR_RETURN(lhs, expr) MK_ASSIGN_OR_RETURN_N(__COUNTER__, lhs, expr)
#define MK_ASSIGN_OR_RETURN_N(n, lhs, expr) \
  MK_ASSIGN_OR_RETURN_IMPL(MK_CONCAT(mk_result_, n), lhs, expr)
#define MK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
