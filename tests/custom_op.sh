#!/bin/sh
# The out-of-tree operator plugin, end to end, the way a third party meets it:
#   1. `make install DESTDIR=$tmp` of this build tree (no root needed);
#   2. build examples/custom-op with its own Makefile, seeing Wick only through
#      the installed wick-sdk.pc (never this source tree's headers);
#   3. with the installed `wick`: `opcheck --plugin swiglu.so custom.swiglu`,
#      `opcheck relu` (the plugin's faster kernel against the reference one),
#      `info` (the plugin is listed as loaded, with its ABI); a namespaced op
#      with an overload (acme::scale.v2) under opcheck with per-argument
#      shapes and dtypes, bad --arg specs, --help, the unknown-op hint;
#   4. a small C program built against the installed libwick (wick.pc) checks
#      what opcheck does not: broadcasting, strides, dtypes, errors, gradients
#      through broadcasting, bit-identical relu, the env overrides, no leaks.
# Exit 0 on success, 1 on failure, 77 (skip) when pkg-config or a C compiler
# is missing. Quiet unless something fails.
#
# Environment (from AM_TESTS_ENVIRONMENT): top_builddir, top_srcdir, MAKE;
# without them: the current directory (where `make check` runs tests), the
# harness's $srcdir or this script's parent directory, and `make`.

: "${top_builddir:=.}"
: "${top_srcdir:=${srcdir:-$(dirname "$0")/..}}"
: "${MAKE:=make}"
top_builddir=$(cd "$top_builddir" && pwd) || exit 1
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 1
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

