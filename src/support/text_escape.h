// Escaping text for the language it lands in. Every string that comes from a task (id, name,
// description, directory) or from an HLO module and is written into generated text (C/C++
// sources and headers, Python modules, README files, HTML, markdown) goes through one of these,
// chosen for the exact context it is pasted into. A task.yaml is input from whoever wrote it:
// pasted raw, a newline in its id ends a `//` comment and what follows is compiled or imported
// (issue 30, hole 1).
//
// "Unsafe" characters, escaped by every function here and refused by task ids and names: C0
// controls (newline, tab, NUL, ESC of ANSI sequences...), DEL, C1 controls, the Unicode line and
// paragraph separators U+2028/U+2029, the bidirectional and zero-width format characters that
// make text read differently from what a compiler sees ("trojan source": U+061C, U+200B-U+200F,
// U+202A-U+202E, U+2060-U+206F, U+FEFF), and bytes that are not UTF-8.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mk {

// The longest label OneLineText keeps by default (a very long task name is cut, with "...").
inline constexpr size_t kMaxLabelBytes = 200;

// One line of printable text, safe inside a C/C++ `//` or `/* */` comment, a Python `#` comment,
// a plain-text README line or a terminal: unsafe characters become visible escapes (`\n`, `\t`,
// `\x1b`, `\u2028`), a backslash becomes `\x5c` (so no line ever ends in one: a line splice),
// `*/` and `/*` are broken (`*\x2f`, `/\x2a`) and so is `??` (`?\x3f`, a trigraph). Other
// Unicode is kept. Longer than `max_bytes`: cut at a character boundary and "..." appended.
std::string OneLineText(std::string_view s, size_t max_bytes = kMaxLabelBytes);

// Text for a terminal: line breaks and tabs are kept, every other unsafe character (controls,
// ESC of an ANSI sequence, bidi and zero-width format characters, bytes that are not UTF-8)
// becomes a visible escape as in OneLineText. Nothing is cut. For messages that quote the user's
// bytes (a custom_call_target, a YAML parser's view of a file) on their way to stderr.
std::string TerminalText(std::string_view s);

// A complete C/C++ string literal, quotes included, in plain ASCII: `"` `\` `?` escaped, every
// other byte outside printable ASCII as a three-digit octal escape (hex escapes are greedy).
// Decodes back to exactly `s`.
std::string CStringLiteral(std::string_view s);

// A complete Python string literal, double quotes included, in plain ASCII: `\` and `"`
// escaped, controls as `\n` `\t` `\xHH`, non-ASCII as `\uHHHH` / `\UHHHHHHHH`; a byte that is
// not UTF-8 becomes U+FFFD. Evaluates to `s` when `s` is valid UTF-8.
std::string PyStringLiteral(std::string_view s);

// Text to put inside a (non-raw) `"""` docstring: PyStringLiteral's escaping without the quotes,
// so the text can neither close the docstring nor start an escape of its own.
std::string PyDocstringText(std::string_view s);

// A C identifier (and a safe file name): letters, digits and '_' kept, every other byte '_'; a
// leading digit gets an "m" before it; empty gives `fallback`. Longer than `max_length`: cut,
// with '_' and 8 hex digits of the full text's sha256 appended so that distinct long names stay
// distinct.
std::string CIdentifier(std::string_view s, std::string_view fallback = "module",
                        size_t max_length = 64);

// A complete YAML double-quoted scalar, quotes included, that a YAML reader (1.1 or 1.2) reads
// back as exactly `s` when `s` is valid UTF-8 (a byte that is not becomes U+FFFD): `"` and `\`
// escaped, controls as JSON writes them (`\n`, `\t`, `\u001b`), and as `\uhhhh` also what a YAML
// stream may not hold raw or a YAML 1.1 reader takes as a line break (DEL, C1 controls and NEL,
// U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF). Other Unicode is kept.
std::string YamlQuoted(std::string_view s);

// Text for HTML/XML element content or a quoted attribute: & < > " ' as entities; unsafe
// characters as visible escapes (OneLineText's), U+2028/U+2029 as character references.
std::string HtmlText(std::string_view s);

// One line of markdown that renders as the literal text: OneLineText, then every ASCII
// punctuation character markdown gives a meaning to backslash-escaped.
std::string MarkdownText(std::string_view s);

// The byte offset of the first unsafe character (see above) in `s`, or nullopt.
std::optional<size_t> FirstUnsafeCharacter(std::string_view s);

// The byte offset of the first character of `s` that a YAML stream may not hold, or nullopt:
// YAML 1.2's printable set (c-printable) is tab, LF, CR, printable ASCII, NEL and Unicode from
// U+00A0 except surrogates and U+FFFE/U+FFFF; a byte that is not UTF-8 is outside it too.
std::optional<size_t> FirstNonYamlPrintable(std::string_view s);

// "U+2028", "U+000A", "byte 0xff": how to name the unsafe character at `offset` in a message.
std::string DescribeCharacterAt(std::string_view s, size_t offset);

}  // namespace mk
