#pragma once
// What a line looks like to the regexes (spec/extraction.md "Lines" and
// "SageMaker-escaped text"): well-formed UTF-8, optionally with control
// characters written the way CloudWatch shows them.

#include <string>
#include <string_view>

namespace trainwatch::extract {

// True when `text` is well-formed UTF-8 (Unicode 15 table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF). NUL is well-formed. Fast on
// ASCII (eight bytes at a time).
bool IsValidUtf8(std::string_view text);

// Appends `text` to *out with every ill-formed sequence replaced by U+FFFD,
// one U+FFFD per maximal subpart (Unicode §3.9, as Python's and the WHATWG
// decoders do): a stray byte is one U+FFFD, so is a truncated sequence such as
// E2 82; an overlong C0 AF is two, an encoded surrogate ED A0 80 three.
void AppendWithInvalidUtf8Replaced(std::string_view text, std::string* out);

// True for the bytes CloudWatch escapes: C0 controls 0x00-0x1F and DEL 0x7F.
constexpr bool IsControlByte(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7F;
}

// True when `text` holds at least one control byte.
bool HasControlBytes(std::string_view text);

// Appends `text` to *out with every control byte written as '#' and three
// octal digits, as SageMaker's CloudWatch log text shows them: TAB "#011",
// CR "#015", backspace "#010", ESC "#033", NUL "#000", DEL "#177". Other bytes
// are copied as they are.
void AppendSageMakerEscaped(std::string_view text, std::string* out);

// Characters in `text`: UTF-8 code points, an ill-formed sequence counting as
// one (the U+FFFD it is replaced by).
size_t CountCharacters(std::string_view text);

// `text` for an error message: control bytes as \xNN, cut after `max_chars`
// characters with "..." appended.
std::string QuoteForMessage(std::string_view text, size_t max_chars = 120);

}  // namespace trainwatch::extract
