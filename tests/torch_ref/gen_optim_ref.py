#!/usr/bin/python3
"""Generates tests/torch_ref/optim_ref.h: optimizer, scheduler and gradient
clipping trajectories computed by PyTorch 1.13.1, for tests/check_optim.c.

Run with Debian's python3 (torch 1.13.1):
    /usr/bin/python3 tests/torch_ref/gen_optim_ref.py > tests/torch_ref/optim_ref.h

Each trajectory case gives the optimizer and its options (as Wick's option
names), extra parameter groups, an optional scheduler, the initial parameters,
a gradient per parameter and step (or none: the parameter is skipped), and
PyTorch's parameters, learning rates and momentum (or beta1) after every
optimizer.step() + scheduler.step(). Options are written "name=value,..." and
schedulers "Kind:name=value,..." with children after '|' for Chained and
Sequential; lists use '/'. "-0" is a literal zero (WK_OPTIM_ZERO).
"""
import math
import sys

import torch

torch.set_default_dtype(torch.float64)

OPTIMIZERS = {
    "SGD": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop,
    "Adagrad": torch.optim.Adagrad,
}


def parse_opts(text):
    out = {}
    for item in filter(None, text.split(",")):
        k, v = item.split("=")
        out[k] = v
    return out


def torch_opts(kind, opts):
    """Wick option names -> torch keyword arguments (defaults as Wick's)."""
    kw = {}
    if kind == "SGD":
        kw["lr"] = 1e-3
    b1, b2 = None, None
    for k, v in opts.items():
        x = float(v)
        if k == "beta1":
            b1 = x
        elif k == "beta2":
            b2 = x
        elif k in ("nesterov", "amsgrad", "maximize", "centered"):
            kw[k] = bool(x)
        else:
            kw[k] = x
    if b1 is not None or b2 is not None:
        kw["betas"] = (0.9 if b1 is None else b1, 0.999 if b2 is None else b2)
    return kw


def make_scheduler(spec, opt, nsteps):
    parts = spec.split("|")
    name, _, args = parts[0].partition(":")
    a = parse_opts(args)
    if name == "Chained":
        return torch.optim.lr_scheduler.ChainedScheduler([make_scheduler(p, opt, nsteps) for p in parts[1:]])
    if name == "Sequential":
        kids = [make_scheduler(p, opt, nsteps) for p in parts[1:]]
        ms = [int(m) for m in a["milestones"].split("/")]
        return torch.optim.lr_scheduler.SequentialLR(opt, kids, ms)
    S = torch.optim.lr_scheduler
    f = lambda k, d: float(a[k]) if k in a else d
    i = lambda k, d: int(a[k]) if k in a else d
    if name == "StepLR":
        return S.StepLR(opt, i("step_size", None), f("gamma", 0.1))
    if name == "MultiStepLR":
        return S.MultiStepLR(opt, [int(m) for m in a["milestones"].split("/")], f("gamma", 0.1))
    if name == "ExponentialLR":
        return S.ExponentialLR(opt, f("gamma", None))
    if name == "CosineAnnealingLR":
        return S.CosineAnnealingLR(opt, i("T_max", None), f("eta_min", 0))
    if name == "LinearLR":
        return S.LinearLR(opt, f("start_factor", 1.0 / 3), f("end_factor", 1.0), i("total_iters", 5))
    if name == "OneCycleLR":
        kw = dict(max_lr=f("max_lr", None), pct_start=f("pct_start", 0.3),
                  anneal_strategy="linear" if i("anneal", 0) else "cos",
                  cycle_momentum=not i("no_cycle_momentum", 0), base_momentum=f("base_momentum", 0.85),
                  max_momentum=f("max_momentum", 0.95), div_factor=f("div_factor", 25.0),
                  final_div_factor=f("final_div_factor", 1e4), three_phase=bool(i("three_phase", 0)))
        if "total_steps" in a:
            kw["total_steps"] = i("total_steps", None)
        else:
            kw["epochs"], kw["steps_per_epoch"] = i("epochs", None), i("steps_per_epoch", None)
        return S.OneCycleLR(opt, **kw)
    if name == "ReduceLROnPlateau":
        return S.ReduceLROnPlateau(opt, mode="max" if i("mode", 0) else "min", factor=f("factor", 0.1),
                                   patience=f("patience", 10), threshold=f("threshold", 1e-4),
                                   threshold_mode="abs" if i("threshold_mode", 0) else "rel",
                                   cooldown=i("cooldown", 0), min_lr=f("min_lr", 0), eps=f("eps", 1e-8))
    raise ValueError(name)


