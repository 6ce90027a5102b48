/* amp plugin: private declarations of the GradScaler (scaler.c) for the
 * service table in amp.c. Contracts are on the wrappers in <wick/amp.h>. */
#ifndef WICK_AMP_SCALER_H
#define WICK_AMP_SCALER_H

#include <wick/sdk.h> /* first: it routes the wk_* calls of the headers below */
#include <wick/amp.h>

/* Looks up the two fused ops (once, at plugin init). */
wk_status scaler_init(void);

wk_grad_scaler *scaler_new(const wk_grad_scaler_opts *o, size_t osize);
void scaler_free(wk_grad_scaler *s);
wk_tensor *scaler_scale(wk_grad_scaler *s, wk_tensor *outputs);
wk_status scaler_unscale_(wk_grad_scaler *s, wk_optimizer *opt);
wk_status scaler_step(wk_grad_scaler *s, wk_optimizer *opt, bool *stepped);
wk_status scaler_update(wk_grad_scaler *s, double new_scale);
double scaler_get_scale(const wk_grad_scaler *s);
int64_t scaler_growth_tracker(const wk_grad_scaler *s);
bool scaler_is_enabled(const wk_grad_scaler *s);
wk_state_dict *scaler_state_dict(const wk_grad_scaler *s);
wk_status scaler_load_state_dict(wk_grad_scaler *s, const wk_state_dict *sd);

#endif
