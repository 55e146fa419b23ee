//! The frame every chart shares: title, subtitle, and the legend above the plot area.

use super::*;

#[derive(Clone, Copy)]
pub(super) enum Swatch {
    Line,
    Dashed,
    Box,
}

pub(super) struct LegendItem {
    pub(super) label: String,
    pub(super) color: RGBColor,
    pub(super) swatch: Swatch,
}

/// The chart area under a frame whose header ends at `top`: every chart has the same margins and label
/// areas, so plots of one report line up when viewed one after the other.
pub(super) fn chart_below<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    top: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .margin_top(top)
        .margin_right(30)
        .margin_left(10)
        .margin_bottom(10)
        .x_label_area_size(55)
        .y_label_area_size(95);
    builder
}

/// Fills the background and writes the title, the subtitle and the legend; returns the height they take.
pub(super) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    legend: &[LegendItem],
) -> Result<u32, DrawErr> {
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    root.draw_text(title, &font(22).color(&BLACK), (20, 12))?;
    root.draw_text(subtitle, &font(15).color(&GREY_C), (20, 42))?;
    let label_font = font(15);
    let widths: Vec<u32> = legend
        .iter()
        .map(|i| root.estimate_text_size(&i.label, &label_font).map(|s| s.0))
        .collect::<Result<_, _>>()?;
    let total: u32 = widths.iter().map(|w| w + 36 + 24).sum();
    let sub_w = root.estimate_text_size(subtitle, &font(15))?.0;
    // The legend goes right-aligned on the subtitle's line when both fit, else on its own line.
    let (mut x, y, height) = if 20 + sub_w + 40 + total <= w - 20 {
        ((w - 20 - total) as i32, 50, 68)
    } else {
        (20, 74, 94)
    };
    for (item, tw) in legend.iter().zip(widths) {
        let style = ShapeStyle::from(&item.color).stroke_width(3);
        match item.swatch {
            Swatch::Line => root.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))?,
            Swatch::Dashed => root.draw(&DashedPathElement::new(
                vec![(x, y), (x + 28, y)],
                6,
                4,
                ShapeStyle::from(&item.color).stroke_width(2),
            ))?,
            Swatch::Box => {
                root.draw(&Rectangle::new(
                    [(x, y - 7), (x + 28, y + 7)],
                    item.color.filled(),
                ))?;
                // An outline, so that a pale tint (a mode's extent) shows on white.
                root.draw(&Rectangle::new(
                    [(x, y - 7), (x + 28, y + 7)],
                    darker(&item.color).stroke_width(1),
                ))?
            }
        }
        root.draw_text(
            &item.label,
            &label_font.pos(Pos::new(HPos::Left, VPos::Center)),
            (x + 36, y),
        )?;
        x += (36 + tw + 24) as i32;
    }
    Ok(height)
}

/// Places labels in pixel space without overlapping each other: returns for each wanted position
/// (x, y, anchor) the top-left corner of its box.
pub(super) struct LabelPlacer {
    taken: Vec<(i32, i32, i32, i32)>,
}

impl LabelPlacer {
    pub(super) fn new() -> Self {
        LabelPlacer { taken: Vec::new() }
    }

    pub(super) fn free(&self, r: (i32, i32, i32, i32)) -> bool {
        self.taken
            .iter()
            .all(|t| r.2 <= t.0 || r.0 >= t.2 || r.3 <= t.1 || r.1 >= t.3)
    }

    /// The first of `candidates` (top-left corners) where a `w`x`h` box is free and inside `bounds`
    /// (or the first candidate when none is), taken.
    pub(super) fn place(
        &mut self,
        candidates: &[(i32, i32)],
        (w, h): (i32, i32),
        bounds: &(Range<i32>, Range<i32>),
    ) -> (i32, i32) {
        let clamp = |(x, y): (i32, i32)| {
            (
                x.clamp(
                    bounds.0.start + 2,
                    (bounds.0.end - w - 2).max(bounds.0.start + 2),
                ),
                y.clamp(
                    bounds.1.start + 2,
                    (bounds.1.end - h - 2).max(bounds.1.start + 2),
                ),
            )
        };
        let inside = |&(x, y): &(i32, i32)| {
            x > bounds.0.start && x + w < bounds.0.end && y > bounds.1.start && y + h < bounds.1.end
        };
        let chosen = candidates
            .iter()
            .copied()
            .find(|&(x, y)| inside(&(x, y)) && self.free((x, y, x + w, y + h)))
            .unwrap_or_else(|| clamp(candidates[0]));
        self.taken
            .push((chosen.0, chosen.1, chosen.0 + w, chosen.1 + h));
        chosen
    }
}

pub(super) fn boxed_label<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    (x, y): (i32, i32),
    (w, h): (i32, i32),
    color: &RGBColor,
) -> Drawn {
    root.draw(&Rectangle::new(
        [(x, y), (x + w, y + h)],
        WHITE.mix(0.85).filled(),
    ))?;
    root.draw_text(
        text,
        &font(14)
            .color(color)
            .pos(Pos::new(HPos::Left, VPos::Center)),
        (x + 4, y + h / 2),
    )?;
    Ok(())
}
