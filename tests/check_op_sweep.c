/* check_op_sweep: one harness for every op on every backend (after ggml's
 * test-backend-ops and PyTorch's OpInfo). A table holds one row per declared
 * op: how to build valid and invalid calls from random shapes, which dtypes,
 * the tolerance. For each row the harness compares every cpu kernel with the
 * reference kernel (contiguous and non-contiguous inputs), checks that error
 * cases give one status and one message from every kernel, runs gradcheck in
 * float64, checks output shapes on the `meta` device when the core has one,
 * and, with SWEEP_DEVICE=fake|cuda, runs every row on that device against
 * the cpu. An op declared without a row fails the suite: a new op is tested
 * by adding a row (tests/op_sweep.sh runs the variants). */
#include <stdarg.h>
#include <wick/sdk/gradcheck.h>

#include "op_sweep_gen.h"
#include "op_sweep_gen_nn.h"
#include "op_sweep_gen_nn_surface.h"
#include "op_sweep_gen_linalg.h" /* issue 21, engineer A: linalg, reductions and indexing */
#include "testutil.h"

/* ==== the harness ============================================================================ */

static int32_t g_meta = -1; /* the meta device type, when the core has one */
static int32_t g_dev = -1;  /* SWEEP_DEVICE's type (fake or cuda), or -1 */
static const char *g_only;  /* SWEEP_OP: run only this row */
static bool g_verbose;      /* SWEEP_VERBOSE=1: print every case */
static int g_reps = 3;      /* SWEEP_REPS: random cases per (dtype, mode) */
static uint64_t g_seed;     /* SWEEP_SEED: another set of random cases */

static struct { int cases, compared, declined, errcases, gradchecks, metacases, devcases, known; } g_n;
/* Ops that gave WK_ERR_NO_KERNEL on meta / on the swept device (listed once at the end). */
static char g_nometa[4096], g_nodev[4096];

/* Failures of the current row. */
static struct {
  const sw_row *row;
  char msg[6144];
  int nfail, nknown;
} g_st;

static const char *check_name(unsigned check) {
  return check == C_VALUES   ? "values"
         : check == C_ERRORS ? "errors"
         : check == C_GRAD   ? "gradcheck"
         : check == C_META   ? "meta"
                             : "device";
}
static void failf(unsigned check, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(unsigned check, const char *fmt, ...) {
  bool known = (g_st.row->known & check) != 0;
  if (known)
    g_st.nknown++;
  else
    g_st.nfail++;
  if (g_st.nfail + g_st.nknown > 8) return; /* the first few tell the story */
  size_t len = strlen(g_st.msg);
  if (len + 64 >= sizeof g_st.msg) return;
  len += (size_t)snprintf(g_st.msg + len, sizeof g_st.msg - len, "\n  %s[%s] ", known ? "(known) " : "",
                          check_name(check));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_st.msg + len, sizeof g_st.msg - len, fmt, ap);
  va_end(ap);
}
static void note_once(char *list, size_t cap, const char *op) {
  char key[80];
  snprintf(key, sizeof key, " %s", op);
  size_t n = strlen(list), kl = strlen(key);
  for (const char *p = strstr(list, key); p; p = strstr(p + 1, key))
    if (p[kl] == 0 || p[kl] == ' ') return;
  if (n + kl + 1 < cap) strcat(list, key);
}

/* A case's random stream: the op's name, dtype, mode and repetition, through splitmix64. */
static void init_case(sw_case *c, const sw_row *r, wk_op *op, wk_dtype dt, int mode, int rep, bool grad) {
  memset(c, 0, sizeof *c);
  c->row = r, c->op = op, c->dt = dt, c->mode = mode, c->grad = grad;
  c->dev = wk_cpu();
  uint64_t h = 1469598103934665603ull;
  for (const char *p = r->op; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  h += (uint64_t)dt * 0x9e3779b97f4a7c15ull + (uint64_t)mode * 0xbf58476d1ce4e5b9ull +
       (uint64_t)rep * 0x94d049bb133111ebull + (grad ? 77 : 0) + g_seed;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  c->rng = (h ^ (h >> 31)) | 1;
}

/* "add(self=f32[2, 3], other=f32[3] strided, alpha=2)": a call as text, for repros. */
static void describe(const sw_case *c, const wk_value *a, char *buf, size_t n) {
  size_t len = (size_t)snprintf(buf, n, "%s(", c->row->op);
  for (int i = 0; i < c->n && len < n; i++) {
    const wk_value *v = &a[i];
    len += (size_t)snprintf(buf + len, n - len, "%s%s=", i ? ", " : "", wk_op_arg_name(c->op, i));
    char tmp[160] = "";
    switch (v->tag) {
      case WK_V_TENSOR: {
        wk_tensor *t = v->u.t;
        size_t l = (size_t)snprintf(tmp, sizeof tmp, "%s[", wk_dtype_name(wk_tensor_dtype(t)));
        for (int d = 0; d < wk_tensor_dim(t) && l < sizeof tmp; d++)
          l += (size_t)snprintf(tmp + l, sizeof tmp - l, "%s%lld", d ? ", " : "", (long long)wk_tensor_size(t, d));
        if (l < sizeof tmp) snprintf(tmp + l, sizeof tmp - l, "]%s", wk_tensor_is_contiguous(t) ? "" : " strided");
        break;
      }
      case WK_V_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->u.i);
        break;
      case WK_V_FLOAT:
        snprintf(tmp, sizeof tmp, "%g", v->u.f);
        break;
      case WK_V_BOOL:
        snprintf(tmp, sizeof tmp, "%s", v->u.b ? "True" : "False");
        break;
      case WK_V_STR:
        snprintf(tmp, sizeof tmp, "'%s'", v->u.s);
        break;
      case WK_V_DTYPE:
        snprintf(tmp, sizeof tmp, "%s", wk_dtype_name(v->u.dtype));
        break;
      case WK_V_DEVICE:
        wk_device_str(v->u.device, tmp, sizeof tmp);
        break;
      case WK_V_INTS: {
        size_t l = (size_t)snprintf(tmp, sizeof tmp, "[");
        for (int k = 0; k < v->len && l < sizeof tmp; k++)
          l += (size_t)snprintf(tmp + l, sizeof tmp - l, "%s%lld", k ? ", " : "", (long long)v->u.ints[k]);
        if (l < sizeof tmp) snprintf(tmp + l, sizeof tmp - l, "]");
        break;
      }
      case WK_V_TENSORS: {
        size_t l = (size_t)snprintf(tmp, sizeof tmp, "[");
        for (int k = 0; k < v->len && l < sizeof tmp; k++) {
          wk_tensor *t = v->u.tensors[k];
          l += (size_t)snprintf(tmp + l, sizeof tmp - l, "%s%s[", k ? ", " : "", wk_dtype_name(wk_tensor_dtype(t)));
          for (int d = 0; d < wk_tensor_dim(t) && l < sizeof tmp; d++)
            l += (size_t)snprintf(tmp + l, sizeof tmp - l, "%s%lld", d ? ", " : "", (long long)wk_tensor_size(t, d));
          if (l < sizeof tmp) l += (size_t)snprintf(tmp + l, sizeof tmp - l, "]");
        }
        if (l < sizeof tmp) snprintf(tmp + l, sizeof tmp - l, "]");
        break;
      }
      default:
        snprintf(tmp, sizeof tmp, "None");
        break;
    }
    if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s", tmp);
  }
  if (len < n) snprintf(buf + len, n - len, ")");
}

/* ---- one run ---- */
enum { L_CONTIG, L_SLICED, L_TRANSPOSED };
static const char *const g_layout_name[] = {"contiguous", "sliced (every other element)", "transposed"};

/* A copy of t for one run: contiguous, or non-contiguous with the same
 * values (a slice with step 2 of a wider buffer; the transpose of a
 * transposed buffer), on device dev. */
