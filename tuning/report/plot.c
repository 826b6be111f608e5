/* plot.c: draws the tuning report's plot with cairo, as PNG or SVG. */
#include "tuning/report/plot.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"

/* Layout, in pixels (points in an SVG). */
enum {
  LEFT = 70,           /* tick labels and the axis title */
  RIGHT = 20,
  COLUMN = 26,         /* one entry */
  MIN_WIDTH = 640,     /* room for the title and the legend */
  FAIL_Y = 78,         /* the row of failed candidates, above the scale */
  SCALE_TOP = 96,      /* the top of the log scale */
  SCALE_HEIGHT = 300,
  LABEL_GAP = 8,       /* between the bottom axis and the labels */
  BOTTOM = 12
};
#define FONT "DejaVu Sans"
#define LABEL_SIZE 11.0
#define TITLE_SIZE 15.0

typedef struct rgb {
  double r, g, b;
} rgb;
static const rgb AXIS = {0.25, 0.25, 0.25};
static const rgb GRID = {0.88, 0.88, 0.88};
static const rgb CANDIDATE = {0.55, 0.55, 0.55};
static const rgb WINNER = {0.10, 0.60, 0.31};
static const rgb HEURISTIC = {1.00, 0.55, 0.00};
static const rgb FAILED = {0.84, 0.19, 0.15};

/* The top of the scale: the smallest of 2x, 4x, 8x, 16x that covers every candidate. */
static double scale_top(const sf_tune_entry *const *entries, int count) {
  double slowest = 1;
  for (int e = 0; e < count; e++) {
    const sf_tune_entry *en = entries[e];
    if (!(en->winner_us > 0)) continue;
    for (int c = 0; c < en->candidate_count; c++)
      if (en->candidates[c].ok && en->candidates[c].median_us / en->winner_us > slowest)
        slowest = en->candidates[c].median_us / en->winner_us;
    if (en->default_us / en->winner_us > slowest) slowest = en->default_us / en->winner_us;
  }
  double top = 2;
  while (top < slowest && top < 16) top *= 2;
  return top;
}

/* The y of a time ratio on the log scale: 1x at the bottom, `top` at the top. */
static double y_of(double ratio, double top) {
  if (!(ratio >= 1)) ratio = 1;
  if (ratio > top) ratio = top;
  return SCALE_TOP + SCALE_HEIGHT * (1 - log2(ratio) / log2(top));
}

void sf_tune_plot_label(const sf_tune_entry *en, char *buf, size_t cap) {
  char groups[24] = "";
  if (en->shape.groups > 1) snprintf(groups, sizeof groups, " g%d", en->shape.groups);
  char flags[8];
  snprintf(flags, sizeof flags, "%s%s%s", en->variant.has_z ? "z" : "", en->variant.B_var ? "" : "Bf",
           en->variant.deterministic ? "d" : "");
  snprintf(buf, cap, "%s %s N%d %lldx%lldx%lld%s%s%s", en->variant.op == SF_OP_FWD ? "fwd" : "bwd",
           sf_dtype_name(en->variant.dtype), en->variant.dstate, (long long)en->shape.batch,
           (long long)en->shape.dim, (long long)en->shape.seqlen, groups, flags[0] ? " " : "", flags);
}

static void use_font(cairo_t *cr, double size, bool bold) {
  cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

/* The widest label, measured with the label font on `cr`. */
static double longest_label(cairo_t *cr, const sf_tune_entry *const *entries, int count) {
  use_font(cr, LABEL_SIZE, false);
  double widest = 0;
  for (int e = 0; e < count; e++) {
    char label[128];
    sf_tune_plot_label(entries[e], label, sizeof label);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, label, &ext);
    if (ext.x_advance > widest) widest = ext.x_advance;
  }
  return widest;
}

static void layout(cairo_t *cr, const sf_tune_entry *const *entries, int count, int *width, int *height) {
  *width = LEFT + RIGHT + COLUMN * count;
  if (*width < MIN_WIDTH) *width = MIN_WIDTH;
  *height = SCALE_TOP + SCALE_HEIGHT + LABEL_GAP + (int)ceil(longest_label(cr, entries, count)) + BOTTOM;
}

