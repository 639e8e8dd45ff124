// JSON and space-delimited filter patterns (query/structured_pattern.h).
#include "query/structured_pattern.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace trainwatch::query::internal {
namespace {

// `text` matches `glob`, where * stands for any run of characters.
bool GlobMatch(std::string_view glob, std::string_view text) {
  size_t g = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (g < glob.size() && glob[g] == '*') {
      star = g++;
      mark = t;
    } else if (g < glob.size() && glob[g] == text[t]) {
      ++g;
      ++t;
    } else if (star != std::string_view::npos) {
      g = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

std::optional<double> ParseNumber(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  // strtod reads "inf", "nan" and hex; patterns mean decimal numbers.
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+' &&
        c != 'e' && c != 'E') {
      return std::nullopt;
    }
  }
  return v;
}

// ---- structured patterns: tokens ------------------------------------------

struct Token {
  enum Kind { kEnd, kPunct, kOp, kSelector, kString, kRegex, kWord, kEllipsis } kind = kEnd;
  std::string text;  // punctuation/operator, selector, string body, regex body, word
  size_t column = 0;
};

class Lexer {
 public:
  explicit Lexer(std::string_view pattern) : p_(pattern) {}

  absl::StatusOr<std::vector<Token>> Run() {
    std::vector<Token> out;
    while (true) {
      while (i_ < p_.size() && (p_[i_] == ' ' || p_[i_] == '\t')) ++i_;
      Token t;
      t.column = i_;
      if (i_ >= p_.size()) {
        out.push_back(t);
        return out;
      }
      const char c = p_[i_];
      if (p_.substr(i_, 3) == "...") {
        t.kind = Token::kEllipsis;
        i_ += 3;
      } else if (p_.substr(i_, 2) == "&&" || p_.substr(i_, 2) == "||") {
        t.kind = Token::kPunct;
        t.text = std::string(p_.substr(i_, 2));
        i_ += 2;
      } else if (std::string_view("{}[](),").find(c) != std::string_view::npos) {
        t.kind = Token::kPunct;
        t.text = std::string(1, c);
        ++i_;
      } else if (c == '=' || c == '!' || c == '<' || c == '>') {
        t.kind = Token::kOp;
        t.text = std::string(1, c);
        ++i_;
        if (i_ < p_.size() && p_[i_] == '=') t.text.push_back(p_[i_++]);
        if (t.text == "!") return InvalidPattern(At("'!' must be followed by '='", t.column), p_);
      } else if (c == '"') {
        t.kind = Token::kString;
        ++i_;
        bool closed = false;
        while (i_ < p_.size()) {
          char d = p_[i_++];
          if (d == '\\' && i_ < p_.size()) {
            t.text.push_back(p_[i_++]);
          } else if (d == '"') {
            closed = true;
            break;
          } else {
            t.text.push_back(d);
          }
        }
        if (!closed) return InvalidPattern(At("a quoted string is not closed", t.column), p_);
      } else if (c == '%') {
        size_t end = p_.find('%', i_ + 1);
        if (end == std::string_view::npos) return InvalidPattern(At("a %regex% is not closed", i_), p_);
        t.kind = Token::kRegex;
        t.text = std::string(p_.substr(i_ + 1, end - i_ - 1));
        i_ = end + 1;
      } else {
        t.kind = c == '$' ? Token::kSelector : Token::kWord;
        while (i_ < p_.size()) {
          char d = p_[i_];
          if (d == ' ' || d == '\t' || d == ',' || d == '(' || d == ')' || d == '{' || d == '}' ||
              d == '=' || d == '!' || d == '<' || d == '>' || d == '"' || d == '%' ||
              p_.substr(i_, 2) == "&&" || p_.substr(i_, 2) == "||") {
            break;
          }
          // A selector's [index] belongs to it; a space-delimited pattern's
          // closing ] does not.
          if (d == ']' && t.kind != Token::kSelector) break;
          if (d == '[' && t.kind != Token::kSelector) break;
          t.text.push_back(d);
          ++i_;
        }
      }
      out.push_back(std::move(t));
    }
  }

