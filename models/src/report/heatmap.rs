//! SVG heatmaps of a loss over a 2-D slice of parameter space, with a training
//! trajectory drawn on top: the loss-landscape pictures of Li et al. (2018).

use super::svg::escape;
use std::fmt::Write;

/// One heatmap panel.
#[derive(Clone, Debug)]
pub struct Heatmap {
    /// Title above the panel.
    pub title: String,
    /// `values[j][i]` at `(α = alphas[i], β = betas[j])`; non-finite cells are grey.
    pub values: Vec<Vec<f64>>,
    /// Horizontal coordinates of the columns.
    pub alphas: Vec<f64>,
    /// Vertical coordinates of the rows.
    pub betas: Vec<f64>,
    /// The trajectory in (α, β), drawn as a line ending in a dot (the last point).
    pub path: Vec<(f64, f64)>,
}

/// Colour of `t` in [0, 1] on a perceptually ordered dark-to-light ramp (viridis
/// anchors, linearly interpolated).
fn colour(t: f64) -> String {
    const ANCHORS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = t.clamp(0.0, 1.0) * (ANCHORS.len() - 1) as f64;
    let k = (t.floor() as usize).min(ANCHORS.len() - 2);
    let f = t - k as f64;
    let (a, b) = (ANCHORS[k], ANCHORS[k + 1]);
    let mix = |x: f64, y: f64| (x + f * (y - x)).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Renders the heatmaps two per row. Each panel has its own colour scale from its
/// minimum to its 90th percentile (higher values saturate), stated in its legend.
pub fn render(title: &str, maps: &[Heatmap]) -> String {
    let size = (420.0, 400.0);
    super::svg::grid_document(title, maps.len(), size, |s, k, ox, oy| {
        panel(s, &maps[k], ox, oy, size.0, size.1)
    })
}

fn panel(s: &mut String, m: &Heatmap, ox: f64, oy: f64, pw: f64, ph: f64) {
    let (l, t) = (ox + 50.0, oy + 30.0);
    let size = (pw - 90.0).min(ph - 90.0);
    let (r, b) = (l + size, t + size);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
        (l + r) / 2.0,
        oy + 18.0,
        escape(&m.title)
    );
    let mut finite: Vec<f64> = m
        .values
        .iter()
        .flatten()
        .cloned()
        .filter(|v| v.is_finite())
        .collect();
    finite.sort_by(f64::total_cmp);
    let (lo, hi) = match (finite.first(), finite.get(finite.len() * 9 / 10)) {
        (Some(&lo), Some(&hi)) if hi > lo => (lo, hi),
        (Some(&lo), _) => (lo, lo + 1.0),
        _ => (0.0, 1.0),
    };
    let (na, nb) = (m.alphas.len().max(1), m.betas.len().max(1));
    let (cw, ch) = (size / na as f64, size / nb as f64);
    for (j, row) in m.values.iter().enumerate() {
        for (i, &v) in row.iter().enumerate() {
            let fill = if v.is_finite() {
                colour((v - lo) / (hi - lo))
            } else {
                "#bbbbbb".into()
            };
            // Row j = betas[j] from the bottom up.
            let _ = writeln!(
                s,
                r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{fill}"/>"#,
                l + i as f64 * cw,
                b - (j + 1) as f64 * ch,
                cw + 0.3,
                ch + 0.3
            );
        }
    }
    let range = |v: &[f64]| {
        (
            v.first().copied().unwrap_or(-1.0),
            v.last().copied().unwrap_or(1.0),
        )
    };
    let (a0, a1) = range(&m.alphas);
    let (b0, b1) = range(&m.betas);
    // Cell centres sit at the grid coordinates.
    let x = |a: f64| l + cw / 2.0 + (a - a0) / (a1 - a0).max(1e-300) * (size - cw);
    let y = |v: f64| b - ch / 2.0 - (v - b0) / (b1 - b0).max(1e-300) * (size - ch);
    if m.path.len() > 1 {
        let pts: Vec<String> = m
            .path
            .iter()
            .map(|&(a, v)| format!("{:.2},{:.2}", x(a), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="white" stroke-width="1.5"/>"#,
            pts.join(" ")
        );
    }
    if let (Some(&(a, v)), Some(&(sa, sv))) = (m.path.last(), m.path.first()) {
        let _ = writeln!(
            s,
            r#"<circle cx="{:.2}" cy="{:.2}" r="3.5" fill="white" stroke="black"/><circle cx="{:.2}" cy="{:.2}" r="3" fill="none" stroke="white"/>"#,
            x(a),
            y(v),
            x(sa),
            y(sv)
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{l}" y="{t}" width="{size}" height="{size}" fill="none" stroke="black"/>"#
    );
    for (v, anchor, px, py) in [(a0, "start", l, b + 14.0), (a1, "end", r, b + 14.0)] {
        let _ = writeln!(
            s,
            r#"<text x="{px}" y="{py}" text-anchor="{anchor}">{v:.3}</text>"#
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">α (first trajectory PCA direction)</text>"#,
        (l + r) / 2.0,
        b + 28.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">{b0:.3}</text>"#,
        l - 4.0,
        b
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">{b1:.3}</text>"#,
        l - 4.0,
        t + 10.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">β (second direction)</text>"#,
        l - 30.0,
        (t + b) / 2.0,
        l - 30.0,
        (t + b) / 2.0
    );
    // Colour bar.
    let bx = r + 12.0;
    for k in 0..50 {
        let f = k as f64 / 49.0;
        let _ = writeln!(
            s,
            r#"<rect x="{bx}" y="{:.2}" width="10" height="{:.2}" fill="{}"/>"#,
            b - (k + 1) as f64 * size / 50.0,
            size / 50.0 + 0.3,
            colour(f)
        );
    }
    let _ = writeln!(s, r#"<text x="{}" y="{}">{lo:.3}</text>"#, bx + 12.0, b);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}">≥ {hi:.3}</text>"#,
        bx + 12.0,
        t + 8.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heatmap_draws_every_cell_and_the_path() {
        let m = Heatmap {
            title: "t <1>".into(),
            values: vec![vec![0.0, 1.0, f64::NAN], vec![2.0, 3.0, 4.0]],
            alphas: vec![-1.0, 0.0, 1.0],
            betas: vec![-1.0, 1.0],
            path: vec![(-1.0, -1.0), (0.5, 0.2), (0.0, 0.0)],
        };
        let svg = render("landscape", &[m]);
        assert_eq!(svg.matches("<rect").count(), 1 + 6 + 1 + 50);
        assert!(
            svg.contains("#bbbbbb") && svg.contains("<polyline") && svg.contains("t &lt;1&gt;")
        );
        assert_eq!(colour(0.0), "#440154");
        assert_eq!(colour(1.0), "#fde725");
    }
}
