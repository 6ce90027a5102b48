/* optim plugin: weight averaging (torch.optim.swa_utils): AveragedModel with
 * SWA's equal average, an EMA, or a C averaging function, and update_bn,
 * which recomputes BatchNorm running statistics as cumulative averages over
 * a loader. C has no deepcopy, so the averaged copy is a second module of
 * the same structure that the caller builds (its values are overwritten by
 * the first update). */
#include <stdio.h>
#include <stdlib.h>

#include "optim.h" /* first: <wick/sdk.h> routes the wk_* calls of the headers below */
#include <wick/data.h>

struct wk_averaged_model {
  wk_module *module; /* retained */
  int strategy;
  double decay;
  wk_avg_fn avg_fn;
  void *user;
  bool use_buffers;
  int64_t n_averaged;
};

static const char AM[] = "AveragedModel";

wk_averaged_model *optim_averaged_model_new(wk_module *copy, const wk_averaged_model_opts *o, size_t osize) {
  wk_averaged_model_opts x;
  optim_copy_opts(&x, sizeof x, o, osize);
  if (!copy) {
    wk_error(WK_ERR_NULL, "%s: argument 'module' is NULL", AM);
    return NULL;
  }
  double decay = optim_or(x.decay, 0.999);
  if (x.strategy != WK_AVERAGE_SWA && x.strategy != WK_AVERAGE_EMA) {
    wk_error(WK_ERR_INVALID_ARG, "%s: strategy must be WK_AVERAGE_SWA or WK_AVERAGE_EMA, got %d", AM, x.strategy);
    return NULL;
  }
  if (x.strategy == WK_AVERAGE_EMA && !(decay >= 0 && decay <= 1)) {
    wk_error(WK_ERR_INVALID_ARG, "%s: the EMA decay must lie in [0, 1], got %g", AM, decay);
    return NULL;
  }
  wk_averaged_model *am = wk_calloc(1, sizeof *am);
  if (!am) {
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", AM);
    return NULL;
  }
  am->module = wk_module_retain(copy);
  am->strategy = x.strategy;
  am->decay = decay;
  am->avg_fn = x.avg_fn;
  am->user = x.user;
  am->use_buffers = x.use_buffers;
  return am;
}

void optim_averaged_model_free(wk_averaged_model *am) {
  if (!am) return;
  wk_module_release(am->module);
  wk_free(am);
}

wk_module *optim_averaged_model_module(const wk_averaged_model *am) {
  if (!am) wk_error(WK_ERR_NULL, "%s: argument 'averaged_model' is NULL", AM);
  return am ? am->module : NULL;
}

int64_t optim_averaged_model_n_averaged(const wk_averaged_model *am) {
  if (!am) {
    wk_error(WK_ERR_NULL, "%s: argument 'averaged_model' is NULL", AM);
    return -1;
  }
  return am->n_averaged;
}

/* The parameters (and buffers) of m, in order: a malloc'd array (borrowed
 * tensors) with names; count in *n. */
static wk_tensor **tensors_of(wk_module *m, bool buffers, const char ***names, int *n) {
  int np = wk_module_named_parameters(m, NULL, NULL, 0), nb = buffers ? wk_module_named_buffers(m, NULL, NULL, 0) : 0;
  *n = -1;
  if (np < 0 || nb < 0) return NULL;
  wk_tensor **ts = wk_calloc((size_t)(np + nb + 1), sizeof *ts);
  *names = wk_calloc((size_t)(np + nb + 1), sizeof **names);
  if (!ts || !*names) {
    wk_free(ts);
    wk_free(*names);
    *names = NULL;
    wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", AM);
    return NULL;
  }
  wk_module_named_parameters(m, *names, ts, np);
  if (nb) wk_module_named_buffers(m, *names + np, ts + np, nb);
  *n = np + nb;
  return ts;
}

static bool same_shape(wk_tensor *a, wk_tensor *b) {
  if (wk_tensor_dim(a) != wk_tensor_dim(b)) return false;
  for (int d = 0; d < wk_tensor_dim(a); d++)
    if (wk_tensor_size(a, d) != wk_tensor_size(b, d)) return false;
  return true;
}

/* The new average of one tensor (a new reference): swa_utils' get_swa_avg_fn
 * / get_ema_avg_fn, or the user's function. */
