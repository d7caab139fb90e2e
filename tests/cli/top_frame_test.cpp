// The frames of `keyshim top`, rendered without a terminal from a /status
// answer: key rows, countdowns that move with the answer's age, narrow
// terminals, colours off, the detail view, sorting, filtering and the rates.
#include "cli/top_data.hpp"
#include "cli/top_frame.hpp"
#include "cli/top_input.hpp"
#include "cli/top_recent.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace keyshim::cli::top {
namespace {

using namespace std::chrono_literals;

// Two pools as /status reports them: "team" cooling 27.4 s with a model in
// trouble, a quota and a limit of its own; "personal" fine; "old" disabled.
constexpr const char* k_status = R"({
  "version": "0.1.0", "pid": 4242, "listen": "127.0.0.1:8787", "config": "/k.toml", "problem": null,
  "totals": {"total": 3, "available": 1, "cooling": 1, "disabled": 1},
  "pools": [
    {"name": "openai", "route": "/openai", "upstream": "https://api.openai.com/v1",
     "totals": {"total": 2, "available": 1, "cooling": 1, "disabled": 0},
     "waiting": 2, "oldest_wait_ms": 4200,
     "keys": [
       {"label": "team", "fingerprint": "sk-...Wq9z", "upstream": "https://api.openai.com/v1",
        "state": "cooling", "resumes_in_ms": 27400, "reason": "429 Retry-After", "ok": 120, "err": 4,
        "last_status": 429, "in_flight": 1, "max_concurrent": 4, "websockets": 2,
        "last_error": {"status": 429, "reason": "429 Retry-After", "at": "2027-01-15T07:59:48Z", "ago_ms": 12000},
        "today": {"requests": 14, "failures": {"rate_limit": 2, "auth": 0}, "input_tokens": 12000,
                  "output_tokens": 345},
        "total": {"requests": 130, "failures": {"rate_limit": 4}, "input_tokens": 99000, "output_tokens": 3000},
        "models": [{"model": "gpt-4o", "state": "cooling", "resumes_in_ms": 7000, "reason": "429"}],
        "quota": {"requests": {"limit": 100, "remaining": 70, "reset": "2027-01-15T08:00:30Z",
                               "resets_in_ms": 30000},
                  "tokens": {"limit": null, "remaining": 5000, "reset": null, "resets_in_ms": null}},
        "limits": [{"name": "requests_per_day", "used": 2, "limit": 10, "per": "day",
                    "resets_in_ms": 3600000}]},
       {"label": "personal", "fingerprint": "sk-...Ab12", "upstream": "https://api.openai.com/v1",
        "state": "available", "resumes_in_ms": 0, "reason": null, "ok": 3, "err": 0, "last_status": 200,
        "in_flight": 0, "max_concurrent": null, "websockets": 0, "last_error": null,
        "today": {"requests": 3}, "total": {"requests": 3}, "models": []}]},
    {"name": "anthropic", "route": "/anthropic", "upstream": "https://api.anthropic.com",
     "totals": {"total": 1, "available": 0, "cooling": 0, "disabled": 1},
     "waiting": 0, "oldest_wait_ms": 0,
     "keys": [
       {"label": "old", "fingerprint": "sk-...0000", "state": "disabled", "reason": "401", "ok": 0, "err": 9,
        "in_flight": 0, "websockets": 0, "today": {}, "total": {}, "models": []}]}]})";

Snapshot snapshot(const std::string& text = k_status) {
  std::optional<util::Json> json = util::parse_json(text);
  EXPECT_TRUE(json) << text;
  return read_snapshot(json ? *json : util::Json());
}

std::vector<std::string> frame(const Snapshot& s, const Ui& ui, int width = 80, int height = 24,
                               Millis age = 0ms, bool interactive = true) {
  FrameInput input;
  input.snapshot = &s;
  input.ui = &ui;
  input.width = width;
  input.height = height;
  input.age = age;
  input.interactive = interactive;
  std::vector<std::string> lines;
  for (const Line& line : render_frame(input)) {
    lines.push_back(plain(line));
  }
  return lines;
}

// The first line holding every needle, "" when none does.
std::string line_with(const std::vector<std::string>& lines, const std::vector<std::string>& needles) {
  for (const std::string& line : lines) {
    if (std::all_of(needles.begin(), needles.end(),
                    [&](const std::string& n) { return line.find(n) != std::string::npos; })) {
      return line;
    }
  }
  return "";
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) {
    text += line + "\n";
  }
  return text;
}

