//! Forming a cluster from nothing: 3 and 5 instances started in random
//! order form exactly one cluster (one cluster id, all voters, exactly one
//! incarnations/1 record whose V_1 matches the member list).

use std::time::{Duration, Instant};
use testkit::cluster::Cluster;
use testkit::eco_bin;
use testkit::wait_until;

fn form(n: usize, net: u8, seed: u64) {
    let mut c = Cluster::integration(eco_bin!()).expect("cluster");
    let ids: Vec<String> = (1..=n).map(|i| format!("eco-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        c.add(id, &format!("127.0.{net}.{}", i + 1)).unwrap();
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    c.set_group(&refs).unwrap();
    // A deterministic shuffle and small gaps between starts.
    let mut order = refs.clone();
    let mut x = seed;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let t = Instant::now();
    for id in &order {
        c.start(id).unwrap();
        std::thread::sleep(Duration::from_millis(150 + x % 200));
    }
    let cluster = c
        .wait_voters(&refs, Duration::from_secs(90))
        .unwrap_or_else(|| {
            panic!(
                "{n} instances started in order {order:?} did not form one cluster: {:?}",
                c.members()
            )
        });
    eprintln!(
        "{n} instances (start order {order:?}) formed cluster {cluster:x} in {:?}",
        t.elapsed()
    );
    let records: Vec<String> = std::fs::read_dir(c.store().join("it/incarnations"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert!(records.contains(&"0000000001".to_string()), "{records:?}");
    assert!(
        !records.iter().any(|r| r.starts_with("0000000002")),
        "exactly one seeding: {records:?}"
    );
    let voters = wait_until(Duration::from_secs(15), || {
        let v =
            std::fs::read_to_string(c.store().join("it/incarnations/0000000001.voters")).ok()?;
        refs.iter()
            .all(|id| v.contains(&format!("\"{id}\"")))
            .then_some(v)
    });
    assert!(voters.is_some(), "V_1 in the store matches the member list");
    let seeded = std::fs::read_to_string(c.store().join("it/incarnations/0000000001")).unwrap();
    assert!(
        seeded.contains("\"seeder\": \"eco-1\""),
        "the lowest id seeded: {seeded}"
    );
}

#[test]
fn three_instances_in_random_order_form_one_cluster() {
    form(3, 12, 0x5eed_0003);
}

#[test]
fn five_instances_in_random_order_form_one_cluster() {
    form(5, 13, 0x5eed_0005);
}
