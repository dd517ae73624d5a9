#include "support/status.h"

namespace mk {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kEnvironment: return "environment error";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "error";
}

std::string SourceLoc::ToString() const {
  std::string out = file.empty() ? "<input>" : file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (col > 0) out += ":" + std::to_string(col);
  }
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string prefix;
  if (error_->loc.known() || !error_->loc.file.empty()) prefix = error_->loc.ToString() + ": ";
  return prefix + "error: " + error_->message;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(error_->code, context + ": " + error_->message, error_->loc);
}

}  // namespace mk