std::size_t columns(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

TEST(TopFrame, ShowsARowPerKeyWithStateCountdownInFlightAndLastError) {
  Snapshot s = snapshot();
  std::vector<std::string> lines = frame(s, Ui{});
  EXPECT_EQ(lines.size(), 24u) << "a full screen, the footer at the bottom";
  std::string team = line_with(lines, {"team", "cooling"});
  ASSERT_FALSE(team.empty()) << joined(lines);
  EXPECT_NE(team.find(" 28s "), std::string::npos) << "27.4 s left shows as 28s: " << team;
  EXPECT_NE(team.find(" 1/4 "), std::string::npos) << team;
  EXPECT_NE(team.find("12.3k"), std::string::npos) << "tokens today: " << team;
  EXPECT_NE(team.find("12s ago 429 Retry-After"), std::string::npos) << team;
  EXPECT_EQ(team.rfind("> ", 0), 0u) << "the first key is selected: " << team;
  EXPECT_FALSE(line_with(lines, {"personal", "available", " 0 "}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"old", "disabled"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"gpt-4o", "cooling", "7s", "429"}).empty())
      << "a cooling model under its key";
  EXPECT_FALSE(line_with(lines, {"pool openai at /openai", "waiting 2, oldest 4s"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"keys 3: 1 available, 1 cooling, 1 disabled"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"in flight 1", "waiting 2"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"q quit", "s sort: pool", "/ filter"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"req/min: change of each key's request count over the last minute"}).empty())
      << joined(lines);
  for (const std::string& line : lines) {
    EXPECT_LE(columns(line), 80u) << line;
  }
}

TEST(TopFrame, CountdownsAndAgesMoveWithTheAgeOfTheAnswer) {
  Snapshot s = snapshot();
  std::vector<std::string> later = frame(s, Ui{}, 80, 24, 3000ms);
  std::string team = line_with(later, {"team", "cooling"});
  EXPECT_NE(team.find(" 25s "), std::string::npos) << team;
  EXPECT_NE(team.find("15s ago 429"), std::string::npos) << team;
  EXPECT_FALSE(line_with(later, {"gpt-4o", " 4s "}).empty()) << joined(later);
  EXPECT_FALSE(line_with(later, {"waiting 2, oldest 7s"}).empty()) << joined(later);
  std::vector<std::string> over = frame(s, Ui{}, 80, 24, 30s);
  EXPECT_NE(line_with(over, {"team", "cooling"}).find(" 0s "), std::string::npos) << joined(over);
}

TEST(TopFrame, ANarrowTerminalKeepsLabelStateAndCountdownAndCutsTheRest) {
  Snapshot s = snapshot();
  std::vector<std::string> wide = frame(s, Ui{});
  EXPECT_FALSE(line_with(wide, {"LABEL", "REQ/M", "TOKENS", "WS", "LAST ERROR"}).empty()) << joined(wide);
  for (int width : {50, 40, 30, 20}) {
    std::vector<std::string> lines = frame(s, Ui{}, width, 12);
    EXPECT_EQ(lines.size(), 12u);
    for (const std::string& line : lines) {
      EXPECT_LE(columns(line), static_cast<std::size_t>(width)) << width << ": " << line;
    }
    EXPECT_FALSE(line_with(lines, {"team", "cooling"}).empty()) << width << "\n" << joined(lines);
  }
  std::vector<std::string> forty = frame(s, Ui{}, 40, 12);
  EXPECT_TRUE(line_with(forty, {"TOKENS"}).empty()) << joined(forty);
  EXPECT_FALSE(line_with(forty, {"team", "cooling", "28s", "1/4"}).empty()) << joined(forty);
  std::vector<std::string> thirty = frame(s, Ui{}, 30, 12);
  EXPECT_FALSE(line_with(thirty, {"team", "cooling", "28s"}).empty()) << joined(thirty);
}

