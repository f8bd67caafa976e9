//! A small SVG line-plot writer: panels of lines (a method's mean over seeds, with
//! a ±std band), coloured from a palette that does not repeat within a panel,
//! round-number ticks with light gridlines, axis labels and a legend that fits.

use std::fmt::Write;

/// One line of a panel.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// (x, y) points; non-finite points are skipped.
    pub points: Vec<(f64, f64)>,
    /// A shaded band (x, low, high) around the line (mean ± std over seeds); empty
    /// for none.
    pub band: Vec<(f64, f64, f64)>,
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

/// Tableau's 10 colours, then 10 darker or lighter companions: 20 lines per panel
/// before a colour repeats (and past that the dash pattern changes).
const COLORS: [&str; 20] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ff9896", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#393b79", "#637939", "#843c39",
];

/// Round-number ticks covering [lo, hi]: steps of 1, 2 or 5 × 10ᵏ, about `n` of them.
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&st| st >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    (first as i64..=last as i64)
        .map(|k| k as f64 * step)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect()
}

/// A tick label without trailing noise ("0.25", "1e-3", "2000").
fn tick_label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e5 || v.abs() < 1e-3 {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

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
///
/// A label keeps one colour across the panels (methods in order of first
/// appearance), so a method reads the same in every small multiple.
pub fn render(title: &str, panels: &[Panel]) -> String {
    let size = (540.0, 330.0);
    let mut labels: Vec<&str> = Vec::new();
    for se in panels.iter().flat_map(|p| &p.series) {
        if !labels.contains(&se.label.as_str()) {
            labels.push(&se.label);
        }
    }
    let colour_of = |label: &str| labels.iter().position(|l| *l == label).unwrap_or(0);
    grid_document(title, panels.len(), size, |s, k, ox, oy| {
        panel(s, &panels[k], (ox, oy), size, &colour_of)
    })
}

/// A label cut to `n` characters (with an ellipsis) so the legend fits.
fn fit(label: &str, n: usize) -> String {
    if label.chars().count() <= n {
        label.to_string()
    } else {
        let cut: String = label.chars().take(n - 1).collect();
        format!("{cut}…")
    }
}

fn panel(
    s: &mut String,
    p: &Panel,
    (ox, oy): (f64, f64),
    (pw, ph): (f64, f64),
    colour_of: &dyn Fn(&str) -> usize,
) {
    let (l, r, t, b) = (ox + 62.0, ox + pw - 170.0, oy + 28.0, oy + ph - 42.0);
    let tf = |y: f64| if p.log_y { y.log10() } else { y };
    let finite = |(x, y): (f64, f64)| x.is_finite() && y.is_finite();
    let pts: Vec<(f64, f64)> = p
        .series
        .iter()
        .flat_map(|se| {
            let line = se.points.iter().map(|&(x, y)| (x, tf(y)));
            let band = se
                .band
                .iter()
                .flat_map(|&(x, lo, hi)| [(x, tf(lo)), (x, tf(hi))]);
            line.chain(band).collect::<Vec<_>>()
        })
        .filter(|&q| finite(q))
        .collect();
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
        (l + r) / 2.0,
        oy + 16.0,
        escape(&p.title)
    );
    if pts.is_empty() {
        let _ = writeln!(
            s,
            r#"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="black"/>"#,
            r - l,
            b - t
        );
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
    let pad = 0.04 * (y1 - y0);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let sx = |x: f64| l + (x - x0) / (x1 - x0) * (r - l);
    let sy = |y: f64| b - (y - y0) / (y1 - y0) * (b - t);
    // Gridlines and ticks: round numbers, or whole decades on a log axis (with 2
    // and 5 between when the axis spans under two decades).
    let yticks: Vec<f64> = if p.log_y {
        let decades: Vec<f64> = (y0.ceil() as i64..=y1.floor() as i64)
            .map(|k| k as f64)
            .collect();
        let fine: Vec<f64> = (y0.floor() as i64..=y1.ceil() as i64)
            .flat_map(|k| [1.0, 2.0, 5.0].map(|m: f64| k as f64 + m.log10()))
            .filter(|&v| v >= y0 && v <= y1)
            .collect();
        if decades.len() >= 3 {
            decades
        } else if fine.len() >= 3 {
            fine
        } else {
            // Under a factor of ten: round numbers of the values themselves.
            nice_ticks(10f64.powf(y0), 10f64.powf(y1), 4)
                .into_iter()
                .filter(|&v| v > 0.0)
                .map(f64::log10)
                .collect()
        }
    } else {
        nice_ticks(y0, y1, 5)
    };
    for &fy in &yticks {
        let yv = sy(fy);
        let label = if p.log_y {
            tick_label(10f64.powf(fy))
        } else {
            tick_label(fy)
        };
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{yv:.1}" x2="{r}" y2="{yv:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end">{label}</text>"##,
            l - 4.0,
            yv + 4.0
        );
    }
    for fx in nice_ticks(x0, x1, 5) {
        let xv = sx(fx);
        let _ = writeln!(
            s,
            r##"<line x1="{xv:.1}" y1="{t}" x2="{xv:.1}" y2="{b}" stroke="#e4e4e4"/><text x="{xv:.1}" y="{}" text-anchor="middle">{}</text>"##,
            b + 14.0,
            tick_label(fx)
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        r - l,
        b - t
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (l + r) / 2.0,
        b + 30.0,
        escape(&p.x_label)
    );
    let y_label = if p.log_y {
        format!("{} (log scale)", p.title)
    } else {
        p.title.clone()
    };
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>"#,
        ox + 14.0,
        (t + b) / 2.0,
        ox + 14.0,
        (t + b) / 2.0,
        escape(&fit(y_label.split(" — ").next().unwrap_or(""), 40))
    );
    // The legend: one entry per line, spaced to fit the panel's height.
    let n = p.series.len().max(1);
    let spacing = ((b - t) / n as f64).min(14.0);
    let font = spacing.clamp(6.0, 11.0);
    for (i, se) in p.series.iter().enumerate() {
        let colour = colour_of(&se.label);
        let c = COLORS[colour % COLORS.len()];
        let dash = if colour < COLORS.len() {
            ""
        } else {
            r#" stroke-dasharray="4 2""#
        };
        if !se.band.is_empty() {
            let upper = se
                .band
                .iter()
                .map(|&(x, _, hi)| (x, tf(hi)))
                .filter(|&q| finite(q));
            let lower: Vec<(f64, f64)> = se
                .band
                .iter()
                .map(|&(x, lo, _)| (x, tf(lo)))
                .filter(|&q| finite(q))
                .collect();
            let outline: Vec<String> = upper
                .chain(lower.into_iter().rev())
                .map(|(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                .collect();
            let _ = writeln!(
                s,
                r#"<polygon fill="{c}" fill-opacity="0.18" stroke="none" points="{}"/>"#,
                outline.join(" ")
            );
        }
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| (x, tf(y)))
            .filter(|&q| finite(q))
            .map(|(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{c}" stroke-width="1.6"{dash} points="{}"/>"#,
                path.join(" ")
            );
        }
        let ly = t + 6.0 + spacing * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly:.1}" x2="{}" y2="{ly:.1}" stroke="{c}" stroke-width="2.5"{dash}/><text x="{}" y="{:.1}" font-size="{font:.0}">{}</text>"#,
            r + 6.0,
            r + 20.0,
            r + 24.0,
            ly + font * 0.35,
            escape(&fit(&se.label, 26))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_numbers_inside_the_range() {
        for (lo, hi) in [
            (0.0, 1.0),
            (0.0137, 0.0921),
            (-3.2, 7.9),
            (1.0, 5000.0),
            (0.5, 0.5000001),
        ] {
            let t = nice_ticks(lo, hi, 5);
            assert!((2..=11).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(
                t.iter().all(|&v| v >= lo - 1e-12 && v <= hi + 1e-12),
                "{t:?}"
            );
            let step = t[1] - t[0];
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6),
                "{lo}..{hi}: step {step}"
            );
        }
        let t = nice_ticks(0.0, 1.0, 5);
        let want = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
        assert_eq!(t.len(), want.len());
        assert!(
            t.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{t:?}"
        );
        assert_eq!(tick_label(t[3]), "0.6");
    }

    #[test]
    fn a_panel_draws_its_bands_lines_and_legend() {
        let series = (0..25)
            .map(|i| Series {
                label: format!("method number {i} with a long name"),
                points: vec![(0.0, i as f64), (1.0, i as f64 + 1.0)],
                band: vec![
                    (0.0, i as f64 - 0.5, i as f64 + 0.5),
                    (1.0, i as f64, i as f64 + 2.0),
                ],
            })
            .collect();
        let svg = render(
            "t",
            &[Panel {
                title: "loss".into(),
                x_label: "step".into(),
                log_y: false,
                series,
            }],
        );
        assert_eq!(svg.matches("<polygon").count(), 25);
        assert_eq!(svg.matches("<polyline").count(), 25);
        // Past 20 colours the dash pattern tells lines apart; long labels are cut.
        assert_eq!(svg.matches("stroke-dasharray").count(), 2 * 5);
        assert!(svg.contains("method number 0 with a lo…"));
    }
}
