// Strict JSON reading: collected problems, JSON paths, nearest-key suggestions, null as absent.
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/nearest_name.hpp"

using namespace trainsim;

TEST_CASE("an unknown key is reported with its path and the nearest valid key") {
  const auto doc = nlohmann::json::parse(R"({"hiden": 4, "layers": 2})");
  ProblemList problems;
  JsonObjectReader r(doc, "m.json", "/model", problems);
  r.optional_int("hidden", 1);
  r.optional_int("layers", 1);
  r.reject_unknown_keys();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("m.json: /model/hiden: unknown key \"hiden\""));
  CHECK_THAT(problems.items()[0], Catch::Contains("did you mean \"hidden\""));
}

TEST_CASE("every problem of an object is collected, not just the first") {
  const auto doc = nlohmann::json::parse(R"({"a": -1, "b": "x", "c": 1.5})");
  ProblemList problems;
  JsonObjectReader r(doc, "f.json", "", problems);
  r.optional_int("a", 1);
  r.optional_int("b", 1);
  r.optional_int("c", 1);
  r.required_int("d", 1);
  CHECK(problems.size() == 4);
  CHECK_THAT(problems.items()[0], Catch::Contains("/a: a (-1) must be >= 1"));
  CHECK_THAT(problems.items()[1], Catch::Contains("got a string"));
  CHECK_THAT(problems.items()[2], Catch::Contains("got a number with a fraction"));
  CHECK_THAT(problems.items()[3], Catch::Contains("missing required key \"d\""));
}

TEST_CASE("null reads as not given") {
  const auto doc = nlohmann::json::parse(R"({"vpp": null})");
  ProblemList problems;
  JsonObjectReader r(doc, "f.json", "", problems);
  CHECK_FALSE(r.optional_int("vpp", 1).has_value());
  CHECK_FALSE(r.has("vpp"));
  CHECK(problems.empty());
}

TEST_CASE("a choice outside its set names the set and the nearest member") {
  const auto doc = nlohmann::json::parse(R"({"ffn_kind": "swigl"})");
  ProblemList problems;
  JsonObjectReader r(doc, "f.json", "", problems);
  r.optional_choice("ffn_kind", {"gelu", "swiglu"});
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.items()[0], Catch::Contains("not one of: gelu, swiglu (did you mean \"swiglu\"?)"));
}

TEST_CASE("malformed JSON names the file, line and column") {
  try {
    parse_json_text("{\n  \"a\": 1,\n  \"b\": }\n", "bad.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("bad.json: malformed JSON at line 3"));
  }
}

TEST_CASE("a number past the largest double is malformed JSON naming the file, line and number") {
  // Found by fuzz/ (fuzz/README.md): nlohmann::json throws out_of_range here, not parse_error.
  CHECK_THROWS_WITH(parse_json_text("{\n  \"tp\": 1e309\n}\n", "plan.json"),
                    Catch::Contains("plan.json: malformed JSON at line 2, column 9: the number 1e309 is beyond the range of a double"));
}

TEST_CASE("a missing file is an input error naming the path") {
  CHECK_THROWS_WITH(load_json_file("/nonexistent/x.json"), Catch::Contains("/nonexistent/x.json: cannot open"));
}

TEST_CASE("nearest_name suggests plausible typos only") {
  CHECK(nearest_name("llama3-8", {"llama3-8b", "llama3-70b"}) == "llama3-8b");
  CHECK(nearest_name("completely-different", {"gpt2-124m"}).empty());
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("similar_names offers every name a prefix begins, else the nearest") {
  const std::vector<std::string> gpus = {"a100-sxm-80gb", "h100-sxm-80gb", "h100-sxm-96gb-500w", "h200-sxm-141gb"};
  CHECK(similar_names("h100", gpus) == std::vector<std::string>{"h100-sxm-80gb", "h100-sxm-96gb-500w"});
  CHECK(similar_names("H200", gpus) == std::vector<std::string>{"h200-sxm-141gb"});
  CHECK(similar_names("h100-sxm-80", gpus) == std::vector<std::string>{"h100-sxm-80gb"});
  CHECK(similar_names("tpu-v5", gpus).empty());
  CHECK(did_you_mean_any("h100", gpus) == " (did you mean \"h100-sxm-80gb\" or \"h100-sxm-96gb-500w\"?)");
}

TEST_CASE("required numbers, objects and lists of objects name what is missing or mistyped") {
  const auto doc = nlohmann::json::parse(R"({"t": "1", "b": {"x": 2.5}, "l": [{"y": 1}, 3], "s": 7})");
  ProblemList problems;
  JsonObjectReader r(doc, "f.json", "", problems);
  CHECK(r.required_number("t", 0) == 0);     // a string: reported, default returned
  CHECK(r.required_number("u", 0) == 0);     // absent
  JsonObjectReader b = r.required_object("b");
  CHECK(b.required_number("x", 0) == 2.5);
  JsonObjectReader absent = r.required_object("nope");
  CHECK_FALSE(absent.ok());
  absent.required_number("z", 0);            // nothing more is reported inside a missing object
  CHECK(r.required_object_list("l").size() == 2);
  CHECK(r.required_object_list("s").empty());
  REQUIRE(problems.size() == 5);
  CHECK_THAT(problems.items()[0], Catch::Contains("f.json: /t: expected a number, got a string"));
  CHECK_THAT(problems.items()[1], Catch::Contains("f.json: /u: missing required key \"u\""));
  CHECK_THAT(problems.items()[2], Catch::Contains("f.json: /nope: missing required key \"nope\" (an object)"));
  CHECK_THAT(problems.items()[3], Catch::Contains("f.json: /l/1: expected a JSON object, got an integer"));
  CHECK_THAT(problems.items()[4], Catch::Contains("f.json: /s: expected a list of objects, got an integer"));
}