command -v "$PKG_CONFIG" >/dev/null 2>&1 || { echo "SKIP: $PKG_CONFIG not found"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($CC) found"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wick-custom-op.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
log=$tmp/log

fail() {
  echo "FAIL: $*"
  [ -s "$log" ] && { echo "---- output:"; tail -n 60 "$log"; }
  exit 1
}

# The parent make's flags (jobserver, `TESTS=...` overrides) are not for these.
unset MAKEFLAGS MFLAGS MAKELEVEL CPATH C_INCLUDE_PATH LIBRARY_PATH

# ---- 1. install into a staging tree ---------------------------------------------------------
dest=$tmp/dest
$MAKE -C "$top_builddir" install DESTDIR="$dest" >"$log" 2>&1 || fail "make install DESTDIR=$dest"
pc=$(find "$dest" -name wick-sdk.pc | head -n 1)
[ -n "$pc" ] || fail "no wick-sdk.pc under $dest"
pcdir=$(dirname "$pc")
# Only the staged tree; the sysroot maps its paths (prefix/include) under $dest.
PKG_CONFIG_LIBDIR=$pcdir
PKG_CONFIG_PATH=
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
"$PKG_CONFIG" --exists wick-sdk wick >"$log" 2>&1 || fail "pkg-config cannot read the installed .pc files"

wick=$(find "$dest" -type f -name wick -perm -u+x | head -n 1)
[ -n "$wick" ] || fail "no installed wick program under $dest"
libdir=$(dirname "$(find "$dest" -name 'libwick.so*' | head -n 1)")
# pkgconf prefixes --variable paths with the sysroot, pkg-config does not.
plugdir=$("$PKG_CONFIG" --variable=plugindir wick-sdk)
case $plugdir in "$dest"/*) ;; *) plugdir=$dest$plugdir ;; esac
[ -f "$plugdir/cpu.so" ] || fail "the cpu plugin is not installed in $plugdir"

# ---- 2. build the example with its own Makefile --------------------------------------------
ex=$tmp/custom-op
mkdir "$ex" || exit 1
cp "$top_srcdir/examples/custom-op/Makefile" "$top_srcdir/examples/custom-op/swiglu.c" "$ex/" || exit 1
# -MD records every header the compiler opened, to prove none came from here.
$MAKE -C "$ex" CC="$CC" CFLAGS="-O2 -Wall -Wextra -Werror" CPPFLAGS="-MD -MF swiglu.d" >"$log" 2>&1 ||
  fail "building examples/custom-op against the installed SDK"
[ -f "$ex/swiglu.so" ] || fail "the example's Makefile made no swiglu.so"
if grep -q -e "$top_srcdir/abi" -e "$top_srcdir/sdk" -e "$top_builddir/sdk" "$ex/swiglu.d"; then
  grep -e "$top_srcdir/" -e "$top_builddir/" "$ex/swiglu.d" >"$log"
  fail "the example compiled against headers of the source/build tree, not the installed SDK"
fi
grep -q "$dest/.*wick/sdk/redirect.h" "$ex/swiglu.d" || fail "the example did not use the installed <wick/sdk/redirect.h>"

# ---- 3. the installed wick ------------------------------------------------------------------
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
unset WICK_PLUGINS WICK_DISABLE_PLUGINS WICK_DENY_KERNELS WICK_FORCE_KERNELS

# --plugin loads it explicitly (the installed cpu plugin is found on its own path).
WICK_PLUGIN_PATH=$plugdir "$wick" opcheck --plugin "$ex/swiglu.so" custom.swiglu >"$log" 2>&1 ||
  fail "wick opcheck --plugin swiglu.so custom.swiglu"
grep -q "ok: gradcheck" "$log" || fail "opcheck custom.swiglu ran no gradcheck"
WICK_PLUGIN_PATH=$plugdir "$wick" opcheck --plugin "$ex/swiglu.so" --shape 2x3x5 custom.swiglu >"$log" 2>&1 ||
  fail "wick opcheck --shape 2x3x5 custom.swiglu"

# From WICK_PLUGIN_PATH: the relu override must agree with the reference kernel.
WICK_PLUGIN_PATH=$ex:$plugdir "$wick" opcheck relu >"$log" 2>&1 || fail "wick opcheck relu"
grep -q "kernel 'swiglu.relu_fast' (swiglu) agrees" "$log" || fail "opcheck relu did not compare the swiglu kernel"

WICK_PLUGIN_PATH=$ex:$plugdir "$wick" info >"$log" 2>&1 || fail "wick info"
grep -q "^  swiglu  *loaded  *1\.0\.0  *ABI [0-9.]*  *$ex/swiglu\.so" "$log" || fail "wick info does not list swiglu as loaded"
grep -q "^  relu  *swiglu" "$log" || fail "wick info does not show swiglu's kernel winning relu"
grep -q "^  custom\.swiglu  *swiglu" "$log" || fail "wick info does not list custom.swiglu"

# A misspelled plugin name in WICK_DENY_KERNELS / WICK_FORCE_KERNELS is reported (stderr and
# wick info), never silently ignored; a correctly spelled one is not.
WICK_DENY_KERNELS=swiglo:relu WICK_FORCE_KERNELS=swiglu:relu WICK_PLUGIN_PATH=$ex:$plugdir "$wick" info >"$log" 2>&1 ||
  fail "wick info with WICK_DENY_KERNELS=swiglo:relu"
grep -q "^wick: warning: WICK_DENY_KERNELS names plugin 'swiglo', which matches no plugin candidate, so that entry has no effect; known plugins: core, .*swiglu" "$log" ||
  fail "no warning about the unknown plugin 'swiglo' in WICK_DENY_KERNELS"
grep -q "^  WICK_DENY_KERNELS: 'swiglo'" "$log" || fail "wick info does not list the unknown plugin 'swiglo'"
grep -q "names plugin 'swiglu'" "$log" && fail "a warning about 'swiglu', which is a loaded plugin"
WICK_DENY_KERNELS=swiglo:relu WICK_PLUGIN_PATH=$ex:$plugdir "$wick" info --json 2>/dev/null >"$log" ||
  fail "wick info --json with WICK_DENY_KERNELS=swiglo:relu"
grep -q '"unknown_kernel_plugins": \[{"variable": "WICK_DENY_KERNELS", "name": "swiglo"}\]' "$log" ||
  fail "wick info --json does not list the unknown plugin 'swiglo'"
# Named before --plugin loads it: warned at start-up, then a note that the entry applies.
WICK_DENY_KERNELS=swiglu:relu WICK_PLUGIN_PATH=$plugdir "$wick" opcheck --plugin "$ex/swiglu.so" relu >"$log" 2>&1 ||
  fail "wick opcheck --plugin swiglu.so relu with WICK_DENY_KERNELS=swiglu:relu"
grep -q "^wick: note: WICK_DENY_KERNELS: plugin 'swiglu' is loaded now (from $ex/swiglu.so); its entries apply" "$log" ||
  fail "no note that WICK_DENY_KERNELS's entry for swiglu applies once --plugin loaded it"
grep -q "kernel 'swiglu.relu_fast'" "$log" && fail "opcheck relu ran swiglu's kernel although WICK_DENY_KERNELS denied it"

# `wick info` shows the ABI each plugin was built for (text and --json).
abi=$(WICK_PLUGIN_PATH=$plugdir "$wick" info 2>/dev/null | sed -n 's/^Wick .* (ABI \([0-9.]*\))$/\1/p')
[ -n "$abi" ] || fail "wick info prints no core ABI"
WICK_PLUGIN_PATH=$ex:$plugdir "$wick" info >"$log" 2>&1 || fail "wick info"
grep -q "^  swiglu  *loaded  *1\.0\.0  *ABI $abi  *$ex/swiglu\.so" "$log" || fail "wick info does not show swiglu's ABI ($abi)"
WICK_PLUGIN_PATH=$ex:$plugdir "$wick" info --json >"$log" 2>&1 || fail "wick info --json"
grep -q "\"name\": \"swiglu\", \"status\": \"loaded\", \"version\": \"1.0.0\", \"abi\": \"$abi\"" "$log" ||
  fail "wick info --json does not show swiglu's ABI ($abi)"

# ---- 3b. a namespaced op with an overload, and opcheck's per-argument inputs ----------------
# acme::scale and acme::scale.v2 (PyTorch's ns::name.overload), built the way the example is.
cat >"$ex/acme.c" <<'EOF2'
#include <wick/sdk.h>
static wk_tensor *scale(wk_tensor *x, wk_tensor *w) { return wk_mul(x, w); }
static wk_tensor *scale_v2(wk_tensor *x, wk_tensor *w, double alpha) {
  wk_tensor *m = wk_mul(x, w), *r = wk_mul_scalar(m, alpha);
  wk_release(m);
  return r;
}
static wk_status init(void) {
  if (!wk_op_declare("acme::scale(Tensor self, Tensor weight) -> Tensor", WK_TAG_COMPOSITE) ||
      !wk_op_declare("acme::scale.v2(Tensor self, Tensor weight, float alpha=2) -> Tensor", WK_TAG_COMPOSITE))
    return wk_last_error();
  wk_status s = wk_kernel_register_unboxed("acme::scale", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE,
                                           (void (*)(void))scale, "acme.scale");
  if (!s) s = wk_kernel_register_unboxed("acme::scale.v2", WK_DEVICE_CPU, WK_PRIORITY_REFERENCE,
                                         (void (*)(void))scale_v2, "acme.scale_v2");
  return s;
}
WK_PLUGIN_DEFINE("acme", "0.1.0", "acme::scale and its overload v2", init, NULL)
EOF2
# shellcheck disable=SC2046
$CC -std=c11 -O1 -Wall -Wextra -Werror -fPIC -fvisibility=hidden $("$PKG_CONFIG" --cflags wick-sdk) -shared \
  -Wl,--no-undefined -o "$ex/acme.so" "$ex/acme.c" $("$PKG_CONFIG" --libs wick-sdk) >"$log" 2>&1 ||
  fail "building the acme plugin against the installed SDK"
acme() { WICK_PLUGIN_PATH=$plugdir "$wick" opcheck --plugin "$ex/acme.so" "$@"; }
acme --arg weight=4 acme::scale >"$log" 2>&1 || fail "wick opcheck acme::scale"
grep -q "^ok: gradcheck (2 float64 inputs)" "$log" || fail "opcheck acme::scale ran no gradcheck"
acme --arg weight=4 --arg alpha=0.5 acme::scale.v2 >"$log" 2>&1 || fail "wick opcheck acme::scale.v2"
grep -q "^PASS: acme::scale.v2" "$log" || fail "opcheck acme::scale.v2 did not pass"
# per-argument shapes and dtypes: self [2,3,4] f32, weight [4] f64 (promoted), then every tensor f32
acme --shape 2x3x4 --dtype f32 --arg weight=4:f64 acme::scale.v2 >"$log" 2>&1 ||
  fail "wick opcheck --dtype f32 --arg weight=4:f64 acme::scale.v2"
grep -q "^ok: gradcheck (1 float64 input)" "$log" || fail "opcheck with one f64 input did not gradcheck it"
acme --arg self=5x4:f32 --arg weight=1x4:f32 acme::scale >"$log" 2>&1 || fail "wick opcheck --arg self=5x4:f32"
grep -q "^skip: gradcheck needs float64 tensor inputs" "$log" || fail "opcheck of f32 inputs did not skip gradcheck"
# a shape the op refuses is a FAIL naming it, not a crash
acme --arg weight=5 acme::scale >"$log" 2>&1 && fail "opcheck acme::scale with weight [5] against [3, 4] passed"
grep -q "^FAIL: opcheck acme::scale: the reference kernel failed on the sample inputs" "$log" ||
  fail "no FAIL line for mismatched shapes"
# bad --arg specs: exit 2 with a message naming the problem
for spec in "nosuch=3|the op has no argument 'nosuch' (it has: self, weight, alpha)" "weight=4x|bad shape '4x'" \
  "weight=4:f33|unknown dtype 'f33'" "alpha=big|'big' is not a value of 'alpha' (float)" \
  "weight=none|'weight' is Tensor, which cannot be None" "alpha|argument spec 'alpha' is not NAME=VALUE"; do
  arg=${spec%%|*}
  want=${spec#*|}
  acme --arg "$arg" acme::scale.v2 >"$log" 2>&1
  [ $? -eq 2 ] || fail "opcheck --arg $arg did not exit 2"
  grep -qF "$want" "$log" || fail "opcheck --arg $arg: no '$want'"
done
# --help answers on stdout; an unknown op hints at --plugin and WICK_PLUGIN_PATH
"$wick" opcheck --help >"$log" 2>&1 || fail "wick opcheck --help"
grep -q -e "--arg NAME=VALUE" "$log" && grep -q "SHAPE\[:DTYPE\]" "$log" && grep -q "WICK_PLUGIN_PATH" "$log" ||
  fail "wick opcheck --help does not describe --arg"
WICK_PLUGIN_PATH=$plugdir "$wick" opcheck acme::scale >"$log" 2>&1 && fail "opcheck of an op no plugin declares passed"
grep -q "unknown op 'acme::scale'" "$log" && grep -q -e "--plugin PATH" "$log" &&
  grep -q "WICK_PLUGIN_PATH (searched now: $plugdir" "$log" || fail "no --plugin / WICK_PLUGIN_PATH hint for an unknown op"

# ---- 4. a program against the installed libwick ---------------------------------------------
cat >"$tmp/check.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick/wick.h>
#include <wick/sdk/gradcheck.h>

static int fails;
#define CHECK(c, ...)                                                          \
  do {                                                                         \
    if (!(c)) {                                                                \
      fails++;                                                                 \
      fprintf(stderr, "check.c:%d: ", __LINE__);                               \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, " [last error: %s]\n", wk_last_error_message());         \
      wk_clear_error();                                                        \
    }                                                                          \
  } while (0)

static wk_tensor *swiglu(wk_tensor *x, wk_tensor *g) {
  wk_value a[2] = {WK_VT(x), WK_VT(g)}, o[1];
  return wk_call("custom.swiglu", a, 2, o) == WK_OK ? o[0].u.t : NULL;
}
static wk_tensor *swiglu_fn(void *ctx, wk_tensor *const *in, int n) {
  (void)ctx, (void)n;
  return swiglu(in[0], in[1]);
}

/* Deterministic values in [-4, 4) as dtype dt. */
static wk_tensor *ramp(wk_dtype dt, const int64_t *shape, int nd, unsigned salt) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  unsigned s = 12345u + salt * 7919u;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    v[i] = (double)(s >> 8 & 0xffff) / 8192.0 - 4.0;
  }
  wk_tensor *t = wk_tensor_from_data(v, WK_F64, shape, nd), *c = wk_to_dtype(t, dt);
  wk_release(t);
  free(v);
  return c;
}
static double *vals(wk_tensor *t) {
  int64_t n = wk_tensor_numel(t);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (wk_tensor_to_f64(t, v, n)) {
    free(v);
    return NULL;
  }
  return v;
}
static double ref(double x, double g) { return x * g / (1 + exp(-g)); }

