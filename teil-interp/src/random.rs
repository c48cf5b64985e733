//! SplitMix64 (Steele, Lea and Flood, 2014): the one small deterministic generator of the
//! workspace, for reproducible test inputs ([`crate::random_inputs`]), the fuzzer's program
//! seeds and the tests' random programs. Not for anything that must be unpredictable.

/// The increment of SplitMix64's state (the golden ratio, as a 64-bit fraction).
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 stream; the field is its state (the seed, before the first draw).
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next value of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`0` when `n` is `0`), by remainder.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `true` with about `percent` per cent probability.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// One SplitMix64 step: the first value of the stream seeded with `x`, a well-mixed function of
/// `x` (for deriving one seed from another).
pub fn mix(x: u64) -> u64 {
    SplitMix64(x).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64() {
        // The first values of SplitMix64 seeded with 0 (the reference implementation's).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(mix(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(SplitMix64(5).below(0), 0);
    }
}