def momentum_of(group):
    if "betas" in group:
        return group["betas"][0]
    return group.get("momentum", 0.0)


CASES = []


def case(name, kind, options="", groups=(), sched="", dtype="f64", shapes=((2, 3), (4,)), nsteps=8,
         missing=((1, 0), (1, 3)), metrics=None, seed=None):
    """groups: ((nparams, "opts"), ...) for groups after the first (which holds the rest)."""
    CASES.append(dict(name=name, kind=kind, options=options, groups=list(groups), sched=sched, dtype=dtype,
                      shapes=[tuple(s) for s in shapes], nsteps=nsteps, missing=set(missing), metrics=metrics,
                      seed=len(CASES) + 1 if seed is None else seed))


# ---- optimizers and options ----
case("sgd_plain", "SGD", "lr=0.1")
case("sgd_defaults", "SGD", "")
case("sgd_momentum", "SGD", "lr=0.1,momentum=0.9")
case("sgd_dampening_wd", "SGD", "lr=0.05,momentum=0.9,dampening=0.3,weight_decay=0.01")
case("sgd_nesterov", "SGD", "lr=0.1,momentum=0.8,nesterov=1,weight_decay=0.1")
case("sgd_maximize", "SGD", "lr=0.1,momentum=0.5,maximize=1")
case("adam_defaults", "Adam", "")
case("adam_options", "Adam", "lr=0.01,beta1=0.8,beta2=0.99,eps=1e-6,weight_decay=0.1")
case("adam_amsgrad", "Adam", "lr=0.05,amsgrad=1")
case("adam_maximize_amsgrad_wd", "Adam", "lr=0.01,maximize=1,amsgrad=1,weight_decay=0.05")
case("adam_beta1_zero", "Adam", "lr=0.01,beta1=-0")
case("adamw_defaults", "AdamW", "")
case("adamw_amsgrad", "AdamW", "lr=0.01,weight_decay=0.1,amsgrad=1,beta1=0.85")
case("adamw_no_decay", "AdamW", "lr=0.01,weight_decay=-0")
case("adamw_maximize", "AdamW", "lr=0.02,maximize=1")
case("rmsprop_defaults", "RMSprop", "")
case("rmsprop_centered", "RMSprop", "lr=0.01,centered=1")
case("rmsprop_momentum_wd", "RMSprop", "lr=0.01,momentum=0.9,weight_decay=0.1")
case("rmsprop_all", "RMSprop", "lr=0.005,alpha=0.9,eps=1e-6,momentum=0.5,centered=1,maximize=1,weight_decay=0.01")
case("adagrad_defaults", "Adagrad", "")
case("adagrad_all", "Adagrad", "lr=0.1,lr_decay=0.05,weight_decay=0.1,initial_accumulator_value=0.5,eps=1e-8")
case("adagrad_maximize", "Adagrad", "lr=0.05,maximize=1")
# ---- parameter groups with their own options ----
case("sgd_groups", "SGD", "lr=0.1,momentum=0.9", groups=((1, "lr=0.01"), (1, "lr=0.5,momentum=0")),
     shapes=((2, 2), (3,), (2,), (1, 2)), missing=((1, 0), (3, 2)))
case("adam_groups", "Adam", "lr=0.01", groups=((1, "lr=0.001,amsgrad=1,weight_decay=0.1"),),
     shapes=((3,), (2, 2)), missing=((1, 1),))
