use super::*;

#[test]
fn a_group_takes_the_largest_power_of_two_waiting() {
    let sizes: Vec<usize> = [1, 2, 3, 7, 8, 300, 512, 5000]
        .into_iter()
        .map(group_size)
        .collect();
    assert_eq!(sizes, [1, 2, 2, 4, 8, 256, 512, 512]);
    assert_eq!(group_size(0), 1, "the one received is always taken");
}
