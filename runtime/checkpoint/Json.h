//===- Json.h - The JSON of safetensors headers and indexes ----*- C++ -*-===//
//
// A strict parser for the JSON subset checkpoint files use (no duplicate keys, control
// characters, leading zeros or invalid UTF-8). Internal to runtime/checkpoint/.
//
//===----------------------------------------------------------------------===//

#ifndef MLPERFC_RUNTIME_CHECKPOINT_JSON_H
#define MLPERFC_RUNTIME_CHECKPOINT_JSON_H

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace mlperf::rt::checkpoint_json {

/// The JSON subset of safetensors headers and Hugging Face checkpoint indexes: objects,
/// arrays, strings and integers (a float or literal is an error naming its byte).
struct Json {
  enum class Kind { kObject, kArray, kString, kInteger } kind = Kind::kInteger;
  std::vector<std::pair<std::string, Json>> members;
  std::vector<Json> elements;
  std::string text;
  int64_t integer = 0;

  const Json *find(const std::string &key) const {
    for (const auto &[name, value] : members) {
      if (name == key) {
        return &value;
      }
    }
    return nullptr;
  }
};

class JsonParser {
public:
  explicit JsonParser(const std::string &input) : input(input) {}

  bool parse(Json &out) {
    if (!parseValue(out, 0)) {
      return false;
    }
    skipSpace();
    return pos == input.size() || fail("trailing characters");
  }
  const std::string &error() const { return message; }

private:
  bool fail(const std::string &what) {
    if (message.empty()) {
      message = what + " at header byte " + std::to_string(pos);
    }
    return false;
  }
  void skipSpace() {
    while (pos < input.size() && std::strchr(" \t\r\n", input[pos]) != nullptr) {
      ++pos;
    }
  }
  bool expect(char c) {
    skipSpace();
    if (pos < input.size() && input[pos] == c) {
      ++pos;
      return true;
    }
    return fail(std::string("expected '") + c + "'");
  }
  bool parseString(std::string &out) {
    if (!expect('"')) {
      return false;
    }
    while (pos < input.size() && input[pos] != '"') {
      char c = input[pos++];
      if (static_cast<unsigned char>(c) < 0x20) {
        return fail("control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= input.size()) {
        return fail("unterminated escape");
      }
      char e = input[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        unsigned code = 0;
        for (int digit = 0; digit < 4; ++digit, ++pos) {
          char h = pos < input.size() ? input[pos] : '\0';
          int value = (h >= '0' && h <= '9')   ? h - '0'
                      : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                      : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                               : -1;
          if (value < 0) {
            return fail("bad \\u escape");
          }
          code = code * 16 + static_cast<unsigned>(value);
        }
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    if (!validUtf8(out)) {
      return fail("string is not UTF-8");
    }
    return expect('"');
  }
  static bool validUtf8(const std::string &text) {
    for (size_t i = 0; i < text.size();) {
      auto byte = static_cast<unsigned char>(text[i]);
      size_t length = byte < 0x80           ? 1
                      : (byte >> 5) == 0x6  ? 2
                      : (byte >> 4) == 0xE  ? 3
                      : (byte >> 3) == 0x1E ? 4
                                            : 0;
      if (length == 0 || i + length > text.size()) {
        return false;
      }
      for (size_t k = 1; k < length; ++k) {
        if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) {
          return false;
        }
      }
      i += length;
    }
    return true;
  }
  bool parseValue(Json &out, int depth) {
    if (depth > 8) {
      return fail("nesting too deep");
    }
    skipSpace();
    if (pos >= input.size()) {
      return fail("unexpected end");
    }
    char c = input[pos];
    if (c == '{') {
      out.kind = Json::Kind::kObject;
      ++pos;
      skipSpace();
      if (pos < input.size() && input[pos] == '}') {
        ++pos;
        return true;
      }
      do {
        std::string key;
        Json value;
        if (!parseString(key) || !expect(':') || !parseValue(value, depth + 1)) {
          return false;
        }
        if (out.find(key)) {
          return fail("key '" + key + "' appears twice in one object");
        }
        out.members.emplace_back(std::move(key), std::move(value));
        skipSpace();
      } while (pos < input.size() && input[pos] == ',' && ++pos);
      return expect('}');
    }
    if (c == '[') {
      out.kind = Json::Kind::kArray;
      ++pos;
      skipSpace();
      if (pos < input.size() && input[pos] == ']') {
        ++pos;
        return true;
      }
      do {
        Json value;
        if (!parseValue(value, depth + 1)) {
          return false;
        }
        out.elements.push_back(std::move(value));
        skipSpace();
      } while (pos < input.size() && input[pos] == ',' && ++pos);
      return expect(']');
    }
    if (c == '"') {
      out.kind = Json::Kind::kString;
      return parseString(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = pos++;
      while (pos < input.size() && input[pos] >= '0' && input[pos] <= '9') {
        ++pos;
      }
      size_t digits = pos - start - (c == '-' ? 1 : 0);
      if (digits == 0) {
        return fail("'-' without digits");
      }
      if (digits > 1 && input[pos - digits] == '0') {
        return fail("integer with a leading zero");
      }
      if (digits > 18) {
        return fail("integer too large");
      }
      out.kind = Json::Kind::kInteger;
      out.integer = std::stoll(input.substr(start, pos - start));
      return true;
    }
    return fail("unexpected character");
  }

  const std::string &input;
  size_t pos = 0;
  std::string message;
};

} // namespace mlperf::rt::checkpoint_json

#endif // MLPERFC_RUNTIME_CHECKPOINT_JSON_H