case("rmsprop_groups", "RMSprop", "lr=0.01", groups=((1, "centered=1,momentum=0.5"),), shapes=((3,), (2,)))
# ---- float32 ----
case("sgd_nesterov_f32", "SGD", "lr=0.1,momentum=0.9,nesterov=1,weight_decay=0.01", dtype="f32")
case("adam_amsgrad_f32", "Adam", "lr=0.01,amsgrad=1,weight_decay=0.01", dtype="f32")
case("adamw_f32", "AdamW", "lr=0.01", dtype="f32")
case("rmsprop_centered_momentum_f32", "RMSprop", "lr=0.01,centered=1,momentum=0.9", dtype="f32")
case("adagrad_f32", "Adagrad", "lr=0.1,lr_decay=0.01", dtype="f32")
# ---- schedulers: two groups with different lrs, one parameter each ----
SG = dict(groups=((1, "lr=0.05"),), shapes=((2,), (3,)), missing=((1, 2),))
case("step_lr", "SGD", "lr=0.1,momentum=0.9", sched="StepLR:step_size=3,gamma=0.5", nsteps=12, **SG)
case("multistep_lr", "SGD", "lr=0.1", sched="MultiStepLR:milestones=2/5/5/9,gamma=0.5", nsteps=12, **SG)
case("exponential_lr", "SGD", "lr=0.1", sched="ExponentialLR:gamma=0.9", nsteps=10, **SG)
case("cosine_lr", "SGD", "lr=0.1,momentum=0.9", sched="CosineAnnealingLR:T_max=4,eta_min=0.001", nsteps=14, **SG)
case("linear_lr", "Adam", "lr=0.1", sched="LinearLR:start_factor=0.25,end_factor=0.9,total_iters=4", nsteps=8, **SG)
case("linear_lr_defaults", "SGD", "lr=0.1", sched="LinearLR:", nsteps=8, **SG)
case("one_cycle_sgd", "SGD", "lr=0.1,momentum=0.9", sched="OneCycleLR:max_lr=0.5,total_steps=12", nsteps=12, **SG)
case("one_cycle_adam", "Adam", "lr=0.01",
     sched="OneCycleLR:max_lr=0.05,total_steps=10,anneal=1,three_phase=1,pct_start=0.25,div_factor=10,"
           "final_div_factor=100,base_momentum=0.8,max_momentum=0.9", nsteps=10, **SG)
case("one_cycle_adagrad", "Adagrad", "lr=0.1",
     sched="OneCycleLR:max_lr=0.2,epochs=2,steps_per_epoch=5,no_cycle_momentum=1", nsteps=9, **SG)
case("plateau_min", "SGD", "lr=0.1", sched="ReduceLROnPlateau:patience=1,factor=0.5,cooldown=1,threshold=0.01",
     nsteps=12, metrics=[1.0, 0.9, 0.95, 0.94, 0.96, 0.8, 0.85, 0.86, 0.87, 0.88, 0.5, 0.6], **SG)
case("plateau_max_abs", "SGD", "lr=0.1",
     sched="ReduceLROnPlateau:mode=1,threshold_mode=1,threshold=0.05,patience=-0,min_lr=0.02,factor=0.3",
     nsteps=10, metrics=[0.1, 0.2, 0.22, 0.3, 0.31, 0.29, 0.5, 0.52, 0.53, 0.6], **SG)
case("chained", "SGD", "lr=0.1", sched="Chained|ExponentialLR:gamma=0.9|StepLR:step_size=2,gamma=0.5", nsteps=8, **SG)
case("sequential", "SGD", "lr=0.1,momentum=0.9",
     sched="Sequential:milestones=3|LinearLR:start_factor=0.5,total_iters=3|CosineAnnealingLR:T_max=6", nsteps=12, **SG)
case("sequential3", "Adam", "lr=0.01",
     sched="Sequential:milestones=2/5|StepLR:step_size=1,gamma=0.5|MultiStepLR:milestones=1/2,gamma=0.1|"
           "ExponentialLR:gamma=0.9", nsteps=9, **SG)


