//! Plandesk store seam spike: latency of the decision write and the inbox read, per driver
//! and per way of calling it. Every variant runs in this one process, interleaved in chunks
//! of `SPIKE_CHUNK` iterations (rotating which goes first), so a wandering fsync latency is
//! shared. See README.md.

#[cfg(feature = "pg")]
mod pg;
mod rusq;
mod shared;
#[cfg(feature = "sqlx")]
mod sq;

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shared::*;

pub type Op = Arc<dyn Fn(usize) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

pub struct Variant {
    name: String,
    rows: usize,
    run: Box<dyn FnMut(Range<usize>) -> Vec<Duration>>,
    samples: Vec<Duration>,
}

fn sync_variant(name: String, rows: usize, mut op: impl FnMut(usize) + 'static) -> Variant {
    Variant {
        name,
        rows,
        run: Box::new(move |range| {
            range
                .map(|i| {
                    let s = Instant::now();
                    op(i);
                    s.elapsed()
                })
                .collect()
        }),
        samples: Vec::new(),
    }
}

/// `op` runs in a task spawned on `rt` (on a worker thread for multi_thread), timed there.
pub fn async_variant(name: String, rows: usize, rt: tokio::runtime::Runtime, op: Op) -> Variant {
    Variant {
        name,
        rows,
        run: Box::new(move |range| {
            let op = op.clone();
            rt.block_on(async move {
                tokio::spawn(async move {
                    let mut v = Vec::with_capacity(range.len());
                    for i in range {
                        let s = Instant::now();
                        op(i).await;
                        v.push(s.elapsed());
                    }
                    v
                })
                .await
                .unwrap()
            })
        }),
        samples: Vec::new(),
    }
}

pub fn runtime(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }
}

pub fn rt_name(multi: bool) -> &'static str {
    if multi {
        "multi_thread"
    } else {
        "current_thread"
    }
}

fn interleave(vs: &mut [Variant], n: usize, warm: usize, chunk: usize) {
    let (mut start, mut round) = (0, 0);
    while start < n {
        let end = (start + chunk).min(n);
        for k in 0..vs.len() {
            let len = vs.len();
            let v = &mut vs[(k + round) % len];
            let d = (v.run)(start..end);
            for (i, dur) in (start..end).zip(d) {
                if i >= warm {
                    v.samples.push(dur);
                }
            }
        }
        start = end;
        round += 1;
    }
    for v in vs.iter_mut() {
        report(Summary {
            name: v.name.clone(),
            samples: std::mem::take(&mut v.samples),
            rows: v.rows,
        });
    }
}