static wk_tensor *prep(wk_tensor *t, int layout, wk_device dev) {
  int nd = wk_tensor_dim(t);
  if (dev.type != WK_DEVICE_CPU) return CALL1("to.device", WK_VT(t), WK_VDEV(dev), WK_VNONE, WK_VB(true));
  if (layout == L_CONTIG || nd == 0 || wk_tensor_numel(t) == 0) return CALL1("clone", WK_VT(t));
  int64_t big[WK_MAX_DIMS];
  memcpy(big, wk_tensor_sizes(t), sizeof(int64_t) * (size_t)nd);
  wk_tensor *view;
  if (layout == L_TRANSPOSED && nd >= 2) {
    int64_t x = big[0];
    big[0] = big[nd - 1], big[nd - 1] = x;
    wk_tensor *buf = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
    view = buf ? CALL1("transpose", WK_VT(buf), WK_VI(0), WK_VI(nd - 1)) : NULL;
  } else {
    big[nd - 1] *= 2;
    wk_tensor *buf = wk_empty(big, nd, (wk_options){.dtype = wk_tensor_dtype(t)});
    view = buf ? CALL1("slice", WK_VT(buf), WK_VI(nd - 1), WK_VI(0), WK_VI(big[nd - 1]), WK_VI(2)) : NULL;
  }
  return view ? CALL1("copy_", WK_VT(view), WK_VT(t)) : NULL;
}

/* Results of a run as a flat list: each output (None as NULL, Tensor[]
 * unrolled), then every argument the schema marks mutated. */
typedef struct {
  int n;
  wk_tensor *t[40];
  wk_value args[WK_MAX_ARGS]; /* the arguments the run got */
  wk_tensor *lists[WK_MAX_ARGS][4];
} sw_res;

static bool op_is_random(const sw_case *c) {
  return (c->row->flags & SW_RANDOM) || (wk_op_tags(c->op) & WK_TAG_RANDOM);
}

/* Runs kernel k (the dispatcher when k < 0) on a fresh copy of c's
 * arguments in `layout` on `dev`. */
static wk_status run(const sw_case *c, int k, int layout, wk_device dev, sw_res *r) {
  r->n = 0;
  for (int i = 0; i < c->n; i++) {
    const wk_value *v = &c->a[i];
    r->args[i] = *v;
    if (v->tag == WK_V_TENSOR) {
      wk_tensor *t = prep(v->u.t, layout, dev);
      if (!t) return wk_last_error();
      r->args[i] = WK_VT(t);
    } else if (v->tag == WK_V_TENSORS) {
      for (int j = 0; j < v->len; j++) {
        r->lists[i][j] = prep(v->u.tensors[j], layout, dev);
        if (!r->lists[i][j]) return wk_last_error();
      }
      r->args[i] = WK_VTS(r->lists[i], v->len);
    } else if (c->devslot[i]) {
      r->args[i] = WK_VDEV(dev);
    }
  }
  if (op_is_random(c)) {
    wk_rng_set_state(wk_cpu(), 20240601, 0);
    if (dev.type != WK_DEVICE_CPU) wk_rng_set_state(dev, 20240601, 0);
    wk_clear_error();
  }
  wk_value o[WK_MAX_OUTS];
  wk_status st = k < 0 ? wk_op_call(c->op, r->args, c->n, o) : wk_op_call_kernel(c->op, k, r->args, c->n, o);
  if (st) return st;
  for (int i = 0; i < wk_op_num_outs(c->op); i++) {
    if (o[i].tag == WK_V_TENSORS) {
      for (int j = 0; j < o[i].len && r->n < 32; j++) r->t[r->n++] = o[i].u.tensors[j];
      wk_free((void *)o[i].u.tensors);
    } else {
      r->t[r->n++] = o[i].tag == WK_V_TENSOR ? o[i].u.t : NULL;
    }
  }
  for (int i = 0; i < c->n; i++)
    if (strchr(wk_op_arg_type(c->op, i), '!') && r->args[i].tag == WK_V_TENSOR && r->n < 40)
      r->t[r->n++] = r->args[i].u.t;
  return WK_OK;
}

static double tol_of(const sw_row *r, wk_dtype dt) {
  double t = dt == WK_F64 ? 1e-9 : dt == WK_F32 ? 2e-5 : dt == WK_F16 || dt == WK_BF16 ? 1e-2 : 0;
  return t * (r->tolx > 0 ? r->tolx : 1);
}

/* Compares two runs' results: presence, shape, dtype, and values within the
 * row's tolerance (NaN matches NaN). Returns false with a message. */
static bool same(const sw_row *r, const sw_res *got, const sw_res *want, bool values, double extra_tol, char *why,
                 size_t n) {
  if (got->n != want->n) {
    snprintf(why, n, "%d results, expected %d", got->n, want->n);
    return false;
  }
  for (int i = 0; i < want->n; i++) {
    wk_tensor *a = got->t[i], *b = want->t[i];
    if (!a || !b) {
      if (a != b) {
        snprintf(why, n, "result %d is %s, expected %s", i, a ? "a tensor" : "None", b ? "a tensor" : "None");
        return false;
      }
      continue;
    }
    bool shape_ok = wk_tensor_dim(a) == wk_tensor_dim(b);
    for (int d = 0; shape_ok && d < wk_tensor_dim(a); d++) shape_ok = wk_tensor_size(a, d) == wk_tensor_size(b, d);
    if (!shape_ok || wk_tensor_dtype(a) != wk_tensor_dtype(b)) {
      char sa[96] = "", sb[96] = "";
      size_t la = 0, lb = 0;
      for (int d = 0; d < wk_tensor_dim(a); d++)
        la += (size_t)snprintf(sa + la, sizeof sa - la, "%s%lld", d ? ", " : "", (long long)wk_tensor_size(a, d));
      for (int d = 0; d < wk_tensor_dim(b); d++)
        lb += (size_t)snprintf(sb + lb, sizeof sb - lb, "%s%lld", d ? ", " : "", (long long)wk_tensor_size(b, d));
      snprintf(why, n, "result %d is %s[%s], expected %s[%s]", i, wk_dtype_name(wk_tensor_dtype(a)), sa,
               wk_dtype_name(wk_tensor_dtype(b)), sb);
      return false;
    }
    if (!values) continue;
    int64_t m = wk_tensor_numel(b);
    double *x = malloc(sizeof(double) * (size_t)(m ? m : 1)), *y = malloc(sizeof(double) * (size_t)(m ? m : 1));
    wk_status s1 = wk_tensor_to_f64(a, x, m), s2 = wk_tensor_to_f64(b, y, m);
    double tol = tol_of(r, wk_tensor_dtype(b)) * extra_tol;
    bool ok = !s1 && !s2;
    if (!ok) snprintf(why, n, "result %d could not be read: %s", i, wk_last_error_message());
    for (int64_t j = 0; ok && j < m; j++) {
      if (x[j] == y[j] || (isnan(x[j]) && isnan(y[j])) || fabs(x[j] - y[j]) <= tol * (1 + fabs(y[j]))) continue;
      snprintf(why, n, "result %d, element %lld: %.10g, expected %.10g", i, (long long)j, x[j], y[j]);
      ok = false;
    }
    free(x);
    free(y);
    if (!ok) return false;
  }
  return true;
}

/* The kernels that run on device type `type` (cpu: also the any-device ones). */
static bool kernel_on(wk_op *op, int k, int32_t type) {
  int32_t dt;
  if (wk_op_kernel_info(op, k, &dt, NULL, NULL, NULL) != WK_OK) return false;
  return dt == type || (type == WK_DEVICE_CPU && dt == WK_DEVICE_DEFAULT);
}
/* The reference: the cpu kernel at WK_PRIORITY_REFERENCE, else the lowest. */
static int ref_kernel(wk_op *op) {
  int ref = -1, low = -1;
  for (int k = 0; k < wk_op_num_kernels(op); k++) {
    int32_t pr = 0;
    if (!kernel_on(op, k, WK_DEVICE_CPU)) continue;
    wk_op_kernel_info(op, k, NULL, &pr, NULL, NULL);
    if (pr == WK_PRIORITY_REFERENCE && ref < 0) ref = k;
    low = k; /* dispatch order: the last is the lowest priority */
  }
  return ref >= 0 ? ref : low;
}
static const char *kernel_desc(wk_op *op, int k, char *buf, size_t n) {
  if (k < 0) return "the dispatcher";
  const char *name = NULL, *plugin = NULL;
  wk_op_kernel_info(op, k, NULL, NULL, &name, &plugin);
  snprintf(buf, n, "kernel '%s' of plugin '%s'", name ? name : "?", plugin ? plugin : "?");
  return buf;
}
static void copy_msg(char *dst, size_t n) {
  snprintf(dst, n, "%s", wk_last_error_message());
}