def run_case(c):
    dt = torch.float32 if c["dtype"] == "f32" else torch.float64
    g = torch.Generator().manual_seed(1000 + c["seed"])
    params = [torch.randn(s, generator=g, dtype=torch.float64).to(dt).requires_grad_() for s in c["shapes"]]
    init = [p.detach().clone() for p in params]
    ngroups = 1 + len(c["groups"])
    first = len(params) - sum(n for n, _ in c["groups"])
    opts = parse_opts(c["options"])
    kw = torch_opts(c["kind"], opts)
    # All groups go to the constructor (1.13's Adagrad only makes state there);
    # Wick's add_param_group gives the same result.
    pgroups = [{"params": params[:first]}]
    at = first
    for n, gopts in c["groups"]:
        gkw = torch_opts(c["kind"], parse_opts(gopts))
        if c["kind"] == "SGD" and "lr" not in parse_opts(gopts):
            del gkw["lr"]
        if "betas" in gkw:  # a group naming one beta keeps the optimizer's other one
            o = parse_opts(gopts)
            d = kw.get("betas", (0.9, 0.999))
            gkw["betas"] = (float(o.get("beta1", d[0])), float(o.get("beta2", d[1])))
        pgroups.append(dict(params=params[at:at + n], **gkw))
        at += n
    opt = OPTIMIZERS[c["kind"]](pgroups, **kw)
    sched = make_scheduler(c["sched"], opt, c["nsteps"]) if c["sched"] else None
    lr0 = [grp["lr"] for grp in opt.param_groups]
    grads, has, expect, lrs, moms = [], [], [], [], []
    for k in range(c["nsteps"]):
        for i, p in enumerate(params):
            gr = torch.randn(p.shape, generator=g, dtype=torch.float64).to(dt)
            present = (i, k) not in c["missing"]
            p.grad = gr.clone() if present else None
            grads.append(gr.flatten().tolist())
            has.append(int(present))
        opt.step()
        if sched is not None:
            if c["metrics"] is not None:
                sched.step(c["metrics"][k])
            else:
                sched.step()
            lrs.append(list(sched._last_lr))
        else:
            lrs.append([grp["lr"] for grp in opt.param_groups])
        moms.append([momentum_of(grp) for grp in opt.param_groups])
        expect.append([x for p in params for x in p.detach().flatten().tolist()])
    return dict(init=[x for p in init for x in p.flatten().tolist()], grads=[x for s in grads for x in s], has=has,
                expect=[x for s in expect for x in s], lrs=[x for s in lrs for x in s],
                moms=[x for s in moms for x in s], lr0=lr0, ngroups=ngroups, first=first)


def fmt(v):
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    if math.isnan(v):
        return "NAN"
    r = repr(float(v))
    return r


def arr(ctype, name, vals, per_line=6):
    lines = []
    for i in range(0, len(vals), per_line):
        lines.append("  " + ", ".join(fmt(v) if ctype == "double" else str(v) for v in vals[i:i + per_line]) + ",")
    if not vals:
        lines.append("  0,")
    return "static const %s %s[] = {\n%s\n};\n" % (ctype, name, "\n".join(lines))


def clip_cases():
    """clip_grad_norm_ cases: (name, dtype, shapes, max_norm, norm_type, with_missing)."""
    out = []
    specs = [("l2_clip", "f64", 1.0, 2.0), ("l2_noclip", "f64", 100.0, 2.0), ("l1", "f64", 0.5, 1.0),
             ("inf", "f64", 0.3, math.inf), ("l3", "f64", 0.7, 3.0), ("half", "f64", 2.0, 0.5),
             ("l2_f32", "f32", 1.0, 2.0), ("inf_f32", "f32", 0.5, math.inf)]
    for n, (name, dtn, max_norm, nt) in enumerate(specs):
        dt = torch.float32 if dtn == "f32" else torch.float64
        g = torch.Generator().manual_seed(5000 + n)
        shapes = [(3, 2), (4,), (1,)]
        params = [torch.zeros(s, dtype=dt, requires_grad=True) for s in shapes]
        grads = [torch.randn(s, generator=g, dtype=torch.float64).to(dt) for s in shapes]
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        params[2].grad = None  # a parameter without a gradient is skipped
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, nt)
        after = [x for p in params[:2] for x in p.grad.flatten().tolist()]
        out.append(dict(name=name, dtype=dtn, max_norm=max_norm, norm_type=nt,
                        grads=[x for gr in grads[:2] for x in gr.flatten().tolist()], total=float(total), after=after))
    return out


