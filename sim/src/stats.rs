//! Statistics: latency histograms and per-window aggregates.
//!
//! [`LatencyHist`] keeps the counts of an HDR histogram's buckets (3
//! significant digits, exact merge), only those that hold a sample, and
//! the exact count, sum, min and max beside them, so means and maxima are
//! exact and only percentiles carry HDR's 0.1% resolution.
//! Zero samples (uncontended acquisitions, the common case) are only
//! counted, not recorded in the HDR histogram: exact, and cheaper.
//! Its [`LatencyHist::log2_buckets`] view matches bpftrace's `hist()`: HDR
//! bucket edges fall on powers of two, so the log2 view is exact.
//!
//! [`Windows`] keeps count, sum and max per fixed-length window of simulated
//! time (10 s by default), the way kernel people report tails per interval,
//! and, when a caller asks ([`WindowLog2`]), each window's log2 histogram,
//! the way the cases' bpftrace scripts print one per interval.

use crate::time::{Dur, SimTime};

/// Significant decimal digits of every latency histogram.
pub const SIGFIGS: u8 = 3;

/// A histogram of durations, kept as whole nanoseconds.
///
/// The layout is HDR's at 3 significant digits ([`hdr_index`]), stored
/// by block ([`Buckets`]): a run's results hold one histogram per
/// reported series, and HDR's dense array (8 KB per doubling of the
/// range) made them most of a built-in run's memory.
/// Its figures are those of the `hdrhistogram` crate's histogram of the
/// same samples (a test checks every one).
#[derive(Clone, Debug)]
pub struct LatencyHist {
    /// The count of every HDR bucket with a non-zero sample.
    buckets: Buckets,
    /// Samples equal to zero.
    zeros: u64,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// Exact counts of samples longer than each threshold, counted as they
    /// were recorded ([`HdrCounts::count_above`]): HDR's buckets straddle
    /// round thresholds such as 1 ms, so the histogram alone cannot give
    /// them exactly. Not part of equality: the histogram is.
    above: Vec<(u64, u64)>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHist {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count
            && self.sum == other.sum
            && self.min == other.min
            && self.max == other.max
            && self.zeros == other.zeros
            && self.buckets == other.buckets
    }
}

/// The non-zero counts of a histogram's HDR buckets, by block: a block
/// is the 1024 buckets of one doubling of the range (the first two hold
/// the 1 ns buckets below 2048 ns). Each block keeps 16-bit counts, dense
/// over the span from its lowest to its highest non-zero bucket or as
/// (bucket, count) pairs, whichever takes fewer bytes; a count that
/// reaches 2^16 - 1 is kept whole in `big` (its 16-bit count is then
/// `u16::MAX`). A series that fills whole doublings (waits spread over
/// nanoseconds to milliseconds) takes 2 bytes a bucket, one with a few
/// scattered samples 4: an HDR bucket never takes more than 4 bytes
/// beside its block's 32
/// (docs/findings/2026-12-04-histogram-blocks-and-the-memory-estimate.md).
#[derive(Clone, Debug, Default)]
struct Buckets {
    /// The blocks with a non-zero count, by increasing number.
    blocks: Vec<Block>,
    /// (bucket index, count) of the buckets whose count reached
    /// `u16::MAX`, by increasing index.
    big: Vec<(u32, u64)>,
}

/// Buckets per block: HDR's sub-bucket half count at 3 significant digits.
const BLOCK_BITS: u32 = SUB_HALF_BITS;
const BLOCK_MASK: u32 = (1 << BLOCK_BITS) - 1;

/// One block's counts ([`Buckets`]).
#[derive(Clone, Debug)]
struct Block {
    /// The bucket index over [`BLOCK_BITS`].
    number: u32,
    counts: BlockCounts,
}

#[derive(Clone, Debug)]
enum BlockCounts {
    /// The counts of buckets `first`, `first + 1`, ... within the block,
    /// zeros included; the first and the last are non-zero.
    Dense { first: u16, counts: Box<[u16]> },
    /// (bucket within the block, count) of each non-zero bucket, by
    /// increasing bucket.
    Sparse(Box<[(u16, u16)]>),
}

impl Buckets {
    /// From (index, count) pairs in increasing index order, each count
    /// non-zero.
    fn from_sorted(pairs: impl Iterator<Item = (u32, u64)>) -> Buckets {
        let mut b = Buckets::default();
        let mut block: Vec<(u16, u16)> = Vec::new();
        let mut number = 0;
        for (i, n) in pairs {
            if i >> BLOCK_BITS != number && !block.is_empty() {
                b.blocks.push(Block::of(number, &block));
                block.clear();
            }
            number = i >> BLOCK_BITS;
            let small = match u16::try_from(n) {
                Ok(n) if n < u16::MAX => n,
                _ => {
                    b.big.push((i, n));
                    u16::MAX
                }
            };
            block.push(((i & BLOCK_MASK) as u16, small));
        }
        if !block.is_empty() {
            b.blocks.push(Block::of(number, &block));
        }
        b
    }

    /// Counts `n` more in bucket `i`: rebuilds `i`'s block, so for
    /// histograms built outside a run (tests, measured input).
    fn add(&mut self, i: u32, n: u64) {
        let number = i >> BLOCK_BITS;
        let lo = number << BLOCK_BITS;
        let hi = lo + BLOCK_MASK;
        let mut pairs: Vec<(u32, u64)> =
            match self.blocks.binary_search_by_key(&number, |b| b.number) {
                Ok(k) => self.block_counts(k).collect(),
                Err(_) => Vec::new(),
            };
        match pairs.binary_search_by_key(&i, |&(j, _)| j) {
            Ok(k) => pairs[k].1 += n,
            Err(k) => pairs.insert(k, (i, n)),
        }
        self.big.retain(|&(j, _)| j < lo || j > hi);
        let rebuilt = Buckets::from_sorted(pairs.into_iter());
        let at = self.big.partition_point(|&(j, _)| j < lo);
        self.big.splice(at..at, rebuilt.big);
        let block = rebuilt.blocks.into_iter().next().expect("a non-zero count");
        match self.blocks.binary_search_by_key(&number, |b| b.number) {
            Ok(k) => self.blocks[k] = block,
            Err(k) => self.blocks.insert(k, block),
        }
    }