/* x [4,1,5] * silu(gate [3,5] as a transposed view) -> [4,3,5] in dtype dt. */
static void check_broadcast(wk_dtype dt, double tol) {
  wk_tensor *x = ramp(dt, (int64_t[]){4, 1, 5}, 3, 1), *gt = ramp(dt, (int64_t[]){5, 3}, 2, 2);
  wk_tensor *g = wk_t(gt), *y = swiglu(x, g);
  CHECK(y, "swiglu %s broadcast failed", wk_dtype_name(dt));
  if (y) {
    CHECK(wk_tensor_dtype(y) == dt && wk_tensor_dim(y) == 3 && wk_tensor_size(y, 0) == 4 &&
              wk_tensor_size(y, 1) == 3 && wk_tensor_size(y, 2) == 5,
          "swiglu %s: wrong result dtype or shape", wk_dtype_name(dt));
    double *xv = vals(x), *gv = vals(gt), *yv = vals(y);
    int bad = 0;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 5; k++) {
          double e = ref(xv[i * 5 + k], gv[k * 3 + j]), a = yv[(i * 3 + j) * 5 + k];
          if (!(fabs(a - e) <= tol * (1 + fabs(e)))) bad++;
        }
    CHECK(bad == 0, "swiglu %s: %d of 60 values wrong", wk_dtype_name(dt), bad);
    free(xv), free(gv), free(yv);
  }
  wk_release(x), wk_release(gt), wk_release(g), wk_release(y);
}

