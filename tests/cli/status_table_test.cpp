// The table `keyshim status` and `keyshim demo` print, rendered from /status
// answers written the way the server writes them.
#include "cli/status_table.hpp"

#include <gtest/gtest.h>

#include <string>

using keyshim::cli::render_status_heading;
using keyshim::cli::render_status_table;

namespace {

// One key of each state; "resumes_in_ms" 22'330'000 is 6h 12m 10s.
constexpr const char* k_three_keys = R"({"version":"0.1.0","pid":4242,"generation":3,
  "listen":"127.0.0.1:8787","config":"/home/u/.config/keyshim/keys.toml","problem":null,
  "totals":{"total":3,"available":1,"cooling":1,"disabled":1},"pools":[{"name":"default","route":"/",
  "upstream":"https://api.openai.com","totals":{"total":3,"available":1,"cooling":1,"disabled":1},"keys":[
  {"label":"personal","fingerprint":"sk-p~0123abcd","upstream":"https://api.openai.com","state":"available",
   "until":null,"resumes_in_ms":0,"reason":null,"ok":41,"err":2,"last_status":200,"in_flight":1},
  {"label":"team","fingerprint":"sk-t~89abcdef","upstream":"https://api.openai.com","state":"cooling",
   "until":"2026-11-30T04:00:00Z","resumes_in_ms":22330000,"reason":"429 Retry-After","ok":7,"err":1,
   "last_status":429,"in_flight":0},
  {"label":"old","fingerprint":"sk-o~deadbeef","upstream":"https://api.openai.com","state":"disabled",
   "until":null,"resumes_in_ms":0,"reason":"401 unauthorized","ok":0,"err":1,"last_status":401,"in_flight":0,
   "today":{"requests":4,"failures":{"rate_limit":0,"auth":1,"quota":0,"server":0,"transport":0},
   "input_tokens":0,"output_tokens":0},
   "total":{"requests":9,"failures":{"rate_limit":2,"auth":1,"quota":0,"server":0,"transport":3},
   "input_tokens":1200,"output_tokens":345}}]}]})";

keyshim::util::Json parse(const std::string& text) {
  std::optional<keyshim::util::Json> json = keyshim::util::parse_json(text);
  EXPECT_TRUE(json.has_value()) << text;
  return json.value_or(keyshim::util::Json{});
}

std::string strip_ansi(std::string text) {
  std::size_t at = 0;
  while ((at = text.find('\033', at)) != std::string::npos) {
    text.erase(at, text.find('m', at) - at + 1);
  }
  return text;
}

} // namespace

TEST(StatusTable, ShowsEveryKeyWithItsHealthUsageAndTheTotals) {
  std::string table = render_status_table(parse(k_three_keys), false);
  EXPECT_EQ(table,
            "pool default at / -> https://api.openai.com\n"
            "LABEL     FINGERPRINT    STATE      RESUMES IN  REASON            OK  ERR  LAST  IN FLIGHT\n"
            "personal  sk-p~0123abcd  available  -           -                 41  2    200   1\n"
            "team      sk-t~89abcdef  cooling    6h 12m      429 Retry-After   7   1    429   0\n"
            "old       sk-o~deadbeef  disabled   -           401 unauthorized  0   1    401   0\n"
            "USAGE     TODAY  FAILED  IN  OUT  SINCE START  FAILED                             IN    OUT\n"
            "personal  -      -       -   -    -            -                                  -     -\n"
            "team      -      -       -   -    -            -                                  -     -\n"
            "old       4      auth 1  0   0    9            rate_limit 2, auth 1, transport 3  1200  345\n"
            "\n"
            "3 keys: 1 available, 1 cooling, 1 disabled\n");
}

