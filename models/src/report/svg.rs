//! A small SVG line-plot writer: one panel per metric, one line per series.

use std::fmt::Write;

/// One line of a panel.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
}

/// A panel: a title, axis labels, a log-scale option and its lines.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Title above the panel.
    pub title: String,
    /// Label of the horizontal axis.
    pub x_label: String,
    /// Plot log₁₀ y.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Text made safe for SVG.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An SVG document with `title` on top and `count` panels of `pw × ph`, two per
/// row on a white background; `draw(s, k, ox, oy)` writes panel `k` at (ox, oy).
pub(crate) fn grid_document(
    title: &str,
    count: usize,
    (pw, ph): (f64, f64),
    mut draw: impl FnMut(&mut String, usize, f64, f64),
) -> String {
    let cols = count.clamp(1, 2);
    let rows = count.div_ceil(2).max(1);
    let (w, h) = (pw * cols as f64, ph * rows as f64 + 40.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        w / 2.0,
        escape(title)
    );
    for k in 0..count {
        draw(&mut s, k, (k % 2) as f64 * pw, 40.0 + (k / 2) as f64 * ph);
    }
    s.push_str("</svg>\n");
    s
}

/// Renders the panels side by side (two per row) as an SVG document.
pub fn render(title: &str, panels: &[Panel]) -> String {
    let size = (460.0, 320.0);
    grid_document(title, panels.len(), size, |s, k, ox, oy| {
        panel(s, &panels[k], ox, oy, size.0, size.1)
    })
}

fn panel(s: &mut String, p: &Panel, ox: f64, oy: f64, pw: f64, ph: f64) {
    let (l, r, t, b) = (ox + 60.0, ox + pw - 130.0, oy + 25.0, oy + ph - 40.0);
    let tf = |y: f64| if p.log_y { y.log10() } else { y };
    let pts: Vec<(f64, f64)> = p
        .series
        .iter()
        .flat_map(|se| se.points.iter().map(|&(x, y)| (x, tf(y))))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
        (l + r) / 2.0,
        oy + 15.0,
        escape(&p.title)
    );
    let _ = writeln!(
        s,
        r#"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        r - l,
        b - t
    );
    if pts.is_empty() {
        return;
    }
    let (mut x0, mut x1) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, c), &(x, _)| (a.min(x), c.max(x)));
    let (mut y0, mut y1) = pts
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, c), &(_, y)| (a.min(y), c.max(y)));
    if x1 - x0 < 1e-12 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    if y1 - y0 < 1e-12 {
        y0 -= 0.5;
        y1 += 0.5;
    }
    let sx = |x: f64| l + (x - x0) / (x1 - x0) * (r - l);
    let sy = |y: f64| b - (y - y0) / (y1 - y0) * (b - t);
    for i in 0..=4 {
        let fy = y0 + (y1 - y0) * i as f64 / 4.0;
        let label = if p.log_y {
            format!("{:.3}", 10f64.powf(fy))
        } else {
            format!("{fy:.4}")
        };
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#,
            l - 4.0,
            sy(fy) + 4.0
        );
        let fx = x0 + (x1 - x0) * i as f64 / 4.0;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{fx:.0}</text>"#,
            sx(fx),
            b + 14.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (l + r) / 2.0,
        b + 30.0,
        escape(&p.x_label)
    );
    for (i, se) in p.series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| (x, tf(y)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{}"/>"#,
                path.join(" ")
            );
        }
        let ly = t + 12.0 + 14.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"/>"#,
            r + 6.0,
            r + 20.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            r + 24.0,
            ly + 4.0,
            escape(&se.label)
        );
    }
}