/* Index of op's kernel from `plugin`, or -1. */
static int kernel_of(wk_op *op, const char *plugin) {
  for (int k = 0; k < wk_op_num_kernels(op); k++) {
    const char *p;
    if (wk_op_kernel_info(op, k, NULL, NULL, NULL, &p) == WK_OK && strcmp(p, plugin) == 0) return k;
  }
  return -1;
}

/* relu through the dispatcher is bit for bit the reference kernel's result. */
static void check_relu(wk_op *relu, wk_dtype dt, int64_t n) {
  wk_tensor *x = ramp(dt, &n, 1, 3);
  void *p = wk_tensor_data(x);
  double sp[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY, -NAN, 1e-40, -1e-40};
  for (int i = 0; i < 8 && i < n; i++) {
    if (dt == WK_F32)
      ((float *)p)[i * 7] = (float)sp[i];
    else
      ((double *)p)[i * 7] = sp[i];
  }
  wk_value a[1] = {WK_VT(x)}, o[1];
  int ref = kernel_of(relu, "cpu");
  wk_tensor *fast = wk_relu(x), *slow = NULL;
  if (ref >= 0 && wk_op_call_kernel(relu, ref, a, 1, o) == WK_OK) slow = o[0].u.t;
  CHECK(fast && slow, "relu %s n=%lld failed", wk_dtype_name(dt), (long long)n);
  if (fast && slow)
    CHECK(wk_tensor_dtype(fast) == dt && wk_tensor_numel(fast) == n &&
              (n == 0 || memcmp(wk_tensor_data(fast), wk_tensor_data(slow), (size_t)n * wk_dtype_size(dt)) == 0),
          "relu %s n=%lld: the override differs from the reference kernel", wk_dtype_name(dt), (long long)n);
  wk_release(x), wk_release(fast), wk_release(slow);
}

