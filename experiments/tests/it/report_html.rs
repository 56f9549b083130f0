//! `report.html` in a real browser: a run's, a sweep's and a check's page
//! opened in headless Chromium must load with no console message (the
//! page logs one for each image that did not render), show its tables and
//! every image, and give a screenshot that is not blank. A page with a
//! corrupted image must log the error, so the check can fail. The pages
//! are the same bytes for the same seed in two directories, and reference
//! nothing on the network.
//!
//! Chromium comes from `scripts/test-deps` (the README's test command
//! runs it first). The directories are kept under the cargo target's tmp
//! directory, `report_html/<name>/`, each with its screenshot
//! `report.png`, to look at after the test.

use crate::common::{
    convoy, HOLDS_REPORT as REPORT, HOLDS_SCENARIO as HOLDS, TINY_SCENARIO as TINY,
};
use output::report::{RENDER_ERROR, REPORT_HTML};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
/// The browser's window, and so the screenshot's size.
const WINDOW: (u32, u32) = (1280, 2000);

/// Two parameters on a grid: heatmaps.
const SWEEP: &str = r#"
[sweep]
name = "tiny-map"
scenario = "tiny.toml"
seed = 7
reps = 1
[[param]]
key = "tasks.readers.count"
name = "readers"
values = [2, 4]
[[param]]
key = "dists.think.mean"
name = "think_us"
format = "{}us"
values = [200, 1000]
[[figure]]
metric = "wait"
subject = "l/read/readers"
stat = "p99"
"#;

/// An empty directory `report_html/<name>` under the target's tmp
/// directory, kept after the test.
fn fresh_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report_html")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn require_chromium() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/test-deps (it installs Debian's chromium \
         package), as the README's test command does, then the tests again"
    );
}

/// Runs Chromium headless on `page` with `extra` flags; returns stdout
/// and stderr. It must exit 0 within a minute (a hung browser fails the
/// test instead of hanging it).
fn chromium(page: &Path, extra: &[String]) -> (String, String) {
    require_chromium();
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let mut c = Command::new(CHROMIUM);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
    .args(extra)
    .arg(&url)
    .stdin(Stdio::null());
    let out_file = profile.path().join("stdout");
    let err_file = profile.path().join("stderr");
    c.stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&err_file).unwrap());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{CHROMIUM} did not finish with {url} in a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_file).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_file).unwrap_or_default();
    assert!(status.success(), "{CHROMIUM} {url}: {status}\n{stderr}");
    (stdout, stderr)
}

/// The console messages of the page at `page` in Chromium's log, as it
/// prints them with `--enable-logging=stderr`:
/// `[...:INFO:CONSOLE:12] "text", source: file:///.../report.html (12)`
/// (older versions: `CONSOLE(12)`); the browser's own log lines (D-Bus,
/// GPU) are not the page's.
fn console_lines(stderr: &str, page: &Path) -> Vec<String> {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && l.contains(&format!("source: {url}")))
        .map(String::from)
        .collect()
}

/// The PNG at `path`: its size and the share of pixels that are not
/// near white, and how many distinct colours it has.
fn png_stats(path: &Path) -> ((u32, u32), f64, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{}: {:?}", path.display(), info.color_type);
    let px = &buf[..info.buffer_size()];
    let mut inked = 0usize;
    let mut colours = std::collections::BTreeSet::new();
    let mut n = 0usize;
    for p in px.chunks(channels) {
        n += 1;
        if p[..3].iter().any(|&c| c < 230) {
            inked += 1;
        }
        if colours.len() < 10_000 {
            colours.insert((p[0], p[1], p[2]));
        }
    }
    (
        (info.width, info.height),
        inked as f64 / n as f64,
        colours.len(),
    )
}

