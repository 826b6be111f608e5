/* test_tuning_plot.c: the tuning report's plot (cairo) as PNG and SVG, and its labels. */
#include <cairo.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/temp_dir.h"
#include "tuning/report/plot.h"

/* A small synthetic tuning result: three entries of different ops, dtypes and shapes, with
 * candidates that ran, one far slower than the rest, and one that failed. */
static sf_tune_candidate candidates[4] = {{.ok = true, .median_us = 12, .reps = 25},
                                          {.ok = true, .median_us = 10, .reps = 25},
                                          {.ok = true, .median_us = 400, .reps = 25},
                                          {.ok = false, .why = "out of GPU resources"}};

static sf_tune_entry entry(sf_op op, sf_dtype dtype, int dstate, int64_t batch, int64_t dim, int64_t seqlen) {
  sf_tune_entry e = {.variant = sf_variant_default(), .shape = {batch, dim, seqlen, 1}, .winner_us = 10,
                     .default_us = 12, .complete = true, .candidates = candidates, .candidate_count = 4};
  e.variant.op = op;
  e.variant.dtype = dtype;
  e.variant.dstate = dstate;
  return e;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "no file at %s", path);
  static char text[1 << 22];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

static int count_of(const char *haystack, const char *needle) {
  int n = 0;
  for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* A pixel of the image close to the colour (r, g, b), 0..255. */
static bool has_color(cairo_surface_t *img, int r, int g, int b) {
  const unsigned char *data = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  for (int y = 0; y < cairo_image_surface_get_height(img); y++)
    for (int x = 0; x < cairo_image_surface_get_width(img); x++) {
      const uint32_t px = *(const uint32_t *)(data + (size_t)y * stride + (size_t)x * 4);
      const int pr = px >> 16 & 0xff, pg = px >> 8 & 0xff, pb = px & 0xff;
      if (abs(pr - r) < 8 && abs(pg - g) < 8 && abs(pb - b) < 8) return true;
    }
  return false;
}

Test(tuning_plot, labels_name_op_dtype_state_shape_and_flags) {
  char label[128];
  sf_tune_entry e = entry(SF_OP_FWD, SF_BF16, 16, 64, 160, 196);
  sf_tune_plot_label(&e, label, sizeof label);
  cr_expect_str_eq(label, "fwd bf16 N16 64x160x196");
  e = entry(SF_OP_BWD, SF_FP32, 8, 2, 64, 1024);
  e.shape.groups = 4;
  e.variant.has_z = e.variant.deterministic = true;
  sf_tune_plot_label(&e, label, sizeof label);
  cr_expect_str_eq(label, "bwd fp32 N8 2x64x1024 g4 zd");
  e.variant.B_var = false;
  e.variant.has_z = e.variant.deterministic = false;
  e.shape.groups = 1;
  sf_tune_plot_label(&e, label, sizeof label);
  cr_expect_str_eq(label, "bwd fp32 N8 2x64x1024 Bf");
}

Test(tuning_plot, png_and_svg_of_a_small_result) {
  char *dir = temp_dir_for_test("sf_plot_");
  cr_assert(dir);
  const sf_tune_entry e[3] = {entry(SF_OP_FWD, SF_FP32, 16, 64, 160, 196), entry(SF_OP_FWD, SF_BF16, 8, 8, 1536, 2048),
                              entry(SF_OP_BWD, SF_FP16, 64, 1, 32, 65536)};
  const sf_tune_entry *entries[3] = {&e[0], &e[1], &e[2]};
  int width = 0, height = 0;
  sf_tune_plot_size(entries, 3, &width, &height);
  cr_expect(width >= 3 * 20 && height > 300, "%dx%d", width, height);

  char png[512], svg[512];
  snprintf(png, sizeof png, "%s/report.png", dir);
  snprintf(svg, sizeof svg, "%s/report.SVG", dir); /* the suffix in any case */
  cr_assert_eq(sf_tune_plot(entries, 3, png), SF_OK, "%s", sf_last_error());
  cr_assert_eq(sf_tune_plot(entries, 3, svg), SF_OK, "%s", sf_last_error());

  /* The PNG: its signature, and cairo reads it back at the size the plot reports, with the
   * winners' green and the heuristics' orange drawn. */
  const char *png_text = read_text(png);
  cr_expect(memcmp(png_text, "\x89PNG\r\n\x1a\n", 8) == 0, "no PNG signature");
  cairo_surface_t *img = cairo_image_surface_create_from_png(png);
  cr_assert_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS, "%s", cairo_status_to_string(cairo_surface_status(img)));
  cr_expect_eq(cairo_image_surface_get_width(img), width);
  cr_expect_eq(cairo_image_surface_get_height(img), height);
  cr_expect(has_color(img, 0x1a, 0x99, 0x4f), "no winner's green in the PNG");
  cr_expect(has_color(img, 0xff, 0x8c, 0x00), "no heuristics' orange in the PNG");
  cairo_surface_destroy(img);

  /* The SVG: its size, and text drawn. cairo writes text as glyph outlines, one <use> per
   * character, so the labels' characters are counted rather than searched for. */
  const char *svg_text = read_text(svg);
  cr_assert(strstr(svg_text, "<svg"), "not an SVG: %.80s", svg_text);
  char size[64];
  snprintf(size, sizeof size, "width=\"%dpt\" height=\"%dpt\"", width, height);
  cr_expect(strstr(svg_text, size), "no %s in the SVG header", size);
  int label_chars = 0;
  for (int i = 0; i < 3; i++) {
    char label[128];
    sf_tune_plot_label(entries[i], label, sizeof label);
    for (const char *c = label; *c; c++) label_chars += *c != ' ';
  }
  cr_expect(count_of(svg_text, "xlink:href=\"#glyph") >= label_chars, "fewer glyphs than the labels' %d characters",
            label_chars);
  free(dir);
}

/* More entries make a wider plot: one column each. */
Test(tuning_plot, width_grows_with_the_entries) {
  const sf_tune_entry e = entry(SF_OP_FWD, SF_FP32, 16, 64, 160, 196);
  const sf_tune_entry *entries[60];
  for (int i = 0; i < 60; i++) entries[i] = &e;
  int w30, w60, h;
  sf_tune_plot_size(entries, 30, &w30, &h);
  sf_tune_plot_size(entries, 60, &w60, &h);
  cr_expect(w60 - w30 >= 30 * 10, "30 more entries: %d -> %d", w30, w60);
}

Test(tuning_plot, unwritable_file_is_an_io_error_naming_it) {
  const sf_tune_entry e = entry(SF_OP_FWD, SF_FP32, 16, 64, 160, 196);
  const sf_tune_entry *entries[1] = {&e};
  cr_expect_eq(sf_tune_plot(entries, 1, "/nonexistent-dir/plot.png"), SF_EIO);
  cr_expect(strstr(sf_last_error(), "/nonexistent-dir/plot.png"), "%s", sf_last_error());
  cr_expect_eq(sf_tune_plot(entries, 1, "/nonexistent-dir/plot.svg"), SF_EIO);
  cr_expect(strstr(sf_last_error(), "/nonexistent-dir/plot.svg"), "%s", sf_last_error());
  cr_expect_eq(sf_tune_plot(entries, 1, ""), SF_EINVAL);
  cr_expect(strstr(sf_last_error(), "path"), "%s", sf_last_error());
}
