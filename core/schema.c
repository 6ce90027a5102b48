/* Operator schema parser: "[ns::]name[.overload](Type arg=default, *, ...) -> Ret".
 * Validates types, annotations and defaults once, at declaration, so calls
 * only compare tags. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct {
  const char *text, *p;
  wk__schema *s;
  bool ok;
} parser;

static void fail(parser *ps, const char *what) {
  if (!ps->ok) return;
  ps->ok = false;
  wk_error(WK_ERR_SCHEMA, "schema '%s': %s at offset %d ('%.12s')", ps->text, what,
           (int)(ps->p - ps->text), ps->p);
}

static void ws(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n') ps->p++;
}

static bool eat(parser *ps, char c) {
  ws(ps);
  if (*ps->p == c) {
    ps->p++;
    return true;
  }
  return false;
}

static bool eat_str(parser *ps, const char *s) {
  ws(ps);
  size_t n = strlen(s);
  if (strncmp(ps->p, s, n) == 0) {
    ps->p += n;
    return true;
  }
  return false;
}

/* identifier: [A-Za-z_][A-Za-z0-9_]* ; returns a new string */
static char *ident(parser *ps) {
  ws(ps);
  const char *b = ps->p;
  if (!(isalpha((unsigned char)*b) || *b == '_')) return NULL;
  while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
  size_t n = (size_t)(ps->p - b);
  char *r = wk_malloc(n + 1);
  if (!r) return NULL;
  memcpy(r, b, n);
  r[n] = 0;
  return r;
}

static bool starts_ident(const parser *ps) { return isalpha((unsigned char)*ps->p) || *ps->p == '_'; }

/* The op name: [ns::]name[.overload], three identifiers (PyTorch's scheme:
 * "acme::rms_norm", "acme::rms_norm.v2", "add.Scalar"). The legacy namespace
 * form "acme.rms_norm" (one dot, no "::") stays valid: it reads as name
 * "acme" with overload "rms_norm". Returns the full text as a new string, or
 * NULL after recording the error. */
static char *op_name(parser *ps) {
  ws(ps);
  const char *b = ps->p;
  char *part = ident(ps);
  if (!part) {
    fail(ps, "expected an op name");
    return NULL;
  }
  free(part);
  bool ns = false;
  if (ps->p[0] == ':' && ps->p[1] == ':') {
    ns = true;
    ps->p += 2;
    if (!starts_ident(ps) || !(part = ident(ps))) {
      fail(ps, "expected an op name after the namespace's '::'");
      return NULL;
    }
    free(part);
    if (ps->p[0] == ':' && ps->p[1] == ':') {
      fail(ps, "an op name has one namespace at most (ns::name.overload)");
      return NULL;
    }
  }
  if (*ps->p == '.') {
    ps->p++;
    if (!starts_ident(ps) || !(part = ident(ps))) {
      fail(ps, "expected an overload name after '.'");
      return NULL;
    }
    free(part);
    if (*ps->p == '.' || (ps->p[0] == ':' && ps->p[1] == ':')) {
      fail(ps, ns ? "an op name has one overload at most (ns::name.overload)"
                  : "an op name has one '.' at most: write a namespaced op with an overload as ns::name.overload");
      return NULL;
    }
  }
  size_t n = (size_t)(ps->p - b);
  char *r = wk_malloc(n + 1);
  if (!r) {
    fail(ps, "out of memory");
    return NULL;
  }
  memcpy(r, b, n);
  r[n] = 0;
  return r;
}