void sf_tune_plot_size(const sf_tune_entry *const *entries, int count, int *width, int *height) {
  /* Text is measured on a scratch surface: the size must be known before the real one. */
  cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create(scratch);
  layout(cr, entries, count, width, height);
  cairo_destroy(cr);
  cairo_surface_destroy(scratch);
}

static void set_color(cairo_t *cr, rgb c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

static void line(cairo_t *cr, double x0, double y0, double x1, double y1, rgb color, double width) {
  set_color(cr, color);
  cairo_set_line_width(cr, width);
  cairo_move_to(cr, x0, y0);
  cairo_line_to(cr, x1, y1);
  cairo_stroke(cr);
}

/* ---- markers, shared by the plot and its legend ------------------------------------- */

static void dot(cairo_t *cr, double x, double y, double radius, rgb color) {
  set_color(cr, color);
  cairo_arc(cr, x, y, radius, 0, 2 * M_PI);
  cairo_fill(cr);
}

static void diamond(cairo_t *cr, double x, double y, double radius, rgb color) {
  set_color(cr, color);
  cairo_set_line_width(cr, 2);
  cairo_move_to(cr, x, y - radius);
  cairo_line_to(cr, x + radius, y);
  cairo_line_to(cr, x, y + radius);
  cairo_line_to(cr, x - radius, y);
  cairo_close_path(cr);
  cairo_stroke(cr);
}

static void cross(cairo_t *cr, double x, double y, double radius, rgb color) {
  line(cr, x - radius, y - radius, x + radius, y + radius, color, 1.5);
  line(cr, x - radius, y + radius, x + radius, y - radius, color, 1.5);
}

/* Points up: a candidate slower than the top of the scale. */
static void triangle(cairo_t *cr, double x, double y, double radius, rgb color) {
  set_color(cr, color);
  cairo_move_to(cr, x, y - radius);
  cairo_line_to(cr, x + radius, y + radius * 0.8);
  cairo_line_to(cr, x - radius, y + radius * 0.8);
  cairo_close_path(cr);
  cairo_fill(cr);
}

static void text(cairo_t *cr, double x, double y, const char *s, rgb color) {
  set_color(cr, color);
  cairo_move_to(cr, x, y);
  cairo_show_text(cr, s);
}

/* One legend item: its marker, then its text; returns the x of the next item. */
static double legend_item(cairo_t *cr, double x, double y, int marker, const char *s) {
  switch (marker) {
    case 0: dot(cr, x + 5, y - 4, 2.5, CANDIDATE); break;
    case 1: dot(cr, x + 5, y - 4, 4, WINNER); break;
    case 2: diamond(cr, x + 5, y - 4, 4.5, HEURISTIC); break;
    case 3: triangle(cr, x + 5, y - 4, 4, CANDIDATE); break;
    default: cross(cr, x + 5, y - 4, 3.5, FAILED); break;
  }
  text(cr, x + 14, y, s, AXIS);
  cairo_text_extents_t ext;
  cairo_text_extents(cr, s, &ext);
  return x + 14 + ext.x_advance + 18;
}

static void draw(cairo_t *cr, const sf_tune_entry *const *entries, int count, int width) {
  set_color(cr, (rgb){1, 1, 1});
  cairo_paint(cr);
  const double top = scale_top(entries, count);
  const double scale_bottom = SCALE_TOP + SCALE_HEIGHT, right = width - RIGHT;

  use_font(cr, TITLE_SIZE, true);
  text(cr, 10, 24, "scanforge tune: each candidate's time relative to its entry's winner", AXIS);
  use_font(cr, LABEL_SIZE, false);
  double x = 10;
  x = legend_item(cr, x, 50, 0, "candidate");
  x = legend_item(cr, x, 50, 1, "winner");
  x = legend_item(cr, x, 50, 2, "heuristics' pick");
  char slower[48];
  snprintf(slower, sizeof slower, "slower than %gx", top);
  x = legend_item(cr, x, 50, 3, slower);
  legend_item(cr, x, 50, 4, "failed");

  /* The y axis: grid lines and ticks on the log scale, its title turned upright. */
  static const double ticks[] = {1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16};
  for (size_t i = 0; i < sizeof ticks / sizeof ticks[0] && ticks[i] <= top; i++) {
    const double y = y_of(ticks[i], top);
    line(cr, LEFT, y, right, y, GRID, 1);
    char tick[16];
    snprintf(tick, sizeof tick, "%gx", ticks[i]);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, tick, &ext);
    text(cr, LEFT - 6 - ext.x_advance, y + 4, tick, AXIS);
  }
  text(cr, LEFT - 6 - 30, FAIL_Y + 4, "failed", FAILED);
  cairo_save(cr);
  cairo_translate(cr, 16, scale_bottom);
  cairo_rotate(cr, -M_PI / 2);
  text(cr, 0, 0, "time / winner's time (log scale)", AXIS);
  cairo_restore(cr);
  line(cr, LEFT, FAIL_Y - 10, LEFT, scale_bottom, AXIS, 1.2);
  line(cr, LEFT, scale_bottom, right, scale_bottom, AXIS, 1.2);

  for (int e = 0; e < count; e++) {
    const sf_tune_entry *en = entries[e];
    const double cx = LEFT + COLUMN * e + COLUMN / 2.0;
    /* The label reads upwards and ends just under the axis. */
    char label[128];
    sf_tune_plot_label(en, label, sizeof label);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, label, &ext);
    cairo_save(cr);
    cairo_translate(cr, cx + 4, scale_bottom + LABEL_GAP + ext.x_advance);
    cairo_rotate(cr, -M_PI / 2);
    text(cr, 0, 0, label, AXIS);
    cairo_restore(cr);
    line(cr, cx, scale_bottom, cx, scale_bottom + 4, AXIS, 1);
    if (!(en->winner_us > 0)) continue;
    for (int c = 0; c < en->candidate_count; c++) {
      const sf_tune_candidate *cand = &en->candidates[c];
      const double jitter = (c % 5 - 2) * 2.0; /* spreads equal times sideways */
      if (!cand->ok)
        cross(cr, cx + jitter, FAIL_Y, 3, FAILED);
      else if (cand->median_us / en->winner_us > top)
        triangle(cr, cx + jitter, SCALE_TOP + 3, 3.5, CANDIDATE);
      else
        dot(cr, cx + jitter, y_of(cand->median_us / en->winner_us, top), 2.5, CANDIDATE);
    }
    dot(cr, cx, y_of(1, top), 4, WINNER);
    if (en->default_us > 0) diamond(cr, cx, y_of(en->default_us / en->winner_us, top), 4.5, HEURISTIC);
  }
}