  static std::string At(std::string_view what, size_t column) {
    return absl::StrFormat("%s (column %d)", what, column + 1);
  }

 private:
  std::string_view p_;
  size_t i_ = 0;
};

// ---- structured patterns: conditions ---------------------------------------

// The value a condition compares with.
struct Operand {
  std::optional<double> number;  // a numeric literal
  std::string text;              // as written (a glob for strings)
  std::shared_ptr<RE2> regex;    // %regex%
};

enum class Op { kEq, kNe, kLt, kLe, kGt, kGe };

// A field value as the message has it: absent, null, bool, number or text.
struct Field {
  enum Kind { kMissing, kNull, kBool, kNumber, kText, kOther } kind = kMissing;
  bool boolean = false;
  double number = 0;
  std::string_view text;
};

bool Compare(const Field& f, Op op, const Operand& v) {
  if (f.kind == Field::kMissing) return false;
  std::optional<double> number;
  if (f.kind == Field::kNumber) {
    number = f.number;
  } else if (f.kind == Field::kText && v.number) {
    number = ParseNumber(f.text);
  }
  if (v.number && number) {
    switch (op) {
      case Op::kEq: return *number == *v.number;
      case Op::kNe: return *number != *v.number;
      case Op::kLt: return *number < *v.number;
      case Op::kLe: return *number <= *v.number;
      case Op::kGt: return *number > *v.number;
      case Op::kGe: return *number >= *v.number;
    }
  }
  if (op != Op::kEq && op != Op::kNe) return false;
  bool equal;
  if (f.kind == Field::kText) {
    equal = v.regex ? RE2::PartialMatch(re2::StringPiece(f.text.data(), f.text.size()), *v.regex)
                    : GlobMatch(v.text, f.text);
  } else if (f.kind == Field::kBool) {
    equal = !v.regex && v.text == (f.boolean ? "true" : "false");
  } else if (f.kind == Field::kNull) {
    equal = !v.regex && v.text == "null";
  } else {
    return false;  // a number against text, an object or an array
  }
  return op == Op::kEq ? equal : !equal;
}



// A boolean expression over fields; `Lookup` finds a field by its selector
// ($.a.b[0]) or, in a space-delimited slot, by its name.
struct Condition {
  enum Kind { kAnd, kOr, kCompare, kIsNull, kIsTrue, kIsFalse, kExists, kNotExists };
  Kind kind = kCompare;
  std::vector<Condition> children;  // kAnd, kOr
  std::string name;                 // selector or field name
  Op op = Op::kEq;
  Operand value;

  template <typename Lookup>
  bool Eval(const Lookup& lookup) const {
    switch (kind) {
      case kAnd:
        for (const Condition& c : children) {
          if (!c.Eval(lookup)) return false;
        }
        return true;
      case kOr:
        for (const Condition& c : children) {
          if (c.Eval(lookup)) return true;
        }
        return false;
      default: break;
    }
    const Field f = lookup(name);
    switch (kind) {
      case kCompare: return Compare(f, op, value);
      case kIsNull: return f.kind == Field::kNull;
      case kIsTrue: return f.kind == Field::kBool && f.boolean;
      case kIsFalse: return f.kind == Field::kBool && !f.boolean;
      case kExists: return f.kind != Field::kMissing;
      case kNotExists: return f.kind == Field::kMissing;
      default: return false;
    }
  }
};

// Recursive descent over the tokens of one pattern: `||` binds looser than
// `&&`, parentheses group.
class ConditionParser {
 public:
  ConditionParser(std::vector<Token> tokens, std::string_view pattern, bool json)
      : t_(std::move(tokens)), pattern_(pattern), json_(json) {}