    /// (index, count) of every non-zero bucket of block `k`, in order.
    fn block_counts(&self, k: usize) -> BucketsIter<'_> {
        BucketsIter {
            b: self,
            block: k,
            end: k + 1,
            pos: 0,
        }
    }

    /// (index, count) of every bucket, by increasing index.
    fn iter(&self) -> BucketsIter<'_> {
        BucketsIter {
            b: self,
            block: 0,
            end: self.blocks.len(),
            pos: 0,
        }
    }

    /// The buckets of both, counts added.
    fn merged(&self, other: &Buckets) -> Buckets {
        let (mut a, mut b) = (self.iter().peekable(), other.iter().peekable());
        Buckets::from_sorted(std::iter::from_fn(move || {
            Some(match (a.peek().copied(), b.peek().copied()) {
                (Some((i, n)), Some((j, m))) if i == j => {
                    a.next();
                    b.next();
                    (i, n + m)
                }
                (Some((i, n)), Some((j, _))) if i < j => {
                    a.next();
                    (i, n)
                }
                (_, Some(y)) => {
                    b.next();
                    y
                }
                (Some(x), None) => {
                    a.next();
                    x
                }
                (None, None) => return None,
            })
        }))
    }
}

impl Block {
    /// Block `number` from its (bucket within the block, count) pairs,
    /// in increasing order, at least one: dense when that takes no more
    /// bytes than the pairs.
    fn of(number: u32, pairs: &[(u16, u16)]) -> Block {
        let (first, last) = (pairs[0].0, pairs[pairs.len() - 1].0);
        let span = usize::from(last - first) + 1;
        let counts = if span * 2 <= pairs.len() * 4 {
            let mut counts = vec![0u16; span];
            for &(k, n) in pairs {
                counts[usize::from(k - first)] = n;
            }
            BlockCounts::Dense {
                first,
                counts: counts.into_boxed_slice(),
            }
        } else {
            BlockCounts::Sparse(pairs.into())
        };
        Block { number, counts }
    }
}

/// The (index, count) pairs of [`Buckets`]' blocks `block..end`, in order.
#[derive(Clone)]
struct BucketsIter<'a> {
    b: &'a Buckets,
    block: usize,
    end: usize,
    /// The next position in the block's dense counts or pairs.
    pos: usize,
}

impl Iterator for BucketsIter<'_> {
    type Item = (u32, u64);

    #[inline]
    fn next(&mut self) -> Option<(u32, u64)> {
        while self.block < self.end {
            let blk = &self.b.blocks[self.block];
            let base = blk.number << BLOCK_BITS;
            let found = match &blk.counts {
                BlockCounts::Dense { first, counts } => {
                    let skip = counts[self.pos..].iter().position(|&n| n > 0);
                    skip.map(|z| {
                        let k = self.pos + z;
                        self.pos = k + 1;
                        (base + u32::from(*first) + k as u32, counts[k])
                    })
                }
                BlockCounts::Sparse(pairs) => pairs.get(self.pos).map(|&(k, n)| {
                    self.pos += 1;
                    (base + u32::from(k), n)
                }),
            };
            match found {
                Some((i, u16::MAX)) => {
                    let big = &self.b.big;
                    return Some((i, big[big.partition_point(|&(j, _)| j < i)].1));
                }
                Some((i, n)) => return Some((i, u64::from(n))),
                None => {
                    self.block += 1;
                    self.pos = 0;
                }
            }
        }
        None
    }
}

