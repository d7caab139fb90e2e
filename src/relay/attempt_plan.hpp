#pragma once
// What one request remembers across its attempts, and the decisions made
// from it: which keys the next attempt may use, whether the same key is
// repeated once, how long it may wait for a key, and what the client gets
// when attempts or keys run out. Pure: no I/O, time comes in as arguments,
// so tests drive it without sockets or sleeps.
#include "policy/failure_policy.hpp"
#include "pool/key_pool.hpp"
#include "relay/answers.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace keyshim::relay {

using std::chrono::milliseconds;
using MonoTime = std::chrono::steady_clock::time_point;

class AttemptPlan {
public:
  AttemptPlan(std::size_t keys, int max_attempts);

  // The keys the next acquire must skip: those excluded for this request,
  // or every key but the one to repeat.
  // A reference to the plan's own vectors, valid until the plan changes.
  const std::vector<bool>& mask();
  // A retry with a renewed token is due even past max_attempts.
  bool out_of_attempts() const { return m_attempts >= m_max_attempts && !m_renewal; }
  int attempts() const { return m_attempts; }
  // Attempts made, the retries with a renewed token included (for the log).
  int attempts_made() const { return m_attempts + m_renewals; }
  // The key to repeat was not eligible (its failure cooled it): exclude it.
  // False when no key was being repeated.
  bool drop_repeat();
  // An attempt begins: counted, unless it is the retry with a renewed token.
  void begin();
  // The verdict on the attempt with `index` said to try again: the same key
  // once (retry_same_key, the first time for that key), else another key.
  // `cooled`: the verdict cooled the key (for the request's model or all):
  // a wait is for that cooldown to end (readmit_cooled).
  void after_failure(std::size_t index, policy::Action action, bool cooled = false);

  // ---- a key_cmd key's token refused with 401 (docs/behaviour.md §5)
  // Whether key `index` may still get a new token for this request: once.
  bool may_renew(std::size_t index) const { return !is_set(m_renewed, index); }
  // Key `index` runs its command for a new token: the next attempt is on
  // that key, waiting for the token until `until`, and it does not count
  // against max_attempts. No new token by then: the key is excluded.
  void renew(std::size_t index, MonoTime until);
  // The key whose new token the request waits for, if any.
  std::optional<std::size_t> renewing() const {
    return m_renewal ? std::optional(m_renewal->key) : std::nullopt;
  }
  MonoTime renewal_until() const { return m_renewal ? m_renewal->until : MonoTime{}; }

  // A reload gave the request's pool new keys (`to`, built from `from`): what
  // it remembers of a key follows that key by fingerprint, and a key only
  // `to` has is fresh for it. Attempts made and the wait so far still count.
  void rekey(const pool::KeyPool& from, const pool::KeyPool& to);

  // What the attempt with a key got, for the 502 ("label: what happened").
  void note_tried(std::string entry) { m_tried.push_back(std::move(entry)); }
  // An upstream error answer: the most truthful answer once keys run out.
  void note_error(Answer answer) { m_last_error = std::move(answer); }
  // The answer when attempts or keys run out: the last upstream error, or a
  // 502 naming what each key got.
  Answer final_answer() const;
  // The last upstream error, when the verdict says to relay it.
  const Answer& last_error() const { return *m_last_error; }

  // ---- waiting for a key (max_wait)
  struct Wait {
    MonoTime due;   // when to try again: a cooldown's end, or the end of max_wait
    MonoTime until; // the end of max_wait, measured from the first wait
  };
  // Whether the request waits after `selection` found no key, and until when.
  // It does while max_wait has time left and a key may become eligible within
  // it: one busy at its max_concurrent, or a cooldown that ends before the
  // wait would. `now` and `wall_now` are the same instant on the two clocks.
  std::optional<Wait> wait_for(const pool::Selection& selection, milliseconds max_wait, MonoTime now,
                               util::TimePoint wall_now);
  // How long the request has waited so far (zero if it never did).
  milliseconds waited(MonoTime now) const;
  bool has_waited() const { return m_wait_since.has_value(); }
  // Keys that failed earlier in this request and are cooling (`cooling(i)`)
  // become eligible again: they are what a wait is for (one key, a 429 with
  // Retry-After: 2). max_attempts still bounds the attempts.
  // Keys this request's own failures cooled become eligible again, whether
  // their cooldown has ended (a short Retry-After, a slow machine) or not
  // (acquire then reports when it ends). True when one was readmitted.
  bool readmit_cooled() {
    bool any = false;
    for (std::size_t i = 0; i < m_excluded.size(); ++i) {
      if (m_excluded[i] && is_set(m_cooled, i)) {
        m_excluded[i] = false;
        m_cooled[i] = false;
        any = true;
      }
    }
    return any;
  }

  template <class Cooling> void readmit(Cooling cooling) {
    for (std::size_t i = 0; i < m_excluded.size(); ++i) {
      if (m_excluded[i] && cooling(i)) {
        m_excluded[i] = false;
      }
    }
  }

private:
  // Flags allocated when first needed (a failure, a renewal): unset until then.
  static bool is_set(const std::vector<bool>& flags, std::size_t i) { return i < flags.size() && flags[i]; }

  std::vector<bool> m_excluded;
  std::vector<bool> m_retried; // keys already repeated once (empty until a failure)
  std::vector<bool> m_cooled;  // excluded keys whose failure cooled them (empty until a failure)
  std::vector<bool> m_only;    // mask() while one key is repeated: every key but that one
  std::optional<std::size_t> m_repeat;
  struct Renewal {
    std::size_t key = 0;
    MonoTime until;
  };
  std::optional<Renewal> m_renewal;
  std::vector<bool> m_renewed; // keys that got a new token for this request (empty until one did)
  int m_renewals = 0;          // attempts with a renewed token (not counted)
  int m_attempts = 0;
  int m_max_attempts;
  std::vector<std::string> m_tried;
  std::optional<Answer> m_last_error;
  std::optional<MonoTime> m_wait_since; // max_wait runs from the first wait
};

} // namespace keyshim::relay