static wk_tensor *average(const wk_averaged_model *am, wk_tensor *avg, wk_tensor *cur) {
  if (am->avg_fn) return am->avg_fn(avg, cur, am->n_averaged, am->user);
  if (am->strategy == WK_AVERAGE_EMA)
    return wk_add(wk_mul_scalar(avg, am->decay), wk_mul_scalar(cur, 1 - am->decay));
  return wk_add(avg, wk_div_scalar(wk_sub(cur, avg), (double)(am->n_averaged + 1)));
}

wk_status optim_averaged_model_update(wk_averaged_model *am, wk_module *model) {
  if (!am || !model)
    return wk_error(WK_ERR_NULL, "%s.update_parameters: argument '%s' is NULL", AM, am ? "model" : "averaged_model");
  const char **na = NULL, **nm = NULL;
  int n_avg, n_model, nb_avg = 0, nb_model = 0;
  wk_tensor **avg = tensors_of(am->module, am->use_buffers, &na, &n_avg);
  wk_tensor **cur = avg ? tensors_of(model, am->use_buffers, &nm, &n_model) : NULL;
  wk_tensor **bavg = NULL, **bcur = NULL;
  const char **nba = NULL, **nbm = NULL;
  wk_status s = cur ? WK_OK : wk_last_error();
  if (!s && n_avg != n_model)
    s = wk_error(WK_ERR_INVALID_ARG, "%s.update_parameters: the model has %d %s, the averaged copy %d", AM, n_model,
                 am->use_buffers ? "parameters and buffers" : "parameters", n_avg);
  for (int i = 0; !s && i < n_avg; i++)
    if (!same_shape(avg[i], cur[i]))
      s = wk_error(WK_ERR_SHAPE, "%s.update_parameters: '%s' of the model does not match '%s' of the averaged copy",
                   AM, nm[i], na[i]);
  if (!s && !am->use_buffers) { /* buffers follow the model (PyTorch 2.x) */
    bavg = (nb_avg = wk_module_named_buffers(am->module, NULL, NULL, 0)) > 0 ? wk_calloc((size_t)nb_avg, sizeof *bavg)
                                                                               : NULL;
    nba = nb_avg > 0 ? wk_calloc((size_t)nb_avg, sizeof *nba) : NULL;
    nb_model = wk_module_named_buffers(model, NULL, NULL, 0);
    bcur = nb_model > 0 ? wk_calloc((size_t)nb_model, sizeof *bcur) : NULL;
    nbm = nb_model > 0 ? wk_calloc((size_t)nb_model, sizeof *nbm) : NULL;
    if ((nb_avg > 0 && (!bavg || !nba)) || (nb_model > 0 && (!bcur || !nbm)))
      s = wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", AM);
    else if (nb_avg != nb_model)
      s = wk_error(WK_ERR_INVALID_ARG, "%s.update_parameters: the model has %d buffers, the averaged copy %d", AM,
                   nb_model, nb_avg);
    if (!s && nb_avg > 0) {
      wk_module_named_buffers(am->module, nba, bavg, nb_avg);
      wk_module_named_buffers(model, nbm, bcur, nb_model);
      for (int i = 0; !s && i < nb_avg; i++)
        if (!same_shape(bavg[i], bcur[i]))
          s = wk_error(WK_ERR_SHAPE, "%s.update_parameters: buffer '%s' does not match '%s'", AM, nbm[i], nba[i]);
    }
  }
  /* checked: now write (under no_grad; temporaries in a scope) */
  bool prev = wk_set_grad_enabled(false);
  wk_scope_begin();
  for (int i = 0; !s && i < n_avg; i++) {
    wk_tensor *c = wk_to_device(cur[i], wk_tensor_device(avg[i]));
    wk_tensor *v = am->n_averaged == 0 || !c ? c : average(am, avg[i], c);
    if (!v || !wk_copy_(avg[i], v)) s = wk_last_error() ? wk_last_error() : wk_error(WK_ERR_INTERNAL, "%s: avg_fn failed", AM);
    if (v && v != c && am->avg_fn) wk_release(v); /* the user's function returned a new reference */
  }
  for (int i = 0; !s && i < nb_avg; i++)
    if (!wk_copy_(bavg[i], bcur[i])) s = wk_last_error();
  wk_scope_end();
  wk_set_grad_enabled(prev);
  if (!s) am->n_averaged++;
  wk_free(avg);
  wk_free(cur);
  wk_free(na);
  wk_free(nm);
  wk_free(bavg);
  wk_free(bcur);
  wk_free(nba);
  wk_free(nbm);
  return s;
}