TEST(TopFrame, AUtf8LabelIsCutOnACharacterBoundary) {
  std::string text = k_status;
  text.replace(text.find("\"team\""), 6, "\"équipe-très-très-longue\"");
  Snapshot s = snapshot(text);
  std::vector<std::string> lines = frame(s, Ui{});
  std::string row = line_with(lines, {"équipe-très-trè", "cooling"});
  EXPECT_FALSE(row.empty()) << "16 characters of the label: " << joined(lines);
  EXPECT_LE(columns(row), 80u);
  EXPECT_TRUE(util::parse_json("\"" + row + "\"")) << "valid UTF-8: " << row;
}

TEST(TopFrame, ControlCharactersInALabelCannotReachTheTerminal) {
  std::string text = k_status;
  text.replace(text.find("\"team\""), 6, R"("te\u001b[2Jam")");
  std::string all = joined(frame(snapshot(text), Ui{}));
  EXPECT_EQ(all.find('\033'), std::string::npos);
  EXPECT_NE(all.find("te?[2Jam"), std::string::npos) << all;
}

TEST(TopFrame, QuotasAndOwnLimitsAreBarsUnderTheirKeyOnlyWhenReported) {
  std::vector<std::string> lines = frame(snapshot(), Ui{});
  EXPECT_FALSE(line_with(lines, {"    quota requests [###-------] 70 of 100 left"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"limit requests_per_day [##--------] 2 of 10 used"}).empty())
      << joined(lines);
  EXPECT_EQ(joined(lines).find("quota tokens"), std::string::npos) << "no bar without a limit";
  EXPECT_EQ(joined(lines).find("quota", joined(lines).find("personal")), std::string::npos)
      << "no bar for a key without them";
}

TEST(TopFrame, AnInstanceWithoutTheNewFieldsStillShowsItsKeys) {
  std::string old =
      R"({"version":"0.0.9","pid":1,"listen":"127.0.0.1:8787","totals":{"total":1,"available":1},
    "pools":[{"name":"default","route":"/","upstream":"u","keys":[{"label":"k","state":"available","in_flight":0}]}]})";
  std::vector<std::string> lines = frame(snapshot(old), Ui{});
  EXPECT_FALSE(line_with(lines, {"k ", "available", " - "}).empty()) << joined(lines);
  EXPECT_EQ(joined(lines).find("waiting 0,"), std::string::npos);
}

TEST(TopFrame, WithoutColourOnlyBoldDimAndReverseRemain) {
  for (Style style : {Style::plain, Style::title, Style::heading, Style::good, Style::warn, Style::bad,
                      Style::dim, Style::alert, Style::selected, Style::bar}) {
    EXPECT_EQ(look_of(style, false).colour, Colour::none) << static_cast<int>(style);
  }
  EXPECT_EQ(look_of(Style::good, true).colour, Colour::green);
  EXPECT_EQ(look_of(Style::warn, true).colour, Colour::yellow);
  EXPECT_EQ(look_of(Style::bad, true).colour, Colour::red);
  EXPECT_TRUE(look_of(Style::bad, false).bold) << "a disabled key still stands out";
  EXPECT_TRUE(look_of(Style::selected, false).reverse);
}

TEST(TopFrame, OneFrameForAPipeHasEveryKeyNoSelectionAndNoKeyHelp) {
  Snapshot s = snapshot();
  for (int i = 0; i < 40; ++i) {
    KeyRow extra = s.pools[0].keys[1];
    extra.label = "spare" + std::to_string(i);
    extra.id = extra.label;
    s.pools[0].keys.push_back(extra);
  }
  std::vector<std::string> lines = frame(s, Ui{}, 80, std::numeric_limits<int>::max(), 0ms, false);
  EXPECT_FALSE(line_with(lines, {"spare39"}).empty());
  EXPECT_TRUE(line_with(lines, {"q quit"}).empty());
  EXPECT_FALSE(line_with(lines, {"one frame: stdout is no terminal"}).empty());
  for (const std::string& line : lines) {
    EXPECT_NE(line.rfind("> ", 0), 0u) << "nothing selected: " << line;
  }
}

TEST(TopFrame, ALongTableShowsThePageWithTheSelectedKey) {
  Snapshot s = snapshot();
  for (int i = 0; i < 40; ++i) {
    KeyRow extra = s.pools[0].keys[1];
    extra.label = "spare" + std::to_string(i);
    extra.id = extra.label;
    s.pools[0].keys.push_back(extra);
  }
  Ui ui;
  ui.selected = "spare30";
  std::vector<std::string> lines = frame(s, ui);
  EXPECT_EQ(lines.size(), 24u);
  EXPECT_EQ(line_with(lines, {"spare30"}).rfind("> spare30", 0), 0u) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"key 33 of 43"}).empty()) << joined(lines);
}