  const Token& Peek() const { return t_[k_]; }
  const Token& Next() { return t_[k_ < t_.size() - 1 ? k_++ : k_]; }
  bool IsPunct(std::string_view p) const {
    return Peek().kind == Token::kPunct && Peek().text == p;
  }
  absl::Status Error(std::string_view what) const {
    return InvalidPattern(Lexer::At(what, Peek().column), pattern_);
  }
  absl::Status Expect(std::string_view p) {
    if (!IsPunct(p)) return Error(absl::StrFormat("'%s' expected", p));
    Next();
    return absl::OkStatus();
  }

  absl::StatusOr<Condition> Or() {
    absl::StatusOr<Condition> first = And();
    if (!first.ok() || !IsPunct("||")) return first;
    Condition out;
    out.kind = Condition::kOr;
    out.children.push_back(*std::move(first));
    while (IsPunct("||")) {
      Next();
      absl::StatusOr<Condition> c = And();
      if (!c.ok()) return c;
      out.children.push_back(*std::move(c));
    }
    return out;
  }

  absl::StatusOr<Condition> And() {
    absl::StatusOr<Condition> first = Primary();
    if (!first.ok() || !IsPunct("&&")) return first;
    Condition out;
    out.kind = Condition::kAnd;
    out.children.push_back(*std::move(first));
    while (IsPunct("&&")) {
      Next();
      absl::StatusOr<Condition> c = Primary();
      if (!c.ok()) return c;
      out.children.push_back(*std::move(c));
    }
    return out;
  }

  absl::StatusOr<Condition> Primary() {
    if (++depth_ > 64) return Error("parentheses nested too deep");
    struct Leave {
      int* d;
      ~Leave() { --*d; }
    } leave{&depth_};
    if (IsPunct("(")) {
      Next();
      absl::StatusOr<Condition> inner = Or();
      if (!inner.ok()) return inner;
      if (absl::Status s = Expect(")"); !s.ok()) return s;
      return inner;
    }
    const Token name = Peek();
    if (json_ ? name.kind != Token::kSelector : name.kind != Token::kWord) {
      return Error(json_ ? "a selector ($.field) expected" : "a field name expected");
    }
    Next();
    if (json_ && !ValidSelector(name.text)) {
      return InvalidPattern(Lexer::At(absl::StrFormat("\"%s\" is not a selector like $.a.b[0]", name.text),
                               name.column),
                     pattern_);
    }
    Condition c;
    c.name = name.text;
    if (json_ && Peek().kind == Token::kWord) {
      const std::string w = Next().text;
      const std::string w2 = Peek().kind == Token::kWord ? Peek().text : "";
      if (w == "IS" && (w2 == "NULL" || w2 == "TRUE" || w2 == "FALSE")) {
        Next();
        c.kind = w2 == "NULL" ? Condition::kIsNull
                 : w2 == "TRUE" ? Condition::kIsTrue
                                : Condition::kIsFalse;
        return c;
      }
      if (w == "NOT" && w2 == "EXISTS") {
        Next();
        c.kind = Condition::kNotExists;
        return c;
      }
      if (w == "EXISTS") {
        c.kind = Condition::kExists;
        return c;
      }
      return Error("IS NULL, IS TRUE, IS FALSE, EXISTS, NOT EXISTS or an operator expected");
    }
    if (Peek().kind != Token::kOp) {
      if (!json_) {
        c.kind = Condition::kExists;  // a bare name in a slot
        return c;
      }
      return Error("an operator (= != < <= > >=) expected");
    }
    const std::string op = Next().text;
    c.op = op == "=" || op == "==" ? Op::kEq
           : op == "!="            ? Op::kNe
           : op == "<"             ? Op::kLt
           : op == "<="            ? Op::kLe
           : op == ">"             ? Op::kGt
                                   : Op::kGe;
    const Token v = Peek();
    if (v.kind == Token::kString || v.kind == Token::kWord) {
      Next();
      c.value.text = v.text;
      if (v.kind == Token::kWord) c.value.number = ParseNumber(v.text);
    } else if (v.kind == Token::kRegex) {
      Next();
      absl::StatusOr<std::unique_ptr<RE2>> re = CompileFilterRegex(v.text, pattern_);
      if (!re.ok()) return re.status();
      c.value.regex = std::move(*re);
    } else {
      return Error(absl::StrFormat("a value expected after '%s'", op));
    }
    if (c.op != Op::kEq && c.op != Op::kNe && !c.value.number) {
      return InvalidPattern(Lexer::At(absl::StrFormat("'%s' compares numbers, and \"%s\" is not one", op,
                                               v.text),
                               v.column),
                     pattern_);
    }
    return c;
  }