wk_state_dict *optim_averaged_model_state_dict(const wk_averaged_model *am) {
  if (!am) {
    wk_error(WK_ERR_NULL, "%s.state_dict: argument 'averaged_model' is NULL", AM);
    return NULL;
  }
  wk_state_dict *msd = wk_module_state_dict(am->module), *sd = msd ? wk_state_dict_new() : NULL;
  wk_status s = sd ? WK_OK : wk_last_error();
  char key[512];
  for (int i = 0; !s && i < wk_state_dict_size(msd); i++) {
    snprintf(key, sizeof key, "module.%s", wk_state_dict_key(msd, i));
    s = wk_state_dict_set(sd, key, wk_state_dict_value(msd, i));
  }
  if (!s) {
    int64_t one = 1;
    wk_tensor *n = wk_tensor_from_data(&am->n_averaged, WK_I64, &one, 0);
    s = n ? wk_state_dict_set(sd, "n_averaged", n) : wk_last_error();
    wk_release(n);
  }
  wk_state_dict_free(msd);
  if (s) {
    wk_state_dict_free(sd);
    return NULL;
  }
  return sd;
}

wk_status optim_averaged_model_load_state_dict(wk_averaged_model *am, const wk_state_dict *sd) {
  if (!am || !sd)
    return wk_error(WK_ERR_NULL, "%s.load_state_dict: argument '%s' is NULL", AM, am ? "state_dict" : "averaged_model");
  wk_tensor *n = wk_state_dict_get(sd, "n_averaged");
  if (!n) {
    wk_clear_error();
    return wk_error(WK_ERR_NOT_FOUND, "%s.load_state_dict: missing key 'n_averaged'", AM);
  }
  double nv;
  wk_status s = wk_tensor_numel(n) == 1 ? wk_item(n, &nv)
                                        : wk_error(WK_ERR_SHAPE, "%s.load_state_dict: 'n_averaged' must hold one value", AM);
  if (!s && !(nv >= 0 && nv == (double)(int64_t)nv))
    s = wk_error(WK_ERR_INVALID_ARG, "%s.load_state_dict: n_averaged must be a whole number >= 0, got %g", AM, nv);
  wk_state_dict *msd = s ? NULL : wk_state_dict_new();
  if (!s && !msd) s = wk_last_error();
  for (int i = 0; !s && i < wk_state_dict_size(sd); i++) {
    const char *k = wk_state_dict_key(sd, i);
    if (!strcmp(k, "n_averaged")) continue;
    if (strncmp(k, "module.", 7) != 0)
      s = wk_error(WK_ERR_INVALID_ARG, "%s.load_state_dict: unexpected key '%s' (module.<name> or n_averaged)", AM, k);
    else
      s = wk_state_dict_set(msd, k + 7, wk_state_dict_value(sd, i));
  }
  if (!s) s = wk_module_load_state_dict(am->module, msd, true, NULL);
  wk_state_dict_free(msd);
  if (!s) am->n_averaged = (int64_t)nv;
  return s;
}

/* ---- update_bn ------------------------------------------------------------------------- */
#define BN_MAX 4096

typedef struct {
  wk_module *m;
  int64_t hook;
  int64_t k;                  /* batches seen */
  wk_tensor *mean, *var;      /* cumulative averages (kept), dtype of the running buffers */
} bn_slot;

/* Collects the BatchNorm modules under m (m included), depth first. */
static int find_bn(wk_module *m, bn_slot *out, int n) {
  const char *cls = wk_module_class_name(m);
  if (cls && (!strncmp(cls, "BatchNorm", 9) || !strncmp(cls, "SyncBatchNorm", 13)) &&
      wk_module_buffer(m, "running_mean") && wk_module_buffer(m, "running_var")) {
    if (n == BN_MAX) return -1;
    memset(&out[n], 0, sizeof out[n]);
    out[n++].m = m;
  }
  wk_clear_error(); /* wk_module_buffer's "no such buffer" */
  int nc = wk_module_named_children(m, NULL, NULL, 0);
  if (nc <= 0) return n;
  wk_module **kids = wk_calloc((size_t)nc, sizeof *kids);
  if (!kids) return -2;
  wk_module_named_children(m, NULL, kids, nc);
  for (int i = 0; i < nc && n >= 0; i++) n = find_bn(kids[i], out, n);
  wk_free(kids);
  return n;
}

/* The batch statistics of a BatchNorm input (mean, unbiased variance over
 * every dimension but 1), folded into the cumulative averages: PyTorch's
 * momentum=None, running = (1 - 1/k) running + stat / k. */