TEST(TopFrame, TheOfflineMessageSaysHowLongAndKeepsTheLastAnswer) {
  Snapshot s = snapshot();
  Ui ui;
  FrameInput input;
  input.snapshot = &s;
  input.ui = &ui;
  input.offline = "no keyshim answering on 127.0.0.1:8787 (start it with `keyshim serve`)";
  input.offline_for = 5500ms;
  input.age = 5500ms;
  std::string all;
  for (const Line& line : render_frame(input)) {
    all += plain(line) + "\n";
  }
  EXPECT_NE(all.find("no answer for 5s: no keyshim answering on 127.0.0.1:8787"), std::string::npos) << all;
  EXPECT_NE(all.find("team"), std::string::npos) << all;
}

TEST(TopInput, QQuitsSCyclesTheSortAndStateSortPutsTroubleFirst) {
  Snapshot s = snapshot();
  Ui ui;
  EXPECT_FALSE(handle_input(ui, {Press::character, 's'}, shown_keys(s, ui)));
  EXPECT_EQ(ui.sort, SortOrder::state);
  s.pools[0].keys[0].state = "available";
  s.pools[0].keys[1].state = "cooling";
  std::vector<std::string> ids = shown_keys(s, ui);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], s.pools[0].keys[1].id) << "the cooling key first within its pool";
  for (SortOrder next : {SortOrder::rate, SortOrder::errors, SortOrder::pool}) {
    handle_input(ui, {Press::character, 's'}, ids);
    EXPECT_EQ(ui.sort, next);
  }
  EXPECT_TRUE(handle_input(ui, {Press::character, 'q'}, ids));
}

TEST(TopInput, SlashFiltersByLabelUntilEscClearsIt) {
  Snapshot s = snapshot();
  Ui ui;
  handle_input(ui, {Press::character, '/'}, shown_keys(s, ui));
  for (char c : std::string("PERq")) {
    EXPECT_FALSE(handle_input(ui, {Press::character, c}, shown_keys(s, ui))) << "q is typed, not quit";
  }
  handle_input(ui, {Press::backspace}, shown_keys(s, ui));
  handle_input(ui, {Press::enter}, shown_keys(s, ui));
  EXPECT_EQ(ui.filter, "PER");
  EXPECT_FALSE(ui.editing_filter);
  std::vector<std::string> lines = frame(s, ui);
  EXPECT_FALSE(line_with(lines, {"personal"}).empty()) << joined(lines);
  EXPECT_TRUE(line_with(lines, {"team"}).empty()) << joined(lines);
  EXPECT_FALSE(line_with(lines, {"no key matches the filter"}).empty()) << "the other pool says so";
  handle_input(ui, {Press::escape}, shown_keys(s, ui));
  EXPECT_EQ(ui.filter, "");
}

TEST(TopInput, EnterShowsTheSelectedKeyWholeAndEscGoesBack) {
  Snapshot s = snapshot();
  Ui ui;
  handle_input(ui, {Press::down}, shown_keys(s, ui));
  handle_input(ui, {Press::up}, shown_keys(s, ui));
  handle_input(ui, {Press::enter}, shown_keys(s, ui));
  EXPECT_TRUE(ui.detail);
  std::string all = joined(frame(s, ui, 80, 40));
  EXPECT_NE(all.find("key team in pool openai"), std::string::npos) << all;
  EXPECT_NE(all.find("sk-...Wq9z"), std::string::npos) << all;
  EXPECT_NE(all.find("cooling, resumes in 28s: 429 Retry-After"), std::string::npos) << all;
  EXPECT_NE(all.find("1 of 4"), std::string::npos) << all;
  EXPECT_NE(all.find("14 requests, 12.0k tokens in, 345 out; failed: rate_limit 2"), std::string::npos)
      << all;
  EXPECT_NE(all.find("gpt-4o cooling, resumes in 7s: 429"), std::string::npos) << all;
  EXPECT_NE(all.find("requests [######--------------] 70 of 100 left, resets in 30s"), std::string::npos)
      << all;
  EXPECT_NE(all.find("recent requests"), std::string::npos) << all;
  EXPECT_NE(all.find("Esc back"), std::string::npos) << all;
  handle_input(ui, {Press::escape}, shown_keys(s, ui));
  EXPECT_FALSE(ui.detail);
  EXPECT_EQ(ui.selected, s.pools[0].keys[0].id);
}