int main(int argc, char **argv) {
  const char *want_relu = argc > 1 ? argv[1] : "swiglu";
  if (wk_init() != WK_OK) {
    fprintf(stderr, "wk_init: %s\n", wk_last_error_message());
    return 1;
  }
  wk_plugin *pl = wk_plugin_find("swiglu");
  CHECK(pl && wk_plugin_get_status(pl) == WK_PLUGIN_LOADED, "plugin swiglu is not loaded");
  int64_t live = wk_live_tensors();

  check_broadcast(WK_F64, 1e-12);
  check_broadcast(WK_F32, 1e-5);
  check_broadcast(WK_F16, 1e-2);
  check_broadcast(WK_BF16, 2e-2);

  { /* promotion, 0-dim, zero-size, a large (threaded) call */
    wk_tensor *x = ramp(WK_F32, (int64_t[]){2, 3}, 2, 4), *g = ramp(WK_F64, (int64_t[]){3}, 1, 5);
    wk_tensor *y = swiglu(x, g);
    CHECK(y && wk_tensor_dtype(y) == WK_F64, "f32 x f64 should give f64");
    wk_release(y);
    wk_tensor *s = wk_scalar_tensor(2.0, WK_F64);
    y = swiglu(s, x);
    CHECK(y && wk_tensor_dtype(y) == WK_F32 && wk_tensor_dim(y) == 2, "a 0-dim f64 x with f32 gate should give f32 [2,3]");
    wk_release(y), wk_release(s), wk_release(x), wk_release(g);
    x = ramp(WK_F32, (int64_t[]){0, 5}, 2, 6), g = ramp(WK_F32, (int64_t[]){5}, 1, 7);
    y = swiglu(x, g);
    CHECK(y && wk_tensor_numel(y) == 0 && wk_tensor_size(y, 1) == 5, "zero-size input");
    wk_release(y), wk_release(x), wk_release(g);
    int64_t big = 200003;
    x = ramp(WK_F32, &big, 1, 8), g = ramp(WK_F32, &big, 1, 9);
    y = swiglu(x, g);
    double *xv = vals(x), *gv = vals(g), *yv = y ? vals(y) : NULL;
    int bad = 0;
    for (int64_t i = 0; yv && i < big; i++) bad += !(fabs(yv[i] - ref(xv[i], gv[i])) <= 1e-5 * (1 + fabs(yv[i])));
    CHECK(yv && bad == 0, "large f32 call: %d wrong", bad);
    free(xv), free(gv), free(yv);
    wk_release(y), wk_release(x), wk_release(g);
  }
  { /* errors */
    wk_tensor *a = ramp(WK_F32, (int64_t[]){2, 3}, 2, 1), *b = ramp(WK_F32, (int64_t[]){4}, 1, 2);
    wk_tensor *y = swiglu(a, b);
    CHECK(!y && wk_last_error() == WK_ERR_SHAPE && strstr(wk_last_error_message(), "custom.swiglu"),
          "[2,3] with [4] should be a shape error naming the op");
    wk_release(y);
    wk_clear_error();
    wk_tensor *i = ramp(WK_I64, (int64_t[]){2, 3}, 2, 3);
    y = swiglu(i, i);
    CHECK(!y && wk_last_error() == WK_ERR_DTYPE && strstr(wk_last_error_message(), "floating"),
          "integer inputs should be a dtype error");
    wk_release(y);
    wk_clear_error();
    y = swiglu(NULL, a);
    CHECK(!y && wk_last_error() != WK_OK, "a NULL input should fail");
    wk_clear_error();
    wk_release(a), wk_release(b), wk_release(i);
  }
  { /* gradients through broadcasting, first and second order */
    wk_tensor *x = ramp(WK_F64, (int64_t[]){4, 1}, 2, 10), *g = ramp(WK_F64, (int64_t[]){3}, 1, 11);
    wk_tensor_set_requires_grad(x, true);
    wk_tensor_set_requires_grad(g, true);
    wk_tensor *in[2] = {x, g};
    CHECK(wk_gradcheck(swiglu_fn, NULL, in, 2, NULL) == WK_OK, "gradcheck with broadcasting");
    wk_clear_error();
    CHECK(wk_gradgradcheck(swiglu_fn, NULL, in, 2, NULL) == WK_OK, "gradgradcheck");
    wk_clear_error();
    wk_tensor *y = swiglu(x, g);
    const char *node = y ? wk_tensor_grad_fn_name(y) : NULL;
    CHECK(node && strcmp(node, "SwigluBackward0") == 0, "grad_fn is %s", node ? node : "(none)");
    wk_release(y), wk_release(x), wk_release(g);
  }
  { /* the relu override */
    wk_op *relu = wk_op_find("relu");
    const char *p0 = "";
    int32_t prio = 0;
    /* the first cpu kernel: other device types (cuda) have their own */
    for (int k = 0; relu && k < wk_op_num_kernels(relu); k++) {
      int32_t dt = 0;
      if (wk_op_kernel_info(relu, k, &dt, &prio, NULL, &p0) == WK_OK && dt == WK_DEVICE_CPU) break;
      p0 = "";
    }
    CHECK(relu && strcmp(p0, want_relu) == 0, "relu's first cpu kernel is from '%s', expected '%s'", p0, want_relu);
    if (relu) {
      check_relu(relu, WK_F32, 1000);
      check_relu(relu, WK_F32, 100003); /* over the parallel grain */
      check_relu(relu, WK_F64, 1000);
      check_relu(relu, WK_F32, 0);
    }
    /* declined calls still work (reference kernel): strided, integer, in place */
    wk_tensor *x = ramp(WK_F32, (int64_t[]){3, 4}, 2, 12), *xt = wk_t(x), *i = ramp(WK_I32, (int64_t[]){5}, 1, 13);
    wk_tensor *a = wk_relu(xt), *b = wk_relu(i);
    CHECK(a && b && wk_tensor_dtype(b) == WK_I32, "relu on declined inputs");
    CHECK(wk_relu_(x) == x, "relu_ in place");
    wk_clear_error();
    wk_release(a), wk_release(b), wk_release(i), wk_release(xt), wk_release(x);
  }
  CHECK(wk_live_tensors() == live, "leaked %lld tensors", (long long)(wk_live_tensors() - live));
  wk_shutdown();
  return fails ? 1 : 0;
}
EOF
# shellcheck disable=SC2046
# A sanitizer build's libwick needs the sanitizer runtime in the program too.
$CC -std=c11 -O1 -Wall -Wextra -Werror ${SAN_CFLAGS:-} -o "$tmp/check" "$tmp/check.c" $("$PKG_CONFIG" --cflags --libs wick) -lm \
  >"$log" 2>&1 || fail "building the check program against the installed libwick (wick.pc)"
WICK_PLUGIN_PATH=$ex:$plugdir "$tmp/check" swiglu >"$log" 2>&1 || fail "checks of the plugin through the installed libwick"
# Env overrides: deny the plugin's relu kernel, or force the reference one above it.
WICK_DENY_KERNELS=swiglu:relu WICK_PLUGIN_PATH=$ex:$plugdir "$tmp/check" cpu >"$log" 2>&1 ||
  fail "WICK_DENY_KERNELS=swiglu:relu"
WICK_FORCE_KERNELS=cpu:relu WICK_PLUGIN_PATH=$ex:$plugdir "$tmp/check" cpu >"$log" 2>&1 ||
  fail "WICK_FORCE_KERNELS=cpu:relu"
exit 0
