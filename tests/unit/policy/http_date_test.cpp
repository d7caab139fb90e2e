// HTTP-date (RFC 9110 §5.6.7) and RFC 3339 parsing.
#include "policy/retry_hints.hpp"

#include <gtest/gtest.h>

namespace keyshim::policy {
namespace {

using namespace std::chrono;

util::TimePoint at(int y, unsigned mon, unsigned d, int h, int min, int s) {
  return util::TimePoint(sys_days{year{y} / month{mon} / day{d}}) + hours(h) + minutes(min) + seconds(s);
}

// "Now" for the two-digit years of the RFC 850 form.
const util::TimePoint k_now = at(2026, 12, 2, 12, 0, 0);

TEST(HttpDate, ParsesImfFixdate) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", k_now), at(1994, 11, 6, 8, 49, 37));
  EXPECT_EQ(parse_http_date("Tue, 01 Dec 2026 00:00:00 GMT", k_now), at(2026, 12, 1, 0, 0, 0));
}

TEST(HttpDate, ParsesObsoleteRfc850Form) {
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", k_now), at(1994, 11, 6, 8, 49, 37));
  EXPECT_EQ(parse_http_date("Sunday, 29-Nov-26 12:00:00 GMT", k_now), at(2026, 11, 29, 12, 0, 0));
}

TEST(HttpDate, ParsesObsoleteAsctimeForm) {
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994", k_now), at(1994, 11, 6, 8, 49, 37));
  EXPECT_EQ(parse_http_date("Sun Nov 29 12:00:00 2026", k_now), at(2026, 11, 29, 12, 0, 0));
}

TEST(HttpDate, IsCaseInsensitiveAndToleratesSurroundingSpace) {
  EXPECT_EQ(parse_http_date("  sun, 06 nov 1994 08:49:37 gmt ", k_now), at(1994, 11, 6, 8, 49, 37));
}

TEST(HttpDate, RejectsMalformedDates) {
  for (const char* text :
       {"", "120", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 31 Feb 2026 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT trailing", "Funday, 06-Nov-94 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun Nov 6 08:49 1994", "2026-11-29T12:00:00Z"}) {
    EXPECT_FALSE(parse_http_date(text, k_now)) << text;
  }
}

// strptime alone would take all of these: it skips spaces, reads one digit
// for two, takes full names for abbreviated ones and seconds up to 61.
TEST(HttpDate, RejectsWhatStrptimeAloneWouldAccept) {
  for (const char* text :
       {"Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06 November 1994 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMTx", "Sun, 06-Nov-94 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37 1994 GMT",
        "Sunday Nov  6 08:49:37 1994", "Sun Nov 006 08:49:37 1994", "Sun, 06 Nov 1994\t08:49:37 GMT"}) {
    EXPECT_FALSE(parse_http_date(text, k_now)) << text;
  }
}

TEST(HttpDate, ReadsLeapSecondAsTheNextMinute) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 23:59:60 GMT", k_now), at(1994, 11, 7, 0, 0, 0));
}

TEST(HttpDate, TakesAsctimeDayWithOneSpace) {
  EXPECT_EQ(parse_http_date("Sun Nov 6 08:49:37 1994", k_now), at(1994, 11, 6, 8, 49, 37));
}

// RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is in the past.
TEST(HttpDate, Rfc850YearIsAtMostFiftyYearsAfterNow) {
  EXPECT_EQ(parse_http_date("Monday, 01-Jan-76 00:00:00 GMT", k_now), at(2076, 1, 1, 0, 0, 0));
  EXPECT_EQ(parse_http_date("Monday, 01-Jan-77 00:00:00 GMT", k_now), at(1977, 1, 1, 0, 0, 0));
  EXPECT_EQ(parse_http_date("Monday, 01-Jan-00 00:00:00 GMT", k_now), at(2000, 1, 1, 0, 0, 0));
  util::TimePoint later = at(2080, 6, 1, 0, 0, 0);
  EXPECT_EQ(parse_http_date("Monday, 01-Jan-10 00:00:00 GMT", later), at(2110, 1, 1, 0, 0, 0));
  EXPECT_EQ(parse_http_date("Monday, 01-Jan-31 00:00:00 GMT", later), at(2031, 1, 1, 0, 0, 0));
}

// util::TimePoint counts nanoseconds and ends in April 2262.
TEST(HttpDate, DatesPastTheClockRangeClampToItsEndInsteadOfWrapping) {
  for (const char* text : {"Fri, 01 Jan 2500 00:00:00 GMT", "Wed, 01 Jan 3000 00:00:00 GMT",
                           "Fri, 31 Dec 9999 23:59:59 GMT", "Fri Dec 31 23:59:59 9999"}) {
    EXPECT_EQ(parse_http_date(text, k_now), util::TimePoint::max()) << text;
  }
}

TEST(HttpDate, DatesBeforeTheClockRangeClampToItsStart) {
  EXPECT_EQ(parse_http_date("Mon, 01 Jan 0001 00:00:00 GMT", k_now), util::TimePoint::min());
}

TEST(Rfc3339, TimestampsPastTheClockRangeClampToItsEnd) {
  EXPECT_EQ(parse_rfc3339("2500-01-01T00:00:00Z"), util::TimePoint::max());
  EXPECT_EQ(parse_rfc3339("9999-12-31T23:59:59.999-23:59"), util::TimePoint::max());
  EXPECT_EQ(parse_rfc3339("0000-01-01T00:00:00+23:59"), util::TimePoint::min());
}

TEST(Rfc3339, ParsesUtcTimestamps) {
  EXPECT_EQ(parse_rfc3339("2026-11-29T21:40:01Z"), at(2026, 11, 29, 21, 40, 1));
  EXPECT_EQ(parse_rfc3339("2026-11-29t21:40:01z"), at(2026, 11, 29, 21, 40, 1));
  EXPECT_EQ(parse_rfc3339("2026-11-29 21:40:01Z"), at(2026, 11, 29, 21, 40, 1));
}

TEST(Rfc3339, ParsesFractionsToMilliseconds) {
  EXPECT_EQ(parse_rfc3339("2026-11-29T21:40:01.5Z"), at(2026, 11, 29, 21, 40, 1) + 500ms);
  EXPECT_EQ(parse_rfc3339("2026-11-29T21:40:01.123456789Z"), at(2026, 11, 29, 21, 40, 1) + 123ms);
}

TEST(Rfc3339, AppliesOffsets) {
  EXPECT_EQ(parse_rfc3339("2026-11-29T14:00:00+02:00"), at(2026, 11, 29, 12, 0, 0));
  EXPECT_EQ(parse_rfc3339("2026-11-29T04:00:00-08:00"), at(2026, 11, 29, 12, 0, 0));
  EXPECT_EQ(parse_rfc3339("2026-11-30T01:30:00+13:30"), at(2026, 11, 29, 12, 0, 0));
}

TEST(Rfc3339, RejectsMalformedTimestamps) {
  for (const char* text :
       {"", "2026-11-29", "2026-11-29T12:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-29T12:00:00+0200", "2026-11-29T12:00:00.Z", "2026-11-29T25:00:00Z",
        "2026-11-29T12:00:00Zjunk", "Sun, 06 Nov 1994 08:49:37 GMT"}) {
    EXPECT_FALSE(parse_rfc3339(text)) << text;
  }
}

} // namespace
} // namespace keyshim::policy