// The limits each key's provider last reported, under the usage: a row per
// kind, and no table at all while no provider reported any.
TEST(StatusTable, QuotaTableShowsTheLastReportedLimitsPerKey) {
  keyshim::util::Json status =
      parse(R"({"totals":{"total":2,"available":1,"cooling":1,"disabled":0},"pools":[)"
            R"({"name":"default","route":"/","upstream":"https://api.openai.com","keys":[)"
            R"({"label":"personal","state":"cooling","quota":{"requests":{"limit":500,"remaining":0,)"
            R"("reset":"2026-11-30T04:00:03Z","resets_in_ms":2500},"tokens":{"limit":30000,"remaining":1200,)"
            R"("reset":"2026-11-30T03:59:00Z","resets_in_ms":0},"unified":{"limit":100,"remaining":58,)"
            R"("reset":null,"resets_in_ms":null}}},)"
            R"({"label":"team","state":"available","quota":null}]}]})");
  std::string table = render_status_table(status, false);
  EXPECT_NE(table.find("QUOTA     KIND      LEFT  LIMIT  RESETS IN\n"
                       "personal  requests  0     500    2.5s\n"
                       "personal  tokens    1200  30000  now\n"
                       "personal  unified   58    100    -\n"
                       "\n"),
            std::string::npos)
      << table;
  EXPECT_EQ(render_status_table(parse(k_three_keys), false).find("QUOTA"), std::string::npos);
}

TEST(StatusTable, EachOwnLimitOfAKeyHasARowWithItsUseAndWhenItResets) {
  std::string text = k_three_keys;
  const std::string limits =
      R"("limits":[{"name":"requests_per_minute","used":2,"limit":2,"per":"minute",)"
      R"("resets":"2026-11-30T04:00:00Z","resets_in_ms":34000},{"name":"tokens_per_day","used":1200,)"
      R"("limit":2000000,"per":"day","resets":"2026-11-30T04:00:00Z","resets_in_ms":36000000}],)";
  text.insert(text.find(R"("ok":7)"), limits);
  std::string table = render_status_table(parse(text), false);
  EXPECT_NE(table.find("LIMITS  USE                          RESETS IN\n"
                       "team    requests 2/2 per minute      34s\n"
                       "team    tokens 1200/2000000 per day  10h\n"),
            std::string::npos)
      << table;
}

TEST(StatusTable, NoLimitsTableWithoutLimits) {
  EXPECT_EQ(render_status_table(parse(k_three_keys), false).find("LIMITS"), std::string::npos);
}

