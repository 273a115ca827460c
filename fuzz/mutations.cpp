// The mutations of fuzz/mutations.hpp. Edge values are the ones readers get wrong: -1, 0, numbers
// past int64 and double, NaN and infinity spelled as text, wrong types, null and empty containers.
#include "fuzz/mutations.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace trainsim::fuzz {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<const char*, 30> kEdgeValues = {
    "-1", "0", "1", "-0", "2", "3", "0.5", "1e308", "-1e308", "1e309", "1e-320", "NaN", "nan", "Infinity", "-inf",
    "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "4294967296",
    "2147483648", "1e19", "1e300", "\"\"", "\"x\"", "null", "true", "[]", "{}", "[1,2]"};
// Bytes that mean something to one of the formats (JSON, TOML, shell), and a few that mean nothing.
constexpr char kSyntaxBytes[] = "\"{}[],:=#$\\'\n\t -+.eE0123456789\0\x7f\xff";
constexpr std::array<int64_t, 12> kEdgeInts = {0, -1, 1, 2, 1000001, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40,
                                               int64_t{1} << 62, std::numeric_limits<int64_t>::max(),
                                               std::numeric_limits<int64_t>::min(), -(int64_t{1} << 40)};

// [begin, end) of each number-looking token: an optional '-' then a digit, then digits . e E + -.
std::vector<std::pair<size_t, size_t>> number_tokens(const std::string& s) {
  std::vector<std::pair<size_t, size_t>> tokens;
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t digit = s[i] == '-' ? i + 1 : i;
    if (digit >= s.size() || std::isdigit(static_cast<unsigned char>(s[digit])) == 0) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) != 0 || s[i - 1] == '.')) continue;
    size_t end = digit;
    while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) != 0 || std::strchr(".eE+-", s[end]) != nullptr)) ++end;
    tokens.emplace_back(i, end);
    i = end;
  }
  return tokens;
}

void mutate_bytes(std::string& s, const std::vector<std::string>& corpus, Random& random) {
  const size_t at = random.below(s.size() + 1);
  switch (random.below(8)) {
    case 0:  // flip one bit
      if (!s.empty()) s[random.below(s.size())] ^= static_cast<char>(1u << random.below(8));
      break;
    case 1:  // insert a byte with a meaning in some format
      s.insert(at, 1, kSyntaxBytes[random.below(sizeof kSyntaxBytes - 1)]);
      break;
    case 2:  // set a random byte
      if (!s.empty()) s[random.below(s.size())] = static_cast<char>(random.below(256));
      break;
    case 3:  // delete a range
      s.erase(at, 1 + random.below(16));
      break;
    case 4: {  // duplicate a range in place
      const std::string range = s.substr(at, 1 + random.below(64));
      s.insert(at, range);
      break;
    }
    case 5:  // truncate
      s.resize(at);
      break;
    case 6: {  // splice: this seed's head, another's tail
      const std::string& other = corpus[random.below(corpus.size())];
      s = s.substr(0, at) + other.substr(random.below(other.size() + 1));
      break;
    }
    default: {  // insert a chunk of another seed
      const std::string& other = corpus[random.below(corpus.size())];
      s.insert(at, other.substr(random.below(other.size() + 1), 1 + random.below(32)));
      break;
    }
  }
}

void mutate_number_token(std::string& s, Random& random) {
  const auto tokens = number_tokens(s);
  if (tokens.empty()) return;
  const auto [begin, end] = tokens[random.below(tokens.size())];
  s.replace(begin, end - begin, kEdgeValues[random.below(kEdgeValues.size())]);
}

void collect_nodes(Json& node, std::vector<Json*>& nodes, int depth) {
  nodes.push_back(&node);
  if (depth > 32 || !node.is_structured()) return;
  for (auto& child : node) collect_nodes(child, nodes, depth + 1);
}

Json edge_value(Random& random) { return Json::parse(kEdgeValues[random.below(kEdgeValues.size())], nullptr, false); }

// One change at a random node of the parsed document; returns false when it could not be parsed.
bool mutate_json_tree(std::string& s, Random& random) {
  Json doc = Json::parse(s, nullptr, false);
  if (doc.is_discarded()) return false;
  std::vector<Json*> nodes;
  collect_nodes(doc, nodes, 0);
  Json& node = *nodes[random.below(nodes.size())];
  const size_t op = random.below(6);
  if (op == 1 && node.is_object() && !node.empty()) {  // delete a key
    auto it = node.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(random.below(node.size())));
    const std::string key = it.key();  // a copy: erasing shifts the element that holds it
    node.erase(key);
  } else if (op == 2 && node.is_object()) {  // add a key: an unknown one, or a known one from elsewhere
    const Json& donor = *nodes[random.below(nodes.size())];
    std::string key = "unknown_key";
    if (donor.is_object() && !donor.empty()) key = donor.begin().key() + (random.one_in(2) ? "" : "s");
    node[key] = edge_value(random);
  } else if (op == 3 && node.is_array()) {  // empty the array, or repeat an element many times
    if (random.one_in(2) || node.empty()) node = Json::array();
    else {
      const Json element = node[random.below(node.size())];  // a copy: inserting reallocates
      node.insert(node.end(), 64, element);
    }
  } else if (op == 4) {  // wrap the value in an array or an object
    node = random.one_in(2) ? Json::array({node}) : Json::object({{"value", node}});
  } else if (op == 5 && node.is_number()) {  // scale a number by a large or tiny factor
    node = node.get<double>() * (random.one_in(2) ? 1e12 : -1e-12);
  } else {
    node = edge_value(random);
  }
  s = doc.dump(random.one_in(2) ? 2 : -1);
  return true;
}

void overwrite_int64(std::string& s, Random& random) {
  if (s.size() < sizeof(int64_t)) return;
  const size_t slots = s.size() / sizeof(int64_t);
  const int64_t value = kEdgeInts[random.below(kEdgeInts.size())];
  std::memcpy(s.data() + random.below(slots) * sizeof value, &value, sizeof value);
}

}  // namespace

uint64_t Random::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

SeedKind seed_kind(const std::string& bytes) {
  if (!Json::accept(bytes)) {
    const bool text = std::all_of(bytes.begin(), bytes.end(), [](char c) {
      const auto u = static_cast<unsigned char>(c);
      return u >= 0x20 || u == '\n' || u == '\r' || u == '\t';
    });
    return text ? SeedKind::kText : SeedKind::kBinary;
  }
  return SeedKind::kJson;
}

std::string mutate(const std::string& seed, const std::vector<std::string>& corpus, Random& random, size_t max_bytes) {
  std::string s = seed;
  const SeedKind kind = seed_kind(seed);
  const size_t count = 1 + random.below(4);
  for (size_t i = 0; i < count; ++i) {
    const size_t pick = random.below(10);
    if (kind == SeedKind::kJson && pick < 5 && mutate_json_tree(s, random)) continue;
    if (kind != SeedKind::kBinary && pick < 7) mutate_number_token(s, random);
    else if (kind == SeedKind::kBinary && pick < 5) overwrite_int64(s, random);
    else mutate_bytes(s, corpus, random);
  }
  if (s.size() > max_bytes) s.resize(max_bytes);
  return s;
}

}  // namespace trainsim::fuzz
