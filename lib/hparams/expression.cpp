// lib/hparams/expression.cpp
// HyperPyYAML evaluates `!ref` results with Python's ast: numbers, + - * / // ** %, unary minus
// and parentheses, with Python's int/float rules (true division gives a float, // and % floor
// toward minus infinity, int ** non-negative int stays an int). Anything else stays a string.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.h"
#include "hparams/node.h"

namespace masr::hparams {
namespace {

struct NotArithmetic {};  // the text is not an expression: keep it as a string

struct Number {
  bool is_int = true;
  int64_t i = 0;
  double f = 0.0;
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
};

Number make_int(int64_t i) { return Number{true, i, 0.0}; }
Number make_float(double f) { return Number{false, 0, f}; }

class Parser {
 public:
  Parser(const std::string& text, const Location& where) : text_(text), where_(where) {}

  Number parse() {
    Number result = expression();
    skip_space();
    if (pos_ != text_.size()) throw NotArithmetic{};
    return result;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(const char* op) {
    skip_space();
    const size_t n = std::char_traits<char>::length(op);
    if (text_.compare(pos_, n, op) != 0) return false;
    // "*" must not match the start of "**", nor "/" the start of "//".
    if ((n == 1 && (op[0] == '*' || op[0] == '/')) && pos_ + 1 < text_.size() &&
        text_[pos_ + 1] == op[0]) {
      return false;
    }
    pos_ += n;
    return true;
  }

  [[noreturn]] void fail(const std::string& what) {
    throw_config_error("hparams: " + where_.str() + ": in the expression '" + text_ + "': " + what);
  }

  // expression := term (('+' | '-') term)*
  Number expression() {
    Number left = term();
    while (true) {
      if (accept("+")) {
        left = add(left, term(), +1);
      } else if (accept("-")) {
        left = add(left, term(), -1);
      } else {
        return left;
      }
    }
  }

  // term := unary (('*' | '//' | '/' | '%') unary)*
  Number term() {
    Number left = unary();
    while (true) {
      if (accept("*")) {
        left = multiply(left, unary());
      } else if (accept("//")) {
        left = floor_divide(left, unary());
      } else if (accept("/")) {
        left = true_divide(left, unary());
      } else if (accept("%")) {
        left = modulo(left, unary());
      } else {
        return left;
      }
    }
  }

  // unary := ('-' | '+') unary | power      (so -2 ** 2 == -4, as in Python)
  Number unary() {
    if (accept("-")) {
      Number v = unary();
      if (v.is_int) {
        if (v.i == std::numeric_limits<int64_t>::min()) fail("integer overflow");
        return make_int(-v.i);
      }
      return make_float(-v.f);
    }
    if (accept("+")) return unary();
    return power();
  }

  // power := atom ['**' unary]
  Number power() {
    Number base = atom();
    if (accept("**")) return raise(base, unary());
    return base;
  }

  Number atom() {
    skip_space();
    if (accept("(")) {
      Number inner = expression();
      if (!accept(")")) throw NotArithmetic{};  // e.g. a tuple "(1, 2)"
      return inner;
    }
    return number();
  }

  Number number() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    bool is_float = false;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ == start || (pos_ == start + 1 && is_float)) throw NotArithmetic{};
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) {
        is_float = true;
        pos_ = p;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      }
    }
    // A letter or underscore right after a number ("3407abc", "1_000") is not Python arithmetic.
    if (pos_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      throw NotArithmetic{};
    }
    const std::string token = text_.substr(start, pos_ - start);
    if (is_float) return make_float(std::strtod(token.c_str(), nullptr));
    // Python rejects leading zeros in decimal literals ("007").
    if (token.size() > 1 && token[0] == '0' && token.find_first_not_of('0') != std::string::npos) {
      throw NotArithmetic{};
    }
    errno = 0;
    const long long value = std::strtoll(token.c_str(), nullptr, 10);
    if (errno == ERANGE) fail("integer overflow");
    return make_int(value);
  }

  Number add(const Number& a, const Number& b, int sign) {
    if (a.is_int && b.is_int) {
      int64_t out;
      const bool overflow = sign > 0 ? __builtin_add_overflow(a.i, b.i, &out)
                                     : __builtin_sub_overflow(a.i, b.i, &out);
      if (overflow) fail("integer overflow");
      return make_int(out);
    }
    return make_float(a.as_double() + sign * b.as_double());
  }

  Number multiply(const Number& a, const Number& b) {
    if (a.is_int && b.is_int) {
      int64_t out;
      if (__builtin_mul_overflow(a.i, b.i, &out)) fail("integer overflow");
      return make_int(out);
    }
    return make_float(a.as_double() * b.as_double());
  }

  Number true_divide(const Number& a, const Number& b) {
    if (b.as_double() == 0.0) fail("division by zero");
    return make_float(a.as_double() / b.as_double());
  }

  Number floor_divide(const Number& a, const Number& b) {
    if (b.as_double() == 0.0) fail("division by zero");
    if (a.is_int && b.is_int) {
      if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1) fail("integer overflow");
      int64_t q = a.i / b.i;
      if ((a.i % b.i != 0) && ((a.i < 0) != (b.i < 0))) --q;
      return make_int(q);
    }
    return make_float(std::floor(a.as_double() / b.as_double()));
  }

  Number modulo(const Number& a, const Number& b) {
    if (b.as_double() == 0.0) fail("modulo by zero");
    if (a.is_int && b.is_int) {
      if (b.i == -1) return make_int(0);
      int64_t r = a.i % b.i;
      if (r != 0 && ((r < 0) != (b.i < 0))) r += b.i;
      return make_int(r);
    }
    const double x = a.as_double(), y = b.as_double();
    double r = std::fmod(x, y);
    if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
    return make_float(r);
  }

  Number raise(const Number& base, const Number& exponent) {
    if (base.is_int && exponent.is_int && exponent.i >= 0) {
      int64_t result = 1, b = base.i, e = exponent.i;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(result, b, &result)) fail("integer overflow");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(b, b, &b)) fail("integer overflow");
      }
      return make_int(result);
    }
    const double x = base.as_double(), y = exponent.as_double();
    if (x == 0.0 && y < 0) fail("0 cannot be raised to a negative power");
    if (x < 0 && std::floor(y) != y) fail("a negative number raised to a fractional power");
    return make_float(std::pow(x, y));
  }

  const std::string& text_;
  const Location& where_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<Value> evaluate_arithmetic(const std::string& text, const Location& where) {
  try {
    const Number n = Parser(text, where).parse();
    return n.is_int ? Value::integer(n.i) : Value::real(n.f);
  } catch (const NotArithmetic&) {
    return std::nullopt;
  }
}

}  // namespace masr::hparams