static bool parse_type(parser *ps, wk__arg *a) {
  ws(ps);
  const char *start = ps->p;
  char *base = ident(ps);
  if (!base) {
    fail(ps, "expected a type");
    return false;
  }
  static const struct { const char *n; wk__argtype t; } types[] = {
      {"Tensor", WK__A_TENSOR}, {"int", WK__A_INT},          {"float", WK__A_FLOAT},
      {"bool", WK__A_BOOL},     {"str", WK__A_STR},          {"Scalar", WK__A_SCALAR},
      {"ScalarType", WK__A_DTYPE}, {"Device", WK__A_DEVICE}, {"SymInt", WK__A_INT}};
  bool found = false;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strcmp(base, types[i].n) == 0) {
      a->type = types[i].t;
      found = true;
    }
  bool is_tensor = strcmp(base, "Tensor") == 0;
  free(base);
  if (!found) {
    ps->p = start;
    fail(ps, "unknown type");
    return false;
  }
  if (*ps->p == '(') { /* alias annotation: (a), (a!), (a -> *) */
    if (!is_tensor) {
      fail(ps, "only Tensor types take alias annotations");
      return false;
    }
    ps->p++;
    ws(ps);
    if (!islower((unsigned char)*ps->p)) {
      fail(ps, "expected an alias set letter");
      return false;
    }
    a->alias = *ps->p++;
    if (*ps->p == '!') {
      a->mutates = true;
      ps->p++;
    }
    ws(ps);
    if (eat_str(ps, "->")) {
      if (!eat(ps, '*')) {
        fail(ps, "expected '*' after '->' in alias annotation");
        return false;
      }
    }
    if (!eat(ps, ')')) {
      fail(ps, "expected ')' closing the alias annotation");
      return false;
    }
  }
  if (*ps->p == '?' && ps->p[1] == '[') { /* Tensor?[] */
    ps->p++;
    a->elem_optional = true;
  }
  if (*ps->p == '[') {
    ps->p++;
    int n = 0;
    while (isdigit((unsigned char)*ps->p) && n <= WK_MAX_DIMS) n = n * 10 + (*ps->p++ - '0');
    if (n > WK_MAX_DIMS) { /* the dispatcher expands int[N] into a WK_MAX_DIMS-long scratch list */
      fail(ps, "fixed list length over WK_MAX_DIMS");
      return false;
    }
    if (*ps->p != ']') {
      fail(ps, "expected ']' in list type");
      return false;
    }
    ps->p++;
    a->fixed_len = n;
    switch (a->type) {
      case WK__A_INT: a->type = WK__A_INTS; break;
      case WK__A_FLOAT: a->type = WK__A_FLOATS; break;
      case WK__A_TENSOR: a->type = WK__A_TENSORS; break;
      default: fail(ps, "lists are only supported for int, float and Tensor"); return false;
    }
  } else if (a->elem_optional) {
    fail(ps, "'?' before a list must be followed by '[]'");
    return false;
  }
  if (*ps->p == '?') {
    ps->p++;
    a->optional = true;
  }
  size_t n = (size_t)(ps->p - start);
  a->type_text = wk_malloc(n + 1);
  if (!a->type_text) {
    fail(ps, "out of memory");
    return false;
  }
  memcpy(a->type_text, start, n);
  a->type_text[n] = 0;
  return true;
}

static bool number(parser *ps, double *f, int64_t *i, bool *is_int) {
  ws(ps);
  const char *b = ps->p;
  char *end;
  if (strncmp(b, "inf", 3) == 0 || strncmp(b, "-inf", 4) == 0) {
    *f = b[0] == '-' ? -INFINITY : INFINITY;
    ps->p += b[0] == '-' ? 4 : 3;
    *is_int = false;
    return true;
  }
  errno = 0;
  long long v = strtoll(b, &end, 10);
  if (end != b && *end != '.' && *end != 'e' && *end != 'E') {
    *i = v;
    *f = (double)v;
    *is_int = true;
    ps->p = end;
    return errno == 0;
  }
  double d = strtod(b, &end);
  if (end == b) return false;
  *f = d;
  *i = d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : 0; /* NaN, inf and 1e300 have no int64 value */
  *is_int = false;
  ps->p = end;
  return true;
}

