/* Writes a baseline JPEG of a W x H gradient to stdout (seeds.py's helper):
 * jpeg_seed W H GRAY QUALITY. */
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  int w = atoi(argv[1]), h = atoi(argv[2]), gray = atoi(argv[3]), q = atoi(argv[4]);
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, stdout);
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = gray ? 1 : 3;
  c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, q, TRUE);
  jpeg_start_compress(&c, TRUE);
  unsigned char row[3 * 64];
  while (c.next_scanline < c.image_height) {
    for (int x = 0; x < w * c.input_components; x++) row[x] = (unsigned char)(x * 11 + c.next_scanline * 13);
    JSAMPROW r = row;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return 0;
}