/// Opens `dir/report.html` in Chromium, takes `dir/report.png` and the
/// DOM, and checks the page: no console message, the table `table_id`,
/// one `<img>` per PNG of the directory and `svgs` inline charts, and a
/// screenshot of the window's size that is not blank.
fn check_page(dir: &Path, table_id: &str, svgs: usize) {
    let page = dir.join(REPORT_HTML);
    let shot = dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) = chromium(&page, &[format!("--screenshot={}", shot.display())]);
    let console = console_lines(&stderr, &page);
    assert!(
        console.is_empty(),
        "{}: console messages:\n{}",
        page.display(),
        console.join("\n")
    );
    let ((w, h), inked, colours) = png_stats(&shot);
    assert_eq!((w, h), WINDOW, "{}", shot.display());
    assert!(
        inked > 0.03 && colours > 50,
        "{}: looks blank: {:.1}% of pixels inked, {colours} colours",
        shot.display(),
        inked * 100.0
    );
    let (dom, stderr) = chromium(&page, &["--dump-dom".to_string()]);
    assert!(console_lines(&stderr, &page).is_empty(), "{stderr}");
    assert!(
        dom.contains(&format!("<table id=\"{table_id}\">")),
        "{}: no table {table_id}",
        page.display()
    );
    let pngs = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            let n = n.to_string_lossy();
            n.ends_with(".png") && n != "report.png"
        })
        .count();
    assert!(pngs > 0, "{}: no plot to show", dir.display());
    assert_eq!(dom.matches("<img ").count(), pngs, "{}", page.display());
    assert_eq!(
        dom.matches("<svg data-name=").count(),
        svgs,
        "{}",
        page.display()
    );
}

/// Every `src=`, `href=` and `url(` of `html` points into the page
/// itself (a `data:` URI or a fragment), never to the network or a file.
fn assert_self_contained(html: &str, what: &str) {
    for attr in ["src=\"", "href=\"", "url("] {
        for (at, _) in html.match_indices(attr) {
            let v = &html[at + attr.len()..];
            let v = v.trim_start_matches(['\'', '"']);
            assert!(
                v.starts_with("data:") || v.starts_with('#'),
                "{what}: {attr}{} is not inside the page",
                &v[..v.len().min(60)]
            );
        }
    }
    assert!(html.contains("src=\"data:image/png;base64,"), "{what}");
    assert!(!html.contains("<link"), "{what}: a linked resource");
}

fn run_dir(name: &str, args: &[&str]) -> PathBuf {
    let d = fresh_dir(name);
    let mut all = args.to_vec();
    all.extend(["--out", "out"]);
    convoy(&all, &d);
    d.join("out")
}

#[test]
fn a_run_report_renders_every_plot_in_chromium() {
    let out = run_dir(
        "run",
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "2s",
            "--seed",
            "3",
        ],
    );
    check_page(&out, "headline", 0);
    let html = std::fs::read_to_string(out.join(REPORT_HTML)).unwrap();
    assert!(
        html.contains("<table id=\"ratios\">"),
        "after/before ratios"
    );
    assert!(html.contains("<table id=\"manifest\">"));
    assert!(html.contains("Not computed for this run"), "no blame asked");
    assert_self_contained(&html, "run report");
}

#[test]
fn the_rmdir_cost_report_has_its_bar_chart_and_blame_chains() {
    let out = run_dir(
        "rmdir-cost",
        &["run", "rmdir-cost", "--duration", "50ms", "--blame"],
    );
    check_page(&out, "headline", 1);
    let html = std::fs::read_to_string(out.join(REPORT_HTML)).unwrap();
    assert!(html.contains("data-name=\"mean-span-rmdir-bench\""));
    // Seven kernel states, each bar labelled with its mean.
    for v in [
        "base",
        "guard",
        "notify",
        "root-reuse",
        "inode-inited",
        "inode-requested",
        "watchers-shortcut",
    ] {
        assert!(html.contains(&format!(">\n{v}\n</text>")), "bar {v}");
    }
    assert!(html.contains("blame (base, replication 0)"), "blame chains");
    assert!(!html.contains("Not computed for this run"));
}

#[test]
fn a_sweep_report_and_a_check_report_render_in_chromium() {
    let d = fresh_dir("sweep");
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    std::fs::write(d.join("sweep.toml"), SWEEP).unwrap();
    convoy(&["sweep", "sweep.toml", "--out", "out"], &d);
    check_page(&d.join("out"), "points", 0);
    let html = std::fs::read_to_string(d.join("out").join(REPORT_HTML)).unwrap();
    // A heatmap per variant, and the second's ratio to the first.
    for name in [
        "p99_ns-base.png",
        "p99_ns-fifo.png",
        "p99_ns-fifo-vs-base.png",
    ] {
        assert!(html.contains(&format!("_{name}\"")), "heatmap {name}");
    }
    assert_self_contained(&html, "sweep report");

    let d = fresh_dir("check");
    std::fs::write(d.join("holds.toml"), HOLDS).unwrap();
    std::fs::write(d.join("r.toml"), REPORT).unwrap();
    let o = convoy(&["check", "r.toml", "--out", "out", "--jobs", "1"], &d);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("  report.html\n"), "listed: {stdout}");
    check_page(&d.join("out"), "points", 0);
    let html = std::fs::read_to_string(d.join("out").join(REPORT_HTML)).unwrap();
    assert!(html.contains("<h2 id=\"verdict\">"));
    assert!(html.contains("blame: a representative run"), "blame chain");
    assert_self_contained(&html, "check report");
}