static bool parse_default(parser *ps, wk__arg *a) {
  ws(ps);
  a->has_default = true;
  if (eat_str(ps, "None")) {
    if (!a->optional) {
      fail(ps, "default None for a non-optional argument");
      return false;
    }
    a->def = WK_VNONE;
    return true;
  }
  double f;
  int64_t i;
  bool is_int;
  switch (a->type) {
    case WK__A_BOOL:
      if (eat_str(ps, "True")) a->def = WK_VB(true);
      else if (eat_str(ps, "False")) a->def = WK_VB(false);
      else { fail(ps, "expected True or False"); return false; }
      return true;
    case WK__A_INT:
      if (!number(ps, &f, &i, &is_int) || !is_int) { fail(ps, "expected an integer default"); return false; }
      a->def = WK_VI(i);
      return true;
    case WK__A_FLOAT:
      if (!number(ps, &f, &i, &is_int)) { fail(ps, "expected a number default"); return false; }
      a->def = WK_VF(f);
      return true;
    case WK__A_SCALAR:
      if (!number(ps, &f, &i, &is_int)) { fail(ps, "expected a number default"); return false; }
      a->def = is_int ? WK_VI(i) : WK_VF(f);
      return true;
    case WK__A_STR: {
      char q = *ps->p;
      if (q != '"' && q != '\'') { fail(ps, "expected a quoted string default"); return false; }
      const char *b = ++ps->p;
      while (*ps->p && *ps->p != q) ps->p++;
      if (*ps->p != q) { fail(ps, "unterminated string default"); return false; }
      size_t n = (size_t)(ps->p - b);
      char *s = wk_malloc(n + 1);
      if (!s) { fail(ps, "out of memory"); return false; }
      memcpy(s, b, n);
      s[n] = 0;
      ps->p++;
      a->def = WK_VS(s);
      return true;
    }
    case WK__A_INTS: {
      int64_t buf[WK_MAX_DIMS];
      int n = 0;
      if (eat(ps, '[')) {
        if (!eat(ps, ']')) {
          do {
            if (n == WK_MAX_DIMS || !number(ps, &f, &i, &is_int) || !is_int) {
              fail(ps, "expected integers in list default");
              return false;
            }
            buf[n++] = i;
          } while (eat(ps, ','));
          if (!eat(ps, ']')) { fail(ps, "expected ']'"); return false; }
        }
      } else {
        if (!number(ps, &f, &i, &is_int) || !is_int) { fail(ps, "expected an int list default"); return false; }
        int m = a->fixed_len ? a->fixed_len : 1;
        for (n = 0; n < m; n++) buf[n] = i;
      }
      int64_t *p = wk_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
      if (!p) { fail(ps, "out of memory"); return false; }
      memcpy(p, buf, sizeof(int64_t) * (size_t)n);
      a->def = WK_VINTS(p, n);
      return true;
    }
    case WK__A_FLOATS: {
      double buf[WK_MAX_DIMS];
      int n = 0;
      if (eat(ps, '[')) {
        if (!eat(ps, ']')) {
          do {
            if (n == WK_MAX_DIMS || !number(ps, &f, &i, &is_int)) {
              fail(ps, "expected numbers in list default");
              return false;
            }
            buf[n++] = f;
          } while (eat(ps, ','));
          if (!eat(ps, ']')) { fail(ps, "expected ']'"); return false; }
        }
      } else {
        if (!number(ps, &f, &i, &is_int)) { fail(ps, "expected a float list default"); return false; }
        int m = a->fixed_len ? a->fixed_len : 1;
        for (n = 0; n < m; n++) buf[n] = f;
      }
      double *p = wk_malloc(sizeof(double) * (size_t)(n ? n : 1));
      if (!p) { fail(ps, "out of memory"); return false; }
      memcpy(p, buf, sizeof(double) * (size_t)n);
      a->def = WK_VFLOATS(p, n);
      return true;
    }
    case WK__A_TENSORS:
      if (eat(ps, '[') && eat(ps, ']')) {
        a->def = WK_VTS((wk_tensor *const *)NULL, 0);
        return true;
      }
      fail(ps, "Tensor[] defaults can only be []");
      return false;
    default:
      fail(ps, "this type only takes the default None");
      return false;
  }
}

static bool parse_return(parser *ps, wk__schema *s) {
  if (s->nouts == WK_MAX_OUTS) {
    fail(ps, "too many returns");
    return false;
  }
  wk__arg *r = &s->outs[s->nouts];
  if (!parse_type(ps, r)) return false;
  if (r->type == WK__A_TENSORS) {
    if (s->nouts > 0) { fail(ps, "Tensor[] must be the only return"); return false; }
    s->returns_list = true;
  } else if (r->type != WK__A_TENSOR) {
    fail(ps, "only Tensor and Tensor[] returns are supported");
    return false;
  }
  ws(ps);
  if (isalpha((unsigned char)*ps->p)) r->name = ident(ps);
  s->nouts++;
  return true;
}