fn main() {
    let iters = env_usize("SPIKE_ITERS", 2000);
    let warm = env_usize("SPIKE_WARMUP", 200);
    let chunk = env_usize("SPIKE_CHUNK", 50);
    let inbox_rows = env_usize("SPIKE_INBOX_ROWS", 200);
    let only = std::env::var("SPIKE_ONLY").unwrap_or_default();
    let dir = match std::env::var("SPIKE_DIR") {
        Ok(b) => tempfile::tempdir_in(b).unwrap(),
        Err(_) => tempfile::tempdir().unwrap(),
    };
    let d = dir.path().to_owned();
    let n = warm + iters;
    let plan: Arc<str> = body().into();
    let t = Arc::new(rusq::texts());
    println!(
        "spike: {iters} iterations after {warm} warm-up, interleaved in chunks of {chunk}; synchronous={}; dir {}; features: sqlx={} pg={}",
        sync_mode(),
        d.display(),
        cfg!(feature = "sqlx"),
        cfg!(feature = "pg")
    );
    rusq::placeholders(&d);
    #[cfg(feature = "sqlx")]
    runtime(false).block_on(sq::placeholders(&d));
    println!();
    print_header();

    if only.is_empty() || only.contains("write") {
        let mut vs = Vec::new();
        {
            let mut c = rusq::fresh_db(&d, "direct", n);
            let (t, plan) = (t.clone(), plan.clone());
            vs.push(sync_variant(
                "write: rusqlite direct, calling thread (today)".into(),
                0,
                move |i| {
                    rusq::decide(&mut c, &t, i, &plan);
                },
            ));
        }
        {
            let c = Arc::new(Mutex::new(rusq::fresh_db(&d, "spawn_blocking", n)));
            let (t, plan) = (t.clone(), plan.clone());
            let op: Op = Arc::new(move |i| {
                let (c, t, plan) = (c.clone(), t.clone(), plan.clone());
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || {
                        rusq::decide(&mut c.lock().unwrap(), &t, i, &plan)
                    })
                    .await
                    .unwrap();
                })
            });
            vs.push(async_variant(
                "write: rusqlite spawn_blocking, 1 per tx (multi_thread)".into(),
                0,
                runtime(true),
                op,
            ));
        }
        for per_statement in [false, true] {
            for multi in [false, true] {
                let tag = if per_statement {
                    "11 hops/tx"
                } else {
                    "1 hop/tx"
                };
                let ct = rusq::ConnThread::start(rusq::fresh_db(
                    &d,
                    &format!("thread-{per_statement}-{multi}"),
                    n,
                ));
                let (t, plan) = (t.clone(), plan.clone());
                let op: Op = Arc::new(move |i| {
                    let (ct, t, plan) = (ct.clone(), t.clone(), plan.clone());
                    Box::pin(async move {
                        if per_statement {
                            rusq::decide_per_statement(&ct, &t, i, &plan).await;
                        } else {
                            rusq::decide_one_hop(&ct, &t, i, &plan).await;
                        }
                    })
                });
                vs.push(async_variant(
                    format!("write: rusqlite conn thread, {tag} ({})", rt_name(multi)),
                    0,
                    runtime(multi),
                    op,
                ));
            }
        }
        #[cfg(feature = "sqlx")]
        for (multi, ping) in [(false, false), (true, false), (true, true)] {
            let rt = runtime(multi);
            drop(rusq::fresh_db(&d, &format!("sqlx-{multi}-{ping}"), n));
            let pool = rt.block_on(sq::pool(&d.join(format!("sqlx-{multi}-{ping}.db")), ping));
            let plan = plan.clone();
            let op: Op = Arc::new(move |i| {
                let (pool, plan) = (pool.clone(), plan.clone());
                Box::pin(async move {
                    sq::decide(&pool, i, &plan).await;
                })
            });
            let tag = if ping {
                ", test_before_acquire=true (default)"
            } else {
                ""
            };
            vs.push(async_variant(
                format!("write: sqlx-sqlite, 11 hops/tx{tag} ({})", rt_name(multi)),
                0,
                rt,
                op,
            ));
        }
        interleave(&mut vs, n, warm, chunk);
    }

    if only.is_empty() || only.contains("inbox") {
        drop(rusq::fresh_db(&d, "inbox", inbox_rows));
        let path = d.join("inbox.db");
        let mut vs = Vec::new();
        {
            let c = rusq::connect(&path);
            let t = t.clone();
            vs.push(sync_variant(
                format!("inbox {inbox_rows} rows: rusqlite direct"),
                inbox_rows,
                move |_| {
                    assert_eq!(rusq::inbox(&c, &t).len(), inbox_rows);
                },
            ));
        }
        for multi in [false, true] {
            let ct = rusq::ConnThread::start(rusq::connect(&path));
            let t = t.clone();
            let op: Op = Arc::new(move |_| {
                let (ct, t) = (ct.clone(), t.clone());
                Box::pin(async move {
                    let rows = ct.call(move |c| rusq::inbox(c, &t)).await;
                    assert_eq!(rows.len(), inbox_rows);
                })
            });
            vs.push(async_variant(
                format!(
                    "inbox {inbox_rows} rows: rusqlite conn thread, 1 hop ({})",
                    rt_name(multi)
                ),
                inbox_rows,
                runtime(multi),
                op,
            ));
        }
        #[cfg(feature = "sqlx")]
        for (multi, derived) in [(false, true), (true, true), (true, false)] {
            let rt = runtime(multi);
            let pool = rt.block_on(sq::pool(&path, false));
            let op: Op = Arc::new(move |_| {
                let pool = pool.clone();
                Box::pin(async move {
                    let rows = if derived {
                        sq::inbox(&pool).await
                    } else {
                        sq::inbox_by_index(&pool).await
                    };
                    assert_eq!(rows.len(), inbox_rows);
                })
            });
            let how = if derived {
                "derive(FromRow)"
            } else {
                "by index"
            };
            vs.push(async_variant(
                format!(
                    "inbox {inbox_rows} rows: sqlx-sqlite fetch_all, {how} ({})",
                    rt_name(multi)
                ),
                inbox_rows,
                rt,
                op,
            ));
        }
        interleave(&mut vs, n, warm, chunk);
    }

    #[cfg(feature = "pg")]
    if only.is_empty() || only.contains("pg") {
        pg::run(n, warm, chunk, inbox_rows);
    }
}