def main():
    w = sys.stdout.write
    w("/* Generated by tests/torch_ref/gen_optim_ref.py with PyTorch %s: do not edit. */\n" % torch.__version__)
    w("#ifndef WICK_OPTIM_REF_H\n#define WICK_OPTIM_REF_H\n#include <math.h>\n#include <stdint.h>\n\n")
    w("#define OREF_MAXP 4\n#define OREF_MAXG 4\n")
    w("typedef struct oref_case {\n  const char *name, *kind, *options, *group_opts[OREF_MAXG], *sched;\n"
      "  int dtype; /* 1 f32, 2 f64 */\n  int nparams, ndim[OREF_MAXP];\n  int64_t shape[OREF_MAXP][2];\n"
      "  int ngroups, group_first[OREF_MAXG + 1]; /* group g holds params [first[g], first[g+1]) */\n"
      "  int nsteps, numel;\n  const double *init, *grads, *expect, *lrs, *moms, *metrics, *lr0;\n"
      "  const unsigned char *has_grad; /* [step][param] */\n} oref_case;\n\n")
    names = []
    for c in CASES:
        r = run_case(c)
        n = c["name"]
        names.append((c, r))
        w(arr("double", n + "_init", r["init"]))
        w(arr("double", n + "_grads", r["grads"]))
        w(arr("unsigned char", n + "_has", r["has"], 24))
        w(arr("double", n + "_expect", r["expect"]))
        w(arr("double", n + "_lrs", r["lrs"]))
        w(arr("double", n + "_moms", r["moms"]))
        w(arr("double", n + "_lr0", r["lr0"]))
        if c["metrics"] is not None:
            w(arr("double", n + "_metrics", c["metrics"]))
        w("\n")
    w("static const oref_case oref_cases[] = {\n")
    for c, r in names:
        n = c["name"]
        shapes = c["shapes"]
        gf = [0, r["first"]]
        for k, _ in c["groups"]:
            gf.append(gf[-1] + k)
        gopts = [""] + [o for _, o in c["groups"]]
        w('  {"%s", "%s", "%s", {%s}, "%s", %d, %d, {%s}, {%s}, %d, {%s}, %d, %d, %s_init, %s_grads, %s_expect, '
          '%s_lrs, %s_moms, %s, %s_lr0, %s_has},\n' % (
              n, c["kind"], c["options"], ", ".join('"%s"' % o for o in gopts), c["sched"],
              1 if c["dtype"] == "f32" else 2, len(shapes), ", ".join(str(len(s)) for s in shapes),
              ", ".join("{%s}" % ", ".join(str(d) for d in (list(s) + [1, 1])[:2]) for s in shapes),
              r["ngroups"], ", ".join(str(x) for x in gf), c["nsteps"], len(r["init"]), n, n, n, n, n,
              (n + "_metrics") if c["metrics"] is not None else "0", n, n))
    w("};\n#define OREF_NCASES ((int)(sizeof oref_cases / sizeof oref_cases[0]))\n\n")
    w("typedef struct oref_clip {\n  const char *name;\n  int dtype;\n  double max_norm, norm_type, total;\n"
      "  double grads[10], after[10]; /* params [3, 2] and [4]; a third [1] has no grad */\n} oref_clip;\n")
    w("static const oref_clip oref_clips[] = {\n")
    for cc in clip_cases():
        w('  {"%s", %d, %s, %s, %s,\n   {%s},\n   {%s}},\n' % (
            cc["name"], 1 if cc["dtype"] == "f32" else 2, fmt(cc["max_norm"]), fmt(cc["norm_type"]),
            fmt(cc["total"]), ", ".join(fmt(x) for x in cc["grads"]), ", ".join(fmt(x) for x in cc["after"])))
    w("};\n#define OREF_NCLIPS ((int)(sizeof oref_clips / sizeof oref_clips[0]))\n\n#endif\n")


if __name__ == "__main__":
    main()