bool wk__schema_parse(const char *text, wk__schema *s) {
  memset(s, 0, sizeof *s);
  parser ps = {text, text, s, true};
  if (!text) {
    wk_error(WK_ERR_NULL, "wk_op_declare: argument 'schema' is NULL");
    return false;
  }
  char *name = op_name(&ps);
  if (!name) return false;
  s->name = name;
  if (!eat(&ps, '(')) {
    fail(&ps, "expected '('");
    goto bad;
  }
  bool kwonly = false;
  if (!eat(&ps, ')')) {
    do {
      if (eat(&ps, '*')) {
        if (kwonly) { fail(&ps, "'*' given twice"); goto bad; }
        kwonly = true;
        continue;
      }
      if (s->nargs == WK_MAX_ARGS) { fail(&ps, "too many arguments"); goto bad; }
      wk__arg *a = &s->args[s->nargs];
      if (!parse_type(&ps, a)) goto bad;
      a->name = ident(&ps);
      if (!a->name) { fail(&ps, "expected an argument name"); goto bad; }
      for (int j = 0; j < s->nargs; j++)
        if (strcmp(s->args[j].name, a->name) == 0) { fail(&ps, "duplicate argument name"); goto bad; }
      a->kwarg_only = kwonly;
      s->nargs++;
      if (eat(&ps, '=')) {
        if (!parse_default(&ps, a)) goto bad;
      } else if (s->nargs > 1 && s->args[s->nargs - 2].has_default && !kwonly) {
        fail(&ps, "a positional argument without default follows one with a default");
        goto bad;
      }
    } while (eat(&ps, ','));
    if (!eat(&ps, ')')) { fail(&ps, "expected ',' or ')'"); goto bad; }
  }
  if (!eat_str(&ps, "->")) { fail(&ps, "expected '->'"); goto bad; }
  if (eat(&ps, '(')) {
    if (!eat(&ps, ')')) {
      do {
        if (!parse_return(&ps, s)) goto bad;
      } while (eat(&ps, ','));
      if (!eat(&ps, ')')) { fail(&ps, "expected ')' closing the returns"); goto bad; }
    }
  } else if (!parse_return(&ps, s)) {
    goto bad;
  }
  ws(&ps);
  if (*ps.p) { fail(&ps, "unexpected text after the returns"); goto bad; }
  /* A mutating return must name an argument's alias set. */
  for (int i = 0; i < s->nouts; i++) {
    if (!s->outs[i].alias) continue;
    bool match = false;
    for (int j = 0; j < s->nargs; j++)
      if (s->args[j].alias == s->outs[i].alias) match = true;
    if (!match) { fail(&ps, "a return's alias set matches no argument"); goto bad; }
  }
  return true;
bad:
  wk__schema_free(s);
  return false;
}

static void free_arg(wk__arg *a) {
  free(a->name);
  free(a->type_text);
  if (a->has_default) {
    if (a->def.tag == WK_V_INTS) free((void *)a->def.u.ints);
    if (a->def.tag == WK_V_FLOATS) free((void *)a->def.u.floats);
    if (a->def.tag == WK_V_STR) free((void *)a->def.u.s);
  }
}

void wk__schema_free(wk__schema *s) {
  for (int i = 0; i < WK_MAX_ARGS; i++) free_arg(&s->args[i]);
  for (int i = 0; i < WK_MAX_OUTS; i++) free_arg(&s->outs[i]);
  free(s->name);
  memset(s, 0, sizeof *s);
}

bool wk__schema_equal(const wk__schema *a, const wk__schema *b) {
  if (strcmp(a->name, b->name) || a->nargs != b->nargs || a->nouts != b->nouts) return false;
  for (int i = 0; i < a->nargs; i++)
    if (strcmp(a->args[i].type_text, b->args[i].type_text) || strcmp(a->args[i].name, b->args[i].name))
      return false;
  for (int i = 0; i < a->nouts; i++)
    if (strcmp(a->outs[i].type_text, b->outs[i].type_text)) return false;
  return true;
}