TEST(StatusTable, EachPoolHasItsOwnHeadingAndTable) {
  keyshim::util::Json status = parse(
      R"({"totals":{"total":2,"available":2,"cooling":0,"disabled":0},"pools":[)"
      R"({"name":"openai","route":"/openai","upstream":"https://api.openai.com","keys":[{"label":"o1","state":"available"}]},)"
      R"({"name":"anthropic","route":"/anthropic","upstream":"https://api.anthropic.com","keys":[{"label":"a1","state":"available"}]}]})");
  std::string table = render_status_table(status, false);
  std::size_t openai = table.find("pool openai at /openai -> https://api.openai.com\nLABEL");
  std::size_t anthropic = table.find("pool anthropic at /anthropic -> https://api.anthropic.com\nLABEL");
  ASSERT_NE(openai, std::string::npos) << table;
  ASSERT_NE(anthropic, std::string::npos) << table;
  EXPECT_LT(openai, table.find("\no1 "));
  EXPECT_LT(table.find("\no1 "), anthropic);
  EXPECT_LT(anthropic, table.find("\na1 "));
}

TEST(StatusTable, ShortCooldownsReadInSeconds) {
  std::string text = k_three_keys;
  text.replace(text.find("22330000"), 8, "18400");
  EXPECT_NE(render_status_table(parse(text), false).find("cooling    18s "), std::string::npos);
}

TEST(StatusTable, HeadingNamesTheInstance) {
  EXPECT_EQ(render_status_heading(parse(k_three_keys)),
            "keyshim 0.1.0 on 127.0.0.1:8787, pid 4242, pool file /home/u/.config/keyshim/keys.toml\n");
}

TEST(StatusTable, ColourWrapsOnlyTheStateWordsAndKeepsColumnsAligned) {
  std::string plain = render_status_table(parse(k_three_keys), false);
  std::string coloured = render_status_table(parse(k_three_keys), true);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  EXPECT_NE(coloured.find("\033[32mavailable\033[0m"), std::string::npos);
  EXPECT_NE(coloured.find("\033[33mcooling\033[0m"), std::string::npos);
  EXPECT_NE(coloured.find("\033[31mdisabled\033[0m"), std::string::npos);
  EXPECT_EQ(strip_ansi(coloured), plain);
}

TEST(StatusTable, UnusablePoolFileShowsTotalsAndTheProblemWithoutATable) {
  keyshim::util::Json status = parse(
      R"({"pid":7,"generation":0,"problem":"keyshim cannot use its pool file: keys.toml:3:1: bad\nkeys.toml:4:1: worse\n",)"
      R"("totals":{"total":0,"available":0,"cooling":0,"disabled":0},"pools":[]})");
  EXPECT_EQ(render_status_table(status, false),
            "0 keys: 0 available, 0 cooling, 0 disabled\n"
            "problem: keyshim cannot use its pool file: keys.toml:3:1: bad\n"
            "  keys.toml:4:1: worse\n");
}

TEST(StatusTable, NoProblemLineWhenTheFileIsFine) {
  EXPECT_EQ(render_status_table(parse(k_three_keys), false).find("problem"), std::string::npos);
}

TEST(StatusTable, OneKeyIsSingular) {
  keyshim::util::Json status =
      parse(R"({"totals":{"total":1,"available":1,"cooling":0,"disabled":0},)"
            R"("pools":[{"name":"default","keys":[{"label":"solo","fingerprint":"sk-s~00000000",)"
            R"("state":"available","ok":0,"err":0,"last_status":null,"in_flight":0}]}]})");
  std::string table = render_status_table(status, false);
  EXPECT_NE(table.find("\n1 key: 1 available"), std::string::npos) << table;
  EXPECT_NE(table.find("solo   sk-s~00000000  available  -           -       0   0    -     0\n"),
            std::string::npos)
      << table;
}

TEST(StatusTable, ControlCharactersFromLabelsAndReasonsNeverReachTheTerminal) {
  keyshim::util::Json status = parse(
      R"({"totals":{"total":1,"available":0,"cooling":1,"disabled":0},)"
      R"("pools":[{"name":"evil\u001b[2J","keys":[{"label":"evil\u001b[2J","fingerprint":"sk-e~00000000",)"
      R"("state":"cooling","resumes_in_ms":1000,"reason":"429 \u001b]0;x\u0007"}]}]})");
  std::string table = render_status_table(status, false);
  EXPECT_EQ(table.find('\033'), std::string::npos) << table;
  EXPECT_EQ(table.find('\a'), std::string::npos) << table;
  EXPECT_NE(table.find("evil?[2J"), std::string::npos) << table;
}

TEST(StatusTable, AKeyServingOnlySomeModelsGetsALineSayingWhich) {
  keyshim::util::Json status = parse(
      R"({"totals":{"total":2,"available":2,"cooling":0,"disabled":0},"pools":[)"
      R"({"name":"openai","route":"/openai","upstream":"https://api.openai.com","keys":[)"
      R"({"label":"team","state":"available","serves":{"models":["gpt-4o*","o3"],"exclude_models":["*-audio*"]}},)"
      R"({"label":"cheap","state":"available","serves":{"models":null,"exclude_models":["o1-pro*"]}},)"
      R"({"label":"all","state":"available","serves":null}]}]})");
  std::string table = render_status_table(status, false);
  std::size_t team = table.find("\nteam serves gpt-4o*, o3 except *-audio*\n");
  std::size_t cheap = table.find("\ncheap serves every model except o1-pro*\n");
  ASSERT_NE(team, std::string::npos) << table;
  ASSERT_NE(cheap, std::string::npos) << table;
  EXPECT_LT(table.find("\nall "), team); // under the health table, before the usage table
  EXPECT_LT(cheap, table.find("\nUSAGE"));
  EXPECT_EQ(table.find("all serves"), std::string::npos) << table;
}