/* Modes in which the row is tried. */
static bool mode_on(const sw_row *r, int mode) {
  return (mode == SW_BASIC || (r->modes & (1u << mode))) && !(r->crash & (1u << mode));
}
static unsigned dtypes_of(const sw_row *r) {
  const sw_trait *t = trait_of(r->op);
  if (r->dtypes == D_INPLACE) return t && t->inplace ? t->inplace : D_FB;
  if (r->dtypes) return r->dtypes;
  return t && t->dtypes ? t->dtypes : D_FIB;
}

/* ---- check 1: every cpu kernel against the reference, contiguous and strided ---- */
static void check_values(const sw_row *r, wk_op *op) {
  int ref = ref_kernel(op), nk = wk_op_num_kernels(op);
  char kd[160], desc[768], why[512], msg[512];
  if (ref < 0) {
    failf(C_VALUES, "%s has no cpu kernel", r->op);
    return;
  }
  bool view = (wk_op_tags(op) & WK_TAG_VIEW) != 0;
  const char *ret = strstr(wk_op_schema(op), "->");
  bool returns_mutated = ret && strchr(ret, '!') != NULL;
  for (int dt = 1; dt < WK_DTYPE_COUNT_; dt++) {
    if (!(dtypes_of(r) & DT(dt))) continue;
    for (int cs = 0; cs < SW_NMODES * g_reps; cs++) {
      int mode = cs / g_reps;
      if (!mode_on(r, mode)) continue;
      wk_scope_begin();
      sw_case c;
      init_case(&c, r, op, (wk_dtype)dt, mode, cs % g_reps, false);
      if (!r->gen(&c)) goto next;
      describe(&c, c.a, desc, sizeof desc);
      if (g_verbose) printf("  case: %s\n", desc), fflush(stdout);
      if (c.bad[0]) {
        failf(C_VALUES, "%s: building the inputs failed: %s", desc, c.bad);
        goto next;
      }
      sw_res want, got;
      if (run(&c, ref, L_CONTIG, wk_cpu(), &want)) {
        copy_msg(msg, sizeof msg);
        failf(C_VALUES, "%s: the reference %s fails: %s", desc, kernel_desc(op, ref, kd, sizeof kd), msg);
        goto next;
      }
      g_n.cases++;
      /* views alias their input; in-place and out= ops return the mutated argument itself */
      if (view && want.args[0].tag == WK_V_TENSOR)
        for (int i = 0; i < want.n; i++)
          if (want.t[i] && wk_tensor_numel(want.t[i]) > 0 && !wk_tensor_same_storage(want.t[i], want.args[0].u.t))
            failf(C_VALUES, "%s: result %d of a view op does not share the input's storage", desc, i);
      int mut = wk_op_mutated_arg(op);
      if (returns_mutated && mut >= 0 && want.t[0] != want.args[mut].u.t)
        failf(C_VALUES, "%s: the result is not the mutated argument '%s' itself", desc, wk_op_arg_name(op, mut));
      for (int k = -1; k < nk; k++) {
        if (k >= 0 && !kernel_on(op, k, WK_DEVICE_CPU)) continue;
        for (int layout = L_CONTIG; layout <= L_TRANSPOSED; layout++) {
          if ((k == ref && layout == L_CONTIG) || (layout != L_CONTIG && (r->flags & SW_CONTIG))) continue;
          wk_status st = run(&c, k, layout, wk_cpu(), &got);
          if ((st == WK_ERR_UNSUPPORTED || st == WK_ERR_NO_KERNEL) && k >= 0 && k != ref) { /* declined */
            g_n.declined++;
            wk_clear_error();
            continue;
          }
          if (st) {
            copy_msg(msg, sizeof msg);
            failf(C_VALUES, "%s, %s inputs: %s fails where the reference succeeds: %s", desc, g_layout_name[layout],
                  kernel_desc(op, k, kd, sizeof kd), msg);
            continue;
          }
          g_n.compared++;
          if (!same(r, &got, &want, !op_is_random(&c), 1, why, sizeof why))
            failf(C_VALUES, "%s, %s inputs: %s: %s", desc, g_layout_name[layout], kernel_desc(op, k, kd, sizeof kd),
                  why);
        }
      }
    next:
      wk_clear_error();
      wk_scope_end();
    }
  }
}

/* ---- check 2: error cases give one status and one message from every kernel and device ---- */
static void check_errors(const sw_row *r, wk_op *op) {
  if (!r->err) return;
  char kd[160], desc[768], m0[512], m1[512], base[64];
  base_name(r->op, base, sizeof base);
  if (!strncmp(r->op, "optim.", 6)) snprintf(base, sizeof base, "%s", r->op + 6), base[strlen(base) - 1] = 0;
  int ref = ref_kernel(op);
  for (int k = 0; k < 8; k++) {
    wk_scope_begin();
    sw_case c;
    sw_res res;
    init_case(&c, r, op, WK_F32, SW_BASIC, 0, false);
    if (!r->err(&c, k)) goto next;
    describe(&c, c.a, desc, sizeof desc);
    if (c.bad[0]) {
      failf(C_ERRORS, "error case %d (%s): building the inputs failed: %s", k, desc, c.bad);
      goto next;
    }
    wk_status s0 = run(&c, -1, L_CONTIG, wk_cpu(), &res);
    copy_msg(m0, sizeof m0);
    if (s0 == WK_OK) {
      if (!c.maybe) failf(C_ERRORS, "error case %d: %s is accepted", k, desc);
      goto next;
    }
    g_n.errcases++;
    if (g_verbose) printf("  error case: %s -> %s '%s'\n", desc, wk_status_name(s0), m0), fflush(stdout);
    if (!strstr(m0, base)) failf(C_ERRORS, "%s: the message does not name the op: %s", desc, m0);
    for (int kk = 0; kk < wk_op_num_kernels(op); kk++) {
      if (!kernel_on(op, kk, WK_DEVICE_CPU)) continue;
      wk_status s1 = run(&c, kk, L_CONTIG, wk_cpu(), &res);
      copy_msg(m1, sizeof m1);
      if ((s1 == WK_ERR_UNSUPPORTED || s1 == WK_ERR_NO_KERNEL) && kk != ref) continue; /* declined */
      if (s1 != s0 || strcmp(m1, m0))
        failf(C_ERRORS, "%s: %s gives %s '%s'; the dispatcher %s '%s'", desc, kernel_desc(op, kk, kd, sizeof kd),
              wk_status_name(s1), m1, wk_status_name(s0), m0);
    }
    for (int pass = 0; pass < 2; pass++) { /* the same error on meta and on the swept device */
      int32_t type = pass == 0 ? g_meta : g_dev;
      if (type < 0) continue;
      wk_status s1 = run(&c, -1, L_CONTIG, (wk_device){type, 0}, &res);
      copy_msg(m1, sizeof m1);
      if (s1 == WK_ERR_NO_KERNEL) continue; /* listed by the meta/device checks */
      if (s1 != s0 || strcmp(m1, m0))
        failf(pass == 0 ? C_META : C_DEVICE, "%s: on %s gives %s '%s'; on cpu %s '%s'", desc, wk_device_type_name(type),
              wk_status_name(s1), m1, wk_status_name(s0), m0);
    }
  next:
    wk_clear_error();
    wk_scope_end();
  }
}

