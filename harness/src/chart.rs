//! `--chart`: bytes per key (x) against lookup throughput (y), as SVG.
//!
//! Drawn with plotters' SVG backend and no font feature: plotters then
//! estimates text extents itself and the SVG names a generic font family for
//! the viewer to render, so no fontconfig/freetype is needed to build.

use std::path::Path;

use plotters::prelude::*;

use crate::record::Record;
use crate::structures::is_ours;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 640;

/// One structure's point: bytes per key (x), millions of lookups per
/// second (y).
#[derive(Clone, Copy)]
struct Point<'a> {
    structure: &'a str,
    /// Answered wrong, or failed in some run.
    wrong: bool,
    x: f64,
    y: f64,
}

impl Point<'_> {
    fn label(&self) -> String {
        let mark = if self.wrong { " ✗" } else { "" };
        format!("{}{mark}", self.structure)
    }
}

/// Renders the chart as an SVG document.
pub(crate) fn render(dataset: &str, machine: &str, records: &[Record]) -> Result<String, String> {
    // A structure that answered wrong, or failed in some run after its
    // lookups were timed, is labelled with a ✗ and drawn hollow: its speed
    // is not that of a working map. (Records of an older `--json` have no
    // `all_correct`: their counters decide.)
    let points: Vec<Point> = records
        .iter()
        .filter_map(|r| {
            Some(Point {
                structure: &r.structure,
                wrong: r.error.is_some()
                    || r.all_correct.or_else(|| r.checks_passed()) == Some(false),
                x: r.bytes_per_key?,
                y: r.lookup_ops_per_s? / 1e6,
            })
        })
        .collect();
    // With nothing to plot (every structure failed before its lookups),
    // the chart says so rather than not being written.
    let x_max = points.iter().map(|p| p.x).fold(1.0, f64::max) * 1.15;
    let y_max = points.iter().map(|p| p.y).fold(0.1, f64::max) * 1.15;
    let err = |e: DrawingAreaErrorKind<_>| format!("drawing the chart: {e}");

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (main, footer) = root.split_vertically(HEIGHT - 24);
        let mut chart = ChartBuilder::on(&main)
            .caption(
                format!("Memory per key vs lookup throughput — {dataset}"),
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("bytes per key (jemalloc stats.allocated ÷ keys) — lower is better")
            .y_desc("lookups per second, millions — higher is better")
            .axis_desc_style(("sans-serif", 15))
            .label_style(("sans-serif", 13))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;

        // Labels go to the first of a few offsets, right of the point before
        // left of it, that stays inside the plot and doesn't collide with a
        // label already placed (approximate boxes, in pixels). Points are
        // labelled from the top down, so close neighbours keep their order.
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        let mut by_height = points.clone();
        by_height.sort_by(|a, b| b.y.total_cmp(&a.y));
        // Start with the points themselves, so that no label covers one.
        let mut placed: Vec<(i32, i32, i32)> = points
            .iter()
            .map(|p| {
                let (px, py) = chart.backend_coord(&(p.x, p.y));
                (px - 6, py - 8, 12)
            })
            .collect();
        let mut elements = Vec::new();
        for point in by_height {
            let (name, x, y) = (point.label(), point.x, point.y);
            let (px, py) = chart.backend_coord(&(x, y));
            let width = 8 * name.chars().count() as i32;
            let offsets = [
                (8, -18),
                (8, 4),
                (8, -34),
                (8, 20),
                (-8 - width, -18),
                (-8 - width, 4),
            ];
            let fits = |&(dx, dy): &(i32, i32)| {
                let (lx, ly) = (px + dx, py + dy);
                let inside = plot_x.start <= lx
                    && lx + width <= plot_x.end
                    && plot_y.start <= ly
                    && ly + 16 <= plot_y.end;
                inside
                    && placed.iter().all(|&(ox, oy, ow)| {
                        lx + width < ox || ox + ow < lx || (ly - oy).abs() >= 16
                    })
            };
            let offset = offsets.iter().copied().find(fits).unwrap_or(offsets[0]);
            placed.push((px + offset.0, py + offset.1, width));
            let color = if is_ours(point.structure) { RED } else { BLUE };
            let style = if point.wrong {
                color.stroke_width(2)
            } else {
                color.filled()
            };
            elements.push(
                EmptyElement::at((x, y))
                    + Circle::new((0, 0), 5, style)
                    + Text::new(name, offset, ("sans-serif", 14).into_font().color(&color)),
            );
        }
        chart.draw_series(elements).map_err(err)?;
        if points.is_empty() {
            chart
                .draw_series([Text::new(
                    "nothing to plot: no structure has both a memory and a lookup figure",
                    (0.05, y_max / 2.0),
                    ("sans-serif", 16).into_font(),
                )])
                .map_err(err)?;
        }
        footer
            .draw(&Text::new(
                format!(
                    "memkv-bench · {machine} · red: memkv, blue: others · ✗, hollow: wrong answers or an error"
                ),
                (16, 4),
                ("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)),
            ))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Renders and writes the chart to `path`.
pub(crate) fn write(
    path: &Path,
    dataset: &str,
    machine: &str,
    records: &[Record],
) -> Result<(), String> {
    let svg = render(dataset, machine, records)?;
    std::fs::write(path, svg).map_err(|e| format!("cannot write chart {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_points_labels_and_title() {
        let rec = |name: &str, bpk: f64, lps: f64| Record {
            structure: name.into(),
            bytes_per_key: Some(bpk),
            lookup_ops_per_s: Some(lps),
            ..Default::default()
        };
        let failed = Record {
            structure: "broken".into(),
            error: Some("x".into()),
            ..Default::default()
        };
        let wrong = Record {
            all_correct: Some(false),
            ..rec("rart", 100.0, 1e6)
        };
        // Failed in one run of three, after its lookups were timed.
        let half_failed = Record {
            error: Some("1 of 3 runs failed; run 2: boom".into()),
            ..rec("hybrid", 10.0, 1e6)
        };
        // From a `--json` written before `all_correct` existed.
        let older = Record {
            lookups: Some(10),
            correct_lookups: Some(10),
            scan_mismatches: Some(3),
            ..rec("vart", 400.0, 1e6)
        };
        let svg = render(
            "sample",
            "cpu",
            &[
                rec("fastart", 30.0, 5e6),
                rec("btreemap", 90.0, 2e6),
                failed,
                wrong,
                half_failed,
                older,
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("fastart") && svg.contains("btreemap"));
        assert!(!svg.contains("broken"), "no figures, no point");
        assert!(svg.contains("Memory per key vs lookup throughput — sample"));
        assert_eq!(svg.matches("<circle").count(), 5);
        for marked in ["rart ✗", "hybrid ✗", "vart ✗"] {
            assert!(svg.contains(marked), "{marked}");
        }
        assert!(!svg.contains("fastart ✗"));
        let hollow = (svg.split("<circle").skip(1))
            .filter(|c| c[..c.find('>').unwrap()].contains("fill=\"none\""))
            .count();
        assert_eq!(hollow, 3, "and hollow");
        let empty = render("s", "m", &[]).unwrap();
        assert!(empty.contains("nothing to plot"), "{empty}");
    }
}