TEST(TopRates, RequestsPerMinuteComeFromTheCounterOverTheLastMinute) {
  RateMeter meter;
  MonoTime t0{std::chrono::hours(1)};
  Snapshot first = snapshot();
  meter.observe(first, t0);
  EXPECT_FALSE(first.pools[0].keys[0].per_minute) << "one answer says nothing of a rate";
  Snapshot second = snapshot();
  second.pools[0].keys[0].total.requests = 130 + 10;
  meter.observe(second, t0 + 30s);
  ASSERT_TRUE(second.pools[0].keys[0].per_minute);
  EXPECT_DOUBLE_EQ(*second.pools[0].keys[0].per_minute, 20.0);
  EXPECT_DOUBLE_EQ(*second.pools[0].keys[1].per_minute, 0.0);
  // Two minutes later, the minute before counts, not the first answer.
  Snapshot third = second;
  meter.observe(third, t0 + 90s);
  third.pools[0].keys[0].total.requests = 146;
  meter.observe(third, t0 + 150s);
  EXPECT_DOUBLE_EQ(*third.pools[0].keys[0].per_minute, 6.0);
  // A counter that went down is a restarted instance: start over.
  Snapshot restarted = snapshot();
  restarted.pools[0].keys[0].total.requests = 1;
  meter.observe(restarted, t0 + 151s);
  EXPECT_FALSE(restarted.pools[0].keys[0].per_minute);
}

TEST(TopRecent, AKeysRecentRequestsAreTheCapturesThatUsedItNewestFirst) {
  Snapshot s = snapshot();
  const KeyRow& team = s.pools[0].keys[0];
  std::optional<util::Json> list = util::parse_json(R"({"entries":[
    {"id":1,"time":"2027-01-15T07:59:01.000Z","pool":"openai","model":"gpt-4o","method":"POST",
     "target":"/v1/chat/completions","status":200,"duration_ms":40,
     "chain":[{"key":"team","status":429,"verdict":"cool","ms":3},{"key":"personal","status":200,"verdict":"ok","ms":5}]},
    {"id":2,"time":"2027-01-15T07:59:02.000Z","pool":"openai","model":"o1","method":"POST",
     "target":"/v1/responses","status":200,"duration_ms":9,
     "chain":[{"key":"personal","status":200,"verdict":"ok","ms":9}]},
    {"id":3,"time":"2027-01-15T07:59:03.000Z","pool":"openai","model":"gpt-4o","method":"POST",
     "target":"/v1/chat/completions","status":500,"duration_ms":7,
     "chain":[{"key":"team","status":500,"verdict":"retry","ms":7}]}]})");
  ASSERT_TRUE(list);
  Recent recent = recent_of(*list, team);
  EXPECT_EQ(recent.key_id, team.id);
  ASSERT_EQ(recent.lines.size(), 2u);
  EXPECT_EQ(recent.lines[0].find("   3  "), 0u) << recent.lines[0];
  EXPECT_EQ(recent.lines[1].find("   1  "), 0u) << recent.lines[1];
  EXPECT_EQ(recent.lines[1],
            "   1  07:59:01  200  team:429 cool, personal:200 ok  POST /v1/chat/completions  gpt-4o  40ms");

  Ui ui;
  handle_input(ui, {Press::enter}, shown_keys(s, ui));
  FrameInput input;
  input.snapshot = &s;
  input.ui = &ui;
  input.height = 60;
  input.recent = &recent;
  std::string all;
  for (const Line& line : render_frame(input)) {
    all += plain(line) + "\n";
  }
  EXPECT_NE(all.find("recent requests\n     3  "), std::string::npos) << all;

  Recent none = recent_of(*util::parse_json(R"({"entries":[]})"), team);
  EXPECT_TRUE(none.lines.empty());
  EXPECT_NE(none.note.find("keyshim log"), std::string::npos);
}

} // namespace
} // namespace keyshim::cli::top