static wk_status bn_pre_hook(void *user, wk_module *m, wk_tensor *const *inputs, int n) {
  (void)m;
  bn_slot *b = user;
  if (n < 1 || !inputs[0]) return WK_OK; /* the module's own forward reports it */
  wk_tensor *x = inputs[0];
  int nd = wk_tensor_dim(x);
  if (nd < 2) return WK_OK;
  int64_t dims[WK_MAX_DIMS];
  int nk = 0;
  for (int d = 0; d < nd; d++)
    if (d != 1) dims[nk++] = d;
  wk_tensor *rm = wk_module_buffer(b->m, "running_mean");
  wk_dtype dt = rm ? wk_tensor_dtype(rm) : wk_tensor_dtype(x);
  wk_scope_begin();
  wk_tensor *mean = wk_to_dtype(wkx_mean__dim(x, dims, nk, false, WK_DTYPE_DEFAULT), dt);
  wk_tensor *var = wk_to_dtype(wkx_var__correction(x, dims, nk, 1, false), dt);
  wk_status s = mean && var ? WK_OK : wk_last_error();
  b->k++;
  if (!s && b->k == 1) {
    b->mean = wk_scope_keep(wk_clone(mean));
    b->var = wk_scope_keep(wk_clone(var));
    if (!b->mean || !b->var) s = wk_last_error();
  } else if (!s) {
    double f = 1.0 / (double)b->k;
    if (!wk_add_scaled_(wk_mul_scalar_(b->mean, 1 - f), mean, f) || !wk_add_scaled_(wk_mul_scalar_(b->var, 1 - f), var, f))
      s = wk_last_error();
  }
  wk_scope_end();
  return s;
}

wk_status optim_update_bn(wk_dataloader *loader, wk_module *model, wk_device device) {
  static const char fn[] = "update_bn";
  if (!loader || !model) return wk_error(WK_ERR_NULL, "%s: argument '%s' is NULL", fn, loader ? "model" : "loader");
  bn_slot *bns = wk_calloc(BN_MAX, sizeof *bns);
  if (!bns) return wk_error(WK_ERR_NO_MEMORY, "%s: out of memory", fn);
  int nbn = find_bn(model, bns, 0);
  if (nbn < 0) {
    wk_free(bns);
    return wk_error(nbn == -1 ? WK_ERR_UNSUPPORTED : WK_ERR_NO_MEMORY, "%s: %s", fn,
                    nbn == -1 ? "more than 4096 BatchNorm modules" : "out of memory");
  }
  if (nbn == 0) { /* nothing to do, as PyTorch's `if not momenta: return` */
    wk_free(bns);
    return WK_OK;
  }
  wk_status s = WK_OK;
  bool prev = wk_set_grad_enabled(false);
  /* reset_running_stats(), then a pre-hook on each */
  for (int i = 0; !s && i < nbn; i++) {
    wk_tensor *rm = wk_module_buffer(bns[i].m, "running_mean"), *rv = wk_module_buffer(bns[i].m, "running_var");
    wk_tensor *nbt = wk_module_buffer(bns[i].m, "num_batches_tracked");
    wk_clear_error();
    if (!wk_zero_(rm) || !wk_fill_(rv, 1.0) || (nbt && !wk_zero_(nbt))) s = wk_last_error();
    if (!s && !(bns[i].hook = wk_module_register_forward_pre_hook(bns[i].m, bn_pre_hook, &bns[i]))) s = wk_last_error();
  }
  bool was_training = wk_module_is_training(model);
  if (!s) s = wk_module_train(model, true);
  wk_sample b = {0};
  while (!s && (s = wk_dataloader_next(loader, &b)) == WK_OK && b.n) {
    wk_scope_begin();
    wk_tensor *x = device.type != WK_DEVICE_DEFAULT ? wk_to_device(b.t[0], device) : b.t[0];
    wk_tensor *out = x ? wk_module_forward(model, x) : NULL;
    if (!out) s = wk_last_error();
    wk_scope_end();
    wk_sample_clear(&b);
  }
  wk_sample_clear(&b);
  for (int i = 0; i < nbn; i++) {
    if (bns[i].hook) wk_module_remove_hook(bns[i].m, bns[i].hook);
    if (!s && bns[i].k > 0 &&
        (!wk_copy_(wk_module_buffer(bns[i].m, "running_mean"), bns[i].mean) ||
         !wk_copy_(wk_module_buffer(bns[i].m, "running_var"), bns[i].var)))
      s = wk_last_error();
    wk_release(bns[i].mean);
    wk_release(bns[i].var);
  }
  wk_status s2 = wk_module_train(model, was_training);
  wk_set_grad_enabled(prev);
  wk_free(bns);
  return s ? s : s2;
}