  static bool ValidSelector(std::string_view s) {
    if (s.empty() || s[0] != '$') return false;
    size_t i = 1;
    if (i == s.size()) return false;
    while (i < s.size()) {
      if (s[i] == '.') {
        size_t j = ++i;
        while (i < s.size() && s[i] != '.' && s[i] != '[') ++i;
        if (i == j) return false;
      } else if (s[i] == '[') {
        size_t j = ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        if (i == j || i >= s.size() || s[i] != ']') return false;
        ++i;
      } else {
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<Token> t_;
  size_t k_ = 0;
  std::string_view pattern_;
  bool json_;
  int depth_ = 0;
};

Field FieldOf(const nlohmann::json& j) {
  Field f;
  switch (j.type()) {
    case nlohmann::json::value_t::null: f.kind = Field::kNull; break;
    case nlohmann::json::value_t::boolean:
      f.kind = Field::kBool;
      f.boolean = j.get<bool>();
      break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      f.kind = Field::kNumber;
      f.number = j.get<double>();
      break;
    case nlohmann::json::value_t::string:
      f.kind = Field::kText;
      f.text = j.get_ref<const std::string&>();
      break;
    default: f.kind = Field::kOther; break;
  }
  return f;
}

class JsonPattern final : public StructuredPattern {
 public:
  explicit JsonPattern(Condition c) : condition_(std::move(c)) {}
  bool Matches(std::string_view message) const override {
    nlohmann::json doc = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return false;
    return condition_.Eval([&](const std::string& selector) {
      const nlohmann::json* at = &doc;
      size_t i = 1;  // after '$' (checked by the parser)
      while (i < selector.size()) {
        if (selector[i] == '.') {
          size_t j = ++i;
          while (i < selector.size() && selector[i] != '.' && selector[i] != '[') ++i;
          if (!at->is_object()) return Field{};
          auto it = at->find(selector.substr(j, i - j));
          if (it == at->end()) return Field{};
          at = &*it;
        } else {  // [index]
          size_t j = ++i;
          while (selector[i] != ']') ++i;
          size_t index = std::strtoull(selector.substr(j, i - j).c_str(), nullptr, 10);
          ++i;
          if (!at->is_array() || index >= at->size()) return Field{};
          at = &(*at)[index];
        }
      }
      return FieldOf(*at);
    });
  }

 private:
  Condition condition_;
};

// The fields of a space-delimited message: split by spaces, "quoted" and
// [bracketed] text one field each (without its quotes or brackets).
std::vector<std::string_view> SplitFields(std::string_view m) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (true) {
    while (i < m.size() && (m[i] == ' ' || m[i] == '\t')) ++i;
    if (i >= m.size()) return out;
    char close = m[i] == '"' ? '"' : m[i] == '[' ? ']' : 0;
    if (close != 0) {
      size_t end = m.find(close, i + 1);
      if (end != std::string_view::npos) {
        out.push_back(m.substr(i + 1, end - i - 1));
        i = end + 1;
        continue;
      }
    }
    size_t end = i;
    while (end < m.size() && m[end] != ' ' && m[end] != '\t') ++end;
    out.push_back(m.substr(i, end - i));
    i = end;
  }
}

class DelimitedPattern final : public StructuredPattern {
 public:
  struct Slot {
    bool ellipsis = false;
    std::string name;
    std::optional<Condition> condition;
  };
  explicit DelimitedPattern(std::vector<Slot> slots) : slots_(std::move(slots)) {
    for (const Slot& s : slots_) {
      if (s.ellipsis) {
        ellipsis_ = true;
      } else {
        ++fields_needed_;
      }
    }
  }

  bool Matches(std::string_view message) const override {
    const std::vector<std::string_view> fields = SplitFields(message);
    const size_t n = slots_.size(), m = fields.size();
    if (m < fields_needed_ || (!ellipsis_ && m != fields_needed_)) return false;
    // next[j]: slots i+1.. match fields j..; cur[j]: slots i.. do (two rows,
    // so memory is the message's field count whatever the pattern).
    std::vector<char> next(m + 1, 0), cur(m + 1, 0);
    next[m] = 1;
    for (size_t i = n; i-- > 0;) {
      const Slot& s = slots_[i];
      for (size_t j = m + 1; j-- > 0;) {
        cur[j] = 0;
        if (s.ellipsis) {
          cur[j] = next[j] || (j < m && cur[j + 1]);
        } else if (j < m && next[j + 1]) {
          cur[j] = !s.condition || s.condition->Eval([&](const std::string&) {
            Field f;
            f.kind = Field::kText;
            f.text = fields[j];
            return f;
          });
        }
      }
      std::swap(next, cur);
    }
    return next[0] != 0;
  }

 private:
  std::vector<Slot> slots_;
  size_t fields_needed_ = 0;  // slots that are not ...
  bool ellipsis_ = false;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const StructuredPattern>> ParseStructuredPattern(
    std::string_view pattern) {
  absl::StatusOr<std::vector<Token>> tokens = Lexer(pattern).Run();
  if (!tokens.ok()) return tokens.status();
  const bool json = (*tokens)[0].text == "{";
  ConditionParser p(*std::move(tokens), pattern, json);
  p.Next();  // { or [
  if (json) {
    absl::StatusOr<Condition> c = p.Or();
    if (!c.ok()) return c.status();
    if (absl::Status s = p.Expect("}"); !s.ok()) return s;
    if (p.Peek().kind != Token::kEnd) return p.Error("nothing may follow the closing '}'");
    return std::make_shared<JsonPattern>(*std::move(c));
  }
  std::vector<DelimitedPattern::Slot> slots;
  while (true) {
    DelimitedPattern::Slot slot;
    if (p.Peek().kind == Token::kEllipsis) {
      p.Next();
      slot.ellipsis = true;
    } else {
      if (p.Peek().kind != Token::kWord) return p.Error("a field name or ... expected");
      slot.name = p.Peek().text;
      absl::StatusOr<Condition> c = p.Or();
      if (!c.ok()) return c.status();
      // Every name in the slot's condition must be the slot's own.
      std::vector<const Condition*> todo = {&*c};
      while (!todo.empty()) {
        const Condition* x = todo.back();
        todo.pop_back();
        for (const Condition& child : x->children) todo.push_back(&child);
        if (x->kind != Condition::kAnd && x->kind != Condition::kOr && x->name != slot.name) {
          return InvalidPattern(absl::StrFormat("a condition in the slot of field \"%s\" names \"%s\"; "
                                         "a slot's conditions name its own field",
                                         slot.name, x->name),
                         pattern);
        }
      }
      if (c->kind != Condition::kExists) slot.condition = *std::move(c);
    }
    slots.push_back(std::move(slot));
    if (p.IsPunct(",")) {
      p.Next();
      continue;
    }
    if (absl::Status s = p.Expect("]"); !s.ok()) return s;
    break;
  }
  if (p.Peek().kind != Token::kEnd) return p.Error("nothing may follow the closing ']'");
  return std::make_shared<DelimitedPattern>(std::move(slots));
}

}  // namespace trainwatch::query::internal
