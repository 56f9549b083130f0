//! `report.html`: one page per run, sweep or check directory that a
//! browser opens with no network and no other file: tables as HTML, the
//! plots embedded as `data:` PNGs, drawn charts as inline SVG, the CSS and
//! a small checking script inline.
//!
//! The page is made from what the directory's other files already hold
//! (the headline rows of [`crate::terminal::headline`], the plots, the
//! manifest or sweep header), and holds no time or path of the machine
//! that wrote it: the same scenario and seed give the same bytes.

use crate::files::{write_atomic_with, WriteError};
use crate::plots::{color, font, PlotError};
use crate::results::{ExperimentResult, Metric};
use crate::sweep_table::SweepHeader;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub const REPORT_HTML: &str = "report.html";

/// The text a page logs (`console.error`) for an image that a browser
/// could not render; the browser test looks for it.
pub const RENDER_ERROR: &str = "convoy-report: image did not render: ";

/// Most rows of a sweep's points shown in its page; `points.csv` has all.
pub const MAX_POINT_ROWS: usize = 500;

const STYLE: &str = "body{font-family:sans-serif;margin:16px auto;max-width:1240px;color:#222;background:#fff}\
h1{font-size:22px;margin:4px 0 8px}h2{font-size:18px;margin:22px 0 6px;border-bottom:1px solid #ccc}\
p{margin:4px 0 8px}table{border-collapse:collapse;font-size:12px;margin:4px 0 10px}\
th,td{border:1px solid #ccc;padding:2px 6px;vertical-align:top}th{background:#eee;text-align:left}\
td.n{text-align:right;font-family:monospace}td.t{font-family:monospace;white-space:pre-wrap;word-break:break-all}\
pre{background:#f6f6f6;border:1px solid #ddd;padding:6px;font-size:12px;overflow-x:auto}\
.figs{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}\
figure{margin:0}figure img,figure svg{width:100%;height:auto;border:1px solid #ddd}\
figcaption{font-size:12px;color:#555}";

/// On load: every image must have decoded to a picture with a width, and
/// every drawn chart must take space; each one that did not is a console
/// error naming it.
const SCRIPT: &str = "window.addEventListener('load',function(){\
document.querySelectorAll('img').forEach(function(i){\
if(!(i.complete&&i.naturalWidth>0))console.error('convoy-report: image did not render: '+i.alt);});\
document.querySelectorAll('svg[data-name]').forEach(function(s){var b=s.getBoundingClientRect();\
if(!(b.width>0&&b.height>0))console.error('convoy-report: image did not render: '+s.getAttribute('data-name'));});});";

/// `s` with the characters HTML gives a meaning escaped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page being built, section by section. Embedded PNGs stay files
/// until the page is written, which streams them in: a run's plots are
/// megabytes, and a page held whole in memory was the largest part of a
/// built-in run's peak (docs/findings/2026-12-04-memory-of-a-run.md).
pub struct Page {
    title: String,
    /// The text so far, after the last of `parts`.
    body: String,
    /// Text and PNG files, in page order, before `body`.
    parts: Vec<Part>,
    /// Inside a `<div class="figs">` (figures side by side).
    in_figs: bool,
}

/// A piece of a page: text, or a PNG file embedded when the page is
/// written.
enum Part {
    Text(String),
    Png { name: String, path: PathBuf },
}

impl Page {
    pub fn new(title: &str) -> Page {
        let mut p = Page {
            title: title.to_string(),
            body: String::new(),
            parts: Vec::new(),
            in_figs: false,
        };
        let _ = writeln!(p.body, "<h1>{}</h1>", escape(title));
        p
    }

    fn close_figs(&mut self) {
        if self.in_figs {
            self.body.push_str("</div>\n");
            self.in_figs = false;
        }
    }

    fn open_figs(&mut self) {
        if !self.in_figs {
            self.body.push_str("<div class=\"figs\">\n");
            self.in_figs = true;
        }
    }

    /// A section heading; its id is the first word, lower case
    /// (`#plots`, `#blame`), a place to link to.
    pub fn heading(&mut self, text: &str) {
        self.close_figs();
        let id: String = (text.split([' ', ':']).next().unwrap_or(""))
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        let _ = writeln!(self.body, "<h2 id=\"{id}\">{}</h2>", escape(text));
    }

