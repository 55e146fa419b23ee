//! Every built-in analysis at once: what `pcapsleuth report` and the plots need.

use crate::events::{
    Analysis, CloseView, ConnectionView, EndView, EstimatedExchangeView, SegmentView,
    TransactionView,
};
use crate::facts::CaptureFacts;
use crate::load::{LoadReport, LoadTest};
use crate::mysql::{MysqlAggregate, MysqlStatistics};
use crate::rate::{RateAggregate, Rates};
use crate::rt::{ResponseTimes, RtAggregate};

/// [`MysqlStatistics`] (unfiltered), [`ResponseTimes`], [`Rates`] and [`LoadTest`] in one run.
pub struct Everything {
    analyses: Each,
}

impl Everything {
    /// Every built-in analysis, with rate series and per-interval response times at `interval_ns` (0:
    /// one second).
    pub fn new(interval_ns: i64) -> Self {
        Everything {
            analyses: (
                MysqlStatistics::default(),
                ResponseTimes::new(interval_ns),
                Rates::new(interval_ns),
                LoadTest::new(interval_ns),
            ),
        }
    }
}

impl Everything {
    /// The same, with MySQL statistics of the transactions `filter` lets through only.
    pub fn mysql_filter(mut self, filter: crate::MysqlFilter) -> Self {
        self.analyses.0 = MysqlStatistics::new(filter);
        self
    }
}

impl Default for Everything {
    fn default() -> Self {
        Everything::new(0)
    }
}

/// What [`Everything`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistics {
    /// MySQL requests, errors, statements, incidents.
    pub mysql: MysqlAggregate,
    /// Response-time distributions.
    pub rt: RtAggregate,
    /// Packet and bit rates.
    pub rates: RateAggregate,
    /// The load-test view: requests in flight, connections, transactions, think time.
    pub load: LoadReport,
}

type Each = (MysqlStatistics, ResponseTimes, Rates, LoadTest);

impl Analysis for Everything {
    type PerConnection = <Each as Analysis>::PerConnection;
    type Output = Statistics;

    #[inline]
    fn connection_opened(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>) {
        self.analyses.connection_opened(s, c);
    }
    #[inline]
    fn segment(
        &mut self,
        s: &mut Self::PerConnection,
        c: &ConnectionView<'_>,
        x: &SegmentView<'_>,
    ) {
        self.analyses.segment(s, c, x);
    }
    #[inline]
    fn transaction(
        &mut self,
        s: &mut Self::PerConnection,
        c: &ConnectionView<'_>,
        x: &TransactionView<'_>,
    ) {
        self.analyses.transaction(s, c, x);
    }
    fn estimated_exchange(
        &mut self,
        s: &mut Self::PerConnection,
        c: &ConnectionView<'_>,
        x: &EstimatedExchangeView<'_>,
    ) {
        self.analyses.estimated_exchange(s, c, x);
    }
    fn close(&mut self, s: &mut Self::PerConnection, c: &ConnectionView<'_>, x: &CloseView<'_>) {
        self.analyses.close(s, c, x);
    }
    fn connection_ended(
        &mut self,
        s: Self::PerConnection,
        c: &ConnectionView<'_>,
        x: &EndView<'_>,
    ) {
        self.analyses.connection_ended(s, c, x);
    }
    fn merge(&mut self, o: Self) {
        self.analyses.merge(o.analyses);
    }
    fn finish(self, capture: &CaptureFacts) -> Statistics {
        let (mysql, rt, rates, load) = self.analyses.finish(capture);
        Statistics {
            mysql,
            rt,
            rates,
            load,
        }
    }
}