impl PartialEq for Buckets {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// One log2 bucket: durations in `[lo, hi)`, bpftrace style (`[0]` is
/// `lo=0, hi=1` ns).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Log2Bucket {
    pub lo: Dur,
    pub hi: Dur,
    pub count: u64,
}

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist {
            buckets: Buckets::default(),
            zeros: 0,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            above: Vec::new(),
        }
    }

    /// The exact number of samples longer than `t`, when `t` was one of
    /// the thresholds counted during the run; `None` otherwise.
    pub fn count_above(&self, t: Dur) -> Option<u64> {
        (self.above.iter())
            .find(|(th, _)| *th == t.ns())
            .map(|(_, n)| *n)
    }

    /// Records one sample. Finding its bucket is a binary search and a
    /// new bucket an insertion: for building a histogram outside a run
    /// (tests, measured input); a run records into [`HdrCounts`].
    pub fn record(&mut self, d: Dur) {
        let ns = d.ns();
        if ns == 0 {
            self.zeros += 1;
            self.count += 1;
            self.min = 0;
            return;
        }
        // HDR's range ends at 2^63 - 1; longer samples count there.
        let v = ns.min(i64::MAX as u64);
        self.buckets.add(hdr_index(v) as u32, 1);
        for (t, n) in &mut self.above {
            *n += u64::from(v > *t);
        }
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every sample of `other`: exact, order independent.
    pub fn merge(&mut self, other: &LatencyHist) {
        for &(t, n) in &other.above {
            match self.above.iter_mut().find(|(th, _)| *th == t) {
                Some((_, m)) => *m += n,
                None => self.above.push((t, n)),
            }
        }
        if other.count == 0 {
            return;
        }
        self.buckets = self.buckets.merged(&other.buckets);
        self.zeros += other.zeros;
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    /// Samples equal to zero (uncontended acquisitions).
    pub fn zeros(&self) -> u64 {
        self.zeros
    }
    /// The smallest non-zero sample: exact when there are no zeros or one
    /// non-zero sample, else to HDR resolution; 0 when every sample is zero.
    pub fn min_nonzero(&self) -> Dur {
        Dur(match self.count - self.zeros {
            0 => 0,
            1 => self.max,
            _ if self.zeros == 0 => self.min,
            _ => hdr_lowest(self.buckets.iter().next().map_or(0, |(i, _)| i as usize)),
        })
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Exact mean, rounded to the nearest nanosecond; 0 when empty.
    pub fn mean(&self) -> Dur {
        rounded_mean(self.sum, self.count)
    }
    /// The mean in nanoseconds, unrounded; 0 when empty.
    pub fn mean_f64(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
    /// Exact sum of every sample, in nanoseconds (a `u128`: it passes
    /// `u64::MAX` ns, 584 years, where a `Dur` would saturate).
    pub fn sum(&self) -> u128 {
        self.sum
    }
    /// Exact minimum; 0 when empty.
    pub fn min(&self) -> Dur {
        if self.count == 0 {
            Dur::ZERO
        } else {
            Dur(self.min)
        }
    }
    /// Exact maximum; 0 when empty.
    pub fn max(&self) -> Dur {
        Dur(self.max)
    }

    /// Nearest-rank percentile (`q` in 0..=1): the value of rank
    /// `ceil(q*n)`, to HDR resolution, never above the exact maximum.
    pub fn quantile(&self, q: f64) -> Dur {
        if self.count == 0 {
            return Dur::ZERO;
        }
        if q >= 1.0 {
            return self.max();
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank <= self.zeros {
            return Dur::ZERO;
        }
        let mut seen = self.zeros;
        for (i, n) in self.buckets.iter() {
            seen += n;
            if seen >= rank {
                let hi = hdr_highest(i as usize);
                return Dur(hi.min(self.max).max(self.min));
            }
        }
        self.max()
    }

    /// Fraction of samples at or below `d` (to HDR resolution).
    pub fn cdf_at(&self, d: Dur) -> f64 {
        let ns = d.ns();
        if self.count == 0 {
            return 0.0;
        }
        let below = if ns == 0 {
            self.zeros
        } else {
            let last = hdr_index(ns.min(i64::MAX as u64)) as u32;
            let n = self.buckets.iter().take_while(|&(i, _)| i <= last);
            self.zeros + n.map(|(_, n)| n).sum::<u64>()
        };
        below as f64 / self.count as f64
    }

    /// The bpftrace-style log2 view: `[0]`, `[1]`, `[2,4)`, `[4,8)`, ...
    /// Only non-empty buckets, in increasing order.
    pub fn log2_buckets(&self) -> Vec<Log2Bucket> {
        let mut out: Vec<Log2Bucket> = Vec::new();
        if self.zeros > 0 {
            out.push(Log2Bucket {
                lo: Dur::ZERO,
                hi: Dur(1),
                count: self.zeros,
            });
        }
        for (i, n) in self.buckets.iter() {
            let (lo, hi) = log2_bounds(Dur(hdr_lowest(i as usize)));
            match out.last_mut() {
                Some(b) if b.lo == lo => b.count += n,
                _ => out.push(Log2Bucket { lo, hi, count: n }),
            }
        }
        out
    }

    /// Samples in increasing order of value, as (value, count) at HDR
    /// resolution, zeros first: for CDF plots.
    pub fn recorded(&self) -> Vec<(Dur, u64)> {
        let zeros = (self.zeros > 0).then_some((Dur::ZERO, self.zeros));
        zeros
            .into_iter()
            .chain((self.buckets.iter()).map(|(i, n)| (Dur(hdr_highest(i as usize)), n)))
            .collect()
    }
}

/// HDR's counts index of a non-zero value at 3 significant digits, unit
/// 1 ns: 2048 buckets 1 ns wide, then 1024 per doubling.
#[inline]
pub fn hdr_index(v: u64) -> usize {
    let mask = (1u64 << (SUB_HALF_BITS + 1)) - 1;
    let bucket = (64 - SUB_HALF_BITS - 1) - (v | mask).leading_zeros();
    let sub = v >> bucket;
    (((bucket + 1) as usize) << SUB_HALF_BITS) + sub as usize - (1 << SUB_HALF_BITS)
}

/// The lowest value of counts index `i` (the inverse of [`hdr_index`]).
pub fn hdr_lowest(i: usize) -> u64 {
    let half = 1usize << SUB_HALF_BITS;
    let bucket = (i >> SUB_HALF_BITS) as i64 - 1;
    let mut sub = (i & (half - 1)) + half;
    let bucket = if bucket < 0 {
        sub -= half;
        0
    } else {
        bucket as u32
    };
    (sub as u64) << bucket
}

/// The highest value of counts index `i`: the buckets tile the values,
/// so it is the next one's lowest less one.
pub fn hdr_highest(i: usize) -> u64 {
    hdr_lowest(i + 1) - 1
}

/// A recorder with [`LatencyHist`]'s exact bucket layout that only
/// counts: the world records every wait and hold into one of these and
/// builds the [`LatencyHist`] once, at the end of a run.
///
/// Recording is the hottest statistic path of a simulation; HDR's own
/// `record` keeps min/max/total bookkeeping per sample and checks for
/// resizing, which this does once per run instead. The index function is
/// HDR's for 3 significant digits (2048 sub-buckets, unit 1 ns), so
/// [`HdrCounts::into_hist`] gives a histogram equal to recording each
/// sample into a [`LatencyHist`] directly (a test checks it).
///
/// The counts are 16-bit, with the multiples of 2^16 kept apart in
/// `carries`: a run records into many histograms of up to ~100k buckets
/// each, at random buckets, so a count's cache miss was the cost of
/// recording; a quarter of the bytes keeps four times as many in cache.
#[derive(Clone, Debug, Default)]
pub struct HdrCounts {
    counts: Vec<u16>,
    /// `carries[i]` is how many times `counts[i]` wrapped past 2^16 - 1
    /// (sized on the first wrap).
    carries: Vec<u64>,
    zeros: u64,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// (threshold, samples longer than it), in ns ([`Self::count_above`]).
    above: Vec<(u64, u64)>,
}

/// log2 of HDR's sub-bucket half count at 3 significant digits.
const SUB_HALF_BITS: u32 = 10;

impl HdrCounts {
    pub fn new() -> Self {
        HdrCounts {
            min: u64::MAX,
            ..Default::default()
        }
    }

    /// Counts, exactly, the samples longer than each of `thresholds` from
    /// now on (set before the first sample; one comparison each per
    /// non-zero sample).
    pub fn count_above(&mut self, thresholds: &[Dur]) {
        self.above = thresholds.iter().map(|t| (t.ns(), 0)).collect();
    }

    /// The largest sample so far (zero with none): what a run's level in
    /// rare-event splitting reads part way.
    pub fn max_so_far(&self) -> Dur {
        Dur(self.max)
    }

    #[inline]
    pub fn record(&mut self, d: Dur) {
        let ns = d.ns();
        self.count += 1;
        if ns == 0 {
            self.zeros += 1;
            self.min = 0;
            return;
        }
        let v = ns.min(i64::MAX as u64);
        let i = hdr_index(v);
        // One test for the usual case: a bucket that exists and does not
        // wrap.
        match self.counts.get_mut(i) {
            Some(c) if *c != u16::MAX => *c += 1,
            _ => self.count_rare(i),
        }
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        for (t, n) in &mut self.above {
            *n += u64::from(v > *t);
        }
    }

    /// Counts one in bucket `i` when the bucket does not exist yet (the
    /// counts grow) or its 16-bit count wraps (a carry).
    #[cold]
    fn count_rare(&mut self, i: usize) {
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        let c = &mut self.counts[i];
        if *c == u16::MAX {
            *c = 0;
            if self.carries.len() < self.counts.len() {
                self.carries.resize(self.counts.len(), 0);
            }
            self.carries[i] += 1;
        } else {
            *c += 1;
        }
    }

    /// Everything recorded so far as [`Log2Counts`] of `value / unit`
    /// (the value floored to whole units, as a script that divides
    /// nanoseconds by 1000 sees it).
    ///
    /// Each HDR sub-bucket goes to the log2 bucket of its lowest value,
    /// which is exact when no log2 bound `unit x 2^k` falls inside a
    /// sub-bucket. Below 2048 ns sub-buckets are 1 ns wide; above, the
    /// sub-buckets of `[2^b, 2^(b+1))` are `2^(b-10)` wide. For `unit` =
    /// 1 ns the bounds are powers of two; for 1 us, `1000 x 2^k` =
    /// `125 x 2^(k+3)` lies in `[2^(k+9), 2^(k+10))`, whose sub-buckets are
    /// `2^(k-1)` wide, so it is a sub-bucket edge: both are exact (a test
    /// checks them against the values). Other units are to HDR's 0.1%.
    pub fn log2_counts(&self, unit: Dur) -> Log2Counts {
        let unit = unit.ns().max(1);
        let mut out = [0u64; 65];
        out[0] = self.zeros;
        for (i, &c) in self.counts.iter().enumerate() {
            let n = u64::from(c) + (self.carries.get(i).copied().unwrap_or(0) << 16);
            if n > 0 {
                out[log2_index(hdr_lowest(i) / unit)] += n;
            }
        }
        out
    }

    /// The histogram of everything recorded.
    pub fn into_hist(self) -> LatencyHist {
        let total = |i: usize| {
            u64::from(self.counts[i]) + (self.carries.get(i).copied().unwrap_or(0) << 16)
        };
        let buckets = Buckets::from_sorted(
            (0..self.counts.len())
                .map(|i| (i as u32, total(i)))
                .filter(|&(_, n)| n > 0),
        );
        LatencyHist {
            buckets,
            zeros: self.zeros,
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
            above: self.above,
        }
    }
}

/// The log2 bucket `[lo, hi)` that holds `d`: `[0, 1)`, `[1, 2)`, `[2, 4)`,
/// ... ns; the last one ends at `u64::MAX` ns.
pub fn log2_bounds(d: Dur) -> (Dur, Dur) {
    let v = d.ns();
    if v == 0 {
        return (Dur::ZERO, Dur(1));
    }
    let k = 63 - v.leading_zeros();
    let lo = 1u64 << k;
    let hi = if k == 63 { u64::MAX } else { 1u64 << (k + 1) };
    (Dur(lo), Dur(hi))
}

/// Counts per log2 bucket of a value in some unit, bpftrace `hist()`
/// style: index 0 holds `[0]`, index k + 1 holds `[2^k, 2^(k+1))` units
/// ([`log2_index`]).
pub type Log2Counts = [u64; 65];

/// The [`Log2Counts`] index of `v` units: 0 for 0, else `floor(log2 v) + 1`.
pub fn log2_index(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

/// `sum / count` rounded to the nearest nanosecond; 0 when `count` is 0.
/// The mean of samples is at most their maximum, so it fits a `u64`.
fn rounded_mean(sum: u128, count: u64) -> Dur {
    if count == 0 {
        Dur::ZERO
    } else {
        Dur(((sum + u128::from(count) / 2) / u128::from(count)) as u64)
    }
}

/// Count, sum and max of the samples that fell in one window.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowBin {
    pub count: u64,
    /// Exact sum of the samples, in nanoseconds.
    pub sum: u128,
    pub max: Dur,
}

impl WindowBin {
    #[inline]
    fn add(&mut self, d: Dur) {
        self.count += 1;
        self.sum += u128::from(d.ns());
        self.max = self.max.max(d);
    }

    /// Exact mean, rounded to the nearest nanosecond; 0 when empty.
    pub fn mean(&self) -> Dur {
        rounded_mean(self.sum, self.count)
    }
}

/// Per-window aggregates over simulated time. A sample belongs to the window
/// that holds the time it completed (a grant, a release, a span's end).
#[derive(Clone, Debug)]
pub struct Windows {
    width: Dur,
    bins: Vec<WindowBin>,
    /// The window of the last sample and where it ends: samples arrive in
    /// time order within a run, so most records skip the division.
    cur: usize,
    cur_end: SimTime,
    /// Each window's log2 histogram and its unit, when a [`WindowLog2`]
    /// recorded them: one per bin.
    log2: Option<(Dur, Vec<Log2Counts>)>,
}

impl PartialEq for Windows {
    /// Equal when they hold the same bins; the record cursor is not data.
    fn eq(&self, other: &Self) -> bool {
        self.width == other.width && self.bins == other.bins && self.log2 == other.log2
    }
}
impl Eq for Windows {}

/// The default window: 10 s, as the bpftrace scripts of the cases print.
pub const DEFAULT_WINDOW: Dur = Dur(10_000_000_000);

/// Most windows one run may have: every series keeps a bin (32 bytes) per
/// window, so a tiny window on a long run would allocate without bound
/// (1 ns windows over 60 s: 1.9 TB). 2^20 covers 30 days in 10 s windows.
pub const MAX_WINDOWS: u64 = 1 << 20;

impl Windows {
    pub fn new(width: Dur) -> Self {
        let width = width.max(Dur(1));
        Windows {
            width,
            bins: Vec::new(),
            cur: 0,
            cur_end: SimTime::ZERO + width,
            log2: None,
        }
    }

    pub fn width(&self) -> Dur {
        self.width
    }

    /// `at` is in the current window when `cur_end - width <= at < cur_end`;
    /// written as a difference because `at + width` overflows a `u64` for
    /// windows wider than what is left of the time range (a 500-year window
    /// on a late sample).
    #[inline]
    pub fn record(&mut self, at: SimTime, d: Dur) {
        if !self.record_in_current(at, d) {
            self.record_in_another_window(at, d);
        }
    }

    /// Records `d` if `at` falls in the current window (the last
    /// sample's); false, recording nothing, if it does not: a caller that
    /// keeps something per window ([`WindowLog2`]) closes the window, then
    /// records with [`Windows::record`].
    #[inline]
    pub fn record_in_current(&mut self, at: SimTime, d: Dur) -> bool {
        if at < self.cur_end && self.cur_end - at <= self.width {
            if let Some(b) = self.bins.get_mut(self.cur) {
                b.add(d);
                return true;
            }
        }
        false
    }

    /// The index of the last sample's window (0 before any sample).
    pub fn current(&self) -> usize {
        self.cur
    }

    /// [`Windows::record`] for a sample outside the current window (or
    /// before the first bin exists): moves the cursor there.
    #[inline(never)]
    fn record_in_another_window(&mut self, at: SimTime, d: Dur) {
        let i = ((at - SimTime::ZERO) / self.width) as usize;
        if i >= self.bins.len() {
            self.bins.resize(i + 1, WindowBin::default());
        }
        self.cur = i;
        self.cur_end = SimTime::ZERO + self.width * (i as u64 + 1);
        self.bins[i].add(d);
    }

    /// Makes sure windows up to (not including) `end` exist, so empty
    /// windows at the end of a run are reported as empty, not missing.
    pub fn extend_to(&mut self, end: SimTime) {
        let n = end.ns().div_ceil(self.width.ns()) as usize;
        if n > self.bins.len() {
            self.bins.resize(n, WindowBin::default());
        }
        self.pad_log2();
    }

    /// One log2 histogram per bin, empty ones for windows without samples.
    fn pad_log2(&mut self) {
        if let Some((_, h)) = &mut self.log2 {
            h.resize(self.bins.len().max(h.len()), [0; 65]);
        }
    }

    pub fn merge(&mut self, other: &Windows) {
        assert_eq!(
            self.width, other.width,
            "windows of different widths do not merge"
        );
        if other.bins.len() > self.bins.len() {
            self.bins.resize(other.bins.len(), WindowBin::default());
        }
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            a.count += b.count;
            a.sum += b.sum;
            a.max = a.max.max(b.max);
        }
        if let Some((unit, theirs)) = &other.log2 {
            let (u, ours) = self.log2.get_or_insert_with(|| (*unit, Vec::new()));
            assert_eq!(u, unit, "log2 histograms of different units do not merge");
            if theirs.len() > ours.len() {
                ours.resize(theirs.len(), [0; 65]);
            }
            for (a, b) in ours.iter_mut().zip(theirs) {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
            }
        }
        self.pad_log2();
    }

    /// Each window's log2 histogram (one per bin, as [`Windows::iter`]
    /// gives them) and its unit, if they were recorded.
    pub fn log2(&self) -> Option<(Dur, &[Log2Counts])> {
        self.log2.as_ref().map(|(u, h)| (*u, h.as_slice()))
    }

    /// (window start, bin) for every window, empty ones included.
    pub fn iter(&self) -> impl Iterator<Item = (SimTime, &WindowBin)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .map(move |(i, b)| (SimTime::ZERO + self.width * i as u64, b))
    }

    pub fn len(&self) -> usize {
        self.bins.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bins.is_empty()
    }
}

/// Builds each window's log2 histogram out of a run's one running
/// histogram, so that recording a sample costs nothing more: when the
/// samples move to another window, what the histogram gained since the
/// last move fell in the window they leave (samples arrive in time
/// order). Each move costs one pass over the histogram's buckets.
#[derive(Clone, Debug)]
pub struct WindowLog2 {
    unit: Dur,
    /// The running histogram's log2 view at the last move.
    seen: Log2Counts,
    windows: Vec<Log2Counts>,
}

impl WindowLog2 {
    /// Histograms of `value / unit` ([`HdrCounts::log2_counts`]).
    pub fn new(unit: Dur) -> Self {
        WindowLog2 {
            unit,
            seen: [0; 65],
            windows: Vec::new(),
        }
    }

    /// Everything `hist` gained since the last call fell in window `w`.
    pub fn close(&mut self, w: usize, hist: &HdrCounts) {
        let now = hist.log2_counts(self.unit);
        if now == self.seen {
            return;
        }
        if w >= self.windows.len() {
            self.windows.resize(w + 1, [0; 65]);
        }
        for ((x, n), s) in self.windows[w].iter_mut().zip(&now).zip(&self.seen) {
            *x += n - s;
        }
        self.seen = now;
    }

    /// Gives `windows` (the same run's, extended to its end) the
    /// histograms, after a last [`WindowLog2::close`].
    pub fn finish(self, windows: &mut Windows) {
        windows.log2 = Some((self.unit, self.windows));
        windows.pad_log2();
    }
}

#[cfg(test)]
mod hdr_counts_tests {
    use super::*;

    /// A small deterministic generator (xorshift) for the test's values.
    fn values(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 5 {
                    0 => 0,
                    1 => x % 3000,
                    2 => x % 5_000_000,
                    3 => x >> (x % 60),
                    _ => x % 1_000_000_000_000,
                }
            })
            .collect()
    }

    #[test]
    fn counting_then_building_equals_recording_each_sample() {
        for seed in 1..20 {
            let vs = values(5000, seed);
            let mut direct = LatencyHist::new();
            let mut counts = HdrCounts::new();
            for &v in &vs {
                direct.record(Dur(v));
                counts.record(Dur(v));
            }
            let built = counts.into_hist();
            assert_eq!(built, direct, "seed {seed}");
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(built.quantile(q), direct.quantile(q));
            }
            assert_eq!(built.log2_buckets(), direct.log2_buckets());
        }
    }

    #[test]
    fn a_bucket_counted_past_its_16_bit_count_keeps_every_sample() {
        // 200,000 samples in one bucket wrap its 16-bit count three times;
        // a second bucket wraps once, exactly at 65,536, and a third never.
        let mut direct = LatencyHist::new();
        let mut counts = HdrCounts::new();
        for (v, n) in [(1500u64, 200_000u32), (3_000_000, 65_536), (7, 3)] {
            for _ in 0..n {
                direct.record(Dur(v));
                counts.record(Dur(v));
            }
        }
        let built = counts.into_hist();
        assert_eq!(built.count(), 265_539);
        assert_eq!(built, direct);
        assert_eq!(built.quantile(0.5), direct.quantile(0.5));
        assert_eq!(built.log2_buckets(), direct.log2_buckets());
    }

    #[test]
    fn one_sample_zero_samples_and_extremes() {
        for vs in [
            vec![],
            vec![0],
            vec![7],
            vec![1, 1, 1],
            vec![u64::MAX, 1],
            vec![2047, 2048, 4095, 4096],
        ] {
            let mut direct = LatencyHist::new();
            let mut counts = HdrCounts::new();
            for &v in &vs {
                direct.record(Dur(v));
                counts.record(Dur(v));
            }
            assert_eq!(counts.into_hist(), direct, "{vs:?}");
        }
    }

    #[test]
    fn log2_counts_in_nanoseconds_and_microseconds_are_exact() {
        // Random values, and each side of every microsecond bound
        // 1000 x 2^k.
        let edges = (0..44u32).flat_map(|k| {
            let b = 1000u64 << k;
            [b - 1, b, b + 1]
        });
        for seed in 1..20 {
            let mut counts = HdrCounts::new();
            let (mut ns, mut us) = ([0u64; 65], [0u64; 65]);
            for v in values(5000, seed).into_iter().chain(edges.clone()) {
                counts.record(Dur(v));
                let v = v.min(i64::MAX as u64);
                ns[log2_index(v)] += 1;
                us[log2_index(v / 1000)] += 1;
            }
            assert_eq!(counts.log2_counts(Dur(1)), ns, "seed {seed}");
            assert_eq!(counts.log2_counts(Dur(1000)), us, "seed {seed}");
        }
        assert_eq!([0, 1, 2, 3, 4, 7, 8].map(log2_index), [0, 1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn window_log2_gives_each_window_the_samples_it_got() {
        // Samples in time order, as a run records them; window 2 is empty.
        let samples = [
            (1u64, 0u64),
            (3, 1500),
            (9, 999),
            (12, 4000),
            (15, 2_000_000),
            (31, 7),
            (39, 1000),
        ];
        let mut hist = HdrCounts::new();
        let mut windows = Windows::new(Dur(10));
        let mut log2 = WindowLog2::new(Dur(1000));
        for (t, v) in samples {
            if !windows.record_in_current(SimTime(t), Dur(v)) {
                log2.close(windows.current(), &hist);
                windows.record(SimTime(t), Dur(v));
            }
            hist.record(Dur(v));
        }
        log2.close(windows.current(), &hist);
        windows.extend_to(SimTime(50));
        log2.finish(&mut windows);
        let (unit, h) = windows.log2().unwrap();
        assert_eq!(unit, Dur(1000));
        let mut want = vec![[0u64; 65]; 5];
        for (t, v) in samples {
            want[(t / 10) as usize][log2_index(v / 1000)] += 1;
        }
        assert_eq!(h, &want[..]);
        assert_eq!(want[0][..3], [2, 1, 0]);
        // The counts, sums and maxima are those of `record` alone.
        let mut plain = Windows::new(Dur(10));
        for (t, v) in samples {
            plain.record(SimTime(t), Dur(v));
        }
        plain.extend_to(SimTime(50));
        assert!(plain
            .iter()
            .map(|(_, b)| *b)
            .eq(windows.iter().map(|(_, b)| *b)));
        // Merging two runs adds them window by window.
        let mut two = windows.clone();
        two.merge(&windows);
        assert_eq!(two.log2().unwrap().1[3][1], 2 * h[3][1]);
        assert_eq!(plain.log2(), None);
    }

    /// The `hdrhistogram` crate's histogram of `vs` and its figures the
    /// way `LatencyHist` gave them when it wrapped one (zeros apart).
    struct Reference {
        hdr: hdrhistogram::Histogram<u64>,
        zeros: u64,
        min: u64,
        max: u64,
        count: u64,
    }

    impl Reference {
        fn of(vs: &[u64]) -> Reference {
            let mut hdr = hdrhistogram::Histogram::<u64>::new(3).unwrap();
            hdr.auto(true);
            let mut r = Reference {
                hdr,
                zeros: 0,
                min: u64::MAX,
                max: 0,
                count: vs.len() as u64,
            };
            for &v in vs {
                let v = v.min(i64::MAX as u64);
                if v == 0 {
                    r.zeros += 1;
                    r.min = 0;
                } else {
                    r.hdr.record(v).unwrap();
                    r.min = r.min.min(v);
                    r.max = r.max.max(v);
                }
            }
            r
        }
        fn quantile(&self, q: f64) -> Dur {
            if q >= 1.0 {
                return Dur(self.max);
            }
            let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
            if rank <= self.zeros {
                return Dur::ZERO;
            }
            let mut seen = self.zeros;
            for v in self.hdr.iter_recorded() {
                seen += v.count_since_last_iteration();
                if seen >= rank {
                    let hi = self.hdr.highest_equivalent(v.value_iterated_to());
                    return Dur(hi.min(self.max).max(self.min));
                }
            }
            Dur(self.max)
        }
        fn cdf_at(&self, ns: u64) -> f64 {
            let below = if ns == 0 {
                self.zeros
            } else {
                self.zeros + self.hdr.count_between(1, ns)
            };
            below as f64 / self.count as f64
        }
        fn recorded(&self) -> Vec<(Dur, u64)> {
            let zeros = (self.zeros > 0).then_some((Dur::ZERO, self.zeros));
            (zeros.into_iter())
                .chain(self.hdr.iter_recorded().map(|v| {
                    (
                        Dur(self.hdr.highest_equivalent(v.value_iterated_to())),
                        v.count_at_value(),
                    )
                }))
                .collect()
        }
        fn lowest_values(&self) -> Vec<(u64, u64)> {
            (self.hdr.iter_recorded())
                .map(|v| {
                    (
                        self.hdr.lowest_equivalent(v.value_iterated_to()),
                        v.count_at_value(),
                    )
                })
                .collect()
        }
    }

    #[test]
    fn index_and_lowest_are_hdr_s() {
        let h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for v in [
            1u64,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            4096,
            1 << 20,
            (1 << 40) + 12345,
            i64::MAX as u64,
        ] {
            let i = hdr_index(v);
            assert_eq!(hdr_lowest(i), h.lowest_equivalent(v), "{v}");
            assert_eq!(hdr_highest(i), h.highest_equivalent(v), "{v}");
            assert_eq!(hdr_index(hdr_lowest(i)), i);
            assert_eq!(hdr_index(hdr_highest(i)), i);
        }
    }

    #[test]
    fn a_bucket_count_past_16_bits_is_kept_whole() {
        let max = u64::from(u16::MAX);
        let mut b = Buckets::default();
        b.add(7, max - 1);
        b.add(3, 5);
        assert!(b.big.is_empty());
        b.add(7, 1); // exactly 2^16 - 1: the marker value, so kept whole
        b.add(7, 10);
        assert_eq!(b.iter().collect::<Vec<_>>(), [(3, 5), (7, max + 10)]);
        assert_eq!(b.big, [(7, max + 10)]);
        let m = b.merged(&b);
        assert_eq!(m.iter().collect::<Vec<_>>(), [(3, 10), (7, 2 * (max + 10))]);
        assert_eq!(
            m,
            Buckets::from_sorted([(3, 10), (7, 2 * (max + 10))].into_iter())
        );
        assert_ne!(m, b);
        // A big count in a later block keeps `big` in index order when an
        // earlier block gains one.
        b.add(5000, 1 << 40);
        b.add(4, 1 << 20);
        assert_eq!(b.big, [(4, 1 << 20), (7, max + 10), (5000, 1 << 40)]);
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            [(3, 5), (4, 1 << 20), (7, max + 10), (5000, 1 << 40)]
        );
    }

    #[test]
    fn a_block_is_dense_when_that_takes_fewer_bytes_than_pairs() {
        // Three buckets spread over 100: pairs (12 bytes) beat 200 dense.
        let spread = Block::of(2, &[(0, 1), (50, 2), (99, 3)]);
        assert!(matches!(spread.counts, BlockCounts::Sparse(_)));
        // Three buckets over 6: 12 dense bytes against 12 in pairs.
        let close = Block::of(2, &[(10, 1), (12, 2), (15, 3)]);
        match &close.counts {
            BlockCounts::Dense { first, counts } => {
                assert_eq!((*first, &counts[..]), (10, &[1, 0, 2, 0, 0, 3][..]))
            }
            BlockCounts::Sparse(_) => panic!("dense expected"),
        }
        for (b, want) in [
            (spread, [(0, 1), (50, 2), (99, 3)]),
            (close, [(10, 1), (12, 2), (15, 3)]),
        ] {
            let b = Buckets {
                blocks: vec![b],
                big: Vec::new(),
            };
            let got: Vec<_> = b.iter().map(|(i, n)| (i - (2 << BLOCK_BITS), n)).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn buckets_count_as_a_map_of_indices_does_through_adds_and_merges() {
        use std::collections::BTreeMap;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut parts: Vec<(Buckets, BTreeMap<u32, u64>)> = Vec::new();
        for _ in 0..6 {
            let (mut b, mut m) = (Buckets::default(), BTreeMap::new());
            for _ in 0..400 {
                // Indices clustered in a few blocks and scattered over 40.
                let i = match next() % 3 {
                    0 => (next() % 40_000) as u32,
                    1 => 3000 + (next() % 64) as u32,
                    _ => 9 << BLOCK_BITS | (next() % 1024) as u32,
                };
                let n = if next() % 50 == 0 {
                    40_000
                } else {
                    1 + next() % 9
                };
                b.add(i, n);
                *m.entry(i).or_insert(0) += n;
            }
            assert_eq!(
                b.iter().collect::<Vec<_>>(),
                m.clone().into_iter().collect::<Vec<_>>()
            );
            parts.push((b, m));
        }
        let (mut b, mut m) = (Buckets::default(), BTreeMap::new());
        for (pb, pm) in &parts {
            b = b.merged(pb);
            for (&i, &n) in pm {
                *m.entry(i).or_insert(0) += n;
            }
        }
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            m.into_iter().collect::<Vec<_>>()
        );
        assert!(b.big.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn sparse_figures_equal_the_hdrhistogram_crate_s() {
        // Wide ranges with zeros, one value, a top-of-range value; each
        // figure the sparse histogram gives against the crate's.
        let mut sets: Vec<Vec<u64>> = (1..12).map(|seed| values(3000, seed)).collect();
        sets.push(vec![5]);
        sets.push(vec![0, 0, 9]);
        sets.push(vec![u64::MAX, 1, 0, 4095, 4096]);
        for (k, vs) in sets.iter().enumerate() {
            let r = Reference::of(vs);
            let mut h = LatencyHist::new();
            for &v in vs {
                h.record(Dur(v));
            }
            for q in [0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                assert_eq!(h.quantile(q), r.quantile(q), "set {k} q {q}");
            }
            let probes = vs
                .iter()
                .flat_map(|&v| [v.saturating_sub(1), v, v.saturating_add(1)]);
            for ns in probes.chain([0, 1, 2047, 2048, u64::MAX]) {
                assert_eq!(
                    h.cdf_at(Dur(ns)),
                    r.cdf_at(ns.min(i64::MAX as u64)),
                    "set {k} at {ns}"
                );
            }
            assert_eq!(h.recorded(), r.recorded(), "set {k}");
            let lows: Vec<(u64, u64)> = h
                .buckets
                .iter()
                .map(|(i, n)| (hdr_lowest(i as usize), n))
                .collect();
            assert_eq!(lows, r.lowest_values(), "set {k}");
            if h.count() > h.zeros() {
                assert_eq!(
                    h.min_nonzero().ns(),
                    match h.count() - h.zeros() {
                        1 => r.max,
                        _ if r.zeros == 0 => r.min,
                        _ => r.hdr.min_nz(),
                    },
                    "set {k}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mean_min_max_and_nearest_rank() {
        let mut h = LatencyHist::new();
        for v in 1..=100u64 {
            h.record(Dur(v * 1000));
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.mean(), Dur(50_500));
        assert_eq!(h.min(), Dur(1000));
        assert_eq!(h.max(), Dur(100_000));
        // nearest rank: p50 = sorted[ceil(0.5*100)-1] = 50_000, within 0.1%.
        let p50 = h.quantile(0.5);
        assert!((Dur(49_950)..=Dur(50_050)).contains(&p50), "{p50}");
        assert_eq!(h.quantile(1.0), Dur(100_000));
        let p99 = h.quantile(0.99);
        assert!((Dur(98_900)..=Dur(99_100)).contains(&p99), "{p99}");
    }

    #[test]
    fn zero_samples_count_in_percentiles() {
        let mut h = LatencyHist::new();
        for _ in 0..90 {
            h.record(Dur(0));
        }
        for _ in 0..10 {
            h.record(Dur(5_000));
        }
        assert_eq!(h.quantile(0.9), Dur::ZERO);
        assert!(h.quantile(0.91) >= Dur(4_995));
        assert_eq!(h.cdf_at(Dur::ZERO), 0.9);
        assert_eq!(h.cdf_at(Dur(5_000)), 1.0);
        assert_eq!(h.min_nonzero(), Dur(5_000));
    }

    #[test]
    fn merge_is_exact_and_order_free() {
        let mut a = LatencyHist::new();
        let mut b = LatencyHist::new();
        let mut all = LatencyHist::new();
        for v in 0..1000u64 {
            let x = v * v * 37 % 1_000_003;
            if v % 3 == 0 {
                a.record(Dur(x))
            } else {
                b.record(Dur(x))
            }
            all.record(Dur(x));
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, all);
        assert_eq!(ba, all);
    }

    #[test]
    fn log2_view_matches_bpftrace_buckets() {
        let mut h = LatencyHist::new();
        for v in [0, 1, 2, 3, 4, 7, 8, 1023, 1024, 1_000_000] {
            h.record(Dur(v));
        }
        let b: Vec<(u64, u64, u64)> = h
            .log2_buckets()
            .iter()
            .map(|b| (b.lo.ns(), b.hi.ns(), b.count))
            .collect();
        assert_eq!(
            b,
            vec![
                (0, 1, 1),
                (1, 2, 1),
                (2, 4, 2),
                (4, 8, 2),
                (8, 16, 1),
                (512, 1024, 1),
                (1024, 2048, 1),
                (524_288, 1_048_576, 1),
            ]
        );
    }

    #[test]
    fn single_sample_histogram() {
        let mut h = LatencyHist::new();
        h.record(Dur(12_345));
        assert_eq!(h.quantile(0.5), Dur(12_345));
        assert_eq!(h.quantile(0.999), Dur(12_345));
        assert_eq!(h.mean(), Dur(12_345));
        // At HDR resolution: the highest value of 12,345's bucket.
        assert_eq!(h.recorded(), vec![(Dur(12_351), 1)]);
        let e = LatencyHist::new();
        assert_eq!(
            (e.quantile(0.5), e.mean(), e.max(), e.min(), e.min_nonzero()),
            (Dur::ZERO, Dur::ZERO, Dur::ZERO, Dur::ZERO, Dur::ZERO)
        );
        assert!(e.log2_buckets().is_empty());
    }

    #[test]
    fn windows_keep_count_mean_max_and_empty_windows() {
        let mut w = Windows::new(Dur::from_secs(10));
        w.record(SimTime(1), Dur(10));
        w.record(SimTime(9_999_999_999), Dur(30));
        w.record(SimTime(25_000_000_000), Dur(7));
        w.extend_to(SimTime(40_000_000_000));
        let bins: Vec<(u64, u64, u64, u64)> = w
            .iter()
            .map(|(t, b)| (t.ns(), b.count, b.mean().ns(), b.max.ns()))
            .collect();
        assert_eq!(
            bins,
            vec![
                (0, 2, 20, 30),
                (10_000_000_000, 0, 0, 0),
                (20_000_000_000, 1, 7, 7),
                (30_000_000_000, 0, 0, 0),
            ]
        );
    }

    #[test]
    fn windows_wider_than_the_rest_of_the_time_range_do_not_overflow() {
        // A 500-year window and samples late in the u64 range: `at + width`
        // would overflow.
        let width = Dur(500 * 365 * 24 * 3_600_000_000_000);
        let mut w = Windows::new(width);
        w.record(SimTime(100 * 365 * 24 * 3_600_000_000_000), Dur(5));
        w.record(SimTime(u64::MAX - 1), Dur(9));
        w.record(SimTime(u64::MAX - 1), Dur(1));
        let bins: Vec<(SimTime, u64, Dur)> = w.iter().map(|(t, b)| (t, b.count, b.max)).collect();
        assert_eq!(
            bins,
            vec![
                (SimTime::ZERO, 1, Dur(5)),
                (SimTime::ZERO + width, 2, Dur(9))
            ]
        );
    }

    #[test]
    fn counts_above_thresholds_are_exact_where_a_bucket_straddles_them() {
        // 1 ms and 1 ms + 1 ns share an HDR bucket (512 ns wide there):
        // only the count kept while recording tells them apart.
        let mut a = HdrCounts::new();
        a.count_above(&[Dur(1_000_000), Dur(10)]);
        for v in [0, 5, 1_000_000, 1_000_001] {
            a.record(Dur(v));
        }
        let mut h = a.into_hist();
        assert_eq!(h.count_above(Dur(1_000_000)), Some(1));
        assert_eq!(h.count_above(Dur(10)), Some(2));
        assert_eq!(h.count_above(Dur(7)), None);
        let mut b = HdrCounts::new();
        b.count_above(&[Dur(1_000_000), Dur(10)]);
        b.record(Dur(2_000_000));
        h.merge(&b.into_hist());
        assert_eq!(h.count_above(Dur(1_000_000)), Some(2));
        assert_eq!(h.count_above(Dur(10)), Some(3));
    }
}