    pub fn para(&mut self, text: &str) {
        self.close_figs();
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// Text as the terminal shows it (a verdict, a blame chain).
    pub fn pre(&mut self, text: &str) {
        self.close_figs();
        let _ = writeln!(self.body, "<pre>{}</pre>", escape(text.trim_end()));
    }

    /// A table: the first row is the header; the first `left` columns are
    /// names, the others figures (right-aligned).
    pub fn table(&mut self, id: &str, rows: &[Vec<String>], left: usize) {
        self.close_figs();
        let Some((head, rest)) = rows.split_first() else {
            return;
        };
        let _ = write!(self.body, "<table id=\"{}\">\n<tr>", escape(id));
        for h in head {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body.push_str("</tr>\n");
        for row in rest {
            self.body.push_str("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let class = if i < left { "" } else { " class=\"n\"" };
                let _ = write!(self.body, "<td{class}>{}</td>", escape(cell));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// Name and value pairs, the values as written (monospace).
    pub fn key_values(&mut self, id: &str, rows: &[(String, String)]) {
        self.close_figs();
        let _ = writeln!(
            self.body,
            "<table id=\"{}\">\n<tr><th>field</th><th>value</th></tr>",
            escape(id)
        );
        for (k, v) in rows {
            let _ = writeln!(
                self.body,
                "<tr><td>{}</td><td class=\"t\">{}</td></tr>",
                escape(k),
                escape(v)
            );
        }
        self.body.push_str("</table>\n");
    }

    /// A PNG file, embedded when the page is written (read then, in
    /// pieces); `name` is its file name beside the page (the caption and
    /// the image's `alt`).
    pub fn png_file(&mut self, name: &str, path: &Path) {
        self.open_figs();
        let text = std::mem::take(&mut self.body);
        self.parts.push(Part::Text(text));
        self.parts.push(Part::Png {
            name: name.to_string(),
            path: path.to_path_buf(),
        });
    }

    /// An SVG document drawn for the page, inline, named `name`.
    pub fn svg(&mut self, name: &str, caption: &str, svg: &str) {
        self.open_figs();
        let body = svg
            .trim_start_matches(|c| c != '<')
            .trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
            .trim_start();
        let body = match body.strip_prefix("<svg") {
            Some(rest) => format!("<svg data-name=\"{}\"{rest}", escape(name)),
            None => body.to_string(),
        };
        let _ = writeln!(
            self.body,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            body.trim_end(),
            escape(caption)
        );
    }

    /// Writes the whole page to `w`, each PNG read from its file and
    /// encoded as it goes.
    pub fn write_to(mut self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.close_figs();
        write!(
            w,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n<script>{SCRIPT}</script>\n</head>\n\
             <body>\n",
            escape(&self.title)
        )?;
        for part in &self.parts {
            match part {
                Part::Text(t) => w.write_all(t.as_bytes())?,
                Part::Png { name, path } => embed_png(w, name, path)?,
            }
        }
        w.write_all(self.body.as_bytes())?;
        w.write_all(b"</body>\n</html>\n")
    }

    /// The whole page, in memory.
    #[cfg(test)]
    fn html(self) -> std::io::Result<String> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(String::from_utf8(out).expect("the page is written as UTF-8"))
    }

    /// Writes the page as `dir/report.html`, atomically.
    pub fn write(self, dir: &Path) -> Result<(), WriteError> {
        write_atomic_with(dir, REPORT_HTML, |w| self.write_to(w))
    }
}

/// One `<figure>` with the PNG at `path` as a `data:` URI, encoded from
/// the file in pieces.
fn embed_png(w: &mut dyn std::io::Write, name: &str, path: &Path) -> std::io::Result<()> {
    use base64::write::EncoderWriter;
    let mut file = std::fs::File::open(path).map_err(|e| cannot_read(path, e))?;
    write!(
        w,
        "<figure><img alt=\"{}\" src=\"data:image/png;base64,",
        escape(name)
    )?;
    let mut enc = EncoderWriter::new(&mut *w, &base64::engine::general_purpose::STANDARD);
    std::io::copy(&mut file, &mut enc).map_err(|e| cannot_read(path, e))?;
    let w = enc.finish()?;
    writeln!(w, "\"><figcaption>{}</figcaption></figure>", escape(name))
}

fn cannot_read(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
}

/// A JSON value as (dotted name, value) rows: objects by field name
/// (sorted, whatever order serde_json's map keeps), arrays by index;
/// long texts (a resolved scenario) are left to [`long_texts`].
pub fn flatten_json(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let name = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            let mut fields: Vec<_> = m.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in fields {
                flatten_json(&name(k), v, out);
            }
        }
        Value::Array(a) if a.is_empty() => out.push((prefix.to_string(), "[]".into())),
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten_json(&format!("{prefix}[{i}]"), v, out);
            }
        }
        Value::String(s) if s.contains('\n') => {
            out.push((prefix.to_string(), "(below)".into()));
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The multi-line texts of a JSON value (a resolved scenario's TOML), by
/// dotted name, in order.
pub fn long_texts(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut fields: Vec<_> = m.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            for (k, v) in fields {
                let n = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                long_texts(&n, v, out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                long_texts(&format!("{prefix}[{i}]"), v, out);
            }
        }
        Value::String(s) if s.contains('\n') => out.push((prefix.to_string(), s.clone())),
        _ => {}
    }
}

/// A section of a serializable record (a manifest, a sweep header): one
/// row per field, then its multi-line texts.
pub fn record_section<T: serde::Serialize>(page: &mut Page, heading: &str, id: &str, record: &T) {
    let v = serde_json::to_value(record).expect("records serialize");
    let mut rows = Vec::new();
    flatten_json("", &v, &mut rows);
    page.heading(heading);
    page.key_values(id, &rows);
    let mut texts = Vec::new();
    long_texts("", &v, &mut texts);
    for (name, text) in texts {
        page.para(&format!("{name}:"));
        page.pre(&text);
    }
}

/// The headline section of a run: [`crate::terminal::headline`]'s rows
/// as tables, and the note on waits still going on at the end.
pub fn headline_section(page: &mut Page, r: &ExperimentResult, above: &[sim::Dur]) {
    let h = crate::terminal::headline(r, above);
    page.heading("Headline");
    page.para(
        "Per lock wait and span: count, percentiles, max and the exact number of \
         samples longer than each threshold (- when not counted).",
    );
    page.table("headline", &h.table, 3);
    if let Some((base, rows)) = &h.ratios {
        page.para(&crate::terminal::ratio_legend(base));
        page.table("ratios", rows, 3);
    }
    let open = crate::terminal::open_waits_note(r);
    if !open.is_empty() {
        page.pre(&open);
    }
}

/// The sections of a sweep directory: its points (`present` of them) as
/// a table (at most [`MAX_POINT_ROWS`] rows), its plots, its header.
pub fn sweep_sections(
    page: &mut Page,
    h: &SweepHeader,
    present: usize,
    points_csv: &[u8],
    plots: &[PathBuf],
    plot_note: &str,
) {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(points_csv);
    for rec in rd.records().flatten() {
        rows.push(rec.iter().map(String::from).collect());
    }
    let total = rows.len().saturating_sub(1);
    page.heading("Points");
    page.para(&format!(
        "{present} of {} point(s) present; a row holds one point's figures for one \
         variant (points.csv).",
        h.points
    ));
    if total > MAX_POINT_ROWS {
        page.para(&format!(
            "The first {MAX_POINT_ROWS} rows; points.csv has all {total}."
        ));
        rows.truncate(MAX_POINT_ROWS + 1);
    }
    page.table("points", &rows, 0);
    page.heading("Plots");
    plots_section(page, plots, plot_note);
    record_section(page, "Sweep (sweep.json)", "header", h);
}

/// The plots, embedded, or why there are none (under a heading the
/// caller writes): the PNG files among `files` (a run's or sweep's plots,
/// as written), read when the page is written.
pub fn plots_section(page: &mut Page, files: &[PathBuf], note: &str) {
    if !note.is_empty() {
        page.para(note);
    }
    for f in files {
        if f.extension().is_some_and(|e| e == "png") {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            page.png_file(&name.unwrap_or_default(), f);
        }
    }
}

/// A bar chart of the mean of `metric` `subject` per variant, in
/// microseconds, each bar labelled with its value: case 1's rmdir cost
/// per kernel state, as docs/cases.md tabulates it. Inline SVG text;
/// `None` when no variant has the subject.
pub fn mean_bars_svg(
    r: &ExperimentResult,
    metric: Metric,
    subject: &str,
) -> Result<Option<String>, PlotError> {
    let bars: Vec<(&str, f64)> = (r.variants.iter())
        .filter_map(|v| {
            let s = v.series(metric, subject)?;
            (s.hist.count() > 0).then(|| (v.variant.as_str(), s.hist.mean().as_nanos_f64() / 1e3))
        })
        .collect();
    if bars.is_empty() {
        return Ok(None);
    }
    font()?;
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max) * 1.15;
    let err = |e: String| PlotError::Draw {
        path: REPORT_HTML.into(),
        message: e,
    };
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (1000, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let n = bars.len();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{}: mean {subject} per variant", r.experiment),
                ("sans-serif", 26),
            )
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top.max(1e-3))
            .map_err(|e| err(e.to_string()))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                    bars[i as usize].0.to_string()
                } else {
                    String::new()
                }
            })
            .y_desc(format!("mean {subject} (us)"))
            .label_style(("sans-serif", 18))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let x = i as f64;
                Rectangle::new([(x - 0.35, 0.0), (x + 0.35, *v)], color(0).filled())
            }))
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                let style = TextStyle::from(("sans-serif", 20).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Bottom));
                Text::new(format!("{v:.3}"), (i as f64, v + top * 0.01), style)
            }))
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_is_read_when_the_page_is_written() {
        let d = tempfile::tempdir().unwrap();
        let png = d.path().join("a.png");
        std::fs::write(&png, b"foobar").unwrap();
        let mut p = Page::new("t");
        plots_section(&mut p, &[png.clone(), d.path().join("a.svg")], "");
        p.para("after");
        let html = p.html().unwrap();
        let img = "<figure><img alt=\"a.png\" src=\"data:image/png;base64,Zm9vYmFy\">";
        assert!(html.contains(img), "{html}");
        assert!(html.find(img) < html.find("<p>after</p>"));
        assert_eq!(html.matches("<img").count(), 1);
        // A file gone by the time the page is written: an error naming it.
        let mut p = Page::new("t");
        plots_section(&mut p, &[d.path().join("gone.png")], "");
        let e = p.html().unwrap_err().to_string();
        assert!(e.contains("cannot read") && e.contains("gone.png"), "{e}");
    }

    #[test]
    fn text_is_escaped_everywhere() {
        let mut p = Page::new("a<b");
        p.para("x & y");
        p.table("t", &[vec!["<th>".into()], vec!["\"q\"".into()]], 1);
        p.pre("</pre><script>");
        let html = p.html().unwrap();
        assert!(html.contains("<h1>a&lt;b</h1>"));
        assert!(html.contains("x &amp; y"));
        assert!(html.contains("<th>&lt;th&gt;</th>"));
        assert!(html.contains("&quot;q&quot;"));
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
        assert_eq!(html.matches("<script>").count(), 1);
    }

    #[test]
    fn json_records_flatten_to_dotted_rows() {
        let v = serde_json::json!({"seed": 3, "m": {"cpus": null, "s": [{"n": "a"}]},
            "e": [], "toml": "a = 1\nb = 2\n"});
        let mut rows = Vec::new();
        flatten_json("", &v, &mut rows);
        let got: Vec<(&str, &str)> = rows.iter().map(|(a, b)| (&a[..], &b[..])).collect();
        assert_eq!(
            got,
            [
                ("e", "[]"),
                ("m.cpus", "null"),
                ("m.s[0].n", "a"),
                ("seed", "3"),
                ("toml", "(below)")
            ]
        );
        let mut texts = Vec::new();
        long_texts("", &v, &mut texts);
        assert_eq!(texts, [("toml".to_string(), "a = 1\nb = 2\n".to_string())]);
    }
}
