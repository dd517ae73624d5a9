// The stack-trace tables XLA prints around the computations of a dumped module (newer XLA puts
// them between the header and the first computation, older XLA after the last one):
//
//   FileNames
//   1 "/home/me/model.py"
//   FunctionNames
//   1 "mlp"
//   FileLocations
//   1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=8 end_column=32}
//   StackFrames
//   1 {file_location_id=1 parent_frame_id=1}
//
// They only resolve the `stack_frame_id` of instruction metadata, which the parser drops, so
// they are checked for syntax and skipped.
#include <array>

#include "hlo/parse_internal.h"

namespace mk::hlo::parse {
namespace {

constexpr std::array<std::string_view, 4> kTableNames = {"FileNames", "FunctionNames",
                                                         "FileLocations", "StackFrames"};

}  // namespace

bool AtMetadataTable(Lexer& lx) {
  const size_t start = lx.pos();
  bool table = false;
  for (std::string_view name : kTableNames) {
    if (lx.PeekWord(name, /*consume=*/true)) {
      // A computation that happens to be called `FileNames` is followed by `{` or `(`; a table
      // by its first entry's number (or by nothing, when it is empty and last).
      lx.SkipTrivia();
      table = lx.AtEof() || IsAsciiDigit(lx.Peek()) || AtMetadataTableName(lx);
      break;
    }
  }
  lx.set_pos(start);
  return table;
}

bool AtMetadataTableName(Lexer& lx) {
  for (std::string_view name : kTableNames) {
    if (lx.PeekWord(name)) return true;
  }
  return false;
}

Status SkipMetadataTable(Lexer& lx) {
  MK_RETURN_IF_ERROR(lx.ReadWord("table name").status());
  while (true) {
    lx.SkipTrivia();
    if (!IsAsciiDigit(lx.Peek())) return Status::Ok();
    MK_RETURN_IF_ERROR(lx.ReadIntHere("table entry id").status());
    lx.SkipTrivia();
    if (lx.Peek() == '"') {
      MK_RETURN_IF_ERROR(lx.ReadQuotedString().status());
    } else if (lx.Peek() == '{') {
      MK_RETURN_IF_ERROR(lx.ReadRawValue().status());
    } else {
      return lx.Error("expected a quoted string or '{' after the table entry id, got " +
                      lx.DescribeNext());
    }
  }
}

}  // namespace mk::hlo::parse
