// sha256 of byte strings, as lowercase hex: the content address of every artifact.
#pragma once

#include <string>
#include <string_view>

namespace mk {

std::string Sha256Hex(std::string_view data);

}  // namespace mk
