/* test_tuning_png.c: the PNG writer (checksums, chunks, stored deflate blocks) and the report's plot. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuning/png.h"
#include "tuning/report.h"

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  static uint8_t buf[1 << 23];
  *n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

/* Parses the PNG at `path`: checks the signature and every CRC, returns width, height and
 * the inflated scanlines (stored blocks only, which is what the writer makes). */
static uint8_t *decode(const char *path, int *width, int *height, size_t *raw_n) {
  size_t n;
  const uint8_t *d = read_all(path, &n);
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  cr_assert(n > 8 && memcmp(d, sig, 8) == 0, "no PNG signature");
  uint8_t *raw = malloc(1 << 23);
  size_t at = 8, out = 0;
  bool ended = false;
  while (at + 12 <= n && !ended) {
    uint32_t len = get32(d + at);
    const uint8_t *type = d + at + 4, *body = d + at + 8;
    cr_assert(at + 12 + len <= n, "chunk runs past the end");
    cr_assert_eq(get32(body + len), sf_crc32(sf_crc32(0, type, 4), body, len), "bad CRC on %.4s", type);
    if (memcmp(type, "IHDR", 4) == 0) {
      *width = (int)get32(body);
      *height = (int)get32(body + 4);
      cr_expect(body[8] == 8 && body[9] == 2, "8-bit RGB expected");
    } else if (memcmp(type, "IDAT", 4) == 0) {
      cr_assert_eq((body[0] * 256 + body[1]) % 31, 0, "zlib header check");
      size_t p = 2;
      for (;;) {
        const uint8_t head = body[p];
        cr_assert_eq(head & 6, 0, "not a stored block");
        const size_t blen = body[p + 1] | body[p + 2] << 8, nlen = body[p + 3] | body[p + 4] << 8;
        cr_assert_eq(blen ^ 0xffff, nlen, "LEN and NLEN disagree");
        memcpy(raw + out, body + p + 5, blen);
        out += blen;
        p += 5 + blen;
        if (head & 1) break;
      }
      cr_expect_eq(get32(body + p), sf_adler32(1, raw, out), "Adler-32 of the stream");
    } else if (memcmp(type, "IEND", 4) == 0) {
      ended = true;
    }
    at += 12 + len;
  }
  cr_assert(ended, "no IEND");
  *raw_n = out;
  return raw;
}

Test(tuning_png, checksums_match_known_values) {
  cr_expect_eq(sf_crc32(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
  cr_expect_eq(sf_adler32(1, (const uint8_t *)"Wikipedia", 9), 0x11E60398u);
  /* Continuing a checksum over two pieces is the checksum of the whole. */
  cr_expect_eq(sf_crc32(sf_crc32(0, (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5), 0xCBF43926u);
}

Test(tuning_png, image_round_trips_through_the_file) {
  char path[] = "/tmp/sf_png_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  sf_image img;
  /* 300 x 250 x 3 + 250 filter bytes > 65535: several stored blocks. */
  cr_assert_eq(sf_image_create(&img, 300, 250, 0xffffff), SF_OK);
  sf_image_set(&img, 0, 0, 0x123456);
  sf_image_line(&img, 10, 10, 200, 100, 0xff0000);
  sf_image_text(&img, 20, 200, "1.5x", 2, 0x0000ff);
  sf_image_set(&img, 299, 249, 0xabcdef);
  sf_image_set(&img, 300, 5, 0); /* clipped, not a crash */
  cr_assert_eq(sf_png_write(&img, path), SF_OK, "%s", sf_last_error());
  int w = 0, h = 0;
  size_t n = 0;
  uint8_t *raw = decode(path, &w, &h, &n);
  cr_expect(w == 300 && h == 250);
  cr_assert_eq(n, (size_t)h * (w * 3 + 1));
  for (int y = 0; y < h; y++) {
    cr_assert_eq(raw[(size_t)y * (w * 3 + 1)], 0, "filter byte of row %d", y);
    cr_assert(memcmp(raw + (size_t)y * (w * 3 + 1) + 1, img.rgb + (size_t)y * w * 3, (size_t)w * 3) == 0,
              "row %d differs", y);
  }
  const uint8_t *first = raw + 1, *last = raw + (size_t)(h - 1) * (w * 3 + 1) + 1 + (w - 1) * 3;
  cr_expect(first[0] == 0x12 && first[1] == 0x34 && first[2] == 0x56);
  cr_expect(last[0] == 0xab && last[1] == 0xcd && last[2] == 0xef);
  free(raw);
  sf_image_free(&img);
  unlink(path);
}

Test(tuning_png, plot_of_entries_is_a_png) {
  char path[] = "/tmp/sf_plot_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  sf_tune_candidate c[3] = {{.ok = true, .median_us = 12, .reps = 25},
                            {.ok = true, .median_us = 10, .reps = 25},
                            {.ok = false, .why = "out of GPU resources"}};
  sf_tune_entry e = {.winner_us = 10, .default_us = 12, .candidates = c, .candidate_count = 3};
  const sf_tune_entry *entries[20];
  for (int i = 0; i < 20; i++) entries[i] = &e;
  cr_assert_eq(sf_tune_plot(entries, 20, path), SF_OK, "%s", sf_last_error());
  int w = 0, h = 0;
  size_t n = 0;
  uint8_t *raw = decode(path, &w, &h, &n);
  cr_expect(w >= 20 * 20 && h > 200, "%dx%d", w, h);
  /* Something besides the white background was drawn. */
  size_t ink = 0;
  for (size_t i = 0; i < n; i++) ink += raw[i] != 0xff && raw[i] != 0;
  cr_expect(ink > 1000);
  free(raw);
  unlink(path);
}