/* ---- check 3: gradcheck in float64 ---- */
typedef struct {
  const sw_case *c;
  int pos[64], elem[64]; /* where each leaf goes: argument, list element (-1: a plain tensor) */
} sw_gc;

static wk_tensor *gc_fn(void *ctx, wk_tensor *const *in, int n) {
  const sw_gc *g = ctx;
  const sw_case *c = g->c;
  wk_value a[WK_MAX_ARGS];
  wk_tensor *lists[WK_MAX_ARGS][4];
  memcpy(a, c->a, sizeof a);
  for (int i = 0; i < c->n; i++)
    if (a[i].tag == WK_V_TENSORS) {
      memcpy(lists[i], a[i].u.tensors, sizeof(wk_tensor *) * (size_t)a[i].len);
      a[i].u.tensors = lists[i];
    }
  for (int k = 0; k < n; k++) {
    if (g->elem[k] < 0)
      a[g->pos[k]] = WK_VT(in[k]);
    else
      lists[g->pos[k]][g->elem[k]] = in[k];
  }
  wk_value o[WK_MAX_OUTS];
  if (wk_op_call(c->op, a, c->n, o) != WK_OK) return NULL;
  wk_tensor *y = NULL;
  if (o[0].tag == WK_V_TENSORS) {
    y = o[0].len > c->grad_out ? o[0].u.tensors[c->grad_out] : NULL;
    wk_free((void *)o[0].u.tensors);
  } else if (o[c->grad_out].tag == WK_V_TENSOR) {
    y = o[c->grad_out].u.t;
  }
  if (!y) wk_error(WK_ERR_INTERNAL, "gradcheck: result %d of %s is None", c->grad_out, c->row->op);
  return y; /* scope-owned: the caller's release gives up the scope's reference */
}

static bool grad_applies(const sw_row *r, wk_op *op) {
  uint32_t tags = wk_op_tags(op);
  const char *ret = strstr(wk_op_schema(op), "->");
  bool returns_mutated = ret && strchr(ret, '!'); /* in place, out=: no leaf to differentiate */
  return !(r->flags & (SW_NOGRAD | SW_RANDOM)) &&
         !(tags & (WK_TAG_NONDIFF | WK_TAG_RANDOM | WK_TAG_INPLACE | WK_TAG_FACTORY)) && !returns_mutated &&
         (dtypes_of(r) & DT(WK_F64));
}

static void check_grad(const sw_row *r, wk_op *op) {
  if (!grad_applies(r, op)) return;
  char desc[768], msg[512];
  wk_scope_begin();
  sw_case c;
  init_case(&c, r, op, WK_F64, SW_BASIC, 0, true);
  sw_gc g = {&c, {0}, {0}};
  wk_tensor *leaves[64];
  int nl = 0;
  if (!r->gen(&c)) goto done;
  describe(&c, c.a, desc, sizeof desc);
  if (c.bad[0]) {
    failf(C_GRAD, "%s: building the inputs failed: %s", desc, c.bad);
    goto done;
  }
  for (int i = 0; i < c.n; i++) {
    if (c.frozen[i] || strchr(wk_op_arg_type(op, i), '!')) continue;
    int cnt = c.a[i].tag == WK_V_TENSORS ? c.a[i].len : c.a[i].tag == WK_V_TENSOR ? 1 : 0;
    for (int j = 0; j < cnt && nl < 64; j++) {
      wk_tensor *t = c.a[i].tag == WK_V_TENSORS ? c.a[i].u.tensors[j] : c.a[i].u.t;
      if (wk_tensor_dtype(t) != WK_F64) continue;
      wk_tensor *leaf = CALL1("clone", WK_VT(t));
      if (!leaf || wk_tensor_set_requires_grad(leaf, true)) continue;
      g.pos[nl] = i, g.elem[nl] = c.a[i].tag == WK_V_TENSORS ? j : -1;
      leaves[nl++] = leaf;
    }
  }
  if (!nl) goto done;
  g_n.gradchecks++;
  if (g_verbose) printf("  gradcheck: %s\n", desc), fflush(stdout);
  wk_tensor *y = gc_fn(&g, leaves, nl);
  if (!y) {
    copy_msg(msg, sizeof msg);
    failf(C_GRAD, "%s: the call fails with inputs that require grad: %s", desc, msg);
    goto done;
  }
  bool req = wk_tensor_requires_grad(y);
  wk_release(y);
  if (!req) {
    failf(C_GRAD, "%s: the result does not require grad (no derivative formula?)", desc);
    goto done;
  }
  wk_gradcheck_opts o = {1e-6, 1e-5, 1e-3, 11};
  if (wk_gradcheck(gc_fn, &g, leaves, nl, &o) != WK_OK) {
    copy_msg(msg, sizeof msg);
    failf(C_GRAD, "%s: %s", desc, msg);
  }
done:
  wk_clear_error();
  wk_scope_end();
}

/* ---- checks 4 and 5: the meta device (shapes, dtypes) and another device (values) ---- */
static void check_on(const sw_row *r, wk_op *op, int32_t type, unsigned check) {
  bool meta = check == C_META;
  char kd[160], desc[768], why[512], msg[512];
  wk_device dev = {type, 0};
  for (int dt = 1; dt < WK_DTYPE_COUNT_; dt++) {
    if (!(dtypes_of(r) & DT(dt))) continue;
    for (int cs = 0; cs < SW_NMODES * g_reps; cs++) {
      int mode = cs / g_reps;
      if (!mode_on(r, mode)) continue;
      wk_scope_begin();
      sw_case c;
      sw_res want, got;
      init_case(&c, r, op, (wk_dtype)dt, mode, cs % g_reps, false);
      if (!r->gen(&c) || c.bad[0] || run(&c, -1, L_CONTIG, wk_cpu(), &want)) goto next; /* check_values says why */
      describe(&c, c.a, desc, sizeof desc);
      for (int k = -1; k < wk_op_num_kernels(op); k++) {
        if (k >= 0 && (meta || !kernel_on(op, k, type) || kernel_on(op, k, WK_DEVICE_CPU))) continue;
        wk_status st = run(&c, k, L_CONTIG, dev, &got);
        if (st == WK_ERR_NO_KERNEL && k < 0) {
          note_once(meta ? g_nometa : g_nodev, sizeof g_nometa, r->op);
          break;
        }
        if (st == WK_ERR_UNSUPPORTED && k >= 0) continue;
        if (meta && (r->flags & SW_DYNAMIC)) continue; /* no shape to check: only that it did not crash */
        if (st) {
          copy_msg(msg, sizeof msg);
          failf(check, "%s: %s on %s fails where the cpu succeeds: %s", desc, kernel_desc(op, k, kd, sizeof kd),
                wk_device_type_name(type), msg);
          continue;
        }
        if (meta)
          g_n.metacases++;
        else
          g_n.devcases++;
        double extra = !meta && strcmp(wk_device_type_name(type), "cuda") == 0 ? 10 : 1; /* other summation orders */
        if (!same(r, &got, &want, !meta && !op_is_random(&c), extra, why, sizeof why))
          failf(check, "%s: %s on %s: %s", desc, kernel_desc(op, k, kd, sizeof kd), wk_device_type_name(type), why);
        for (int i = 0; i < got.n; i++)
          if (got.t[i] && wk_tensor_device(got.t[i]).type != type)
            failf(check, "%s: result %d is on %s, not on %s", desc, i,
                  wk_device_type_name(wk_tensor_device(got.t[i]).type), wk_device_type_name(type));
      }
    next:
      wk_clear_error();
      wk_scope_end();
    }
  }
}

/* ==== the table =============================================================================== */

