#include "hlo/parser.h"

namespace mk::hlo {

Result<std::unique_ptr<Module>> ParseModule(std::string_view, const std::string&) {
  return Unimplemented("parser not implemented yet");
}
Result<std::unique_ptr<Module>> ParseModuleFile(const std::string&) {
  return Unimplemented("parser not implemented yet");
}

}  // namespace mk::hlo