#[test]
fn a_corrupted_image_is_a_console_error() {
    let out = run_dir(
        "broken",
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "1s",
            "--variant",
            "base",
        ],
    );
    let page = out.join(REPORT_HTML);
    let html = std::fs::read_to_string(&page).unwrap();
    let at = html.find("data:image/png;base64,").unwrap() + 22;
    let alt_at = html[..at].rfind("alt=\"").unwrap() + 5;
    let name = &html[alt_at..alt_at + html[alt_at..].find('"').unwrap()];
    // The PNG signature and header replaced by bytes no decoder takes.
    let broken = format!("{}AAAAAAAAAAAAAAAAAAAA{}", &html[..at], &html[at + 20..]);
    std::fs::write(&page, broken).unwrap();
    let (_, stderr) = chromium(
        &page,
        &[format!("--screenshot={}", out.join("report.png").display())],
    );
    let console = console_lines(&stderr, &page);
    let want = format!("{RENDER_ERROR}{name}");
    assert!(
        console.iter().any(|l| l.contains(&want)),
        "no `{want}` among the console messages:\n{}\n(stderr: {stderr})",
        console.join("\n")
    );
    assert_eq!(console.len(), 1, "only the broken image: {console:?}");
}

#[test]
fn a_report_is_the_same_bytes_for_the_same_seed_in_two_directories() {
    let args = ["run", "rmdir-cost", "--duration", "20ms", "--seed", "5"];
    let a = run_dir("same-a", &args);
    let d = fresh_dir("same-b");
    let mut all = args.to_vec();
    all.extend(["--out", "elsewhere/deeper"]);
    convoy(&all, &d);
    let b = d.join("elsewhere/deeper");
    let (ra, rb) = (
        std::fs::read(a.join(REPORT_HTML)).unwrap(),
        std::fs::read(b.join(REPORT_HTML)).unwrap(),
    );
    assert!(
        ra == rb,
        "report.html differs between {} and {}",
        a.display(),
        b.display()
    );
    // And a sweep's, run twice into two directories.
    let pages: Vec<Vec<u8>> = ["sweep-a", "sweep-b"]
        .iter()
        .map(|n| {
            let d = fresh_dir(n);
            std::fs::write(d.join("tiny.toml"), TINY).unwrap();
            std::fs::write(d.join("sweep.toml"), SWEEP).unwrap();
            convoy(&["sweep", "sweep.toml", "--out", n], &d);
            std::fs::read(d.join(n).join(REPORT_HTML)).unwrap()
        })
        .collect();
    assert!(
        pages[0] == pages[1],
        "a sweep's report.html differs between two directories"
    );
}

#[test]
fn a_report_that_cannot_be_written_fails_the_run_and_names_it() {
    let d = fresh_dir("fail");
    let o = crate::common::convoy_env(
        &[
            "run",
            "writer-parks-readers",
            "--duration",
            "1s",
            "--out",
            "out",
        ],
        &d,
        &[(output::files::FAIL_WRITE_ENV, REPORT_HTML)],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("out/report.html"), "{err}");
    assert!(!d.join("out").exists(), "nothing written");
}

#[test]
fn ci_runs_the_readme_test_command_which_installs_chromium_first() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let command = "scripts/test-deps && cargo test --workspace";
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme
            .lines()
            .any(|l| l.starts_with(&format!("{command} "))),
        "README.md: no line with the test command `{command}`"
    );
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert_eq!(ci.trim_end().lines().last(), Some(command), ".ci/run");
    let deps = std::fs::read_to_string(root.join("scripts/test-deps")).unwrap();
    for part in ["packages=\"chromium\"", "apt-get install -y -q $packages"] {
        assert!(deps.contains(part), "scripts/test-deps: no `{part}`");
    }
}
