//! Every built-in experiment's summary at a small fixed seed and a short
//! duration: any change to a model, a library cost or a scenario shows up
//! here as a reviewed diff (`cargo insta review`), never silently.

use experiments::builtin::{self, BUILTINS};
use experiments::runner::{run, RunOptions};
use experiments::scenario::ScenarioFile;
use output::files::summary_csv;

fn summary(name: &str, duration: &str) -> String {
    let src = builtin::source(name, &[format!("scenario.duration={duration}")]).unwrap();
    let r = run(
        &ScenarioFile::new(src).unwrap(),
        &RunOptions {
            seed: Some(7),
            jobs: 1,
            progress: false,
            ..RunOptions::default()
        },
    )
    .unwrap();
    String::from_utf8(summary_csv(&r.result)).unwrap()
}

#[test]
fn every_builtin_has_a_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for b in BUILTINS {
            // Short enough for the test suite, long enough that every
            // operation of the experiment has run.
            insta::assert_snapshot!(b.name, summary(b.name, "50ms"));
        }
    });
}