static bool is_svg(const char *path) {
  const size_t n = strlen(path);
  return n >= 4 && strcasecmp(path + n - 4, ".svg") == 0;
}

sf_status sf_tune_plot(const sf_tune_entry *const *entries, int count, const char *path) {
  if (!path || !*path) return sf_fail(SF_EINVAL, "path: expected a file name, got %s", path ? "\"\"" : "NULL");
  if (count < 0 || (count > 0 && !entries))
    return sf_fail(SF_EINVAL, "entries: expected %d entries, got %s", count, entries ? "a negative count" : "NULL");
  int width, height;
  sf_tune_plot_size(entries, count, &width, &height);
  const bool svg = is_svg(path);
  cairo_surface_t *surface = svg ? cairo_svg_surface_create(path, width, height)
                                 : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t *cr = cairo_create(surface);
  draw(cr, entries, count, width);
  cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  if (status == CAIRO_STATUS_SUCCESS) {
    if (svg) {
      cairo_surface_finish(surface); /* writes the file */
      status = cairo_surface_status(surface);
    } else {
      status = cairo_surface_write_to_png(surface, path);
    }
  }
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS)
    return sf_fail(status == CAIRO_STATUS_NO_MEMORY ? SF_ENOMEM : SF_EIO, "cannot write the plot '%s': %s", path,
                   cairo_status_to_string(status));
  return SF_OK;
}
