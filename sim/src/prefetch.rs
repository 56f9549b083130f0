//! Software prefetch: a hint to the CPU to start loading the cache lines
//! of a value that the next steps will read. It changes no result, only
//! when the loads' latency is paid: an event on a large machine touches a
//! task's state in several tables, each line a likely cache miss, and
//! asking for them together at the event's start overlaps the misses
//! instead of paying them one after another.

/// Starts loading every cache line of `*value` (at most 8 lines) into the
/// cache. A no-op off x86-64.
#[inline(always)]
pub fn lines<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = value as *const T as *const i8;
        let size = std::mem::size_of::<T>().min(8 * 64);
        let mut off = 0;
        while off < size {
            // SAFETY: prefetch never faults and reads nothing the program
            // sees; the address is inside `*value`.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.add(off),
                );
            }
            off += 64;
        }
        // The last line when `*value` straddles one more than its size.
        if size > 0 {
            // SAFETY: as above; the byte is the last one of `*value`.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.add(size - 1),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
