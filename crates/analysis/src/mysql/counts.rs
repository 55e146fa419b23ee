//! A session's requests counted by what became of them.

use pcapsleuth_mysql::Transaction;
use serde::Serialize;

use super::fate::Fate;
use super::response_time::response_end_known;

/// Requests that expect a response, by what became of them ([`Fate`]): of a whole report or of one
/// statement group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounts {
    /// Answered: the response began in the capture (and did not stop at its end). These, and only
    /// these, have a time to first byte; those whose response's end is also in the capture have a
    /// response time.
    pub answered: u64,
    /// Of the answered, those whose response's end is not in the capture (the rest fell into bytes it
    /// does not hold): they have a time to first byte and no response time.
    pub answered_end_unknown: u64,
    /// Cut off by a close (FIN or RST) before their response was complete.
    pub cut_off: u64,
    /// Still waiting when the capture ended.
    pub unanswered: u64,
    /// Their response could not be read to its end (bytes the capture does not hold: the snap length cut
    /// the packets, or they were lost).
    pub unreadable: u64,
}

impl RequestCounts {
    pub(crate) fn count(&mut self, fate: Fate, t: &Transaction) {
        match fate {
            Fate::Answered => {
                self.answered += 1;
                self.answered_end_unknown += u64::from(!response_end_known(t));
            }
            Fate::CutOff => self.cut_off += 1,
            Fate::Unanswered => self.unanswered += 1,
            Fate::Unreadable => self.unreadable += 1,
            Fate::NoResponse => {}
        }
    }

    pub(crate) fn merge(&mut self, o: &RequestCounts) {
        self.answered += o.answered;
        self.answered_end_unknown += o.answered_end_unknown;
        self.cut_off += o.cut_off;
        self.unanswered += o.unanswered;
        self.unreadable += o.unreadable;
    }

    /// Every request that expects a response.
    pub fn total(&self) -> u64 {
        self.answered + self.cut_off + self.unanswered + self.unreadable
    }

    /// "1,506 answered, 2 cut off by a close, 1 still unanswered when the capture ended": the fates with
    /// requests, in this order.
    pub fn describe(&self) -> String {
        let parts = [
            (self.answered, "answered"),
            (self.cut_off, "cut off by a close"),
            (self.unanswered, "still unanswered when the capture ended"),
            (
                self.unreadable,
                "whose response could not be read to its end",
            ),
        ];
        let mut said: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{} {what}", crate::units::count(*n)))
            .collect();
        if let (Some(first), n @ 1..) = (said.first_mut(), self.answered_end_unknown) {
            if self.answered > 0 {
                first.push_str(&format!(
                    ", of which {} without its response's end in the capture",
                    crate::units::count(n)
                ));
            }
        }
        if said.is_empty() {
            "none".into()
        } else {
            said.join(", ")
        }
    }
}
