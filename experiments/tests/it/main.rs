//! The integration tests of `experiments`, in one test binary (one link of
//! the library instead of one per file). Each module is named after the
//! behaviour it checks.

mod architecture;
mod bad_input;
mod band;
mod blame;
mod builtin_snapshots;
mod case1_rmdir_cost;
mod case2_pidlist_flush;
mod case3_inode_alloc;
mod case4_revalidate;
mod check;
mod cli;
mod cluster;
mod coherence;
mod common;
mod cpu_model;
mod edges;
mod error_catalogue;
mod families_params;
mod full_disk;
mod fuzz_inputs;
mod headline;
mod hostile;
mod hung_task;
mod kernfs_library;
mod limits;
mod linux_locks;
mod lock_policies_showcase;
mod machine;
mod memcg_oom;
mod oom_daemon;
mod percpu_rwsem;
mod queueing_theory;
mod rcu_grace_periods;
mod report_html;
mod scale;
mod seqcount;
mod spinlock;
mod splitting;
mod sweep;
mod trace;
mod wake_path;
mod workqueue_flush;
mod world_semantics;
