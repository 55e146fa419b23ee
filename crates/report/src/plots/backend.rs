//! Rendering a chart to both formats: the PNG backend with its bundled font, and SVG.

use super::*;

pub(super) enum Plot {
    Histogram(HistChart),
    Time(TimeChart),
}

/// A drawing failure of any backend, as text.
pub(super) struct DrawErr(pub(super) String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawErr {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawErr(e.to_string())
    }
}

pub(super) type Drawn = Result<(), DrawErr>;

impl Plot {
    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        match self {
            Plot::Histogram(h) => h.draw(root),
            Plot::Time(t) => t.draw(root),
        }
    }
}

pub(super) fn register_bundled_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // A failure leaves the family unregistered: drawing text then fails with "FontUnavailable".
        let _ = register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// `plot` drawn and encoded as a PNG image in memory, named as the file `png_path` it is for.
pub(super) fn png_of(png_path: &Path, plot: &Plot) -> Result<Vec<u8>, PlotError> {
    register_bundled_font();
    let (w, h) = PLOT_SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root =
            PngBackend::new(BitMapBackend::with_buffer(&mut rgb, PLOT_SIZE)).into_drawing_area();
        plot.draw(&root)
            .and_then(|()| root.present().map_err(DrawErr::from))
            .map_err(|e| PlotError::Draw {
                file: png_path.to_path_buf(),
                message: e.0,
            })?;
    }
    let mut bytes = Vec::new();
    {
        let encode = |source| PlotError::Encode {
            file: png_path.to_path_buf(),
            source,
        };
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(encode)?;
        writer.write_image_data(&rgb).map_err(encode)?;
        writer.finish().map_err(encode)?;
    }
    Ok(bytes)
}

/// `plot` drawn in both formats, in memory: what [`render`] writes.
pub(super) fn drawn(name: &'static str, plot: &Plot) -> Result<DrawnPlot, PlotError> {
    let png = png_of(Path::new(&format!("{name}.png")), plot)?;
    let svg = svg_of(plot).map_err(|e| PlotError::Draw {
        file: PathBuf::from(format!("{name}.svg")),
        message: e.0,
    })?;
    Ok(DrawnPlot { name, png, svg })
}

pub(super) fn render(
    dir: &Path,
    name: &str,
    plot: &Plot,
    written: &mut Vec<PathBuf>,
) -> Result<(), PlotError> {
    let png_path = dir.join(format!("{name}.png"));
    let bytes = png_of(&png_path, plot)?;
    // Each file appears whole or not at all (a full disk leaves no cut plot).
    pcapsleuth_capture::write_file(&png_path, &bytes).map_err(|source| PlotError::Write {
        file: png_path.clone(),
        source,
    })?;
    written.push(png_path);

    let svg_path = dir.join(format!("{name}.svg"));
    let svg = svg_of(plot).map_err(|e| PlotError::Draw {
        file: svg_path.clone(),
        message: e.0,
    })?;
    pcapsleuth_capture::write_file(&svg_path, svg.as_bytes()).map_err(|source| {
        PlotError::Write {
            file: svg_path.clone(),
            source,
        }
    })?;
    written.push(svg_path);
    Ok(())
}

/// `plot` drawn as an SVG document in memory.
pub(super) fn svg_of(plot: &Plot) -> Result<String, DrawErr> {
    register_bundled_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, PLOT_SIZE).into_drawing_area();
        plot.draw(&root)
            .and_then(|()| root.present().map_err(DrawErr::from))?;
    }
    Ok(svg)
}

/// The bitmap backend with text rasterised here: plotters' `ab_glyph` text drawing ignores each glyph's
/// side bearing and truncates the pen position, which leaves letters unevenly spaced ("2 026", "U TC").
pub(super) struct PngBackend<'a> {
    inner: BitMapBackend<'a>,
    font: ab_glyph::FontRef<'static>,
}

pub(super) type BitMapBackendError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;
pub(super) type BackendResult = Result<(), DrawingErrorKind<BitMapBackendError>>;
use plotters_backend::{
    BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind, FontTransform,
};

impl<'a> PngBackend<'a> {
    pub(super) fn new(inner: BitMapBackend<'a>) -> Self {
        PngBackend {
            inner,
            // The same bytes `register_font` accepted; a failure here is a broken build, not input.
            font: ab_glyph::FontRef::try_from_slice(FONT).expect("bundled font parses"),
        }
    }

    /// Glyphs of `text` at `size` px, positioned with the baseline at y = ascent; and the text's width and
    /// height.
    pub(super) fn layout(&self, text: &str, size: f64) -> (Vec<ab_glyph::Glyph>, f32, f32) {
        use ab_glyph::{Font, ScaleFont};
        let font = self.font.as_scaled(size as f32);
        let mut caret = 0.0f32;
        let mut prev: Option<ab_glyph::GlyphId> = None;
        let mut glyphs = Vec::new();
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                caret += font.kern(p, id);
            }
            glyphs.push(
                id.with_scale_and_position(font.scale(), ab_glyph::point(caret, font.ascent())),
            );
            caret += font.h_advance(id);
            prev = Some(id);
        }
        (glyphs, caret, font.ascent() - font.descent())
    }
}

impl DrawingBackend for PngBackend<'_> {
    type ErrorType = BitMapBackendError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> BackendResult {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> BackendResult {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> BackendResult {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> BackendResult {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> BackendResult {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> BackendResult {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> BackendResult {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> BackendResult {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> BackendResult {
        self.inner.blit_bitmap(pos, (iw, ih), src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (_, w, h) = self.layout(text, style.size());
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> BackendResult {
        use ab_glyph::Font;
        use plotters_backend::text_anchor::{HPos, VPos};
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let (glyphs, w, h) = self.layout(text, style.size());
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Right => -w,
            HPos::Center => -w / 2.0,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -h / 2.0,
            VPos::Bottom => -h,
        };
        let trans: FontTransform = style.transform();
        let mut pixels = Vec::new();
        for g in glyphs {
            if let Some(outline) = self.font.outline_glyph(g) {
                let b = outline.px_bounds();
                // Whole-pixel offsets per glyph: rounding each pixel would skip a row or column at -0.5/0.5.
                let (ox, oy) = ((b.min.x + dx).round() as i32, (b.min.y + dy).round() as i32);
                outline.draw(|x, y, coverage| {
                    pixels.push((ox + x as i32, oy + y as i32, coverage));
                });
            }
        }
        for (x, y, coverage) in pixels {
            if coverage <= 0.0 {
                continue;
            }
            let (x, y) = trans.transform(x, y);
            self.inner.draw_pixel(
                (pos.0 + x, pos.1 + y),
                BackendColor {
                    alpha: color.alpha * f64::from(coverage.min(1.0)),
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}
