//! Per-connection lists sized for a crowd of short connections.

/// Pushes `item` onto `list` unless it holds `cap` items already (returns
/// whether it did). The first push makes room for `first` items, not the 4
/// of `Vec`'s first growth; after that the list grows by half its length
/// (at least 4), not doubling, and never past `cap`: most connections'
/// lists stay short, and a list that grows wastes a third at most.
pub(crate) fn push_capped<T>(list: &mut Vec<T>, item: T, first: usize, cap: usize) -> bool {
    let len = list.len();
    if len >= cap {
        return false;
    }
    if len == list.capacity() {
        let more = if len == 0 { first } else { (len / 2).max(4) };
        list.reserve_exact(more.clamp(1, cap - len));
    }
    list.push(item);
    true
}

#[cfg(test)]
mod tests {
    use super::push_capped;

    #[test]
    fn first_room_then_half_again_up_to_the_cap() {
        let mut v = Vec::new();
        let mut caps = Vec::new();
        for i in 0..70 {
            let pushed = push_capped(&mut v, i, 2, 64);
            assert_eq!(pushed, i < 64);
            if caps.last() != Some(&v.capacity()) {
                caps.push(v.capacity());
            }
        }
        assert_eq!(v.len(), 64);
        assert_eq!(caps, [2, 6, 10, 15, 22, 33, 49, 64]);
    }
}