/* One row per declared op. To test a new op, add its row: the generator that
 * builds its calls (g_pw reads any pointwise schema's argument names; write a
 * g_<op> in op_sweep_gen.h when none fits), the error generator, the dtypes
 * and shape modes it takes, flags (SW_NOGRAD, SW_RANDOM, ...) with a comment
 * saying why. Ops of op_list.h's unary, binary and compare families get their
 * rows from the family macros below, with per-name ranges and dtypes in
 * op_sweep_gen.h's g_traits. A real bug found by a row is marked there with
 * .known (the checks that fail) or .crash (the modes not run) and .why (the
 * repro), so the suite stays green and the report says so. */

/* Families, one row generator each, from op_list.h's lists (X(name, tags[, dtype rule])). */
#define SW_UNARY_ROWS(name, tags, rule)                                                                    \
  {.op = #name, .gen = g_pw, .err = e_pw, .modes = M_ALL},                                                 \
      {.op = #name "_",                                                                                    \
       .gen = g_pw,                                                                                        \
       .err = e_pw,                                                                                        \
       .dtypes = D_INPLACE,                                                                                \
       .modes = M_EMPTY | M_SCALAR},                                                                       \
      {.op = #name ".out", .gen = g_pw, .err = e_pw, .modes = M_EMPTY | M_SCALAR},
#define SW_BINARY_ROWS(name, ...)                                                                         \
  {.op = #name, .gen = g_pw, .err = e_pw, .modes = M_ALL},                                                \
      {.op = #name "_", .gen = g_pw, .err = e_pw, .dtypes = D_INPLACE, .modes = M_BCAST | M_EMPTY | M_SCALAR}, \
      {.op = #name ".out", .gen = g_pw, .err = e_pw, .modes = M_BCAST | M_EMPTY},                              \
      {.op = #name ".Scalar", .gen = g_pw, .err = e_pw, .modes = M_EMPTY | M_SCALAR},                          \
      {.op = #name "_.Scalar", .gen = g_pw, .err = e_pw, .dtypes = D_INPLACE, .modes = M_EMPTY},
#define SW_COMPARE_ROWS(name, ...)                                                    \
  {.op = #name, .gen = g_pw, .err = e_pw, .modes = M_ALL},                            \
      {.op = #name ".Scalar", .gen = g_pw, .err = e_pw, .modes = M_EMPTY | M_SCALAR}, \
      {.op = #name ".out", .gen = g_pw, .err = e_pw, .modes = M_BCAST | M_EMPTY},

#define M_ES (M_EMPTY | M_SCALAR)
#define M_BES (M_BCAST | M_EMPTY | M_SCALAR)

static const sw_row g_rows[] = {
    /* ---- pointwise: the families, then the rest ---- */
    /* clang-format off */
    WK_UNARY_OPS(SW_UNARY_ROWS)
    WK_BINARY_OPS(SW_BINARY_ROWS)
    WK_COMPARE_OPS(SW_COMPARE_ROWS)
    SW_BINARY_ROWS(add) SW_BINARY_ROWS(sub) SW_BINARY_ROWS(div)
    /* clang-format on */
    {.op = "leaky_relu", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ALL},
    {.op = "leaky_relu_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "gelu", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ALL},
    {.op = "clamp", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "softplus", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ALL},
    {.op = "clamp_min", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "clamp_min_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "clamp_max", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "clamp_max_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "lerp.Scalar", .gen = g_lerp, .err = e_lerp, .dtypes = D_FB, .modes = M_BES},
    {.op = "lerp.Tensor", .gen = g_lerp, .err = e_lerp, .dtypes = D_FB, .modes = M_BES},
    {.op = "addcmul", .gen = g_addc, .err = e_addc, .dtypes = D_FIB, .modes = M_BES},
    {.op = "addcmul_", .gen = g_addc, .err = e_addc, .dtypes = D_FB, .modes = M_BES},
    {.op = "addcdiv", .gen = g_addc, .err = e_addc, .dtypes = D_FB, .modes = M_BES},
    {.op = "addcdiv_", .gen = g_addc, .err = e_addc, .dtypes = D_FB, .modes = M_BES},
    {.op = "elu", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ALL},
    {.op = "elu_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "celu", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ALL},
    {.op = "celu_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "hardtanh", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "hardtanh_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "clamp_", .gen = g_pw, .err = e_pw, .dtypes = D_FB, .modes = M_ES},
    {.op = "where.self", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "isnan", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ES},
    {.op = "isinf", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ES},
    {.op = "nan_to_num", .gen = g_pw, .err = e_pw, .dtypes = D_FIB, .modes = M_ES},
    {.op = "masked_fill.Scalar", .gen = g_masked_fill, .err = e_masked_fill, .dtypes = D_FIB, .modes = M_BES},
    {.op = "masked_fill_.Scalar", .gen = g_masked_fill, .err = e_masked_fill, .dtypes = D_FIB, .modes = M_BES},
    /* ---- factories (random ones compared by shape and dtype) ---- */
    {.op = "zeros", .gen = g_factory, .err = e_factory, .dtypes = D_ALL, .modes = M_ES},
    {.op = "ones", .gen = g_factory, .err = e_factory, .dtypes = D_ALL, .modes = M_ES},
    {.op = "full", .gen = g_factory, .err = e_factory, .dtypes = D_ALL, .modes = M_ES},
    {.op = "arange", .gen = g_arange, .err = e_arange, .dtypes = D_FI, .modes = M_EMPTY},
    {.op = "linspace", .gen = g_linspace, .err = e_linspace, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "eye", .gen = g_eye, .err = e_eye, .dtypes = D_ALL, .modes = M_EMPTY},
    {.op = "zeros_like", .gen = g_like, .dtypes = D_ALL, .modes = M_ES},
    {.op = "ones_like", .gen = g_like, .dtypes = D_ALL, .modes = M_ES},
    {.op = "full_like", .gen = g_like, .dtypes = D_ALL, .modes = M_ES},
    {.op = "fill_", .gen = g_fill, .dtypes = D_FIB, .modes = M_ES},
    {.op = "zero_", .gen = g_fill, .dtypes = D_FIB, .modes = M_ES},
    {.op = "rand", .gen = g_factory, .err = e_factory, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "randn", .gen = g_factory, .err = e_factory, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "randint", .gen = g_factory, .err = e_factory, .dtypes = D_FI, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "randperm",
     .gen = g_randperm,
     .err = e_randperm,
     .dtypes = DT(WK_I64) | DT(WK_F32),
     .modes = M_EMPTY,
     .flags = SW_RANDOM},
    {.op = "rand_like", .gen = g_like, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "randn_like", .gen = g_like, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "bernoulli", .gen = g_fill, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "bernoulli.p", .gen = g_fill, .err = e_fill, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "uniform_", .gen = g_fill, .err = e_fill, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "normal_", .gen = g_fill, .err = e_fill, .dtypes = D_F, .modes = M_ES, .flags = SW_RANDOM},
    /* ---- views ---- */
    {.op = "view", .gen = g_view, .err = e_view, .dtypes = D_FIB, .modes = M_ES, .flags = SW_CONTIG},
    {.op = "reshape", .gen = g_view, .err = e_view, .dtypes = D_FIB, .modes = M_ES},
    {.op = "permute", .gen = g_permute, .err = e_permute, .dtypes = D_FIB, .modes = M_ES},
    {.op = "transpose", .gen = g_transpose, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "t", .gen = g_t, .err = e_t, .dtypes = D_FIB, .modes = M_ES},
    {.op = "slice", .gen = g_slice, .err = e_slice, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "narrow", .gen = g_narrow, .err = e_narrow, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "select", .gen = g_select, .err = e_select, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "expand", .gen = g_expand, .err = e_expand, .dtypes = D_FIB, .modes = M_ES},
    {.op = "squeeze", .gen = g_squeeze, .dtypes = D_FIB, .modes = M_ES},
    {.op = "squeeze.dim", .gen = g_squeeze, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "unsqueeze", .gen = g_squeeze, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "flatten", .gen = g_flatten, .err = e_flatten, .dtypes = D_FIB, .modes = M_ES},
    {.op = "contiguous", .gen = g_self, .dtypes = D_FIB, .modes = M_ES},
    {.op = "as_strided", .gen = g_as_strided, .err = e_as_strided, .dtypes = D_FIB, .flags = SW_CONTIG},
    {.op = "alias", .gen = g_self, .dtypes = D_FIB, .modes = M_ES},
    /* ---- copies and casts ---- */
    {.op = "copy_",
     .gen = g_copy_,
     .err = e_copy_,
     .dtypes = D_FIB,
     .modes = M_BES},
    {.op = "clone", .gen = g_self, .dtypes = D_ALL, .modes = M_ES},
    {.op = "to.dtype", .gen = g_to_dtype, .dtypes = D_ALL, .modes = M_ES},
    {.op = "to.device", .gen = g_to_device, .dtypes = D_FIB, .modes = M_ES},
    /* ---- reductions ---- */
    {.op = "sum", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "sum.dim_IntList", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "mean", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "mean.dim", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "prod", .gen = g_reduce, .err = e_reduce, .dtypes = D_FI, .modes = M_ES, .lo = 0.5, .hi = 1.5},
    {.op = "prod.dim_int", .gen = g_reduce, .err = e_reduce, .dtypes = D_FI, .modes = M_ES, .lo = 0.5, .hi = 1.5},
    {.op = "max", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "max.dim", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "min", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "min.dim", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "argmax", .gen = g_reduce, .err = e_reduce, .dtypes = D_FI, .modes = M_ES},
    {.op = "argmin", .gen = g_reduce, .err = e_reduce, .dtypes = D_FI, .modes = M_ES},
    {.op = "var.correction", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "std.correction", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "norm", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "logsumexp", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "all", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "all.dim", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "any", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "any.dim", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "cumsum", .gen = g_cumsum, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "cumprod", .gen = g_cumsum, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "logcumsumexp", .gen = g_cumsum, .err = e_dim5, .dtypes = D_FB, .modes = M_ES},
    {.op = "cummax", .gen = g_cumsum, .err = e_dim5, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_ES},
    {.op = "cummin", .gen = g_cumsum, .err = e_dim5, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_ES},
    {.op = "amax", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_ES},
    {.op = "amin", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_ES},
    {.op = "aminmax", .gen = g_reduce, .err = e_reduce, .dtypes = D_FIB, .modes = M_ES},
    {.op = "nansum", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "nanmean", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "var_mean.correction", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "std_mean.correction", .gen = g_reduce, .err = e_reduce, .dtypes = D_FB, .modes = M_ES},
    {.op = "count_nonzero", .gen = g_reduce, .err = e_reduce, .dtypes = D_ALL, .modes = M_ES},
    {.op = "kthvalue", .gen = g_kth_median, .err = e_kth_median, .dtypes = D_FIB, .modes = M_ES},
    {.op = "median", .gen = g_kth_median, .err = e_kth_median, .dtypes = D_FIB, .modes = M_ES},
    {.op = "median.dim", .gen = g_kth_median, .err = e_kth_median, .dtypes = D_FIB, .modes = M_ES},
    /* ---- linear algebra ---- */
    {.op = "mm", .gen = g_mm, .err = e_linalg, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "bmm", .gen = g_bmm, .err = e_linalg, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "addmm", .gen = g_addmm, .err = e_linalg, .dtypes = D_FIB, .modes = M_BCAST | M_EMPTY},
    {.op = "dot", .gen = g_dot, .err = e_linalg, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "matmul", .gen = g_matmul, .err = e_linalg, .dtypes = D_FIB, .modes = M_BCAST | M_EMPTY},
    {.op = "linear", .gen = g_linear, .err = e_linalg, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "outer", .gen = g_outer, .err = e_linalg, .dtypes = D_FIB, .modes = M_EMPTY},
    /* ---- neural-network ops ---- */
    {.op = "softmax", .gen = g_softmax, .err = e_dim5, .dtypes = D_FB, .modes = M_ES},
    {.op = "scaled_dot_product_attention", .gen = g_sdpa, .err = e_sdpa, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "log_softmax", .gen = g_softmax, .err = e_dim5, .dtypes = D_FB, .modes = M_ES},
    {.op = "conv2d", .gen = g_conv2d, .err = e_conv2d, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},
    {.op = "max_pool2d_with_indices", .gen = g_max_pool, .err = e_pool, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "avg_pool2d", .gen = g_avg_pool, .err = e_pool, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "adaptive_avg_pool2d", .gen = g_adaptive, .err = e_adaptive, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "batch_norm", .gen = g_batch_norm, .err = e_batch_norm, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},
    {.op = "layer_norm", .gen = g_layer_norm, .err = e_layer_norm, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},
    {.op = "glu", .gen = g_glu, .err = e_glu, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "prelu", .gen = g_prelu, .err = e_prelu, .dtypes = D_FB, .modes = M_ES},
    {.op = "dropout", .gen = g_dropout, .err = e_dropout, .dtypes = D_FB, .modes = M_ES, .flags = SW_RANDOM},
    {.op = "embedding", .gen = g_embedding, .err = e_embedding, .dtypes = D_FB, .modes = M_ES},
    {.op = "pad", .gen = g_pad, .err = e_pad, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "cross_entropy", .gen = g_class_loss, .err = e_class_loss, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "nll_loss", .gen = g_class_loss, .err = e_class_loss, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "mse_loss", .gen = g_mse, .err = e_mse, .dtypes = D_FB, .modes = M_ES},
    {.op = "binary_cross_entropy_with_logits", .gen = g_bce_logits, .err = e_bce_logits, .dtypes = D_FB, .modes = M_ES},
    SW_NN_SURFACE_ROWS /* issue 21's nn and loss surface: op_sweep_gen_nn_surface.h */
    /* ---- indexing and shape ---- */
    {.op = "cat", .gen = g_cat, .err = e_cat, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "stack", .gen = g_stack, .err = e_stack, .dtypes = D_FIB, .modes = M_ES},
    {.op = "split", .gen = g_split, .err = e_split, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "split_with_sizes", .gen = g_split, .err = e_split, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "chunk", .gen = g_split, .err = e_split, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "index_select", .gen = g_index_select, .err = e_index_select, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "gather", .gen = g_gather, .err = e_gather, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "scatter.src", .gen = g_scatter, .err = e_gather, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "scatter_.src", .gen = g_scatter, .err = e_gather, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "scatter_add", .gen = g_scatter, .err = e_gather, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "scatter_add_", .gen = g_scatter, .err = e_gather, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "masked_select",
     .gen = g_masked_select,
     .err = e_masked_select,
     .dtypes = D_FIB,
     .modes = M_BCAST | M_EMPTY,
     .flags = SW_DYNAMIC},
    {.op = "repeat", .gen = g_repeat, .err = e_repeat, .dtypes = D_FIB, .modes = M_ES},
    {.op = "flip", .gen = g_flip, .err = e_flip, .dtypes = D_FIB, .modes = M_ES},
    {.op = "roll", .gen = g_roll, .err = e_roll, .dtypes = D_FIB, .modes = M_ES},
    {.op = "tril", .gen = g_tril, .err = e_tril, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_EMPTY},
    {.op = "triu", .gen = g_tril, .err = e_tril, .dtypes = D_FIB | DT(WK_BOOL), .modes = M_EMPTY},
    {.op = "diag", .gen = g_diag, .err = e_diag, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "diagonal", .gen = g_diagonal, .err = e_diagonal, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "movedim", .gen = g_movedim, .err = e_movedim, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "tile", .gen = g_tile, .err = e_tile, .dtypes = D_FIB, .modes = M_ES},
    {.op = "unflatten", .gen = g_unflatten, .err = e_unflatten, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "repeat_interleave.self_int",
     .gen = g_repeat_interleave,
     .err = e_repeat_interleave,
     .dtypes = D_FIB,
     .modes = M_ES},
    {.op = "index_add", .gen = g_index_acf, .err = e_index_acf, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "index_copy", .gen = g_index_acf, .err = e_index_acf, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "index_fill.int_Scalar", .gen = g_index_acf, .err = e_index_acf, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "take", .gen = g_take, .err = e_take, .dtypes = D_FIB, .modes = M_ES},
    {.op = "take_along_dim", .gen = g_take_along_dim, .err = e_take_along_dim, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "argsort", .gen = g_argsort, .err = e_argsort, .dtypes = D_FIB, .modes = M_ES},
    {.op = "argsort.stable", .gen = g_argsort, .err = e_argsort, .dtypes = D_FIB, .modes = M_ES},
    {.op = "nonzero", .gen = g_nonzero, .dtypes = D_ALL, .modes = M_ES, .flags = SW_DYNAMIC},
    {.op = "argwhere", .gen = g_nonzero, .dtypes = D_ALL, .modes = M_ES, .flags = SW_DYNAMIC},
    {.op = "searchsorted.Tensor", .gen = g_searchsorted, .err = e_searchsorted, .dtypes = D_FIB, .modes = M_ES},
    {.op = "bucketize.Tensor", .gen = g_searchsorted, .err = e_searchsorted, .dtypes = D_FIB, .modes = M_ES},
    {.op = "bincount",
     .gen = g_bincount,
     .err = e_bincount,
     .dtypes = D_FB | DT(WK_I64), /* the weights' dtype (int64: no weights) */
     .modes = M_EMPTY,
     .flags = SW_DYNAMIC},
    {.op = "histc", .gen = g_histc, .err = e_histc, .dtypes = D_FB, .modes = M_ES},
    {.op = "topk", .gen = g_topk, .err = e_topk, .dtypes = D_FIB, .modes = M_ES},
    {.op = "sort", .gen = g_sort, .err = e_dim5, .dtypes = D_FIB, .modes = M_ES},
    {.op = "one_hot", .gen = g_one_hot, .err = e_one_hot, .dtypes = DT(WK_I64), .modes = M_ES},
    /* ---- backward ops (NOGRAD: no double-backward formula yet, "the derivative for 'X' is not implemented";
     * batch_norm_backward and layer_norm_backward have one, PyTorch's *_double_backward, which differentiates
     * through the input with the saved statistics as functions of it: as free inputs here they get none) ---- */
    {.op = "conv2d_backward", .gen = g_conv2d_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_EMPTY, .tolx = 10},
    {.op = "max_pool2d_with_indices_backward", .gen = g_max_pool_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "avg_pool2d_backward", .gen = g_avg_pool_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "adaptive_avg_pool2d_backward", .gen = g_adaptive_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_EMPTY},
    {.op = "batch_norm_backward",
     .gen = g_batch_norm_backward,
     .err = e_grad_shape,
     .dtypes = D_FB,
     .modes = M_EMPTY,
     .tolx = 10,
     .flags = SW_NOGRAD},
    {.op = "layer_norm_backward",
     .gen = g_layer_norm_backward,
     .err = e_grad_shape,
     .dtypes = D_FB,
     .modes = M_EMPTY,
     .tolx = 10,
     .flags = SW_NOGRAD},
    {.op = "embedding_dense_backward",
     .gen = g_embedding_backward,
     .err = e_grad_shape,
     .dtypes = D_FB,
     .modes = M_ES,
     .flags = SW_NOGRAD},
    {.op = "scaled_dot_product_attention_backward",
     .gen = g_sdpa_backward,
     .err = e_grad_shape,
     .dtypes = D_FB,
     .modes = M_EMPTY,
     .flags = SW_NOGRAD},
    {.op = "softmax_backward_data", .gen = g_softmax_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_ES},
    {.op = "log_softmax_backward_data", .gen = g_softmax_backward, .err = e_grad_shape, .dtypes = D_FB, .modes = M_ES},
    {.op = "pad_backward",
     .gen = g_pad_backward,
     .err = e_grad_shape,
     .dtypes = D_FB,
     .modes = M_EMPTY,
     .flags = SW_NOGRAD},
    {.op = "gelu_backward",
     .gen = g_act_backward,
     .err = e_act_backward,
     .dtypes = D_FB,
     .modes = M_ES,
     .flags = SW_NOGRAD},
    {.op = "threshold_backward", .gen = g_act_backward, .err = e_act_backward, .dtypes = D_FB, .modes = M_ES},
    {.op = "sigmoid_backward", .gen = g_act_backward, .err = e_act_backward, .dtypes = D_FB, .modes = M_ES},
    {.op = "tanh_backward", .gen = g_act_backward, .err = e_act_backward, .dtypes = D_FB, .modes = M_ES},
    /* ---- the optim plugin's fused updates ---- */
    {.op = "optim.sgd_step_", .gen = g_optim, .err = e_optim, .dtypes = D_F, .flags = SW_PLUGIN},
    {.op = "optim.adam_step_", .gen = g_optim, .err = e_optim, .dtypes = D_F, .flags = SW_PLUGIN},
    {.op = "optim.rmsprop_step_", .gen = g_optim, .err = e_optim, .dtypes = D_F, .flags = SW_PLUGIN},
    {.op = "optim.adagrad_step_", .gen = g_optim, .err = e_optim, .dtypes = D_F, .flags = SW_PLUGIN},
    /* ---- GradScaler's fused steps ---- */
    {.op = "amp_foreach_non_finite_check_and_unscale_", .gen = g_amp_unscale, .err = e_amp_unscale, .dtypes = D_FB},
    {.op = "amp_update_scale_", .gen = g_amp_update, .err = e_amp_update, .dtypes = DT(WK_F32)},
    /* ---- issue 21, engineer A: reductions, indexing and linalg (tests/op_sweep_gen_linalg.h) ---- */
    {.op = "mode", .gen = g_mode, .err = e_mode, .dtypes = D_FIB, .modes = M_ES},
    {.op = "unique", .gen = g_unique, .err = e_unique, .dtypes = D_ALL, .modes = M_ES, .flags = SW_DYNAMIC},
    {.op = "unique_consecutive", .gen = g_unique, .err = e_unique, .dtypes = D_ALL, .modes = M_ES, .flags = SW_DYNAMIC},
    {.op = "scatter_reduce.two", .gen = g_scatter_reduce, .err = e_scatter_reduce, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "index_put", .gen = g_index_put, .err = e_index_put, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "masked_scatter", .gen = g_masked_scatter, .err = e_masked_scatter, .dtypes = D_FIB, .modes = M_ALL},
    {.op = "einsum", .gen = g_einsum, .err = e_einsum, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "baddbmm", .gen = g_baddbmm, .err = e_baddbmm, .dtypes = D_FIB, .modes = M_BCAST | M_EMPTY},
    {.op = "addbmm", .gen = g_baddbmm, .err = e_baddbmm, .dtypes = D_FIB, .modes = M_BCAST | M_EMPTY},
    {.op = "tensordot", .gen = g_tensordot, .err = e_tensordot, .dtypes = D_FIB, .modes = M_EMPTY},
    {.op = "kron", .gen = g_kron, .err = e_kron, .dtypes = D_FIB, .modes = M_ES},
    {.op = "linalg_vector_norm", .gen = g_vector_norm, .err = e_vector_norm, .dtypes = D_FB, .modes = M_ES},
    {.op = "linalg_matrix_norm", .gen = g_matrix_norm, .err = e_matrix_norm, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_matrix_norm.str_ord", .gen = g_matrix_norm, .err = e_matrix_norm, .dtypes = D_F, .modes = M_EMPTY},
    /* cholesky and eigh read one triangle, so single-element finite differences do not see their symmetrised
     * gradient: it is checked against PyTorch's in tests/check_linalg_surface.c instead */
    {.op = "linalg_cholesky", .gen = g_cholesky, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY, .flags = SW_NOGRAD},
    {.op = "linalg_qr", .gen = g_qr, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_eigh", .gen = g_eigh, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY, .flags = SW_NOGRAD},
    {.op = "linalg_svd", .gen = g_svd, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_solve", .gen = g_solve, .err = e_linalg_a, .dtypes = D_F, .modes = M_BCAST | M_EMPTY},
    {.op = "linalg_slogdet", .gen = g_square_one, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_inv", .gen = g_square_one, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_det", .gen = g_square_one, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_pinv", .gen = g_pinv, .err = e_linalg_a, .dtypes = D_F, .modes = M_EMPTY},
    {.op = "linalg_lstsq", .gen = g_lstsq, .err = e_linalg_a, .dtypes = D_F},
};
#define NROWS ((int)(sizeof g_rows / sizeof g_rows[0]))

/* Declared ops deliberately left out of the sweep, each with its reason. */
static const struct {
  const char *op, *why;
} g_unswept[] = {
    /* quantized dtypes and q-parameters are outside the sweep's vocabulary: tests/check_quant.c
     * checks these against hand-worked PyTorch arithmetic, and their errors */
    {"quantize_per_tensor", "quantized results (check_quant)"},
    {"quantize_per_channel", "quantized results (check_quant)"},
    {"dequantize", "quantized inputs (check_quant)"},
    {"int_repr", "quantized inputs (check_quant)"},
    {"quantized_linear", "quantized operands (check_quant)"},
    {"quantized_conv2d", "quantized operands (check_quant)"},
    {"quantized_linear_dynamic", "a quantized weight (check_quant)"},
    {"quantized.add", "quint8 operands, declared by the quant plugin (check_quant_torch: PyTorch's integers)"},
    {"fake_quantize_per_tensor_affine", "STE values and gradients in check_quant"},
    {"fake_quantize_per_channel_affine", "STE values and gradients in check_quant"},
    {"fake_quantize_per_tensor_affine_backward", "through fake_quantize's backward in check_quant"},
    {"fake_quantize_per_channel_affine_backward", "through fake_quantize's backward in check_quant"},
    {NULL, NULL}};

/* ==== the tests =============================================================================== */

START_TEST(test_op_sweep_every_op_has_a_row) {
  char missing[4096] = "", dup[1024] = "";
  int nmissing = 0;
  for (int i = 0; i < wk_op_count(); i++) {
    const char *name = wk_op_name(wk_op_at(i));
    bool found = false;
    for (int r = 0; r < NROWS && !found; r++) found = !strcmp(g_rows[r].op, name);
    for (int u = 0; g_unswept[u].op && !found; u++) found = !strcmp(g_unswept[u].op, name);
    if (!found) {
      nmissing++;
      note_once(missing, sizeof missing, name);
    }
  }
  for (int r = 0; r < NROWS; r++)
    for (int q = 0; q < r; q++)
      if (!strcmp(g_rows[r].op, g_rows[q].op)) note_once(dup, sizeof dup, g_rows[r].op);
  ck_assert_msg(nmissing == 0, "%d declared op(s) have no row in tests/check_op_sweep.c (add one):%s", nmissing,
                missing);
  ck_assert_msg(!dup[0], "ops with two rows:%s", dup);
}
END_TEST

START_TEST(test_op_sweep_row) {
  const sw_row *r = &g_rows[_i];
  if (g_only && strcmp(g_only, r->op)) return;
  memset(&g_st, 0, sizeof g_st);
  g_st.row = r;
  wk_op *op = wk_op_find(r->op);
  wk_clear_error();
  if (!op) {
    ck_assert_msg(r->flags & SW_PLUGIN, "%s: the row names an op that is not declared", r->op);
    printf("check_op_sweep: %s: skipped, its plugin is not loaded\n", r->op);
    return;
  }
  if (g_dev < 0) {
    check_values(r, op);
    check_grad(r, op);
    if (g_meta >= 0) check_on(r, op, g_meta, C_META);
  } else {
    check_on(r, op, g_dev, C_DEVICE);
  }
  check_errors(r, op);
  if (r->crash) {
    g_st.nknown++;
    size_t len = strlen(g_st.msg);
    snprintf(g_st.msg + len, sizeof g_st.msg - len, "\n  (known) cases that crash are not run (modes 0x%x)", r->crash);
  }
  if (g_st.nknown) {
    g_n.known++;
    printf("check_op_sweep: %s: known failure (%s):%s\n", r->op, r->why ? r->why : "?", g_st.msg);
  } else if (r->known && g_dev < 0) {
    printf("check_op_sweep: %s: marked as a known failure but passes: remove the mark\n", r->op);
  }
  ck_assert_msg(g_st.nfail == 0, "%s:%s", r->op, g_st.msg);
}
END_TEST

/* ---- the fake device: host memory, no kernels of its own (only the any-device ones run there) ---- */
static int fake_count(void *u) {
  return 1;
}
static void *fake_alloc(void *u, int index, size_t n) {
  return malloc(n ? n : 1);
}
static void fake_free(void *u, int index, void *p) {
  free(p);
}
static wk_status fake_copy(void *u, void *dst, wk_device dd, const void *src, wk_device sd, size_t n) {
  memcpy(dst, src, n);
  return WK_OK;
}

static Suite *op_sweep_suite(void) {
  Suite *s = suite_create("op_sweep");
  TCase *tc = tcase_create("coverage");
  tcase_add_test(tc, test_op_sweep_every_op_has_a_row);
  suite_add_tcase(s, tc);
  tc = tcase_create("rows");
  tcase_add_loop_test(tc, test_op_sweep_row, 0, NROWS);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  const char *dev = getenv("SWEEP_DEVICE");
  g_only = getenv("SWEEP_OP");
  g_verbose = getenv("SWEEP_VERBOSE") && atoi(getenv("SWEEP_VERBOSE")) > 0;
  if (getenv("SWEEP_REPS") && atoi(getenv("SWEEP_REPS")) > 0) g_reps = atoi(getenv("SWEEP_REPS"));
  if (getenv("SWEEP_SEED")) g_seed = strtoull(getenv("SWEEP_SEED"), NULL, 0);
  if (wk_init() != WK_OK) {
    fprintf(stderr, "check_op_sweep: wk_init failed: %s\n", wk_last_error_message());
    return EXIT_FAILURE;
  }
  g_meta = wk_device_type_find("meta");
  wk_clear_error();
  if (dev && *dev && strcmp(dev, "cpu")) {
    g_meta = -1; /* the plain run checks meta */
    if (!strcmp(dev, "fake")) {
      wk_device_iface f = {sizeof f,   wk_abi_version(), "fake",    NULL, fake_count,
                           fake_alloc, fake_free,        fake_copy, NULL, NULL};
      if (wk_device_type_register(&f, &g_dev) != WK_OK) {
        fprintf(stderr, "check_op_sweep: cannot register the fake device: %s\n", wk_last_error_message());
        return EXIT_FAILURE;
      }
    } else {
      g_dev = wk_device_type_find(dev);
      if (g_dev < 0 || wk_device_count(g_dev) == 0) {
        printf("SKIP: no %s device (%s)\n", dev, g_dev < 0 ? "no such device type" : wk_device_type_status(g_dev));
        return 77;
      }
    }
    printf("check_op_sweep: every row on device '%s' against the cpu\n", dev);
  } else if (g_meta < 0) {
    printf("check_op_sweep: this core has no `meta` device type: the meta checks are skipped\n");
  }
  SRunner *sr = srunner_create(op_sweep_suite());
  srunner_set_fork_status(sr, CK_NOFORK); /* one process: wk_init once, rows share it */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  printf(
      "check_op_sweep: %d rows, %d cases, %d kernel/layout runs compared (%d declined), %d error cases, "
      "%d gradchecks, %d meta cases, %d device cases, %d rows with known failures\n",
      NROWS, g_n.cases, g_n.compared, g_n.declined, g_n.errcases, g_n.gradchecks, g_n.metacases, g_n.devcases,
      g_n.known);
  if (g_nometa[0]) printf("check_op_sweep: not on meta yet (no kernel there):%s\n", g_nometa);
  if (g_nodev[0]) printf("check_op_sweep: no kernel on '%s':%s\n", dev, g_nodev);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
