/* io plugin: a strict RFC 8259 grammar check of a safetensors header, run
 * before cJSON parses it, so that what cJSON tolerates (raw control bytes in
 * strings, stray bytes between tokens) or silently mangles (\u0000, which ends
 * a cJSON string early) is refused with the fault and its byte offset. */
#include <stdio.h>
#include <string.h>

#include "io.h"

/* Why a pre-validator rather than a stricter JSON library: cJSON stays for
 * building and walking the header, one dependency fewer; this file only
 * decides whether the bytes are JSON, which the grammar makes small. It does
 * not check UTF-8: io_st_load checks the whole header with utf8_bad first. */

typedef struct {
  const unsigned char *p;
  size_t n, i;
  int depth, max_depth;
  size_t at;
  char *why;
  size_t whycap;
} js;

static bool bad(js *j, size_t at, const char *msg) {
  j->at = at;
  snprintf(j->why, j->whycap, "%s", msg);
  return false;
}

static bool bad_byte(js *j, const char *where) {
  if (j->i >= j->n) return bad(j, j->i, "the header ends in the middle of a value");
  unsigned c = j->p[j->i];
  j->at = j->i;
  if (c >= 0x21 && c < 0x7f)
    snprintf(j->why, j->whycap, "unexpected character '%c' %s", (char)c, where);
  else
    snprintf(j->why, j->whycap, "unexpected byte 0x%02x %s", c, where);
  return false;
}

static void skip_ws(js *j) {
  while (j->i < j->n && (j->p[j->i] == ' ' || j->p[j->i] == '\t' || j->p[j->i] == '\n' || j->p[j->i] == '\r')) j->i++;
}

static int hex4(const unsigned char *p) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    int c = p[k], d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static bool string(js *j) {
  size_t start = j->i++; /* the opening quote */
  while (j->i < j->n) {
    unsigned c = j->p[j->i];
    if (c == '"') {
      j->i++;
      return true;
    }
    if (c < 0x20) {
      j->at = j->i;
      snprintf(j->why, j->whycap, "control character 0x%02x in a string", c);
      return false;
    }
    if (c != '\\') {
      j->i++;
      continue;
    }
    size_t esc = j->i;
    if (j->i + 1 >= j->n) break;
    unsigned e = j->p[j->i + 1];
    if (e != 'u') {
      if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
        return bad(j, esc, "invalid escape sequence in a string");
      j->i += 2;
      continue;
    }
    int u = j->i + 6 <= j->n ? hex4(j->p + j->i + 2) : -1;
    if (u < 0) return bad(j, esc, "invalid \\u escape in a string (want 4 hex digits)");
    if (u == 0) return bad(j, esc, "\\u0000 (NUL) in a string");
    j->i += 6;
    if (u >= 0xDC00 && u <= 0xDFFF) return bad(j, esc, "unpaired UTF-16 surrogate escape in a string");
    if (u >= 0xD800 && u <= 0xDBFF) { /* must be followed by a low surrogate */
      int lo = j->i + 6 <= j->n && j->p[j->i] == '\\' && j->p[j->i + 1] == 'u' ? hex4(j->p + j->i + 2) : -1;
      if (lo < 0xDC00 || lo > 0xDFFF) return bad(j, esc, "unpaired UTF-16 surrogate escape in a string");
      j->i += 6;
    }
  }
  return bad(j, start, "unterminated string");
}

static bool digits(js *j) {
  size_t s = j->i;
  while (j->i < j->n && j->p[j->i] >= '0' && j->p[j->i] <= '9') j->i++;
  return j->i > s;
}

static bool number(js *j) {
  size_t start = j->i;
  if (j->p[j->i] == '-') j->i++;
  if (j->i < j->n && j->p[j->i] == '0') {
    j->i++;
    if (j->i < j->n && j->p[j->i] >= '0' && j->p[j->i] <= '9') return bad(j, start, "number with a leading zero");
  } else if (!digits(j)) {
    return bad(j, start, "malformed number");
  }
  if (j->i < j->n && j->p[j->i] == '.') {
    j->i++;
    if (!digits(j)) return bad(j, start, "malformed number (no digits after '.')");
  }
  if (j->i < j->n && (j->p[j->i] == 'e' || j->p[j->i] == 'E')) {
    j->i++;
    if (j->i < j->n && (j->p[j->i] == '+' || j->p[j->i] == '-')) j->i++;
    if (!digits(j)) return bad(j, start, "malformed number (no digits in the exponent)");
  }
  return true;
}

static bool literal(js *j, const char *w, size_t len) {
  if (j->n - j->i < len || memcmp(j->p + j->i, w, len) != 0) return bad_byte(j, "where a value should be");
  j->i += len;
  return true;
}

static bool value(js *j);

/* Object or array; j->i is at the opening bracket. */
static bool container(js *j) {
  bool obj = j->p[j->i] == '{';
  char close = obj ? '}' : ']';
  if (++j->depth > j->max_depth) {
    j->at = j->i;
    snprintf(j->why, j->whycap, "nesting deeper than %d levels", j->max_depth);
    return false;
  }
  j->i++;
  skip_ws(j);
  if (j->i < j->n && j->p[j->i] == (unsigned char)close) {
    j->i++, j->depth--;
    return true;
  }
  for (;;) {
    if (obj) {
      if (j->i >= j->n || j->p[j->i] != '"') return bad_byte(j, "where an object key should be");
      if (!string(j)) return false;
      skip_ws(j);
      if (j->i >= j->n || j->p[j->i] != ':') return bad_byte(j, "where ':' should be");
      j->i++;
    }
    if (!value(j)) return false;
    if (j->i < j->n && j->p[j->i] == ',') {
      j->i++;
      skip_ws(j);
      continue;
    }
    if (j->i < j->n && j->p[j->i] == (unsigned char)close) {
      j->i++, j->depth--;
      return true;
    }
    return bad_byte(j, obj ? "where ',' or '}' should be" : "where ',' or ']' should be");
  }
}

/* A value with the whitespace around it. */
static bool value(js *j) {
  skip_ws(j);
  if (j->i >= j->n) return bad(j, j->i, "the header ends where a value should be");
  bool ok;
  switch (j->p[j->i]) {
    case '{':
    case '[':
      ok = container(j);
      break;
    case '"':
      ok = string(j);
      break;
    case 't':
      ok = literal(j, "true", 4);
      break;
    case 'f':
      ok = literal(j, "false", 5);
      break;
    case 'n':
      ok = literal(j, "null", 4);
      break;
    default:
      if (j->p[j->i] == '-' || (j->p[j->i] >= '0' && j->p[j->i] <= '9'))
        ok = number(j);
      else
        ok = bad_byte(j, "where a value should be");
  }
  if (ok) skip_ws(j);
  return ok;
}

int io_json_strict(const char *text, size_t n, int max_depth, size_t *at, char *why, size_t whycap) {
  js j = {(const unsigned char *)text, n, 0, 0, max_depth, 0, why, whycap};
  if (!value(&j)) {
    *at = j.at;
    return IO_JSON_BAD;
  }
  if (j.i < n) {
    *at = j.i;
    snprintf(why, whycap, "bytes after the top-level value");
    return IO_JSON_TRAILING;
  }
  return IO_JSON_OK;
}
