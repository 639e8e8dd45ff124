#pragma once
// XmlWriter: the query protocol's XML responses, indented two spaces like the
// answers the clients were tested with. Text is escaped; bytes that XML 1.0
// cannot carry (control characters, invalid UTF-8) become U+FFFD.

#include <string>
#include <string_view>

namespace trainwatch::api {

class XmlWriter {
 public:
  // <tag attrs>
  void Open(std::string_view tag, std::string_view attrs = {});
  // </tag>
  void Close(std::string_view tag);
  // <tag>text</tag>
  void Element(std::string_view tag, std::string_view text);
  // <tag/>
  void Empty(std::string_view tag);
  std::string Take() { return std::move(out_); }

 private:
  void Indent();
  std::string out_;
  int depth_ = 0;
};

// Appends `text` to `out` escaped for XML character data.
void AppendXmlEscaped(std::string_view text, std::string* out);

// Shortest decimal that reads back as `value` ("0.52", "1e-05"), with ".0"
// added to integral values ("1.0", as AWS prints them). Non-finite values
// never reach a response; if one does, "0.0".
std::string FormatDouble(double value);

}  // namespace trainwatch::api
